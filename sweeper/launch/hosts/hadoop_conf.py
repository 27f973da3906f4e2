"""A Hadoop client configuration, read by Hadoop's own rules.

Where the files are: ``cluster.hadoop_conf_dir`` holds both; otherwise ``yarn-site.xml`` comes from
``YARN_CONF_DIR`` (else ``HADOOP_CONF_DIR``) and ``core-site.xml`` from ``HADOOP_CONF_DIR`` (else
``YARN_CONF_DIR``), as Hadoop's launch scripts put them on a client's classpath. What a value is:
the defaults of ``core-default.xml``/``yarn-default.xml`` that a client needs, then core-site.xml,
then yarn-site.xml (a ``<final>`` property keeps its value), deprecated keys mapped onto their
new names (``fs.default.name`` -> ``fs.defaultFS``), and ``${name}``, ``${env.NAME}``,
``${env.NAME:-default}`` expanded as ``Configuration.substituteVars`` does (at most 20 rounds; an
unknown variable stays as written), and no further than :data:`MAX_EXPANDED_CHARS` (a value that grows
through ``${a}${a}`` stops there, and :meth:`HadoopConf.problems` names it). The ResourceManager's web
addresses follow ``HAUtil``: with ``yarn.resourcemanager.ha.enabled`` one per id of
``yarn.resourcemanager.ha.rm-ids``, each from ``KEY.<id>``, else from ``yarn.resourcemanager.hostname.<id>``
and the default port. Before any file is parsed, every ``*.xml`` of those directories (what the Java client
would read) is scanned (:mod:`sweeper.launch.hosts.hadoop_xml`): a DOCTYPE, an entity, an XInclude, a file
over 4 MiB or one that is not well-formed makes the configuration unreadable (:class:`HadoopConfError`).
"""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ElementTree
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from sweeper.launch.hosts.hadoop_xml import conf_dir_problems

DEFAULTS = {
    "fs.defaultFS": "file:///",
    "hadoop.security.authentication": "simple",
    "yarn.resourcemanager.hostname": "0.0.0.0",
    "yarn.resourcemanager.address": "${yarn.resourcemanager.hostname}:8032",
    "yarn.resourcemanager.scheduler.address": "${yarn.resourcemanager.hostname}:8030",
    "yarn.resourcemanager.webapp.address": "${yarn.resourcemanager.hostname}:8088",
    "yarn.resourcemanager.webapp.https.address": "${yarn.resourcemanager.hostname}:8090",
    "yarn.http.policy": "HTTP_ONLY",
    "yarn.resourcemanager.ha.enabled": "false",
}
DEPRECATED = {"fs.default.name": "fs.defaultFS"}  # Hadoop's DeprecationDelta for the keys read here
RM_RPC_PORT = 8032  # YarnConfiguration.DEFAULT_RM_PORT
RM_SCHEDULER_PORT = 8030  # YarnConfiguration.DEFAULT_RM_SCHEDULER_PORT: where an ApplicationMaster registers
MAX_SUBSTITUTIONS = 20  # Configuration.MAX_SUBST
# No substitution makes a value longer than this: Hadoop's values are a few hundred characters, while a value of
# megabytes substituted into itself (${a}${a}...) grows by its size in each of the 20 rounds, and the check printed it.
MAX_EXPANDED_CHARS = 64 * 1024
VARIABLE = re.compile(r"\$\{[^}$\s]+\}")
HA_KEYS = ("yarn.resourcemanager.address", "yarn.resourcemanager.hostname", "yarn.resourcemanager.webapp.address",
           "yarn.resourcemanager.webapp.https.address")  # fmt: skip


class HadoopConfError(ValueError):
    """The client configuration is missing or cannot be read; ``problems``: each reason (the message joins them)."""

    def __init__(self, *problems: str) -> None:
        super().__init__("; ".join(problems))
        self.problems = list(problems)


