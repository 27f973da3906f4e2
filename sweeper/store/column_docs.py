"""What each column of a stored row means: one table, which ``make docs`` writes into the README.

``python -m sweeper.store.column_docs README.md`` replaces what lies between BEGIN and END in that file.
Every column of :class:`sweeper.store.row.Row` (the schema is derived from it) is in exactly one group
(a test checks it).
"""

from __future__ import annotations

import sys
from pathlib import Path

from sweeper.store.parquet import SCHEMA_VERSION
from sweeper.text import between_markers

BEGIN = "<!-- row columns: begin (generated from sweeper/store/column_docs.py by `make docs`) -->"
END = "<!-- row columns: end -->"

GROUPS: tuple[tuple[tuple[str, ...], str], ...] = (  # (columns, what they mean), in the table's order
    (
        ("sweep", "run_id", "grid_hash", "measurement_key"),
        "which sweep, which run of it, which grid content, which measurement (resume key)",
    ),
    (
        ("engine", "manager", "rule", "nodes", "launch_index"),
        "the launch",
    ),
    (
        ("cores_per_executor", "executors", "total_cores", "executor_memory_gib", "memory_overhead_gib"),
        "the planned shape (Dask: threads, workers, memory limit)",
    ),
    (
        ("granted_executors", "granted_cores_per_executor", "granted_executor_memory_gib"),
        "what the cluster actually gave",
    ),
    (
        ("dataset", "n_train", "n_test", "n_features", "fraction"),
        "the data",
    ),
    (
        ("mode", "n_fits", "model_params", "hidden_layer_sizes", "exact_epochs", "threads_per_fit"),
        "the batch (`model_params`: the estimator's parameters as JSON; `hidden_layer_sizes`: an MLP's)",
    ),
    (
        ("estimator", "work_axis", "scoring"),
        (
            "what each fit trained: the estimator's dotted name (a pipeline's steps joined by ` + `), the parameter "
            "the `epochs` column sets (null with an estimator: no work axis, `epochs` 1) and the scorer whose held-out "
            "score `accuracy` holds; all null (stores before schema 11): `sklearn.neural_network.MLPClassifier`, "
            "`max_iter`, `accuracy`"
        ),
    ),
    (
        ("epochs", "epochs_run", "epochs_run_mean", "converged"),
        (
            "the work axis's value asked (`max_iter` for MLP, else `work_axis`), run (the final step's `n_iter_`, "
            "max and mean over fits; without one: as asked), all fits stopped early"
        ),
    ),
    (
        ("trial",),
        "repetition index",
    ),
    (
        ("cluster_start_s", "warmup_s", "fit_wall_s", "fit_task_sum_s", "fit_task_max_s", "teardown_s"),
        "seconds: start, untimed warm-up, the whole parallel batch (wall), sum and max of single fits, teardown",
    ),
    (
        ("staging_s",),
        (
            "seconds the launch's start spent putting Spark's jars and the packed environment on the "
            "cluster's file system (YARN with HDFS: the first launch of a sweep that needs them uploads them; "
            "later launches of either engine only find them there: 0 to a second), not counted in "
            "`cluster_start_s`; null in rows of schema 4 and older"
        ),
    ),
    (
        ("accuracy", "accuracy_best"),
        "mean and best held-out score over the batch's fits: accuracy, or the grid's `scoring` (`scoring` column)",
    ),
    (
        ("worker_pids",),
        "distinct worker processes that ran the batch's fits",
    ),
    (
        ("status", "error_type", "error"),
        "`ok`, `failed`, `timeout` or `pruned` (halving did not promote it), with the error",
    ),
    (
        ("shards", "rounds", "round_s_mean", "comm_bytes_per_round"),
        "`data-parallel`: shards, averaging rounds, mean seconds per round, bytes of weights moved per round",
    ),
    (
        (
            "host",
            "cluster_hosts",
            "started_at",
            "fit_environment",
            "python_version",
            "sklearn_version",
            "joblib_version",
            "dask_version",
            "pyspark_version",
            "ray_version",
            "java_version",
        ),
        "provenance: the driver's host name, the grid's `cluster.hosts` (comma-separated; empty unless `ssh`)",
    ),
    (
        ("cpu_s_fits", "cpu_s_workers", "slot_utilisation"),
        (
            "CPU seconds of the fits' own threads; of the processes that ran them (Dask workers, Spark Python"
            " workers and executor JVMs, the baseline's worker) over the span of their fits; `cpu_s_workers /"
            " (granted slots x fit_wall_s)`"
        ),
    ),
    (
        (
            "worker_peak_rss_gib_max",
            "worker_peak_rss_gib_median",
            "jvm_peak_heap_gib",
            "python_peak_rss_gib_max",
            "resource_note",
        ),
        (
            "peak resident memory over the workers that ran fits (a Spark executor: its JVM plus its Python "
            "workers); Spark's largest executor peak heap; Spark's largest sum of one executor's Python "
            "workers' peaks; why a figure is null"
        ),
    ),
    (
        ("interference_cpu_share", "steal_share", "cpu_pressure_share", "interference_host", "disturbed"),
        (
            "what else used the nodes during the batch, read where the fits ran, the worst node's: CPU of processes "
            "outside the launch over the launch's cores there x the span of its fits; CPU stolen by the hypervisor "
            "over the node's cores; the share of the span some task waited for a CPU (`/proc/pressure/cpu`); that "
            "node; `disturbed`: the first or second above `workload.interference_limit`, left out of every verdict; "
            "null in rows of schema 9 and older"
        ),
    ),
    (
        ("search_strategy", "stop_reason", "rung", "rung_axis"),
        (
            "the run's `search.strategy`; adaptive trials: on the last row of a point, `ci reached` or `max "
            "trials`; halving: the rung index of the row (status `pruned`: not measured there) and the axis the "
            "rungs grew (`epochs` or `fraction`)"
        ),
    ),
    (
        ("visit_round", "visit_position"),
        (
            "the round of the sweep the row's launch visit belongs to and the launch's place in that round's random "
            "order (1, 2, ...; drawn from `workload.seed` and the round: randomized interleaving, RMIT): round 1 of a "
            "grid measured in one pass, a race's round, halving's rung + 1; 0 for the single-thread baseline, a "
            "reference measured first; null in `pruned` rows and in rows of schema 11 and older"
        ),
    ),
    (
        ("race_delta", "race_confidence", "race_max_trials", "race_round"),
        (
            "race: its `search.delta`, `confidence` (halving: the same two, its rank check's) and most trials of a "
            "point; the decision (1, 2, ...) a row "
            "was measured for. A configuration that stopped at a point before its most trials has one `pruned` "
            "row there, its `stop_reason` `left the race` or `race settled`"
        ),
    ),
    (
        ("predicted_s",),
        (
            "the median batch time the what-if model predicted for this launch and point before the run "
            '(`sweeper run --predict-from STORE`; null otherwise): the report\'s "Predicted vs measured"'
        ),
    ),
    (
        ("dry_run", "dry_run_epochs", "dry_run_train_rows", "reused_from"),
        (
            "a dry run (shrunk to the machine it ran on): the epochs and training rows it ran with, the "
            "`measurement_key` of the measured row this one reuses"
        ),
    ),
    (
        ("schema_version",),
        "the store format version ({version}; older files read with the newer columns empty)",
    ),
)


def column_table() -> str:
    """The Markdown table of the row's columns and what they mean."""
    rows = [
        f"| {', '.join(f'`{name}`' for name in names)} | {meaning.format(version=SCHEMA_VERSION)} |"
        for names, meaning in GROUPS
    ]
    return "\n".join(["| column | meaning |", "| --- | --- |", *rows]) + "\n"


def main(argv: list[str]) -> int:
    """Rewrite the column table of the README given as the only argument."""
    if len(argv) != 1:
        print("usage: python -m sweeper.store.column_docs README.md", file=sys.stderr)
        return 2
    readme = Path(argv[0])
    readme.write_text(between_markers(readme.read_text(), BEGIN, END, column_table()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
