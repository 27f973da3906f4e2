"""The grid file's YAML reader: hostile documents are refused cleanly, in seconds and bounded memory."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import threading
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from sweeper.cli import main
from sweeper.config.reader import MAX_DEPTH, MAX_GRID_BYTES, MAX_YAML_NODES, read_grid_yaml
from sweeper.errors import UserError
from tests.conftest import REPO

GRID = """\
name: t
cluster:
  manager: local
  nodes: 1
  cores_per_node: 2
  memory_per_node: 8GiB
sizing:
  cores_per_executor: [1]
  reserve: {cores: 0, memory: 1GiB}
  application_master: 0
engines: [spark, dask]
workload: {dataset: digits, epochs: [5], trials: 1}
"""
MIB = 1024 * 1024


def laughs(anchor: str, levels: int = 9) -> str:
    """A "billion laughs" flow sequence: ``levels`` nested anchors, each aliasing the last ten times.

    Nine levels expand to 10**10 strings from under 1 KiB of text.
    """
    text = f"&{anchor}0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"
    for level in range(1, levels + 1):
        text = f"&{anchor}{level} [{text}" + f", *{anchor}{level - 1}" * 9 + "]"
    return text


def plan_in_subprocess(path: Path) -> tuple[int, str, int]:
    """``sweeper plan PATH`` in a fresh interpreter: exit code, stderr, and that process's peak RSS in MiB.

    The peak is VmHWM, the high-water mark of the process's own memory since it started (``ru_maxrss``
    would include the forking pytest's).
    """
    script = (
        "import json, re, sys\n"
        "from sweeper.cli import main\n"
        "code = main(['plan', sys.argv[1]])\n"
        "status = open('/proc/self/status').read()\n"
        "peak_kib = int(re.search(r'VmHWM:\\s*(\\d+) kB', status).group(1))\n"
        "print(json.dumps([code, peak_kib // 1024]))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, str(path)], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    code, peak_mib = json.loads(result.stdout.strip().splitlines()[-1])
    return code, result.stderr, peak_mib


SSH_CLUSTER = "  manager: ssh\n  hosts: [node-a, node-b]\n  nodes: 2\n  ssh: {user: %s}\n"
BOMBS = [
    pytest.param(GRID.replace("name: t", f"name: {laughs('n')}"), id="as-name"),
    pytest.param(GRID + f"exclude:\n- {{epochs: {laughs('e')}}}\n", id="inside-exclude"),
    pytest.param(GRID.replace("  manager: local\n  nodes: 1\n", SSH_CLUSTER % laughs("u")), id="in-cluster-ssh-user"),
    pytest.param(GRID + "description: " + laughs("d", levels=30) + "\n", id="in-description"),
]


@pytest.mark.parametrize("text", BOMBS)
def test_an_alias_bomb_is_refused_before_it_is_built(text: str, tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(text)
    code, err, peak_mib = plan_in_subprocess(path)
    assert code == 2, err
    assert "error:" in err and "aliases (*name) expanded" in " ".join(err.split()), err
    assert "Traceback" not in err
    assert peak_mib < 300, f"sweeper plan peaked at {peak_mib} MiB"


def test_an_alias_bomb_costs_no_memory_to_refuse(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(f"name: {laughs('n', levels=30)}\n")
    tracemalloc.start()
    try:
        with pytest.raises(UserError, match=f"more than {MAX_YAML_NODES:,} YAML nodes"):
            read_grid_yaml(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 5 * MIB


@pytest.mark.parametrize(
    ("text", "match"),
    [
        pytest.param("name: " + "[" * 1000 + "]" * 1000 + "\n", r"line 1, column 70: nested more than 64", id="flow"),
        pytest.param(
            "".join(f"{'  ' * level}k{level}:\n" for level in range(1000)) + "  " * 1000 + "x\n",
            r"nested more than 64 levels deep",
            id="block",
        ),
        pytest.param(
            "a: &a " + "[" * 40 + "1" + "]" * 40 + "\nb: " + "[" * 40 + "*a" + "]" * 40 + "\n",
            r"line 2, column \d+: with its aliases \(\*name\) expanded, this value nests more than 64",
            id="through-aliases",
        ),
    ],
)
def test_deep_nesting_is_an_error_line_not_a_recursion_error(
    text: str, match: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text(text)
    assert main(["plan", str(path)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "error:" in err and re.search(match, err), err
    assert "Traceback" not in err


def test_nesting_up_to_the_limit_is_read(tmp_path: Path) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text("x: " + "[" * (MAX_DEPTH - 1) + "1" + "]" * (MAX_DEPTH - 1) + "\n")  # 64 with the top mapping
    value = read_grid_yaml(path)["x"]
    for _ in range(MAX_DEPTH - 1):
        value = value[0]
    assert value == 1


@pytest.mark.parametrize(
    ("text", "key", "first", "again"),
    [
        pytest.param(GRID + "name: other\n", "'name'", "line 1, column 1", "line 13, column 1", id="top-level"),
        pytest.param(
            "name: t\ncluster:\n  nodes: 1\n  cores_per_node: 2\n  nodes: 2\n",
            "'nodes'",
            "line 3, column 3",
            "line 5, column 3",
            id="nested",
        ),
        pytest.param(
            "exclude:\n- {epochs: 5, engine: dask, epochs: 10}\n",
            "'epochs'",
            "line 2, column 4",
            "line 2, column 29",
            id="flow-mapping",
        ),
        pytest.param("a: {yes: 1, true: 2}\n", "True", "line 1, column 5", "line 1, column 13", id="same-value"),
    ],
)
def test_a_duplicate_key_is_refused_naming_the_key_and_both_lines(
    text: str, key: str, first: str, again: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "dup.yaml"
    path.write_text(text)
    assert main(["plan", str(path)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"error: {path}: duplicate key {key} at {first} and again at {again}" in err, err


def test_merge_keys_and_shared_anchors_are_read(tmp_path: Path) -> None:
    path = tmp_path / "anchors.yaml"
    path.write_text("base: &base {engine: spark, epochs: 5}\nexclude:\n- {<<: *base, epochs: 10}\n- *base\n")
    assert read_grid_yaml(path)["exclude"] == [{"engine": "spark", "epochs": 10}, {"engine": "spark", "epochs": 5}]


def test_an_alias_inside_its_own_anchor_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "loop.yaml"
    path.write_text("name: t\nexclude: &rules [{epochs: 5}, *rules]\n")
    with pytest.raises(UserError, match=r"line 2, column 10: an alias refers to a value that contains it"):
        read_grid_yaml(path)


def test_a_grid_that_is_not_utf8_names_the_byte(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes(GRID.encode() + "description: café\n".encode("latin-1"))
    assert main(["plan", str(path)]) == 2
    offset = len(GRID.encode()) + len("description: caf")
    err = " ".join(capsys.readouterr().err.split())
    assert f"is not UTF-8 text: byte {offset} (line 13) is 0xe9" in err, err


def test_a_grid_larger_than_the_limit_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_text(GRID + "description: " + "x" * MAX_GRID_BYTES + "\n")
    with pytest.raises(UserError, match=r"is larger than 1024 KiB"):
        read_grid_yaml(path)


def test_a_document_of_too_many_values_is_refused_while_composing(tmp_path: Path) -> None:
    path = tmp_path / "many.yaml"
    path.write_text("x: [" + ", ".join(["1"] * (MAX_YAML_NODES + 10)) + "]\n")
    with pytest.raises(UserError, match=f"the document has more than {MAX_YAML_NODES:,} YAML nodes"):
        read_grid_yaml(path)


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        pytest.param(None, "directory", id="directory"),
        pytest.param(Path("/dev/zero"), "device", id="dev-zero"),
        pytest.param(Path("/dev/null"), "device", id="dev-null"),
    ],
)
def test_a_directory_or_a_device_is_refused_unopened(
    path: Path | None, kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    grid = path or tmp_path
    assert main(["plan", str(grid)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert err.startswith(f"error: {grid}: is a {kind}; a grid is a YAML file (or a pipe that gives one)"), err


def _feed(path: str, data: bytes) -> threading.Thread:
    """A thread that opens ``path`` for writing (a FIFO's open waits for its reader) and writes ``data``."""

    def write() -> None:
        with contextlib.suppress(BrokenPipeError), open(path, "wb") as pipe:  # the reader may stop at its limit
            pipe.write(data)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


def test_a_grid_from_a_fifo_is_read(tmp_path: Path) -> None:
    path = tmp_path / "grid.fifo"
    os.mkfifo(path)
    writer = _feed(str(path), GRID.encode())
    assert read_grid_yaml(path)["workload"] == {"dataset": "digits", "epochs": [5], "trials": 1}
    writer.join(timeout=60)
    assert not writer.is_alive()


def test_a_fifo_no_program_writes_to_or_that_never_ends_is_refused_in_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sweeper.config import reader

    monkeypatch.setattr(reader, "PIPE_TIMEOUT_S", 1.0)
    lonely = tmp_path / "nobody.fifo"
    os.mkfifo(lonely)
    with pytest.raises(UserError, match=r"nobody.fifo: the pipe gave no complete grid within 1 s"):
        read_grid_yaml(lonely)
    stalled = tmp_path / "stalled.fifo"
    os.mkfifo(stalled)
    ready = threading.Event()

    def half_a_grid() -> None:  # writes the start of a grid, then keeps the pipe open past the limit
        with open(stalled, "wb") as pipe:
            pipe.write(GRID.encode()[:20])
            pipe.flush()
            ready.wait(30)

    writer = threading.Thread(target=half_a_grid, daemon=True)
    writer.start()
    try:
        with pytest.raises(UserError, match=r"stalled.fifo: the pipe gave no complete grid within 1 s"):
            read_grid_yaml(stalled)
    finally:
        ready.set()
        writer.join(timeout=30)


def test_a_grid_from_a_pipe_is_planned_as_with_process_substitution(capsys: pytest.CaptureFixture[str]) -> None:
    """``sweeper plan <(generate-grid)`` hands the sweeper /dev/fd/N, the read end of a pipe."""
    read_end, write_end = os.pipe()
    try:
        writer = _feed(f"/dev/fd/{write_end}", GRID.encode())
        writer.join(timeout=60)
        os.close(write_end)
        write_end = -1
        assert main(["plan", f"/dev/fd/{read_end}"]) == 0, capsys.readouterr().err
    finally:
        for end in (read_end, write_end):
            if end >= 0:
                os.close(end)
    assert "Matched launches" in capsys.readouterr().out


def test_a_pipe_that_gives_more_than_the_limit_is_refused_after_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "endless.fifo"
    os.mkfifo(path)
    writer = _feed(str(path), b"# " + b"x" * (4 * MAX_GRID_BYTES) + b"\n")
    with pytest.raises(UserError, match=r"is larger than 1024 KiB"):
        read_grid_yaml(path)
    writer.join(timeout=60)  # the reader closed its end: the writer's next write fails, and it stops
    assert not writer.is_alive()


@pytest.mark.parametrize(
    ("text", "match"),
    [
        pytest.param(
            "x: " + "9" * 5000 + "\n",
            r"line 1, column 4: cannot read the value '9999.*Exceeds the limit",
            id="long-int",
        ),
        pytest.param("x: 2024-02-30\n", r"cannot read the value '2024-02-30': day is out of range", id="bad-date"),
        pytest.param("x: a\x00b\n", r"line 1: character U\+0000 is not allowed in YAML", id="nul"),
        pytest.param("x: !!python/object:os.system {}\n", r"YAML syntax error at line 1, column 4:", id="python-tag"),
        pytest.param(
            "x: 1\n---\nx: 2\n", r"YAML syntax error at line 2, column 1: but found another document", id="two-docs"
        ),
    ],
)
def test_values_yaml_cannot_build_are_error_lines(text: str, match: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(UserError, match=match):
        read_grid_yaml(path)


def test_an_empty_file_reads_as_nothing(write_grid: Callable[..., Path]) -> None:
    assert read_grid_yaml(write_grid("")) is None
