"""Importers and exporters (SpatialBench-UC run folders, label files, tables)."""
