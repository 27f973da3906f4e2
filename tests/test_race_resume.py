"""#39: a search that resumes whole. A run stopped at any point (``kill -9``) and run again measures what an
uninterrupted run would have left to measure, decides as it would have, and a third run finds nothing to do.

The scripted tests stop a search after each write of an uninterrupted one (the store holds what was written
before) on :class:`tests.test_search_race.ScriptedLaunches`; the integration test kills a real race sweep (its
whole process group, Dask workers included) at several points and runs it again, twice.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pandas as pd
import pyarrow.parquet as pq
import pytest

from sweeper import load_results
from sweeper.config import load as grid_file
from sweeper.planning.plan import Plan, make_plan
from sweeper.results.recommend import recommend
from sweeper.results.recommend_view import unmeasured_lines
from sweeper.results.unmeasured import UNFINISHED, unmeasured
from sweeper.run import runner
from sweeper.run.race import RaceRun, Recorded, race_policy
from sweeper.run.rows import RunRecord
from sweeper.run.trials import launch_order
from sweeper.store.row import Row
from tests.conftest import REPO, minimal_grid
from tests.support.faults import assert_no_tagged_processes, new_tag, tagged_environment, write_grid_file
from tests.test_search_race import ScriptedLaunches

NEAR_TIE = {"spark": 10.3, "dask": 10.0}
RESTING = {"dask 1": 10.0, "spark 1": 10.0, "dask 2": 10.5, "spark 2": 30.0}  # dask 2 rests, unsettled at the end
ADAPTIVE = {"min": 3, "max": 8, "target_rel_ci": 0.2}


@dataclass(frozen=True)
class Scenario:
    """A search on scripted launches: the grid's ``search`` and trials, the engines' times, a start's seconds."""

    search: dict[str, Any] | None
    trials: Any
    times_s: dict[str, float]
    start_s: float
    cores: tuple[int, ...] = (1,)
    factors: tuple[float, float, float] = (1.0, 1.05, 1.1)

    def launches(self) -> ScriptedLaunches:
        return ScriptedLaunches(self.times_s, self.start_s, factors=self.factors)


SCENARIOS = {
    "race, a near-tie settled at 6 trials": Scenario({"strategy": "race"}, 10, NEAR_TIE, 1.0),
    "race, a clearly slower engine leaves": Scenario({"strategy": "race"}, 10, {"spark": 30.0, "dask": 10.0}, 1.0),
    "race, launches staying from the third round": Scenario({"strategy": "race"}, 10, NEAR_TIE, 100.0),
    "race, launches staying from the first visit": Scenario({"strategy": "race"}, 10, NEAR_TIE, 1000.0),
    "race, one resting to the end": Scenario({"strategy": "race"}, 10, RESTING, 1.0, cores=(1, 2)),
    "race with adaptive trials": Scenario({"strategy": "race"}, ADAPTIVE, RESTING, 1.0, cores=(1, 2)),
    "auto, racing on": Scenario({}, 10, NEAR_TIE, 1.0),
    "auto, everything at once": Scenario({}, 10, {"spark": 10.0, "dask": 10.0}, 100.0, factors=(1.0, 1.3, 1.15)),
    "halving": Scenario({"strategy": "halving", "eta": 2}, 4, RESTING, 1.0, cores=(1, 2)),
    "halving with adaptive trials": Scenario({"strategy": "halving", "eta": 2}, ADAPTIVE, RESTING, 1.0, cores=(1, 2)),
    "adaptive trials": Scenario(None, ADAPTIVE, RESTING, 1.0, cores=(1, 2), factors=(1.0, 1.3, 1.15)),
}


def scenario_plan(scenario: Scenario, tmp: Path) -> Plan:
    spec = minimal_grid(engines=["spark", "dask"], baseline=False)
    spec["sizing"]["cores_per_executor"] = list(scenario.cores)
    spec["workload"] = {"dataset": "digits", "epochs": [5, 10], "trials": scenario.trials}
    if scenario.search is not None:
        spec["search"] = scenario.search
    return make_plan(grid_file.load(write_grid_file(tmp / "grid.yaml", spec)))


def stored(rows: Sequence[Row]) -> Recorded:
    """What a store holding ``rows`` tells a run (as the runner reads it)."""
    done_s = {str(r["measurement_key"]): float(r["fit_wall_s"] or 0) for r in rows if r["status"] == "ok"}
    decided = {
        str(r["measurement_key"]): (str(r["stop_reason"]), int(r["race_round"] or 0))
        for r in rows
        if r["status"] == "pruned" and r.get("race_round") is not None
    }
    ok = [r for r in rows if r["status"] == "ok" and r.get("race_round")]
    rounds = {str(r["measurement_key"]): int(r["race_round"] or 0) for r in ok}
    return Recorded(done_s, decided, rounds)


