"""``sweeper check`` on ``manager: yarn``: the configuration, the ResourceManager, the queue, orphans, the nodes.

The nodes are probed from inside YARN: one small application (sweeper.launch.hosts.containers) runs the probe in a
container per NodeManager (the environment the launches would use: the packed archive, or this
interpreter's path), and each container must connect back to the driver's address. YARN places
containers itself; each probe container asks for more than half of the roomiest node's free memory, so
no node holds two and every node gets one. Where the nodes differ too much for such a size (or the queue
is too small), the probes are small and a node YARN gave none is reported, not failed.
"""

from __future__ import annotations

import base64
import contextlib
import shlex
import subprocess
import sys
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sweeper.config.managers import YARN
from sweeper.config.sizing import spark_overhead_mib
from sweeper.launch.base import LaunchError
from sweeper.launch.hosts.containers import AM_MEMORY_MIB, ContainerShape, containers_command, shipped_archive
from sweeper.launch.hosts.hadoop_conf import HadoopConf, HadoopConfError, read_hadoop_conf
from sweeper.launch.hosts.rm_rest import rest
from sweeper.launch.hosts.ssh import MIN_JAVA
from sweeper.launch.hosts.yarn import container_python, driver_address, shipped_environment
from sweeper.launch.hosts.yarn_client import YarnClient, hadoop_lib
from sweeper.launch.options import YarnOptions
from sweeper.launch.spark.driver_am import UNMANAGED_AM, sweeper_runs_in_driver
from sweeper.names import on_spark
from sweeper.planning.plan import Launch
from sweeper.preflight.capacity import capacity_problem, gib, node_capacity, node_needs
from sweeper.preflight.nodes import judge_node
from sweeper.preflight.probe import PROBE, DriverListener
from sweeper.preflight.reach import ResourceManager, resource_managers
from sweeper.preflight.report import Preflight
from sweeper.shapes import counted

PROBE_MEMORY_MIB = 256
DEFAULT_ALLOCATION_STEP_MIB = 1024  # yarn.scheduler.minimum-allocation-mb: requests are rounded up to it
DEFAULT_LARGEST_CONTAINER_MIB = 8192  # yarn.scheduler.maximum-allocation-mb
# the ApplicationMaster each engine asks for (memory + overhead; Spark adds its own overhead to the AM's memory)
AM_MIB = {"spark": AM_MEMORY_MIB + spark_overhead_mib(AM_MEMORY_MIB), "dask": AM_MEMORY_MIB}


def am_mib(engine: str) -> int:
    """The memory of the ApplicationMaster a launch of ``engine`` asks YARN for."""
    return AM_MIB.get(engine, AM_MEMORY_MIB)


def check_yarn(
    options: YarnOptions, launches: list[Launch], kill_orphans: bool = False, spark_conf: Mapping[str, str] = {}
) -> Preflight:
    """Every check of a YARN cluster before a sweep (the grid's ``spark_conf`` says where Spark's
    ApplicationMaster runs); nothing measured."""
    found = Preflight()
    conf = _configuration(found, options)
    am_in_driver = any(on_spark(launch.engine) for launch in launches) and sweeper_runs_in_driver(spark_conf)
    urls = _reachable(found, conf, am_in_driver) if conf is not None else []
    if conf is None or not urls:
        return found
    client = YarnClient(conf)
    try:
        orphans = client.applications("sweeper")
    except LaunchError as error:
        found.add("resource-manager", None, False, str(error))
        return found
    _orphans(found, client, orphans, kill_orphans)
    room_mib = _queue(found, conf, urls, options.queue, launches)
    try:
        listed = rest(conf, "/nodes", urls)["nodes"]["node"]
        nodes = [node for node in listed if node.get("state") == "RUNNING"]
    except (LaunchError, KeyError, TypeError) as error:
        found.add("nodes", None, False, f"cannot list the NodeManagers: {error}")
        return found
    _capacity(found, conf, nodes, launches)
    _nodes(found, conf, client, options, nodes, room_mib)
    return found


def _configuration(found: Preflight, options: YarnOptions) -> HadoopConf | None:
    """The client configuration, checked (None: unusable, and why is in ``found``)."""
    try:
        conf = read_hadoop_conf(options.conf_dir)
    except HadoopConfError as error:
        for problem in error.problems:  # one a line: each file refused, each with its line
            found.add("hadoop-conf", None, False, problem)
        return None
    found.default_fs = conf.default_fs
    with contextlib.suppress(HadoopConfError):
        found.resource_manager = conf.resource_manager_urls()[0]
    problems = conf.problems()
    dirs = ", ".join(map(str, conf.conf_dirs))
    found.add("hadoop-conf", None, not problems, "; ".join(problems) or f"{dirs}: fs.defaultFS {conf.default_fs}")
    if problems:
        return None
    found.add("kerberos", None, True, "hadoop.security.authentication is simple")
    return conf


