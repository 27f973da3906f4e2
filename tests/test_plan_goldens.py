"""Goldens that a restructure must not move: the committed grids' plans and the measurement keys.

A resumed sweep skips measurements by ``measurement_key``: a key that changed would silently
re-run (or double) every measurement of an existing store. Regenerate the plan goldens only for
an intended change: ``.venv/bin/sweeper plan grids/NAME.yaml --json > tests/fixtures/plans/NAME.json``.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable
from pathlib import Path

import pytest

from sweeper.cli import main
from sweeper.config import load as grid_file
from sweeper.planning.measurements import measurement_key
from sweeper.planning.plan import make_plan
from tests.conftest import REPO, minimal_grid

PLANS = REPO / "tests" / "fixtures" / "plans"


@pytest.mark.parametrize("name", ["local", "2node", "2node-ssh"])
def test_the_committed_grids_plan_as_before(name: str) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main(["plan", str(REPO / "grids" / f"{name}.yaml"), "--json"]) == 0
    assert out.getvalue() == (PLANS / f"{name}.json").read_text()


def test_measurement_keys_are_stable(write_grid: Callable[..., Path]) -> None:
    plan = make_plan(grid_file.load(write_grid(minimal_grid())))
    keys = {
        launch.engine: [measurement_key(plan.grid, plan, launch, point, 0) for point in plan.points[launch.index]]
        for launch in plan.launches
    }
    assert keys == {
        "local": ["2cca5f02278074c5008d"],
        "spark": ["036ac1461879ff07a317"],
        "dask": ["57792b5e7f1326f048ca"],
    }
