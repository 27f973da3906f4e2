"""One launch's lifecycle, the same on every engine and manager: start, check the grant, run, tear down.

:func:`launched` owns what every manager repeated: the planned grant and its check, the scratch
directory ``run_dir/{engine}-{index}``, the number of parallel fits, the teardown (newest step first,
every step runs whatever the others raised), which error wins (the launch's own error beats a
teardown error) and the reaping of child processes the launch left. A manager is a small
:class:`ManagerBackend` (in the style of distributed's ``SpecCluster`` subclasses): it starts or
reaches the cluster, says what the cluster granted, hands out the session and aborts a batch.

Everything the launch's processes write to standard error, this process's in-process logs (Dask's
scheduler and nannies) included, goes to the launch's log from its start to the end of its teardown
(:func:`sweeper.launch.logs.stderr_into`). A listener set with :func:`stages_to` hears each stage a
launch enters (:data:`STAGES`), for a progress view to say what the launch waits for.
"""

from __future__ import annotations

import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, TypeVar

from sweeper.launch.base import Granted, LaunchContext, LaunchError, Session, check_granted
from sweeper.launch.hosts.processes import Children
from sweeper.launch.logs import launch_log, stderr_into

if TYPE_CHECKING:
    from sweeper.planning.plan import Launch

T = TypeVar("T")

STARTING = "starting"  # the cluster or application is started (processes spawned, a JVM booting)
WAITING = "waiting"  # for the planned executors or workers to register
STARTED = "started"  # granted as planned: batches run from now on
STOPPING = "stopping"  # the teardown
STAGES = (STARTING, WAITING, STARTED, STOPPING)

StageListener = Callable[["Launch", str], None]
_listener: ContextVar[StageListener | None] = ContextVar("sweeper_launch_stage_listener", default=None)


@contextmanager
def stages_to(listener: StageListener) -> Iterator[None]:
    """Every launch started in the block calls ``listener(launch, stage)`` as it enters each of :data:`STAGES`."""
    token = _listener.set(listener)
    try:
        yield
    finally:
        _listener.reset(token)


def _enter(launch: Launch, stage: str) -> None:
    listener = _listener.get()
    if listener is not None:
        listener(launch, stage)


class Teardown:
    """Undo steps, run newest first; every step runs whatever the others raised."""

    def __init__(self) -> None:
        self._steps: list[Callable[[], Iterable[str]]] = []

    def add(self, step: Callable[[], object]) -> None:
        """Run ``step`` at teardown, before every step added earlier; what it returns is ignored."""

        def run() -> list[str]:
            step()
            return []

        self._steps.append(run)

    def add_checked(self, step: Callable[[], Iterable[str]]) -> None:
        """Like :meth:`add`, for a step that returns problems (what it had to kill): they fail the launch."""
        self._steps.append(step)

    def enter(self, context: AbstractContextManager[T]) -> T:
        """Enter ``context`` now and exit it at teardown (e.g. variables set, Dask's configuration)."""
        value = context.__enter__()

        def leave() -> None:
            context.__exit__(None, None, None)

        self.add(leave)
        return value

    def run(self) -> tuple[list[Exception], list[str]]:
        """Run every step; the errors they raised and the problems they returned, in run order."""
        errors: list[Exception] = []
        problems: list[str] = []
        while self._steps:
            step = self._steps.pop()
            try:
                problems += step()
            except Exception as error:
                errors.append(error)
        return errors, problems


class ManagerBackend(ABC):
    """What a cluster manager does for one engine; :func:`launched` calls it in order."""

    engine: ClassVar[str]  # "spark" | "dask" | "local": the scratch directory's prefix and the messages' name

    def __init__(self, launch: Launch, context: LaunchContext, scratch: Path) -> None:
        self.launch = launch
        self.context = context
        self.scratch = scratch

    def check(self) -> None:  # noqa: B027 (optional: most managers have nothing to check first)
        """Fail before anything starts (e.g. no local Java)."""

    @abstractmethod
    def start(self, teardown: Teardown) -> None:
        """Start or reach the cluster; add each undo step to ``teardown`` as soon as there is something to undo."""

    @abstractmethod
    def granted(self) -> Granted:
        """Wait for the planned executors or workers; what the cluster gave."""

    def check_placement(self) -> None:  # noqa: B027 (optional: ssh and yarn know where executors run)
        """Fail the launch when the executors or workers are not placed on the hosts as planned."""

    def save_logs(self) -> Path | None:
        """After a failed start, the logs of processes that log elsewhere (YARN's containers) saved here; the file."""
        return None

    @abstractmethod
    def session(self, granted: Granted, n_jobs: int) -> Session:
        """The started launch, running batches of ``n_jobs`` parallel fits."""


@contextmanager
def launched(backend_type: type[ManagerBackend], launch: Launch, context: LaunchContext) -> Iterator[Session]:
    """Start a launch with its manager's backend; nothing of it is left when the block ends."""
    planned = Granted(launch.executors, launch.cores_per_executor, launch.executor_memory_mib)
    scratch = context.run_dir / f"{backend_type.engine}-{launch.index}"
    scratch.mkdir(parents=True, exist_ok=True)
    backend = backend_type(launch, context, scratch)
    backend.check()
    teardown = Teardown()
    children = Children()

    def reap() -> None:  # runs last: what the launch started and did not end
        children.reap()

    teardown.add(reap)
    # what it starts logs there, not to the terminal: its processes (a JVM, workers a nanny restarts later) and the
    # in-process loggers (Dask's scheduler on its workers' death, at Ctrl-C), until its teardown has ended
    with stderr_into(launch_log(context, launch)):
        try:
            _enter(launch, STARTING)
            backend.start(teardown)
            _enter(launch, WAITING)
            granted = backend.granted()
            check_granted(planned, granted, backend_type.engine)
            backend.check_placement()
            session = backend.session(granted, n_jobs=launch.total_cores // context.threads_per_fit)
            _enter(launch, STARTED)
            yield session
        finally:
            in_flight = sys.exc_info()[1] is not None
            if in_flight:  # the containers' logs, while the cluster still has them (teardown ends the application)
                _save_logs_quietly(backend)
            _enter(launch, STOPPING)
            errors, problems = teardown.run()
            if not in_flight:  # the launch's (or the block's) own error matters more than a teardown one
                if errors:
                    raise errors[0]
                if problems:
                    raise LaunchError(f"{backend_type.engine} teardown: " + "; ".join(problems))


def _save_logs_quietly(backend: ManagerBackend) -> None:
    """The backend's logs saved, if it can; a failure to save them never hides the launch's own error."""
    try:
        backend.save_logs()
    except Exception as error:  # the launch's own error is the one to report
        print(f"sweeper: could not save the containers' logs: {error}", file=sys.stderr, flush=True)
