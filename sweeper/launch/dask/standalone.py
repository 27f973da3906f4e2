"""Engine ``dask`` on ``manager: standalone``: a client of a Dask scheduler that is already running.

Nothing is started or stopped: the launch connects, checks that the scheduler's workers match the
plan (a mismatch fails the launch), runs its batches and disconnects. The workers' environment is
the cluster's own, so the fit environment is observed and recorded per row, not set.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from distributed import Client

from sweeper.launch.base import Granted, LaunchContext, LaunchError, check_granted
from sweeper.launch.dask.local import DaskSession, granted_workers
from sweeper.planning.plan import Launch


def existing_address(context: LaunchContext, key: str) -> str:
    """``cluster.spark_master`` or ``cluster.dask_scheduler`` of the grid."""
    value = getattr(context.cluster, key, None)
    if not value:
        raise LaunchError(f"manager standalone needs cluster.{key} in the grid")
    return str(value)


class ExistingDaskSession(DaskSession):
    """A session on someone else's workers: abort restarts them (through their nannies) instead of killing."""

    def abort(self) -> None:
        self.client.restart(wait_for_workers=False)
        self.forget_shipped()  # a restart drops the workers' data


@contextmanager
def start(launch: Launch, context: LaunchContext) -> Iterator[DaskSession]:
    """Connect to the existing scheduler; its workers must match the plan."""
    address = existing_address(context, "dask_scheduler")
    try:
        client = Client(address, timeout=f"{context.start_timeout_s}s", set_as_default=True)
    except OSError as error:
        raise LaunchError(f"dask scheduler {address} is not reachable: {error}") from error
    try:
        client.wait_for_workers(launch.executors, timeout=context.start_timeout_s)
        granted = granted_workers(client)
        planned = Granted(launch.executors, launch.cores_per_executor, launch.executor_memory_mib)
        check_granted(planned, granted, "dask")
        yield ExistingDaskSession(None, client, granted, n_jobs=launch.total_cores // context.threads_per_fit)
    finally:
        client.close()
