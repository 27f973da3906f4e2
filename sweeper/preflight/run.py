"""The checks of a grid's manager: what ``sweeper check`` prints and ``sweeper run`` runs first."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

from sweeper.engines import RAY
from sweeper.launch.base import LaunchError
from sweeper.launch.options import SshCluster, StandaloneOptions, YarnOptions, options_for
from sweeper.names import on_spark
from sweeper.planning.plan import Plan
from sweeper.preflight.report import Preflight
from sweeper.workload.machine_load import busy_machine


def preflight(plan: Plan, kill_orphans: bool = False) -> Preflight:
    """Every check of the plan's cluster; nothing is measured, nothing is left running."""
    from sweeper.launch.spark.conf import require_local_java

    options = options_for(plan.grid)
    spark = any(on_spark(launch.engine) for launch in plan.launches)
    found = Preflight()
    if spark:
        try:
            require_local_java()
            found.add("java", None, True, "Java for the Spark driver found here")
        except LaunchError as error:
            found.add("java", None, False, str(error))
    if isinstance(options, SshCluster):
        from sweeper.preflight.ssh import check_ssh

        _merge(found, check_ssh(options, spark, ray=any(launch.engine == RAY for launch in plan.launches)))
    elif isinstance(options, YarnOptions):
        from sweeper.preflight.yarn import check_yarn

        _merge(found, check_yarn(options, list(plan.launches), kill_orphans))
    elif isinstance(options, StandaloneOptions):
        addresses = {"spark-master": options.spark_master, "dask-scheduler": options.dask_scheduler}
        for kind, url in {**addresses, "ray-head": options.ray_address}.items():
            if url:  # the grid names the address of each engine it lists
                found.add(kind, None, *_reachable(url))
    else:
        found.add("manager", None, True, f"{plan.grid.manager}: everything runs on this machine")
    _check_load(found, plan)
    return found


def _check_load(found: Preflight, plan: Plan) -> None:
    """Warn when this machine, where local launches run and the driver measures, is busy already."""
    limit = plan.grid.workload.interference_limit
    busy = busy_machine(limit)
    if busy is not None:
        found.warn("load", None, busy.warning(limit))
    else:
        found.add("load", None, True, f"this machine is quiet (other processes under {limit:g} of its cores)")


def _merge(into: Preflight, other: Preflight) -> None:
    into.checks += other.checks
    into.resource_manager = other.resource_manager
    into.default_fs = other.default_fs


def _reachable(url: str) -> tuple[bool, str]:
    parts = urlsplit(url if "://" in url else f"//{url}")  # a Ray head's HOST:PORT has no scheme
    try:
        with socket.create_connection((parts.hostname or "", parts.port or 0), timeout=10):
            return True, f"{url} accepts connections"
    except OSError as error:
        return False, f"{url} does not accept connections ({error})"
