"""What ``sweeper run`` shows of its rows: a line per measurement, a summary (the progress: :mod:`.progress`)."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from rich.table import Table
from rich.text import Text

from sweeper.config.work import ACCURACY, EPOCHS, axis_name, axis_text, score_name, sweep_axis_name
from sweeper.names import FAILED, OK, PRUNED, TIMEOUT
from sweeper.shapes import shape_text
from sweeper.store.row import Row
from sweeper.text import plain

STATUS_STYLE: dict[str, str] = {OK: "green", FAILED: "red", TIMEOUT: "yellow"}


def measurement_line(row: Row) -> Text:
    """One line for a finished measurement, under 100 columns when ok on an MLP's epochs (plain text, styled: an
    error message shows as written, wrapped at the console's width; the work axis by its name, ``n_estimators``).
    The launch's start time is on its own line (:mod:`sweeper.run.progress`)."""
    shape = shape_text(
        row["executors"], row["cores_per_executor"], row["executor_memory_gib"], baseline=row["engine"] == "local"
    )
    status = row["status"]
    axis = axis_name(row.get("estimator"), row.get("work_axis"))
    work = f"{row['epochs']:>5} {axis}" if axis == EPOCHS else axis_text([row["epochs"]], axis)
    head = plain(f"{status:>7}", STATUS_STYLE.get(status, "")) + plain(
        f" {row['engine']:<6} {row['mode']:<8} {shape:<28} {work} trial {row['trial']}"
    )
    if status == OK:
        stopped = row.get("epochs_run")
        scorer = score_name([row.get("scoring")])
        return (
            head
            + plain(f"  fit {row['fit_wall_s']:.2f} s  {'acc' if scorer == ACCURACY else scorer} {row['accuracy']:.4f}")
            + plain(f"  stopped at {stopped}" if stopped is not None and stopped != row["epochs"] else "")
            + plain("  (reused)" if row.get("reused_from") else "", "dim")
        )
    if status == PRUNED:
        return head + plain(f"  {row.get('error')}", "dim")
    return head + plain(f"  {row.get('error_type')}: {str(row.get('error'))[:200]}")


def _summary_order(item: tuple[tuple[Any, ...], list[Row]]) -> tuple[str, ...]:
    """Engine, mode, then shape and the work axis's value in numeric order."""
    return tuple(f"{value:012.4f}" if isinstance(value, int | float) else str(value) for value in item[0])


def summary_table(rows: Sequence[Row], title: str = "Summary (medians over trials)") -> Table:
    """Median fit time and score per engine, shape and value of the work axis (by its name), failures counted."""
    groups: dict[tuple[Any, ...], list[Row]] = defaultdict(list)
    for row in rows:
        key = (row["engine"], row["mode"], row["executors"], row["cores_per_executor"], row["epochs"])
        groups[key].append(row)
    table = Table(title=title)
    axis = sweep_axis_name((row.get("estimator"), row.get("work_axis")) for row in rows)
    scorer = score_name(row.get("scoring") for row in rows)
    for column in ("engine", "mode", "shape", axis, "ok", "failed", "fit s", scorer):
        table.add_column(column, justify="left" if column in ("engine", "mode") else "right")
    for (engine, mode, executors, cores, epochs), members in sorted(groups.items(), key=_summary_order):
        ok = [r for r in members if r["status"] == OK]
        times_s = [time_s for r in ok if (time_s := r["fit_wall_s"]) is not None]
        pruned = "pruned" if any(r["status"] == PRUNED for r in members) else "-"
        table.add_row(
            engine,
            mode,
            shape_text(executors, cores, baseline=engine == "local"),
            str(epochs),
            str(len(ok)),
            str(sum(r["status"] not in (OK, PRUNED) for r in members)),
            f"{statistics.median(times_s):.2f}" if times_s else pruned,
            f"{statistics.median(r['accuracy'] for r in ok):.4f}" if ok else "-",
        )
    return table