def _reachable(found: Preflight, conf: HadoopConf, am_in_driver: bool) -> list[str]:
    """The web URLs of the ResourceManagers that accept connections on both ports; each one reported, and where
    Spark's ApplicationMaster runs in the driver (``am_in_driver``) its scheduler address. Where none does, the
    Java client is not started (it would retry every HA id for minutes)."""
    try:
        managers = resource_managers(conf)
    except HadoopConfError as error:
        found.add("resource-manager", None, False, str(error))
        return []
    up = [manager for manager in managers if manager.reachable]
    for manager in managers:
        detail = manager.describe()
        if not manager.reachable and up:
            detail += f" (down or unreachable; {up[0].rm_id} answers)"
        elif not up and manager is managers[-1]:
            detail += "; no ResourceManager reachable: nothing else checked"
        found.add("resource-manager", None, manager.reachable or bool(up), detail)
    for manager in up if am_in_driver else []:
        _scheduler_reachable(found, manager)
    return [manager.web.shown for manager in up]


def _scheduler_reachable(found: Preflight, manager: ResourceManager) -> None:
    """Spark's ApplicationMaster runs in the driver (sweeper/launch/spark/driver_am.py): this machine must reach the
    scheduler address. A warning where it does not: a grid may run it in a container instead."""
    name = f"{manager.rm_id}: " if manager.rm_id else ""
    if manager.scheduler.problem is None:
        found.add("rm-scheduler", None, True, f"{name}scheduler {manager.scheduler.shown} accepts connections")
        return
    found.warn(
        "rm-scheduler",
        None,
        f"{name}{manager.scheduler.problem}: Spark's ApplicationMaster runs in the driver and registers there; "
        f"where this machine cannot reach it, set spark_conf {UNMANAGED_AM}: false (the ApplicationMaster in a "
        "container, its start ~4 s longer)",
    )


def _orphans(found: Preflight, client: YarnClient, orphans: list[Any], kill: bool) -> None:
    if not orphans:
        found.add("orphans", None, True, "no application of an earlier sweep is running")
        return
    listed = ", ".join(f"{app.app_id} {app.name} {app.state}" for app in orphans)
    if kill:
        for app in orphans:
            client.kill(app.app_id)
        found.add("orphans", None, True, f"killed: {listed}")
        return
    found.add("orphans", None, False, f"still running from earlier sweeps: {listed} (sweeper check --kill-orphans)")


def _largest_need_mib(launches: list[Launch]) -> tuple[int, Launch | None]:
    """The most memory one launch holds at once: its containers and its ApplicationMaster."""
    needs = [
        (launch.executors * (launch.executor_memory_mib + launch.memory_overhead_mib) + am_mib(launch.engine), launch)
        for launch in launches if launch.manager == YARN
    ]  # fmt: skip
    return max(needs, key=lambda need: need[0], default=(0, None))


def _find_queue(queues: Any, name: str) -> dict[str, Any] | None:
    for queue in (queues or {}).get("queue", []):
        if queue.get("queueName") == name or queue.get("queuePath") in (name, f"root.{name}"):
            found: dict[str, Any] = queue
            return found
        inner = _find_queue(queue.get("queues"), name)
        if inner is not None:
            return inner
    return None


def _queue(
    found: Preflight, conf: HadoopConf, urls: list[str], queue_name: str | None, launches: list[Launch]
) -> int | None:
    """Check that the largest launch fits the queue; the queue's memory (None: unknown)."""
    name = queue_name or "default"
    try:
        total_mib = int(rest(conf, "/metrics", urls)["clusterMetrics"]["totalMB"])
        scheduler = rest(conf, "/scheduler", urls)["scheduler"]["schedulerInfo"]
    except (LaunchError, KeyError, TypeError, ValueError) as error:
        found.add("queue", None, False, f"cannot read the queue {name}: {error}")
        return None
    queue = _find_queue(scheduler.get("queues"), name) if "queues" in scheduler else None
    share = float(queue["absoluteMaxCapacity"]) / 100 if queue is not None else 1.0
    if queue is None and scheduler.get("type") == "capacityScheduler":
        found.add("queue", None, False, f"no queue {name} in the Capacity Scheduler (cluster.queue)")
        return None
    room_mib = int(total_mib * share)
    need_mib, launch = _largest_need_mib(launches)
    detail = f"queue {name}: {room_mib} MiB at most; the largest launch holds {need_mib} MiB"
    if launch is not None and need_mib > room_mib:
        detail += f" (launch {launch.index}, {launch.engine}: it would wait ACCEPTED for ever)"
    found.add("queue", None, need_mib <= room_mib, detail)
    return room_mib


