"""Engine ``dask`` on ``manager: standalone``: a client of a Dask scheduler that is already running.

Nothing is started or stopped: the launch connects, checks that the scheduler's workers match the
plan (a mismatch fails the launch), runs its batches and disconnects. The workers' environment is
the cluster's own, so the fit environment is observed and recorded per row, not set.
"""

from __future__ import annotations

from distributed import Client

from sweeper.launch.base import Granted, LaunchError
from sweeper.launch.dask.base import DaskBackend
from sweeper.launch.dask.session import DaskSession
from sweeper.launch.lifecycle import Teardown
from sweeper.launch.options import StandaloneOptions


class ExistingDaskSession(DaskSession):
    """A session on someone else's workers: abort restarts them (through their nannies) instead of killing."""

    def abort(self, restart: bool = True) -> None:
        self.client.restart(wait_for_workers=False)
        self.forget_shipped()  # a restart drops the workers' data


class StandaloneDask(DaskBackend):
    """A client of the grid's scheduler; the workers and their environment are the cluster's own."""

    sets_worker_environment = False

    def check(self) -> None:
        options = self.context.options
        if not isinstance(options, StandaloneOptions) or not options.dask_scheduler:
            raise LaunchError("manager standalone needs cluster.dask_scheduler in the grid")
        self.address = options.dask_scheduler

    def connect(self, teardown: Teardown) -> Client:
        try:
            client = Client(self.address, timeout=f"{self.context.start_timeout_s}s", set_as_default=True)
        except OSError as error:
            raise LaunchError(f"dask scheduler {self.address} is not reachable: {error}") from error
        teardown.add(client.close)
        return client

    def session(self, granted: Granted, n_jobs: int) -> ExistingDaskSession:
        return ExistingDaskSession(None, self.client, granted, n_jobs)
