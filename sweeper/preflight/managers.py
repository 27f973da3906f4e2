"""Each cluster manager's preflight, as its descriptor names it (sweeper/config/managers.py): one function per
manager, ``(options, plan, kill_orphans) -> Preflight``, that ``sweeper check`` runs after the driver's own checks."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

from sweeper.engines import RAY
from sweeper.launch.options import ManagerOptions, SshCluster, StandaloneOptions, YarnOptions
from sweeper.names import on_spark
from sweeper.planning.plan import Plan
from sweeper.preflight.report import Preflight


def on_this_machine(options: ManagerOptions, plan: Plan, kill_orphans: bool) -> Preflight:
    """Nothing to reach: the launches run here."""
    found = Preflight()
    found.add("manager", None, True, f"{plan.grid.manager}: everything runs on this machine")
    return found


def ssh(options: ManagerOptions, plan: Plan, kill_orphans: bool) -> Preflight:
    """Every host probed over SSH (:mod:`sweeper.preflight.ssh`)."""
    from sweeper.preflight.ssh import check_ssh

    assert isinstance(options, SshCluster)
    engines = {launch.engine for launch in plan.launches}
    return check_ssh(options, any(on_spark(engine) for engine in engines), ray=RAY in engines)


def yarn(options: ManagerOptions, plan: Plan, kill_orphans: bool) -> Preflight:
    """The ResourceManagers, the NodeManagers against the plan, a probe container (:mod:`sweeper.preflight.yarn`)."""
    from sweeper.preflight.yarn import check_yarn

    assert isinstance(options, YarnOptions)
    return check_yarn(options, list(plan.launches), kill_orphans, dict(plan.grid.spark_conf))


def standalone(options: ManagerOptions, plan: Plan, kill_orphans: bool) -> Preflight:
    """The running cluster of each engine the grid lists accepts connections at its address."""
    assert isinstance(options, StandaloneOptions)
    found = Preflight()
    addresses = {"spark-master": options.spark_master, "dask-scheduler": options.dask_scheduler}
    for kind, url in {**addresses, "ray-head": options.ray_address}.items():
        if url:  # the grid names the address of each engine it lists
            found.add(kind, None, *_reachable(url))
    return found


def _reachable(url: str) -> tuple[bool, str]:
    parts = urlsplit(url if "://" in url else f"//{url}")  # a Ray head's HOST:PORT has no scheme
    try:
        with socket.create_connection((parts.hostname or "", parts.port or 0), timeout=10):
            return True, f"{url} accepts connections"
    except OSError as error:
        return False, f"{url} does not accept connections ({error})"
