"""Engine ``dask``: matched Dask workers (workers x threads x memory limit), joblib's ``dask`` backend.

Manager ``local``: a ``LocalCluster`` of worker processes on 127.0.0.1, scratch space inside the
run directory. The nanny's default worker environment (``MALLOC_TRIM_THRESHOLD_`` and BLAS
threads) is replaced by the sweeper's controlled fit environment.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from contextlib import contextmanager

import dask
from distributed import Client, Future, LocalCluster
from distributed.deploy.spec import SpecCluster
from joblib._dask import DaskDistributedBackend
from joblib.parallel import register_parallel_backend

from sweeper.data_parallel import DaskShards, fit_result
from sweeper.datasets import Data
from sweeper.engines.base import Granted, LaunchContext, LaunchError, check_granted
from sweeper.engines.joblib_session import run_on_backend
from sweeper.engines.processes import kill_tree, new_children
from sweeper.fitting import FitResult, FitTask, run_fit
from sweeper.plan import Launch

BACKEND = "sweeper-dask"


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


class DaskSession:
    """A started Dask cluster with its client (any manager): batches go through :data:`BACKEND`."""

    def __init__(self, cluster: SpecCluster | None, client: Client, granted: Granted, n_jobs: int) -> None:
        register_parallel_backend(BACKEND, FailureReportingDaskBackend)
        self.cluster = cluster
        self.client = client
        self.granted = granted
        self.n_jobs = n_jobs
        self.versions: dict[str, str] = {}
        self._shipped: tuple[Data, Future] | None = None
        self._shards: DaskShards | None = None

    def run_batch(self, tasks: list[FitTask], data: Data) -> list[FitResult]:
        """Fits through joblib's ``dask`` backend; the data goes to every worker once per launch."""
        if tasks and tasks[0].mode == "data-parallel":
            return [self._data_parallel(task, data) for task in tasks]
        if self._shipped is None or self._shipped[0] is not data:
            # Dask's Active Memory Manager drops "superfluous" replicas every 2 s, broadcast ones included: a
            # worker would then fetch the data again from a peer in every batch. Keep one copy per worker.
            self.client.amm.stop()
            self._shipped = (data, self.client.scatter(data, broadcast=True, hash=False))
        if self.n_jobs == 1:
            # joblib runs a batch whose backend has one slot in the calling process: submit to the worker directly.
            futures = self.client.map(run_fit, tasks, data=self._shipped[1], pure=False)
            results: list[FitResult] = self.client.gather(futures)
            return results
        return run_on_backend(BACKEND, self.n_jobs, tasks, self._shipped[1])

    def _data_parallel(self, task: FitTask, data: Data) -> FitResult:
        """One model across the workers; each shard is shipped to its worker once per launch."""
        if self._shards is None or self._shards.data is not data or len(self._shards.parts) != task.shards:
            self._shards = DaskShards.ship(self.client, data, task.shards, task.seed)
        shards = self._shards
        return fit_result(task, data, lambda params: shards.train(params, task.epochs, task.local_epochs, task.seed))

    def abort(self) -> None:
        if self.cluster is None:
            return
        for worker in list(self.cluster.workers.values()):
            process = getattr(getattr(worker, "process", None), "process", None)
            if process is not None and process.pid:
                kill_tree(process.pid)


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
                cluster.close()
            _forget_handlers()
            children.reap()
