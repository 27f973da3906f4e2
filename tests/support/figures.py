"""Checks that rows of a real launch carry the resource figures every engine and manager records."""

from __future__ import annotations

import pandas as pd


def assert_resource_figures(frame: pd.DataFrame) -> None:
    """Every ok row has CPU seconds, a slot utilisation and workers' peak memory; Spark a heap or the reason."""
    ok = frame[frame["status"] == "ok"]
    assert len(ok), frame[["engine", "status", "error"]].to_dict("records")
    for _, row in ok.iterrows():
        where = row[["engine", "manager", "resource_note"]].to_dict()
        assert row["cpu_s_fits"] > 0 and row["cpu_s_workers"] > 0 and row["slot_utilisation"] > 0, where
        assert row["worker_peak_rss_gib_max"] >= row["worker_peak_rss_gib_median"] > 0.02, where  # a Python process
        if row["engine"] == "spark":  # the executor's Python workers ran the fits: the overhead's share
            assert 0.02 < row["python_peak_rss_gib_max"] < row["worker_peak_rss_gib_max"], where
        if str(row["engine"]).startswith("spark"):
            heap = row["jvm_peak_heap_gib"]
            assert (pd.notna(heap) and heap > 0) or "heap" in str(row["resource_note"]), where
