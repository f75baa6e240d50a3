"""Calibration: checker parameters on sliders, risk–coverage, grid search, Apply."""
