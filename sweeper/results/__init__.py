"""Results: the Parquet store of measurements, their statistics, and the report built from them."""
