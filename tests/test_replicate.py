"""README "Replicating the report": its grids plan, its script starts, and its grid stays the report's."""

from __future__ import annotations

import json
import subprocess
import sys

import yaml

from tests.conftest import REPO, run_cli


def test_replicate_grid_is_the_report_grid_on_mnist_shaped_data() -> None:
    report = yaml.safe_load((REPO / "grids/2node.yaml").read_text())
    ours = yaml.safe_load((REPO / "grids/replicate.yaml").read_text())
    assert ours["workload"].pop("dataset") == "fashion-mnist"
    assert ours["workload"].pop("trials") == 2
    for key in ("name", "description"):
        ours.pop(key, None)
        report.pop(key, None)
    report["workload"].pop("dataset")
    report["workload"].pop("trials")
    assert ours == report


def test_replicate_grids_plan() -> None:
    ours = run_cli("plan", "grids/replicate.yaml", "--json")
    assert ours.returncode == 0, ours.stderr
    shapes = {
        (o["engine"], o["cores_per_executor"], o["executors"], o["executor_memory_gib"])
        for o in json.loads(ours.stdout)
    }
    assert {("spark", 4, 9, 11), ("dask", 5, 7, 13), ("spark", 6, 5, 19)} <= shapes  # the report's Tables 1-2
    dry = run_cli("plan", "grids/replicate.yaml", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "fashion-mnist" in dry.stdout
    stopping = run_cli("plan", "grids/replicate-stopping.yaml")
    assert stopping.returncode == 0, stopping.stderr


def test_replicate_script_help() -> None:
    for args in ((), ("shipping",), ("single",), ("summary",)):
        done = subprocess.run(
            [sys.executable, "grids/replicate.py", *args, "--help"],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        assert "usage:" in done.stdout


def test_readme_section_names_the_files() -> None:
    readme = (REPO / "README.md").read_text()
    section = readme.split("## Replicating the report", 1)[1].split("\n## ", 1)[0]
    for name in ("grids/replicate.yaml", "grids/replicate-stopping.yaml", "grids/replicate.py"):
        assert name in section
        assert (REPO / name).is_file()
