"""Launches and launch contexts for the tests, with the values most tests use.

:func:`launch` is a planned launch: one node, 2 executors of 1 core, 512 MiB and 384 MiB of overhead,
index 0, rule ``report``; :func:`context` runs fits with ``OMP_NUM_THREADS=1``, one thread per fit, on
the local manager's options. A test names only what it needs otherwise::

    launch("dask", "ssh", nodes=2)                # 2 executors, one on each node
    context(tmp_path / "run", YarnOptions(), start_timeout_s=120)
"""

from __future__ import annotations

from pathlib import Path

from sweeper.config.grid import START_TIMEOUT_S
from sweeper.config.sizing import workers_per_node as layout
from sweeper.launch.base import LaunchContext
from sweeper.launch.options import LocalOptions, ManagerOptions
from sweeper.planning.plan import Launch


def launch(
    engine: str,
    manager: str = "local",
    *,
    executors: int = 2,
    cores_per_executor: int = 1,
    executor_memory_mib: int = 512,
    memory_overhead_mib: int = 384,
    nodes: int = 1,
    workers_per_node: tuple[int, ...] | None = None,
    index: int = 0,
    rule: str = "report",
    dry_run: bool = False,
    planned: Launch | None = None,
) -> Launch:
    """A launch of ``executors`` executors on ``nodes`` nodes; ``workers_per_node`` by default as the plan lays
    them out: as many on each node as the fullest one holds, fewer on the first node(s) (e.g. 3 on 2: ``(1, 2)``).
    """
    if workers_per_node is None:
        per_node = -(-executors // nodes)
        workers_per_node = layout(per_node, nodes, per_node * nodes - executors)
    return Launch(
        index=index,
        engine=engine,
        manager=manager,
        nodes=nodes,
        rule=rule,
        cores_per_executor=cores_per_executor,
        executors=executors,
        executor_memory_mib=executor_memory_mib,
        memory_overhead_mib=memory_overhead_mib,
        workers_per_node=workers_per_node,
        dry_run=dry_run,
        planned=planned,
    )


def context(
    run_dir: Path,
    options: ManagerOptions | None = None,
    *,
    environment: dict[str, str] | None = None,
    threads_per_fit: int = 1,
    start_timeout_s: float = START_TIMEOUT_S,
    spark_conf: dict[str, str] | None = None,
    log_dir: Path | None = None,
) -> LaunchContext:
    """A launch's context in ``run_dir``: ``environment`` by default ``{"OMP_NUM_THREADS": "1"}`` (pass ``{}``
    for none), ``options`` by default the local manager's, no extra Spark properties."""
    return LaunchContext(
        run_dir=run_dir,
        environment={"OMP_NUM_THREADS": "1"} if environment is None else environment,
        threads_per_fit=threads_per_fit,
        start_timeout_s=start_timeout_s,
        spark_conf={} if spark_conf is None else spark_conf,
        options=LocalOptions() if options is None else options,
        log_dir=log_dir,
    )
