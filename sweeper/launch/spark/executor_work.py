"""A local launch's executor starts, read from the directories ``local-cluster``'s workers give their executors.

Those workers ignore ``SPARK_WORKER_DIR``: every executor they start gets ``$SPARK_HOME/work/<application>/<n>/``
(its command, stdout and stderr), inside the installed pyspark. An executor that cannot start (a Java option of the
grid's ``spark_conf`` it refuses) exits at once and the master starts another: thousands of directories a minute,
while the launch waited out its start limit. The launch reads them to give up after a few such starts with the
executor's own error, and removes its application's directory when the driver has stopped.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FAILED_STARTS = 3  # executors started beyond the planned ones before a launch gives up on them
ERROR_LINES = 5


@dataclass(frozen=True)
class ExecutorStarts:
    """The executors one application's workers started: ``directory/<n>/`` each."""

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

    def keep_failing(self, planned: int) -> bool:
        """More executors were started than planned by :data:`FAILED_STARTS`: ended ones were replaced."""
        return len(self.started()) >= planned + FAILED_STARTS

    def last_error(self) -> str:
        """The last lines of stderr after Spark's header (its command) of the newest executor that wrote any, joined
        by `` | `` (the newest may not have written yet)."""
        for directory in reversed(self.started()):
            try:
                text = (directory / "stderr").read_text(errors="replace")
            except OSError:
                continue
            _, header, after_header = text.rpartition("=" * 40)
            lines = [line.strip() for line in after_header.splitlines() if line.strip()]
            if header and lines:
                return " | ".join(lines[-ERROR_LINES:])
        return "(none written)"

    def remove(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)
