"""What ``sweeper run`` prints when Ctrl-C stops it, and when the next run resumes it: real processes, one sweep.

The sweep (the baseline, then a Dask launch of 3 measurements) is stopped by SIGINT to its process group, as a
terminal sends it, in the middle of Dask's long batch: the workers get it too and die under the scheduler, which
runs in the sweeper's process and logs so. Then the same command resumes it to the end.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import pytest

from tests.conftest import REPO, minimal_grid
from tests.support.faults import (
    assert_no_tagged_processes,
    dask_workers,
    new_tag,
    part_files,
    tagged_environment,
    wait_for,
    wait_until_fitting,
    write_grid_file,
)
from tests.support.faults import stop as stop_sweep
from tests.support.visit_order import seed_in_plan_order

pytestmark = pytest.mark.integration

LONG = 900  # epochs of digits with exact_epochs: a batch of seconds, so that the stop lands inside it
COLUMNS = 100
ENGINE_LOG = re.compile(r"distributed\.|py4j|log4j| - (ERROR|WARNING|INFO) - |Traceback")


def lines_of(output: str) -> list[str]:
    return output.rstrip("\n").splitlines()


def assert_fits_and_no_engine_logs(output: str) -> None:
    too_wide = [line for line in lines_of(output) if len(line) > COLUMNS]
    assert not too_wide, too_wide
    logged = [line for line in lines_of(output) if ENGINE_LOG.search(line)]
    assert not logged, logged


@pytest.fixture(scope="module")
def stopped_then_resumed(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, int, str, int]:
    """(output, exit status) of the run stopped by Ctrl-C, then of the run that resumed it."""
    tmp = tmp_path_factory.mktemp("ctrl-c")
    # the baseline at epochs 2 only; Dask at 2, LONG and 3; load never judged (a busy machine re-measures none)
    only = [{"epochs": 2}, {"engine": "dask"}]
    grid = minimal_grid(name="cut", store=str(tmp / "store"), engines=["dask"], only=only)
    grid["workload"] = {"dataset": "digits", "epochs": [2, LONG, 3], "trials": 1, "exact_epochs": True,
                        "interference_limit": 100}  # fmt: skip
    path = seed_in_plan_order(write_grid_file(tmp / "cut.yaml", grid))  # Dask takes LONG second, as planned
    tag = new_tag()
    command = [sys.executable, "-m", "sweeper", "run", str(path)]
    process = subprocess.Popen(
        command, cwd=REPO, env=tagged_environment(tag), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        wait_for(lambda: part_files(tmp / "store" / "cut", 1), 300, "the Dask launch's first row", process)
        wait_until_fitting(lambda: dask_workers(process.pid), cpu_s=1.0, include_self=True, timeout_s=300,
                           alive=process)  # fmt: skip
        os.killpg(process.pid, signal.SIGINT)
        stopped, _ = process.communicate(timeout=120)
    finally:
        stop_sweep(process)
    assert_no_tagged_processes(tag, wait_s=10)
    resumed = subprocess.run(command, cwd=REPO, env=tagged_environment(tag), capture_output=True, text=True,
                             timeout=600)  # fmt: skip
    assert_no_tagged_processes(tag)
    return stopped, process.returncode, resumed.stdout + resumed.stderr, resumed.returncode


def test_ctrl_c_prints_one_interrupted_line_then_the_partial_answer_naming_what_was_not_measured(
    stopped_then_resumed: tuple[str, int, str, int],
) -> None:
    output, status, _, _ = stopped_then_resumed
    assert status == 130, output
    lines = lines_of(output)
    assert [line for line in lines if "interrupted" in line] == [
        "interrupted: the running launch was torn down; finished rows are kept"
    ], output
    after = lines[lines.index("interrupted: the running launch was torn down; finished rows are kept") :]
    assert any("Summary of sweep cut: 2 rows, 2 of this run" in line for line in after), output
    assert "Fastest configuration so far (partial: the run was stopped), per epochs value:" in after
    assert any(line.startswith("Overall so far (partial: the run was stopped): ") for line in after), output
    left = after.index("Not measured before the stop (`sweeper run` again takes them):")
    assert after[left + 1] == f"  dask 2 executors x 1 core x 2 GiB at 3, {LONG} epochs: 2 measurements", output


def test_ctrl_c_output_fits_100_columns_and_has_no_engine_log_lines(
    stopped_then_resumed: tuple[str, int, str, int],
) -> None:
    output = stopped_then_resumed[0]
    assert_fits_and_no_engine_logs(output)
    assert "launch 2 of 2: dask 2 executors x 1 core x 2 GiB, 3 measurements: starting 2 workers" in lines_of(output)


def test_the_resumed_run_counts_every_row_of_the_sweep_and_its_answer_is_whole(
    stopped_then_resumed: tuple[str, int, str, int],
) -> None:
    _, _, output, status = stopped_then_resumed
    assert status == 0, output
    lines = lines_of(output)
    assert "2 measurements already in the store were skipped (--fresh starts over)" in lines
    assert "launch 1 of 1: dask 2 executors x 1 core x 2 GiB, 2 measurements: starting 2 workers" in lines
    assert any("Summary of sweep cut: 4 rows, 2 of this run" in line for line in lines), output
    assert not [line for line in lines if "partial" in line or "Not measured before the stop" in line], output
    assert "Fastest configuration, per epochs value:" in lines and "2 rows written to" in output
    assert_fits_and_no_engine_logs(output)
