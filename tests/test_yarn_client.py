"""YARN's own client and the driver's address, against the session's MiniYARNCluster and a real route.

- Applications are found by tag and killed through ``yarn application`` (ApplicationCLI), also with an
  HA configuration whose first ResourceManager is down (Hadoop fails over to the second).
- The driver address (Spark's driver host, Dask's scheduler) is the one on the route to the
  ResourceManager, not 127.0.0.1: checked on a dummy interface of its own.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import time
import uuid
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from sweeper.launch.base import LaunchError
from sweeper.launch.dask import yarn as dask_yarn
from sweeper.launch.hosts import yarn_client
from sweeper.launch.hosts.containers import AM_MEMORY_MIB, ContainerShape, containers_command
from sweeper.launch.hosts.hadoop_conf import HadoopConf, read_hadoop_conf
from sweeper.launch.hosts.yarn import driver_address
from sweeper.launch.hosts.yarn_client import Application, YarnClient, hadoop_lib
from sweeper.launch.options import YarnOptions
from sweeper.launch.registry import starter
from sweeper.launch.spark import yarn as spark_yarn
from sweeper.launch.spark.conf import QUICK_START_JAVA_OPTIONS
from sweeper.planning.plan import Launch
from tests.support import launches
from tests.support.hadoop_sites import site
from tests.support.yarn_cluster import YarnCluster, assert_no_containers, closed_address, rest, with_webapp

pytestmark = [pytest.mark.integration, pytest.mark.yarn]


def one_container(engine: str = "dask") -> Launch:
    if engine == "spark":
        return launches.launch(engine, "yarn", executors=1)
    return launches.launch(engine, "yarn", executors=1, executor_memory_mib=256, memory_overhead_mib=128)


def sleeping_application(
    conf: HadoopConf, name: str, scratch: Path, containers: int = 1, memory_mib: int = 256
) -> subprocess.Popen[bytes]:
    command = containers_command(conf, hadoop_lib(), name, "sleep 600", ContainerShape(containers, memory_mib, 1), {})
    log = open(scratch / f"{name}.log", "wb")  # noqa: SIM115 - closed by the child's exit
    return subprocess.Popen(command, cwd=scratch, stdin=subprocess.DEVNULL, stdout=log, stderr=log)


def sleeping_containers() -> int:
    """How many ``sleep 600`` container processes run in NodeManagers' directories."""
    found = 0
    for process in psutil.process_iter(["cmdline", "cwd"]):
        try:
            if process.info["cmdline"] == ["sleep", "600"] and "/appcache/" in (process.info["cwd"] or ""):
                found += 1
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return found


def wait_for_state(client: YarnClient, tag: str, states: tuple[str, ...], timeout_s: float = 120.0) -> list[str]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = [app.state for app in client.applications(tag, states)]
        if found:
            return found
        time.sleep(1)
    raise AssertionError(f"no application tagged {tag} in {states} within {timeout_s:.0f} s")


def ha_conf_dir(yarn: YarnCluster, directory: Path) -> Path:
    """The mini cluster's client configuration as an HA pair whose first ResourceManager (rm1) is down."""
    tree = ElementTree.parse(yarn.conf_dir / "yarn-site.xml")
    properties = {p.findtext("name"): p.findtext("value") for p in tree.getroot().iter("property")}
    dead = closed_address()
    ha = {
        "yarn.resourcemanager.ha.enabled": "true",
        "yarn.resourcemanager.ha.rm-ids": "rm1,rm2",
        "yarn.resourcemanager.cluster-id": "sweeper-test",
        "yarn.resourcemanager.hostname.rm1": "127.0.0.1",
        "yarn.resourcemanager.hostname.rm2": "127.0.0.1",
        "yarn.client.failover-sleep-base-ms": "100",
        "yarn.client.failover-sleep-max-ms": "500",
    }
    for key in ("address", "scheduler.address", "webapp.address", "admin.address", "resource-tracker.address"):
        ha[f"yarn.resourcemanager.{key}.rm1"] = dead
        ha[f"yarn.resourcemanager.{key}.rm2"] = str(properties[f"yarn.resourcemanager.{key}"])
    for key, value in ha.items():
        prop = ElementTree.SubElement(tree.getroot(), "property")
        ElementTree.SubElement(prop, "name").text = key
        ElementTree.SubElement(prop, "value").text = value
    directory.mkdir()
    tree.write(directory / "yarn-site.xml")
    shutil.copy(yarn.conf_dir / "core-site.xml", directory / "core-site.xml")
    return directory