@dataclass(frozen=True)
class HadoopConf:
    """The properties a client sees, and the directories they came from."""

    yarn_site_dir: Path
    core_site_dir: Path | None
    raw: Mapping[str, str]
    environment: Mapping[str, str]

    def get(self, key: str) -> str | None:
        """The value with variables expanded, as ``Configuration.get`` returns it (within MAX_EXPANDED_CHARS)."""
        value = self.raw.get(key)
        return None if value is None else self._expand(value)[0]

    def _expand(self, value: str) -> tuple[str, bool]:
        """The value with its variables substituted one at a time, and whether one was left because substituting it
        would make the value longer than MAX_EXPANDED_CHARS."""
        for _ in range(MAX_SUBSTITUTIONS):
            match = VARIABLE.search(value)
            if match is None:
                return value, False
            replacement = self._variable(match.group()[2:-1])
            if replacement is None:
                return value, False  # Hadoop leaves an unresolvable variable as it is
            if len(value) - len(match.group()) + len(replacement) > MAX_EXPANDED_CHARS:
                return value, True
            value = value[: match.start()] + replacement + value[match.end() :]
        return value, False

    def overgrown(self) -> list[str]:
        """The keys sweeper reads whose value would grow past MAX_EXPANDED_CHARS by substitution."""
        keys = [*DEFAULTS, "yarn.resourcemanager.ha.rm-ids"]
        cut = [key for key in keys if key in self.raw and self._expand(self.raw[key])[1]]
        if cut:
            return cut
        ids = self.ha_rm_ids
        return [key for key in (f"{k}.{i}" for i in ids for k in HA_KEYS) if self._expand(self.raw.get(key, ""))[1]]

    def _variable(self, name: str) -> str | None:
        if not name.startswith("env."):
            return self.raw.get(name)
        var, sep, default = name[4:].partition(":-")
        if sep:  # unset or empty -> default
            return self.environment.get(var) or default
        var, sep, default = name[4:].partition("-")
        if sep:  # unset -> default
            return self.environment.get(var, default)
        return self.environment.get(var)

    @property
    def conf_dirs(self) -> list[Path]:
        """The directories a Java client needs on its classpath, yarn-site.xml's first."""
        dirs = [self.yarn_site_dir]
        if self.core_site_dir is not None and self.core_site_dir != self.yarn_site_dir:
            dirs.append(self.core_site_dir)
        return dirs

    @property
    def client_environment(self) -> dict[str, str]:
        """``HADOOP_CONF_DIR`` and ``YARN_CONF_DIR`` for a client process (Spark, sweeper.yarn.Containers)."""
        return {
            "HADOOP_CONF_DIR": str(self.core_site_dir or self.yarn_site_dir),
            "YARN_CONF_DIR": str(self.yarn_site_dir),
        }

    @property
    def default_fs(self) -> str:
        return self.get("fs.defaultFS") or "file:///"

    @property
    def kerberos(self) -> bool:
        return (self.get("hadoop.security.authentication") or "simple").strip().lower() == "kerberos"

    @property
    def ha_rm_ids(self) -> list[str]:
        if (self.get("yarn.resourcemanager.ha.enabled") or "").strip().lower() != "true":
            return []
        return [rm_id.strip() for rm_id in (self.get("yarn.resourcemanager.ha.rm-ids") or "").split(",") if rm_id]

    @property
    def web_scheme(self) -> str:
        """``https`` when YARN's web servers (ResourceManager, NodeManagers) serve HTTPS only, else ``http``."""
        return "https" if (self.get("yarn.http.policy") or "").strip().upper() == "HTTPS_ONLY" else "http"

    def resource_manager_urls(self) -> list[str]:
        """The ResourceManager's web UI/REST base URLs, one per HA id (the active one among them)."""
        scheme = self.web_scheme
        https = scheme == "https"
        key = "yarn.resourcemanager.webapp.https.address" if https else "yarn.resourcemanager.webapp.address"
        port = "8090" if https else "8088"
        rm_ids = self.ha_rm_ids
        if not rm_ids:
            return [f"{scheme}://{self.get(key)}"]
        urls = []
        for rm_id in rm_ids:
            address = self.get(f"{key}.{rm_id}")
            if address is None:
                host = self.get(f"yarn.resourcemanager.hostname.{rm_id}")
                if host is None:
                    raise HadoopConfError(
                        f"{self.yarn_site_dir / 'yarn-site.xml'}: HA id {rm_id} has neither {key}.{rm_id} "
                        f"nor yarn.resourcemanager.hostname.{rm_id}"
                    )
                address = f"{host}:{port}"
            urls.append(f"{scheme}://{address}")
        return urls

    def resource_manager_addresses(self) -> list[str]:
        """The ResourceManager's RPC addresses (``host:port``, what the Java client connects to), one per HA id in
        the order of :meth:`resource_manager_urls`: ``yarn.resourcemanager.address[.<id>]``, else the id's
        ``yarn.resourcemanager.hostname.<id>`` and port 8032, as ``HAUtil`` reads them."""
        rm_ids = self.ha_rm_ids
        if not rm_ids:
            return [self._with_port(self.get("yarn.resourcemanager.address") or "", RM_RPC_PORT)]
        addresses = []
        for rm_id in rm_ids:
            address = self.get(f"yarn.resourcemanager.address.{rm_id}")
            host = self.get(f"yarn.resourcemanager.hostname.{rm_id}")
            if address is None and host is None:
                raise HadoopConfError(
                    f"{self.yarn_site_dir / 'yarn-site.xml'}: HA id {rm_id} has neither "
                    f"yarn.resourcemanager.address.{rm_id} nor yarn.resourcemanager.hostname.{rm_id}"
                )
            addresses.append(self._with_port(address or str(host), RM_RPC_PORT))
        return addresses

    def scheduler_addresses(self) -> list[str]:
        """The ResourceManager's scheduler addresses (where an ApplicationMaster registers and asks for containers:
        Spark's, run by the driver here), one per HA id as :meth:`resource_manager_addresses`; an HA id with neither
        its own scheduler address nor host name gets its RPC address's host."""
        key = "yarn.resourcemanager.scheduler.address"
        rm_ids = self.ha_rm_ids
        if not rm_ids:
            return [self._with_port(self.get(key) or "", RM_SCHEDULER_PORT)]
        return [
            self._with_port(
                self.get(f"{key}.{rm_id}")
                or self.get(f"yarn.resourcemanager.hostname.{rm_id}")
                or rpc.rpartition(":")[0],
                RM_SCHEDULER_PORT,
            )
            for rm_id, rpc in zip(rm_ids, self.resource_manager_addresses(), strict=True)
        ]

    @staticmethod
    def _with_port(address: str, port: int) -> str:
        """``host:port``, the default port where the address names none (as ``NetUtils.createSocketAddr``)."""
        return address if address.rpartition(":")[2].isdigit() else f"{address}:{port}"

    def problems(self) -> list[str]:
        """What makes this configuration unusable for a launch from here, with the fix."""
        cut = self.overgrown()
        if cut:  # nothing else: what the other checks would print is up to MAX_EXPANDED_CHARS long
            return [
                f"substituting ${{...}} variables makes these values longer than {MAX_EXPANDED_CHARS // 1024} KiB "
                "(a value substituted into itself, as ${a}${a}, grows with each round), so they are not: "
                + ", ".join(cut)
            ]
        found = []
        site = self.yarn_site_dir / "yarn-site.xml"
        try:
            urls = self.resource_manager_urls()
        except HadoopConfError as error:
            return [str(error)]
        for url in urls:
            if "${" in url:
                found.append(f"{site}: ResourceManager address {url} has a variable nothing defines")
            elif urlsplit(url).hostname in (None, "0.0.0.0"):
                found.append(f"{site}: no ResourceManager address (set yarn.resourcemanager.hostname)")
        if "${" in self.default_fs:
            found.append(f"core-site.xml: fs.defaultFS {self.default_fs} has a variable nothing defines")
        if self.kerberos:
            found.append(
                "hadoop.security.authentication is kerberos: sweeper does not support Kerberos yet "
                "(its YARN clients would fail to authenticate); run on a cluster with simple authentication"
            )
        return found


