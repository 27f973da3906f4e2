"""Resource use per measurement: what each fit measures where it runs, and the row's figures from it."""

from __future__ import annotations

import math
import os
import socket
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from sweeper.config import load as grid_file
from sweeper.planning.plan import make_plan
from sweeper.run import runner
from sweeper.run.interference import MIN_SPAN_S
from sweeper.run.resources import BYTES_PER_GIB, resource_columns
from sweeper.workload.fit import FitResult
from sweeper.workload.usage import ProcessUsage, Usage, executor_jvm, measured, process_usage, this_process
from tests.conftest import minimal_grid
from tests.support.leftovers import assert_no_launch_processes

GIB = BYTES_PER_GIB


def fit(usage: Usage | None, pid: int = 1) -> FitResult:
    return FitResult(fit_s=1.0, accuracy=0.9, epochs_run=5, converged=False, pid=pid, environment={}, usage=usage)


def usage(
    pid: int,
    cpu: tuple[float, float],
    peak_gib: float,
    thread_s: float = 1.0,
    jvm: tuple[int, float, float, float] | None = None,
    host: str = "h",
) -> Usage:
    """A fit's usage: process ``pid`` went from cpu[0] to cpu[1] CPU seconds; ``jvm`` = (pid, cpu0, cpu1, peak)."""
    jvm_before = jvm_after = None
    if jvm is not None:
        jvm_before = ProcessUsage(jvm[0], jvm[1], int(jvm[3] * GIB))
        jvm_after = ProcessUsage(jvm[0], jvm[2], int(jvm[3] * GIB))
    return Usage(
        host=host,
        thread_cpu_s=thread_s,
        before=ProcessUsage(pid, cpu[0], int(peak_gib * GIB)),
        after=ProcessUsage(pid, cpu[1], int(peak_gib * GIB)),
        jvm_before=jvm_before,
        jvm_after=jvm_after,
    )


def test_dask_workers_cpu_is_counted_once_per_process_over_the_span_of_its_fits() -> None:
    # two fits in worker 10 (threads of one process) overlap: the process's span counts, not the sum of the spans
    results = [fit(usage(10, (5.0, 7.0), 0.5)), fit(usage(10, (5.5, 8.0), 0.75)), fit(usage(11, (1.0, 2.0), 0.25))]
    columns = resource_columns(results, fit_wall_s=2.0, slots=4, spark=False, jvm_peak_heap_gib=None)
    assert columns["cpu_s_fits"] == 3.0
    assert columns["cpu_s_workers"] == pytest.approx((8.0 - 5.0) + (2.0 - 1.0))
    assert columns["slot_utilisation"] == pytest.approx(4.0 / (4 * 2.0))
    assert columns["worker_peak_rss_gib_max"] == 0.75 and columns["worker_peak_rss_gib_median"] == 0.5
    assert columns["jvm_peak_heap_gib"] is None and columns["resource_note"] is None


def test_a_spark_executor_is_its_jvm_plus_its_python_workers() -> None:
    # executor JVM 100 (peak 1 GiB) ran Python workers 20 and 21; JVM 200 (peak 1.5 GiB) ran worker 30
    results = [
        fit(usage(20, (0.0, 1.0), 0.25, jvm=(100, 10.0, 11.0, 1.0))),
        fit(usage(21, (0.0, 1.0), 0.25, jvm=(100, 10.5, 12.0, 1.0))),
        fit(usage(30, (0.0, 1.0), 0.5, jvm=(200, 3.0, 3.5, 1.5))),
    ]
    columns = resource_columns(results, fit_wall_s=1.0, slots=4, spark=True, jvm_peak_heap_gib=0.4)
    assert columns["worker_peak_rss_gib_max"] == pytest.approx(2.0)  # 1.5 + 0.5
    assert columns["worker_peak_rss_gib_median"] == pytest.approx(1.75)  # (1.5 + 0.25 + 0.25, 2.0)
    assert columns["cpu_s_workers"] == pytest.approx(3 * 1.0 + (12.0 - 10.0) + 0.5)
    assert columns["jvm_peak_heap_gib"] == 0.4 and columns["resource_note"] is None
    assert columns["python_peak_rss_gib_max"] == pytest.approx(0.5)  # JVM 100's two workers, or JVM 200's one


def test_the_same_pid_on_two_hosts_is_two_workers() -> None:
    results = [fit(usage(7, (0.0, 1.0), 0.5, host="a")), fit(usage(7, (0.0, 2.0), 1.0, host="b"))]
    columns = resource_columns(results, fit_wall_s=1.0, slots=2, spark=False, jvm_peak_heap_gib=None)
    assert columns["worker_peak_rss_gib_max"] == 1.0 and columns["worker_peak_rss_gib_median"] == 0.75
    assert columns["cpu_s_workers"] == 3.0


def test_unavailable_figures_are_null_with_the_reason() -> None:
    columns = resource_columns([fit(None), fit(None)], fit_wall_s=1.0, slots=2, spark=True, jvm_peak_heap_gib=None)
    assert all(columns.get(name) is None for name in ("cpu_s_fits", "cpu_s_workers", "worker_peak_rss_gib_max"))
    note = columns.get("resource_note")
    assert note is not None and "2 of 2 fits did not measure themselves" in note and "no executor heap peak yet" in note


