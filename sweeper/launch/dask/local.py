"""Engine ``dask``: matched Dask workers (workers x threads x memory limit), joblib's ``dask`` backend.

Manager ``local``: a ``LocalCluster`` of worker processes on 127.0.0.1, scratch space inside the
run directory. The nanny's default worker environment (``MALLOC_TRIM_THRESHOLD_`` and BLAS
threads) is replaced by the sweeper's controlled fit environment.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

import dask
from distributed import Client, Future, LocalCluster, Status
from distributed.deploy.spec import SpecCluster
from joblib._dask import DaskDistributedBackend
from joblib.parallel import register_parallel_backend

from sweeper.launch.base import Granted, LaunchContext, LaunchError, check_granted
from sweeper.launch.hosts.processes import kill_tree, new_children
from sweeper.launch.joblib_batch import run_on_backend
from sweeper.planning.plan import Launch
from sweeper.workload.data import Data
from sweeper.workload.data_parallel import DaskShards, fit_result
from sweeper.workload.fit import FitResult, FitTask, run_fit

BACKEND = "sweeper-dask"
RESTART_TIMEOUT_S = 120.0  # after an abort, how long the nannies may take to start the workers again
CLOSE_TIMEOUT_S = 60.0  # closing the cluster; what is still running after it is killed


class FailureReportingDaskBackend(DaskDistributedBackend):
    """joblib's ``dask`` backend, also telling joblib when Dask itself fails a batch.

    joblib 1.6 calls a batch's completion callback only when the batch succeeded: a batch Dask
    failed (``KilledWorker``, its worker died) left ``Parallel`` waiting forever.
    """

    async def _collect(self) -> None:
        while self._continue:
            async for future, result in self.waiting_futures:
                done = self._results.pop(future)
                callback = self._callbacks.pop(future)
                if future.status == "error":
                    _, error, _ = result
                    done.set_exception(error)
                    callback(error)  # joblib raises it from Parallel
                else:
                    done.set_result(result)
                    callback(result)
            await asyncio.sleep(0.01)

    def effective_n_jobs(self, n_jobs: int) -> int:
        """At least 2: with 1 (a cluster with one core left, e.g. while workers restart) joblib would run
        the batch here, in the driver, on the handle of the shipped data instead of the data."""
        return max(2, int(super().effective_n_jobs(n_jobs)))


class DaskSession:
    """A started Dask cluster with its client (any manager): batches go through :data:`BACKEND`."""

    def __init__(self, cluster: SpecCluster | None, client: Client, granted: Granted, n_jobs: int) -> None:
        register_parallel_backend(BACKEND, FailureReportingDaskBackend)
        self.cluster = cluster
        self.client = client
        self.granted = granted
        self.n_jobs = n_jobs
        self.versions: dict[str, str] = {}
        # what was shipped to the workers, with the number of aborts before it was: an abort kills its copies
        self.aborts = 0
        self._shipped: tuple[Data, Future, int] | None = None
        self._shards: tuple[DaskShards, int] | None = None

    def run_batch(self, tasks: list[FitTask], data: Data) -> list[FitResult]:
        """Fits through joblib's ``dask`` backend; the data goes to every worker once per launch."""
        if tasks and tasks[0].mode == "data-parallel":
            return [self._data_parallel(task, data) for task in tasks]
        shipped = self._shipped
        if shipped is None or shipped[0] is not data or shipped[2] != self.aborts:
            aborts = self.aborts
            # Dask's Active Memory Manager drops "superfluous" replicas every 2 s, broadcast ones included: a
            # worker would then fetch the data again from a peer in every batch. Keep one copy per worker.
            self.client.amm.stop()
            shipped = self._shipped = (data, self.client.scatter(data, broadcast=True, hash=False), aborts)
        if self.n_jobs == 1:
            # joblib runs a batch whose backend has one slot in the calling process: submit to the worker directly.
            futures = self.client.map(run_fit, tasks, data=shipped[1], pure=False)
            results: list[FitResult] = self.client.gather(futures)
            return results
        return run_on_backend(BACKEND, self.n_jobs, tasks, shipped[1])

    def _data_parallel(self, task: FitTask, data: Data) -> FitResult:
        """One model across the workers; each shard is shipped to its worker once per launch."""
        shipped = self._shards
        if shipped is None or shipped[1] != self.aborts or shipped[0].data is not data:
            shipped = None
        if shipped is None or len(shipped[0].parts) != task.shards:
            aborts = self.aborts
            shipped = self._shards = (DaskShards.ship(self.client, data, task.shards, task.seed), aborts)
        shards = shipped[0]
        return fit_result(task, data, lambda params: shards.train(params, task.epochs, task.local_epochs, task.seed))

    def abort(self) -> None:
        """Kill the workers' processes, then wait until their nannies have started the planned workers again.

        The shipped data died with the workers: the next batch ships it again. Returning only once every
        worker is back means the next batch never meets a half-empty cluster, and a second abort never
        kills a worker that is still starting (its nanny would then hang in ``close()``).
        """
        before = self.worker_addresses()
        self.kill_workers()
        self.forget_shipped()
        deadline = time.monotonic() + RESTART_TIMEOUT_S
        while not self.restarted(before):
            if time.monotonic() > deadline:
                raise LaunchError(f"dask: the workers did not start again within {RESTART_TIMEOUT_S:.0f} s of an abort")
            time.sleep(0.1)

    def forget_shipped(self) -> None:
        """The workers that held the shipped data are gone: the next batch ships it again.

        Counted, not only cleared: a batch still shipping when its workers were killed stores what it
        shipped after this, and that copy must not count either."""
        self.aborts += 1
        self._shipped = None
        self._shards = None

    def worker_addresses(self) -> set[str]:
        return set(self.client.scheduler_info(n_workers=-1)["workers"])

    def kill_workers(self) -> None:
        """Kill every worker process of the cluster (not the nannies, which start new ones)."""
        for nanny in self.local_nannies():
            process = getattr(getattr(nanny, "process", None), "process", None)
            if process is not None and process.pid:
                kill_tree(process.pid, grace_s=0.0)

    def restarted(self, before: set[str]) -> bool:
        """The planned number of workers is registered, none of them one of ``before``, every nanny's worker up."""
        workers = self.worker_addresses()
        nannies_up = all(
            getattr(getattr(n, "process", None), "status", None) == Status.running for n in self.local_nannies()
        )
        return len(workers) >= self.granted.executors and not workers & before and nannies_up

    def local_nannies(self) -> list[Any]:
        """The cluster's nannies when they run in this process (a LocalCluster's)."""
        return list(self.cluster.workers.values()) if self.cluster is not None else []


