"""Spark ML's own MLP: one ``MultilayerPerceptronClassifier`` per fit, trained across the launch's executors.

The joblib engines run a batch of independent scikit-learn fits side by side, one per core. Here every fit
is itself distributed: MLlib splits each L-BFGS or gradient-descent iteration over the partitions of a
cached DataFrame (one partition per executor core by default), and the fits of a batch run one after another.

MLlib's network is not scikit-learn's. The layer sizes are the same (features, ``hidden_layer_sizes``,
classes), but every hidden layer is a sigmoid (``activation`` is not honoured), the output a softmax, and
there is no L2 penalty (``alpha`` is not honoured). Its ``gd`` solver is full-batch gradient descent with a
constant step (``stepSize``, from ``learning_rate_init``), not scikit-learn's mini-batch ``sgd``/``adam``, so
the solver is chosen with the extra parameter ``mllib_solver`` (``l-bfgs`` by default, or ``gd``). One ``gd``
iteration is one weight update, so at MLlib's default step of 0.03 a sigmoid network stays near chance for
tens of iterations; raise ``learning_rate_init`` (about 1.0) or prefer ``l-bfgs``.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from sweeper.config.model import MLLIB_SOLVERS
from sweeper.launch.base import Granted, LaunchContext
from sweeper.planning.plan import Launch
from sweeper.workload.data import Data
from sweeper.workload.fit import FitResult
from sweeper.workload.tasks import FitTask

SOLVERS = MLLIB_SOLVERS  # the grid's workload.model.mllib_solver: checked when the grid is read
DEFAULT_SOLVER = "l-bfgs"
DEFAULT_STEP_SIZE = 0.03  # MLlib's default stepSize
DEFAULT_BLOCK_SIZE = 128  # MLlib's default blockSize

ROW = "row"
FEATURES = "features"
LABEL = "label"
BATCH_BYTES = 8 * 1024 * 1024  # Arrow record batch size: each becomes part of one task sent by the driver


def mllib_params(task: FitTask, n_features: int, n_classes: int) -> dict[str, Any]:
    """The ``MultilayerPerceptronClassifier`` parameters of a fit.

    >>> from sweeper.workload.tasks import FitTask
    >>> task = FitTask(params=(("hidden_layer_sizes", (100, 50)), ("batch_size", 200), ("alpha", 1e-4)),
    ...                epochs=10, seed=3, exact_epochs=False, threads_per_fit=1)
    >>> mllib_params(task, 784, 10)
    {'layers': [784, 100, 50, 10], 'maxIter': 10, 'seed': 3, 'solver': 'l-bfgs', 'stepSize': 0.03, 'blockSize': 200}
    """
    params = dict(task.params)
    solver = params.get("mllib_solver", DEFAULT_SOLVER)
    if solver not in SOLVERS:
        raise ValueError(f"mllib_solver must be one of {', '.join(SOLVERS)}, got {solver!r}")
    hidden = params.get("hidden_layer_sizes", (100,))
    hidden = [int(hidden)] if isinstance(hidden, int) else [int(size) for size in hidden]
    batch_size = params.get("batch_size")
    block_size = batch_size if isinstance(batch_size, int) and not isinstance(batch_size, bool) else DEFAULT_BLOCK_SIZE
    learning_rate = params.get("learning_rate_init")
    mapped: dict[str, Any] = {
        "layers": [n_features, *hidden, n_classes],
        "maxIter": task.epochs,
        "seed": task.seed,
        "solver": solver,
        "stepSize": float(learning_rate) if learning_rate is not None else DEFAULT_STEP_SIZE,
        "blockSize": block_size,
    }
    if task.exact_epochs:
        mapped["tol"] = 0.0  # no stop on tolerance: run maxIter iterations unless the solver cannot go on
    elif "tol" in params:
        mapped["tol"] = float(params["tol"])
    return mapped


@dataclass
class _Cached:
    spark: Any
    data: Data
    partitions: int
    train: Any
    test: Any


class DataCache:
    """The training and test DataFrames of one :class:`Data`, built, cached and counted once per launch.

    A fit on other data (or with another partition count) unpersists the old frames first.
    ``build_s`` is the wall time of the last build: Arrow transfer, repartition, cache and count.
    """

    def __init__(self) -> None:
        self._cached: _Cached | None = None
        self.build_s: float | None = None

    @property
    def current(self) -> tuple[Any, Any] | None:
        """The cached (train, test) DataFrames, if any."""
        return None if self._cached is None else (self._cached.train, self._cached.test)

    def frames(self, spark: Any, data: Data, partitions: int) -> tuple[Any, Any]:
        """The cached (train, test) DataFrames of ``data``: ``row`` (int), ``features`` (vector), ``label`` (double)."""
        cached = self._cached
        if cached is not None and cached.spark is spark and cached.data is data and cached.partitions == partitions:
            return cached.train, cached.test
        self.close()
        started = time.perf_counter()
        classes = np.unique(data.y_train)
        train = to_frame(spark, data.X_train, _class_index(classes, data.y_train), partitions).cache()
        test = to_frame(spark, data.X_test, _class_index(classes, data.y_test), partitions).cache()
        train.count()
        test.count()
        self.build_s = time.perf_counter() - started
        self._cached = _Cached(spark, data, partitions, train, test)
        return train, test

    def close(self) -> None:
        """Unpersist the cached frames (nothing to do when their Spark application is already gone)."""
        cached, self._cached = self._cached, None
        if cached is None:
            return
        with contextlib.suppress(Exception):  # a stopped or aborted launch: its cache went with it
            cached.train.unpersist()
            cached.test.unpersist()


def _class_index(classes: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Labels as class indices 0..k-1 (MLlib's requirement); a label not among ``classes`` becomes -1."""
    index = np.searchsorted(classes, y).clip(0, len(classes) - 1)
    return np.where(classes[index] == y, index, -1).astype(np.float64)


