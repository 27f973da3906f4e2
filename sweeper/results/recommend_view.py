"""``sweeper recommend``: the recommendation of :mod:`sweeper.results.recommend` as terminal lines or one JSON object.

:func:`answer_lines` are the few lines ``sweeper run`` can end with; :func:`lines` is the whole text;
:func:`to_json` the ``--json`` object (the command: :mod:`sweeper.commands.recommend`, each line wrapped at
:data:`sweeper.text.OUTPUT_COLUMNS`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sweeper.config.work import EPOCHS, axis_point, axis_text
from sweeper.engines import DESCRIPTORS, display_name, figure_order
from sweeper.names import COST, DEFAULT_ENGINES, on_spark
from sweeper.results.recommend import DEFAULT_SCORE
from sweeper.results.right_sizing import HEADROOM_TEXT
from sweeper.results.unmeasured import UNFINISHED
from sweeper.shapes import shape_text
from sweeper.text import json_nulls

if TYPE_CHECKING:
    from sweeper.results.predict.worth import WorthMeasuring
    from sweeper.results.recommend import AccuracyCheck, Answer, Arm, EngineAnswer, MemoryAdvice, Recommendation


def _seconds(value: float) -> str:
    """Seconds in three significant figures or so.

    >>> _seconds(7.123), _seconds(12.34), _seconds(1234.5)
    ('7.12', '12.3', '1,234')
    """
    if math.isnan(value):
        return "?"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.1f}" if abs(value) >= 10 else f"{value:.2f}"


def _ci(low: float, high: float, digits: int = 2) -> str:
    return "[?]" if math.isnan(low) or math.isnan(high) else f"[{low:.{digits}f}, {high:.{digits}f}]"


def _arm_text(arm: Arm) -> str:
    """An arm with its median time and 95 % CI, e.g. ``dask 2 executors x 2 cores x 4 GiB: 7.12 s [6.9, 7.4]``."""
    interval = f"[{_seconds(arm.median_low_s)}, {_seconds(arm.median_high_s)}]"
    cost = "" if math.isnan(arm.median_cost) else f", cost {arm.median_cost:.4g}"
    return f"{arm.label}: {_seconds(arm.median_s)} s {interval} (n={arm.n}{cost})"


def _workload_text(workload: Mapping[str, Any]) -> str:
    dry = " (dry run)" if workload.get("dry_run") else ""
    return (
        f"{workload.get('dataset')}, {workload.get('n_train')} training rows, {workload.get('n_fits')} fits "
        f"({workload.get('mode')}){dry}"
    )


def _several_workloads(recommendation: Recommendation) -> bool:
    return len({json.dumps(a.workload, sort_keys=True, default=str) for a in recommendation.answers}) > 1


def answer_sentence(answer: Answer, score: str = DEFAULT_SCORE, axis: str = EPOCHS) -> str:
    """One value of the work axis (named ``axis``): its answer in a sentence: winner, runner-up and ratio, verdict,
    the check of ``score`` (the sweep's scorer: accuracy, or another such as r2)."""
    text = f"{axis_text([answer.epochs], axis)}: {_arm_text(answer.winner)}"
    if answer.runner_up is None:
        return f"{text}; the only configuration measured{_baseline_text(answer)}"
    slower = "dearer" if answer.objective == COST else "slower"
    text += (
        f"; runner-up {answer.runner_up.label}, {answer.ratio:.2f}x {slower} {_ci(answer.ratio_low, answer.ratio_high)}"
        f": {answer.verdict}"
    )
    if answer.verdict == "inconclusive":
        text += (
            f" (about {answer.trials_needed} trials per configuration would settle it)"
            if answer.trials_needed
            else " (no estimate of the trials needed: equal medians or too few values)"
        )
    if answer.untested:
        text += f"; {len(answer.untested)} configuration(s) with too few trials to test"
    if answer.near_tie and answer.near_tie_delta is not None:
        text += (
            f"; the race settled with these still in it, none shown more than {answer.near_tie_delta:.0%} slower "
            f"than the leader, which is within {answer.near_tie_delta:.0%} of each: "
            + ", ".join(arm.label for arm in answer.near_tie)
        )
    checked = "Accuracy" if score == DEFAULT_SCORE else f"Score ({score})"
    return f"{text}. {checked}: {accuracy_text(answer.accuracy)}{_baseline_text(answer)}"


def _baseline_text(answer: Answer) -> str:
    """COST (McSherry et al.): where one thread on no cluster beats every configuration, the answer says so."""
    if not answer.baseline_wins or answer.baseline_s is None:
        return ""
    return (
        f". The single-thread baseline ({_seconds(answer.baseline_s)} s) beats every configuration: "
        "neither engine pays off at this size"
    )


def accuracy_text(check: AccuracyCheck) -> str:
    """The accuracy check in words."""
    if check.status == "cannot differ":
        return "cannot differ (the same fits on every engine and configuration)"
    if check.best is None or check.status in ("most accurate", "not measured"):
        return check.status
    return (
        f"{check.status} within {check.margin:g} of the most accurate ({check.best.label}): "
        f"difference {check.difference:+.4f}, one-sided 95 % bound {check.difference_low:+.4f}"
    )


def _engine_sentence(line: EngineAnswer, axis: str = EPOCHS) -> str:
    """One engine against another (Spark vs Dask) for one value of the work axis (named ``axis``) in a sentence."""
    first, second = line.first.engine, line.second.engine
    return (
        f"{axis_text([line.epochs], axis)}: {first} {_seconds(line.first.median_s)} s "
        f"({line.first.label.removeprefix(f'{first} ')}) "
        f"vs {second} {_seconds(line.second.median_s)} s ({line.second.label.removeprefix(f'{second} ')}); "
        f"{first}/{second} {line.ratio:.2f} {_ci(line.ratio_low, line.ratio_high)}: {line.verdict}"
    )


def _engines_heading(recommendation: Recommendation) -> str:
    """``Spark vs Dask (each engine's best configuration):``, every engine compared named so."""
    names = figure_order({arm.engine for line in recommendation.engine_pairs for arm in (line.first, line.second)})
    shown = " vs ".join(display_name(name) for name in names or DEFAULT_ENGINES)
    return f"{shown} (each engine's best configuration{', pair by pair' if len(names) > 2 else ''}):"


def memory_sentence(advice: MemoryAdvice) -> str:
    """One configuration's memory right-sizing in a sentence."""
    label = f"{advice.engine} {shape_text(advice.executors, advice.cores_per_executor)}"
    if advice.limit == "not measured":
        return f"{label}: granted {advice.granted_gib:g} GiB; {advice.note}"
    if not on_spark(advice.engine):
        return (
            f"{label}: granted {advice.granted_gib:g} GiB, peak {advice.peak_gib:.2f} GiB, suggested "
            f"{advice.suggested_gib:g} GiB; {advice.note}"
        )
    overhead = (
        "Python workers not measured"
        if math.isnan(advice.suggested_overhead_gib)
        else f"Python workers' peak {advice.python_peak_gib:.2f} GiB, suggested {advice.suggested_overhead_gib:g} GiB"
    )
    return (
        f"{label}: heap (spark.executor.memory) granted {advice.granted_gib:g} GiB, peak {advice.peak_gib:.2f} GiB, "
        f"suggested {advice.suggested_gib:g} GiB; overhead (spark.executor.memoryOverhead) granted "
        f"{round(advice.overhead_gib, 2):g} GiB, {overhead}; {advice.note}"
    )


PARTIAL = "so far (partial: the run was stopped)"


def answer_lines(recommendation: Recommendation, *, partial: bool = False) -> list[str]:
    """The few lines of the answer: one per workload and value of the work axis, Spark vs Dask, the overall line;
    ``partial``: the answer of a stopped run, marked so in its first and last line."""
    overall = f"Overall {PARTIAL}" if partial else "Overall"
    if not recommendation.answers:
        return [*_disturbed_lines(recommendation), f"{overall}: {recommendation.overall}"]
    several = _several_workloads(recommendation)
    best = "Cheapest" if recommendation.objective == COST else "Fastest"
    axis = recommendation.work_axis
    out = [f"{best} configuration{f' {PARTIAL}' if partial else ''}, per {axis_point(axis)}:"]
    for answer in recommendation.answers:
        where = f"[{_workload_text(answer.workload)}] " if several else ""
        out.append(f"  {where}{answer_sentence(answer, recommendation.score, axis)}")
    if recommendation.engine_pairs or _one_engine_missing(recommendation):
        out.append(_engines_heading(recommendation))
        out += [f"  {_engine_sentence(line, axis)}" for line in recommendation.engine_pairs]
        out += [f"  {line}" for line in _one_engine_missing(recommendation)]
    out += unmeasured_lines(recommendation, axis)
    out += _disturbed_lines(recommendation)
    among = " (among what was measured; see what was not)" if recommendation.unmeasured else ""
    cost = ""
    if all(answer.baseline_wins for answer in recommendation.answers):
        cost = (
            f"; but one thread on no cluster was faster at every {axis_point(axis)}: neither engine pays off at this "
            "size"
        )
    out.append(f"{overall}: {recommendation.overall}{among}{cost}")
    if any("settled" in line for line in out[-1:]):
        out.append(f"  ({_settled_means(axis)})")
    return out


def _settled_means(axis: str = EPOCHS) -> str:
    """What "settled" means, at a value of the work axis named ``axis``."""
    return (
        f"settled: the winner is faster than every other configuration at that {axis_point(axis)}, by Mann-Whitney "
        "tests at 5 % with Holm's correction; otherwise more trials would be needed to tell"
    )


SETTLED_MEANS = _settled_means()  # an MLP's (epochs)


def _disturbed_lines(recommendation: Recommendation) -> list[str]:
    """How many measurements were taken under load and left out of every verdict, and where."""
    disturbed = recommendation.disturbed
    if disturbed is None:
        return []
    where = f" (busiest node: {', '.join(disturbed.hosts[:3])})" if disturbed.hosts else ""
    return [
        f"{disturbed.left_out} of {disturbed.of} measurements taken under load were left out{where}: other "
        "processes used more of the nodes' CPU than workload.interference_limit allows"
    ]


def unmeasured_lines(recommendation: Recommendation, axis: str = EPOCHS) -> list[str]:
    """The configurations the answer could not weigh (no ok row at some values of the work axis), and those a
    stopped race left short (in the answer, with fewer trials), each with the reason (``axis``: the work axis's
    name)."""
    out = []
    for heading, short in (
        ("Not measured (left out of the answer above):", False),
        ("Unfinished (in the answer above with fewer trials; run the sweep again to finish them):", True),
    ):
        listed = [m for m in recommendation.unmeasured if (m.status == UNFINISHED) == short]
        out += [heading] if listed else []
        for missing in listed:
            why = f"{missing.status}: {missing.reason}" if missing.reason else missing.status
            out.append(f"  {missing.label} at {axis_text(missing.epochs, axis)}: {why}")
    return out


def _one_engine_missing(recommendation: Recommendation) -> list[str]:
    """Engine against engine where one has ok rows at a value of the work axis and another none: no verdict."""
    compared = {line.epochs for line in recommendation.engine_pairs}
    out = []
    for answer in recommendation.answers:
        engines = {arm.engine for arm in answer.arms}
        for absent in (engine.name for engine in DESCRIPTORS if engine.joblib):
            failed = any(m.engine == absent and answer.epochs in m.epochs for m in recommendation.unmeasured)
            if answer.epochs not in compared and absent not in engines and failed:
                at = axis_text([answer.epochs], recommendation.work_axis)
                out.append(f"{at}: cannot be given: {absent} has no ok measurement (see below)")
    return out


def lines(recommendation: Recommendation, worth: Sequence[WorthMeasuring] = ()) -> list[str]:
    """The whole text of ``sweeper recommend``: the answer, budget, memory and idle slots; and ``worth``, the
    untested shapes the what-if model expects to be faster (:func:`~sweeper.results.predict.worth.worth_measuring`,
    fitted by the caller that shows them)."""
    out = [
        f"sweeper recommend: {recommendation.sweep} (objective: {recommendation.objective})",
        *answer_lines(recommendation),
    ]
    if recommendation.budget is not None:
        out.append(f"Fastest within a budget of {recommendation.budget:g} per measurement:")
        for answer in recommendation.answers:
            fits = answer.within_budget
            at = axis_text([answer.epochs], recommendation.work_axis)
            out.append(f"  {at}: " + (_arm_text(fits) if fits else "no configuration is within it"))
    out.append(f"Memory (granted vs measured peak; suggested = peak + {HEADROOM_TEXT}, rounded up to 0.5 GiB):")
    out += [f"  {memory_sentence(advice)}" for advice in recommendation.memory] or ["  no configuration measured"]
    if recommendation.idle:
        out.append(f"Slots left idle (median slot utilisation below {recommendation.idle_threshold:.0%}):")
        for idle in recommendation.idle:
            label = f"{idle.engine} {shape_text(idle.executors, idle.cores_per_executor)}"
            out.append(f"  {label}: {idle.slot_utilisation:.0%} used; likely {'; '.join(idle.reasons)}")
    if worth:
        out.append("Worth measuring next (the what-if model, `sweeper predict`, validates well on this sweep):")
        out += [f"  {_worth_text(shape, recommendation.work_axis)}" for shape in worth]
    return out


# -- JSON ------------------------------------------------------------------------------------------


def _pair_json(line: EngineAnswer) -> dict[str, Any]:
    """What the JSON says of one engine pair's verdict: ratio (first / second), its interval, p, the verdict."""
    return {"ratio": line.ratio, "ratio_ci": [line.ratio_low, line.ratio_high], "p": line.p, "verdict": line.verdict}


def _arm_json(arm: Arm | None) -> dict[str, Any] | None:
    if arm is None:
        return None
    return {
        "engine": arm.engine,
        "cores_per_executor": arm.cores_per_executor,
        "executors": arm.executors,
        "executor_memory_gib": arm.executor_memory_gib,
        "median_s": arm.median_s,
        "median_ci_s": [arm.median_low_s, arm.median_high_s],
        "n": arm.n,
        "median_cost": arm.median_cost,
    }


def _answer_json(answer: Answer) -> dict[str, Any]:
    check = answer.accuracy
    return {
        "epochs": answer.epochs,
        "workload": answer.workload,
        "winner": _arm_json(answer.winner),
        "runner_up": _arm_json(answer.runner_up),
        "ratio": answer.ratio,
        "ratio_ci": [answer.ratio_low, answer.ratio_high],
        "verdict": answer.verdict,
        "trials_needed": answer.trials_needed,
        "pairs": [{"other": _arm_json(p.other), "p": p.p, "p_holm": p.p_holm} for p in answer.pairs],
        "accuracy": {
            "status": check.status,
            "margin": check.margin,
            "most_accurate": _arm_json(check.best),
            "difference": check.difference,
            "difference_low": check.difference_low,
        },
        "within_budget": _arm_json(answer.within_budget),
        "baseline_s": answer.baseline_s,
        "baseline_wins": answer.baseline_wins,
        "near_tie": [_arm_json(arm) for arm in answer.near_tie],
        "near_tie_delta": answer.near_tie_delta,
    }


def to_json(recommendation: Recommendation, worth: Sequence[WorthMeasuring] = ()) -> dict[str, Any]:
    """The ``--json`` object: stable keys (README), NaN as null; ``worth`` as :func:`lines` takes it."""
    document = {
        "sweep": recommendation.sweep,
        "objective": recommendation.objective,
        "accuracy_margin": recommendation.accuracy_margin,
        "cost_per_node_hour": recommendation.cost_per_node_hour,
        "budget": recommendation.budget,
        "work_axis": recommendation.work_axis,
        "answers": [_answer_json(answer) for answer in recommendation.answers],
        "spark_vs_dask": [  # the Spark vs Dask pair, as before engines were any number
            {
                "epochs": line.epochs,
                "workload": line.workload,
                **{name: _arm_json(arm) for name, arm in zip(DEFAULT_ENGINES, (line.first, line.second), strict=True)},
                **_pair_json(line),
            }
            for line in recommendation.engine_pairs
            if (line.first.engine, line.second.engine) == DEFAULT_ENGINES
        ],
        "engine_pairs": [
            {
                "epochs": line.epochs,
                "workload": line.workload,
                "first": _arm_json(line.first),
                "second": _arm_json(line.second),
                **_pair_json(line),
            }
            for line in recommendation.engine_pairs
        ],
        "memory": [{**advice.__dict__, "alternative": advice.alternative} for advice in recommendation.memory],
        "idle_slots": [idle.__dict__ for idle in recommendation.idle],
        "unmeasured": [{**missing.__dict__, "epochs": list(missing.epochs)} for missing in recommendation.unmeasured],
        "disturbed": None if recommendation.disturbed is None else recommendation.disturbed.__dict__,
        "worth_measuring": [
            {
                "engine": worth.shape.engine,
                "cores_per_executor": worth.shape.cores_per_executor,
                "executors": worth.shape.executors,
                "executor_memory_gib": worth.shape.executor_memory_gib,
                "epochs": worth.shape.epochs,
                "predicted_median_s": worth.predicted_s,
                "measured_best": worth.measured_best,
                "measured_best_median_s": worth.measured_best_s,
                "held_out_median_rel_error": worth.held_out_error,
                "extrapolated_on": list(worth.extrapolated_on),
            }
            for worth in worth
        ],
        "overall": recommendation.overall,
    }
    return json_nulls(document)


# -- the command -----------------------------------------------------------------------------------


def _worth_text(worth: WorthMeasuring, axis: str) -> str:
    """One line of ``recommend``."""
    s = worth.shape
    beyond = f"; beyond the measured {', '.join(worth.extrapolated_on)}" if worth.extrapolated_on else ""
    return (
        f"{axis_text([s.epochs], axis)}: {s.engine} {s.executors} x {s.cores_per_executor} cores "
        f"({s.executor_memory_gib:g} GiB): predicted {worth.predicted_s:.3g} s, {worth.gain:.0%} under the measured "
        f"best {worth.measured_best} ({worth.measured_best_s:.3g} s); the model's held-out error is "
        f"{worth.held_out_error:.1%}{beyond}"
    )
