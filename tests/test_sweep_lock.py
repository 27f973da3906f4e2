"""One writer per sweep (sweeper/results/lock.py), a stop deferred over a merge (sweeper/run/signals.py), and
a killed run's scratch cleaned by the next (sweeper/run/run_dir.py). The end-to-end cases, with real runs
killed and run twice at once, are in tests/test_reliability.py."""

from __future__ import annotations

import json
import os
import signal
import socket
from pathlib import Path

import pytest

from sweeper.errors import UserError
from sweeper.run.run_dir import ALIVE, clean_killed, run_directory
from sweeper.run.signals import deferred_interrupts
from sweeper.store.lock import LOCK_NAME, SweepBusy, holding


def test_a_held_sweep_refuses_a_second_holder_naming_the_first_and_is_free_after(tmp_path: Path) -> None:
    sweep = tmp_path / "store" / "s"
    with holding(sweep):
        held = json.loads((sweep / LOCK_NAME).read_text())
        assert held["pid"] == os.getpid() and held["host"] == socket.gethostname()
        with pytest.raises(SweepBusy, match=rf"being written by another run: pid {os.getpid()} on "), holding(sweep):
            pass
        assert isinstance(SweepBusy("x"), UserError)  # exit 2, one error line
    assert (sweep / LOCK_NAME).read_text() == ""  # released: emptied, not deleted
    with holding(sweep):
        pass


def test_the_lock_of_a_dead_run_is_taken_over_saying_whose_it_was(tmp_path: Path) -> None:
    sweep = tmp_path / "s"
    sweep.mkdir()
    (sweep / LOCK_NAME).write_text(json.dumps({"pid": 999999, "host": "gone-host", "since": "then", "command": "x"}))
    said: list[str] = []
    with holding(sweep, said.append):
        assert json.loads((sweep / LOCK_NAME).read_text())["pid"] == os.getpid()
    assert len(said) == 1 and "pid 999999 on gone-host" in said[0] and "taking over" in said[0]


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_during_a_deferred_step_lands_right_after_it(stop: signal.Signals) -> None:
    before = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    steps = []
    with pytest.raises(KeyboardInterrupt):
        with deferred_interrupts():
            os.kill(os.getpid(), stop)
            steps.append("after the signal")  # the step goes on to its end
        steps.append("never")
    assert steps == ["after the signal"]
    assert {number: signal.getsignal(number) for number in before} == before  # the handlers are back


def test_a_run_directory_keeps_logs_drops_scratch_and_the_next_run_cleans_a_killed_ones(tmp_path: Path) -> None:
    store = tmp_path / "store"
    with run_directory(store, "run-1") as run_dir:
        (run_dir / "scratch" / "spark-0").mkdir(parents=True)
        (run_dir / "logs").mkdir()
        (run_dir / "logs" / "launch-001-spark.log").write_text("log")
        assert clean_killed(store / ".runs") == []  # alive: left alone
        assert (run_dir / "scratch").is_dir()
    assert sorted(p.name for p in (store / ".runs" / "run-1").iterdir()) == ["logs"]
    # what a run killed with SIGKILL leaves: its scratch and an .alive nobody holds
    killed = store / ".runs" / "run-2"
    (killed / "scratch" / "dask-1").mkdir(parents=True)
    (killed / ALIVE).touch()
    said: list[str] = []
    with run_directory(store, "run-3", said.append):
        assert not killed.exists()  # nothing but scratch was in it
    assert said == ["removed the scratch of 1 run(s) killed before their end: run-2"]
    assert sorted(p.name for p in (store / ".runs").iterdir()) == ["run-1"]
