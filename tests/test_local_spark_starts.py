"""A local Spark launch whose executors cannot start fails within a few of their starts, with the executor's own error,
and its executors' directories go with it (``local-cluster``'s workers put them under the installed pyspark), as do
those killed launches left."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest

from sweeper.launch.base import LaunchError
from sweeper.launch.registry import starter
from sweeper.launch.spark.executor_work import STALE_S, ExecutorStarts
from tests.support import launches
from tests.support.leftovers import assert_no_launch_processes


def test_a_launch_removes_what_killed_launches_left_but_not_a_running_or_recent_application(tmp_path: Path) -> None:
    """A sweep killed with SIGKILL never removed its executors' directories; a later launch does, unless an executor
    of that application still runs or it was touched within :data:`STALE_S`."""
    work = tmp_path / "work"
    old_s = os.path.getmtime(tmp_path) - STALE_S - 60
    for name in ("app-killed", "app-running", "app-recent", "app-this", "not-an-app"):
        (work / name / "0").mkdir(parents=True)
        if name != "app-recent":
            os.utime(work / name, (old_s, old_s))
    # stands in for an executor of app-running: what is read is its command line's --app-id
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "--app-id", "app-running"])
    try:
        removed = ExecutorStarts(work / "app-this").remove_left_over()
    finally:
        running.kill()
        running.wait()
    assert removed == ["app-killed"]
    assert sorted(path.name for path in work.iterdir()) == ["app-recent", "app-running", "app-this", "not-an-app"]


@pytest.mark.integration
def test_executors_that_cannot_start_fail_the_launch_with_their_error_and_leave_no_directories(tmp_path: Path) -> None:
    agent = f"/nonexistent/{tmp_path.name}/agent.jar"  # this test's own: its executors' stderr names it
    refused = {"spark.executor.extraJavaOptions": f"-javaagent:{agent}"}
    context = launches.context(tmp_path / "run", start_timeout_s=600, spark_conf=refused)
    launch = launches.launch("spark", executors=2, executor_memory_mib=1024)
    # given up after a few starts, not at the start limit (whose message is "... registered within 600 s")
    gave_up = r"executors kept failing to start \(\d+ started, 0 of 2 registered\)"
    with pytest.raises(LaunchError, match=gave_up) as error, starter("spark", "local")(launch, context):
        pass
    assert f"Error opening zip file or JAR manifest missing : {agent}" in str(error.value)
    work = Path(pyspark.__file__).parent / "work"
    assert not [path for path in work.glob("app-*/*/stderr") if agent in path.read_text(errors="replace")]
    assert_no_launch_processes()
