"""Which measurement a launch takes next: fixed lists, adaptive trials, and what the store already holds."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

from sweeper.config import load as grid_file
from sweeper.planning.measurements import Todo, measurement_key, pending
from sweeper.planning.plan import Plan, make_plan
from sweeper.run import runner
from sweeper.run.trials import FixedQueue, TrialQueue, interleaved, point_order, trial_policy
from sweeper.search.adaptive import CI_REACHED, MAX_TRIALS
from sweeper.search.interleaving import in_random_order
from sweeper.store.row import Row
from tests.conftest import minimal_grid
from tests.test_race_resume import SCENARIOS, scenario_plan, searched
from tests.test_search_race import ScriptedLaunches


def adaptive_plan(write_grid: Callable[..., Path], **trials: float) -> Plan:
    spec = minimal_grid()
    spec["workload"] = {"dataset": "digits", "epochs": [5, 10], "trials": {"min": 3, "max": 8, **trials}}
    return make_plan(grid_file.load(write_grid(spec)))


def take(queue: TrialQueue, times_s: Callable[[int], float]) -> list[dict[str, object]]:
    """Record each measurement the queue hands out, trial t taking ``times_s(t)``; the rows, in order."""
    rows = []
    while (item := queue.next()) is not None:
        rows.append({**queue.record(item, times_s(item.trial)), "epochs": item.point.epochs})
    return rows


def test_tight_times_stop_when_the_median_ci_is_reached(write_grid: Callable[..., Path]) -> None:
    plan = adaptive_plan(write_grid, target_rel_ci=0.05)
    launch = plan.launches[1]
    rows = take(
        TrialQueue(plan, launch, plan.points[1], {}, trial_policy(plan.grid.workload)), lambda t: 1.0 + t / 1000
    )
    # no 95 % interval of a median exists below 6 trials: both points stop at their 6th, on the interval; point after
    # point, in the round's random order
    first, then = (point.epochs for point in point_order(plan, 1, plan.points[1], 0))
    assert [(r["epochs"], r["stop_reason"]) for r in rows] == [
        *[(first, None)] * 5, (first, CI_REACHED), *[(then, None)] * 5, (then, CI_REACHED)
    ]  # fmt: skip


def test_noisy_times_run_to_max_trials(write_grid: Callable[..., Path]) -> None:
    plan = adaptive_plan(write_grid, target_rel_ci=0.01)
    rows = take(
        TrialQueue(plan, plan.launches[1], plan.points[1][:1], {}, trial_policy(plan.grid.workload)),
        lambda t: (1, 3)[t % 2],
    )
    assert len(rows) == 8 and [r["stop_reason"] for r in rows] == [None] * 7 + [MAX_TRIALS]


def test_failed_trials_count_towards_max_and_the_same_trial_is_handed_out_until_recorded(
    write_grid: Callable[..., Path],
) -> None:
    plan = adaptive_plan(write_grid)
    queue = TrialQueue(plan, plan.launches[1], plan.points[1][:1], {}, trial_policy(plan.grid.workload))
    first = queue.next()
    assert first is not None and queue.next() == first  # a restarted launch asks again
    taken = 0
    while (item := queue.next()) is not None:
        assert queue.record(item, None) == {"stop_reason": MAX_TRIALS if taken == 7 else None, "rung": None}
        taken += 1
    assert taken == 8


def test_measurements_in_the_store_count_without_being_taken(write_grid: Callable[..., Path]) -> None:
    plan = adaptive_plan(write_grid, target_rel_ci=0.05)
    launch, point = plan.launches[1], plan.points[1][0]
    done = {measurement_key(plan.grid, plan, launch, point, t): 1.0 + t / 1000 for t in range(6)}
    queue = TrialQueue(plan, launch, [point], done, trial_policy(plan.grid.workload))
    assert queue.next() is None and queue.skipped == 6
    assert queue.medians_s()[point] == 1.0025


def test_a_launch_that_does_not_start_fails_the_next_trial_of_each_point(write_grid: Callable[..., Path]) -> None:
    plan = adaptive_plan(write_grid)
    queue = TrialQueue(plan, plan.launches[1], plan.points[1], {}, trial_policy(plan.grid.workload), rung=2)
    rest = queue.rest()
    assert sorted((i.point.epochs, i.trial) for i in rest) == [(5, 0), (10, 0)] and queue.next() is None
    assert queue.columns() == {"rung": 2}


def test_a_fixed_queue_hands_out_its_list_in_order(write_grid: Callable[..., Path]) -> None:
    plan = adaptive_plan(write_grid)
    items = [object(), object()]
    queue = FixedQueue(items)  # type: ignore[arg-type]
    assert queue.next() is items[0]
    assert queue.record(items[0], 1.0) == {}  # type: ignore[arg-type]
    assert queue.rest() == [items[1]] and queue.next() is None
    assert trial_policy(plan.grid.workload).max_trials == 8


def test_a_disturbed_trial_is_taken_again_under_its_key_up_to_remeasure_disturbed_times(
    write_grid: Callable[..., Path],
) -> None:
    spec = minimal_grid()
    spec["workload"] = {"dataset": "digits", "epochs": [5], "trials": 2, "remeasure_disturbed": 2}
    plan = make_plan(grid_file.load(write_grid(spec)))
    launch, point = plan.launches[1], plan.points[1][0]
    queue = TrialQueue(plan, launch, [point], {}, trial_policy(plan.grid.workload))
    taken = []
    while (item := queue.next()) is not None:  # every take of trial 0 is disturbed, trial 1 is quiet
        taken.append(item.trial)
        queue.record(item, 1.0, disturbed=item.trial == 0)
    assert taken == [0, 0, 0, 1]  # trial 0 twice more, then it counts (without its time) and trial 1 follows
    assert queue.medians_s()[point] == 1.0 and queue.points[0].times_s == [1.0]


def test_a_fixed_queue_takes_a_disturbed_measurement_again_per_point_at_most_remeasure_times(
    write_grid: Callable[..., Path],
) -> None:
    plan = adaptive_plan(write_grid)
    launch = plan.launches[1]
    items = [Todo(launch, point, 0, f"key-{i}") for i, point in enumerate(plan.points[1])]
    queue = FixedQueue(items, remeasure=1)
    order = []
    while (item := queue.next()) is not None:
        order.append(item.key)
        queue.record(item, 1.0, disturbed=True)  # a machine busy throughout
    assert order == ["key-0", "key-0", "key-1", "key-1"]
    assert FixedQueue(items, remeasure=0).record(items[0], 1.0, disturbed=True) == {}


def test_a_stored_disturbed_trial_counts_as_taken_without_its_time(write_grid: Callable[..., Path]) -> None:
    spec = minimal_grid()
    spec["workload"] = {"dataset": "digits", "epochs": [5], "trials": 3}
    plan = make_plan(grid_file.load(write_grid(spec)))
    launch, point = plan.launches[1], plan.points[1][0]
    done: dict[str, float | None] = {measurement_key(plan.grid, plan, launch, point, t): 1.0 for t in range(3)}
    done[measurement_key(plan.grid, plan, launch, point, 0)] = None  # taken under load in an earlier run
    queue = TrialQueue(plan, launch, [point], done, trial_policy(plan.grid.workload))
    assert queue.next() is None and queue.skipped == 3 and queue.points[0].times_s == [1.0, 1.0]


# --- randomized interleaving (RMIT): the order of a round's visits, drawn from the grid's seed --------------------


def interleaving_plan(write_grid: Callable[..., Path], seed: int = 0) -> Plan:
    """Two shapes x Spark and Dask and the baseline (5 launches), 3 epochs values, 3 fixed trials."""
    spec = minimal_grid()
    spec["sizing"]["cores_per_executor"] = [1, 2]
    spec["workload"] = {"dataset": "digits", "epochs": [5, 10, 20], "trials": 3, "seed": seed}
    return make_plan(grid_file.load(write_grid(spec, f"seed-{seed}.yaml")))


def visited(plan: Plan, done: frozenset[str] = frozenset()) -> list[Row]:
    """The rows a grid measured in one pass takes, in order, on scripted launches (the store holding ``done``)."""
    rows: list[Row] = []
    todo, _ = pending(plan, set(done))
    fake = SimpleNamespace(run=ScriptedLaunches({"spark": 2.0, "dask": 1.0, "sklearn": 3.0}, 1.0).run, stand_ins={})
    runner._run_fixed(plan, todo, cast(Any, fake), rows.append, reuse=False, planned=None)
    return rows


def order(rows: list[Row]) -> list[tuple[int, int, int]]:
    return [(int(r["launch_index"]), int(r["epochs"]), int(r["trial"])) for r in rows]


def test_a_grid_visits_its_launches_in_the_order_its_seed_draws_and_takes_trials_in_rounds(
    write_grid: Callable[..., Path],
) -> None:
    plan = interleaving_plan(write_grid)
    rows = visited(plan)
    assert order(rows) == order(visited(interleaving_plan(write_grid)))  # the same grid and seed: the same order
    assert order(rows) != order(visited(interleaving_plan(write_grid, seed=1)))  # another seed: another order
    by_launch = [int(r["launch_index"]) for r in rows]
    launches = list(dict.fromkeys(by_launch))
    assert plan.launches[0].engine == "local" and launches[0] == 0  # the baseline first, a reference (round 0)
    assert sorted(launches) == list(range(len(plan.launches))) and launches != sorted(launches)
    assert by_launch == [index for index in launches for _ in plan.points[index] for _ in range(3)]  # each once
    assert [(r["visit_round"], r["visit_position"]) for r in rows] == [
        (0, 1) if index == 0 else (1, launches.index(index)) for index in by_launch
    ]
    engines = [plan.launches[index].engine for index in launches[1:]]  # both engines of both shapes in round 1
    assert sorted(engines) == ["dask", "dask", "spark", "spark"]
    planned = [point.epochs for point in plan.points[1]]
    orders = []
    for index in launches:  # in rounds of trials: every point's trial 0, then every point's trial 1, ...
        taken = [(trial, epochs) for launch, epochs, trial in order(rows) if launch == index]
        assert [trial for trial, _ in taken] == [trial for trial in range(3) for _ in planned]
        by_trial = [[epochs for trial, epochs in taken if trial == n] for n in range(3)]
        assert all(sorted(epochs) == planned for epochs in by_trial)  # each point once a round of trials
        orders += by_trial
    assert len({tuple(epochs) for epochs in orders}) > 1  # each round of trials its own order of the points


def test_a_resumed_grid_takes_what_is_left_in_the_order_the_stopped_run_would_have(
    write_grid: Callable[..., Path],
) -> None:
    plan = interleaving_plan(write_grid)
    whole = visited(plan)
    for cut in (1, 7, 20, len(whole) - 1):
        rest = visited(plan, frozenset(str(r["measurement_key"]) for r in whole[:cut]))
        assert order(rest) == order(whole[cut:])


def test_a_race_visits_each_launch_once_per_round_in_the_order_its_seed_draws(tmp_path: Path) -> None:
    scenario = SCENARIOS["race, one resting to the end"]
    plan = scenario_plan(scenario, tmp_path)
    rows, _ = searched(plan, scenario, [], tmp_path)
    again, _ = searched(plan, scenario, [], tmp_path)
    other = replace(plan, grid=replace(plan.grid, workload=replace(plan.grid.workload, seed=7)))
    reseeded, _ = searched(other, scenario, [], tmp_path)
    measured = [r for r in rows if r["status"] == "ok"]
    visits = [(r["visit_round"], r["launch_index"]) for r in measured]
    assert visits == [(r["visit_round"], r["launch_index"]) for r in again if r["status"] == "ok"]
    assert visits != [(r["visit_round"], r["launch_index"]) for r in reseeded if r["status"] == "ok"]
    rounds: dict[int, list[int]] = {}
    for round_, index in dict.fromkeys(visits):  # each launch once per round, positions 1, 2, ... in visit order
        rounds.setdefault(int(round_ or 0), []).append(int(index))
    for round_, launches in rounds.items():
        positions = {(r["launch_index"], r["visit_position"]) for r in measured if r["visit_round"] == round_}
        assert positions == {(index, launches.index(index) + 1) for index in launches}
    first = {plan.launches[index].engine for index in rounds[1]}
    assert first == {"spark", "dask"} and len(rounds[1]) == len(plan.launches)  # both engines, every configuration
    assert any(launches != sorted(launches) for launches in rounds.values())


def test_a_subset_keeps_the_order_it_has_in_the_whole() -> None:
    whole = in_random_order(range(50), int, 3, 1)
    assert sorted(whole) == list(range(50)) and whole != list(range(50))
    assert in_random_order(range(0, 50, 3), int, 3, 1) == [n for n in whole if n % 3 == 0]
    assert in_random_order(range(50), int, 3, 2) != whole  # another round: another order


def test_a_launch_takes_its_points_in_an_order_drawn_from_the_seed_the_round_and_the_trial(
    write_grid: Callable[..., Path],
) -> None:
    spec = minimal_grid()
    spec["workload"] = {"dataset": "digits", "epochs": list(range(1, 21)), "trials": 2, "seed": 3}
    plan = make_plan(grid_file.load(write_grid(spec)))
    points = list(plan.points[1])
    whole = point_order(plan, 1, points, 1)
    assert point_order(plan, 1, points, 1) == whole and sorted(whole, key=points.index) == points  # each point once
    assert whole != points  # not the plan's order
    assert point_order(plan, 1, points, 2) != whole and point_order(plan, 1, points, 1, 1) != whole  # round, trial
    assert point_order(plan, 2, points, 1) != whole  # another launch
    reseeded = replace(plan, grid=replace(plan.grid, workload=replace(plan.grid.workload, seed=4)))
    assert point_order(reseeded, 1, points, 1) != whole
    subset = points[::3]
    assert point_order(plan, 1, subset[::-1], 1) == [point for point in whole if point in subset]  # what a resume has
    items = [Todo(plan.launches[1], point, trial, f"{point.epochs}-{trial}") for trial in (1, 0) for point in points]
    taken = interleaved(plan, items, 1)
    assert [(t.trial, t.point) for t in taken] == [
        *[(0, p) for p in point_order(plan, 1, points, 1, 0)], *[(1, p) for p in point_order(plan, 1, points, 1, 1)]
    ]  # fmt: skip


def test_halving_visits_each_rung_as_a_round_of_its_own(tmp_path: Path) -> None:
    scenario = SCENARIOS["halving"]
    plan = scenario_plan(scenario, tmp_path)
    rows, _ = searched(plan, scenario, [], tmp_path)
    measured = [r for r in rows if r["status"] == "ok"]
    assert {r["visit_round"] for r in measured} == {int(r["rung"] or 0) + 1 for r in measured} == {1, 2}
    again, _ = searched(plan, scenario, [], tmp_path)
    assert [r["measurement_key"] for r in again] == [r["measurement_key"] for r in rows]
    first = [r["launch_index"] for r in measured if r["visit_round"] == 1]
    launches = list(dict.fromkeys(first))  # rung 0: every configuration, each once, in the positions it was visited
    assert sorted(launches) == list(range(len(plan.launches)))
    assert first == [index for index in launches for _ in range(first.count(index))]
    assert {(r["launch_index"], r["visit_position"]) for r in measured if r["visit_round"] == 1} == {
        (index, position) for position, index in enumerate(launches, 1)
    }
