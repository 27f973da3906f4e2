"""Replicating the report (seed 001, Tables 1-6) on this machine: README "Replicating the report".

Three subcommands, run from the repository with the sweeper's virtualenv:

  .venv/bin/python grids/replicate.py shipping [--rows 60000 --fit-rows 1000 --fits 4 --batches 3]
      Starts the sweeper's local Spark and Dask launches (2 executors/workers x 1 core) side by side and
      times the same batch of MLP fits on MNIST-shaped data (Fashion-MNIST, float64 as the report's code
      had it) delivered three ways: the training arrays as joblib arguments (what a user writes:
      joblibspark pickles them into every task; joblib's Dask backend scatters them once per call), the
      data wrapped in one object (Dask cannot size it, so it too travels inside every task), and the
      sweeper's own shipping (a Spark broadcast, a Dask scatter, once per launch). Prints each launch's
      start and warm-up and, per delivery, the batch's wall time, the fits' own time, and what is left.
      Progress lines go to RUN_DIR/logs/ (the launches take over standard error while they live).

  .venv/bin/python grids/replicate.py single [--rows 2000 --epochs 3]
      One MLPClassifier.fit inside joblib.parallel_config(backend="dask") on a 2-worker LocalCluster:
      MLPClassifier has no n_jobs, so the count of tasks the workers received, and where the fit ran.

  .venv/bin/python grids/replicate.py summary [--store /tmp/replicate-store]
      The tables of the README section from the store of the two grids' runs: the dry run of
      grids/replicate.yaml (the report's grid) and grids/replicate-stopping.yaml (early stopping).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any

DRY_SWEEP = "replicate-dry-run"
STOPPING_SWEEP = "replicate-stopping"
DELIVERIES = ("arrays", "object", "launch")
ENGINES = ("spark", "dask")


def fit_arrays(task: Any, X: Any, y: Any, X_test: Any, y_test: Any) -> Any:
    """One fit whose training data came as joblib arguments (runs on the worker)."""
    from sweeper.workload.data import Data
    from sweeper.workload.fit import run_fit

    return run_fit(task, Data("fashion-mnist", X, y, X_test, y_test, "arguments"))


def fit_object(task: Any, data: Any) -> Any:
    """One fit whose training data came as one argument object that travels with the task."""
    from sweeper.workload.fit import run_fit

    return run_fit(task, data)


def _grid(fits: int) -> dict[str, Any]:
    return {
        "name": "replicate-shipping",
        "cluster": {"manager": "local", "nodes": 1, "cores_per_node": 2, "memory_per_node": "16GiB"},
        "sizing": {"cores_per_executor": [1], "reserve": {"cores": 0, "memory": "1GiB"}, "application_master": 0},
        "engines": list(ENGINES),
        "baseline": False,
        "workload": {
            "dataset": "fashion-mnist",
            "model": {"hidden_layer_sizes": [100, 50], "solver": "adam"},
            "epochs": [1],
            "trials": 1,
            "n_fits": fits,
            "exact_epochs": True,
        },
    }


def _parallel(backend: str, n_jobs: int, calls: list[Any]) -> list[Any]:
    import warnings

    import joblib

    with joblib.parallel_config(backend=backend, n_jobs=n_jobs), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Spark session is not provided")
        warnings.filterwarnings("ignore", message=r"User-specified n_jobs \(2\) is greater than")
        return list(joblib.Parallel()(calls))


def shipping(args: argparse.Namespace) -> dict[str, Any]:
    """Time the same batch on both engines with the data delivered per task, per call and per launch."""
    import numpy as np
    from joblib import delayed

    from sweeper.config import load as grids
    from sweeper.launch.base import LaunchContext
    from sweeper.launch.registry import starter
    from sweeper.planning.plan import make_plan
    from sweeper.run.measure import batch_for
    from sweeper.workload.data import Data, Dataset, load
    from sweeper.workload.environment import fit_environment

    plan = make_plan(grids.parse(_grid(args.fits), Path("<replicate>")))
    launches = {launch.engine: launch for launch in plan.launches}
    loaded = load(Dataset("fashion-mnist"), max_train_rows=args.rows)
    # float64 as the report's code had it (OpenML's MNIST as a DataFrame / 255): 60000 x 784 x 8 B = 376 MB
    data = Data(
        "fashion-mnist",
        np.ascontiguousarray(loaded.X_train, dtype=np.float64),
        loaded.y_train,
        np.ascontiguousarray(loaded.X_test, dtype=np.float64),
        loaded.y_test,
        loaded.source,
    )
    nbytes = sum(int(a.nbytes) for a in (data.X_train, data.y_train, data.X_test, data.y_test))
    run_dir = Path(args.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    context = LaunchContext(
        run_dir=run_dir,
        environment=fit_environment(1, {}),
        threads_per_fit=1,
        log_dir=run_dir / "logs",
    )
    slots = launches["dask"].total_cores

    fit_rows = np.arange(min(args.fit_rows, data.n_train)) if args.fit_rows else None

    def tasks(trial: int, epochs: int) -> list[Any]:
        # every fit receives all the arrays; with --fit-rows it trains on the first rows only, so the batch's
        # time is mostly the shipping this measures rather than the fits (which the other runs measure)
        batch = batch_for(plan, plan.launches[0], plan.points[0][0], trial, data, epochs=epochs)
        return [replace(task, train_rows=fit_rows) for task in batch]

    def run(engine: str, session: Any, delivery: str, batch: list[Any]) -> list[Any]:
        if delivery == "launch":
            return list(session.run_batch(batch, data))
        backend = "spark" if engine == "spark" else "dask"
        n_jobs = max(slots, 2)
        if delivery == "arrays":
            arrays = (data.X_train, data.y_train, data.X_test, data.y_test)
            return _parallel(backend, n_jobs, [delayed(fit_arrays)(t, *arrays) for t in batch])
        return _parallel(backend, n_jobs, [delayed(fit_object)(t, data) for t in batch])

    out: dict[str, Any] = {
        "rows": data.n_train,
        "data_nbytes": nbytes,
        "fits": args.fits,
        "epochs": args.epochs,
        "fit_rows": args.fit_rows,
        "slots": slots,
        "engines": {},
    }
    sessions: dict[str, Any] = {}
    with ExitStack() as stack:
        for engine in ENGINES:
            print(f"starting {launches[engine].label}", file=sys.stderr)
            started = time.perf_counter()
            sessions[engine] = stack.enter_context(starter(engine, "local")(launches[engine], context))
            start_s = time.perf_counter() - started
            # the sweeper's untimed warm-up: one 1-epoch batch, the data shipped once here
            started = time.perf_counter()
            run(engine, sessions[engine], "launch", tasks(0, 1))
            warmup_s = time.perf_counter() - started
            out["engines"][engine] = {"start_s": start_s, "warmup_s": warmup_s, "batches": {d: [] for d in DELIVERIES}}
            print(f"{engine}: start {start_s:.1f} s, warm-up {warmup_s:.1f} s", file=sys.stderr)
        for repetition in range(args.batches):
            batch = tasks(repetition + 1, args.epochs)
            for engine in ENGINES[repetition % 2 :] + ENGINES[: repetition % 2]:
                for delivery in DELIVERIES[repetition % 3 :] + DELIVERIES[: repetition % 3]:
                    started = time.perf_counter()
                    results = run(engine, sessions[engine], delivery, batch)
                    wall = time.perf_counter() - started
                    fit_sum = sum(r.fit_s for r in results)
                    row = {"wall_s": wall, "fit_sum_s": fit_sum, "outside_s": wall - fit_sum / slots}
                    out["engines"][engine]["batches"][delivery].append(row)
                    print(
                        f"{engine} {delivery}: batch {wall:.1f} s, outside the fits {row['outside_s']:.1f} s",
                        file=sys.stderr,
                    )
    return out


def print_shipping(out: dict[str, Any]) -> None:
    """The shipping measurement as a Markdown table."""
    mib = out["data_nbytes"] / 2**20
    print(
        f"{out['fits']} fits x {out['epochs']} epoch(s) on {out['fit_rows'] or out['rows']} rows, each receiving "
        f"{out['rows']} training rows and the test set ({mib:.0f} MiB of float64 arrays), "
        f"{out['slots']} slots; medians of the batches after each delivery's first call"
    )
    print(
        "\n| engine | start s | warm-up s | delivery | batch s | fits s (sum / slots) | outside the fits s "
        "| per task s | first call s |"
    )
    print("| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    for engine, figures in out["engines"].items():
        for delivery, all_rows in figures["batches"].items():
            if not all_rows:
                continue
            first, rows = all_rows[0], all_rows[1:] or all_rows  # the first call pays one-time costs
            wall = statistics.median(r["wall_s"] for r in rows)
            fits = statistics.median(r["fit_sum_s"] / out["slots"] for r in rows)
            outside = statistics.median(r["outside_s"] for r in rows)
            print(
                f"| {engine} | {figures['start_s']:.1f} | {figures['warmup_s']:.1f} | {delivery} | {wall:.1f} | "
                f"{fits:.1f} | {outside:.1f} | {outside / out['fits']:.2f} | {first['wall_s']:.1f} |"
            )


def summary(args: argparse.Namespace) -> None:
    """The README's tables from the store: the dry run of the report's grid, and early stopping."""
    import sweeper

    df = sweeper.load_results(args.store, sweep=DRY_SWEEP, dry_runs=True)
    ok = df[df.status == "ok"]
    print(f"{DRY_SWEEP}: {len(ok)} ok rows, {int(ok.disturbed.fillna(False).sum())} of them disturbed (kept here)")
    print(
        "\n| epochs (run) | spark batch s | dask batch s | spark/dask | + start and warm-up: spark s | dask s | "
        "spark/dask | fits' CPU s spark / dask | accuracy, trial 0 / 1 |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |")
    per_launch = ok.groupby(["engine", "launch_index"])[["cluster_start_s", "warmup_s"]].first()
    start = {e: float((per_launch.loc[e].cluster_start_s + per_launch.loc[e].warmup_s).median()) for e in ENGINES}
    for epochs, rows in ok.groupby("epochs"):
        wall = rows.groupby("engine").fit_wall_s.median()
        cpu = rows.groupby("engine").cpu_s_fits.median()
        ran = int(rows.dry_run_epochs.max())
        per_trial = rows.groupby("trial").accuracy
        accuracies = [f"{a:.4f}" for a in per_trial.first()]
        same = "same on every engine and shape" if per_trial.nunique().max() == 1 else "DIFFER between launches"
        spark, dask = float(wall["spark"]), float(wall["dask"])
        print(
            f"| {epochs} ({ran}) | {spark:.2f} | {dask:.2f} | {spark / dask:.2f} | {spark + start['spark']:.1f} | "
            f"{dask + start['dask']:.1f} | {(spark + start['spark']) / (dask + start['dask']):.1f} | "
            f"{cpu['spark']:.2f} / {cpu['dask']:.2f} | {' / '.join(accuracies)} ({same}) |"
        )
    print(f"\nstart + warm-up per launch (median): spark {start['spark']:.1f} s, dask {start['dask']:.1f} s")
    stop = sweeper.load_results(args.store, sweep=STOPPING_SWEEP)
    stop = stop[stop.status == "ok"]
    if stop.empty:
        return
    print(f"\n{STOPPING_SWEEP}: {len(stop)} ok rows, {int(stop.n_train.iloc[0])} training rows")
    print("\n| epochs asked | epochs run | batch s (median) | fits' CPU s (median) | accuracy, trial 0 / 1 |")
    print("| ---: | --- | ---: | ---: | --- |")
    for epochs, rows in stop.groupby("epochs"):
        stopped = sorted(set(rows.epochs_run.astype(int)))
        per_trial = rows.groupby("trial").accuracy
        trials = " / ".join(f"{a:.4f}" for a in per_trial.first())
        same = "same on every engine and shape" if per_trial.nunique().max() == 1 else "DIFFER between launches"
        print(
            f"| {epochs} | {', '.join(map(str, stopped))} | {rows.fit_wall_s.median():.1f} | "
            f"{rows.cpu_s_fits.median():.1f} | {trials} ({same}) |"
        )


def single(args: argparse.Namespace) -> None:
    """One MLPClassifier.fit inside ``joblib.parallel_config(backend="dask")``: how many tasks reach the cluster."""
    import logging
    import os
    import warnings

    import joblib
    from distributed import Client, LocalCluster, get_task_stream
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier
    from threadpoolctl import threadpool_limits

    from sweeper.workload.data import Dataset, load

    data = load(Dataset("fashion-mnist"), max_train_rows=args.rows)
    warnings.simplefilter("ignore", ConvergenceWarning)
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None, silence_logs=logging.ERROR)
    with cluster, Client(cluster) as client, threadpool_limits(1):
        pids = set(client.run(os.getpid).values())
        with joblib.parallel_config(backend="dask"), get_task_stream(client) as stream:
            started = time.perf_counter()
            model = MLPClassifier((100, 50), max_iter=args.epochs, random_state=0).fit(data.X_train, data.y_train)
            inside = time.perf_counter() - started
    with threadpool_limits(1):
        started = time.perf_counter()
        MLPClassifier((100, 50), max_iter=args.epochs, random_state=0).fit(data.X_train, data.y_train)
        plain = time.perf_counter() - started
    print(
        f"MLPClassifier.fit ({data.n_train} rows, {model.n_iter_} epochs) inside parallel_config(backend='dask'): "
        f"{len(stream.data)} tasks reached the 2 workers (pids {sorted(pids)}); the fit ran in the driver "
        f"(pid {os.getpid()}) in {inside:.1f} s; the same fit without the backend: {plain:.1f} s"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    ship = commands.add_parser("shipping", help="time per-task, per-call and per-launch data shipping")
    ship.add_argument("--rows", type=int, default=60_000, help="training rows (default 60000, the report's)")
    ship.add_argument("--fits", type=int, default=4, help="fits per batch (default 4)")
    ship.add_argument("--epochs", type=int, default=1, help="epochs per fit, exact (default 1)")
    ship.add_argument(
        "--fit-rows", type=int, default=1000, help="rows each fit trains on, of all it receives (0: all; default 1000)"
    )
    ship.add_argument(
        "--batches", type=int, default=3, help="batches per engine and delivery; the first is shown apart (default 3)"
    )
    ship.add_argument("--run-dir", default="/tmp/replicate-shipping", help="scratch and launch logs")
    ship.add_argument("--json", help="also write the figures to this JSON file")
    summ = commands.add_parser("summary", help="the README's tables from the store")
    summ.add_argument("--store", default="/tmp/replicate-store", help="store of the two grids' runs")
    one = commands.add_parser("single", help="one MLPClassifier.fit inside a Dask joblib backend: where it runs")
    one.add_argument("--rows", type=int, default=2000, help="training rows (default 2000)")
    one.add_argument("--epochs", type=int, default=3, help="epochs (default 3)")
    args = parser.parse_args(argv)
    if args.command == "shipping":
        out = shipping(args)
        if args.json:
            Path(args.json).write_text(json.dumps(out, indent=2))
        print_shipping(out)
    elif args.command == "single":
        single(args)
    else:
        summary(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
