"""Reliability with real faults: worker processes killed mid-fit, a cluster that cannot start, SIGTERM,
two sweeps into one store, loopback-only launches, a damaged store.

Every sweep runs as a real ``python -m sweeper run GRID`` subprocess; its processes carry a tag in
their environment so that the process-table checks only see this test's processes.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd
import psutil
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sweeper import load_results
from sweeper.config import load as grid_file
from sweeper.launch.registry import starter
from sweeper.planning.measurements import pending
from sweeper.planning.plan import make_plan
from sweeper.run import measure, runner
from sweeper.run.signals import EXIT_LAUNCH_FAILED, EXIT_MEASUREMENT_FAILED
from sweeper.store.lock import LOCK_NAME
from sweeper.workload.environment import fit_environment
from tests.conftest import REPO, minimal_grid
from tests.support import launches
from tests.support.faults import (
    LOOPBACK,
    TAG_VARIABLE,
    assert_no_tagged_processes,
    dask_workers,
    descendants,
    kill,
    listening_addresses,
    new_tag,
    part_files,
    spark_executors,
    start_sweep,
    tagged_environment,
    tagged_launch_processes,
    wait_for,
    wait_until_fitting,
    write_grid_file,
)
from tests.support.faults import (
    stop as stop_sweep,
)
from tests.support.stored_rows import write_test_rows
from tests.support.visit_order import seed_in_plan_order

pytestmark = pytest.mark.integration

USER_JAVA_OPTION = "-Dsweeper.test.user.option=kept"  # the grid's spark_conf, merged with the sweeper's options
LONG = 900  # epochs of digits with exact_epochs: a fit of a few CPU-seconds, so a fault lands inside it
SWEEP_TIMEOUT_S = 600


def fault_grid(tmp: Path, name: str, *, epochs: list[int], **overrides: Any) -> Path:
    grid = minimal_grid(name=name, store=str(tmp / "store"), **overrides)
    grid["workload"] = {"dataset": "digits", "epochs": epochs, "trials": 1, "exact_epochs": True}
    return seed_in_plan_order(write_grid_file(tmp / f"{name}.yaml", grid))  # faults are timed by the plan's order


def run_sweep(grid: Path, tag: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m sweeper run GRID`` to the end, tagged."""
    return subprocess.run(
        [sys.executable, "-m", "sweeper", "run", str(grid)],
        cwd=REPO,
        env=env if env is not None else tagged_environment(tag),
        capture_output=True,
        text=True,
        timeout=SWEEP_TIMEOUT_S,
    )


def assert_resumed_without_duplicates(store: Path, sweep: str, expected_ok: int) -> pd.DataFrame:
    """The store reads, every measurement is ``ok`` exactly once."""
    frame = load_results(store, sweep)
    ok = frame[frame["status"] == "ok"]
    assert ok["measurement_key"].is_unique, ok[["engine", "epochs", "measurement_key"]]
    assert len(ok) == expected_ok, frame[["engine", "epochs", "status", "error"]]
    left = [path.name for path in (store / sweep).glob(".*") if path.name != LOCK_NAME]
    assert not left, f"temporary files left in the store: {left}"
    assert not (store / sweep / LOCK_NAME).read_text(), "the sweep's lock still names a run"
    assert not (store / ".scratch").exists()
    return frame


def measurement(frame: pd.DataFrame, engine: str, epochs: int) -> pd.Series:
    rows = frame[(frame["engine"] == engine) & (frame["epochs"] == epochs)]
    assert len(rows) == 1, rows[["engine", "epochs", "status"]]
    return rows.iloc[0]


# --- a Spark executor JVM and a Dask worker killed in the middle of a fit ------------------------------------


@dataclass
class Killed:
    grid: Path
    store: Path
    tag: str
    returncode: int
    output: str
    frame: pd.DataFrame
    victims: dict[str, str]
    sockets: dict[str, list[tuple[int, str, int, str]]]


