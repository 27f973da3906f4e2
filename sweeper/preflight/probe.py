"""What a node says about itself, and a listener here that the node must reach (the round trip).

The probe is a standard-library Python script run on the node (over ssh, or in a YARN container) by
the Python the launches would use there. It imports the node's sweeper, pyspark and distributed,
reports its Python, sweeper version and source hash, its Java (``$JAVA_HOME/bin/java``, else ``java``: what
Spark's JVMs there would run), what its own host name resolves to, and sends
that report to the driver's listener at the address the launches would give the node.
"""

from __future__ import annotations

import json
import socket
import threading
from typing import Any

PROBE = r"""
import json, socket, sys
report = {"python": "%d.%d" % sys.version_info[:2], "executable": sys.executable, "hostname": socket.gethostname()}
report["node"] = sys.argv[3] if len(sys.argv) > 3 else report["hostname"]
try:
    report["hostname_address"] = socket.gethostbyname(socket.gethostname())
except OSError as error:
    report["hostname_address"] = "unresolved (%s)" % error
for name in ("sweeper", "sweeper.source", "pyspark", "distributed"):
    try:
        __import__(name)
    except Exception as error:
        report.setdefault("import_error", "%s: %s: %s" % (name, type(error).__name__, error))
if "import_error" not in report:
    import sweeper, sweeper.source
    report["sweeper"] = sweeper.__version__
    report["source"] = sweeper.source.source_hash()
import os, re, subprocess
home = os.environ.get("JAVA_HOME")
report["java"] = os.path.join(home, "bin", "java") if home else "java"
try:
    said = subprocess.run([report["java"], "-version"], capture_output=True, text=True, timeout=60).stderr
    found = re.search(r'version "(\d+)(?:\.(\d+))?', said)
    legacy = found is not None and found.group(1) == "1"  # 1.8.0_392: Java 8
    report["java_major"] = int(found.group(2) or 0 if legacy else found.group(1)) if found else None
    report["java_said"] = (said.strip().splitlines() or [""])[0]
except (OSError, subprocess.SubprocessError) as error:
    report["java_major"], report["java_said"] = None, str(error)
if len(sys.argv) > 2:
    try:
        with socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=15) as back:
            back.sendall(json.dumps(report).encode() + b"\n")
        report["driver"] = "ok"
    except OSError as error:
        report["driver"] = "%s:%s unreachable (%s)" % (sys.argv[1], sys.argv[2], error)
print("SWEEPER-PROBE " + json.dumps(report))
"""


def parse_probe(output: str) -> dict[str, Any] | None:
    """The report in a probe's output, if it printed one."""
    for line in reversed(output.splitlines()):
        if line.startswith("SWEEPER-PROBE "):
            found: dict[str, Any] = json.loads(line.removeprefix("SWEEPER-PROBE "))
            return found
    return None


class DriverListener:
    """A TCP listener on the driver's address (bound at once: OSError if it is not this machine's); it
    collects the reports nodes send back until closed."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.reports: list[dict[str, Any]] = []
        self._server = socket.create_server((address, 0))
        self._server.settimeout(0.5)
        self.port: int = self._server.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="sweeper-check-listener", daemon=True)
        self._thread.start()

    def __enter__(self) -> DriverListener:
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        self._server.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with connection:
                connection.settimeout(15)
                data = b""
                try:
                    while not data.endswith(b"\n"):
                        chunk = connection.recv(65536)
                        if not chunk:
                            break
                        data += chunk
                    self.reports.append(json.loads(data))
                except (OSError, ValueError):
                    continue
