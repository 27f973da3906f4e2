"""deploy/prepare-host.sh in its check mode, against a real sshd on loopback (key-only, pinned host key).

The host is this machine, so it has this checkout's .venv and Java: the check says it is ready.
A refused key, an untrusted host key and bad arguments are each named, with a non-zero exit.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.support.sshd import Sshd, keygen, sshd_running, sshd_unavailable

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(sshd_unavailable() is not None, reason=str(sshd_unavailable())),
]

SCRIPT = REPO / "deploy" / "prepare-host.sh"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    with sshd_running(tmp_path_factory.mktemp("sshd")) as running:
        yield running


def prepare(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SCRIPT), *arguments], capture_output=True, text=True, timeout=120, cwd=REPO)


def options(server: Sshd, identity: Path | None = None, known_hosts: Path | None = None) -> list[str]:
    return [
        "-l",
        server.user,
        "-p",
        str(server.port),
        "-i",
        str(identity or server.identity_file),
        "-k",
        str(known_hosts or server.known_hosts),
    ]


def test_a_prepared_host_is_reported_ready(server: Sshd) -> None:
    done = prepare(*options(server), server.host)
    assert done.returncode == 0, done.stdout + done.stderr
    python = REPO / ".venv" / "bin" / "python"
    assert f"{server.host}: ready (Python 3." in done.stdout and f"at {python}, Java " in done.stdout


def test_a_refused_key_is_named_with_what_to_do(server: Sshd, tmp_path: Path) -> None:
    stranger = keygen(tmp_path / "stranger", "not authorized")
    done = prepare(*options(server, identity=stranger), server.host)
    assert done.returncode == 1
    assert f"{server.host}: cannot log in over SSH" in done.stderr and "Permission denied" in done.stderr
    assert "ssh-copy-id" in done.stderr


def test_an_unknown_host_key_is_never_accepted(server: Sshd, tmp_path: Path) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    done = prepare(*options(server, known_hosts=empty), server.host)
    assert done.returncode == 1
    assert "Host key verification failed" in done.stderr
    assert empty.read_text() == ""  # the check added nothing to known_hosts


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        pytest.param([], "usage: ", id="no-host"),
        pytest.param(["--bogus", "h"], "error: unknown option --bogus", id="unknown-option"),
    ],
)
def test_bad_arguments_exit_2(arguments: list[str], message: str) -> None:
    done = prepare(*arguments)
    assert done.returncode == 2
    assert message in done.stderr


def test_a_host_without_java_is_named_with_the_package_to_install(tmp_path: Path) -> None:
    # sessions of this server find nothing on PATH: the environment's Python is found by its path, java is not
    with sshd_running(tmp_path / "sshd", extra_config={"SetEnv": "PATH=/nonexistent"}) as bare:
        done = prepare(*options(bare), bare.host)
    assert done.returncode == 1
    assert f"{bare.host}: Java not found" in done.stderr and "openjdk-17-jre-headless" in done.stderr
    assert "ready" not in done.stdout
