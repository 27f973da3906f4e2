"""Engine spark (and spark-mllib): one module per cluster manager, the joblib backend fix, Spark ML."""
