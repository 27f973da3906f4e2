"""A started Dask cluster on any manager: batches through joblib's ``dask`` backend, the grant, the client's end."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from distributed import Client, Future, Status
from distributed.deploy.spec import SpecCluster
from joblib._dask import DaskDistributedBackend
from joblib.parallel import register_parallel_backend

from sweeper.launch.base import Granted, LaunchError
from sweeper.launch.dask.shards import DaskShards
from sweeper.launch.hosts.processes import kill_tree
from sweeper.launch.joblib_batch import run_on_backend
from sweeper.workload.data import Data
from sweeper.workload.fit import FitResult, fit_result, run_fit
from sweeper.workload.tasks import FitTask, one_model

BACKEND = "sweeper-dask"
RESTART_TIMEOUT_S = 120.0  # after an abort, how long the nannies may take to start the workers again
SCATTER_ATTEMPTS = 3  # a broadcast that met a worker leaving is shipped again, at most this many times in all


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

    staging_s: float | None = 0.0

    def __init__(self, cluster: SpecCluster | None, client: Client, granted: Granted, n_jobs: int) -> None:
        register_parallel_backend(BACKEND, FailureReportingDaskBackend)
        self.cluster = cluster
        self.client = client
        self.granted = granted
        self.n_jobs = n_jobs
        # what was shipped to the workers, with the number of aborts before it was: an abort kills its copies
        self.aborts = 0
        self._shipped: tuple[Data, Future, int] | None = None
        self._shards: tuple[DaskShards, int] | None = None

    def run_batch(self, tasks: list[FitTask], data: Data) -> list[FitResult]:
        """Fits through joblib's ``dask`` backend; the data goes to every worker once per launch."""
        if one_model(tasks):
            return [self._data_parallel(task, data) for task in tasks]
        shipped = self._shipped
        if shipped is None or shipped[0] is not data or shipped[2] != self.aborts:
            aborts = self.aborts
            # Dask's Active Memory Manager drops "superfluous" replicas every 2 s, broadcast ones included: a
            # worker would then fetch the data again from a peer in every batch. Keep one copy per worker.
            self.client.amm.stop()
            shipped = self._shipped = (data, self._scatter_to_every_worker(data), aborts)
        if self.n_jobs == 1:
            # joblib runs a batch whose backend has one slot in the calling process: submit to the worker directly.
            futures = self.client.map(run_fit, tasks, data=shipped[1], pure=False)
            results: list[FitResult] = self.client.gather(futures)
            return results
        return run_on_backend(BACKEND, self.n_jobs, tasks, shipped[1])

    def _scatter_to_every_worker(self, data: Data) -> Future:
        """``data`` on every worker. Dask's broadcast lists the workers, then replicates to them: a worker that leaves
        in between (after an abort, on a busy machine) fails it with a KeyError naming that worker; the data is then
        shipped again once the planned workers are registered."""
        for _ in range(SCATTER_ATTEMPTS - 1):
            try:
                return self.client.scatter(data, broadcast=True, hash=False)
            except KeyError:
                self.client.wait_for_workers(self.granted.executors, timeout=RESTART_TIMEOUT_S)
        return self.client.scatter(data, broadcast=True, hash=False)

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

    def jvm_peak_heap_gib(self) -> float | None:
        return None  # no JVM

    def abort(self, restart: bool = True) -> None:
        """Kill the workers' processes, then (``restart``) wait until their nannies have started them again.

        The shipped data died with the workers: the next batch ships it again. Returning only once every
        worker is back means the next batch never meets a half-empty cluster, and a second abort never
        kills a worker that is still starting (its nanny would then hang in ``close()``).
        """
        before = self.worker_addresses()
        self.kill_workers()
        self.forget_shipped()
        if not restart:
            return
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


def forget_handlers() -> None:
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
