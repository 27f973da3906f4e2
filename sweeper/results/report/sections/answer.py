""" "The answer", the report's opening: recommend's headline, one table per work axis value, the rest of what
``sweeper recommend`` says, the time figure.

The answer is :func:`sweeper.results.recommend.recommend`'s, in ``sweeper recommend``'s words
(:mod:`.recommend_text`); its memory and idle-slot sentences and the memory figure come from :mod:`.memory`.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from sweeper.config.work import axis_point, axis_text
from sweeper.names import CONFIG
from sweeper.results import recommend, recommend_view
from sweeper.results.predict.worth import worth_measuring
from sweeper.results.report import plots, selection, shape_plots
from sweeper.results.report.blocks import Block, Heading, Paragraph, Picture, Rows
from sweeper.results.report.formatting import axis_header, ratio_text, score_header, seconds_text, value_text
from sweeper.results.report.sections import memory, recommend_text
from sweeper.shapes import shape_text


def answer_blocks(df: pd.DataFrame, cost_per_node_hour: float | None = None) -> list[Block]:
    """ "The answer": a few sentences, one table, time per configuration and (when measured) memory figures."""
    found = recommend.recommend(df, cost_per_node_hour=cost_per_node_hour)
    arms = _arm_points(found)
    named = _keys(arms[arms["named"]])
    blocks: list[Block] = [Heading("The answer"), Paragraph(recommend_text.headline(found))]
    if found.answers:
        blocks.append(_answer_table(found))
    blocks += recommend_text.said_blocks(found, worth_measuring(df))
    blocks += [Paragraph(text) for text in _memory_paragraphs(found, named)]
    if not found.answers:
        return blocks
    drawn = arms[arms["named"] | selection.fastest(arms, within=("panel",), scope=("panel",), config=("config",))]
    total = selection.configurations(arms, ["config"])
    note = selection.left_out_note(total, len(_keys(drawn)), f"at each {axis_point(found.work_axis)} drawn")
    blocks.append(
        Picture(
            "answer_time.png",
            selection.with_note("Median fit time with its 95 % interval per configuration and engine", note),
            plots.png(shape_plots.time_by_configuration(drawn, note)),
        )
    )
    fastest = named | _keys(arms[selection.fastest(arms, within=("panel",), config=("config",))])
    return [*blocks, *memory.memory_picture(found, fastest)]


def _keys(arms: pd.DataFrame) -> set[tuple[str, str]]:
    """The (engine, configuration label) pairs of some arms."""
    return set(zip(arms["engine"], arms["config"], strict=True))


def _memory_paragraphs(found: recommend.Recommendation, named: set[tuple[str, str]]) -> list[str]:
    """The memory to right-size and the slots left idle.

    ``named`` (engine, configuration label): those the memory and idle sentences name when they are many.
    """
    idle = memory.idle_text(found, named)
    return [memory.memory_text(found, named), *([idle] if idle else [])]


def _answer_table(found: recommend.Recommendation) -> Rows:
    """One line per workload and value of the work axis: recommendation, runner-up, ratio, verdict, accuracy."""
    several = len({repr(sorted(a.workload.items())) for a in found.answers}) > 1
    header: tuple[str, ...] = (
        axis_header(found.work_axis),
        "Recommended",
        "Median time (s) [95 % CI]",
        "Runner-up",
        "Runner-up / recommended [95 % CI]",
        "Verdict",
        score_header(found.score),
    )
    lines = []
    for answer in found.answers:
        winner = answer.winner
        verdict = answer.verdict
        if answer.trials_needed:
            verdict += f" (about {answer.trials_needed} trials would settle it)"
        line: tuple[str, ...] = (
            str(answer.epochs),
            winner.label,
            f"{seconds_text(winner.median_s)} [{seconds_text(winner.median_low_s)}, "
            f"{seconds_text(winner.median_high_s)}]",
            answer.runner_up.label if answer.runner_up else "–",
            ratio_text(answer.ratio, answer.ratio_low, answer.ratio_high),
            verdict,
            _accuracy_text(answer.accuracy),
        )
        lines.append((_workload_fields(answer.workload), *line) if several else line)
    if several:
        header = ("Workload", *header)
    return Rows(f"The recommendation per {axis_point(found.work_axis)}", header, tuple(lines))


def _accuracy_text(check: recommend.AccuracyCheck) -> str:
    """The accuracy check in a table cell: the status, and the difference to the most accurate when tested."""
    if check.best is None or pd.isna(check.difference_low):
        return recommend_view.accuracy_text(check) if check.status == "cannot differ" else check.status
    return (
        f"{check.status}: {check.difference:+.4f} vs {check.best.label} (one-sided 95 % bound "
        f"{check.difference_low:+.4f}, margin {check.margin:g})"
    )


def _workload_fields(workload: dict[str, Any]) -> str:
    return ", ".join(f"{key}={value_text(value)}" for key, value in workload.items() if key != "sweep")


def _arm_points(found: recommend.Recommendation) -> pd.DataFrame:
    """Every arm of every answer as a point of the time figure (panel = the work axis's value, and workload when
    several).

    ``winner`` rings the answer's winner; ``named``: the winner or the runner-up.
    """
    several = len({repr(sorted(a.workload.items())) for a in found.answers}) > 1
    rows = [
        {
            "panel": axis_text([answer.epochs], found.work_axis) + (f" ({index})" if several else ""),
            "engine": arm.engine,
            "config": shape_text(arm.executors, arm.cores_per_executor, arm.executor_memory_gib),
            "cores_per_executor": arm.cores_per_executor,
            "executors": arm.executors,
            "executor_memory_gib": arm.executor_memory_gib,
            "median_s": arm.median_s,
            "low_s": arm.median_low_s,
            "high_s": arm.median_high_s,
            "winner": arm == answer.winner,
            "named": arm in (answer.winner, answer.runner_up),
        }
        for index, answer in enumerate(found.answers, start=1)
        for arm in answer.arms
    ]
    columns = ["panel", "engine", "config", *CONFIG, "median_s", "low_s", "high_s", "winner", "named"]
    return pd.DataFrame(rows, columns=columns).astype({"winner": bool, "named": bool})