def cli_forbidden(*args: object, **kwargs: object) -> None:
    """``YarnClient._run`` where the REST API must answer: starting the CLI's JVM fails the test."""
    pytest.fail(f"the CLI ran: {args}")


@pytest.mark.parametrize("conf_dir", ["one-rm", "ha-rm1-down", "rest-unreachable"])
def test_applications_are_found_by_tag_and_killed(
    yarn: YarnCluster, tmp_path: Path, conf_dir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Listed by the REST API, or where it cannot answer by ``yarn application -list``: the same applications."""
    directories = {
        "one-rm": lambda: yarn.conf_dir,
        "ha-rm1-down": lambda: ha_conf_dir(yarn, tmp_path / "ha"),
        "rest-unreachable": lambda: with_webapp(yarn, tmp_path / "no-rest", closed_address()),
    }
    conf = read_hadoop_conf(directories[conf_dir](), {})
    if conf_dir == "ha-rm1-down":
        assert len(conf.resource_manager_urls()) == 2
    client = YarnClient(conf)
    by_cli = YarnClient(read_hadoop_conf(with_webapp(yarn, tmp_path / "cli", closed_address()), {}))
    name = f"sweeper-test-{uuid.uuid4().hex[:8]}"
    shell = sleeping_application(read_hadoop_conf(yarn.conf_dir, {}), name, tmp_path)
    try:
        assert wait_for_state(client, name, ("ACCEPTED", "RUNNING"))
        assert client.applications("sweeper-no-such-tag") == []
        assert wait_for_state(client, name, ("RUNNING",)) == ["RUNNING"]
        with monkeypatch.context() as patched:
            if conf_dir != "rest-unreachable":  # the REST API answers: no CLI's JVM is started
                patched.setattr(YarnClient, "_run", cli_forbidden)
            listed = client.applications(name)
        assert listed == by_cli.applications(name) and len(listed) == 1  # the REST API's answer is the CLI's
        fell_back = client.conf_key() in yarn_client._REST_UNANSWERED
        assert fell_back == (conf_dir == "rest-unreachable")
        if conf_dir == "one-rm":
            _rest_is_asked_again_after_its_pause(client, name, listed, monkeypatch)
        assert len(client.kill_tagged(name)) == 1
        assert wait_for_state(client, name, ("KILLED",)) == ["KILLED"]
        assert client.applications(name) == []
        shell.wait(60)
    finally:
        if shell.poll() is None:
            shell.kill()
            shell.wait()
    assert_no_containers()


def _rest_is_asked_again_after_its_pause(
    client: YarnClient, name: str, listed: list[Application], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure of the REST API remembered: the CLI lists until REST_RETRY_S have passed, then REST again."""
    key = client.conf_key()
    yarn_client._REST_UNANSWERED[key] = time.monotonic()  # it just failed
    with monkeypatch.context() as patched:
        patched.setattr(YarnClient, "_listed_by_rest", lambda *args, **kwargs: pytest.fail("REST asked too soon"))
        assert client.applications(name) == listed
    yarn_client._REST_UNANSWERED[key] = time.monotonic() - yarn_client.REST_RETRY_S  # it failed long enough ago
    with monkeypatch.context() as patched:
        patched.setattr(YarnClient, "_run", cli_forbidden)
        assert client.applications(name) == listed
    assert key not in yarn_client._REST_UNANSWERED  # answered: remembered no more


@pytest.fixture
def routed_interface() -> Iterator[tuple[str, str]]:
    """A veth pair with 10.231.254.1/24 on one end: (this side's address, a ResourceManager's address behind it)."""
    name = f"swd{uuid.uuid4().hex[:8]}"
    subprocess.run(["ip", "link", "add", name, "type", "veth", "peer", "name", f"{name}p"], check=True)
    try:
        subprocess.run(["ip", "addr", "add", "10.231.254.1/24", "dev", name], check=True)
        subprocess.run(["ip", "link", "set", name, "up"], check=True)
        subprocess.run(["ip", "link", "set", f"{name}p", "up"], check=True)
        yield "10.231.254.1", "10.231.254.7"
    finally:
        subprocess.run(["ip", "link", "delete", name], check=False)


def test_the_driver_gives_its_address_toward_the_resource_manager(
    routed_interface: tuple[str, str], tmp_path: Path
) -> None:
    """On an edge node the AM and the workers must reach the driver: never 127.0.0.1 there."""
    ours, resource_manager = routed_interface
    conf_dir = site(tmp_path / "conf", "yarn-site.xml", {"yarn.resourcemanager.hostname": resource_manager})
    assert driver_address(read_hadoop_conf(conf_dir, {})) == ours
    context = launches.context(tmp_path / "run", YarnOptions(conf_dir=conf_dir), environment={})
    spark = spark_yarn.YarnSpark(one_container("spark"), context, tmp_path / "spark-0")
    spark.check()
    conf = spark.conf()
    assert conf["spark.driver.host"] == conf["spark.driver.bindAddress"] == ours
    assert spark.variables()["SPARK_LOCAL_IP"] == ours
    assert conf["spark.yarn.tags"].startswith("sweeper,sweeper-spark-")
    assert "file:" not in conf["spark.yarn.am.extraJavaOptions"]  # the driver's paths do not exist on the nodes
    # the AM and the spark engine's executors only move tasks and results: C1 alone, as on this machine
    quick = {conf[f"spark.{jvm}.extraJavaOptions"].split()[0] for jvm in ("yarn.am", "executor", "driver")}
    assert quick == {QUICK_START_JAVA_OPTIONS}, conf
    dask = dask_yarn.YarnDask(one_container(), context, tmp_path / "dask-0")
    dask.check()
    assert dask.site.host == ours
    worker = dask_yarn.worker_command(f"tcp://{ours}:8786", one_container())
    assert "--death-timeout" in worker and "127.0.0.1" not in worker


def test_an_application_the_cluster_has_no_room_for_fails_at_the_start_limit_named_so(
    yarn: YarnCluster, tmp_path: Path
) -> None:
    """An application holding all of the cluster's memory: Dask's next one waits ACCEPTED for room for its
    ApplicationMaster, Spark's (its ApplicationMaster in the driver) RUNNING for its executors. That wait counts
    toward start_timeout_s, and the error says which and how much room the cluster had."""
    conf = read_hadoop_conf(yarn.conf_dir, {})
    client = YarnClient(conf)
    blocker = f"sweeper-blocker-{uuid.uuid4().hex[:8]}"
    step = AM_MEMORY_MIB  # containers of the AM's size fill every NodeManager to the last MiB
    fill = (yarn.node_managers * yarn.nm_memory_mib - AM_MEMORY_MIB) // step
    shell = sleeping_application(conf, blocker, tmp_path, containers=fill, memory_mib=step)
    context = launches.context(tmp_path / "run", YarnOptions(conf_dir=yarn.conf_dir), start_timeout_s=15)
    try:
        assert wait_for_state(client, blocker, ("RUNNING",)) == ["RUNNING"]
        # every blocker container allocated and its process started before the launches: a process that
        # starts during a launch would be a new descendant of this test process, which the launch reaps
        deadline = time.monotonic() + 180
        while sleeping_containers() < fill and time.monotonic() < deadline:
            time.sleep(1)
        assert sleeping_containers() == fill
        assert rest(yarn, "/metrics")["clusterMetrics"]["availableMB"] < step
        held = {
            "spark": r"0 of 1 executors registered within \d+ s \(application \S+ in queue \S+: 0 executor "
            r"containers running; the cluster has \d+ MiB",
            "dask": "the queue held the application ACCEPTED",
        }
        for engine, start in (("spark", starter("spark", "yarn")), ("dask", starter("dask", "yarn"))):
            started = time.monotonic()
            with (
                pytest.raises(LaunchError, match=held[engine]),
                start(one_container(engine), context),
            ):
                pass
            assert time.monotonic() - started < 180, engine  # not the unbounded wait it was
            assert [app.name for app in client.applications("sweeper")] == [blocker]  # ours was killed
    finally:
        client.kill_tagged(blocker)
        shell.wait(60)
    assert client.applications("sweeper") == []
    assert_no_containers()


def test_the_containers_application_ends_with_its_commands_and_names_a_failure(
    yarn: YarnCluster, tmp_path: Path
) -> None:
    """sweeper.yarn.Containers (deploy/yarn): the application succeeds when every container's command exits 0 and
    fails, saying how many, when one does not; the client exits 0 or 1 accordingly. Two containers each."""
    conf = read_hadoop_conf(yarn.conf_dir, {})
    ended = {}
    for shell in ("test $ANSWER = 42", "test -n $CONTAINER_ID && exit 3"):  # the environment reaches every container
        name = f"sweeper-containers-{uuid.uuid4().hex[:8]}"
        command = containers_command(conf, hadoop_lib(), name, shell, ContainerShape(2, 256, 1), {"ANSWER": "42"})
        done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
        ended[shell] = (done.returncode, done.stderr)
        shutil.rmtree(Path.home() / name, ignore_errors=True)  # the application's jar (fs.defaultFS file:)
    code, stderr = ended["test $ANSWER = 42"]
    assert code == 0 and "ended SUCCEEDED" in stderr, stderr[-2000:]
    code, stderr = ended["test -n $CONTAINER_ID && exit 3"]
    assert code == 1 and "ended FAILED" in stderr and "2 of 2 containers failed; first: " in stderr, stderr[-2000:]
    assert "exited 3" in stderr  # the first failure's own exit status and diagnostics
    name = f"sweeper-containers-{uuid.uuid4().hex[:8]}"
    missing = str(tmp_path / "no-such-env.tar.gz") + "#environment"
    command = containers_command(conf, hadoop_lib(), name, "true", ContainerShape(1, 256, 1), {}, archive=missing)
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    shutil.rmtree(Path.home() / name, ignore_errors=True)
    assert done.returncode == 1 and "ended FAILED" in done.stderr and "no-such-env" in done.stderr, done.stderr
    bad = containers_command(conf, hadoop_lib(), name, "true", ContainerShape(0, 256, 1), {})
    refused = subprocess.run(bad, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "--containers must be a positive integer, got 0" in refused.stderr
    assert_no_containers()


def test_a_container_command_with_a_double_quote_is_refused(tmp_path: Path) -> None:
    """The NodeManager runs the command inside /bin/bash -c "...": a double quote would end that string."""
    conf = HadoopConf(yarn_site_dir=tmp_path, core_site_dir=None, raw={}, environment={})
    with pytest.raises(ValueError, match="double quote"):
        containers_command(conf, Path("/nonexistent"), "x", 'echo "hi"', ContainerShape(1, 256, 1), {})


def test_staging_puts_each_file_once_whole_and_readable_by_all_in_one_jvm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """sweeper.yarn.Stage (deploy/yarn) through launch/hosts/staging.py, on a file: file system: one JVM looks for every
    file and puts the missing ones, made here only then, under a partial name renamed when whole; each file 0644 and
    each directory it made 0755 whatever the umask (a public YARN resource); found files are not made again."""
    from sweeper.launch.hosts import staging

    home = tmp_path / "home" / ".sweeper"
    monkeypatch.setattr(staging, "sweeper_home", lambda conf: home.as_uri())
    monkeypatch.setattr(staging, "STAGED", {})
    conf = HadoopConf(yarn_site_dir=tmp_path, core_site_dir=None, raw={"fs.defaultFS": "file:///"}, environment={})
    made: list[str] = []

    def maker(name: str, content: bytes) -> staging.Upload:
        def make(scratch: Path) -> Path:
            made.append(name)
            (scratch / name).write_bytes(content)
            return scratch / name

        return staging.Upload(f"{name}-0123/{name}.zip", make)

    uploads = [maker("jars", b"jars" * 1000), maker("env", b"env")]
    previous = os.umask(0o077)  # the JVM's: Stage sets the modes itself
    try:
        uris, staged_s = staging.stage(conf, hadoop_lib(), uploads)
    finally:
        os.umask(previous)
    assert uris == [f"{home.as_uri()}/jars-0123/jars.zip", f"{home.as_uri()}/env-0123/env.zip"] and staged_s > 0
    assert made == ["jars", "env"]
    assert (home / "jars-0123" / "jars.zip").read_bytes() == b"jars" * 1000
    assert (home / "env-0123" / "env.zip").read_bytes() == b"env"
    # every file and directory there, with its mode: no partial file left, nor Hadoop's .crc files
    modes = {p.relative_to(home).as_posix(): stat.S_IMODE(p.stat().st_mode) for p in home.rglob("*")}
    directories = {"jars-0123": 0o755, "env-0123": 0o755}
    assert modes == {**directories, "jars-0123/jars.zip": 0o644, "env-0123/env.zip": 0o644}, modes
    assert stat.S_IMODE(home.stat().st_mode) == 0o755
    assert staging.stage(conf, hadoop_lib(), uploads) == (uris, 0.0)  # known to this process: no JVM
    monkeypatch.setattr(staging, "STAGED", {})
    again, found_s = staging.stage(conf, hadoop_lib(), [*uploads, maker("more", b"more")])
    assert again[:2] == uris and found_s > 0 and made == ["jars", "env", "more"]  # found on the cluster: not made again
