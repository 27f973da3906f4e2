"""Whether a ResourceManager answers at all, known in seconds: each of its addresses resolved, then a TCP connect to
its RPC port (where the Java client goes), its web port (the REST API the checks read) and its scheduler port
(where Spark's ApplicationMaster, run by the driver, registers).

Every address is tried at once, each within its own bounds (a name service that does not answer, a port that drops
packets), so that a cluster with no ResourceManager up is reported in ~10 s instead of the minutes the Java client
spends retrying every HA id.
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from sweeper.launch.hosts.hadoop_conf import RM_RPC_PORT, RM_SCHEDULER_PORT, HadoopConf

RESOLVE_TIMEOUT_S = 5.0
CONNECT_TIMEOUT_S = 5.0


@dataclass
class Endpoint:
    """One address of a ResourceManager, and what resolving and connecting to it did (once :meth:`settle` ran)."""

    role: str  # "RPC", "web" or "scheduler"
    shown: str  # as the configuration names it: host:port, or the web URL
    host: str
    port: int
    unresolved: bool = False  # the name does not resolve (or the name service did not answer)
    problem: str | None = "not tried"  # None: it accepted a connection
    _resolved: bool = False  # written by the attempt's thread only, like _outcome
    _outcome: tuple[bool, str | None] | None = None
    _done: threading.Event = field(default_factory=threading.Event)

    def attempt(self) -> None:
        """Resolve the host, then connect within CONNECT_TIMEOUT_S (run in a thread of its own)."""
        try:
            socket.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError, ValueError) as error:
            reason = getattr(error, "strerror", None) or error
            self._outcome = (True, f"{self.host}: name does not resolve ({reason})")
            self._done.set()
            return
        self._resolved = True
        try:
            with socket.create_connection((self.host, self.port), timeout=CONNECT_TIMEOUT_S):
                self._outcome = (False, None)
        except ConnectionRefusedError:
            self._outcome = (False, f"{self.role} {self.shown} refused the connection")
        except TimeoutError:
            self._outcome = (False, f"{self.role} {self.shown}: no answer within {CONNECT_TIMEOUT_S:.0f} s (timed out)")
        except (OSError, OverflowError) as error:
            self._outcome = (False, f"{self.role} {self.shown}: {getattr(error, 'strerror', None) or error}")
        self._done.set()

    def settle(self, timeout_s: float, waited_s: float) -> None:
        """Wait up to ``timeout_s`` for the attempt; an attempt still running then (``waited_s`` after it began) is
        reported as such."""
        outcome = self._outcome if self._done.wait(max(0.0, timeout_s)) else None
        if outcome is None and not self._resolved:
            outcome = (True, f"{self.host}: the name service did not answer within {waited_s:.0f} s")
        elif outcome is None:
            outcome = (False, f"{self.role} {self.shown}: no answer within {CONNECT_TIMEOUT_S:.0f} s (timed out)")
        self.unresolved, self.problem = outcome


@dataclass(frozen=True)
class ResourceManager:
    """One ResourceManager (one HA id, or the only one) and its addresses."""

    rm_id: str | None
    rpc: Endpoint
    web: Endpoint
    scheduler: Endpoint  # not in :attr:`reachable`: only an ApplicationMaster outside a container needs it

    @property
    def reachable(self) -> bool:
        return self.rpc.problem is None and self.web.problem is None

    def describe(self) -> str:
        """Each address named once: what failed, or that both accept connections."""
        name = f"{self.rm_id}: " if self.rm_id else ""
        if self.reachable:
            return f"{name}RPC {self.rpc.shown} and web {self.web.shown} accept connections"
        if self.rpc.host == self.web.host and self.rpc.unresolved and self.web.unresolved:
            return f"{name}{self.rpc.problem}: RPC {self.rpc.shown} and web {self.web.shown} not tried"
        return name + "; ".join(
            endpoint.problem or f"{endpoint.role} {endpoint.shown} accepts connections"
            for endpoint in (self.rpc, self.web)
        )


def _endpoint(role: str, shown: str, address: str, default_port: int) -> Endpoint:
    parts = urlsplit(address if "//" in address else f"//{address}")
    try:
        port = parts.port or default_port
    except ValueError:  # out of range: a connection to it is refused
        port = 0
    return Endpoint(role, shown, parts.hostname or "", port)


def _web_port(url: str) -> int:
    """The web UI's default port (yarn-default.xml) for a URL that names none."""
    return 8090 if url.startswith("https:") else 8088


def resource_managers(conf: HadoopConf) -> list[ResourceManager]:
    """Every ResourceManager of the configuration, each address tried at once; back within
    RESOLVE_TIMEOUT_S + CONNECT_TIMEOUT_S (an attempt still running then is reported as such and left behind)."""
    rm_ids: list[str | None] = list(conf.ha_rm_ids) or [None]
    addresses = zip(
        rm_ids, conf.resource_manager_addresses(), conf.resource_manager_urls(), conf.scheduler_addresses(), strict=True
    )
    found = [
        ResourceManager(
            rm_id,
            _endpoint("RPC", rpc, rpc, RM_RPC_PORT),
            _endpoint("web", url, url, _web_port(url)),
            _endpoint("scheduler", scheduler, scheduler, RM_SCHEDULER_PORT),
        )
        for rm_id, rpc, url, scheduler in addresses
    ]
    endpoints = [endpoint for rm in found for endpoint in (rm.rpc, rm.web, rm.scheduler)]
    for endpoint in endpoints:  # daemon threads: a lookup the resolver never answers does not hold the exit
        threading.Thread(target=endpoint.attempt, name="sweeper-check-rm", daemon=True).start()
    budget_s = RESOLVE_TIMEOUT_S + CONNECT_TIMEOUT_S
    deadline = time.monotonic() + budget_s
    for endpoint in endpoints:
        endpoint.settle(deadline - time.monotonic(), budget_s)
    return found
