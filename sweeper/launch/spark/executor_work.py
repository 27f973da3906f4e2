"""An application's executor starts, read from the directories Spark's standalone workers give their executors.

A worker gives every executor it starts ``<work directory>/<application>/<n>/`` (its command, stdout and stderr).
An executor that cannot start (a Java option of the grid's ``spark_conf`` it refuses) exits at once and the master
starts another: thousands of directories a minute while a launch waited out its start limit. A launch whose workers
are its own (``local``; ``ssh``: :mod:`sweeper.launch.spark.remote_starts`) counts them to give up after a few such
starts, with the executor's own error.

``local-cluster``'s workers ignore ``SPARK_WORKER_DIR``: their work directory is ``$SPARK_HOME/work``, inside the
installed pyspark, so a local launch removes its application's directory when the driver has stopped, and those of
applications that are gone without their teardown (a sweep killed with SIGKILL) when it starts.
"""

from __future__ import annotations

import itertools
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

FAILED_STARTS = 3  # executors started beyond the planned ones before a launch gives up on them
ERROR_LINES = 5
HEADER_END = "=" * 40  # Spark writes the executor's command, then this line, at the top of its stderr
STALE_S = 3600.0  # an application's directory untouched this long, with no executor of it running, is left over


def kept_failing(started: int, planned: int) -> bool:
    """More executors were started than planned by :data:`FAILED_STARTS`: ended ones were replaced.

    >>> kept_failing(2, 2), kept_failing(5, 2)
    (False, True)
    """
    return started >= planned + FAILED_STARTS


def executor_error(stderr: str) -> str:
    """An executor's last lines of stderr, after Spark's header (its command) where it has one, joined by `` | ``.

    >>> executor_error('Spark Executor Command: "java" ...\\n' + HEADER_END + '\\n\\nError opening zip file\\n')
    'Error opening zip file'
    """
    _, header, after_header = stderr.rpartition(HEADER_END)
    lines = [line.strip() for line in (after_header if header else stderr).splitlines() if line.strip()]
    return " | ".join(lines[-ERROR_LINES:])


def failing_message(started: int, registered: int, planned: int, error: str) -> str:
    """A launch given up on: how many executors started and registered, and the last one's error."""
    return (
        f"spark: the executors kept failing to start ({started} started, {registered} of {planned} registered); "
        f"the last one's stderr: {error or '(none written)'}"
    )


@dataclass(frozen=True)
class ExecutorStarts:
    """The executors one application's ``local-cluster`` workers started: ``directory/<n>/`` each."""

    directory: Path

    @classmethod
    def of(cls, spark: Any) -> ExecutorStarts:
        """The application's directory where its workers put it: under the driver JVM's ``SPARK_HOME``."""
        system = spark.sparkContext._jvm.java.lang.System
        home = system.getenv("SPARK_HOME") or system.getProperty("user.dir")
        return cls(Path(home) / "work" / spark.sparkContext.applicationId)

    def started(self) -> list[Path]:
        """Every executor's directory, in the order they were started."""
        try:
            entries = [entry for entry in os.scandir(self.directory) if entry.name.isdigit()]
        except OSError:
            return []
        return sorted((Path(entry.path) for entry in entries), key=lambda path: int(path.name))

    def gave_up(self, planned: int) -> Callable[[], bool]:
        """:func:`kept_failing`, read at every poll of the start's wait (a directory listing)."""
        return lambda: kept_failing(len(self.started()), planned)

    def last_error(self) -> str:
        """:func:`executor_error` of the newest executor that wrote one (the newest may not have written yet)."""
        for directory in reversed(self.started()):
            try:
                error = executor_error((directory / "stderr").read_text(errors="replace"))
            except OSError:
                continue
            if error:
                return error
        return ""

    def remove(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)

    def remove_left_over(self, older_than_s: float = STALE_S) -> list[str]:
        """Remove the other applications' directories beside this one that are untouched for ``older_than_s`` and
        have no executor running (their launch was killed before its teardown); the names removed."""
        cutoff = time.time() - older_than_s
        try:
            old = [e.name for e in os.scandir(self.directory.parent) if e.is_dir() and e.stat().st_mtime < cutoff]
        except OSError:
            return []
        old = [name for name in old if name.startswith("app-") and name != self.directory.name]
        if not old:
            return []
        running: set[str] = set()
        for process in psutil.process_iter(["cmdline"]):
            words = process.info["cmdline"] or []
            running.update(after for before, after in itertools.pairwise(words) if before == "--app-id")
        removed = [name for name in old if name not in running]
        for name in removed:
            shutil.rmtree(self.directory.parent / name, ignore_errors=True)
        return removed
