"""How a run meets SIGINT (Ctrl-C) and SIGTERM: both stop it the same way, never half-way through a merge.

The exit codes of ``sweeper run`` are all named here, but for 2 (a mistake the user can fix, nothing launched:
:data:`sweeper.errors.USER_ERROR_EXIT`): 0 when every measurement is ``ok`` or ``pruned``;
:data:`EXIT_LAUNCH_FAILED` and :data:`EXIT_MEASUREMENT_FAILED` when rows are not (the rows are kept, the
answer printed: :func:`sweeper.run.runner.exit_code` decides); 130 and 143 when stopped (:func:`exit_status`).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

STOPPING = (signal.SIGINT, signal.SIGTERM)
EXIT_LAUNCH_FAILED = 3  # a launch did not start (its measurements are failed rows); wins over 4
EXIT_MEASUREMENT_FAILED = 4  # every launch started; a measurement failed or timed out


class Stopped(KeyboardInterrupt):
    """A stop by a signal: ``signum`` says which (the exit status is 128 + it, as a shell reports it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"signal {signum}")
        self.signum = signum


def exit_status(interrupt: KeyboardInterrupt) -> int:
    """130 for Ctrl-C (SIGINT), 143 for SIGTERM."""
    return 128 + getattr(interrupt, "signum", signal.SIGINT)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def signals_as_interrupt() -> Iterator[None]:
    """SIGTERM behaves like Ctrl-C for the block: tear down, keep the rows, stop."""

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise Stopped(signum)

    if not _main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def deferred_interrupts() -> Iterator[None]:
    """Hold SIGINT and SIGTERM while the block runs (a step that must not stop half-way); stop right after it."""
    if not _main_thread():
        yield
        return
    caught: list[int] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        caught.append(signum)

    previous = {number: signal.signal(number, hold) for number in STOPPING}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        if caught:
            raise Stopped(caught[0])
