"""Shared fixtures: write grid files, run the CLI in-process and as a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from sweeper.config.grid import Dataset
from sweeper.workload.data import Data, load

REPO = Path(__file__).resolve().parent.parent


def minimal_grid(**overrides: Any) -> dict[str, Any]:
    """A small valid grid; keyword arguments replace top-level sections."""
    grid: dict[str, Any] = {
        "name": "t",
        "cluster": {"manager": "local", "nodes": 1, "cores_per_node": 2, "memory_per_node": "8GiB"},
        "sizing": {"cores_per_executor": [1], "reserve": {"cores": 0, "memory": "1GiB"}, "application_master": 0},
        "engines": ["spark", "dask"],
        "workload": {"dataset": "digits", "epochs": [5], "trials": 1},
    }
    grid.update(overrides)
    return grid


@pytest.fixture(scope="session")
def digits() -> Data:
    """scikit-learn's bundled digits, loaded once for the whole session."""
    return load(Dataset("digits"))


@pytest.fixture
def write_grid(tmp_path: Path) -> Callable[..., Path]:
    """Write a grid (a mapping, or raw YAML text) into tmp_path and return its path."""

    def write(content: dict[str, Any] | str, name: str = "grid.yaml") -> Path:
        path = tmp_path / name
        text = content if isinstance(content, str) else yaml.safe_dump(content, sort_keys=False)
        path.write_text(text)
        return path

    return write


def run_cli(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    """Run the real ``sweeper`` entry point in a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "sweeper", *args], cwd=cwd, capture_output=True, text=True, timeout=300
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    """In CI (``CI=true``) a skipped test fails: a test that skips in CI is a test that does not exist."""
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("CI") == "true" and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"skipped in CI, which must run every test: {report.longrepr}"
