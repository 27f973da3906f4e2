"""Engine ``ray``: Ray worker nodes matched like Dask's workers (nodes x ``num_cpus`` x memory), ``ray.util.joblib``."""

from sweeper.launch.ray.auth import no_auto_connect

no_auto_connect()  # before any module of this package imports ray
