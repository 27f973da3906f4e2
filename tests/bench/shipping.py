"""How much training data each engine shipped to its workers: probed on Dask and Spark, reasoned for loky."""

from __future__ import annotations

import os
from typing import Any

from sweeper.workload.data import Data
from tests.bench.engine_run import EngineRun
from tests.bench.stats import bytes_per_fit
from tests.bench.text import _size

LOKY_MAX_NBYTES = 1024 * 1024  # joblib.Parallel's default max_nbytes="1M": larger arrays are memory-mapped


def data_nbytes(data: Data) -> int:
    """Bytes of the four arrays a fit receives."""
    return int(sum(a.nbytes for a in (data.X_train, data.y_train, data.X_test, data.y_test)))


def _dask_key(session: Any) -> str | None:
    shipped = getattr(session, "_shipped", None)
    return str(shipped[1].key) if shipped else None


def _spark_broadcast(session: Any) -> Any:
    shipped = getattr(session, "_shipped", None)
    return shipped[1].broadcast if shipped else None


def _dask_worker_copies(dask_worker: Any, key: str | None = None) -> dict[str, Any]:
    """Inside a Dask worker: the training data it holds, and how often it fetched ``key`` from a peer.

    The transfer log's byte counts come from Dask's ``sizeof``, which does not see inside a ``Data``;
    each fetch of the key is a whole copy all the same.
    """
    held = {}
    for name in list(dask_worker.data.keys()):
        value = dask_worker.data[name]
        if isinstance(value, Data):
            held[str(name)] = data_nbytes(value)
    fetches = sum(
        1
        for entry in getattr(dask_worker, "transfer_incoming_log", [])
        if key is not None and key in {str(k) for k in entry.get("keys", {})}
    )
    return {"pid": os.getpid(), "held": held, "fetches": fetches}


def dask_shipping(session: Any, data: Data, run: EngineRun, key_before: str | None) -> dict[str, Any]:
    """Measured on the workers: who holds the scattered data now, and how often each worker received it."""
    key = _dask_key(session)
    workers = session.client.run(_dask_worker_copies, key=key)
    holders = sum(1 for w in workers.values() if w["held"])
    fetches = [int(w["fetches"]) for w in workers.values()]
    received = [1 + n for n in fetches]  # scatter(broadcast=True) gave every worker one copy, then peer fetches
    receivers = sum(received)
    nbytes = data_nbytes(data)
    same = key is not None and key == key_before
    return {
        "data_nbytes": nbytes,
        "scatter_key_unchanged": same,
        "workers": len(workers),
        "holders_at_end": holders,
        "peer_fetches": sum(fetches),
        "copies_per_process": max(received, default=0) if same else None,
        "receivers": receivers,
        "fits": run.fits_run,
        "bytes_per_fit": bytes_per_fit(nbytes, receivers, run.fits_run),
        "how": (
            f"measured on the workers with `client.run`: the data ({_size(nbytes)}) was scattered once "
            f"(broadcast to all {len(workers)} workers; the same key from the warm-up to the last batch: "
            f"{'yes' if same else 'NO'}); afterwards workers fetched it again from a peer {sum(fetches)} times "
            f"(per worker: {fetches}; the transfer log's keys); {holders} of {len(workers)} workers still hold it "
            f"at the end. ({_size(nbytes)} x {receivers} receptions) / {run.fits_run} fits of the launch "
            "(warm-up included). Tasks carry a future, not the arrays."
        ),
    }


def spark_shipping(session: Any, data: Data, run: EngineRun, broadcast_before: Any) -> dict[str, Any]:
    """The broadcast's pickled size, times the Python workers that ran fits (each reads a broadcast once)."""
    broadcast = _spark_broadcast(session)
    path = getattr(broadcast, "_path", None)
    size = os.path.getsize(path) if path and os.path.exists(path) else data_nbytes(data)
    executors = session.granted.executors
    receivers = len(run.pids)
    return {
        "data_nbytes": data_nbytes(data),
        "broadcast_bytes": size,
        "broadcast_unchanged": broadcast is not None and broadcast is broadcast_before,
        "executors": executors,
        "copies_per_process": 1 if broadcast is not None and broadcast is broadcast_before else None,
        "receivers": receivers,
        "fits": run.fits_run,
        "bytes_per_fit": bytes_per_fit(size, receivers, run.fits_run),
        "how": (
            f"one broadcast of {_size(size)} (pickled) made once per launch (the same broadcast from the warm-up "
            f"to the last batch: {'yes' if broadcast is not None and broadcast is broadcast_before else 'NO'}); "
            f"each of the {executors} executor JVMs fetches it once and each Python worker process reads it once "
            f"(PySpark sends a worker only broadcasts it has not seen); {receivers} Python worker processes ran fits: "
            f"{_size(size)} x {receivers} / {run.fits_run} fits of the launch (warm-up included)."
        ),
    }


def loky_shipping(data: Data, run: EngineRun, batches: int) -> dict[str, Any]:
    """Reasoned from joblib's auto-memmapping: big arrays go to a shared file once per call, small ones per task."""
    arrays = (data.X_train, data.y_train, data.X_test, data.y_test)
    mapped = sum(a.nbytes for a in arrays if a.nbytes > LOKY_MAX_NBYTES)
    pickled = sum(a.nbytes for a in arrays if a.nbytes <= LOKY_MAX_NBYTES)
    shipped = mapped * batches + pickled * run.fits_run
    memmapped = run.shipping.get("memmapped")
    return {
        "data_nbytes": data_nbytes(data),
        "memmapped": memmapped,
        "memmapped_bytes_per_call": mapped,
        "pickled_bytes_per_task": pickled,
        "receivers": len(run.pids),
        "fits": run.fits_run,
        "copies_per_process": None,
        "bytes_per_fit": shipped / run.fits_run if run.fits_run else None,
        "how": (
            f"joblib memory-maps arrays over 1 MiB ({_size(mapped)}; checked inside the workers: "
            f"{'memmapped' if memmapped else 'NOT memmapped'}): they are written once per Parallel call (batch) to a "
            f"shared temporary file both workers map (no copy per process); the small arrays ({_size(pickled)}) are "
            f"pickled with every task. ({_size(mapped)} x {batches} batches + {_size(pickled)} x {run.fits_run} "
            f"fits) / {run.fits_run} fits."
        ),
    }
