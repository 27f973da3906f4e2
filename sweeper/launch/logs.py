"""Each launch's own log: what the processes it starts write to standard error (Spark's JVM banner,
log4j's errors, Dask's worker logs) and what this process logs while the launch lives (Dask's scheduler
and nannies run here: "workers died" at Ctrl-C) go to ``log_dir/launch-NNN-ENGINE.log`` instead of the
terminal, where they would break into the progress display, and stay there after the run.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sweeper.launch.base import LaunchContext
    from sweeper.planning.plan import Launch


def launch_log(context: LaunchContext, launch: Launch) -> Path | None:
    """The log file of a launch (None when the context keeps no logs)."""
    if context.log_dir is None:
        return None
    return context.log_dir / f"launch-{launch.index + 1:03d}-{launch.engine}.log"


def containers_log(context: LaunchContext, launch: Launch) -> Path | None:
    """Where a failed launch's remote logs go (YARN's containers): beside its own log."""
    path = launch_log(context, launch)
    return path.with_name(path.stem + "-containers.log") if path is not None else None


def log_note(path: Path | None, *more: Path | None) -> str:
    """``" (logs: PATH, ...)"`` naming each of the files that holds something, else nothing."""
    written = []
    for candidate in (path, *more):
        try:
            if candidate is not None and candidate.stat().st_size > 0:
                written.append(str(candidate))
        except OSError:
            continue
    return f" (logs: {', '.join(written)})" if written else ""


@contextmanager
def stderr_into(path: Path | None) -> Iterator[None]:
    """Standard error goes to ``path`` (appended) while the block runs, and processes started in it write there for
    their whole life.

    File descriptor 2 itself is redirected, so child processes (a JVM, Dask's workers) inherit the file and
    this process's loggers (which hold ``sys.stderr``) write there too; standard error is back when the block ends.
    """
    if path is None:
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    sys.stderr.flush()
    saved = os.dup(2)
    with open(path, "ab") as log:
        os.dup2(log.fileno(), 2)
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