def searched(
    plan: Plan, scenario: Scenario, before: Sequence[Row], tmp: Path, notes: list[str] | None = None
) -> tuple[list[Row], ScriptedLaunches]:
    """One run of the plan's search (as ``sweeper run`` runs it) over a store holding ``before``: its rows (and
    what it says at its end, into ``notes``)."""
    rows: list[Row] = []
    launches = scenario.launches()
    fake = SimpleNamespace(run=launches.run, run_record=RunRecord.of(plan.grid, "r", {}), data={1.0: None}, store=tmp)
    pruned = {str(r["measurement_key"]) for r in before if r["status"] == "pruned"}
    runner._run_decided(plan, cast(Any, fake), stored(before), pruned, rows.append, [] if notes is None else notes)
    return rows, launches


def ended(rows: Sequence[Row]) -> set[tuple[str, str, str | None]]:
    """The store's measurements: (key, status, stop reason of a pruned row)."""
    return {
        (str(r["measurement_key"]), str(r["status"]), r.get("stop_reason") if r["status"] == "pruned" else None)
        for r in rows
    }


def stops(rows: Sequence[Row]) -> Iterator[int]:
    """The places a run can stop at: before each row, but not inside a file of decisions (written at once)."""
    for cut in range(len(rows) + 1):
        if 0 < cut < len(rows) and rows[cut - 1]["status"] == rows[cut]["status"] == "pruned":
            continue
        yield cut


def first_stay_trials(plan: Plan, rows: Sequence[Row]) -> set[int]:
    """The rows that are a visit's first trial taken for staying: a run stopped just before one cannot know that its
    launch stayed (it compared a start's seconds the store does not keep), so it does not (its launch is down)."""
    if plan.grid.search.strategy != "race":
        return set()
    schedule = race_policy(plan).schedule

    def staying(row: Row) -> bool:
        level = schedule[min(int(row.get("race_round") or 1), len(schedule)) - 1]
        return row["status"] == "ok" and row.get("race_round") is not None and int(row["trial"]) >= level

    return {
        cut
        for cut in range(1, len(rows))
        if staying(rows[cut])
        and not (staying(rows[cut - 1]) and rows[cut - 1]["launch_index"] == rows[cut]["launch_index"])
    }


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_a_search_stopped_anywhere_resumes_to_what_an_uninterrupted_run_leaves(name: str, tmp_path: Path) -> None:
    scenario = SCENARIOS[name]
    plan = scenario_plan(scenario, tmp_path)
    whole, _ = searched(plan, scenario, [], tmp_path)
    unknowable = first_stay_trials(plan, whole)
    for cut in stops(whole):
        before = whole[:cut]
        again, _ = searched(plan, scenario, before, tmp_path)
        store = [*before, *again]
        ok = [r["measurement_key"] for r in store if r["status"] == "ok"]
        assert len(ok) == len(set(ok)), f"{name}, stopped at {cut}: a trial measured twice"
        if cut not in unknowable:
            assert ended(store) == ended(whole), f"{name}, stopped before row {cut} of {len(whole)}"
        third, launches = searched(plan, scenario, store, tmp_path)
        assert third == [] and not launches.visits, f"{name}, stopped at {cut}: the third run measured {third}"
        assert race_over(plan, store), f"{name}, stopped at {cut}: a race left unfinished"


def test_a_resumed_auto_race_keeps_the_choice_its_first_round_made_and_says_so(tmp_path: Path) -> None:
    """The first round in the store, and the second's first launch past the trials racing on would have taken: the
    choice is kept (its start seconds are not in the store to make it again), the rest of every trial measured."""
    scenario = SCENARIOS["auto, everything at once"]
    plan = scenario_plan(scenario, tmp_path)
    notes: list[str] = []
    whole, _ = searched(plan, scenario, [], tmp_path, notes)
    assert "measuring every remaining trial now" in notes[1]
    cut = next(cut for cut, row in enumerate(whole) if row["race_round"] == 2 and int(row["trial"]) >= 4) + 1
    notes.clear()
    again, _ = searched(plan, scenario, whole[:cut], tmp_path, notes)
    assert ended([*whole[:cut], *again]) == ended(whole)
    assert notes[1] == (
        "auto, after the first round (measured by an earlier run of this sweep): measuring every remaining trial "
        "now, no more decisions, kept from it"
    )


