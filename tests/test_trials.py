"""Which measurement a launch takes next: fixed lists, adaptive trials, and what the store already holds."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from sweeper.config import load as grid_file
from sweeper.planning.measurements import Todo, measurement_key
from sweeper.planning.plan import Plan, make_plan
from sweeper.run.trials import FixedQueue, TrialQueue, trial_policy
from sweeper.search.adaptive import CI_REACHED, MAX_TRIALS
from tests.conftest import minimal_grid


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
    # no 95 % interval of a median exists below 6 trials: both points stop at their 6th, on the interval
    assert [(r["epochs"], r["stop_reason"]) for r in rows] == [(5, None)] * 5 + [(5, CI_REACHED)] + [(10, None)] * 5 + [
        (10, CI_REACHED)
    ]


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
    assert [(i.point.epochs, i.trial) for i in rest] == [(5, 0), (10, 0)] and queue.next() is None
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
