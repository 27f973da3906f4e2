"""Hadoop configuration that would make Hadoop's Java client reach out is refused before any Java reads it (#39).

A DOCTYPE (its DTD and entities), an XInclude, in any ``*.xml`` of the configuration directories; files over
the size limit; values that grow without end through ``${a}${a}``. The command-line tests point a YARN grid
at a planted directory whose hostile file names a local HTTP listener: ``sweeper check`` and ``sweeper run``
must refuse it naming file and line, fast, and the listener must hear nothing (no Java client was started).
"""

from __future__ import annotations

import http.server
import json
import os
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as parquet
import pytest
import yaml

from sweeper.launch.hosts.hadoop_conf import MAX_EXPANDED_CHARS, HadoopConfError, read_hadoop_conf
from sweeper.launch.hosts.hadoop_xml import MAX_FILE_BYTES, conf_dir_problems, file_problem
from tests.conftest import minimal_grid, run_cli
from tests.support.hadoop_sites import site

DOCTYPE = "a DOCTYPE is not allowed in Hadoop configuration (Hadoop's Java client would fetch its DTD and entities)"
XINCLUDE = "an XInclude (<include>) is not allowed in Hadoop configuration"
CONSTRUCTS = ["doctype", "internal-entities", "include", "xinclude-namespace", "include-other-namespace",
              "undefined-entity", "unknown-encoding", "not-well-formed"]  # fmt: skip
CLI_SECONDS = 60  # sweeper's start and its checks take a few seconds; a Java client's start and retries far more


