"""The node's busy time where ``/proc/stat`` is the host's: real readings inside a new PID namespace.

Each test runs a small script in ``unshare --pid --fork --mount-proc`` (what a namespaced test node or a container
is) that reads :func:`sweeper.workload.usage.machine_reading` twice and prints what it saw as JSON. A busy loop
inside the namespace is seen; one outside it (in the host's namespaces) is not. The span between the readings ends
when the busy loop has had a CPU second, however long a busy machine takes to give it one.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil
import pytest

from sweeper.workload.usage import cgroup2_mount
from tests.support.busy import busy_loop_outside_this_process_tree

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None, reason="a new PID namespace needs root and unshare"
)

LOOP_CPU_S = 1.0  # the busy loop's CPU time over the span: enough to tell apart from python's own ticks
DEADLINE_S = 120.0

# Reads, prints "ready", then ends its span: with BUSY set, once its own busy loop (a shell: a child of this script,
# in the namespace) has used LOOP_CPU_S; else when the test closes its stdin. With CGROUP set, the script first
# moves itself into that cgroup. Prints the readings and the busy loop's CPU (counted by the kernel) as JSON.
SCRIPT = textwrap.dedent(
    """
    import json, os, subprocess, sys, time
    if os.environ.get("CGROUP"):
        with open(os.path.join(os.environ["CGROUP"], "cgroup.procs"), "w") as procs:
            procs.write(str(os.getpid()))
    from sweeper.workload import usage
    loop = subprocess.Popen(["sh", "-c", "while :; do :; done"]) if os.environ.get("BUSY") else None
    before = usage.machine_reading()
    print("ready", flush=True)
    if loop:
        while usage.process_usage(loop.pid).cpu_s < {loop_cpu_s}:
            time.sleep(0.05)  # a poll: the loop's CPU time is the event
    else:
        sys.stdin.readline()  # the test ends the span
    after = usage.machine_reading()
    loop_cpu_s = usage.process_usage(loop.pid).cpu_s if loop else 0.0
    if loop:
        loop.kill()
        loop.wait()
    print(json.dumps({{
        "namespaced": usage.in_child_pid_namespace(),
        "cgroup": str(usage.own_cgroup_cpu_stat()),
        "busy_s": after.busy_s - before.busy_s,
        "span_s": after.at_s - before.at_s,
        "loop_cpu_s": loop_cpu_s,
    }}))
    """
).format(loop_cpu_s=LOOP_CPU_S)


def read_in_new_pid_namespace(
    busy: bool, cgroup: Path | None = None, span: Callable[[], None] = lambda: None
) -> dict[str, Any]:
    """Run :data:`SCRIPT` as PID 1's child in a new PID namespace with its own /proc; its JSON.

    Without ``busy``, the span between its readings is ``span()``'s call.
    """
    env = {**os.environ, "BUSY": "1" if busy else "", "CGROUP": str(cgroup or "")}
    script = subprocess.Popen(
        ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child", "--", sys.executable, "-c", SCRIPT],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    try:
        assert script.stdout is not None and script.stdout.readline() == "ready\n", script.communicate()[1][-3000:]
        if not busy:
            span()
        out, err = script.communicate("\n", timeout=DEADLINE_S)
    finally:
        script.kill()
        script.wait()
    assert script.returncode == 0, err[-3000:]
    found: dict[str, Any] = json.loads(out)
    return found


def test_a_busy_loop_in_the_host_namespace_is_not_the_nodes() -> None:
    with busy_loop_outside_this_process_tree() as pid:
        hog = psutil.Process(pid)
        hog_s: list[float] = []

        def until_the_hog_has_run() -> None:
            before_s = sum(hog.cpu_times()[:2])
            deadline = time.monotonic() + DEADLINE_S
            while (used_s := sum(hog.cpu_times()[:2]) - before_s) < LOOP_CPU_S and time.monotonic() < deadline:
                time.sleep(0.05)  # a poll: the hog's CPU time is the event
            hog_s.append(used_s)

        seen = read_in_new_pid_namespace(busy=False, span=until_the_hog_has_run)
    assert seen["namespaced"] is True and seen["cgroup"] == "None"
    assert hog_s[0] >= LOOP_CPU_S, f"the host's busy loop barely ran ({hog_s[0]:.2f} s in {DEADLINE_S} s)"
    assert seen["busy_s"] < 0.25 * hog_s[0], (seen, hog_s)  # the script itself: a few ticks


def test_a_busy_loop_inside_the_namespace_is_seen() -> None:
    seen = read_in_new_pid_namespace(busy=True)
    assert seen["namespaced"] is True
    assert seen["loop_cpu_s"] >= LOOP_CPU_S, seen
    assert seen["busy_s"] >= 0.9 * seen["loop_cpu_s"], seen  # ticks: a loop's last reading may precede its kill


@contextmanager
def child_cgroup() -> Iterator[Path]:
    """A new cgroup v2 under the hierarchy's root (skips where there is none to write); removed afterwards."""
    try:
        mount_point, _ = cgroup2_mount()
        directory = Path(mount_point) / f"sweeper-test-{os.getpid()}"
        directory.mkdir()
    except (OSError, ValueError) as error:
        pytest.skip(f"no cgroup v2 to create a cgroup in: {error}")
    try:
        yield directory
    finally:
        deadline = time.monotonic() + 10
        while directory.exists():
            try:
                directory.rmdir()
            except OSError:  # busy until its last process has been reaped
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)


def test_a_cgroup_of_its_own_is_read_instead_of_the_processes() -> None:
    with child_cgroup() as cgroup:
        seen = read_in_new_pid_namespace(busy=True, cgroup=cgroup)
    assert seen["cgroup"] == str(cgroup / "cpu.stat"), seen
    assert seen["loop_cpu_s"] >= LOOP_CPU_S, seen
    assert seen["busy_s"] >= 0.9 * seen["loop_cpu_s"], seen