def _conf_mib(conf: HadoopConf, key: str, default_mib: int) -> int:
    """A positive MiB figure of the configuration, or Hadoop's default where it is unset or not a number."""
    value = (conf.get(key) or "").strip()
    return int(value) if value.isdigit() and int(value) > 0 else default_mib


def probe_memory_mib(free_mib: list[int], step_mib: int, largest_mib: int, room_mib: int | None) -> int:
    """Memory for each probe container so that YARN places one on every node: above half the roomiest node's
    free memory (no node fits two), within the tightest node's free memory less the ApplicationMaster's (each
    fits one), the scheduler's largest container and the queue; PROBE_MEMORY_MIB where no size is."""

    def rounded(mib: int) -> int:  # the scheduler rounds every request up to its step
        return -(-mib // step_mib) * step_mib

    size_mib, am_mib = rounded(max(free_mib) // 2 + 1), rounded(AM_MIB["dask"])  # the probe application's AM
    fits = size_mib <= min(min(free_mib) - am_mib, largest_mib)
    if room_mib is not None:
        fits = fits and len(free_mib) * size_mib + am_mib <= room_mib
    return size_mib if fits else PROBE_MEMORY_MIB


def _probe_command(archive: Path | None, driver: str, port: int) -> str:
    """The container's shell: the probe, run by the environment's Python (YARN unpacked a shipped one), with its
    node's id."""
    script = base64.b64encode(PROBE.encode()).decode()
    python = shlex.quote(container_python(archive))
    # no double quote: the NodeManager runs the command as /bin/bash -c "COMMAND", where one would end the string
    code = "import base64, sys; exec(base64.b64decode(sys.argv.pop(1)))"
    return f"{python} -c '{code}' {script} {driver} {port} $NM_HOST:$NM_PORT"


def _capacity(found: Preflight, conf: HadoopConf, nodes: list[dict[str, Any]], launches: list[Launch]) -> None:
    """Check that every launch's planned nodes fit on the NodeManagers (node by node; the queue's check is a total)."""
    capacities = [capacity for capacity in map(node_capacity, nodes) if capacity is not None]
    if not capacities:
        found.add("node-capacity", None, True, "not checked: the NodeManagers report no capacity")
        return
    step_mib = _conf_mib(conf, "yarn.scheduler.minimum-allocation-mb", DEFAULT_ALLOCATION_STEP_MIB)
    busiest: tuple[int, int] = (0, 0)
    problems = 0
    for launch in (launch for launch in launches if launch.manager == YARN):
        needs = node_needs(launch, am_mib(launch.engine), step_mib)
        problem = capacity_problem(launch, needs, capacities)
        if problem is not None:
            found.add("node-capacity", None, False, problem)
            problems += 1
        busiest = max([busiest, *((need.memory_mib, need.vcores) for need in needs)])
    if not problems:
        largest = max(capacities, key=lambda c: (c.memory_mib, c.vcores))
        found.add("node-capacity", None, True, (
            f"every launch's nodes fit on the NodeManagers: the busiest needs {gib(busiest[0])} and "
            f"{counted(busiest[1], 'vcore')}; the largest ({largest.node}) has {largest.text()}"
        ))  # fmt: skip


def _nodes(
    found: Preflight,
    conf: HadoopConf,
    client: YarnClient,
    options: YarnOptions,
    nodes: list[dict[str, Any]],
    room_mib: int | None,
) -> None:
    """Probe each RUNNING NodeManager from a container of its own."""
    names = [str(node["id"]) for node in nodes]
    found.add("nodes", None, bool(names), f"{len(names)} NodeManagers running: {', '.join(names)}")
    if not names:
        return
    try:
        driver = driver_address(conf)
    except LaunchError as error:
        found.add("driver-address", None, False, str(error))
        return
    from sweeper.launch.dask.yarn import _remove_staged

    name = f"sweeper-check-{uuid.uuid4().hex[:8]}"
    memory_mib = _probe_memory_mib(conf, nodes, room_mib)
    try:
        archive, listener = shipped_environment(options, conf)[0], DriverListener(driver)
    except LaunchError as error:
        found.add("environment", None, False, str(error))
        return
    except OSError as error:
        found.add("driver-address", None, False, f"{driver} cannot be listened on here ({error})")
        return
    found.add("driver-address", None, True, f"{driver} (the containers connect back to it)")
    with listener:
        try:
            shipped, _ = shipped_archive(conf, hadoop_lib(), archive)  # staged once: the sweep then finds it
        except LaunchError as error:
            found.add("environment", None, False, f"cannot stage {archive} on {conf.default_fs}: {error}")
            return
        command = containers_command(
            conf, hadoop_lib(), name, _probe_command(archive, driver, listener.port),
            ContainerShape(len(names), memory_mib, 1), _java_environment(options), archive=shipped, queue=options.queue,
        )  # fmt: skip
        try:
            shell = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300)
        except subprocess.TimeoutExpired:
            client.kill_tagged(name)
            found.add("probe", None, False, "the probe application did not finish within 300 s")
            return
        finally:  # what the application staged under the file system's home: its ApplicationMaster's jar
            _remove_staged(conf, hadoop_lib(), name, Path.cwd())
        deadline = time.monotonic() + 5.0
        while len(listener.reports) < len(names) and time.monotonic() < deadline:
            time.sleep(0.05)
        reports = {str(report.get("node")): report for report in listener.reports}
    _judge_nodes(found, names, reports, shell, driver, archive)
    for node in (node for node in names if "java_major" in reports.get(node, {})):
        _judge_java(found, node, reports[node], options.java_home)


def _probe_memory_mib(conf: HadoopConf, nodes: list[dict[str, Any]], room_mib: int | None) -> int:
    return probe_memory_mib(
        [int(node.get("availMemoryMB", 0)) for node in nodes],
        _conf_mib(conf, "yarn.scheduler.minimum-allocation-mb", DEFAULT_ALLOCATION_STEP_MIB),
        _conf_mib(conf, "yarn.scheduler.maximum-allocation-mb", DEFAULT_LARGEST_CONTAINER_MIB),
        room_mib,
    )


def _java_environment(options: YarnOptions) -> dict[str, str]:
    """What the probe's containers get, as Spark's do: ``JAVA_HOME`` from ``cluster.java_home`` (else the node's)."""
    return {"JAVA_HOME": options.java_home} if options.java_home else {}


def _judge_java(found: Preflight, node: str, report: dict[str, Any], java_home: str | None) -> None:
    """The Java Spark's ApplicationMaster and executors would run on ``node``: 17 or newer."""
    major, java = report.get("java_major"), report.get("java")
    whose = "cluster.java_home" if java_home else "the NodeManager's JAVA_HOME"
    if isinstance(major, int) and major >= MIN_JAVA:
        found.add("java", node, True, f"Java {major} at {java} ({whose})")
        return
    said = f"Java {major}" if isinstance(major, int) else f"no Java ({report.get('java_said', '')})"
    fix = (
        f"install a JDK {MIN_JAVA}+ at {java_home} on this node" if java_home
        else f"set cluster.java_home to a JDK {MIN_JAVA}+ at the same path on every node"
    )  # fmt: skip
    found.add("java", node, False, f"{said} at {java} ({whose}): Spark 4 needs Java {MIN_JAVA}+; {fix}")


def _judge_nodes(
    found: Preflight,
    names: list[str],
    reports: dict[str, Any],
    shell: subprocess.CompletedProcess[str],
    driver: str,
    archive: Path | None,
) -> None:
    """Each NodeManager's probe report judged against the driver (or why there is none)."""
    if shell.returncode != 0 and not reports:
        tail = "\n".join(shell.stderr.strip().splitlines()[-3:])
        found.add("probe", None, False, f"the probe application failed ({shell.returncode}): {tail}")
    fix = (
        "pack the environment again (sweeper pack-env; unset cluster.python_archive to have it packed for you)"
        if archive is not None
        else f"the cluster reads this machine's files ({sys.executable}): is this environment complete?"
    )  # fmt: skip
    one_machine = driver.startswith("127.")  # a cluster on this machine: names resolving to loopback are right
    for node in names:
        if node in reports:
            judge_node(found, node, reports[node], True, fix, local=one_machine)
        elif not reports and shell.returncode == 0:
            detail = f"no probe container reached the driver at {driver}: open its ports to the nodes"
            found.add("driver-reachable", node, False, detail)
        else:
            found.add("probe", node, True, "not probed: YARN placed none of the probe containers there")
