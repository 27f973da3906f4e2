"""YARN's own command-line client (``yarn application``), run from Hadoop's jars.

Killing applications goes through ``org.apache.hadoop.yarn.client.cli.ApplicationCLI`` on the client
configuration's directories: Hadoop itself then resolves the ResourceManager (variables, HA ids with failover, its
RPC address and security), where a hand-written REST client would miss cases. Listing them, which every YARN
launch does at its start and end (and polls while one ends), asks the ResourceManager's REST API first: an answer
in milliseconds instead of a JVM's start (1-2 CPU-seconds each; a YARN launch's teardown listed two to four times).
Where that API cannot answer (it needs Kerberos/SPNEGO, a web filter refuses, its port is unreachable), the listing
goes through the CLI for the next five minutes on that configuration, then REST is asked again. Each application of
a sweep carries tags (``spark.yarn.tags``, sweeper.yarn.Containers' ``-application_tags``), so its applications are
found again by tag, also after the driver died.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from sweeper.launch.base import LaunchError
from sweeper.launch.hosts.hadoop_conf import HadoopConf, HadoopConfError
from sweeper.launch.hosts.rm_rest import rest

APPLICATION_CLI = "org.apache.hadoop.yarn.client.cli.ApplicationCLI"
NODE_CLI = "org.apache.hadoop.yarn.client.cli.NodeCLI"
LIVE_STATES = ("NEW", "NEW_SAVING", "SUBMITTED", "ACCEPTED", "RUNNING")
ENDED_STATES = ("FINISHED", "FAILED", "KILLED")  # a start that failed often ends its application first
ROW = re.compile(r"^\s*(application_\d+_\d+)\t")
NODE_ROW = re.compile(r"^\s*(\S+:\d+)\t\s*([A-Z_]+)\t\s*(\S+:\d+)\t")  # Node-Id, Node-State, Node-Http-Address
_NODE_WEB_ADDRESSES: dict[tuple[str, ...], list[str]] = {}  # by client configuration directories
# client configuration -> when (time.monotonic) its REST API last could not list applications: the CLI lists for
# REST_RETRY_S after that, then REST is asked again (a failure may pass: a ResourceManager restarting, a failover)
_REST_UNANSWERED: dict[tuple[str, ...], float] = {}
REST_RETRY_S = 300.0
# Hadoop's clients here only wait on RPCs: without the optimizing compiler, `FsShell -ls` of a local directory ran
# in 0.34-0.38 s instead of 0.47-0.54 s (3 runs each, alternated)
CLIENT_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1"
SWEEPER_JAR = "sweeper-yarn.jar"  # deploy/yarn's own classes: the Containers client and its ApplicationMaster
REPO_LIB = Path(__file__).resolve().parents[3] / "deploy" / "yarn" / "target" / "lib"


def hadoop_lib() -> Path:
    """The directory of Hadoop's client jars (``deploy/yarn``, built by make setup; or ``SWEEPER_YARN_LIB``)."""
    lib = Path(os.environ.get("SWEEPER_YARN_LIB", REPO_LIB))
    if not any(lib.glob("hadoop-yarn-client-*.jar")) or not (lib / SWEEPER_JAR).is_file():
        raise LaunchError(
            f"manager yarn needs Hadoop's client jars and {SWEEPER_JAR} in {lib}: "
            "run mvn -q -f deploy/yarn/pom.xml package (make setup) or set SWEEPER_YARN_LIB"
        )
    return lib


def java() -> str:
    """The ``java`` of ``JAVA_HOME``, else the one on ``PATH``."""
    name = str(Path(os.environ["JAVA_HOME"]) / "bin" / "java") if "JAVA_HOME" in os.environ else "java"
    return shutil.which(name) or name


def hadoop_java(conf: HadoopConf, lib: Path, main_class: str, heap_mib: int = 256) -> list[str]:
    """A JVM with the client configuration and Hadoop's jars on its classpath, running ``main_class``.

    sweeper's own jar comes before the others: its log4j.properties (warnings, to stderr) wins over the ones
    in Hadoop's jars, so a client's stdout holds only what it prints.
    """
    classpath = os.pathsep.join([*map(str, conf.conf_dirs), str(lib / SWEEPER_JAR), str(lib / "*")])
    return [java(), f"-Xmx{heap_mib}m", CLIENT_JAVA_OPTIONS, "-cp", classpath, main_class]


@dataclass(frozen=True)
class Application:
    """One row of ``yarn application -list``."""

    app_id: str
    name: str
    state: str


