"""What each NodeManager still runs of an application, from the NodeManager's own REST API.

The ResourceManager forgets an application's containers as soon as the application ends; the
NodeManagers kill them afterwards, on their machines. A launch's teardown waits until every
NodeManager has released the application's containers (``/ws/v1/node/apps/<id>``: no container
ids left, or the application unknown there), so ``teardown_s`` holds that time and the next launch
never overlaps containers still dying. A NodeManager whose API does not answer (a firewall, SPNEGO
on a secured cluster) is named once in the log and not waited for.
"""

from __future__ import annotations

import json
import logging
import time
import urllib.error
import urllib.request
from collections.abc import Iterable

from sweeper.launch.base import LaunchError
from sweeper.launch.hosts.yarn_client import YarnClient

REQUEST_TIMEOUT_S = 5.0
POLL_S = 0.3


def containers_left(yarn: YarnClient, app_ids: Iterable[str]) -> dict[str, list[str]]:
    """The containers of ``app_ids`` each NodeManager still holds (NodeManagers holding none left out)."""
    wanted = list(app_ids)
    scheme = yarn.conf.web_scheme
    left: dict[str, list[str]] = {}
    for address in yarn.node_web_addresses():
        held = [c for app_id in wanted for c in _containers(f"{scheme}://{address}/ws/v1/node/apps/{app_id}")]
        if held:
            left[address] = held
    return left


def wait_containers_released(yarn: YarnClient, app_ids: Iterable[str], timeout_s: float = 60.0) -> None:
    """Return once no NodeManager holds a container of ``app_ids``, or warn with what is left at the limit."""
    wanted = list(app_ids)
    if not wanted:
        return
    deadline = time.monotonic() + timeout_s
    try:
        while (left := containers_left(yarn, wanted)) and time.monotonic() < deadline:
            time.sleep(POLL_S)
    except LaunchError as error:  # the node list could not be had: nothing to wait for
        logging.getLogger(__name__).warning("could not list YARN's NodeManagers: %s", error)
        return
    if left:
        logging.getLogger(__name__).warning(
            "after %.0f s, NodeManagers still hold containers of %s: %s", timeout_s, ", ".join(wanted), left
        )


def _containers(url: str) -> list[str]:
    """The container ids one NodeManager lists for one application ([] when it no longer knows it)."""
    try:
        with urllib.request.urlopen(url, timeout=REQUEST_TIMEOUT_S) as response:
            app = json.load(response).get("app") or {}
    except urllib.error.HTTPError as error:
        if error.code != 404:
            _unreachable(url, f"HTTP {error.code}")
        return []
    except (OSError, ValueError) as error:
        _unreachable(url, str(error))
        return []
    ids = app.get("containerids") or []
    return [ids] if isinstance(ids, str) else [str(c) for c in ids]  # one id may come as a bare string


_warned: set[str] = set()


def _unreachable(url: str, reason: str) -> None:
    host = url.split("/")[2]
    if host not in _warned:
        _warned.add(host)
        logging.getLogger(__name__).warning(
            "NodeManager %s did not answer (%s): its containers are not waited for", host, reason
        )
