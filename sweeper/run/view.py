"""What ``sweeper run`` shows while it works: a progress bar, a line per measurement, a summary."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table
from rich.text import Text

from sweeper.names import FAILED, OK, PRUNED, TIMEOUT
from sweeper.shapes import shape_text
from sweeper.store.row import Row
from sweeper.text import plain

STATUS_STYLE: dict[str, str] = {OK: "green", FAILED: "red", TIMEOUT: "yellow"}


def measurement_line(row: Row) -> Text:
    """One line for a finished measurement (plain text, styled: an error message shows as written)."""
    shape = shape_text(
        row["executors"], row["cores_per_executor"], row["executor_memory_gib"], baseline=row["engine"] == "local"
    )
    status = row["status"]
    head = plain(f"{status:>7}", STATUS_STYLE.get(status, "")) + plain(
        f" {row['engine']:<11} {row['mode']:<13} {shape:<30} epochs {row['epochs']:>5} trial {row['trial']}"
    )
    if status == OK:
        return (
            head
            + plain(
                f"  fit {row['fit_wall_s']:7.2f} s  acc {row['accuracy']:.4f}  "
                f"epochs run {row['epochs_run']}  start {row['cluster_start_s']:.1f} s"
            )
            + plain("  (same dry-run measurement as above)" if row.get("reused_from") else "", "dim")
        )
    if status == PRUNED:
        return head + plain(f"  {row.get('error')}", "dim")
    return head + plain(f"  {row.get('error_type')}: {str(row.get('error'))[:200]}")


@contextmanager
def progress_bar(console: Console, total: int) -> Iterator[Progress]:
    """A bar over all measurements with an ETA."""
    bar = Progress(
        TextColumn("measurements"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        console=console,
        transient=True,
    )
    with bar:
        bar.add_task("sweep", total=total)
        yield bar


def _summary_order(item: tuple[tuple[Any, ...], list[Row]]) -> tuple[str, ...]:
    """Engine, mode, then shape and epochs in numeric order."""
    return tuple(f"{value:012.4f}" if isinstance(value, int | float) else str(value) for value in item[0])


def summary_table(rows: Sequence[Row]) -> Table:
    """Median fit time and accuracy per engine, shape and epochs, with failures counted."""
    groups: dict[tuple[Any, ...], list[Row]] = defaultdict(list)
    for row in rows:
        key = (row["engine"], row["mode"], row["executors"], row["cores_per_executor"], row["epochs"])
        groups[key].append(row)
    table = Table(title="Summary (medians over trials)")
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
