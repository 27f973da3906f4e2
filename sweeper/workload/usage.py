"""What one fit used, measured inside the process that ran it (on every engine, manager and host).

A fit records its own thread's CPU seconds, its process's CPU seconds before and after, and its
process's peak resident memory so far. In a Spark Python worker it also finds the executor JVM it
serves (its nearest ``java`` ancestor) and records the JVM's CPU seconds and peak resident memory
from ``/proc``. It also reads the node's CPU counters (busy time: :func:`machine_reading`; steal time over all
cores from ``/proc/stat``; ``/proc/pressure/cpu``: time some task waited for a CPU) before and after, from which
:mod:`sweeper.run.interference` tells what else used the node meanwhile. Reading these costs well under a
millisecond; a figure the system does not give is None.
"""

from __future__ import annotations

import os
import resource
import socket
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

PROC = Path("/proc")
CLOCK_TICKS_PER_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class ProcessUsage:
    """A process's CPU seconds (user + system, without children) and peak resident memory, at one moment."""

    pid: int
    cpu_s: float
    peak_rss_bytes: int | None


@dataclass(frozen=True)
class MachineReading:
    """The machine's CPU counters at one moment (seconds summed over its cores; ``stall_s``: wall seconds in which
    some runnable task waited for a CPU, None without pressure stall information)."""

    at_s: float  # time.monotonic(): one clock for every process of the machine
    busy_s: float  # all cores, idle, I/O wait and steal excluded
    steal_s: float  # taken by the hypervisor for other guests
    stall_s: float | None
    cores: int


@dataclass(frozen=True)
class Usage:
    """One fit's resource use: its thread, its process and (Spark) its executor JVM, before and after."""

    host: str
    thread_cpu_s: float
    before: ProcessUsage
    after: ProcessUsage
    jvm_before: ProcessUsage | None = None
    jvm_after: ProcessUsage | None = None
    machine_before: MachineReading | None = None
    machine_after: MachineReading | None = None


@dataclass
class UsageProbe:
    """Filled in when the measured block ends."""

    usage: Usage | None = None


@contextmanager
def measured() -> Iterator[UsageProbe]:
    """Measure the block's resource use (never fails: a probe that cannot read the system stays None)."""
    probe = UsageProbe()
    jvm = executor_jvm(os.getpid())
    machine_before = machine_reading()
    thread_start, before, jvm_before = time.thread_time(), this_process(), process_usage(jvm)
    yield probe
    thread_cpu_s, after, jvm_after = time.thread_time() - thread_start, this_process(), process_usage(jvm)
    machine_after = machine_reading()
    probe.usage = Usage(machine(), thread_cpu_s, before, after, jvm_before, jvm_after, machine_before, machine_after)


def machine_reading() -> MachineReading | None:
    """This node's CPU counters now (None where ``/proc/stat`` cannot be read).

    ``/proc/stat`` is not per PID namespace: in a container or a namespaced node it counts the whole host. There
    the busy seconds are the node's own (:func:`node_busy_s`); steal time is the host's in every case."""
    at_s = time.monotonic()
    try:
        fields = [int(v) for v in (PROC / "stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = (fields + [0] * 8)[:8]  # guest time is in user's
    busy_s = node_busy_s()
    if busy_s is None:
        busy_s = (user + nice + system + irq + softirq) / CLOCK_TICKS_PER_S
    return MachineReading(at_s, busy_s, steal / CLOCK_TICKS_PER_S, _stall_s(), os.cpu_count() or 1)


def node_busy_s() -> float | None:
    """Busy CPU seconds so far of this node where ``/proc/stat`` is the host's, else None (the host is the node).

    A process in the initial PID namespace is on the host: None. Elsewhere (a container, a namespaced test node)
    the node is what its ``/proc`` shows: the ``usage_usec`` of its own cgroup v2 (:func:`own_cgroup_cpu_stat`)
    where it has one, else the CPU of its visible processes (:func:`_visible_processes_cpu_s`)."""
    if not in_child_pid_namespace():
        return None
    cpu_stat = own_cgroup_cpu_stat()
    if cpu_stat is not None:
        try:
            usage_line = next(line for line in cpu_stat.read_text().splitlines() if line.startswith("usage_usec "))
            return int(usage_line.split()[1]) / 1e6
        except (OSError, StopIteration, ValueError):
            pass
    return _visible_processes_cpu_s()


def _visible_processes_cpu_s() -> float:
    """CPU seconds of every process this ``/proc`` shows: ``utime + stime`` (all its threads, dead ones included)
    plus ``cutime + cstime`` (its children that ended and that it reaped, with everything they had reaped).

    Nothing is counted twice: a live child's CPU is in its own ``utime``/``stime`` only; when its parent reaps it,
    the same seconds move to the parent's ``cutime``/``cstime`` and the sum stays continuous. A process whose
    parent is outside this ``/proc`` (none in a node, whose init reaps its orphans) or that is reaped without a
    wait (its parent ignores SIGCHLD) takes its CPU with it when it ends: between two readings the sum then drops
    by what it had used (the node's busy time is underestimated, never overestimated)."""
    total_ticks = 0
    for name in os.listdir(PROC):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
            total_ticks += int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])
        except (OSError, IndexError, ValueError):
            continue  # ended meanwhile
    return total_ticks / CLOCK_TICKS_PER_S