@pytest.fixture(scope="module")
def killed(tmp_path_factory: pytest.TempPathFactory) -> Killed:
    """One sweep: the baseline (epochs 2), Spark 2 x 1 (2, LONG), Dask 2 x 1 (2, LONG, 3).

    During each engine's LONG batch one worker process gets SIGKILL: an executor JVM (its Python
    workers run the fit), then a Dask worker. Before the kill, the launch's listening sockets are listed.
    The Dask launch has a measurement after the killed one; the Spark launch is followed by the Dask launch.
    """
    tmp = tmp_path_factory.mktemp("killed")
    grid = fault_grid(
        tmp,
        "killed",
        epochs=[2, LONG, 3],
        only=[{"epochs": 2}, {"engine": "spark", "epochs": LONG}, {"engine": "dask"}],
        spark_conf={"spark.executor.extraJavaOptions": USER_JAVA_OPTION},
    )
    sweep_dir = tmp / "store" / "killed"
    tag = new_tag()
    victims: dict[str, str] = {}
    sockets: dict[str, list[tuple[int, str, int, str]]] = {}
    process = start_sweep(grid, tag)
    try:
        # launch 0 is the baseline, 1 Spark, 2 Dask; a launch's first row file means its LONG batch has begun
        for index, engine, find, include_self in (
            (1, "spark", spark_executors, False),
            (2, "dask", dask_workers, True),
        ):
            wait_for(partial(part_files, sweep_dir, index), 300, f"the {engine} launch's first row", process)
            victim = wait_until_fitting(
                partial(find, process.pid), cpu_s=1.0, include_self=include_self, timeout_s=300, alive=process
            )
            sockets[engine] = listening_addresses(process.pid)
            victims[engine] = " ".join(victim.cmdline())
            kill(victim)
        output, _ = process.communicate(timeout=SWEEP_TIMEOUT_S)
    finally:
        stop_sweep(process)
    return Killed(grid, tmp / "store", tag, process.returncode, output, load_results(tmp / "store"), victims, sockets)


def test_a_killed_spark_executor_fails_its_measurement_with_the_error_and_the_sweep_goes_on(killed: Killed) -> None:
    assert killed.returncode == EXIT_MEASUREMENT_FAILED, killed.output
    assert "Summary" in killed.output, killed.output  # the rows are kept and the answer printed all the same
    why = [line for line in killed.output.splitlines() if line.startswith("exit 4: ")]  # stderr is mixed in
    assert len(why) == 1 and why[0].endswith("; see the rows' error column"), killed.output
    assert "CoarseGrainedExecutorBackend" in killed.victims["spark"]
    # the grid's spark.executor.extraJavaOptions reached the executor, and so did the sweeper's (quiet logs, and
    # the compiler a local executor of the spark engine starts with: sweeper/launch/spark/conf.py)
    options = killed.victims["spark"].split()
    assert USER_JAVA_OPTION in options and any(o.startswith("-Dlog4j2.configurationFile=") for o in options)
    assert "-XX:TieredStopAtLevel=1" in options
    row = measurement(killed.frame, "spark", LONG)
    assert row["status"] in ("failed", "timeout"), (row["status"], row["fit_wall_s"])
    assert "ExecutorLostFailure" in row["error"] and "exited" in row["error"], row["error"]
    assert measurement(killed.frame, "spark", 2)["status"] == "ok"
    assert measurement(killed.frame, "local", 2)["status"] == "ok"
    assert set(killed.frame["engine"]) == {"local", "spark", "dask"}  # the next launch ran


