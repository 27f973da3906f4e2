"""Golden tables for the executor-sizing rules, and sizes that must not hang or overflow them."""

from __future__ import annotations

import math
import tracemalloc

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sweeper.config.sizing import Cluster, InfeasibleShape, size_executors, spark_default_heap_mib, spark_overhead_mib
from sweeper.units import MAX_SIZE_MIB, parse_size_mib

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


def searched_heap_mib(slot_mib: int) -> int:
    """The heap search the closed form replaced (it never ended for a slot of 10**31 TiB)."""
    heap = math.floor(slot_mib / 1.1)
    while (heap + 1) + int(0.10 * (heap + 1)) <= slot_mib:
        heap += 1
    return min(heap, slot_mib - 384)


def test_spark_default_heap_is_the_old_search_for_every_slot_up_to_64_gib() -> None:
    slots = range(-4096, 64 * GIB + 1)  # every MiB, and the negative slots a 0 GiB share gives
    assert [spark_default_heap_mib(slot) for slot in slots] == [searched_heap_mib(slot) for slot in slots]


@given(heap_mib=st.integers(min_value=0, max_value=2**50))
def test_spark_overhead_in_integers_is_sparks_floating_point_formula(heap_mib: int) -> None:
    assert spark_overhead_mib(heap_mib) == max(384, int(0.10 * heap_mib))


@pytest.mark.parametrize("slot_mib", [10**31 * GIB * GIB, 2**200 + 7, 11 * 10**40 + 10])
def test_spark_default_heap_of_a_huge_slot_is_the_largest_that_fits(slot_mib: int) -> None:
    heap = spark_default_heap_mib(slot_mib)
    assert heap + spark_overhead_mib(heap) <= slot_mib < heap + 1 + spark_overhead_mib(heap + 1)


def test_a_node_of_10_to_the_31_tib_sizes_at_once() -> None:
    shape = size_executors(Cluster(2, 24, 10**31 * GIB * GIB), 5, "spark-default")
    assert shape.executor_memory_mib + shape.memory_overhead_mib <= shape.slot_mib
    assert shape.executors == 7


def test_a_billion_nodes_size_without_laying_out_each_node() -> None:
    tracemalloc.start()
    try:
        shape = size_executors(Cluster(10**9, 24, 64 * GIB), 5)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (shape.executors, shape.nodes, shape.held_back) == (4 * 10**9 - 1, 10**9, 1)
    assert peak < 1024 * 1024


@pytest.mark.parametrize(
    ("text", "match"),
    [
        pytest.param("9" * 400 + "GiB", "has more than 24 digits", id="400-digits"),
        pytest.param("1" + "0" * 20 + "T", "is larger than 1024TiB", id="absurd"),
        pytest.param("1025TiB", "is larger than 1024TiB", id="just-above"),
        pytest.param(10**400, "is not a size", id="huge-int"),
        pytest.param(float("inf"), "is not a size", id="inf"),
        pytest.param("nanG", "is not a size", id="nan"),
    ],
)
def test_absurd_sizes_are_value_errors(text: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        parse_size_mib(text)


@given(
    whole=st.integers(min_value=0, max_value=10**6),
    decimals=st.one_of(st.none(), st.text("0123456789", min_size=1, max_size=4)),
    unit=st.sampled_from(["k", "m", "g", "t", "KiB", "MB", "GiB", "TiB"]),
)
def test_exact_sizes_equal_the_float_arithmetic_they_replaced(whole: int, decimals: str | None, unit: str) -> None:
    number = f"{whole}.{decimals}" if decimals else str(whole)
    mib_per_unit = {"k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 * 1024}[unit[0].lower()]
    expected = math.floor(float(number) * mib_per_unit)
    if expected > MAX_SIZE_MIB:
        with pytest.raises(ValueError, match="is larger than"):
            parse_size_mib(number + unit)
    else:
        assert parse_size_mib(number + unit) == expected
