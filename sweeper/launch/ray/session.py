"""A started Ray cluster on any manager: batches through ``ray.util.joblib``'s backend, the grant, the abort."""

from __future__ import annotations

import logging
import threading
import time
from functools import partial
from typing import Any

import ray
from joblib.parallel import register_parallel_backend
from ray.exceptions import RayTaskError
from ray.util.joblib.ray_backend import RayBackend
from ray.util.multiprocessing.pool import ResultThread

from sweeper.launch.base import Granted, LaunchError
from sweeper.launch.joblib_batch import run_on_backend
from sweeper.launch.ray.shards import RayShards
from sweeper.workload.data import Data
from sweeper.workload.fit import FitResult, fit_result, run_fit
from sweeper.workload.tasks import FitTask, one_model

BACKEND = "sweeper-ray"
BYTES_PER_MIB = 1024 * 1024
RESULT_THREADS_WAIT_S = 10.0  # after a pool's actors are killed, how long its result threads may take to see it


class RayData:
    """The training data put in Ray's object store once per launch; each fit reads its node's copy."""

    def __init__(self, ref: Any) -> None:
        self.ref = ref

    def resolve(self) -> Data:
        data: Data = ray.get(self.ref)
        return data


class Pool:
    """The session's pool of actors, kept from one batch to the next as Dask's workers and Spark's executors are."""

    def __init__(self) -> None:
        self.pool: Any = None

    def end(self) -> None:
        """Kill its actors (a running batch fails) and wait for its result threads, which would otherwise ask Ray
        for the killed fits' results after the driver disconnected; the next batch starts a new pool."""
        pool, self.pool = self.pool, None
        if pool is not None:
            pool.terminate()
            deadline = time.monotonic() + RESULT_THREADS_WAIT_S
            for thread in threading.enumerate():
                if isinstance(thread, ResultThread):
                    join_by(thread, deadline)


def join_by(thread: threading.Thread, deadline: float) -> None:
    """Wait for ``thread`` until ``deadline`` (``time.monotonic()``); one just started and not yet running (listed
    by ``threading.enumerate`` already, but not joinable) is waited for too."""
    while True:
        try:
            thread.join(max(0.0, deadline - time.monotonic()))
            return
        except RuntimeError:  # "cannot join thread before it is started": the pool started it a moment ago
            if time.monotonic() >= deadline:
                return
            time.sleep(0.01)


class SessionPoolRayBackend(RayBackend):
    """``ray.util.joblib``'s backend on the session's pool: its actors start once, not in every batch."""

    kept: Pool
    _pool: Any

    def configure(
        self,
        n_jobs: int = 1,
        parallel: Any | None = None,
        prefer: str | None = None,
        require: str | None = None,
        ray_remote_args: dict[str, Any] | None = None,
        **memmappingpool_args: Any,
    ) -> Any:
        if self.kept.pool is None:
            n_jobs = int(super().configure(n_jobs, parallel, prefer, require, ray_remote_args, **memmappingpool_args))
            self.kept.pool = self._pool
            return n_jobs
        self._pool = self.kept.pool
        self.parallel = parallel
        return n_jobs

    def terminate(self) -> None:
        """The batch ended: the pool stays for the next one."""
        self._pool = None
        self.reset_batch_stats()

    def abort_everything(self, ensure_ready: bool = True) -> None:
        """A fit failed: its batch's other fits are killed with the pool, as joblib does."""
        self.kept.end()
        super().abort_everything(ensure_ready)


def _fit_remote(task: FitTask, data: RayData) -> FitResult:
    return run_fit(task, data)


class RaySession:
    """A connected Ray cluster: fits run as actors of a joblib pool (one CPU each per thread of a fit)."""

    staging_s: float | None = 0.0

    def __init__(self, granted: Granted, n_jobs: int, threads_per_fit: int) -> None:
        self.granted = granted
        self.n_jobs = n_jobs
        self.remote_args = {"num_cpus": threads_per_fit, "max_restarts": 0}
        # ray's pool warns once that it ignores joblib's multiprocessing context
        logging.getLogger("ray.util.multiprocessing.pool").setLevel(logging.ERROR)
        self.pool = Pool()
        backend = type("SessionRayBackend", (SessionPoolRayBackend,), {"kept": self.pool})
        register_parallel_backend(BACKEND, partial(backend, ray_remote_args=self.remote_args))
        self._shipped: tuple[Data, RayData] | None = None
        self._shards: RayShards | None = None

    def run_batch(self, tasks: list[FitTask], data: Data) -> list[FitResult]:
        """Fits through the joblib backend; the data is put in the object store once per launch."""
        if one_model(tasks):
            return [self._data_parallel(task, data) for task in tasks]
        if self._shipped is None or self._shipped[0] is not data:
            self._shipped = (data, RayData(ray.put(data)))
        shared = self._shipped[1]
        try:
            if self.n_jobs == 1:  # joblib would run a one-job batch here, in the driver: Ray tasks instead
                fit = ray.remote(num_cpus=self.remote_args["num_cpus"], max_retries=0)(_fit_remote)
                results: list[FitResult] = ray.get([fit.remote(task, shared) for task in tasks])
                return results
            return run_on_backend(BACKEND, self.n_jobs, tasks, shared)
        except RayTaskError as error:  # the fit's own exception, as it was raised on its node
            raise error.cause from None

    def _data_parallel(self, task: FitTask, data: Data) -> FitResult:
        """One model across the worker nodes; each shard is put in the object store once per launch."""
        shards = self._shards
        if shards is None or shards.data is not data or len(shards.parts) != task.shards:
            shards = self._shards = RayShards.ship(data, task.shards, task.seed)
        return fit_result(task, data, lambda params: shards.train(params, task.epochs, task.local_epochs, task.seed))

    def jvm_peak_heap_gib(self) -> float | None:
        return None  # no JVM

    def abort(self, restart: bool = True) -> None:
        """Kill the actors running the batch's fits; the next batch starts a new pool of actors."""
        self.pool.end()

    def close(self) -> None:
        """The pool's actors ended before the driver disconnects."""
        self.pool.end()


def granted_nodes(nodes: list[dict[str, Any]]) -> Granted:
    """Worker nodes (alive, with CPUs), their CPUs and memory as Ray sees them (all nodes must agree)."""
    workers = [node["Resources"] for node in nodes if node.get("Alive") and node["Resources"].get("CPU", 0) > 0]
    cpus = {int(resources["CPU"]) for resources in workers}
    memory = {int(resources.get("memory", 0)) // BYTES_PER_MIB for resources in workers}
    if len(cpus) > 1 or len(memory) > 1:
        raise LaunchError(f"ray nodes differ in shape: CPUs {sorted(cpus)}, memory MiB {sorted(memory)}")
    return Granted(
        executors=len(workers),
        cores_per_executor=cpus.pop() if cpus else 0,
        executor_memory_mib=memory.pop() if memory else 0,
    )