def test_a_killed_dask_worker_fails_its_measurement_with_the_error_and_the_sweep_goes_on(killed: Killed) -> None:
    assert killed.returncode == EXIT_MEASUREMENT_FAILED, killed.output
    assert "spawn_main" in killed.victims["dask"]
    row = measurement(killed.frame, "dask", LONG)
    # Dask's scheduler would run the killed worker's fit again elsewhere (allowed-failures: 3) and
    # the row would time a batch that partly ran twice, sequentially, on a shrunken cluster.
    assert row["status"] in ("failed", "timeout"), (
        f"killed worker recorded as {row['status']!r} (fit {row['fit_wall_s']:.1f} s, worker_pids "
        f"{row['worker_pids']}): Dask retried the fit instead of failing the measurement"
    )
    assert row["error_type"] and row["error"], row
    assert measurement(killed.frame, "dask", 2)["status"] == "ok"
    after = measurement(killed.frame, "dask", 3)  # the launch's next measurement
    assert after["status"] == "ok", (after["error_type"], after["error"])


def test_no_process_of_the_killed_launches_survives(killed: Killed) -> None:
    assert_no_tagged_processes(killed.tag)


def test_spark_and_dask_launches_listen_on_loopback_only(killed: Killed) -> None:
    for engine, found in killed.sockets.items():
        assert found, f"no listening socket found during the {engine} launch"
        exposed = [entry for entry in found if entry[1] not in LOOPBACK]
        assert not exposed, f"{engine} listens beyond loopback: {exposed}"
        fixed = [entry for entry in found if entry[2] == 8787]  # Dask's default dashboard port: any free one instead
        assert not fixed, f"{engine} listens on a fixed port: {fixed}"


def test_running_again_after_the_kills_completes_only_the_failed_measurements(killed: Killed) -> None:
    before = load_results(killed.store, "killed")
    failed_keys = set(before.loc[before["status"] != "ok", "measurement_key"])
    again = run_sweep(killed.grid, killed.tag)
    assert again.returncode == 0, again.stdout + again.stderr
    ok_before = int((before["status"] == "ok").sum())
    assert f"{ok_before} measurements already in the store were skipped" in again.stdout, again.stdout
    frame = assert_resumed_without_duplicates(killed.store, "killed", expected_ok=6)
    new = frame[~frame["run_id"].isin(set(before["run_id"]))]
    assert set(new["measurement_key"]) == failed_keys and set(new["status"]) == {"ok"}, new
    assert len(frame) == len(before) + len(failed_keys)
    assert_no_tagged_processes(killed.tag)


# --- a cluster that cannot start: no Java ----------------------------------------------------------------------


def test_without_java_the_spark_launch_fails_naming_the_problem_and_the_others_run(tmp_path: Path) -> None:
    grid = fault_grid(tmp_path, "nojava", epochs=[2])
    tag = new_tag()
    bin_dir = tmp_path / "bin"  # every command of /usr/bin and /usr/local/bin except java
    bin_dir.mkdir()
    for directory in (Path("/usr/local/bin"), Path("/usr/bin")):
        for command in directory.iterdir():
            if command.name != "java" and not (bin_dir / command.name).exists():
                (bin_dir / command.name).symlink_to(command)
    path = f"{Path(sys.executable).parent}{os.pathsep}{bin_dir}"
    result = run_sweep(grid, tag, env=tagged_environment(tag, JAVA_HOME="/nonexistent", PATH=path))
    assert result.returncode == EXIT_LAUNCH_FAILED, result.stdout + result.stderr
    frame = load_results(tmp_path / "store", "nojava")
    assert measurement(frame, "local", 2)["status"] == "ok"
    assert measurement(frame, "dask", 2)["status"] == "ok"
    spark = measurement(frame, "spark", 2)
    assert spark["status"] == "failed"
    assert "java" in spark["error"].lower() and "/nonexistent" in spark["error"], (
        f"the row says {spark['error']!r} but not that JAVA_HOME=/nonexistent has no java"
    )
    assert_no_tagged_processes(tag)
    # with Java back, the same command takes only the Spark measurement
    again = run_sweep(grid, tag)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "2 measurements already in the store were skipped" in again.stdout
    assert_resumed_without_duplicates(tmp_path / "store", "nojava", expected_ok=3)
    assert_no_tagged_processes(tag)


# --- a cluster that cannot start: its port is taken --------------------------------------------------------------