# The initial PID namespace's inode number (PROC_PID_INIT_INO, include/linux/proc_ns.h: fixed since Linux 3.8).
PROC_PID_INIT_INO = 0xEFFFFFFC


@lru_cache(maxsize=1)
def in_child_pid_namespace() -> bool:
    """Whether this process is in a PID namespace other than the host's and its ``/proc`` shows that namespace
    (mounted there: ``/proc/self`` is this process's PID), so that the node's processes are what ``/proc`` lists."""
    try:
        namespace_inode = os.stat(PROC / "self" / "ns" / "pid").st_ino
        proc_is_ours = os.readlink(PROC / "self") == str(os.getpid())
    except OSError:
        return False
    return namespace_inode != PROC_PID_INIT_INO and proc_is_ours


@lru_cache(maxsize=1)
def own_cgroup_cpu_stat() -> Path | None:
    """The ``cpu.stat`` of this process's cgroup v2 where that cgroup is the node's own, else None.

    Its own: not the root of the hierarchy as mounted here, and none of its processes (nor its descendant cgroups')
    is outside this PID namespace (``cgroup.procs`` lists those as 0). Decided once per process."""
    try:
        cgroup_path = next(
            line[3:] for line in (PROC / "self" / "cgroup").read_text().splitlines() if line.startswith("0::")
        )
        mount_point, mount_root = cgroup2_mount()
        directory = Path(mount_point) / Path(cgroup_path).relative_to(mount_root)
    except (OSError, StopIteration, ValueError, TypeError):
        return None
    if cgroup_path.strip() in ("", "/") or not (directory / "cpu.stat").is_file():
        return None
    return directory / "cpu.stat" if _only_visible_members(directory) else None


def cgroup2_mount() -> tuple[str, str]:
    """Where the cgroup v2 hierarchy is mounted here and which of its cgroups is that mount's root."""
    for line in (PROC / "self" / "mountinfo").read_text().splitlines():
        mount, _, filesystem = line.partition(" - ")
        if filesystem.split(" ", 1)[0] == "cgroup2":
            fields = mount.split()
            return fields[4], fields[3]
    raise ValueError("no cgroup2 mount")


def _only_visible_members(directory: Path) -> bool:
    """Whether every process of the cgroup at ``directory`` and of its descendants is in this PID namespace."""
    try:
        for found, _, _ in os.walk(directory):
            if "0" in (Path(found) / "cgroup.procs").read_text().split():
                return False
    except OSError:
        return False
    return True


def _stall_s() -> float | None:
    """Seconds in which some runnable task waited for a CPU (``/proc/pressure/cpu``'s ``some total``, in us)."""
    try:
        first = (PROC / "pressure" / "cpu").read_text().split("\n", 1)[0]
        return int(first.rsplit("total=", 1)[1]) / 1e6
    except (OSError, IndexError, ValueError):
        return None


@lru_cache(maxsize=1)
def machine() -> str:
    """Where a PID is unique: the host name, its kernel's boot id and the PID namespace.

    Two nodes may share a host name (containers, cloned images) and PIDs repeat across machines and
    PID namespaces, so processes are told apart by ``(machine(), pid)``, never by the PID alone.
    """
    try:
        boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()[:8]
        pid_namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return socket.gethostname()
    return f"{socket.gethostname()}:{boot_id}:{pid_namespace}"


def node_manager() -> str:
    """In a YARN container: its NodeManager (``NM_HOST:NM_PORT``, which YARN sets in every container's environment).

    Elsewhere: this machine (:func:`machine`), so executors are still told apart by where they run.
    """
    host, port = os.environ.get("NM_HOST"), os.environ.get("NM_PORT")
    return f"{host}:{port}" if host and port else machine()


def this_process() -> ProcessUsage:
    """This process's CPU seconds so far and peak resident memory since it started."""
    times = os.times()
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    return ProcessUsage(os.getpid(), times.user + times.system, peak_kib * 1024)


def process_usage(pid: int | None) -> ProcessUsage | None:
    """Another process's CPU seconds and peak resident memory (``VmHWM``) from ``/proc``; None if unreadable."""
    if pid is None:
        return None
    try:
        fields = (PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
        status = (PROC / str(pid) / "status").read_text()
    except (OSError, IndexError):
        return None
    cpu_s = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS_PER_S  # utime, stime (fields 14 and 15 of stat)
    peak = next((line.split()[1] for line in status.splitlines() if line.startswith("VmHWM:")), None)
    return ProcessUsage(pid, cpu_s, int(peak) * 1024 if peak else None)


@lru_cache(maxsize=16)  # a process's executor JVM does not change: /proc is read once per Python worker
def executor_jvm(pid: int, max_depth: int = 3) -> int | None:
    """In a Spark Python worker, the executor JVM it serves (its nearest ``*ExecutorBackend`` ancestor); else None."""
    if "pyspark.worker" not in sys.modules:  # a Dask worker, the baseline, the driver: no executor JVM of its own
        return None
    for _ in range(max_depth):
        try:
            pid = int((PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[1])
            if pid > 1 and b"ExecutorBackend" in (PROC / str(pid) / "cmdline").read_bytes():
                return pid
        except (OSError, IndexError, ValueError):
            return None
    return None
