"""False marks: a real local sweep's interference marks against the machine's load measured beside it.

Issue 34 asks that under 5 % of a quiet sweep's measurements be marked disturbed, and that the limit
(``workload.interference_limit``, :data:`sweeper.config.grid.INTERFERENCE_LIMIT`) be chosen from measurements.
One sweep of Spark and Dask launches of 2 x 1 core on this machine, every trial taken once (no re-measurement), the
limit set explicitly. Beside it, the bench's own account of the machine (:class:`ForeignMeter`): between a launch's
consecutive rows (one batch and its row), the machine's busy CPU time minus this process tree's (its launches
included), over the machine's cores x the interval, a figure in the rows' unit here (the launch has every core).

A measurement whose interval was quiet (others under the limit) but is marked disturbed is a **false mark**; one
whose interval was busy but is not marked, a **missed mark**. The shares of quiet measurements' rows
(``interference_cpu_share``: median, 95th percentile, largest) show where the limit sits: above what a quiet batch
reads, below the 0.5 a process spinning on one of the launch's 2 cores reads. On a busy machine the quiet
measurements are few (the target needs :data:`MIN_QUIET` of them) and the comparison still tells whether the marks
are others' CPU.

``python -m tests.bench.quiet [--trials N]`` runs this piece alone and prints its paragraph; ``make bench`` runs
it with the rest.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sweeper.run.interference import process_tree_cpu_s
from tests.bench.machine import machine_busy_s, machine_cores
from tests.bench.settings import Settings
from tests.bench.text import _fmt
from tests.support.batches import READABLE_EPOCHS

# MLP (64) on digits, 2 fits per slot, readable (with 150 a quiet make bench read no batch and counted 0 measurements)
QUIET_EPOCHS = READABLE_EPOCHS // 2
MIN_QUIET = 20  # quiet measurements the false-mark target needs


def quiet_grid(trials: int, limit: float, engines: Sequence[str]) -> dict[str, Any]:
    """``engines`` (Spark and Dask), 2 executors (workers) x 1 core on this machine, one point, ``trials`` trials."""
    return {
        "name": "bench-quiet",
        "cluster": {"manager": "local", "nodes": 1, "cores_per_node": machine_cores(), "memory_per_node": "8GiB"},
        "sizing": {"cores_per_executor": [1], "reserve": {"cores": 0, "memory": "1GiB"}, "application_master": 0},
        "engines": list(engines),
        "baseline": False,
        "workload": {
            "dataset": "digits",
            "model": {"hidden_layer_sizes": [64]},
            "epochs": [QUIET_EPOCHS],
            "trials": trials,
            "n_fits": 2 * machine_cores(),
            "exact_epochs": True,
            "interference_limit": limit,
            "remeasure_disturbed": 0,
        },
    }


def tree_cpu_s() -> float:
    """CPU seconds of this process, its descendants still running (the sweeper's own reading of its tree) and its
    children already reaped."""
    times = os.times()
    return process_tree_cpu_s() + times.children_user + times.children_system


class ForeignMeter:
    """A run's reporter: at each row, the share of the machine others used since the launch's previous row."""

    def __init__(self) -> None:
        self.pairs: list[tuple[float, bool, float]] = []  # (interference_cpu_share, disturbed, others' share)
        self._last: tuple[int, float, float, float] | None = None  # launch index, busy s, tree s, at s

    def __call__(self, row: Mapping[str, Any]) -> None:
        now = (int(row["launch_index"]), machine_busy_s(), tree_cpu_s(), time.perf_counter())
        last, self._last = self._last, now
        if last is None or last[0] != now[0] or row.get("interference_cpu_share") is None:
            return  # a launch's first row: its interval holds the launch's start, not only its batch
        others_s = max(now[1] - last[1] - (now[2] - last[2]), 0.0)
        share = others_s / (machine_cores() * (now[3] - last[3]))
        self.pairs.append((float(row["interference_cpu_share"]), bool(row["disturbed"]), share))


def quiet_sweep(trials: int, scratch: Path, engines: Sequence[str]) -> dict[str, Any]:
    """Run the sweep into ``scratch`` beside a :class:`ForeignMeter`; its marks against the meter's account."""
    from sweeper.config.grid import INTERFERENCE_LIMIT
    from sweeper.config.load import parse
    from sweeper.planning.plan import make_plan
    from sweeper.run import runner

    plan = make_plan(parse(quiet_grid(trials, INTERFERENCE_LIMIT, engines), Path("<bench-quiet>")))
    meter, began = ForeignMeter(), time.perf_counter()
    runner.run(plan, store=scratch, report=meter, warn=lambda _: None)
    return {
        **mark_figures(meter.pairs, INTERFERENCE_LIMIT),
        "wall_s": time.perf_counter() - began,
        "launch": f"{' and '.join(engines)}, {machine_cores()} x 1 core on this machine",
        "batch": f"{2 * machine_cores()} fits of MLP (64) on digits, {QUIET_EPOCHS} epochs, {trials} trials each",
    }


def mark_figures(pairs: Sequence[tuple[float, bool, float]], limit: float) -> dict[str, Any]:
    """The marks against the meter: (row's share, disturbed, others' share) per measurement.

    >>> figures = mark_figures([(0.02, False, 0.01), (0.3, True, 0.02), (0.6, True, 0.55), (0.1, False, 0.4)], 0.25)
    >>> figures["quiet"], figures["false_marks"], figures["false_marks_pct"], figures["missed_marks"]
    (2, 1, None, 1)
    >>> mark_figures([(0.02, False, 0.01)] * 19 + [(0.3, True, 0.02)], 0.25)["false_marks_pct"]
    5.0
    >>> figures["quiet_max"], figures["busy"]
    (0.3, 2)
    """
    quiet = [(share, marked) for share, marked, others in pairs if others <= limit]
    busy = [(share, marked) for share, marked, others in pairs if others > limit]
    false_marks = sum(marked for _, marked in quiet)
    return {
        "limit": limit,
        "measurements": len(pairs),
        "quiet": len(quiet),
        "false_marks": false_marks,
        "false_marks_pct": 100 * false_marks / len(quiet) if len(quiet) >= MIN_QUIET else None,
        "quiet_median": _quantile([share for share, _ in quiet], 0.5),
        "quiet_p95": _quantile([share for share, _ in quiet], 0.95),
        "quiet_max": max((share for share, _ in quiet), default=None),
        "busy": len(busy),
        "missed_marks": sum(not marked for _, marked in busy),
        "busy_median": _quantile([share for share, _ in busy], 0.5),
        "others_median": _quantile([others for _, _, others in pairs], 0.5),
        "gap_median": _quantile([abs(share - others) for share, _, others in pairs], 0.5),
        "over_p95": _quantile([share - others for share, _, others in pairs], 0.95),
        "over_max": max((share - others for share, _, others in pairs), default=None),
    }


def quiet_lines(quiet: Mapping[str, Any]) -> list[str]:
    """The paragraph BENCHMARKS.md gives the sweep."""
    judged = quiet.get("false_marks_pct") is not None
    return [
        f"- **Interference marks against the machine's load** ({quiet.get('launch')}; {quiet.get('batch')}; every "
        f"trial once, `interference_limit` {quiet.get('limit')}; {_fmt(quiet.get('wall_s'), 0)} s): of "
        f"{quiet.get('measurements')} measurements, {quiet.get('quiet')} were taken while other processes used at "
        f"most the limit of the machine (measured beside the sweep) and {quiet.get('false_marks')} of them were "
        f"marked disturbed (false marks: {_fmt(quiet.get('false_marks_pct'), 1)} %"
        + ("" if judged else f", not judged below {MIN_QUIET} quiet measurements")
        + f"); their `interference_cpu_share` median {_fmt(quiet.get('quiet_median'), 3)}, 95th percentile "
        f"{_fmt(quiet.get('quiet_p95'), 3)}, largest {_fmt(quiet.get('quiet_max'), 3)}. {quiet.get('busy')} were "
        f"taken while others used more ({quiet.get('missed_marks')} not marked: missed marks), reading median "
        f"{_fmt(quiet.get('busy_median'), 3)}. Rows against the meter: within {_fmt(quiet.get('gap_median'), 3)} "
        f"(median absolute gap); a row's share minus the meter's {_fmt(quiet.get('over_p95'), 3)} at the 95th "
        f"percentile, {_fmt(quiet.get('over_max'), 3)} at the largest (a false mark needs a row above the limit "
        "where the meter is under it); "
        "a process spinning on one of the launch's 2 cores reads about 0.5."
    ]


def _quantile(values: Sequence[float], q: float) -> float | None:
    import numpy as np

    return float(np.quantile(values, q)) if len(values) else None


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tests.bench.quiet [--trials N]``: this piece alone, its paragraph printed."""
    parser = argparse.ArgumentParser(prog="python -m tests.bench.quiet", description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=20, help="trials per engine (default 20)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="sweeper-bench-quiet-") as scratch:
        quiet = quiet_sweep(args.trials, Path(scratch), Settings().quiet_engines)
    print("\n".join(quiet_lines(quiet)))
    print({key: value for key, value in quiet.items() if not isinstance(value, str)})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