def test_a_taken_driver_port_fails_the_spark_launch_naming_the_port_and_the_others_run(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        grid = fault_grid(
            tmp_path, "porttaken", epochs=[2],
            spark_conf={"spark.driver.port": port, "spark.port.maxRetries": 0},
        )  # fmt: skip
        tag = new_tag()
        result = run_sweep(grid, tag)
    assert result.returncode == EXIT_LAUNCH_FAILED, result.stdout + result.stderr
    assert "Summary" in result.stdout and "3 rows written" in result.stdout, result.stdout  # rows, then the answer
    last = result.stdout.strip().splitlines()[-1]
    assert last == "exit 3: 1 launch did not start, failing 1 measurement; see the rows' error column", last
    frame = load_results(tmp_path / "store", "porttaken")
    assert measurement(frame, "local", 2)["status"] == "ok"
    assert measurement(frame, "dask", 2)["status"] == "ok"
    spark = measurement(frame, "spark", 2)
    assert spark["status"] == "failed"
    assert str(port) in spark["error"] and "bind" in spark["error"].lower(), spark["error"]
    logged = re.search(r"\(logs: (\S+\.log)\)", spark["error"])  # what the launch's JVM wrote, kept
    assert logged and Path(logged.group(1)).is_file() and "/.runs/" in logged.group(1), spark["error"]
    assert_no_tagged_processes(tag)


# --- SIGTERM to the sweeper in the middle of a launch ------------------------------------------------------------


def test_sigterm_mid_launch_tears_down_exits_non_zero_and_a_rerun_completes(tmp_path: Path) -> None:
    grid = fault_grid(tmp_path, "terminated", epochs=[2, LONG], engines=["spark"], baseline=False)
    store = tmp_path / "store"
    tag = new_tag()
    process = start_sweep(grid, tag)
    try:
        wait_for(lambda: part_files(store / "terminated", 0), 300, "the Spark launch's first row", process)
        wait_until_fitting(
            lambda: spark_executors(process.pid), cpu_s=1.0, include_self=False, timeout_s=300, alive=process
        )
        os.kill(process.pid, signal.SIGTERM)
        output, _ = process.communicate(timeout=120)
    finally:
        stop_sweep(process)
    assert process.returncode == 143, output  # 128 + SIGTERM, as a shell reports a process it ended
    assert "interrupted" in output and "Traceback" not in output, output
    assert_no_tagged_processes(tag, wait_s=10)  # torn down before exiting, not later
    kept = load_results(store, "terminated")
    assert kept[["epochs", "status"]].values.tolist() == [[2, "ok"]]
    again = run_sweep(grid, tag)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "1 measurement already in the store was skipped" in again.stdout
    frame = assert_resumed_without_duplicates(store, "terminated", expected_ok=2)
    assert len(frame) == 2
    assert_no_tagged_processes(tag)


# --- Ctrl-C (to the process group, as a terminal sends it) and SIGTERM at any moment --------------------------


def start_in_own_session(grid: Path, tag: str) -> subprocess.Popen[str]:
    """A sweep in a process group of its own, so that a test can signal the group as a terminal does."""
    return subprocess.Popen(
        [sys.executable, "-m", "sweeper", "run", str(grid)], cwd=REPO, env=tagged_environment(tag),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )  # fmt: skip


def stopped(process: subprocess.Popen[str], stop: signal.Signals, to_group: bool) -> tuple[str, float]:
    """Send ``stop`` (to the group or the process); the output and the seconds until the sweep exited."""
    sent = time.monotonic()
    if to_group:
        os.killpg(process.pid, stop)
    else:
        os.kill(process.pid, stop)
    output, _ = process.communicate(timeout=120)
    return output, time.monotonic() - sent


def test_ctrl_c_during_a_dask_batch_tears_down_in_seconds_and_keeps_the_finished_rows(tmp_path: Path) -> None:
    """SIGINT to the process group, as a terminal sends it: the nannies get it too, so nothing waits for workers
    to come back (it took 2 minutes). SIGTERM (143) is tested on a Spark batch above."""
    stop, to_group, status, name = signal.SIGINT, True, 130, "stopped-ctrl-c"
    grid = fault_grid(tmp_path, name, epochs=[2, LONG], engines=["dask"], baseline=False)
    tag = new_tag()
    process = start_in_own_session(grid, tag)
    try:
        wait_for(lambda: part_files(tmp_path / "store" / name, 0), 300, "the Dask launch's first row", process)
        wait_until_fitting(lambda: dask_workers(process.pid), cpu_s=1.0, include_self=True, timeout_s=300,
                           alive=process)  # fmt: skip
        output, took_s = stopped(process, stop, to_group)
    finally:
        stop_sweep(process)
    assert process.returncode == status, output
    assert took_s < 15, f"the sweep took {took_s:.0f} s to stop:\n{output}"
    assert "Traceback" not in output and output.count("interrupted") == 1, output
    kept = load_results(tmp_path / "store", name)
    assert kept[["epochs", "status"]].values.tolist() == [[2, "ok"]]
    assert_no_tagged_processes(tag, wait_s=10)


def test_ctrl_c_during_a_spark_start_tears_down_in_seconds(tmp_path: Path) -> None:
    grid = fault_grid(tmp_path, "stopped-start", epochs=[2], engines=["spark"], baseline=False)
    tag = new_tag()
    process = start_in_own_session(grid, tag)

    def driver_jvm() -> list[psutil.Process]:
        return [child for child in descendants(process.pid) if child.name() == "java"]

    try:
        wait_for(driver_jvm, 120, "Spark's driver JVM", process)
        output, took_s = stopped(process, signal.SIGINT, to_group=True)
    finally:
        stop_sweep(process)
    assert process.returncode == 130, output
    assert took_s < 15, f"the sweep took {took_s:.0f} s to stop:\n{output}"
    assert "Traceback" not in output, output
    assert_no_tagged_processes(tag, wait_s=10)


# --- one writer per sweep ----------------------------------------------------------------------------------------


def lock_holder(store: Path, sweep: str) -> int | None:
    """The PID the sweep's lock file names, if any."""
    try:
        return int(json.loads((store / sweep / LOCK_NAME).read_text())["pid"])
    except (OSError, ValueError, KeyError):
        return None


def test_a_second_run_of_a_sweep_being_written_is_refused_naming_the_first_and_fresh_deletes_nothing(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store"
    grids = []
    for variant, epochs in (("a", [2, 4]), ("b", [3, 5])):  # the same sweep name, different grids
        spec = minimal_grid(name="shared", store=str(store), engines=["dask"])
        spec["workload"] = {"dataset": "digits", "epochs": epochs, "trials": 1}
        grids.append(write_grid_file(tmp_path / f"{variant}.yaml", spec))
    tag = new_tag()
    scratch = tmp_path / "tmpdir"  # the runs' TMPDIR: nothing of theirs may be left there
    scratch.mkdir()
    env = tagged_environment(tag, TMPDIR=str(scratch))
    first = start_sweep(grids[0], tag, env=env)
    try:
        wait_for(lambda: lock_holder(store, "shared") == first.pid, 120, "the first run's lock", first)
        os.kill(first.pid, signal.SIGSTOP)  # it holds the sweep for as long as the others try: no race with its end
        try:
            others = [[str(grids[0])], [str(grids[1])], [str(grids[0]), "--fresh"]]
            tries = [
                subprocess.Popen([sys.executable, "-m", "sweeper", "run", *args], cwd=REPO, env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                for args in others
            ]  # fmt: skip
            refused = [(process.wait(SWEEP_TIMEOUT_S), *process.communicate()) for process in tries]
        finally:
            os.kill(first.pid, signal.SIGCONT)
        output, _ = first.communicate(timeout=SWEEP_TIMEOUT_S)
    finally:
        stop_sweep(first)
    assert first.returncode == 0, output
    for returncode, out, err in refused:
        assert returncode == 2, out + err
        said = " ".join(err.split())  # its lines unwrapped
        assert f"pid {first.pid} on {socket.gethostname()}" in said and "Traceback" not in err, err
    frame = assert_resumed_without_duplicates(store, "shared", expected_ok=2 * 2)  # --fresh deleted nothing
    assert frame.groupby("run_id").size().tolist() == [4]
    # after it, the other grid of the same name runs, and says that it joins another grid's rows
    other = run_sweep(grids[1], tag, env=env)
    assert other.returncode == 0, other.stdout + other.stderr
    assert "holds rows of another grid" in " ".join((other.stdout + other.stderr).split())  # wrapped at 100
    frame = assert_resumed_without_duplicates(store, "shared", expected_ok=8)
    assert sorted(frame["epochs"].unique().tolist()) == [2, 3, 4, 5]
    assert pq.ParquetDataset(store / "shared").read().num_rows == 8  # plain Parquet readers agree
    assert not list(scratch.iterdir())  # no dask-scratch-space or anything else outside the store
    assert_no_tagged_processes(tag)


def test_after_kill_9_the_next_run_takes_the_lock_over_cleans_the_scratch_and_completes(tmp_path: Path) -> None:
    grid = fault_grid(tmp_path, "killed9", epochs=[2, LONG], engines=["dask"], baseline=False)
    store = tmp_path / "store"
    tag = new_tag()
    process = start_sweep(grid, tag)
    try:
        wait_for(lambda: part_files(store / "killed9", 0), 300, "the Dask launch's first row", process)
        killed_run = next((store / ".runs").iterdir()).name
        assert (store / ".runs" / killed_run / "scratch").is_dir()
        process.kill()  # SIGKILL: nothing of sweeper's own runs after this
        process.communicate(timeout=60)
    finally:
        stop_sweep(process)
    assert_no_tagged_processes(tag, wait_s=30)
    assert lock_holder(store, "killed9") == process.pid  # what the killed run left: its name in the lock file
    again = run_sweep(grid, tag)
    assert again.returncode == 0, again.stdout + again.stderr
    said = " ".join((again.stdout + again.stderr).split())  # lines wrap at 100 columns
    assert f"pid {process.pid}" in said and "taking over" in said
    assert f"removed the scratch of 1 run(s) killed before their end: {killed_run}" in said
    assert not (store / ".runs" / killed_run / "scratch").exists()
    assert_resumed_without_duplicates(store, "killed9", expected_ok=2)
    assert_no_tagged_processes(tag)


# --- the baseline listens on nothing beyond loopback either ------------------------------------------------------


def test_the_baseline_launch_listens_on_loopback_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tag = new_tag()
    monkeypatch.setenv(TAG_VARIABLE, tag)
    plan = make_plan(grid_file.load(fault_grid(tmp_path, "listen", epochs=[2], engines=["dask"])))
    launch = plan.launches[0]
    assert launch.engine == "local"
    data = runner.load_data(plan, print)[1.0]
    item = pending(plan, set())[0][0]
    context = launches.context(tmp_path / "run", environment=fit_environment(1, {}))
    with starter(launch.engine, launch.manager)(launch, context) as session:
        session.run_batch(measure.batch_for(plan, item.launch, item.point, item.trial, data, epochs=2), data)
        found = listening_addresses(os.getpid())
    exposed = [entry for entry in found if entry[1] not in LOOPBACK]
    assert not exposed, f"the baseline launch listens beyond loopback: {exposed}"
    assert_no_tagged_processes(tag)


# --- a damaged store: a clear error naming the file, nothing launched -------------------------------------------


def _truncated(directory: Path) -> Path:
    path = write_test_rows(
        directory.parent, directory.name, [{"sweep": directory.name, "status": "ok"}], "part-x-000-0000"
    )
    content = path.read_bytes()
    path.write_bytes(content[: len(content) // 2])
    return path


def _foreign(directory: Path) -> Path:
    path = directory / "part-foreign.parquet"
    pq.write_table(pa.table({"price": [1.5, 2.5]}), path)
    return path


@pytest.mark.parametrize("damage", [_truncated, _foreign], ids=["truncated", "foreign"])
def test_a_damaged_store_file_stops_the_run_with_a_clear_error_naming_it(tmp_path: Path, damage: Any) -> None:
    grid = fault_grid(tmp_path, "damaged", epochs=[2])
    directory = tmp_path / "store" / "damaged"
    directory.mkdir(parents=True)
    bad = damage(directory)
    before = sorted(p.name for p in (tmp_path / "store").rglob("*"))
    tag = new_tag()
    result = run_sweep(grid, tag)
    assert result.returncode == 2, result.stdout + result.stderr
    message = " ".join(result.stderr.split())  # rich wraps long lines
    assert str(bad) in message and "error:" in message, result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    after = sorted(p.name for p in (tmp_path / "store").rglob("*") if p.name != LOCK_NAME)
    assert after == before, "the run wrote to the store"  # but for the sweep's lock, released (empty)
    assert (directory / LOCK_NAME).read_text() == ""
    assert "rows written" not in result.stdout
    assert not tagged_launch_processes(tag)


def test_the_fault_helpers_see_only_tagged_processes() -> None:
    """The process checks above would pass vacuously if the tag did not reach a sweep's processes."""
    tag = new_tag()
    sleeper = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)  # sweeper.launch=fault-check"],
        env=tagged_environment(tag),
    )
    try:
        wait_for(lambda: tagged_launch_processes(tag), 30, "the tagged process to be seen")
        assert not tagged_launch_processes(new_tag())
    finally:
        sleeper.kill()
        sleeper.wait(30)


# --- a full disk ---------------------------------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB file system of its own (tmpfs, mounted here as root, as CI runs): a disk that fills up."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small file system needs root")
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "sweeper-test-disk", str(mount_point)], check=True)
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


def fill(disk: Path, leave_bytes: int) -> None:
    """Fill ``disk`` until at most ``leave_bytes`` are free."""
    with open(disk / "filler", "ab") as filler:
        while (free := os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize) > leave_bytes:
            try:
                filler.write(b"\0" * min(free - leave_bytes, 1 << 16) or b"\0")
                filler.flush()
            except OSError:
                break


def test_a_disk_that_fills_mid_run_gives_one_error_line_and_keeps_every_row_written(
    small_disk: Path, tmp_path: Path
) -> None:
    store = small_disk / "store"
    spec = minimal_grid(name="full", store=str(store), engines=["dask"], baseline=True)
    spec["workload"] = {"dataset": "digits", "epochs": [1], "trials": 40}
    grid = write_grid_file(tmp_path / "full.yaml", spec)
    fill(small_disk, leave_bytes=400 * 1024)  # room for some rows of the 80, not all
    tag = new_tag()
    done = run_sweep(grid, tag)
    assert done.returncode == 2, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.strip()]  # one error, its lines wrapped
    assert errors[0].startswith("error: store ") and all(line.startswith("  ") for line in errors[1:]), errors
    assert "No space left on device" in " ".join(done.stderr.split())
    assert "Traceback" not in done.stdout + done.stderr
    kept = load_results(store, "full")
    assert len(kept) >= 1 and set(kept["status"]) == {"ok"} and kept["measurement_key"].is_unique
    assert not [p.name for p in (store / "full").iterdir() if p.name.endswith(".tmp")]
    assert not (store / ".runs").exists() or not list((store / ".runs").rglob("scratch"))
    assert_no_tagged_processes(tag)
    # no room at all: refused before anything starts, and the probe leaves nothing behind
    fill(small_disk, leave_bytes=0)
    again = run_sweep(grid, tag)
    said = " ".join(again.stderr.split())  # its lines unwrapped
    assert again.returncode == 2 and "cannot create and write the sweep directory" in said, again.stderr
    assert not [p.name for p in (store / "full").iterdir() if p.name.startswith(".probe")]
    assert len(load_results(store, "full")) == len(kept)
