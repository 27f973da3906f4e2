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
import json
import shlex
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

from sweeper.launch.base import LaunchError
from sweeper.launch.hosts.containers import AM_MEMORY_MIB, ContainerShape, containers_command, shipped_archive
from sweeper.launch.hosts.hadoop_conf import HadoopConf, HadoopConfError, read_hadoop_conf
from sweeper.launch.hosts.yarn import container_python, driver_address
from sweeper.launch.hosts.yarn_client import YarnClient, hadoop_lib
from sweeper.launch.options import YarnOptions
from sweeper.planning.plan import Launch
from sweeper.preflight.nodes import judge_node
from sweeper.preflight.probe import PROBE, DriverListener
from sweeper.preflight.report import Preflight

PROBE_MEMORY_MIB = 256
DEFAULT_ALLOCATION_STEP_MIB = 1024  # yarn.scheduler.minimum-allocation-mb: requests are rounded up to it
DEFAULT_LARGEST_CONTAINER_MIB = 8192  # yarn.scheduler.maximum-allocation-mb
AM_MIB = {"spark": 512 + 384, "dask": AM_MEMORY_MIB}  # the ApplicationMaster each engine asks for (memory + overhead)


def check_yarn(options: YarnOptions, launches: list[Launch], kill_orphans: bool = False) -> Preflight:
    """Every check of a YARN cluster before a sweep; nothing measured."""
    found = Preflight()
    try:
        conf = read_hadoop_conf(options.conf_dir)
    except HadoopConfError as error:
        found.add("hadoop-conf", None, False, str(error))
        return found
    found.default_fs = conf.default_fs
    with contextlib.suppress(HadoopConfError):
        found.resource_manager = conf.resource_manager_urls()[0]
    problems = conf.problems()
    dirs = ", ".join(map(str, conf.conf_dirs))
    found.add("hadoop-conf", None, not problems, "; ".join(problems) or f"{dirs}: fs.defaultFS {conf.default_fs}")
    if problems:
        return found
    found.add("kerberos", None, True, "hadoop.security.authentication is simple")
    client = YarnClient(conf)
    try:
        orphans = client.applications("sweeper")
    except LaunchError as error:
        found.add("resource-manager", None, False, f"{error} ({', '.join(conf.resource_manager_urls())})")
        return found
    found.add("resource-manager", None, True, ", ".join(conf.resource_manager_urls()))
    _orphans(found, client, orphans, kill_orphans)
    room_mib = _queue(found, conf, options.queue, launches)
    _nodes(found, conf, client, options, room_mib)
    return found


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


def rest(conf: HadoopConf, path: str) -> Any:
    """A GET of the ResourceManager's REST API, trying each HA address (a standby redirects to the active)."""
    errors = []
    for url in conf.resource_manager_urls():
        request = urllib.request.Request(f"{url}/ws/v1/cluster{path}", headers={"Accept": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return json.load(response)
        except urllib.error.HTTPError as error:
            if error.code in (401, 403):
                raise LaunchError(
                    f"{url}: the ResourceManager's REST API refused the request ({error.code} {error.reason}): "
                    "it needs authentication (Kerberos/SPNEGO or a web filter), which sweeper does not do"
                ) from error
            errors.append(f"{url}: {error.code} {error.reason}")
        except (OSError, ValueError) as error:
            errors.append(f"{url}: {error}")
    raise LaunchError("no ResourceManager answered: " + "; ".join(errors))


def largest_need_mib(launches: list[Launch]) -> tuple[int, Launch | None]:
    """The most memory one launch holds at once: its containers and its ApplicationMaster."""
    needs = [
        (launch.executors * (launch.executor_memory_mib + launch.memory_overhead_mib) + AM_MIB.get(launch.engine, 512),
         launch)
        for launch in launches if launch.manager == "yarn"
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


def _queue(found: Preflight, conf: HadoopConf, queue_name: str | None, launches: list[Launch]) -> int | None:
    """Check that the largest launch fits the queue; the queue's memory (None: unknown)."""
    name = queue_name or "default"
    try:
        total_mib = int(rest(conf, "/metrics")["clusterMetrics"]["totalMB"])
        scheduler = rest(conf, "/scheduler")["scheduler"]["schedulerInfo"]
    except (LaunchError, KeyError, TypeError, ValueError) as error:
        found.add("queue", None, False, f"cannot read the queue {name}: {error}")
        return None
    queue = _find_queue(scheduler.get("queues"), name) if "queues" in scheduler else None
    share = float(queue["absoluteMaxCapacity"]) / 100 if queue is not None else 1.0
    if queue is None and scheduler.get("type") == "capacityScheduler":
        found.add("queue", None, False, f"no queue {name} in the Capacity Scheduler (cluster.queue)")
        return None
    room_mib = int(total_mib * share)
    need_mib, launch = largest_need_mib(launches)
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


def probe_command(archive: Path | None, driver: str, port: int) -> str:
    """The container's shell: the probe, run by the environment's Python (YARN unpacked a shipped one), with its
    node's id."""
    script = base64.b64encode(PROBE.encode()).decode()
    python = shlex.quote(container_python(archive))
    # no double quote: the NodeManager runs the command as /bin/bash -c "COMMAND", where one would end the string
    code = "import base64, sys; exec(base64.b64decode(sys.argv.pop(1)))"
    return f"{python} -c '{code}' {script} {driver} {port} $NM_HOST:$NM_PORT"


def _nodes(found: Preflight, conf: HadoopConf, client: YarnClient, options: YarnOptions, room_mib: int | None) -> None:
    try:
        nodes = [n for n in rest(conf, "/nodes")["nodes"]["node"] if n.get("state") == "RUNNING"]
    except (LaunchError, KeyError, TypeError) as error:
        found.add("nodes", None, False, f"cannot list the NodeManagers: {error}")
        return
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
    memory_mib = probe_memory_mib(
        [int(node.get("availMemoryMB", 0)) for node in nodes],
        _conf_mib(conf, "yarn.scheduler.minimum-allocation-mb", DEFAULT_ALLOCATION_STEP_MIB),
        _conf_mib(conf, "yarn.scheduler.maximum-allocation-mb", DEFAULT_LARGEST_CONTAINER_MIB),
        room_mib,
    )
    archive = options.python_archive
    try:
        listener = DriverListener(driver)
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
            conf, hadoop_lib(), name, probe_command(archive, driver, listener.port),
            ContainerShape(len(names), memory_mib, 1), {}, archive=shipped, queue=options.queue,
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
        "pack the environment again (sweeper pack-env) and set cluster.python_archive" if archive is not None
        else f"install the sweeper environment at {sys.executable} on every node, or ship one (cluster.python_archive)"
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
