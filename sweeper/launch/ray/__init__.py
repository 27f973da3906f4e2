"""Engine ``ray``: Ray worker nodes matched like Dask's workers (nodes x ``num_cpus`` x memory), ``ray.util.joblib``."""
