"""No secret leaks: a sweep over SSH through the CLI, then every place a secret could end up is searched.

The secrets are the Spark shared secret made for the launch (read here from the running master's
environment, the one place it must be) and the SSH private key's contents. They must not appear
in the sweeper's output, the store's files, the scratch files the launch writes, or the report.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import yaml

from sweeper.store.parquet import load_results
from tests.conftest import REPO, minimal_grid
from tests.support.sshd import Sshd, sshd_running, sshd_unavailable

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(sshd_unavailable() is not None, reason=str(sshd_unavailable())),
]

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
SECRET_VARIABLE = "_SPARK_AUTH_SECRET"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    with sshd_running(tmp_path_factory.mktemp("sshd")) as running:
        yield running


def ssh_grid(server: Sshd, store: Path) -> dict[str, object]:
    return minimal_grid(
        name="secrets",
        cluster={
            "manager": "ssh",
            "hosts": [server.host],
            "ssh": server.ssh_options(),
            "cores_per_node": 2,
            "memory_per_node": "8GiB",
        },
        sizing={"cores_per_executor": [1], "reserve": {"cores": 0, "memory": "1GiB"}, "application_master": 0},
        baseline=False,
        workload={"dataset": "digits", "epochs": [3], "trials": 1, "model": {"hidden_layer_sizes": [16]}},
        store=str(store),
    )


def master_secret(sweep: subprocess.Popen[str], timeout_s: float = 120) -> tuple[str, list[Path]]:
    """The Spark secret in the running master's environment, and the launch's scratch files at that time."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and sweep.poll() is None:
        for process in psutil.process_iter(["cmdline"]):
            try:
                if MASTER_CLASS not in " ".join(process.info["cmdline"] or []):
                    continue
                secret = process.environ().get(SECRET_VARIABLE)
                scratch = Path(process.cwd())
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            if secret:
                return secret, [path for path in scratch.rglob("*") if path.is_file()]
        time.sleep(0.2)
    output, errors = sweep.communicate() if sweep.poll() is not None else ("", "")
    raise AssertionError(f"no Spark master with {SECRET_VARIABLE} in its environment appeared\n{output}{errors}")


def leaks(secrets: dict[str, str], files: list[Path], texts: dict[str, str]) -> list[str]:
    found = []
    for name, secret in secrets.items():
        needle = secret.encode()
        found += [f"{name} in {path}" for path in files if path.is_file() and needle in path.read_bytes()]
        found += [f"{name} in {where}" for where, text in texts.items() if secret in text]
    return found


def test_no_secret_reaches_the_output_the_store_the_scratch_files_or_the_report(server: Sshd, tmp_path: Path) -> None:
    store = tmp_path / "store"
    grid = tmp_path / "grid.yaml"
    grid.write_text(yaml.safe_dump(ssh_grid(server, store), sort_keys=False))
    sweep = subprocess.Popen(
        [sys.executable, "-m", "sweeper", "run", str(grid)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        secret, scratch_files = master_secret(sweep)
        output, errors = sweep.communicate(timeout=600)
    finally:
        if sweep.poll() is None:
            sweep.kill()
    assert sweep.returncode == 0, output + errors
    frame = load_results(store, "secrets")
    assert sorted(frame["engine"]) == ["dask", "spark"]
    assert (frame["status"] == "ok").all(), frame[["engine", "status", "error"]]
    assert set(frame["manager"]) == {"ssh"}
    assert set(frame["cluster_hosts"]) == {server.host}

    report_dir = tmp_path / "report"
    report = subprocess.run(
        [sys.executable, "-m", "sweeper", "report", str(store), "--out", str(report_dir)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert report.returncode == 0, report.stdout + report.stderr
    key_lines = [line for line in server.identity_file.read_text().splitlines() if line and "PRIVATE KEY" not in line]
    secrets = {"the Spark secret": secret, **{f"private key line {i}": line for i, line in enumerate(key_lines)}}
    files = [p for p in store.rglob("*") if p.is_file()] + [p for p in report_dir.rglob("*") if p.is_file()]
    assert files and scratch_files
    texts = {"stdout": output, "stderr": errors, "report stdout": report.stdout + report.stderr}
    assert leaks({"probe": secret}, [], {"probe": secret}), "the search cannot find a secret it is shown"
    assert not leaks(secrets, files + scratch_files, texts)
