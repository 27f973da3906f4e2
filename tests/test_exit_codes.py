"""``sweeper run``'s exit status from its rows (issue #33): 0 when every measurement is ok or pruned, 3 when a
launch did not start, 4 when a measurement failed or timed out; 2, 130 and 143 are unchanged.

The sweeps that end each way for real: tests/test_sweep_local.py (0, 4), tests/test_reliability.py (3, 4).
"""

from __future__ import annotations

from typing import cast

from sweeper.errors import USER_ERROR_EXIT
from sweeper.run.runner import exit_code
from sweeper.run.signals import EXIT_LAUNCH_FAILED, EXIT_MEASUREMENT_FAILED, Stopped, exit_status
from sweeper.store.row import Row

NOT_STARTED = "launch did not start: spark: Address already in use (logs: /store/.runs/r/logs/launch-001-spark.log)"


def row(status: str, launch_index: int = 0, error: str | None = None) -> Row:
    """The columns ``exit_code`` reads of a row."""
    return cast(Row, {"status": status, "launch_index": launch_index, "error": error})


def test_the_codes_are_distinct_from_each_other_and_from_bad_input_and_stops() -> None:
    interrupts = {exit_status(KeyboardInterrupt()), exit_status(Stopped(15))}
    assert interrupts == {130, 143}
    assert len({0, USER_ERROR_EXIT, EXIT_LAUNCH_FAILED, EXIT_MEASUREMENT_FAILED, *interrupts}) == 6


def test_ok_and_pruned_rows_and_no_rows_exit_0() -> None:
    assert exit_code([]) == (0, None)
    assert exit_code([row("ok"), row("pruned", 1, "not promoted by halving"), row("ok", 2)]) == (0, None)


def test_failed_and_timed_out_measurements_exit_4_saying_how_many() -> None:
    rows = [row("ok"), row("failed", 1, "InvalidParameterError: solver"), row("timeout", 1, "past 1.5 s")]
    code, why = exit_code(rows)
    assert code == EXIT_MEASUREMENT_FAILED == 4
    assert why == "1 measurement failed, 1 measurement timed out; see the rows' error column"
    code, why = exit_code([row("failed", 0, "KilledWorker"), row("failed", 2, "ExecutorLostFailure")])
    assert (code, why) == (4, "2 measurements failed; see the rows' error column")


def test_a_launch_that_did_not_start_exits_3_even_when_measurements_failed_too() -> None:
    rows = [row("failed", 1, NOT_STARTED), row("failed", 1, NOT_STARTED), row("ok", 2)]
    assert exit_code(rows) == (
        EXIT_LAUNCH_FAILED,
        "1 launch did not start, failing 2 measurements; see the rows' error column",
    )
    rows += [row("failed", 3, NOT_STARTED), row("timeout", 2, "past 1.5 s")]
    assert exit_code(rows) == (
        3,
        "2 launches did not start, failing 3 measurements, 1 measurement timed out; see the rows' error column",
    )


def test_only_an_error_that_begins_as_a_failed_start_counts_as_one() -> None:
    """A fit's own message may quote the words; a timeout row never stands for a launch that did not start."""
    assert exit_code([row("failed", 0, "ValueError: the launch did not start: nope")])[0] == EXIT_MEASUREMENT_FAILED
    assert exit_code([row("timeout", 0, NOT_STARTED)])[0] == EXIT_MEASUREMENT_FAILED
    assert exit_code([row("failed", 0, None)])[0] == EXIT_MEASUREMENT_FAILED
