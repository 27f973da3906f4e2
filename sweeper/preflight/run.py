"""The checks of a grid's manager: what ``sweeper check`` prints and ``sweeper run`` runs first."""

from __future__ import annotations

from sweeper.config.managers import descriptor, resolve
from sweeper.launch.base import LaunchError
from sweeper.launch.options import options_for
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
    _merge(found, resolve(descriptor(plan.grid.manager).preflight)(options, plan, kill_orphans))
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
