"""What every manager's Dask launch does alike: the Dask configuration, the client, the grant, the session."""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, ClassVar

import dask
from distributed import Client
from distributed.deploy.spec import SpecCluster

from sweeper.launch.base import Granted
from sweeper.launch.dask.session import DaskSession, forget_handlers, granted_workers
from sweeper.launch.lifecycle import ManagerBackend, Teardown


class DaskBackend(ManagerBackend):
    """A Dask client here; a manager says where the scheduler and the workers come from."""

    engine = "dask"
    sets_worker_environment: ClassVar[bool] = True  # the nannies start the workers with the fit environment
    cluster: SpecCluster | None = None  # when its nannies run in this process (a LocalCluster): abort kills workers
    client: Client

    def dask_config(self) -> dict[str, Any]:
        """Dask's configuration while the launch runs."""
        config: dict[str, Any] = {
            "distributed.worker.daemon": False,
            # A fit whose worker dies is not run again on another worker: the measurement fails
            # (KilledWorker) instead of timing a batch that partly ran twice on a shrunken cluster.
            "distributed.scheduler.allowed-failures": 0,
            # Dask's statistical profiler samples every thread of a worker 100 times a second on its event loop,
            # taking the GIL from the fit: ~0.65 CPU-s of a 20-s batch per worker (BENCHMARKS.md); the dashboard's
            # Profile page is all it feeds. The workers this launch starts inherit the setting (local nannies,
            # SSH's inherited configuration; YARN's worker command sets it); a standalone cluster keeps its own.
            "distributed.worker.profile.enabled": False,
            # every directory Dask makes here (workers' spill, the scheduler's and client's scratch space) in the
            # launch's scratch, not $TMPDIR/dask-scratch-space: nothing of a run is left outside the store
            "temporary-directory": str(self.scratch),
        }
        if self.sets_worker_environment:
            config["distributed.nanny.pre-spawn-environ"] = dict(self.context.environment)
            config["distributed.nanny.environ"] = {}
        return config

    @abstractmethod
    def connect(self, teardown: Teardown) -> Client:
        """Start or reach the scheduler and the workers; a client of them."""

    def start(self, teardown: Teardown) -> None:
        teardown.add(forget_handlers)
        teardown.enter(dask.config.set(self.dask_config()))
        self.client = self.connect(teardown)

    def granted(self) -> Granted:
        self.client.wait_for_workers(self.launch.executors, timeout=self.context.start_timeout_s)
        return granted_workers(self.client)

    def session(self, granted: Granted, n_jobs: int) -> DaskSession:
        return DaskSession(self.cluster, self.client, granted, n_jobs)
