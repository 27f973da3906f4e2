"""``sweeper check`` on ``manager: ssh``: every host probed over SSH, and each must reach the driver back."""

from __future__ import annotations

import contextlib
import time

from sweeper.launch.base import LaunchError
from sweeper.launch.hosts.ssh import address_towards, on_hosts, remote_java_major, resolve, run_remote
from sweeper.launch.options import SshCluster
from sweeper.launch.ray.remote import check_ray_version
from sweeper.preflight.nodes import judge_node
from sweeper.preflight.probe import PROBE, DriverListener, parse_probe
from sweeper.preflight.report import Preflight

PROBE_TIMEOUT_S = 60.0
FIX_DRIVER = "set cluster.ssh.driver_host to this machine's address as the hosts reach it"


def check_ssh(cluster: SshCluster, spark: bool, ray: bool = False) -> Preflight:
    """Reachability, the environment, Python, sweeper code, names and the way back on every host; Java for Spark,
    Ray's version (the driver's) for Ray.

    Where the driver's address cannot be had (no host resolves, or it is not this machine's), every host is still
    checked, all but the way back."""
    found = Preflight()
    listener = _listener(found, cluster)
    with listener or contextlib.nullcontext():
        port = listener.port if listener is not None else None
        driver = listener.address if listener is not None else None
        outcomes = on_hosts(list(cluster.hosts), lambda host: _probe(cluster, host, driver, port))
        deadline = time.monotonic() + 5.0  # a report sent just before the probe printed is read by now
        while listener and len(listener.reports) < sum(1 for o in outcomes if o[1]) and time.monotonic() < deadline:
            time.sleep(0.05)
        reached = {str(report.get("node")) for report in listener.reports} if listener is not None else None
    for host, (problem, output) in zip(cluster.hosts, outcomes, strict=True):
        if problem is not None:
            found.add("reachable", host, False, problem)
            continue
        found.add("reachable", host, True, f"ssh {cluster.options.describe(host)}")
        local = _resolves_to_loopback(host)
        fix = f"create the sweeper environment at {cluster.python} there (deploy/prepare-host.sh) or set cluster.python"
        report = parse_probe(output or "")
        came_back = None if reached is None else host in reached
        judge_node(found, host, report, came_back, fix, local=local, binds_own_name=False)
        if spark:
            try:
                found.add("java", host, True, f"Java {remote_java_major(host, cluster.options, cluster.java)}")
            except LaunchError as error:
                found.add("java", host, False, str(error))
        no_environment = any(c.check == "environment" and c.node == host and not c.ok for c in found.checks)
        if ray and not no_environment:  # Ray's version is read by the environment's Python: named once, above
            try:
                found.add("ray", host, True, f"Ray {check_ray_version(host, cluster)}, as here")
            except LaunchError as error:
                found.add("ray", host, False, str(error))
    return found


def _listener(found: Preflight, cluster: SshCluster) -> DriverListener | None:
    """The listener on the driver's address the hosts connect back to (None: no address, and why is in ``found``):
    ``driver_host``, else this machine's address towards the first host whose name resolves."""
    driver, problems = cluster.driver_host, []
    for host in [] if driver else cluster.hosts:
        try:
            driver = address_towards(host, cluster.options.port or 22)
            break
        except (LaunchError, OSError) as error:
            problems.append(str(error))
    if not driver:
        found.add("driver-address", None, False, f"no route from here to any host: {'; '.join(problems)}; {FIX_DRIVER}")
        return None
    try:
        listener = DriverListener(driver)
    except OSError as error:
        found.add("driver-address", None, False, f"{driver} cannot be listened on here ({error}): {FIX_DRIVER}")
        return None
    found.add("driver-address", None, True, f"{driver} (the hosts connect back to it)")
    return listener


def _resolves_to_loopback(host: str) -> bool:
    try:
        return resolve(host).startswith("127.")
    except LaunchError:
        return False


def _probe(cluster: SshCluster, host: str, driver: str | None, port: int | None) -> tuple[str | None, str | None]:
    """(problem, output): the host's probe output, or why it could not run there (no ``driver``: no way back tried)."""
    back = [driver, str(port), host] if driver is not None else []
    try:
        status, out, err = run_remote(host, [cluster.python, "-c", PROBE, *back], cluster.options, PROBE_TIMEOUT_S)
    except LaunchError as error:
        return str(error), None
    if status in (126, 127):
        return None, ""  # no Python there: judged as a missing environment
    return None, out + err
