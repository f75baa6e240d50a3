"""The spatial method's views: Browse (sample table and thumbnails), Review (pair viewer with
overlays, keyboard labelling), Calibration (live sliders, risk–coverage plots, grid search),
audit sets and annotators."""