def test_a_fit_measures_its_own_thread_process_and_peak_memory() -> None:
    with measured() as probe:
        block = np.ones(64 * 1024 * 1024 // 8)  # 64 MiB, touched
        deadline = time.thread_time() + 0.2
        while time.thread_time() < deadline:
            pass
    taken = probe.usage
    assert taken is not None and taken.before.pid == taken.after.pid == os.getpid()
    # the process's user and system times are each floored to a 10 ms clock tick, before and after
    assert taken.thread_cpu_s >= 0.2 and taken.after.cpu_s - taken.before.cpu_s > 0.2 - 0.04
    assert taken.after.peak_rss_bytes is not None and taken.after.peak_rss_bytes >= block.nbytes
    assert taken.jvm_before is None  # not a Spark Python worker: no executor JVM is looked for


def test_another_process_is_read_from_proc_and_a_gone_one_is_none() -> None:
    mine = process_usage(os.getpid())
    assert mine is not None and mine.peak_rss_bytes == pytest.approx(this_process().peak_rss_bytes, rel=0.2)
    assert process_usage(2**22 + 1) is None and executor_jvm(os.getpid()) is None


# --- real launches: every engine records its figures; a known amount of data shows in the peak --------------------

ROWS, FEATURES = 3000, 16384  # 3000 x 16384 float32 = 188 MiB of training data in every fit's worker


@pytest.mark.integration
def test_each_engine_records_cpu_and_a_peak_at_least_its_workers_data(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    X = rng.random((ROWS, FEATURES), dtype=np.float32)
    y = rng.integers(0, 2, ROWS)
    np.savez(tmp_path / "wide.npz", X=X, y=y)
    # heartbeats every second (Spark's default: 10 s) bring the executors' heap peaks before the batch ends
    beats = {"spark.executor.heartbeatInterval": "1s"}
    spec = minimal_grid(name="wide", store=str(tmp_path / "store"), spark_conf=beats)
    spec["workload"] = {"dataset": str(tmp_path / "wide.npz"), "epochs": [2], "trials": 1, "test_size": 0.1,
                        "model": {"hidden_layer_sizes": [8]}}  # fmt: skip
    (tmp_path / "grid.yaml").write_text(yaml.safe_dump(spec))
    plan = make_plan(grid_file.load(tmp_path / "grid.yaml"))
    result = runner.run(plan, store=tmp_path / "store")
    rows: dict[str, dict[str, Any]] = {row["engine"]: dict(row) for row in result.rows}
    assert set(rows) == {"local", "spark", "dask"} and all(r["status"] == "ok" for r in rows.values()), result.rows
    held_gib = 0.9 * ROWS * FEATURES * 4 / GIB  # the training split each worker holds
    for engine, row in rows.items():
        assert row["cpu_s_fits"] > 0 and row["cpu_s_workers"] >= row["cpu_s_fits"] * 0.9, (engine, row)
        assert 0 < row["slot_utilisation"] <= 1.5, (engine, row)
        assert row["worker_peak_rss_gib_max"] >= row["worker_peak_rss_gib_median"] >= held_gib, (engine, row)
        # what else used the machine, read around each fit (fits spanning under MIN_SPAN_S: no reading; a fit's
        # readings span more than it): this machine's share
        if row["fit_task_max_s"] >= MIN_SPAN_S or row["interference_cpu_share"] is not None:
            assert row["interference_cpu_share"] >= 0 and isinstance(row["disturbed"], bool), (engine, row)
            assert row["interference_host"] == socket.gethostname() and 0 <= row["steal_share"] <= 1, (engine, row)
    spark = rows["spark"]
    heap = spark["jvm_peak_heap_gib"]
    assert heap is not None and 0 < heap <= spark["granted_executor_memory_gib"], spark
    assert spark["resource_note"] is None, spark
    assert not math.isnan(rows["dask"]["worker_peak_rss_gib_max"])
    assert_no_launch_processes()


def test_worker_pids_tell_equal_pids_on_two_machines_apart() -> None:
    from sweeper.run.rows import result_columns

    same_pid = [fit(usage(7, (0.0, 1.0), 0.5, host=f"node:{boot}:1"), pid=7) for boot in ("aaaa", "bbbb")]
    assert result_columns(same_pid)["worker_pids"] == 2
    one_process = [fit(usage(7, (0.0, 1.0), 0.5, host="node:aaaa:1"), pid=7)] * 2
    assert result_columns(one_process)["worker_pids"] == 1


def test_a_machine_is_named_by_host_boot_and_pid_namespace() -> None:
    """Nodes with one host name, or in PID namespaces of one kernel, are still different machines."""
    import socket
    import subprocess
    import sys

    from sweeper.workload.usage import machine

    here = machine()
    host, boot, namespace = here.split(":")
    assert host == socket.gethostname() and len(boot) == 8
    assert int(namespace) == os.stat("/proc/self/ns/pid").st_ino
    script = "from sweeper.workload.usage import machine; print(machine())"
    in_namespace = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c", script],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout.strip()  # fmt: skip
    assert in_namespace != here and in_namespace.split(":")[:2] == [host, boot]
