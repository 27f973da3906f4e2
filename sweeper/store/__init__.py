"""The store: a sweep's rows as Parquet files (:mod:`.parquet`), the lock of a sweep being written
(:mod:`.lock`), and which stored values are impossible and never analysed (:mod:`.validity`)."""
