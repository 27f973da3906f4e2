"""The hand commands ``sweeper plan`` shows: each launch's shape as a person would start it (a PySpark shell,
Dask's scheduler and workers), written to fit the terminal.

The PySpark line is the manager's (its descriptor names it: sweeper/config/managers.py); Dask's lines differ only
in where they run: this machine, the grid's hosts, or nodes YARN picks.
"""

from __future__ import annotations

from sweeper.config.grid import Grid
from sweeper.config.managers import descriptor, resolve
from sweeper.planning.plan import Launch
from sweeper.units import format_mib, spark_size

WIDTH = 100  # the columns a terminal line of sweeper's fits in (issue #35)
CONTINUED = " \\"  # a shell line continued on the next


def spark_command(launch: Launch, grid: Grid) -> str:
    """The ``pyspark`` line that opens a PySpark shell on this launch's executors (its options are spark-submit's)."""
    line: str = resolve(descriptor(launch.manager).hand_command)(launch, grid)
    return line


def _sized(launch: Launch) -> str:
    """The executors' shape as spark-submit's options."""
    return (
        f"--executor-cores {launch.cores_per_executor} --executor-memory {spark_size(launch.executor_memory_mib)} "
        f"--conf spark.executor.memoryOverhead={spark_size(launch.memory_overhead_mib)}"
    )


def local_cluster_pyspark(launch: Launch, grid: Grid) -> str:
    """On this machine: Spark's ``local-cluster`` master, one worker JVM per executor."""
    worker_mib = launch.executor_memory_mib + launch.memory_overhead_mib
    cluster = f"local-cluster[{launch.executors},{launch.cores_per_executor},{worker_mib}]"
    return f"SPARK_LOCAL_IP=127.0.0.1 pyspark --master '{cluster}' {_sized(launch)}"


def yarn_pyspark(launch: Launch, grid: Grid) -> str:
    """On YARN: client mode, the executors counted, no dynamic allocation."""
    return (
        f"pyspark --master yarn --deploy-mode client --num-executors {launch.executors} "
        f"{_sized(launch)} --conf spark.dynamicAllocation.enabled=false"
    )


def master_pyspark(launch: Launch, grid: Grid) -> str:
    """On a Spark standalone master (the grid's, or the one a launch starts on the first host): the cores counted."""
    master = grid.cluster_key("spark_master") or f"spark://{_first_host(grid, 'MASTER_HOST')}:7077"
    return f"pyspark --master {master} --total-executor-cores {launch.total_cores} {_sized(launch)}"


def dask_commands(launch: Launch, grid: Grid) -> list[str]:
    """The dask scheduler/worker lines a person would type, one worker line per node."""
    host = _first_host(grid, "SCHEDULER_HOST")
    lines = [f"dask scheduler --host {host}  # on {_node(grid, 0)}"]
    for node, workers in enumerate(launch.workers_per_node):
        if workers:
            lines.append(
                f"dask worker tcp://{host}:8786 --nworkers {workers} "
                f"--nthreads {launch.cores_per_executor} "
                f"--memory-limit {format_mib(launch.executor_memory_mib)}  # on {_node(grid, node)}"
            )
    return lines


def _first_host(grid: Grid, placeholder: str) -> str:
    """The host of the grid's first node: 127.0.0.1 on this machine, the first of ``hosts``, else ``placeholder``
    (YARN places containers where it likes)."""
    if descriptor(grid.manager).on_this_machine:
        return "127.0.0.1"
    hosts = grid.cluster_key("hosts") or ()
    return str(hosts[0]) if hosts else placeholder


def _node(grid: Grid, index: int) -> str:
    """Where a hand command runs: ``this machine``, a host of the grid, or ``node N``."""
    if descriptor(grid.manager).on_this_machine:
        return "this machine"
    hosts = grid.cluster_key("hosts") or ()
    return str(hosts[index]) if index < len(hosts) else f"node {index + 1}"


def wrapped(command: str, first: str, width: int = WIDTH) -> list[str]:
    """``first`` then ``command`` as shell lines of at most ``width`` columns (where an option fits): broken before
    an option, each line but the last continued by `` \\``, the next indented under the command; a ``# comment``
    stays at the end.

    >>> wrapped("dask worker tcp://h:8786 --nworkers 2 --nthreads 1  # on h", "  [3] ", 46)
    ['  [3] dask worker tcp://h:8786 --nworkers 2 \\\\', '          --nthreads 1  # on h']
    """
    if len(first) + len(command) <= width:
        return [first + command]
    words, _, comment = command.partition("  # ")
    groups: list[str] = []
    for word in words.split(" "):
        if word.startswith("--") or not groups:
            groups.append(word)
        else:
            groups[-1] += f" {word}"
    if comment:
        groups[-1] += f"  # {comment}"
    indent = " " * (len(first) + 4)
    lines, line = [], first + groups[0]
    for group in groups[1:]:
        if len(line) + 1 + len(group) + len(CONTINUED) > width:
            lines.append(line + CONTINUED)
            line = indent + group
        else:
            line += f" {group}"
    return [*lines, line]
