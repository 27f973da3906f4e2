"""A YARN application's container logs, saved beside the launch's own log when its start or a batch failed.

Without log aggregation (and before it completes) a container's logs stay on its NodeManager, which serves
them over its REST API while it knows the application: ``/ws/v1/node/containers/<id>/logs`` lists a
container's files and ``/ws/v1/node/containerlogs/<id>/<file>?size=-N`` gives their last N bytes, finished
containers included. The ResourceManager names the ApplicationMaster's container (``/appattempts``); the other
containers of the attempt are numbered on from it, so each NodeManager is asked for each number in turn until
:data:`MISSES` numbers in a row are on none of them. Everything goes into one text file, each part headed by
its node, container and file, so the error line can name that file.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from sweeper.launch.base import LaunchError
from sweeper.launch.hosts.rm_rest import rest
from sweeper.launch.hosts.yarn_client import ENDED_STATES, LIVE_STATES, YarnClient

TAIL_BYTES = 64 * 1024  # of each log file
MISSES = 8  # container numbers in a row on no NodeManager: the attempt has no more
REQUEST_TIMEOUT_S = 5.0
_NUMBERED = re.compile(r"^(container_(?:e\d+_)?\d+_\d+_\d+_)(\d+)$")
_EPOCH = re.compile(r"^container_(e\d+_)")


def _save_container_logs(yarn: YarnClient, app_ids: Iterable[str], out: Path) -> Path | None:
    """The logs of every container of ``app_ids`` the NodeManagers still have, written to ``out``; None if none."""
    scheme = yarn.conf.web_scheme
    try:
        nodes = [f"{scheme}://{address}" for address in yarn.node_web_addresses()]
    except LaunchError:
        return None
    parts = []
    for app_id in app_ids:
        for first in _first_containers(yarn, app_id, nodes):
            parts += _attempt_logs(nodes, first)
    if not parts:
        return None
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(parts), errors="replace")
    return out


def _first_containers(yarn: YarnClient, app_id: str, nodes: list[str]) -> list[str]:
    """The first container of each attempt of ``app_id``, from the ResourceManager: its ApplicationMaster's, or
    for an unmanaged attempt container 1 (:func:`_unmanaged_first`)."""
    try:
        found = rest(yarn.conf, f"/apps/{app_id}/appattempts")
    except LaunchError:
        return []
    attempts = _as_list((found.get("appAttempts") or {}).get("appAttempt") if isinstance(found, dict) else None)
    return [
        str(a["containerId"]) if a.get("containerId") else _unmanaged_first(app_id, int(a["id"]), nodes)
        for a in attempts
        if a.get("containerId") or a.get("id")
    ]


def _unmanaged_first(app_id: str, attempt: int, nodes: list[str]) -> str:
    """Container 1 of an attempt with no ApplicationMaster container, as YARN names it (:func:`_epoch`).

    >>> _unmanaged_first("application_1700000000000_0042", 1, [])
    'container_1700000000000_0042_01_000001'
    """
    cluster, number = app_id.removeprefix("application_").split("_")
    return f"container_{_epoch(nodes)}{cluster}_{number}_{attempt:02d}_000001"


def _epoch(nodes: list[str]) -> str:
    """The ResourceManager's epoch in container names (``e<n>_`` once it restarted, else ""), from the first
    NodeManager listing any container."""
    for node in nodes:
        listed = _get(f"{node}/ws/v1/node/containers")
        containers = listed.get("containers") if isinstance(listed, dict) else None
        ids = [str(c.get("id", "")) for c in _as_list((containers or {}).get("container"))]
        if ids:
            epoch = _EPOCH.match(ids[0])
            return epoch.group(1) if epoch else ""
    return ""


def _as_list(value: Any) -> list[Any]:
    """A REST list that Hadoop's JSON gives as one object when it has one element."""
    return value if isinstance(value, list) else [value] if isinstance(value, dict) else []


def _attempt_logs(nodes: list[str], first_container: str) -> list[str]:
    """Every container of one attempt, numbered on from its first (the ApplicationMaster's), as headed log parts."""
    match = _NUMBERED.match(first_container)
    if match is None:
        return []
    prefix, first = match.group(1), int(match.group(2))
    parts: list[str] = []
    number, missed = first, 0
    while missed < MISSES:
        container = f"{prefix}{number:06d}"
        found = [part for node in nodes for part in _container_logs(node, container)]
        parts += found
        missed = 0 if found else missed + 1
        number += 1
    return parts


def _container_logs(node: str, container: str) -> list[str]:
    """The tails of one container's log files on one NodeManager ([] when it has no such container)."""
    listed = _get(f"{node}/ws/v1/node/containers/{container}/logs")
    if listed is None:
        return []
    infos = listed.get("containerLogsInfo") if isinstance(listed, dict) else listed
    names = []
    for entry in _as_list(infos):
        names += [str(f["fileName"]) for f in _as_list(entry.get("containerLogInfo")) if f.get("fileName")]
    host = urllib.parse.urlsplit(node).netloc
    parts = []
    for name in sorted(set(names)):
        text = _get_text(f"{node}/ws/v1/node/containerlogs/{container}/{urllib.parse.quote(name)}?size=-{TAIL_BYTES}")
        parts.append(f"===== {host} {container} {name} (last {TAIL_BYTES // 1024} KiB) =====\n{text or ''}\n")
    return parts


def _get(url: str) -> Any:
    """A JSON GET; None on 404, an unreachable server or anything not JSON."""
    text = _get_text(url, accept="application/json")
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None


def _get_text(url: str, accept: str = "text/plain") -> str | None:
    request = urllib.request.Request(url, headers={"Accept": accept})
    try:
        with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S) as response:
            return str(response.read().decode(errors="replace"))
    except (urllib.error.URLError, OSError, ValueError):
        return None


def save_tagged_logs(yarn: YarnClient, tag: str, out: Path | None) -> Path | None:
    """The container logs of the applications tagged ``tag`` (a launch's), written to ``out``."""
    if out is None:
        return None
    try:
        app_ids = [app.app_id for app in yarn.applications(tag, states=(*LIVE_STATES, *ENDED_STATES))]
    except LaunchError:
        return None
    return _save_container_logs(yarn, app_ids, out)