def to_frame(spark: Any, X: np.ndarray, labels: np.ndarray, partitions: int) -> Any:
    """A DataFrame of ``row``, ``features`` (dense vectors) and ``label``, in ``partitions`` balanced partitions.

    The rows travel as Arrow record batches (float32 lists, a few MiB each, so no task the driver sends is
    large), become vectors with ``array_to_vector`` in the JVM, are dealt round-robin to the partitions and
    sorted by row inside each, so the same data gives the same partitions every time.
    """
    import pyarrow as pa
    from pyspark.ml.functions import array_to_vector
    from pyspark.sql import functions as F

    n_rows, n_features = X.shape
    rows_per_batch = max(1, BATCH_BYTES // (4 * max(n_features, 1)))
    n_batches = max(1, math.ceil(n_rows / rows_per_batch))
    bounds = np.linspace(0, n_rows, n_batches + 1).astype(np.int64)
    batches = []
    for low, high in itertools.pairwise(bounds.tolist()):
        values = pa.array(np.ascontiguousarray(X[low:high], dtype=np.float32).reshape(-1))
        offsets = pa.array(np.arange(0, (high - low) * n_features + 1, n_features, dtype=np.int32))
        batches.append(
            pa.RecordBatch.from_arrays(
                [
                    pa.array(np.arange(low, high, dtype=np.int32)),
                    pa.ListArray.from_arrays(offsets, values),
                    pa.array(labels[low:high], type=pa.float64()),
                ],
                names=[ROW, FEATURES, LABEL],
            )
        )
    frame = spark.createDataFrame(pa.Table.from_batches(batches))
    return (
        frame.repartition(partitions)
        .sortWithinPartitions(ROW)
        .select(ROW, array_to_vector(F.col(FEATURES)).alias(FEATURES), LABEL)
    )


def train_mllib(spark: Any, task: FitTask, data: Data, *, partitions: int | None, cache: DataCache) -> FitResult:
    """Train and score one ``MultilayerPerceptronClassifier`` on the launch's executors.

    ``partitions`` defaults to the application's default parallelism (its executor cores). ``fit_s`` is the
    wall time of ``fit()`` alone (for cv/search fits it includes selecting the fold's rows); ``accuracy``
    is measured on the test set.
    """
    from pyspark.ml.classification import MultilayerPerceptronClassifier
    from pyspark.ml.evaluation import MulticlassClassificationEvaluator
    from pyspark.sql import functions as F

    if partitions is None:
        partitions = int(spark.sparkContext.defaultParallelism)
    train, test = cache.frames(spark, data, partitions)
    if task.train_rows is not None:
        train = train.where(F.col(ROW).isin([int(row) for row in task.train_rows]))
    n_classes = len(np.unique(data.y_train))
    params = mllib_params(task, data.n_features, n_classes)
    estimator = MultilayerPerceptronClassifier(featuresCol=FEATURES, labelCol=LABEL, **params)
    started = time.perf_counter()
    model = estimator.fit(train)
    fit_s = time.perf_counter() - started
    evaluator = MulticlassClassificationEvaluator(labelCol=LABEL, predictionCol="prediction", metricName="accuracy")
    accuracy = float(evaluator.evaluate(model.transform(test)))
    return FitResult.of_this_process(task, fit_s, accuracy, _iterations(model, task.epochs))


def _iterations(model: Any, epochs: int) -> int:
    """Iterations the solver ran: the training summary's ``totalIterations`` (``epochs`` without a summary).

    Both solvers record the initial loss and one per iteration, so ``totalIterations`` (history - 1) is exact.
    """
    if not model.hasSummary:
        return epochs
    summary = model.summary
    if callable(summary):  # pyspark 4.3 declares the MLP model's summary as a method, other models' as a property
        summary = summary()
    return int(summary.totalIterations)


class MllibSession:
    """A started Spark launch whose batches are MLlib fits, one after another, each across all executors."""

    def __init__(self, spark_session: Any, partitions: int | None = None) -> None:
        self.spark_session = spark_session
        self.granted: Granted = spark_session.granted
        self.staging_s = spark_session.staging_s
        self.partitions = partitions or self.granted.executors * self.granted.cores_per_executor
        self.cache = DataCache()

    @property
    def spark(self) -> Any:
        return self.spark_session.spark

    def run_batch(self, tasks: list[FitTask], data: Data) -> list[FitResult]:
        """Train one MLlib model per task, sequentially; the data is cached on the executors once."""
        return [train_mllib(self.spark, task, data, partitions=self.partitions, cache=self.cache) for task in tasks]

    def jvm_peak_heap_gib(self) -> float | None:
        return self.spark_session.jvm_peak_heap_gib()

    def abort(self, restart: bool = True) -> None:
        """Stop a running fit: the wrapped Spark session kills its executors and cancels the jobs."""
        self.spark_session.abort(restart)

    def close(self) -> None:
        """Unpersist the cached data."""
        self.cache.close()


@contextmanager
def start(launch: Launch, context: LaunchContext) -> Iterator[MllibSession]:
    """Start the launch's Spark application (any manager the ``spark`` engine supports) for MLlib fits."""
    from sweeper.launch import registry

    spark_start = registry.starter("spark", launch.manager)
    with spark_start(launch, context) as spark_session:
        session = MllibSession(spark_session, partitions=launch.total_cores)
        try:
            yield session
        finally:
            session.close()
