"""Engine ``dask``: matched Dask workers (workers x threads x memory limit), joblib's ``dask`` backend.

Manager ``local``: a ``LocalCluster`` of worker processes on 127.0.0.1, scratch space inside the
run directory. The nanny's default worker environment (``MALLOC_TRIM_THRESHOLD_`` and BLAS
threads) is replaced by the sweeper's controlled fit environment.
"""

from __future__ import annotations

import logging
from contextlib import suppress

from distributed import Client, LocalCluster

from sweeper.launch.dask.base import DaskBackend
from sweeper.launch.lifecycle import Teardown

CLOSE_TIMEOUT_S = 60.0  # closing the cluster; what is still running after it is killed by the launch's reaper


class LocalDask(DaskBackend):
    """A ``LocalCluster`` of worker processes (each under its nanny) on 127.0.0.1."""

    def connect(self, teardown: Teardown) -> Client:
        cluster = LocalCluster(
            n_workers=self.launch.executors,
            threads_per_worker=self.launch.cores_per_executor,
            memory_limit=f"{self.launch.executor_memory_mib}MiB",
            processes=True,
            host="127.0.0.1",
            dashboard_address="127.0.0.1:0",  # the scheduler's HTTP server: loopback, any free port
            scheduler_kwargs={"dashboard": False},
            worker_dashboard_address=None,
            local_directory=str(self.scratch),
            silence_logs=logging.ERROR,
        )

        def close() -> None:
            with suppress(TimeoutError):  # a nanny stuck in close(): the launch's reaper ends what is left
                cluster.close(timeout=CLOSE_TIMEOUT_S)

        teardown.add(close)
        self.cluster = cluster
        client = Client(cluster, set_as_default=True)
        teardown.add(client.close)
        return client