def _forget_handlers() -> None:
    """Let the launch's in-process Scheduler be freed.

    distributed 2025.2 caches ``_expects_comm(handler)`` with ``functools.cache`` on bound methods, so every
    Scheduler that served a request stays alive (about 0.15 MiB per launch, more with bigger task logs).
    """
    import distributed.core

    cached = getattr(distributed.core, "_expects_comm", None)
    if cached is not None and hasattr(cached, "cache_clear"):
        cached.cache_clear()


def granted_workers(client: Client) -> Granted:
    """Workers, threads and memory limit as the scheduler sees them (all workers must agree)."""
    workers = client.scheduler_info(n_workers=-1)["workers"].values()
    threads = {w["nthreads"] for w in workers}
    memory = {w["memory_limit"] for w in workers}
    if len(threads) > 1 or len(memory) > 1:
        raise LaunchError(f"dask workers differ in shape: threads {sorted(threads)}, memory {sorted(memory)}")
    return Granted(
        executors=len(workers),
        cores_per_executor=threads.pop() if threads else 0,
        executor_memory_mib=(memory.pop() // (1024 * 1024)) if memory else 0,
    )


@contextmanager
def start(launch: Launch, context: LaunchContext) -> Iterator[DaskSession]:
    """Start matched Dask workers; every process is gone when the block ends."""
    planned = Granted(launch.executors, launch.cores_per_executor, launch.executor_memory_mib)
    scratch = context.run_dir / f"dask-{launch.index}"
    scratch.mkdir(parents=True, exist_ok=True)
    settings = {
        "distributed.nanny.pre-spawn-environ": dict(context.environment),
        "distributed.nanny.environ": {},
        "distributed.worker.daemon": False,
        # A fit whose worker dies is not run again on another worker: the measurement fails
        # (KilledWorker) instead of timing a batch that partly ran twice on a shrunken cluster.
        "distributed.scheduler.allowed-failures": 0,
    }
    with new_children() as children, dask.config.set(settings):
        cluster = None
        client = None
        try:
            cluster = LocalCluster(
                n_workers=launch.executors,
                threads_per_worker=launch.cores_per_executor,
                memory_limit=f"{launch.executor_memory_mib}MiB",
                processes=True,
                host="127.0.0.1",
                dashboard_address="127.0.0.1:0",  # the scheduler's HTTP server: loopback, any free port
                scheduler_kwargs={"dashboard": False},
                worker_dashboard_address=None,
                local_directory=str(scratch),
                silence_logs=logging.ERROR,
            )
            client = Client(cluster, set_as_default=True)
            client.wait_for_workers(launch.executors, timeout=context.start_timeout_s)
            granted = granted_workers(client)
            check_granted(planned, granted, "dask")
            yield DaskSession(cluster, client, granted, n_jobs=launch.total_cores // context.threads_per_fit)
        finally:
            if client is not None:
                client.close()
            if cluster is not None:
                with suppress(TimeoutError):  # a nanny stuck in close(): reap() ends what is left
                    cluster.close(timeout=CLOSE_TIMEOUT_S)
            _forget_handlers()
            children.reap()
