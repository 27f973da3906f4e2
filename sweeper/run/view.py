"""What ``sweeper run`` shows of its rows: a line per measurement, a summary (the progress: :mod:`.progress`)."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from sweeper.names import FAILED, OK, PRUNED, TIMEOUT
from sweeper.shapes import shape_text
from sweeper.store.row import Row
from sweeper.text import plain

STATUS_STYLE: dict[str, str] = {OK: "green", FAILED: "red", TIMEOUT: "yellow"}


def measurement_line(row: Row) -> Text:
    """One line for a finished measurement, under 100 columns when ok (plain text, styled: an error message shows
    as written, wrapped at the console's width). The launch's start time is on its own line
    (:mod:`sweeper.run.progress`)."""
    shape = shape_text(
        row["executors"], row["cores_per_executor"], row["executor_memory_gib"], baseline=row["engine"] == "local"
    )
    status = row["status"]
    head = plain(f"{status:>7}", STATUS_STYLE.get(status, "")) + plain(
        f" {row['engine']:<6} {row['mode']:<8} {shape:<28} {row['epochs']:>5} epochs trial {row['trial']}"
    )
    if status == OK:
        stopped = row.get("epochs_run")
        return (
            head
            + plain(f"  fit {row['fit_wall_s']:.2f} s  acc {row['accuracy']:.4f}")
            + plain(f"  stopped at {stopped}" if stopped is not None and stopped != row["epochs"] else "")
            + plain("  (reused)" if row.get("reused_from") else "", "dim")
        )
    if status == PRUNED:
        return head + plain(f"  {row.get('error')}", "dim")
    return head + plain(f"  {row.get('error_type')}: {str(row.get('error'))[:200]}")


def _summary_order(item: tuple[tuple[Any, ...], list[Row]]) -> tuple[str, ...]:
    """Engine, mode, then shape and epochs in numeric order."""
    return tuple(f"{value:012.4f}" if isinstance(value, int | float) else str(value) for value in item[0])


def summary_table(rows: Sequence[Row], title: str = "Summary (medians over trials)") -> Table:
    """Median fit time and accuracy per engine, shape and epochs, with failures counted."""
    groups: dict[tuple[Any, ...], list[Row]] = defaultdict(list)
    for row in rows:
        key = (row["engine"], row["mode"], row["executors"], row["cores_per_executor"], row["epochs"])
        groups[key].append(row)
    table = Table(title=title)
    for column in ("engine", "mode", "shape", "epochs", "ok", "failed", "fit s", "accuracy"):
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


def wrapped(text: Text, width: int) -> Text:
    """``text`` broken at spaces into lines of ``width`` columns, styles kept; a line that goes on is indented 2 more
    than the first, and a word longer than a line (a path) is kept whole, so that it can still be copied.

    >>> print(wrapped(Text("  one two three four"), 11).plain)
      one two
        three
        four
    """
    first = text.plain
    indent = len(first) - len(first.lstrip(" ")) + 2
    out = Text()
    column = 0
    for position, word in enumerate(text.split(" ", allow_blank=True)):
        if column + 1 + word.cell_len > width and column > indent:
            out.rstrip()
            out.append("\n" + " " * indent)
            column = indent
            if not word.plain:
                continue
        elif position:
            out.append(" ")
            column += 1
        out.append_text(word)
        column += word.cell_len
    return out


def say(console: Console, text: Text | str) -> None:
    """Print a line of ``sweeper run``, :func:`wrapped` at the console's width (a string as written: no markup)."""
    console.print(wrapped(plain(text) if isinstance(text, str) else text, console.width), soft_wrap=True)
