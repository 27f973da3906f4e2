"""Spark's YARN ApplicationMaster run by the driver (``spark.yarn.unmanagedAM.enabled``): whether it gave up.

In client mode the ApplicationMaster only asks YARN for the executors' containers and launches them. Run in the
driver's JVM as an unmanaged AM, it needs no container of its own, no JVM to start and no NodeManager heartbeat
to be placed: a later launch on the namespaced cluster started in 10.0-12.1 s instead of 15.2-16.0 s (one busy
machine, alternated: BENCHMARKS.md).
The driver then talks to the ResourceManager's scheduler address (``yarn.resourcemanager.scheduler.address``,
port 8030) as well as its client address.

When its executors keep failing to start, that AM gives up as a container's would, but Spark 4.3's unmanaged AM
neither unregisters nor stops the context: its thread ends and YARN keeps the application RUNNING until its AM
liveness limit (10 minutes). :class:`DriverApplicationMaster` sees the thread end, so that the launch fails then
(stopping the context unregisters the application, with the AM's reason, as FAILED). Spark's client starts the
thread when YARN accepts the application and the thread registers it, which makes it RUNNING, the state the
session waits for: once the session is up, the thread ran, however soon it gave up (executors that fail at once
can end it before the session is made).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

UNMANAGED_AM = "spark.yarn.unmanagedAM.enabled"
AM_THREAD = "Unmanaged Application Master Service"  # Spark's name for the thread that runs it (yarn.Client)
CHECK_EVERY_S = 0.5  # a look at the driver JVM's threads (one call, every thread's stack): not at every poll


class DriverApplicationMaster:
    """Watches the driver's ApplicationMaster thread of a session that is up: :meth:`gave_up` once it ended."""

    def __init__(self, spark: Any) -> None:
        self._threads = spark.sparkContext._jvm.java.lang.Thread
        self._next_look = 0.0

    def gave_up(self) -> bool:
        """Whether the thread has ended (at most one look per ``CHECK_EVERY_S``)."""
        now = time.monotonic()
        if now < self._next_look:
            return False
        self._next_look = now + CHECK_EVERY_S
        # JDK 17 names a thread Thread[name,5,main], JDK 19+ Thread[#id,name,5,main]
        return f"{AM_THREAD}," not in str(self._threads.getAllStackTraces().keySet().toString())


def configured_in_driver(conf: Mapping[str, str]) -> bool:
    """Whether a Spark configuration runs the ApplicationMaster in the driver (the sweeper's default on YARN)."""
    return str(conf.get(UNMANAGED_AM, "false")).strip().lower() == "true"


def sweeper_runs_in_driver(spark_conf: Mapping[str, str]) -> bool:
    """Whether the sweeper's YARN launches run the ApplicationMaster in the driver under a grid's ``spark_conf``.

    >>> sweeper_runs_in_driver({}), sweeper_runs_in_driver({UNMANAGED_AM: "False"})
    (True, False)
    """
    return configured_in_driver({UNMANAGED_AM: "true", **spark_conf})


def runs_in_driver(spark: Any) -> bool:
    """Whether the application's ApplicationMaster runs in the driver."""
    return configured_in_driver({UNMANAGED_AM: spark.sparkContext.getConf().get(UNMANAGED_AM, "false")})
