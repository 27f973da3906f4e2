"""Interference per measurement (:mod:`sweeper.run.interference`): what else used a node while a batch ran, a
disturbed trial taken again, and verdicts that never rest on a disturbed measurement (``recommend``)."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from sweeper import cli
from sweeper.config import load as grid_file
from sweeper.config.environment_defaults import INTERFERENCE_LIMIT_VARIABLE
from sweeper.config.grid import INTERFERENCE_LIMIT
from sweeper.planning.plan import make_plan
from sweeper.results import recommend as rec
from sweeper.results import recommend_view as view
from sweeper.run import runner
from sweeper.run.interference import interference_columns
from sweeper.store.parquet import load_results
from sweeper.workload.machine_load import Busiest, MachineLoad, others_cpu
from sweeper.workload.usage import MachineReading, ProcessUsage, Usage, machine, measured
from tests.conftest import minimal_grid
from tests.support.batches import READABLE_EPOCHS
from tests.support.busy import busy_loop_outside_this_process_tree
from tests.support.leftovers import assert_no_launch_processes
from tests.support.synthetic_stores import ArmSpec, synthetic_rows, to_frame


def reading(at_s: float, busy_s: float, steal_s: float = 0.0, stall_s: float | None = 0.0) -> MachineReading:
    """The counters of a 4-core machine."""
    return MachineReading(at_s, busy_s, steal_s, stall_s, cores=4)


def usage(host: str, pid: int, cpu_s: tuple[float, float], machine_s: tuple[MachineReading, MachineReading]) -> Usage:
    """A fit in worker ``pid`` on ``host``: the worker's CPU went from cpu_s[0] to cpu_s[1] while the machine's
    counters went from machine_s[0] to machine_s[1]."""
    before, after = ProcessUsage(pid, cpu_s[0], None), ProcessUsage(pid, cpu_s[1], None)
    return Usage(host, cpu_s[1] - cpu_s[0], before, after, None, None, *machine_s)


def test_other_processes_cpu_is_a_share_of_the_launchs_cores_and_disturbs_above_the_limit() -> None:
    # 2 workers of 1 core for 4 s: they used 7 s, the node was busy 13 s: 6 s of others over 2 cores x 4 s
    fits = [
        usage("node-a:b:1", 10, (0.0, 3.5), (reading(100.0, 50.0), reading(104.0, 63.0))),
        usage("node-a:b:1", 11, (0.0, 3.5), (reading(100.0, 50.0), reading(104.0, 63.0))),
    ]
    columns = interference_columns(fits, cores_per_executor=1, limit=0.25)
    assert columns["interference_cpu_share"] == pytest.approx(6.0 / 8.0)
    assert columns["interference_host"] == "node-a" and columns["disturbed"] is True
    assert interference_columns(fits, cores_per_executor=1, limit=0.8)["disturbed"] is False


def test_a_quiet_node_reads_zero_and_the_worst_node_is_named() -> None:
    quiet = usage("quiet:b:1", 10, (0.0, 4.0), (reading(0.0, 10.0), reading(4.0, 14.0)))
    stolen = usage("stolen:b:1", 10, (0.0, 4.0), (reading(0.0, 10.0, steal_s=0.0), reading(4.0, 14.0, steal_s=8.0)))
    busy = usage("busy:b:1", 10, (0.0, 4.0), (reading(0.0, 10.0, stall_s=1.0), reading(4.0, 16.0, stall_s=3.0)))
    columns = interference_columns([quiet], cores_per_executor=1, limit=0.25)
    assert columns["interference_cpu_share"] == 0.0 and columns["disturbed"] is False
    columns = interference_columns([quiet, stolen, busy], cores_per_executor=1, limit=0.25)
    assert columns["interference_host"] == "busy"  # 2 s of others over 1 core x 4 s: 0.5
    assert columns["interference_cpu_share"] == pytest.approx(0.5) and columns["cpu_pressure_share"] == 0.5
    assert columns["disturbed"] is True
    stolen_only = interference_columns([quiet, stolen], cores_per_executor=1, limit=0.25)
    assert stolen_only["steal_share"] == pytest.approx(8.0 / (4 * 4.0)) and stolen_only["disturbed"] is True


def test_without_readings_or_over_an_instant_nothing_is_claimed() -> None:
    unread = Usage("h", 1.0, ProcessUsage(1, 0.0, None), ProcessUsage(1, 1.0, None))
    instant = usage("h:b:1", 1, (0.0, 0.0), (reading(5.0, 1.0), reading(5.5, 9.0)))  # 0.5 s: ticks of 10 ms
    for fits in ([], [unread], [instant]):
        columns = interference_columns(fits, cores_per_executor=1, limit=0.25)
        assert columns["interference_cpu_share"] is None and columns["disturbed"] is None


def test_a_process_spinning_beside_a_real_fit_is_read_as_interference() -> None:
    """Real counters: this process computes for ~1.5 s on one core while another spins; the other's CPU is what
    the machine was busy with beyond this process (more, on a busier machine: the share only grows)."""
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)  # the spinner is running before the measurement starts
        with measured() as probe:
            deadline = time.monotonic() + 1.5
            while time.monotonic() < deadline:
                sum(range(1000))
    finally:
        spinner.kill()
        spinner.wait()
    assert probe.usage is not None and probe.usage.machine_before is not None
    columns = interference_columns([probe.usage], cores_per_executor=1, limit=0.25)
    assert columns["interference_cpu_share"] is not None and columns["interference_cpu_share"] > 0.4, columns
    assert columns["disturbed"] is True and columns["interference_host"] == machine().split(":")[0]


def test_recommend_leaves_disturbed_measurements_out_and_holds_back_what_is_left_too_few() -> None:
    arms = [ArmSpec("spark", 2, 2, 4.0, median_s=10.0, trials=5), ArmSpec("dask", 2, 2, 4.0, median_s=20.0, trials=5)]
    rows = synthetic_rows(arms, epochs=(10, 100), seed=3)
    for row in rows:
        row.update(interference_cpu_share=0.01, disturbed=False, interference_host="quiet")
    # at 100 epochs, 3 of Spark's 5 trials were taken under load, and they were the fast ones
    loaded = [r for r in rows if r["engine"] == "spark" and r["epochs"] == 100][:3]
    for row in loaded:
        row.update(fit_wall_s=1.0, interference_cpu_share=0.9, disturbed=True, interference_host="node-b")
    found = rec.recommend(to_frame(rows))
    by_epochs = {answer.epochs: answer for answer in found.answers}
    assert by_epochs[10].verdict == "faster" and by_epochs[10].winner.n == 5
    assert by_epochs[100].verdict == rec.MEASURED_UNDER_LOAD and by_epochs[100].winner.engine == "spark"
    assert by_epochs[100].winner.n == 2 and by_epochs[100].winner.median_s > 5  # the 1 s trials are not in it
    assert found.overall.endswith(f"(1 of 2 settled, 1 {rec.MEASURED_UNDER_LOAD})"), found.overall
    engines = {line.epochs: line.verdict for line in found.engine_pairs}
    assert engines[100] == rec.MEASURED_UNDER_LOAD and engines[10] == "spark faster"
    assert found.disturbed == rec.Disturbed(3, 20, ("node-b",))
    text = "\n".join(view.lines(found))
    assert "3 of 20 measurements taken under load were left out (busiest node: node-b)" in text
    assert view.to_json(found)["disturbed"] == {"left_out": 3, "of": 20, "hosts": ["node-b"]}
    assert rec.recommend(to_frame([r for r in rows if not r["disturbed"]])).disturbed is None


def test_a_sweep_measured_entirely_under_load_is_held_back_not_unanswered() -> None:
    rows = synthetic_rows([ArmSpec("spark", 2, 2, 4.0), ArmSpec("dask", 2, 2, 4.0)], seed=4)
    for row in rows:
        row.update(interference_cpu_share=1.2, disturbed=True, interference_host="node-a")
    found = rec.recommend(to_frame(rows))
    assert not found.answers and found.disturbed == rec.Disturbed(10, 10, ("node-a",))
    assert view.answer_lines(found) == [
        "10 of 10 measurements taken under load were left out (busiest node: node-a): other processes used more "
        "of the nodes' CPU than workload.interference_limit allows",
        "Overall: held back: measured under load: every ok measurement of an engine was taken under load",
    ]


def test_compare_and_the_what_if_model_leave_disturbed_rows_out_too() -> None:
    from sweeper.results import statistics
    from sweeper.results.predict.model import medians

    rows = synthetic_rows([ArmSpec("spark", 2, 2, 4.0, trials=5), ArmSpec("dask", 2, 2, 4.0, trials=5)], seed=5)
    for row in [r for r in rows if r["engine"] == "spark"][:2]:
        row.update(disturbed=True, interference_cpu_share=0.7)
    frame = to_frame(rows)
    side_by_side = statistics.engines(frame)
    assert side_by_side["spark_n"].tolist() == [3] and side_by_side["dask_n"].tolist() == [5]
    assert sorted(medians(frame)["trials"].tolist()) == [3, 5]


@pytest.mark.integration
def test_a_batch_taken_beside_a_busy_loop_is_disturbed_taken_again_and_left_out(tmp_path: Path) -> None:
    """A real Dask launch of 1 worker x 1 core, 3 trials; a busy loop runs through the second batch exactly (started
    when the first row is reported, stopped when the second is). That batch is disturbed, read on this machine, and
    taken again under its key; every disturbed row is left out of recommend's figures and counted there. (On a
    machine already busy, quiet batches may be disturbed too and are taken again the same way: not asserted.)"""
    spec = minimal_grid(
        name="hog", store=str(tmp_path / "store"), engines=["dask"], baseline=False,
        cluster={"manager": "local", "nodes": 1, "cores_per_node": 1, "memory_per_node": "4GiB"},
        sizing={"cores_per_executor": [1], "reserve": {"cores": 0, "memory": "1GiB"}, "application_master": 0},
        # 2 fits one after another on the one slot
        workload={"dataset": "digits", "epochs": [READABLE_EPOCHS // 2], "trials": 3, "n_fits": 2, "exact_epochs": True,
                  "model": {"hidden_layer_sizes": [64]}, "remeasure_disturbed": 2,
                  "interference_limit": 0.25},
    )  # fmt: skip
    (tmp_path / "grid.yaml").write_text(yaml.safe_dump(spec))
    plan = make_plan(grid_file.load(tmp_path / "grid.yaml"))
    rows: list[dict[str, Any]] = []
    with _hog_through_the_second_batch(rows) as seen:
        result = runner.run(plan, store=tmp_path / "store", report=seen)
    assert_no_launch_processes()
    assert all(row["status"] == "ok" for row in rows), rows
    assert rows[1]["disturbed"] is True and rows[1]["interference_host"] == machine().split(":")[0], [
        {k: r[k] for k in ("fit_wall_s", "interference_cpu_share", "disturbed", "trial")} for r in rows
    ]
    assert rows[1]["interference_cpu_share"] > 0.25
    retaken = [row["trial"] for row in rows]
    assert retaken[2] == retaken[1] and rows[2]["measurement_key"] == rows[1]["measurement_key"]
    extra = 0  # one point: its disturbed trials are taken again, 2 times at most in all
    for row, following in zip(rows, [*rows[1:], None], strict=True):
        if row["disturbed"] and extra < 2:
            extra += 1
            assert following is not None and following["trial"] == row["trial"], retaken
    assert len(rows) == 3 + extra and result.exit_status == 0
    left_out = sum(bool(row["disturbed"]) for row in rows)
    stored = load_results(tmp_path / "store", "hog")
    assert set(zip(stored["visit_round"], stored["visit_position"], strict=True)) == {(1, 1)}  # one launch, one round
    found = rec.recommend(stored)
    assert found.disturbed is not None and (found.disturbed.left_out, found.disturbed.of) == (left_out, len(rows))


@contextmanager
def _hog_through_the_second_batch(rows: list[dict[str, Any]]) -> Iterator[Callable[[Any], None]]:
    """A reporter for :func:`sweeper.run.runner.run` that keeps the rows and runs a busy loop from the first row
    reported to the second (a launch reports a row before it takes the next measurement)."""
    with ExitStack() as hogs:

        def seen(row: Any) -> None:
            rows.append(dict(row))
            if len(rows) == 1:
                hogs.enter_context(busy_loop_outside_this_process_tree())
            elif len(rows) == 2:
                hogs.close()

        yield seen


def test_before_a_sweep_the_cpu_of_a_process_outside_this_tree_is_named_and_this_trees_is_not() -> None:
    """Real processes: a busy loop outside this process's tree is among the others using the CPU; one this process
    started (as a local launch's workers are) is not; a warning names the busiest."""
    mine = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        with busy_loop_outside_this_process_tree() as other:
            used = {p.pid: p for p in others_cpu(sample_s=0.5)}
    finally:
        mine.kill()
        mine.wait()
    assert other in used and used[other].cores > 0.05 and mine.pid not in used, used.get(other)
    load = MachineLoad(1.6, 2, (Busiest("python3", 41, 0.98), Busiest("java", 7, 0.6)))
    assert load.warning(0.25) == (
        "this machine is busy: others use 1.6 of its 2 cores (python3 pid 41 98 %, java pid 7 60 %); measurements "
        "above workload.interference_limit 0.25 are disturbed: taken again, left out"
    )


def test_the_environment_sets_the_default_limit_a_grid_can_still_set_its_own(
    write_grid: Callable[..., Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(INTERFERENCE_LIMIT_VARIABLE, "0.6")
    assert grid_file.load(write_grid(minimal_grid())).workload.interference_limit == 0.6
    own = minimal_grid(workload={"dataset": "digits", "epochs": [5], "trials": 1, "interference_limit": 0.25})
    assert grid_file.load(write_grid(own)).workload.interference_limit == 0.25
    monkeypatch.delenv(INTERFERENCE_LIMIT_VARIABLE)
    assert grid_file.load(write_grid(minimal_grid())).workload.interference_limit == INTERFERENCE_LIMIT
    monkeypatch.setenv(INTERFERENCE_LIMIT_VARIABLE, "busy")
    assert cli.main(["plan", str(write_grid(minimal_grid()))]) == 2
    err = " ".join(capsys.readouterr().err.split())  # its lines unwrapped
    assert "SWEEPER_INTERFERENCE_LIMIT='busy': a number in (0, 100]" in err and "Traceback" not in err
