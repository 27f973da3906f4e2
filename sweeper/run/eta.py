"""How long a run has left, starts counted: a launch's start (a Spark driver and its executors: 30-60 s) weighs
as much as many measurements, so an estimate from measurements alone reads 0:00:07 just before one.

The estimate adds, for every launch with rows still to come, its start (unless begun), its rows and its teardown.
Each is timed in this run as it happens: a start from its first stage to its grant, a row from the previous
event of its launch (the first row of a start apart: it carries the warm-up), a teardown from its launch's last
row to the next launch's start. An engine not yet timed takes :data:`DEFAULT_START_S` for a start, the mean row
and teardown of the engines that were, and a row's time for its first row.
"""

from __future__ import annotations

import statistics
import threading
from dataclasses import dataclass, field

from sweeper.names import BASELINE_ENGINE

# a start not yet timed in this run, by engine (seconds on a quiet laptop: a local-cluster Spark, a LocalCluster)
DEFAULT_START_S: dict[str, float] = {"spark": 30.0, "spark-mllib": 30.0, "dask": 5.0, BASELINE_ENGINE: 1.0}
UNKNOWN_ENGINE_START_S = 30.0


@dataclass
class _Launch:
    """One launch's part of the run: its engine, the rows it has still to write, what it is doing since when."""

    engine: str
    rows_left: int
    begun_at_s: float | None = None  # its start began (None: not yet, or granted)
    last_event_at_s: float | None = None  # granted, or its last row (None: not started)
    rows_since_start: int = 0


def _means(times: dict[str, list[float]]) -> dict[str, float]:
    """Each engine's mean time."""
    return {engine: statistics.fmean(values) for engine, values in times.items() if values}


def _launches(planned: dict[int, tuple[str, int]]) -> dict[int, _Launch]:
    return {index: _Launch(engine, rows) for index, (engine, rows) in planned.items()}


@dataclass
class Eta:
    """The run's remaining seconds from its launches' planned rows and the times measured so far.

    >>> eta = Eta({0: ("local", 2), 1: ("spark", 2)})
    >>> eta.remaining_s(0.0)  # nothing timed yet: no row time to go by
    >>> eta.starting(0, 0.0); eta.started(0, 1.0); eta.row(0, 3.0); eta.row(0, 5.0)
    >>> eta.remaining_s(5.0)  # spark's default start, 2 rows of 2 s
    34.0
    >>> eta.stopping(0, 5.0); eta.starting(1, 6.0)  # the baseline's teardown took 1 s
    >>> eta.remaining_s(16.0)  # 20 s of spark's start left, its 2 rows, a teardown
    25.0
    """

    planned: dict[int, tuple[str, int]]  # launch index -> (engine, rows it will write in this run)
    launches: dict[int, _Launch] = field(init=False)
    start_s: dict[str, list[float]] = field(default_factory=dict)
    row_s: dict[str, list[float]] = field(default_factory=dict)
    first_row_s: dict[str, list[float]] = field(default_factory=dict)  # of each start: the warm-up and a row
    teardown_s: dict[str, list[float]] = field(default_factory=dict)
    _ended: tuple[str, float] | None = None  # the engine and end of the launch whose teardown runs
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.launches = _launches(self.planned)

    def replan(self, planned: dict[int, tuple[str, int]]) -> None:
        """The rows each launch will write, once the run knows them (a launch not named will not start)."""
        with self._lock:
            self.planned, self.launches = planned, _launches(planned)

    def starting(self, index: int, now_s: float) -> None:
        """Launch ``index`` begins a start (a restart too)."""
        with self._lock:
            launch = self._launch(index)
            if self._ended is not None:
                engine, ended_s = self._ended
                self.teardown_s.setdefault(engine, []).append(max(0.0, now_s - ended_s))
                self._ended = None
            launch.begun_at_s, launch.last_event_at_s = now_s, None

    def started(self, index: int, now_s: float) -> None:
        """Launch ``index`` was granted its plan."""
        with self._lock:
            launch = self._launch(index)
            if launch.begun_at_s is not None:
                self.start_s.setdefault(launch.engine, []).append(now_s - launch.begun_at_s)
            launch.begun_at_s, launch.last_event_at_s, launch.rows_since_start = None, now_s, 0

    def row(self, index: int, now_s: float) -> None:
        """Launch ``index`` wrote a row (rows reusing a measurement come at once, and count as rows too)."""
        with self._lock:
            launch = self._launch(index)
            if launch.last_event_at_s is not None:
                times = self.row_s if launch.rows_since_start else self.first_row_s
                times.setdefault(launch.engine, []).append(now_s - launch.last_event_at_s)
                launch.last_event_at_s = now_s
                launch.rows_since_start += 1
            launch.rows_left = max(0, launch.rows_left - 1)

    def stopping(self, index: int, now_s: float) -> None:
        """Launch ``index`` is torn down: its teardown is timed until the next start."""
        with self._lock:
            launch = self._launch(index)
            self._ended = (launch.engine, now_s)
            launch.begun_at_s, launch.last_event_at_s = None, None

    def remaining_s(self, now_s: float) -> float | None:
        """Seconds the run has left (None until a row has been timed)."""
        with self._lock:
            every_row_s = [s for times in self.row_s.values() for s in times]
            every_first_s = [s for times in self.first_row_s.values() for s in times]
            if not every_row_s + every_first_s:
                return None
            row_means, first_means, teardown_means = map(_means, (self.row_s, self.first_row_s, self.teardown_s))
            any_row_s = statistics.fmean(every_row_s or every_first_s)
            every_teardown_s = [s for times in self.teardown_s.values() for s in times]
            any_teardown_s = statistics.fmean(every_teardown_s) if every_teardown_s else 0.0
            total_s = 0.0
            for launch in self.launches.values():
                if launch.rows_left == 0:
                    continue
                each_s = row_means.get(launch.engine, any_row_s)
                rows_s = launch.rows_left * each_s
                if not launch.rows_since_start or launch.last_event_at_s is None:  # its next row is a start's first
                    rows_s += first_means.get(launch.engine, each_s) - each_s
                if launch.last_event_at_s is not None:  # started: the running row has been going a while
                    rows_s = max(0.0, rows_s - (now_s - launch.last_event_at_s))
                teardown_s = teardown_means.get(launch.engine, any_teardown_s)
                total_s += self._start_left_s(launch, now_s) + rows_s + teardown_s
            return total_s

    def _start_left_s(self, launch: _Launch, now_s: float) -> float:
        if launch.last_event_at_s is not None:
            return 0.0
        times = self.start_s.get(launch.engine)
        expected_s = statistics.fmean(times) if times else DEFAULT_START_S.get(launch.engine, UNKNOWN_ENGINE_START_S)
        begun_s = 0.0 if launch.begun_at_s is None else now_s - launch.begun_at_s
        return max(0.0, expected_s - begun_s)

    def _launch(self, index: int) -> _Launch:
        """A launch the plan did not count on (a search strategy's extra start): one more row at least."""
        return self.launches.setdefault(index, _Launch(self.planned.get(index, ("?", 1))[0], 1))
