"""Each launch's own log: what the processes it starts write to standard error (Spark's JVM banner,
log4j's errors, Dask's worker logs) goes to ``log_dir/launch-NNN-ENGINE.log`` instead of the
terminal, where it would break into the progress display, and stays there after the run.
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


def log_note(path: Path | None) -> str:
    """``" (logs: PATH)"`` when the launch wrote something to its log, else nothing."""
    try:
        return f" (logs: {path})" if path is not None and path.stat().st_size > 0 else ""
    except OSError:
        return ""


@contextmanager
def stderr_into(path: Path | None) -> Iterator[None]:
    """Processes started in the block write their standard error to ``path`` (appended) for their whole life.

    File descriptor 2 itself is redirected, so child processes (a JVM, Dask's nannies) inherit
    the file; this process's standard error is back when the block ends.
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
