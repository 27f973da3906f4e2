"""The engine registry and the checks every launch makes, without starting clusters."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from sweeper import engines
from sweeper.cli import main
from sweeper.engines.base import Granted, LaunchError, check_granted
from sweeper.errors import UserError
from tests.conftest import minimal_grid


def test_unknown_engine_lists_the_valid_ones() -> None:
    with pytest.raises(
        UserError, match=r"Invalid engine: 'ray', expected one of \['dask', 'local', 'spark', 'spark-mllib'\]"
    ):
        engines.starter("ray")


def test_a_missing_engine_package_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # Stand-in for an engine whose package is not installed: the registry points at a module that does not exist.
    monkeypatch.setitem(engines.ENGINES, ("dask", "local"), ("sweeper.engines.not_installed", "dask[distributed]"))
    with pytest.raises(UserError, match=r"needs dask\[distributed\].*pip install dask\[distributed\]"):
        engines.starter("dask")


def test_engines_are_imported_lazily() -> None:
    assert callable(engines.starter("local"))


def test_a_grant_other_than_the_plan_fails_the_launch() -> None:
    planned = Granted(executors=7, cores_per_executor=5, executor_memory_mib=13 * 1024)
    check_granted(planned, Granted(7, 5, 13 * 1024), "spark")
    with pytest.raises(LaunchError, match=r"spark granted 6 x 5 cores x 13312 MiB, planned 7 x 5 cores"):
        check_granted(planned, Granted(6, 5, 13 * 1024), "spark")


def test_run_on_a_manager_an_engine_cannot_use_stops_before_anything_starts(
    write_grid: Callable[..., Path],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Stand-in for an engine without YARN support: its registry entry is removed for this test.
    monkeypatch.delitem(engines.ENGINES, ("dask", "yarn"))
    grid = minimal_grid(store=str(tmp_path / "store"))
    grid["cluster"] = {**grid["cluster"], "manager": "yarn"}
    assert main(["run", str(write_grid(grid))]) == 2
    assert "engine 'dask' cannot launch on manager 'yarn' yet" in " ".join(capsys.readouterr().err.split())
    assert not (tmp_path / "store").exists()
