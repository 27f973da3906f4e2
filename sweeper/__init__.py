"""sweeper: size executors, launch matched Spark and Dask clusters, time scikit-learn training."""

__version__ = "0.1.0"
