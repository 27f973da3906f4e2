"""Engine dask: one module per cluster manager."""