def _site_properties(path: Path) -> tuple[dict[str, str], set[str]]:
    """The ``<property>`` name/value pairs of one *-site.xml, and the names marked ``<final>``."""
    try:
        root = ElementTree.parse(path).getroot()
    except (OSError, ElementTree.ParseError) as error:
        raise HadoopConfError(f"{path}: cannot be read as a Hadoop configuration ({error})") from error
    values: dict[str, str] = {}
    final: set[str] = set()
    for prop in root.iter("property"):
        name = (prop.findtext("name") or "").strip()
        if not name:
            continue
        values[name] = (prop.findtext("value") or "").strip()
        if (prop.findtext("final") or "").strip().lower() == "true":
            final.add(name)
    return values, final


def merged(files: list[Path]) -> dict[str, str]:
    """Defaults, then each file in order; a final property keeps its value; deprecated keys renamed."""
    raw = dict(DEFAULTS)
    final: set[str] = set()
    for path in files:
        values, finals = _site_properties(path)
        for name, value in values.items():
            name = DEPRECATED.get(name, name)
            if name not in final:
                raw[name] = value
        final |= {DEPRECATED.get(name, name) for name in finals}
    return raw


def _locate(conf_dir: Path | None, environment: Mapping[str, str]) -> tuple[Path, Path | None]:
    """(directory of yarn-site.xml, directory of core-site.xml or None)."""
    if conf_dir is not None:
        if not (conf_dir / "yarn-site.xml").is_file():
            raise HadoopConfError(f"cluster.hadoop_conf_dir {conf_dir} has no yarn-site.xml")
        return conf_dir, conf_dir if (conf_dir / "core-site.xml").is_file() else None
    dirs = {name: Path(environment[name]) for name in ("YARN_CONF_DIR", "HADOOP_CONF_DIR") if environment.get(name)}
    yarn = next((d for d in dirs.values() if (d / "yarn-site.xml").is_file()), None)
    if yarn is None:
        raise HadoopConfError(
            "manager yarn needs HADOOP_CONF_DIR or YARN_CONF_DIR pointing at a directory with yarn-site.xml"
        )
    core_order = [dirs[name] for name in ("HADOOP_CONF_DIR", "YARN_CONF_DIR") if name in dirs]
    core = next((d for d in core_order if (d / "core-site.xml").is_file()), None)
    return yarn, core


def read_hadoop_conf(conf_dir: Path | None = None, environment: Mapping[str, str] | None = None) -> HadoopConf:
    """The client configuration of ``conf_dir``, else of ``HADOOP_CONF_DIR``/``YARN_CONF_DIR``."""
    env = dict(os.environ if environment is None else environment)
    yarn_dir, core_dir = _locate(conf_dir, env)
    refused = conf_dir_problems([yarn_dir] if core_dir is None else [yarn_dir, core_dir])
    if refused:  # before anything parses them, here or in a Java client
        raise HadoopConfError(*refused)
    files = ([core_dir / "core-site.xml"] if core_dir is not None else []) + [yarn_dir / "yarn-site.xml"]
    return HadoopConf(yarn_site_dir=yarn_dir, core_site_dir=core_dir, raw=merged(files), environment=env)
