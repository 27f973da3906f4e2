"""Spark ML's own models: one per fit, trained across the launch's executors (MLPClassifier as Spark ML's
``MultilayerPerceptronClassifier``; the other estimators Spark ML has as theirs, :mod:`sweeper.config.spark_ml`).

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
import importlib
import itertools
import math
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from sweeper.config.grid import REGRESSOR
from sweeper.config.model import MLLIB_SOLVERS
from sweeper.config.spark_ml import EVALUATOR_METRICS, counterpart, spark_params
from sweeper.launch.base import Granted, LaunchContext
from sweeper.planning.plan import Launch
from sweeper.workload.data import Data
from sweeper.workload.estimators import build
from sweeper.workload.fit import FitResult
from sweeper.workload.tasks import FitTask

SOLVERS = MLLIB_SOLVERS  # the grid's workload.model.mllib_solver: checked when the grid is read
DEFAULT_SOLVER = "l-bfgs"
DEFAULT_STEP_SIZE = 0.03  # MLlib's default stepSize
DEFAULT_BLOCK_SIZE = 128  # MLlib's default blockSize

ROW = "row"
FEATURES = "features"
LABEL = "label"
TREE_COUNTS = ("n_estimators", "max_iter")  # work axes that count an ensemble's trees (boosting's: its iterations)
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
    regression: bool
    train: Any
    test: Any


class DataCache:
    """The training and test DataFrames of one :class:`Data`, built, cached and counted once per launch.

    A fit on other data (or with another partition count) unpersists the old frames first.
    """

    def __init__(self) -> None:
        self._cached: _Cached | None = None

    @property
    def current(self) -> tuple[Any, Any] | None:
        """The cached (train, test) DataFrames, if any."""
        return None if self._cached is None else (self._cached.train, self._cached.test)

    def frames(self, spark: Any, data: Data, partitions: int, *, regression: bool = False) -> tuple[Any, Any]:
        """The cached (train, test) DataFrames of ``data``: ``row`` (int), ``features`` (vector), ``label`` (double:
        a class index, or the target itself for ``regression``)."""
        cached = self._cached
        if (
            cached is not None
            and cached.spark is spark
            and cached.data is data
            and cached.partitions == partitions
            and cached.regression == regression
        ):
            return cached.train, cached.test
        self.close()
        classes = np.unique(data.y_train)

        def labels(y: np.ndarray) -> np.ndarray:
            return y.astype(np.float64) if regression else _class_index(classes, y)

        train = to_frame(spark, data.X_train, labels(data.y_train), partitions).cache()
        test = to_frame(spark, data.X_test, labels(data.y_test), partitions).cache()
        train.count()
        test.count()
        self._cached = _Cached(spark, data, partitions, regression, train, test)
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


def _train_mllib(spark: Any, task: FitTask, data: Data, *, partitions: int | None, cache: DataCache) -> FitResult:
    """Train and score one Spark ML model on the launch's executors (MLPClassifier: ``MultilayerPerceptronClassifier``,
    scored by accuracy; another estimator: its counterpart, scored by the grid's scorer).

    ``partitions`` defaults to the application's default parallelism (its executor cores). ``fit_s`` is the
    wall time of ``fit()`` alone (for cv/search fits it includes selecting the fold's rows); the score is
    measured on the test set.
    """
    from pyspark.sql import functions as F

    if partitions is None:
        partitions = int(spark.sparkContext.defaultParallelism)
    regression = task.estimator.kind == REGRESSOR
    train, test = cache.frames(spark, data, partitions, regression=regression)
    n_train = data.n_train
    if task.train_rows is not None:
        train = train.where(F.col(ROW).isin([int(row) for row in task.train_rows]))
        n_train = len(task.train_rows)
    estimator = _spark_estimator(task, data, n_train)
    started = time.perf_counter()
    model = estimator.fit(train)
    fit_s = time.perf_counter() - started
    score = _score(model.transform(test), "accuracy" if task.estimator.is_mlp else task.estimator.scoring, regression)
    return FitResult.of_this_process(task, fit_s, score, _iterations(model, task))


def _score(predictions: Any, scorer: str, regression: bool) -> float:
    """The held-out score of a fit's test-set ``predictions`` by Spark ML's evaluator of the grid's ``scorer``, in
    scikit-learn's sign (an error negated, higher is better)."""
    from pyspark.ml.evaluation import MulticlassClassificationEvaluator, RegressionEvaluator

    metric, negated = EVALUATOR_METRICS[scorer]
    kind: Any = RegressionEvaluator if regression else MulticlassClassificationEvaluator
    score = float(kind(labelCol=LABEL, predictionCol="prediction", metricName=metric).evaluate(predictions))
    return -score if negated else score


def _spark_estimator(task: FitTask, data: Data, n_train: int) -> Any:
    """The Spark ML estimator of a fit: MLPClassifier's own mapping, or another estimator's counterpart with its
    parameters translated (:func:`sweeper.config.spark_ml.spark_params`); raises ValueError for more than two
    classes on a binary-only counterpart."""
    n_classes = len(np.unique(data.y_train))
    if task.estimator.is_mlp:
        from pyspark.ml.classification import MultilayerPerceptronClassifier

        params = mllib_params(task, data.n_features, n_classes)
        return MultilayerPerceptronClassifier(featuresCol=FEATURES, labelCol=LABEL, **params)
    steps = task.estimator.steps
    found = counterpart(steps)
    if found is None:
        raise ValueError(f"spark-mllib has no Spark ML counterpart of {task.estimator.name}")
    if found.binary_only and n_classes > 2:
        raise ValueError(
            f"Spark ML's {found.spark_class} takes two classes only, and {data.name} has {n_classes}: use a "
            "two-class dataset, or leave spark-mllib out of engines"
        )
    built = build(task.estimator, dict(task.params), task.epochs, task.seed, exact_epochs=False)
    module, _, name = found.spark_class.rpartition(".")
    spark_class = getattr(importlib.import_module(module), name)
    return spark_class(featuresCol=FEATURES, labelCol=LABEL, **spark_params(steps, built.get_params(), n_train))


def _iterations(model: Any, task: FitTask) -> int:
    """The work the fit ran: a tree ensemble's trees where its work axis counts them (a forest's, boosting's), an
    iterative solver's ``totalIterations`` (MLP, logistic regression), else the work asked (``task.epochs``).

    Both MLP solvers record the initial loss and one per iteration, so ``totalIterations`` (history - 1) is exact.
    """
    work = task.estimator.work_parameter
    if work is None:
        return task.epochs
    if hasattr(model, "getNumTrees"):  # a forest's summary counts no iterations (0)
        return int(model.getNumTrees) if work in TREE_COUNTS else task.epochs
    if not getattr(model, "hasSummary", False):
        return task.epochs
    summary = model.summary
    if callable(summary):  # pyspark 4.3 declares the MLP model's summary as a method, other models' as a property
        summary = summary()
    ran = getattr(summary, "totalIterations", None)
    return task.epochs if ran is None else int(ran)


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
        """Spark SQL's session on the launch's context: MLlib trains on DataFrames."""
        return self.spark_session.spark.sql()

    def run_batch(self, tasks: list[FitTask], data: Data) -> list[FitResult]:
        """Train one MLlib model per task, sequentially; the data is cached on the executors once."""
        return [_train_mllib(self.spark, task, data, partitions=self.partitions, cache=self.cache) for task in tasks]

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