def test_a_race_short_of_its_trials_without_a_decision_is_named_unfinished() -> None:
    """What a killed race leaves: 2 of 4 trials and no decision; a configuration a decision stopped is not named."""
    base = {"engine": "dask", "cores_per_executor": 1, "executors": 2, "executor_memory_gib": 2.0, "race_max_trials": 4}
    other = {**base, "executors": 1, "cores_per_executor": 2}
    rows = [{**shape, "epochs": 5, "trial": trial, "status": "ok"} for shape in (base, other) for trial in range(2)]
    rows.append({**other, "epochs": 5, "trial": 2, "status": "pruned"})
    (short,) = unmeasured(pd.DataFrame(rows))
    assert (short.label, short.epochs, short.status) == ("dask 2 executors x 1 core x 2 GiB", (5,), UNFINISHED)
    assert short.reason.startswith("2 of 4 trials at 5 epochs, and no decision of the race stopped it")
    failed = replace(short, executors=4, status="failed", reason="launch did not start: no room")
    lines = unmeasured_lines(SimpleNamespace(unmeasured=(short, failed)))  # type: ignore[arg-type]
    unfinished_at = lines.index(next(line for line in lines if line.startswith("Unfinished (in the answer above")))
    assert lines[0] == "Not measured (left out of the answer above):" and "did not start" in lines[1]
    assert unfinished_at == 2 and "2 of 4 trials" in lines[3]  # in the answer, not "left out" of it


def race_over(plan: Plan, rows: Sequence[Row]) -> bool:
    """Every race of a store holding ``rows`` is over: each configuration took its most trials or was stopped."""
    if plan.grid.search.strategy != "race":
        return True

    def nothing_to_take(launch: Any, queue: Any) -> Iterator[Row]:
        assert queue.next() is None
        yield from ()

    race = RaceRun(plan, nothing_to_take, stored(rows), print, print, RunRecord.of(plan.grid, "r", {}), {})
    race.race()
    return all(state.done for state in race.races.values())


# --- a real race sweep killed (SIGKILL, its whole process group) and run again --------------------------------------

KILL_EPOCHS = [1, 2, 3, 4]
KILL_TRIALS = 3  # 2 in the first round, then the third: each Dask launch takes it at once (a start costs more)
SWEEP_TIMEOUT_S = 600


def kill_grid(tmp: Path, name: str) -> Path:
    """Dask only, 2 executors x 1 core and 1 x 2 (launches 0 and 1), a tiny MLP, 3 trials at 4 epochs values;
    confidence 0.999: no decision at 2 trials stops anyone, so every configuration ends at 3 trials however the
    race goes and wherever it was stopped."""
    spec = minimal_grid(name=name, store=str(tmp / "store"), engines=["dask"], baseline=False)
    spec["sizing"]["cores_per_executor"] = [1, 2]
    model = {"hidden_layer_sizes": [8]}
    spec["workload"] = {"dataset": "digits", "epochs": KILL_EPOCHS, "trials": KILL_TRIALS, "model": model}
    spec["search"] = {"strategy": "race", "confidence": 0.999}
    return write_grid_file(tmp / f"{name}.yaml", spec)


def sweeper(*args: str, tag: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sweeper", *args],
        cwd=REPO,
        env=tagged_environment(tag),
        capture_output=True,
        text=True,
        timeout=SWEEP_TIMEOUT_S,
    )


def taken(sweep_dir: Path) -> set[tuple[int, int, int]]:
    """The ok trials the store holds: (launch index, epochs, trial); read while the sweep is stopped."""
    found = set()
    for path in sweep_dir.glob("*.parquet"):
        if not path.name.startswith("."):
            table = pq.read_table(path, columns=["launch_index", "epochs", "trial", "status"]).to_pylist()
            found |= {(r["launch_index"], r["epochs"], r["trial"]) for r in table if r["status"] == "ok"}
    return found


def staying(launch: int, held: set[tuple[int, int, int]]) -> int:
    """How many of its trials after the first round ``launch`` took (its first round complete)."""
    first_round = all((launch, epochs, trial) in held for epochs in KILL_EPOCHS for trial in range(2))
    return sum(1 for index, _, trial in held if index == launch and trial >= 2) if first_round else -1


STOPS: dict[str, Callable[[set[tuple[int, int, int]]], bool]] = {
    # #39's case: the first launch killed while it takes, at once, the trials after its first round
    "inside the first launch's stay": lambda held: (
        0 < staying(0, held) < len(KILL_EPOCHS) and not any(index == 1 for index, _, _ in held)
    ),
    "inside the second launch's first round": lambda held: (
        staying(0, held) == len(KILL_EPOCHS) and 0 < sum(1 for index, _, _ in held if index == 1) < 2 * len(KILL_EPOCHS)
    ),
    "inside the second launch's stay": lambda held: (
        staying(0, held) == len(KILL_EPOCHS) and 0 < staying(1, held) < len(KILL_EPOCHS)
    ),
}


