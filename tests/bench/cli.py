"""One bench run from the command line: load the data, take every measurement, write the outputs."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sweeper.workload.data import Data
from tests.bench.analysis import time_analysis
from tests.bench.batches import compare_engines
from tests.bench.costs import time_planning, time_store
from tests.bench.machine import machine_facts
from tests.bench.memory import memory_over_launches
from tests.bench.racing import replay_racing
from tests.bench.render import _verdict, write_outputs
from tests.bench.settings import QUICK, Settings
from tests.bench.shipping import data_nbytes
from tests.bench.targets import evaluate
from tests.bench.text import _fmt, log


def load_data(rows: int) -> tuple[Data, str, str]:
    """Fashion-MNIST (a stratified ``rows``-row subset), else the bundled digits, saying so."""
    from sweeper.config.grid import Dataset
    from sweeper.errors import UserError
    from sweeper.workload import data as datasets

    try:
        datasets.check_available(Dataset("fashion-mnist"))
        data = datasets.load(Dataset("fashion-mnist"), max_train_rows=rows, seed=0)
        return data, "fashion-mnist", f"Fashion-MNIST, a stratified {data.n_train}-row subset"
    except UserError as error:
        log(f"Fashion-MNIST is not available ({error}); falling back to the bundled digits")
        data = datasets.load(Dataset("digits"), max_train_rows=rows, seed=0)
        return data, "digits", "digits (FALLBACK: Fashion-MNIST is not installed; `make setup` installs it)"


def run(settings: Settings, command: str, profile_dir: Path | None = None) -> dict[str, Any]:
    """Every measurement of the bench, as the report's JSON object."""
    from sweeper.workload.environment import applied, fit_environment

    report: dict[str, Any] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": command,
        "quick": settings.quick,
        "settings": dataclasses.asdict(settings),
        "machine": machine_facts(),
    }
    began = time.perf_counter()
    log("planning and store")
    report["plan"] = time_planning(settings.plan_measurements)
    with tempfile.TemporaryDirectory(prefix="sweeper-bench-store-") as store:
        report["store"] = time_store(settings.store_rows, settings.store_files, Path(store))
    log("racing replayed on seed 001's stores")
    report["racing"] = replay_racing(settings.racing_repeats)
    log(f"analysis of a {settings.analysis_configurations:,}-configuration store")
    with tempfile.TemporaryDirectory(prefix="sweeper-bench-analysis-") as scratch:
        report["analysis"] = time_analysis(settings.analysis_configurations, Path(scratch))
    data, dataset, note = load_data(settings.rows)
    with tempfile.TemporaryDirectory(prefix="sweeper-bench-") as scratch, applied(fit_environment(1, {})):
        batch, engines = compare_engines(settings, data, dataset, Path(scratch) / "compare", profile_dir)
        report["batch"] = {
            **batch,
            "dataset": dataset,
            "dataset_note": note,
            "n_train": data.n_train,
            "n_test": data.n_test,
            "n_features": data.n_features,
            "data_nbytes": data_nbytes(data),
        }
        report["engines"] = engines
        small, _, _ = load_data(min(settings.rows, 1_000))
        report["memory"] = {"dask": memory_over_launches("dask", settings.dask_launches, small, Path(scratch) / "m")}
        if settings.spark_launches:
            report["memory"]["spark"] = memory_over_launches(
                "spark", settings.spark_launches, small, Path(scratch) / "s"
            )
    from tests.bench.quiet import quiet_sweep  # here: `python -m tests.bench.quiet` runs that module alone

    quiet_engines = ", ".join(settings.quiet_engines)
    log(f"a quiet sweep of {settings.quiet_trials} trials per engine (false marks): {quiet_engines}")
    with tempfile.TemporaryDirectory(prefix="sweeper-bench-quiet-") as scratch:
        report["quiet_sweep"] = quiet_sweep(settings.quiet_trials, Path(scratch), settings.quiet_engines)
    if settings.yarn_start_sweeps:
        from tests.bench.yarn_starts import yarn_starts  # here, as quiet_sweep

        log(f"{settings.yarn_start_sweeps} Spark sweeps on the namespaced YARN cluster (starts paid once)")
        with tempfile.TemporaryDirectory(prefix="sweeper-bench-yarn-starts-") as scratch:
            report["yarn_starts"] = yarn_starts(settings.yarn_start_sweeps, Path(scratch))
    report["machine"]["load average at end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    report["duration_s"] = time.perf_counter() - began
    return report


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tests.bench [--quick] [--markdown BENCHMARKS.md] [--json bench.json]``."""
    from tests import bench

    description = (bench.__doc__ or "").split("\n\n")[0]
    parser = argparse.ArgumentParser(prog="python -m tests.bench", description=description)
    parser.add_argument("--quick", action="store_true", help="tiny sizes: a smoke run (targets do not apply)")
    parser.add_argument("--markdown", type=Path, default=Path("BENCHMARKS.md"), help="default: BENCHMARKS.md")
    parser.add_argument("--json", type=Path, default=Path("bench.json"), help="default: bench.json")
    parser.add_argument("--repeats", type=int, help="timed batches per engine (at least 3)")
    parser.add_argument("--epochs", type=int, help="epochs per fit (default 32: >= 2 s per fit)")
    parser.add_argument("--rows", type=int, help="training rows (default 12000)")
    parser.add_argument("--dask-launches", type=int, help="launches of the memory test (default 20)")
    parser.add_argument("--spark-launches", type=int, help="Spark launches of the memory test (default 3)")
    parser.add_argument("--profile", type=Path, metavar="DIR", help="also profile one batch per engine into DIR")
    args = parser.parse_args(argv)
    settings = QUICK if args.quick else Settings()
    overrides = {
        name: getattr(args, name)
        for name in ("repeats", "epochs", "rows", "dask_launches", "spark_launches")
        if getattr(args, name) is not None
    }
    settings = dataclasses.replace(settings, **overrides)
    if settings.repeats < 3:
        parser.error("--repeats must be at least 3")
    command = " ".join(["python -m tests.bench", *(argv if argv is not None else sys.argv[1:])])
    report = run(settings, command, args.profile)
    write_outputs(report, args.markdown, args.json)
    for check in evaluate(report):
        log(f"{check.what}: {_fmt(check.measured, 3)} {check.unit} (limit {check.limit:g}) {_verdict(check)}")
    log(f"wrote {args.markdown} and {args.json} in {report['duration_s']:.0f} s")
    return 0
