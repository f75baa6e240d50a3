"""The spatial method's commands, one module each: `import-sbuc` and `export-sbuc` (SpatialBench-UC
run folders and per-sample files), `audit-sample` / `audit-metrics` (the human audit) and
`calibrate` (the checker's parameters against the human labels); `common` holds what they share."""
