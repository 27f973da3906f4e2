"""Golden tables for the executor-sizing rules."""

from __future__ import annotations

import pytest

from sweeper.sizing import Cluster, InfeasibleShape, size_executors, spark_overhead_mib

GIB = 1024


@pytest.mark.parametrize(
    ("cluster", "cores", "executors", "memory_gib", "overhead_gib"),
    [
        # The report's Table 1: 2 nodes x 24 cores x 64 GiB.
        pytest.param(Cluster(2, 24, 64 * GIB), 4, 9, 11, 1, id="report-table1-4cores"),
        pytest.param(Cluster(2, 24, 64 * GIB), 5, 7, 13, 2, id="report-table1-5cores"),
        pytest.param(Cluster(2, 24, 64 * GIB), 6, 5, 19, 2, id="report-table1-6cores"),
        # Cloudera's "How-to: Tune Your Apache Spark Jobs (Part 2)": 6 nodes x 16 cores x 64 GB
        # -> --num-executors 17 --executor-cores 5 --executor-memory 19G.
        pytest.param(Cluster(6, 16, 64 * GIB), 5, 17, 19, 2, id="cloudera-6x16x64"),
        # Clairvoyant's worked example: 10 nodes x 16 cores x 64 GB, 5 cores -> 29 executors
        # (they subtract 3 GB overhead by hand; the rule's rounded-up 7 % gives 2 GB).
        pytest.param(Cluster(10, 16, 64 * GIB), 5, 29, 19, 2, id="clairvoyant-10x16x64"),
        # One core per executor: the "tiny executors" end of the same guides.
        pytest.param(Cluster(6, 16, 64 * GIB), 1, 89, 3, 1, id="tiny-executors"),
        # No reserve, no AM: a laptop.
        pytest.param(Cluster(1, 8, 32 * GIB, 0, 0, 0), 2, 4, 7, 1, id="laptop-no-reserve"),
    ],
)
def test_report_rule(cluster: Cluster, cores: int, executors: int, memory_gib: int, overhead_gib: int) -> None:
    shape = size_executors(cluster, cores, "report")
    assert (shape.executors, shape.executor_memory_gib, shape.memory_overhead_gib) == (
        executors,
        memory_gib,
        overhead_gib,
    )
    assert shape.total_cores == executors * cores


def test_report_layout_holds_back_the_application_master_on_the_first_node() -> None:
    shape = size_executors(Cluster(2, 24, 64 * GIB), 5)
    assert shape.executors_per_node == 4
    assert shape.workers_per_node == (3, 4)
    assert sum(shape.workers_per_node) == shape.executors


@pytest.mark.parametrize(
    ("cores", "heap_mib"),
    [pytest.param(4, 11171, id="4cores-12g-slot"), pytest.param(5, 13964, id="5cores-15g-slot")],
)
def test_spark_default_rule_fills_the_slot_with_spark_overhead(cores: int, heap_mib: int) -> None:
    shape = size_executors(Cluster(2, 24, 64 * GIB), cores, "spark-default")
    assert shape.executor_memory_mib == heap_mib
    assert shape.memory_overhead_mib == spark_overhead_mib(heap_mib)
    assert shape.executor_memory_mib + shape.memory_overhead_mib <= shape.slot_mib
    # one more MiB of heap would overflow the slot
    assert heap_mib + 1 + spark_overhead_mib(heap_mib + 1) > shape.slot_mib


@pytest.mark.parametrize(
    ("cluster", "cores", "match"),
    [
        pytest.param(Cluster(2, 24, 64 * GIB), 24, "do not fit", id="more-than-usable"),
        pytest.param(Cluster(1, 4, 8 * GIB), 3, "leave no executor", id="only-the-am"),
        pytest.param(Cluster(1, 8, 4 * GIB, 0, 1024, 0), 1, "at least 1 GiB", id="memory-too-small"),
    ],
)
def test_infeasible_shapes(cluster: Cluster, cores: int, match: str) -> None:
    with pytest.raises(InfeasibleShape, match=match):
        size_executors(cluster, cores)
