"""``sweeper check`` on ``manager: ssh``: every host probed over SSH, and each must reach the driver back."""

from __future__ import annotations

import time

from sweeper.launch.base import LaunchError
from sweeper.launch.hosts.ssh import driver_address, on_hosts, remote_java_major, resolve, run_remote
from sweeper.launch.options import SshCluster
from sweeper.preflight.nodes import judge_node
from sweeper.preflight.probe import PROBE, DriverListener, parse_probe
from sweeper.preflight.report import Preflight

PROBE_TIMEOUT_S = 60.0
FIX_DRIVER = "set cluster.ssh.driver_host to this machine's address as the hosts reach it"


def check_ssh(cluster: SshCluster, spark: bool) -> Preflight:
    """Reachability, the environment, Python, sweeper code, names and the way back on every host; Java for Spark."""
    found = Preflight()
    try:
        driver = driver_address(cluster)
    except LaunchError as error:
        found.add("driver-address", None, False, str(error))
        return found
    try:
        listener = DriverListener(driver)
    except OSError as error:
        found.add("driver-address", None, False, f"{driver} cannot be listened on here ({error}): {FIX_DRIVER}")
        return found
    found.add("driver-address", None, True, f"{driver} (the hosts connect back to it)")
    with listener:
        outcomes = on_hosts(list(cluster.hosts), lambda host: _probe(cluster, host, driver, listener.port))
        deadline = time.monotonic() + 5.0  # a report sent just before the probe printed is read by now
        while len(listener.reports) < sum(1 for o in outcomes if o[1]) and time.monotonic() < deadline:
            time.sleep(0.05)
        reached = {str(report.get("node")) for report in listener.reports}
    for host, (problem, output) in zip(cluster.hosts, outcomes, strict=True):
        if problem is not None:
            found.add("reachable", host, False, problem)
            continue
        found.add("reachable", host, True, f"ssh {cluster.options.describe(host)}")
        local = resolve(host).startswith("127.")
        fix = f"create the sweeper environment at {cluster.python} there (deploy/prepare-host.sh) or set cluster.python"
        report = parse_probe(output or "")
        judge_node(found, host, report, host in reached, fix, local=local, binds_own_name=False)
        if spark:
            try:
                found.add("java", host, True, f"Java {remote_java_major(host, cluster.options, cluster.java)}")
            except LaunchError as error:
                found.add("java", host, False, str(error))
    return found


def _probe(cluster: SshCluster, host: str, driver: str, port: int) -> tuple[str | None, str | None]:
    """(problem, output): the host's probe output, or why it could not run there."""
    try:
        status, out, err = run_remote(
            host, [cluster.python, "-c", PROBE, driver, str(port), host], cluster.options, PROBE_TIMEOUT_S
        )
    except LaunchError as error:
        return str(error), None
    if status in (126, 127):
        return None, ""  # no Python there: judged as a missing environment
    return None, out + err
