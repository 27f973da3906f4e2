"""A local Spark launch whose executors cannot start fails within a few of their starts, with the executor's own error,
and its executors' directories go with it (``local-cluster``'s workers put them under the installed pyspark)."""

from __future__ import annotations

from pathlib import Path

import pyspark
import pytest

from sweeper.launch.base import LaunchError
from sweeper.launch.registry import starter
from tests.support import launches
from tests.support.leftovers import assert_no_launch_processes

pytestmark = pytest.mark.integration


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