def killed_at(grid: Path, sweep_dir: Path, tag: str, stop: Callable[[set[tuple[int, int, int]]], bool]) -> None:
    """Run the sweep; after each measurement it reports, stop its process group (SIGSTOP) and read the store: where
    ``stop`` holds of what it holds, SIGKILL the group (the sweeper and its Dask workers), else let it go on."""
    process = subprocess.Popen(
        [sys.executable, "-m", "sweeper", "run", str(grid)],
        cwd=REPO,
        env={**tagged_environment(tag), "PYTHONUNBUFFERED": "1", "COLUMNS": "200"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    watchdog = threading.Timer(SWEEP_TIMEOUT_S, os.killpg, (process.pid, signal.SIGKILL))
    watchdog.start()
    output, hit = [], False
    try:
        assert process.stdout is not None
        for line in process.stdout:
            output.append(line)
            if line.split()[:2] != ["ok", "dask"]:
                continue
            os.killpg(process.pid, signal.SIGSTOP)
            hit = stop(taken(sweep_dir))
            os.killpg(process.pid, signal.SIGKILL if hit else signal.SIGCONT)
            if hit:
                break
        process.wait(timeout=60)
    finally:
        watchdog.cancel()
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=60)
    assert hit, "the sweep ended before the store held the state to kill it in:\n" + "".join(output)
    assert process.returncode == -signal.SIGKILL


def outcome(store: Path, sweep: str) -> set[tuple[int, int, int, str]]:
    """The store's measurements: (launch index, epochs, trial, status), ok and pruned, each once."""
    frame = load_results(store, sweep)
    kept = frame[frame["status"].isin(["ok", "pruned"])]
    assert not kept.duplicated(["measurement_key", "status"]).any(), "a measurement stored twice"
    return {(int(r.launch_index), int(r.epochs), int(r.trial), str(r.status)) for r in kept.itertuples()}


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> set[tuple[int, int, int, str]]:
    """The race sweep run once to its end: what every killed and resumed run must leave."""
    tmp, tag = tmp_path_factory.mktemp("uninterrupted"), new_tag()
    done = sweeper("run", str(kill_grid(tmp, "killed")), tag=tag)
    assert done.returncode == 0, done.stdout + done.stderr
    assert_no_tagged_processes(tag)
    return outcome(tmp / "store", "killed")


@pytest.mark.integration
def test_the_uninterrupted_race_measures_every_trial_of_every_configuration(
    uninterrupted: set[tuple[int, int, int, str]],
) -> None:
    """What the killed runs are held to (confidence 0.999: no decision at 2 trials stops anyone)."""
    assert uninterrupted == {(i, e, t, "ok") for i in (0, 1) for e in KILL_EPOCHS for t in range(KILL_TRIALS)}


@pytest.mark.integration
def test_a_race_killed_again_and_again_resumes_whole_and_a_third_run_finds_nothing_to_do(
    uninterrupted: set[tuple[int, int, int, str]], tmp_path: Path
) -> None:
    """Killed (SIGKILL to its process group) inside the first launch's stay (#39), then its resumed run inside the
    second launch's first round, then that one's inside the second launch's stay; the fourth run ends it."""
    grid, store, tag = kill_grid(tmp_path, "killed"), tmp_path / "store", new_tag()
    assert launch_order(make_plan(grid_file.load(grid)), [0, 1], 1) == [0, 1]  # STOPS: the order seed 0 draws
    for where, stop in STOPS.items():
        killed_at(grid, store / "killed", tag, stop)
        assert_no_tagged_processes(tag)  # the group's kill took its Dask workers too
        short = recommend(load_results(store)).unmeasured  # named, not weighed silently
        assert short and {entry.status for entry in short} == {UNFINISHED}, (where, short)
    again = sweeper("run", str(grid), tag=tag)
    assert again.returncode == 0, again.stdout + again.stderr
    for epochs in KILL_EPOCHS:  # each race ended, and says how
        assert f"Race: epochs {epochs}: " in again.stdout, again.stdout
    assert outcome(store, "killed") == uninterrupted
    third = sweeper("run", str(grid), tag=tag)
    assert third.returncode == 0 and "0 rows written" in third.stdout, third.stdout + third.stderr
    assert f"{len(uninterrupted)} measurements already in the store were skipped" in third.stdout, third.stdout
    answer = recommend(load_results(store))
    assert answer.unmeasured == () and {a.winner.n for a in answer.answers} == {KILL_TRIALS}, answer
    assert_no_tagged_processes(tag)
