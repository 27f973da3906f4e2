"""joblibspark's ``spark`` backend, fixed so a failed fit raises its original exception.

joblibspark 0.6 hands joblib a wrapped ``PythonException`` as if it were the batch's result, so
the driver sees ``TypeError: '_ExceptionWithTraceback' object is not iterable`` instead of the
fit's error, after Spark retried the task. Here the batch catches its own exception on the
executor, returns it pickled with its traceback, and the driver raises the original type and
message (chained to the remote traceback).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import joblibspark.backend as joblibspark_backend
from joblib._utils import _retrieve_traceback_capturing_wrapped_call
from joblib.parallel import register_parallel_backend
from joblibspark import register_spark
from joblibspark.backend import SparkDistributedBackend
from pyspark import cloudpickle

from sweeper.launch.spark.session import ContextSession

REMOTE_ERROR_TAG = "__sweeper_remote_error__"


class RemoteTraceback(Exception):
    """The traceback of an exception raised on an executor."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return "\n" + self.text


class ExceptionKeepingSparkBackend(SparkDistributedBackend):
    """joblibspark's backend, with the original exception of a failed batch kept."""

    def __init__(self, **backend_args: Any) -> None:
        with warnings.catch_warnings(), _given_the_active_context():
            # joblibspark 0.6 warns about stage-level scheduling on every start, even where it is supported
            warnings.filterwarnings("ignore", message="Spark .*stage-level scheduling")
            super().__init__(**backend_args)

    def submit(self, func: Callable[[], Any], callback: Callable[..., Any] | None = None) -> Any:
        """joblib >= 1.5 calls ``submit``; joblibspark 0.6 only has the deprecated ``apply_async``."""
        return self.apply_async(func, callback)

    def apply_async(self, func: Callable[[], Any], callback: Callable[..., Any] | None = None) -> Any:
        def guarded_batch() -> Any:  # nested: cloudpickled by value to the executor
            import traceback

            from pyspark import cloudpickle as executor_pickle

            try:
                return func()
            except BaseException as error:
                try:
                    blob = executor_pickle.dumps(error)
                except Exception:
                    blob = None
                name = f"{type(error).__module__}.{type(error).__qualname__}"
                return (REMOTE_ERROR_TAG, blob, name, str(error), traceback.format_exc())

        return super().apply_async(guarded_batch, callback)

    def retrieve_result(self, out: Any, timeout: float | None = None) -> Any:
        result = _retrieve_traceback_capturing_wrapped_call(out.get())
        if isinstance(result, tuple) and len(result) == 5 and result[0] == REMOTE_ERROR_TAG:
            _, blob, name, message, text = result
            try:
                error = cloudpickle.loads(blob) if blob is not None else None
            except Exception:
                error = None
            if not isinstance(error, BaseException):
                error = RuntimeError(f"{name}: {message}")
            raise error from RemoteTraceback(text)
        return result


@contextmanager
def _given_the_active_context() -> Iterator[None]:
    """joblibspark's backend asks for a SparkSession, and makes Spark SQL's when there is none, but uses only its
    ``sparkContext`` and ``conf.get``: while it starts, it is given the launch's context instead."""
    from pyspark import SparkContext

    made = joblibspark_backend.get_spark_session
    joblibspark_backend.get_spark_session = lambda: ContextSession(SparkContext._active_spark_context)
    try:
        yield
    finally:
        joblibspark_backend.get_spark_session = made


def register() -> None:
    """Register the fixed backend as joblib's ``spark`` backend."""
    register_spark()
    register_parallel_backend("spark", ExceptionKeepingSparkBackend)
