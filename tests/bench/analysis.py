"""The analysis on a large store (#39): each command's wall time and peak memory on N configurations x 2 trials.

The store is synthetic (:mod:`tests.support.synthetic_stores`): half Spark, half Dask configurations (1-10 cores
per executor, 1-N/20 executors), one epochs value, 2 trials each. Each command runs as a user runs it, in its own
process (``python -m sweeper``), so its time includes the interpreter's start and its peak is its own.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

COMMANDS: dict[str, tuple[str, ...]] = {  # what the bench calls it -> the command's flags after the store
    "recommend": (),
    "predict --validate": ("--validate",),
    "replay --strategy race": ("--strategy", "race"),
    "replay --strategy halving": ("--strategy", "halving"),
    "report": ("--out", "{report}"),
}


def scale_store(configurations: int, directory: Path) -> int:
    """Write a store of ``configurations`` configurations x 2 trials into ``directory``; its rows."""
    from tests.support.stored_rows import write_test_rows
    from tests.support.synthetic_stores import ArmSpec, synthetic_rows

    arms = [
        ArmSpec(engine, 1 + i % 10, 1 + i // 10, 4.0, median_s=10.0 + (i % 37) / 3 + (engine == "spark"), trials=2)
        for engine in ("spark", "dask")
        for i in range(configurations // 2)
    ]
    rows = synthetic_rows(arms, epochs=(10,), seed=1, sweep="scale")
    write_test_rows(directory, "scale", rows, "part-scale")
    return len(rows)


def time_command(arguments: list[str]) -> dict[str, Any]:
    """Run ``python -m sweeper ARGUMENTS``: its exit code, wall seconds and peak resident MiB."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "sweeper", *arguments], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    assert process.stderr is not None
    error = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall_s = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    return {
        "exit": process.returncode,
        "wall_s": wall_s,
        "peak_mib": usage.ru_maxrss / 1024,
        "error": error.decode(errors="replace")[-500:] if process.returncode else "",
    }


def time_analysis(configurations: int, directory: Path) -> dict[str, Any]:
    """Every command of :data:`COMMANDS` on a store of ``configurations`` configurations."""
    store = directory / "store"
    rows = scale_store(configurations, store)
    timed = {}
    for name, flags in COMMANDS.items():
        arguments = [name.split()[0], str(store), *(flag.format(report=directory / "report") for flag in flags)]
        timed[name] = time_command(arguments)
    return {"configurations": configurations, "rows": rows, "commands": timed}