class YarnClient:
    """The configuration's ResourceManager: applications listed by its REST API (else ``yarn application -list``),
    killed by ``yarn application -kill``; its NodeManagers by ``yarn node -list``."""

    def __init__(self, conf: HadoopConf, lib: Path | None = None, timeout_s: float = 120.0) -> None:
        self.conf = conf
        self.lib = lib or hadoop_lib()
        self.timeout_s = timeout_s

    def conf_key(self) -> tuple[str, ...]:
        """The client configuration's directories: what this process remembers of a ResourceManager is kept by."""
        return tuple(str(path) for path in self.conf.conf_dirs)

    def _run(self, *arguments: str, main_class: str = APPLICATION_CLI) -> str:
        title = ["application"] if main_class == APPLICATION_CLI else []
        command = [*hadoop_java(self.conf, self.lib, main_class, heap_mib=128), *title, *arguments]
        try:
            done = subprocess.run(
                command, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=self.timeout_s, check=False
            )
        except subprocess.TimeoutExpired as error:
            raise LaunchError(
                f"yarn {' '.join(title or ['node'])} {' '.join(arguments)}: no answer from the ResourceManager within "
                f"{self.timeout_s:.0f} s (RPC {', '.join(self.conf.resource_manager_addresses())})"
            ) from error
        if done.returncode != 0:
            tail = "\n".join(line for line in done.stderr.splitlines() if "Exception" in line or "ERROR" in line)
            raise LaunchError(
                f"yarn {' '.join(title or ['node'])} {' '.join(arguments)} failed ({done.returncode}): {tail[-1500:]}"
            )
        return done.stdout

    def applications(self, tag: str, states: tuple[str, ...] = LIVE_STATES) -> list[Application]:
        """The applications carrying ``tag`` in one of ``states``: from the REST API, else from the CLI."""
        key = self.conf_key()
        failed_at = _REST_UNANSWERED.get(key)
        if failed_at is None or time.monotonic() - failed_at >= REST_RETRY_S:
            try:
                listed = self._listed_by_rest(tag, states)
            except (LaunchError, HadoopConfError):  # HadoopConfError: no web address the configuration resolves
                _REST_UNANSWERED[key] = time.monotonic()
            else:
                _REST_UNANSWERED.pop(key, None)
                return listed
        output = self._run("-list", "-appTags", tag.lower(), "-appStates", ",".join(states))
        found = []
        for line in output.splitlines():
            if ROW.match(line):
                fields = [field.strip() for field in line.split("\t")]
                found.append(Application(app_id=fields[0], name=fields[1], state=fields[5]))
        return found

    def _listed_by_rest(self, tag: str, states: tuple[str, ...]) -> list[Application]:
        """``GET /apps`` by tag and states (YARN keeps tags in lower case, as ``-appTags`` asks)."""
        query = urllib.parse.urlencode({"applicationTags": tag.lower(), "states": ",".join(states)})
        try:
            listed = (rest(self.conf, f"/apps?{query}")["apps"] or {}).get("app", [])
            return [Application(app_id=app["id"], name=app["name"], state=app["state"]) for app in listed]
        except (KeyError, TypeError, AttributeError) as error:
            raise LaunchError(
                f"the ResourceManager's REST API answered /apps with no list of applications: {error}"
            ) from None

    def node_web_addresses(self) -> list[str]:
        """Each running NodeManager's web address (``host:port`` of its REST API), asked once per sweep
        and configuration (a JVM start each time would add a second or two to every launch's teardown)."""
        key = self.conf_key()
        if key not in _NODE_WEB_ADDRESSES:
            output = self._run("-list", main_class=NODE_CLI)
            rows = (NODE_ROW.match(line) for line in output.splitlines())
            _NODE_WEB_ADDRESSES[key] = [row.group(3) for row in rows if row is not None]
        return _NODE_WEB_ADDRESSES[key]

    def ended_why(self, app_id: str) -> str:
        """What YARN says of an application that ended: ``FAILED: <its diagnostics' first line>``; or why it cannot."""
        try:
            output = self._run("-status", app_id)
        except LaunchError as error:
            return f"YARN's report of it could not be read: {error}"
        fields = {}
        for line in output.splitlines():
            key, colon, value = line.strip().partition(" : ")
            if colon and key not in fields:
                fields[key] = value.strip()
        return f"{fields.get('Final-State', 'UNDEFINED')}: {fields.get('Diagnostics') or 'no diagnostics'}"

    def kill(self, app_id: str) -> None:
        self._run("-kill", app_id)

    def kill_tagged(self, tag: str) -> list[str]:
        """Kill every live application carrying ``tag``; the ids killed."""
        killed = []
        for application in self.applications(tag):
            self.kill(application.app_id)
            killed.append(application.app_id)
        return killed