class Listener(http.server.ThreadingHTTPServer):
    """A local HTTP server that answers nothing useful and remembers every connection made to it."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Recording)
        self.heard: list[str] = []

    def verify_request(self, request: Any, client_address: Any) -> bool:
        self.heard.append(f"connection from {client_address}")
        return True

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.server_address[1]}"


class Recording(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        assert isinstance(self.server, Listener)
        self.server.heard.append(f"GET {self.path}")
        self.send_response(404)
        self.end_headers()

    def log_message(self, *_: Any) -> None:
        return


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def rm_at(address: str) -> dict[str, str]:
    """A ResourceManager whose RPC and web addresses are ``address`` (what a check would connect to first)."""
    return {"yarn.resourcemanager.address": address, "yarn.resourcemanager.webapp.address": address}


def hostile(address: str) -> dict[str, tuple[str, str, str]]:
    """Per case: (file, its text, the problem ``sweeper check`` must name); each points at ``address``."""
    rm = "".join(
        f"<property><name>{key}</name><value>{value}</value></property>" for key, value in rm_at(address).items()
    )
    return {
        "doctype-parameter-entity": ("yarn-site.xml", (
            '<?xml version="1.0"?>\n'
            f'<!DOCTYPE configuration [<!ENTITY % p SYSTEM "http://{address}/x.dtd"> %p;]>\n'
            f"<configuration>{rm}</configuration>\n"
        ), f"yarn-site.xml:2: {DOCTYPE}"),
        "resource-types-dtd": ("resource-types.xml", (
            f'<?xml version="1.0"?>\n<!DOCTYPE configuration SYSTEM "http://{address}/r.dtd">\n<configuration/>\n'
        ), f"resource-types.xml:2: {DOCTYPE}"),
        "xinclude": ("yarn-site.xml", (
            '<?xml version="1.0"?>\n<configuration xmlns:xi="http://www.w3.org/2001/XInclude">\n'
            f'  <xi:include href="http://{address}/another-rm.xml"/>\n  {rm}\n</configuration>\n'
        ), f"yarn-site.xml:3: {XINCLUDE}"),
    }  # fmt: skip


def conf_dir(tmp_path: Path, files: dict[str, str], rm_address: str = "127.0.0.1:1") -> Path:
    """A client configuration with its ResourceManager at ``rm_address``, then ``files`` written over it."""
    directory = site(tmp_path / f"conf-{uuid.uuid4().hex[:6]}", "yarn-site.xml", rm_at(rm_address))
    site(directory, "core-site.xml", {"fs.defaultFS": "file:///"})
    for name, text in files.items():
        (directory / name).write_text(text)
    return directory


def yarn_grid(tmp_path: Path, directory: Path) -> Path:
    grid = minimal_grid(
        name="hostile",
        cluster={"manager": "yarn", "nodes": 2, "cores_per_node": 2, "memory_per_node": "3GiB",
                 "hadoop_conf_dir": str(directory)},
        sizing={"cores_per_executor": [1], "reserve": {"cores": 1, "memory": "1GiB"}, "application_master": 0},
    )  # fmt: skip
    path = tmp_path / f"grid-{uuid.uuid4().hex[:6]}.yaml"
    path.write_text(yaml.safe_dump(grid, sort_keys=False))
    return path


def timed_cli(*args: str) -> tuple[Any, float]:
    start = time.monotonic()
    result = run_cli(*args, columns=1000)  # no line wrapped
    return result, time.monotonic() - start


# --- the command line: nothing reaches the listener --------------------------------------------------------------


@pytest.mark.parametrize("case", ["doctype-parameter-entity", "resource-types-dtd", "xinclude"])
def test_check_refuses_the_file_naming_its_line_and_nothing_is_fetched(
    case: str, listener: Listener, tmp_path: Path
) -> None:
    name, text, expected = hostile(listener.address)[case]
    directory = conf_dir(tmp_path, {name: text}, rm_address=listener.address)  # as good as a ResourceManager there
    result, seconds = timed_cli("check", str(yarn_grid(tmp_path, directory)))
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"PROBLEM -  hadoop-conf: {directory}/{expected}" in result.stdout, result.stdout
    assert "Traceback" not in result.stderr
    assert seconds < CLI_SECONDS
    assert listener.heard == []


@pytest.mark.slow  # two sweeper processes, ~10 s
def test_run_fails_before_any_java_with_or_without_its_check(listener: Listener, tmp_path: Path) -> None:
    name, text, expected = hostile(listener.address)["doctype-parameter-entity"]
    directory = conf_dir(tmp_path, {name: text}, rm_address=listener.address)
    grid = yarn_grid(tmp_path, directory)
    checked, _ = timed_cli("run", str(grid), "--store", str(tmp_path / "store"))
    said = " ".join(checked.stderr.split())  # its lines unwrapped
    assert checked.returncode == 2 and expected in said and "Traceback" not in said
    unchecked, seconds = timed_cli("run", str(grid), "--store", str(tmp_path / "store"), "--skip-check")
    assert unchecked.returncode != 0 and "Traceback" not in unchecked.stderr
    rows = [parquet.read_table(part).to_pylist() for part in (tmp_path / "store").rglob("*.parquet")]
    errors = [row["error"] for part in rows for row in part]
    assert errors.count(f"launch did not start: {directory}/{expected}") == 2  # spark's and dask's, not local's
    assert seconds < CLI_SECONDS
    assert listener.heard == []


def test_a_file_over_the_limit_is_refused_by_its_size_unread(tmp_path: Path) -> None:
    directory = conf_dir(tmp_path, {})
    with (directory / "capacity-scheduler.xml").open("wb") as sparse:  # 376 MB of nothing, on no disk
        sparse.truncate(376_000_000)
    result, seconds = timed_cli("check", str(yarn_grid(tmp_path, directory)), "--json")
    assert result.returncode == 2
    refused = [check["detail"] for check in json.loads(result.stdout)["checks"] if not check["ok"]]
    assert refused == [
        f"{directory}/capacity-scheduler.xml: 376000000 bytes, over the 4 MiB a Hadoop configuration file may have "
        "(they are kilobytes): not read"
    ]
    assert seconds < CLI_SECONDS


def test_a_value_growing_through_its_own_variables_is_named_in_bounded_output(tmp_path: Path) -> None:
    grown = {"a": "${a}${a}" + "x" * 3_000_000, "yarn.resourcemanager.hostname": "${a}"}  # 3 MB; 60 MB substituted
    directory = site(tmp_path / "conf", "yarn-site.xml", grown)
    result, seconds = timed_cli("check", str(yarn_grid(tmp_path, directory)), "--json")
    assert result.returncode == 2
    assert len(result.stdout) < 16 * 1024 and seconds < CLI_SECONDS
    refused = [check["detail"] for check in json.loads(result.stdout)["checks"] if not check["ok"]]
    assert len(refused) == 1 and "longer than 64 KiB" in refused[0], refused
    assert "yarn.resourcemanager.hostname, yarn.resourcemanager.address" in refused[0]


# --- the scan and the limits, file by file ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('<?xml version="1.0"?>\n<!DOCTYPE configuration>\n<configuration/>', f":2: {DOCTYPE}"),
        ('<!DOCTYPE c [\n<!ENTITY a "aaaaaaaa">\n<!ENTITY b "&a;&a;&a;">]>\n<c>&b;</c>', f":1: {DOCTYPE}"),
        ("<configuration>\n<include href='/etc/passwd'/></configuration>", f":2: {XINCLUDE}"),
        ('<c xmlns:x="http://www.w3.org/2001/XInclude">\n\n<x:fallback/></c>', ":3: an XInclude (<fallback>)"),
        ('<c xmlns="urn:other">\n<include href="other.xml"/></c>', f":2: {XINCLUDE}"),  # Hadoop ignores namespaces
        ("<configuration>&ext;</configuration>", ": cannot be read as a Hadoop configuration (undefined entity"),
        ('<?xml version="1.0" encoding="UTF-32"?><configuration/>', ": cannot be read as a Hadoop configuration ("),
        ("<configuration><property>", ": cannot be read as a Hadoop configuration (no element found"),
    ],
    ids=CONSTRUCTS,
)
def test_each_construct_is_refused_with_its_line(text: str, problem: str, tmp_path: Path) -> None:
    path = tmp_path / "hdfs-site.xml"
    path.write_text(text)
    found = file_problem(path)
    assert found is not None and found.startswith(f"{path}{problem}"), found


def test_a_hadoop_shaped_configuration_passes(tmp_path: Path) -> None:
    """What Hadoop ships and writes: a licence comment, the stylesheet instruction, escapes, CDATA, attributes."""
    text = (
        '<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n<!--\n  Licensed to the ASF. <!DOCTYPE x> <include/>\n'
        '-->\n<?xml-stylesheet type="text/xsl" href="configuration.xsl"?>\n<configuration>\n'
        "  <property><name>yarn.resourcemanager.hostname</name><value>rm.lan</value><final>false</final>"
        "<source>programmatically</source></property>\n"
        "  <property><name>x.y</name><value><![CDATA[a<b]]> &amp; &lt;&#233;</value></property>\n"
        '  <property name="attr.form" value="1"/>\n</configuration>\n'
    )
    (tmp_path / "yarn-site.xml").write_text(text)
    for name in ("capacity-scheduler.xml", "hadoop-policy.xml", "resource-types.xml"):
        site(tmp_path, name, {"yarn.scheduler.capacity.root.queues": "default"})
    (tmp_path / "configuration.xsl").write_text("<!DOCTYPE not-xml-read-by-hadoop>")
    (tmp_path / "yarn-site.xml.template").write_text("<!DOCTYPE x>")
    (tmp_path / "old.xml").mkdir()
    (tmp_path / "gone.xml").symlink_to(tmp_path / "nowhere")
    assert conf_dir_problems([tmp_path]) == []
    assert read_hadoop_conf(tmp_path, {}).resource_manager_urls() == ["http://rm.lan:8088"]


def test_every_directory_a_java_client_gets_is_scanned_and_every_file_named(tmp_path: Path) -> None:
    yarn = site(tmp_path / "yarn", "yarn-site.xml", rm_at("127.0.0.1:1"))
    hadoop = site(tmp_path / "hadoop", "core-site.xml", {"fs.defaultFS": "file:///"})
    (hadoop / "hdfs-site.xml").write_text("<!DOCTYPE c>\n<c/>")
    (yarn / "node-resources.xml").write_text("<c>\n<include href='x'/></c>")
    with pytest.raises(HadoopConfError) as raised:
        read_hadoop_conf(None, {"YARN_CONF_DIR": str(yarn), "HADOOP_CONF_DIR": str(hadoop)})
    assert raised.value.problems == [f"{yarn}/node-resources.xml:2: {XINCLUDE}"
                                     " (Hadoop's Java client would read the file or URL it names)",
                                     f"{hadoop}/hdfs-site.xml:1: {DOCTYPE}"]  # fmt: skip
    assert str(raised.value) == "; ".join(raised.value.problems)


def test_a_fifo_is_refused_without_being_opened_for_reading(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "core-site.xml")  # opening it for reading would block until a writer came
    assert file_problem(tmp_path / "core-site.xml") == (
        f"{tmp_path}/core-site.xml: not a regular file (a Hadoop configuration file must be one)"
    )


def test_the_size_limit_is_exact(tmp_path: Path) -> None:
    path = tmp_path / "yarn-site.xml"
    comment = "<!--" + "x" * (MAX_FILE_BYTES - len("<!---->") - len("<c/>")) + "-->"
    path.write_text(comment + "<c/>")
    assert file_problem(path) is None
    path.write_text(comment + "<c/>\n")
    assert file_problem(path) == (
        f"{path}: {MAX_FILE_BYTES + 1} bytes, over the 4 MiB a Hadoop configuration file may have (they are "
        "kilobytes): not read"
    )


def test_substitution_stops_at_the_length_limit_in_bounded_time(tmp_path: Path) -> None:
    grown = {"a": "${a}${a}" + "x" * 1_000_000, "yarn.resourcemanager.hostname": "${a}", "fits": "${b}${b}",
             "b": "y" * (MAX_EXPANDED_CHARS // 2)}  # fmt: skip
    conf = read_hadoop_conf(site(tmp_path, "yarn-site.xml", grown), {})
    start = time.monotonic()
    assert conf.get("yarn.resourcemanager.hostname") == "${a}"  # substituting it would pass the limit: left
    assert conf.get("fits") == "y" * MAX_EXPANDED_CHARS  # up to the limit, values still expand
    assert conf.overgrown() == [
        "yarn.resourcemanager.hostname",
        "yarn.resourcemanager.address",
        "yarn.resourcemanager.scheduler.address",
        "yarn.resourcemanager.webapp.address",
        "yarn.resourcemanager.webapp.https.address",
    ]
    assert len(conf.problems()) == 1
    assert time.monotonic() - start < 5
