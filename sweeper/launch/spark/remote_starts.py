"""The executors an SSH launch's workers started, read on the hosts (:mod:`sweeper.launch.spark.executor_work`).

Each worker keeps them under the launch's scratch directory (``--work-dir``), which teardown removes with it.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass

from sweeper.launch.hosts.ssh import on_hosts, run_remote
from sweeper.launch.options import SshCluster
from sweeper.launch.spark.executor_work import executor_error, kept_failing

POLL_S = 2.0  # an SSH command per host: not at every poll of the start's wait
NEWEST = 5  # executors whose stderr is read for the last error, newest first
END = "@@sweeper-end@@"


@dataclass
class RemoteExecutorStarts:
    """The executors of one application: ``directory/<n>/`` on the hosts (which may share it: the ids are the
    application's, unique across hosts)."""

    cluster: SshCluster
    directory: str
    next_read_s: float = 0.0

    def started(self) -> set[str]:
        """The ids of every executor started on any host."""

        def ids(host: str) -> set[str]:
            _, out, _ = run_remote(host, f"ls {shlex.quote(self.directory)} 2>/dev/null; exit 0", self.cluster.options)
            return {word for word in out.split() if word.isdigit()}

        return set().union(*on_hosts(list(self.cluster.hosts), ids))

    def gave_up(self, planned: int) -> Callable[[], bool]:
        """:func:`~sweeper.launch.spark.executor_work.kept_failing`, read at most every :data:`POLL_S`."""

        def check() -> bool:
            now = time.monotonic()
            if now < self.next_read_s:
                return False
            self.next_read_s = now + POLL_S
            return kept_failing(len(self.started()), planned)

        return check

    def last_error(self) -> str:
        """The error of the newest executor that wrote one, on the first host that has it; empty if none."""
        script = (
            f"cd {shlex.quote(self.directory)} 2>/dev/null || exit 0; "
            f'for n in $(ls | sort -rn | head -n {NEWEST}); do tail -n 40 "$n/stderr" 2>/dev/null; echo {END}; done'
        )
        for host in self.cluster.hosts:
            _, out, _ = run_remote(host, script, self.cluster.options)
            for stderr in out.split(END):
                error = executor_error(stderr)
                if error:
                    return error
        return ""
