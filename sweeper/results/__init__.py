"""Results: the Parquet store of measurements, their statistics, and the report built from them."""

PRUNED = "pruned"  # a row status: a configuration successive halving did not promote, never measured there
