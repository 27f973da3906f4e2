"""A node's probe report judged against the driver: Python, sweeper code, environment, names, the way back."""

from __future__ import annotations

import sys
from typing import Any

import sweeper
from sweeper.preflight.report import Preflight
from sweeper.source import source_hash


def judge_node(
    found: Preflight,
    node: str,
    report: dict[str, Any] | None,
    reached: bool | None,
    fix_env: str,
    local: bool = False,
    binds_own_name: bool = True,
) -> None:
    """Add the node's checks: ``report`` is what its probe printed (None: it printed nothing); ``reached``: its
    report came back to the driver (None: not tried, the driver has no address); ``local``: the
    node is this machine's loopback, where a name resolving to loopback is right; ``binds_own_name``: a daemon
    of the launches binds the node's own name there (YARN's executors do; over SSH sweeper binds addresses)."""
    if report is None:
        found.add("environment", node, False, f"the probe printed nothing: {fix_env}")
        return
    if "import_error" in report:
        problem = f"{report['executable']} cannot import {report['import_error']}; {fix_env}"
        found.add("environment", node, False, problem)
        return
    found.add("environment", node, True, str(report["executable"]))
    here = f"{sys.version_info[0]}.{sys.version_info[1]}"
    found.add(
        "python", node, report["python"] == here,
        report["python"] if report["python"] == here
        else f"Python {report['python']} there, {here} here: PySpark needs the same minor version everywhere",
    )  # fmt: skip
    same = report.get("sweeper") == sweeper.__version__ and report.get("source") == source_hash()
    detail = f"{report.get('sweeper')}, source {report.get('source')}"
    if not same:
        detail += (
            f" differs from the driver's ({sweeper.__version__}, source {source_hash()}): the node would run "
            f"other fit code; {fix_env}"
        )
    found.add("sweeper", node, same, detail)
    address = str(report.get("hostname_address", ""))
    loopback = address.startswith("127.") and not local
    names = f"{report.get('hostname')} resolves to {address}"
    if loopback and binds_own_name:
        names += (
            " on itself: a daemon binding its own name there listens on loopback only (Spark's executors: the other"
            " nodes' fetches of their blocks are refused, ~15 s of retries each); fix its /etc/hosts"
        )
    elif loopback:
        names += " on itself (harmless here: sweeper binds the address the driver resolves, not this name)"
    found.add("host-name", node, not (loopback and binds_own_name), names)
    if reached is None:
        return
    way_back = "connected back to the driver"
    if not reached:
        way_back = f"{report.get('driver', 'no connection')}: open the driver's ports to the nodes, or set its address"
    found.add("driver-reachable", node, reached, way_back)
