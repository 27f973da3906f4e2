"""``make bench``: the sweeper's launches against plain joblib/loky, and its planning, store and memory costs.

Run as ``python -m sweeper.bench [--quick]``. One run measures, side by side on the same batch of fits:

- **loky**: ``joblib.Parallel(n_jobs=2)`` with joblib's default backend over the same ``FitTask``s and
  the same ``Data`` (the peer to beat on one machine);
- **dask** and **spark**: the sweeper's local launches of 2 x 1 core, planned from an in-memory grid and
  started with :func:`sweeper.engines.starter`, data shipped once per launch.

All three run in the same controlled fit environment, are up at the same time, and take turns batch by
batch (the order rotates each repetition) so a noisy machine does not favour one. It also times
planning a ~10,000-measurement grid and loading a 100,000-row store, and follows the driver's memory
over 20 consecutive Dask launches (and a few Spark launches). It writes ``BENCHMARKS.md`` and
``bench.json``; the pure pieces (targets, ratios, the markdown) are unit-tested in tests/test_bench.py.
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import gc
import io
import json
import os
import platform
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from sweeper.datasets import Data
from sweeper.fitting import FitResult, FitTask, run_fit

ENGINES = ("loky", "dask", "spark")
MIB = 1024 * 1024
LOKY_MAX_NBYTES = 1024 * 1024  # joblib.Parallel's default max_nbytes="1M": larger arrays are memory-mapped

# The targets of issue 7, as (key, what, limit, unit); a measured value <= limit passes.
TARGETS: tuple[tuple[str, str, float, str], ...] = (
    ("dask_vs_loky", "Dask warm batch time / loky's", 1.10, "x"),
    ("spark_vs_loky", "Spark warm batch time / loky's", 1.25, "x"),
    ("dask_copies_per_process", "Dask: copies of the data per worker process per launch", 1, "copies"),
    ("spark_copies_per_process", "Spark: copies of the data per Python worker per launch", 1, "copies"),
    ("plan_s", "planning a ~10,000-measurement grid (make_plan)", 1.0, "s"),
    ("store_load_s", "loading a 100,000-row store into pandas (load_results)", 1.0, "s"),
    ("dask_schedulers_alive", "closed Dask schedulers still alive in the driver after the launches", 0, "objects"),
    ("dask_rss_slope_mib", "driver RSS growth per Dask launch (Theil-Sen slope, after warm-up)", 0.1, "MiB/launch"),
)
MIN_FITS = 8
MIN_FIT_S = 2.0
FULL_LAUNCHES = 20  # the memory targets are about 20 consecutive launches
MEMORY_WARMUP_LAUNCHES = 3  # launches left out of the RSS slope: first-use caches and imports


# --- settings ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    """Sizes of one bench run."""

    rows: int = 12_000
    fits: int = MIN_FITS
    epochs: int = 32
    repeats: int = 5
    dask_launches: int = 20
    spark_launches: int = 3
    plan_measurements: int = 10_000
    store_rows: int = 100_000
    store_files: int = 4
    quick: bool = False


QUICK = Settings(rows=1_000, fits=4, epochs=2, repeats=3, dask_launches=4, spark_launches=1, store_rows=10_000)


# --- pure pieces (unit-tested) -----------------------------------------------------------------------------------


def ratio(value: float | None, reference: float | None) -> float | None:
    """``value / reference``, or None when either is missing or the reference is not positive.

    >>> ratio(11.0, 10.0)
    1.1
    >>> ratio(1.0, 0.0) is None
    True
    """
    if value is None or reference is None or reference <= 0:
        return None
    return value / reference


def median(values: Sequence[float]) -> float | None:
    """The median, None for no values."""
    return statistics.median(values) if values else None


def slope(values: Sequence[float]) -> float | None:
    """Least-squares slope of ``values`` against their index (per step); None for fewer than 2 values.

    >>> slope([1.0, 2.0, 3.0])
    1.0
    """
    n = len(values)
    if n < 2:
        return None
    mean_x = (n - 1) / 2
    mean_y = sum(values) / n
    numerator = sum((i - mean_x) * (y - mean_y) for i, y in enumerate(values))
    denominator = sum((i - mean_x) ** 2 for i in range(n))
    return numerator / denominator


def robust_slope(values: Sequence[float]) -> float | None:
    """Theil-Sen slope (median of all pairwise slopes) per step: a steady leak shows, one allocator jump does not.

    >>> robust_slope([10.0, 10.0, 40.0, 10.0, 10.0])
    0.0
    >>> robust_slope([1.0, 2.0, 3.0, 4.0])
    1.0
    """
    pairs = [(values[j] - values[i]) / (j - i) for i in range(len(values)) for j in range(i + 1, len(values))]
    return statistics.median(pairs) if pairs else None


def rotation(engines: Sequence[str], repetition: int) -> tuple[str, ...]:
    """The engine order of one repetition: rotated by one each time so no engine always goes first.

    >>> rotation(("loky", "dask", "spark"), 1)
    ('dask', 'spark', 'loky')
    """
    shift = repetition % len(engines)
    return (*engines[shift:], *engines[:shift])


def bytes_per_fit(nbytes: int, receivers: int, fits: int) -> float | None:
    """Bytes of training data shipped per fit: each receiving process got ``nbytes`` once, over ``fits`` fits."""
    return nbytes * receivers / fits if fits > 0 else None


def plan_grid(measurements: int) -> dict[str, Any]:
    """An in-memory grid with about ``measurements`` measurements (5 launches x 10 model points x epochs x 4 trials).

    >>> grid = plan_grid(10_000)
    >>> len(grid["workload"]["epochs"]) * 5 * 10 * grid["workload"]["trials"]
    10000
    """
    trials = 4
    per_epoch = 5 * 10 * trials  # launches (baseline + 2 shapes x 2 engines) x model points x trials
    epochs = max(1, round(measurements / per_epoch))
    return {
        "name": "bench-plan",
        "cluster": {"manager": "local", "nodes": 1, "cores_per_node": 2, "memory_per_node": "8GiB"},
        "sizing": {"cores_per_executor": [1, 2], "reserve": {"cores": 0, "memory": "1GiB"}, "application_master": 0},
        "engines": ["spark", "dask"],
        "workload": {
            "dataset": "digits",
            "model": {"hidden_layer_sizes": [[100, 50], [64]], "alpha": [0.0001, 0.001, 0.01, 0.1, 1.0]},
            "epochs": list(range(1, epochs + 1)),
            "trials": trials,
        },
    }


def launch_grid(dataset: str, epochs: int, fits: int, trials: int) -> dict[str, Any]:
    """The grid of the batch comparison: this machine as 2 executors (workers) x 1 core, MLP (100, 50)."""
    return {
        "name": "bench",
        "cluster": {"manager": "local", "nodes": 1, "cores_per_node": 2, "memory_per_node": "8GiB"},
        "sizing": {"cores_per_executor": [1], "reserve": {"cores": 0, "memory": "1GiB"}, "application_master": 0},
        "engines": ["spark", "dask"],
        "baseline": False,
        "workload": {
            "dataset": dataset,
            "model": {"hidden_layer_sizes": [100, 50], "solver": "adam"},
            "epochs": [epochs],
            "trials": trials,
            "n_fits": fits,
            "exact_epochs": True,
            "threads_per_fit": 1,
        },
    }


@dataclass(frozen=True)
class Check:
    """One target: what was measured against its limit; ``ok`` is None when it does not apply to this run."""

    key: str
    what: str
    measured: float | None
    limit: float
    unit: str
    ok: bool | None
    note: str = ""


def machine_busy_share(report: Mapping[str, Any]) -> float | None:
    """The largest, over engines, median share of the machine's CPU used by other processes during a batch."""
    shares = [e["busy_share"] for e in report.get("engines", {}).values() if e.get("busy_share") is not None]
    return max(shares) if shares else None


def evaluate(report: Mapping[str, Any]) -> list[Check]:
    """Check a report's measurements against :data:`TARGETS`.

    The ratio targets apply to a batch of at least 8 fits of at least 2 s each; a smaller (``--quick``)
    run reports them as not applicable.
    """
    engines = report.get("engines", {})
    batch = report.get("batch", {})
    loky = engines.get("loky", {}).get("batch_median_s")
    fit_means = [e.get("fit_mean_s") for e in engines.values() if e.get("fit_mean_s") is not None]
    sized = batch.get("fits", 0) >= MIN_FITS and bool(fit_means) and min(fit_means) >= MIN_FIT_S
    size_note = "" if sized else f"needs >= {MIN_FITS} fits of >= {MIN_FIT_S:g} s (this run is smaller)"
    busy = machine_busy_share(report)
    if sized and busy is not None and busy > BUSY_LIMIT:
        sized, size_note = False, f"machine busy: {100 * busy:.0f} % of its CPU used by other processes"
    measured: dict[str, float | None] = {
        "dask_vs_loky": ratio(engines.get("dask", {}).get("batch_median_s"), loky),
        "spark_vs_loky": ratio(engines.get("spark", {}).get("batch_median_s"), loky),
        "dask_copies_per_process": engines.get("dask", {}).get("shipping", {}).get("copies_per_process"),
        "spark_copies_per_process": engines.get("spark", {}).get("shipping", {}).get("copies_per_process"),
        "plan_s": report.get("plan", {}).get("make_plan_median_s"),
        "store_load_s": report.get("store", {}).get("load_median_s"),
        "dask_rss_slope_mib": report.get("memory", {}).get("dask", {}).get("slope_mib"),
        "dask_schedulers_alive": report.get("memory", {}).get("dask", {}).get("live_schedulers_after"),
    }
    launches = len(report.get("memory", {}).get("dask", {}).get("rss_mib", []))
    checks = []
    for key, what, limit, unit in TARGETS:
        value = measured[key]
        note = ""
        if value is None:
            ok: bool | None = None
            note = "not measured"
        elif key.endswith("_vs_loky") and not sized:
            ok, note = None, size_note
        elif key == "store_load_s" and report.get("store", {}).get("rows", 0) < 100_000:
            ok, note = None, f"store of {report['store']['rows']} rows, not 100,000"
        elif key.startswith("dask_") and key != "dask_copies_per_process" and launches < FULL_LAUNCHES:
            ok, note = None, f"{launches} launches, not {FULL_LAUNCHES}"
        elif key == "plan_s" and report.get("plan", {}).get("measurements", 0) < 10_000:
            ok, note = None, f"grid of {report['plan']['measurements']} measurements, not 10,000"
        else:
            ok = value <= limit
        checks.append(Check(key, what, value, limit, unit, ok, note))
    return checks


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return str(value)


def _size(nbytes: float | None) -> str:
    if nbytes is None:
        return "-"
    return f"{nbytes / MIB:,.1f} MiB" if nbytes >= MIB else f"{nbytes / 1024:,.1f} KiB"


def _verdict(check: Check) -> str:
    if check.ok is None:
        return f"n/a ({check.note})" if check.note else "n/a"
    return "**pass**" if check.ok else "**MISSED**"


def render_markdown(report: Mapping[str, Any]) -> str:
    """BENCHMARKS.md: what was run and on what, the engine table, the targets, the other measurements."""
    machine = report.get("machine", {})
    batch = report.get("batch", {})
    lines = [
        "# Benchmarks",
        "",
        f"Generated by `{report.get('command', 'python -m sweeper.bench')}` on {report.get('date', '?')}"
        + (" (**--quick**: smoke-test sizes, targets do not apply)." if report.get("quick") else "."),
        "Regenerate with `make bench` (a full run takes a few minutes on 2 cores; run it on a quiet machine).",
        "",
        "**Machine.** " + ", ".join(f"{key}: {value}" for key, value in machine.items()),
        "",
        "## Warm batch: plain joblib (loky) vs the sweeper's Dask and Spark launches",
        "",
        f"The same batch on every engine: {batch.get('fits')} fits of `MLPClassifier{batch.get('model', '')}`, "
        f"{batch.get('epochs')} epochs each (exact, no early stop), 1 BLAS thread per fit, on "
        f"{batch.get('dataset_note', batch.get('dataset'))} ({batch.get('n_train')} x {batch.get('n_features')} "
        f"training rows, {batch.get('n_test')} test rows scored per fit; {_size(batch.get('data_nbytes'))} of arrays). "
        f"Every engine has 2 worker processes x 1 core and the same fit environment. Each engine runs one "
        f"warm-up batch (1-epoch fits), then {batch.get('repeats')} timed batches; engines take turns batch by "
        "batch, in an order that rotates each repetition, all clusters up at the same time.",
        "",
        "| engine | launch | start s | warm-up s | warm batch s (median) | batches s | vs loky | "
        "mean fit s (inside the fit) | outside fits s/batch | worker processes | data shipped per fit |",
        "| --- | --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    engines = report.get("engines", {})
    loky_median = engines.get("loky", {}).get("batch_median_s")
    for name, engine in engines.items():
        shipping = engine.get("shipping", {})
        lines.append(
            f"| {name} | {engine.get('launch', '')} | {_fmt(engine.get('start_s'))} | {_fmt(engine.get('warmup_s'))} "
            f"| {_fmt(engine.get('batch_median_s'))} | {', '.join(_fmt(s) for s in engine.get('batches_s', []))} "
            f"| {_fmt(ratio(engine.get('batch_median_s'), loky_median))} | {_fmt(engine.get('fit_mean_s'))} "
            f"| {_fmt(engine.get('outside_median_s'))} | {_fmt(engine.get('worker_processes'))} "
            f"| {_size(shipping.get('bytes_per_fit'))} |"
        )
    lines += [
        "",
        "CPU seconds used during a timed batch (median; this process and all its descendants, by part), against "
        f"the machine's {batch.get('machine_cores', '?')} cores x wall time:",
        "",
        "| engine | " + " | ".join((*CPU_PARTS, FOREIGN)) + " | cores x wall |",
        "| --- | " + " | ".join("---:" for _ in (*CPU_PARTS, FOREIGN)) + " | ---: |",
    ]
    for name, engine in engines.items():
        cpu = engine.get("cpu_median_s", {})
        available = (engine.get("batch_median_s") or 0.0) * int(batch.get("machine_cores") or 1)
        lines.append(
            f"| {name} | "
            + " | ".join(_fmt(cpu.get(part)) for part in (*CPU_PARTS, FOREIGN))
            + f" | {_fmt(available)} |"
        )
    busy = machine_busy_share(report)
    if busy is not None:
        lines += [
            "",
            f"*{FOREIGN}*: the machine's busy CPU time minus this process tree's (CI jobs, other users). "
            + (
                f"**The machine was busy**: other processes used {100 * busy:.0f} % of its CPU during the batches "
                "(median, worst engine), so the timing ratios are not judged; run again on a quiet machine."
                if busy > BUSY_LIMIT
                else f"Other processes used {100 * busy:.0f} % of the CPU during the batches (median, worst engine)."
            ),
        ]
    environments = {name: engine.get("fit_environment") for name, engine in engines.items()}
    if environments and all(environments.values()):
        same = len({json.dumps(env, sort_keys=True) for env in environments.values()}) == 1
        lines += [
            "",
            "Fit environment seen inside the fits: "
            + ("the same on every engine: " if same else "DIFFERENT: ")
            + "; ".join(
                f"{name}: {', '.join(f'{k}={v}' for k, v in sorted((env or {}).items()))}"
                for name, env in (environments.items() if not same else list(environments.items())[:1])
            )
            + ".",
        ]
    lines += [
        "",
        "*start*: the launch until its workers are registered (loky: spawning its 2 workers). *outside fits*: "
        "batch wall time minus the fits' own time spread over the 2 slots (dispatch, shipping, scheduling, "
        "waiting on the slowest fit).",
        "",
        "How the data shipped per fit is counted (data nbytes x processes that received it / fits):",
        "",
    ]
    lines += [f"- **{name}**: {engine.get('shipping', {}).get('how', '-')}" for name, engine in engines.items()]
    lines += ["", "## Targets", "", "| target | measured | limit | verdict |", "| --- | ---: | ---: | --- |"]
    for check in evaluate(report):
        digits = 3 if check.unit in ("x", "s") else 2
        lines.append(
            f"| {check.what} | {_fmt(check.measured, digits)} {check.unit} | {_fmt(check.limit, digits)} "
            f"{check.unit} | {_verdict(check)} |"
        )
    plan = report.get("plan", {})
    store = report.get("store", {})
    lines += [
        "",
        "## Planning, store, driver memory",
        "",
        f"- **Plan**: `grid.parse` + `make_plan` of an in-memory grid with {_fmt(plan.get('measurements'))} "
        f"measurements ({_fmt(plan.get('launches'))} launches x {_fmt(plan.get('points_per_launch'))} points x "
        f"{_fmt(plan.get('trials'))} trials): make_plan {_fmt(plan.get('make_plan_median_s'), 4)} s, parse "
        f"{_fmt(plan.get('parse_median_s'), 4)} s (medians of {_fmt(plan.get('runs'))}).",
        f"- **Store**: {_fmt(store.get('rows'))} synthetic rows in {_fmt(store.get('files'))} files "
        f"written with `write_rows` ({_size(store.get('bytes'))} on disk, written in {_fmt(store.get('write_s'))} s); "
        f"`load_results` {_fmt(store.get('load_median_s'), 3)} s (median of {_fmt(store.get('runs'))}: "
        f"{', '.join(_fmt(s, 3) for s in store.get('load_s', []))}).",
    ]
    for name, memory in report.get("memory", {}).items():
        rss = memory.get("rss_mib", [])
        lines.append(
            f"- **Driver memory, {len(rss)} consecutive {name} launches** ({memory.get('launch', '')}, "
            f"{memory.get('batch', '')}): RSS {_fmt(rss[0] if rss else None, 1)} -> {_fmt(rss[-1] if rss else None, 1)}"
            f" MiB; slope {_fmt(memory.get('slope_mib'), 3)} MiB/launch (Theil-Sen; least squares "
            f"{_fmt(memory.get('least_squares_slope_mib'), 3)}) over launches "
            f"{memory.get('slope_from', 1)}-{len(rss)}; open files {memory.get('fds', '-')}, threads "
            f"{memory.get('threads', '-')} (first -> last); launch {_fmt(memory.get('launch_median_s'))} s median"
            + (
                f"; Dask `Scheduler` objects still alive after all launches: {memory['live_schedulers_after']}."
                if memory.get("live_schedulers_after") is not None
                else "."
            )
        )
    if any(rss for rss in (m.get("rss_mib") for m in report.get("memory", {}).values())):
        lines += ["", "RSS after each launch (MiB):", ""]
        for name, memory in report.get("memory", {}).items():
            lines.append(f"- {name}: " + ", ".join(f"{v:.0f}" for v in memory.get("rss_mib", [])))
    findings = diagnose(report)
    if findings:
        lines += ["", "## Findings", ""]
        lines += [f"- {finding}" for finding in findings]
    lines += ["", f"Machine-readable: `{report.get('json_path', 'bench.json')}`.", ""]
    return "\n".join(lines)


def write_outputs(report: dict[str, Any], markdown_path: Path, json_path: Path) -> None:
    """Write BENCHMARKS.md and bench.json (the report with its target checks)."""
    report = {**report, "json_path": str(json_path)}
    report["targets"] = [dataclasses.asdict(check) for check in evaluate(report)]
    report["findings"] = diagnose(report)
    markdown_path.write_text(render_markdown(report))
    json_path.write_text(json.dumps(report, indent=2, default=str) + "\n")


def diagnose(report: Mapping[str, Any]) -> list[str]:
    """Findings read off the numbers: where an engine's time goes, and the causes of missed targets."""
    engines = report.get("engines", {})
    loky = engines.get("loky", {})
    cores = report.get("batch", {}).get("machine_cores") or 1
    findings = []
    for name in ("dask", "spark"):
        engine = engines.get(name)
        if not engine or not loky:
            continue
        batch_ratio = ratio(engine.get("batch_median_s"), loky.get("batch_median_s"))
        fit_ratio = ratio(engine.get("fit_mean_s"), loky.get("fit_mean_s"))
        outside = engine.get("outside_median_s")
        loky_outside = loky.get("outside_median_s")
        if batch_ratio is None or fit_ratio is None or outside is None or loky_outside is None:
            continue
        cpu = engine.get("cpu_median_s", {})
        wall = engine.get("batch_median_s") or 0.0
        machinery = sum(cpu.get(part) or 0.0 for part in CPU_PARTS if part != "fit workers")
        findings.append(
            f"{name}: warm batch {batch_ratio:.3f}x loky's. Inside the fits {fit_ratio:.3f}x loky's "
            f"({engine['fit_mean_s']:.2f} s vs {loky['fit_mean_s']:.2f} s per fit); outside the fits "
            f"{outside:.2f} s per batch vs loky's {loky_outside:.2f} s. Processes other than the fit workers used "
            f"{machinery:.2f} CPU-s per batch ({100 * machinery / max(wall * cores, 1e-9):.0f} % of the machine)"
            + (f", {cpu.get('JVMs', 0.0):.2f} of them in JVMs." if name == "spark" else ".")
        )
    spark = engines.get("spark", {})
    if spark.get("batches_s") and len(spark["batches_s"]) >= 3:
        first, last = spark["batches_s"][0], spark["batches_s"][-1]
        jvm = [batch.get("JVMs", 0.0) for batch in spark.get("cpu_s", [])]
        if jvm and jvm[-1] < 0.75 * jvm[0]:
            findings.append(
                f"spark: JVM CPU per batch went {jvm[0]:.2f} -> {jvm[-1]:.2f} CPU-s and the batch {first:.2f} -> "
                f"{last:.2f} s from the first to the last timed batch. Every joblib task is a Spark job (driver "
                "scheduling, task serialisation, executor and Python worker hand-off); the driver JVM's JIT is still "
                "warming up over the first few dozen jobs, and on 2 cores that CPU comes out of the fits' share."
            )
    slots = report.get("batch", {}).get("slots") or 2
    if (spark.get("worker_processes") or 0) > slots:
        findings.append(
            f"spark: {spark['worker_processes']} Python worker processes ran fits on {slots} slots. Spark stops a "
            "Python worker that has been idle for a minute, which happens while the other engines take their "
            "turns on a slow or busy machine; each new worker imports scikit-learn again and reads the broadcast "
            "once more (from its executor, not over the network). Back-to-back batches of a sweep keep them alive."
        )
    dask_shipping = engines.get("dask", {}).get("shipping", {})
    if dask_shipping.get("peer_fetches"):
        findings.append(
            f"dask: workers fetched the training data again from a peer {dask_shipping['peer_fetches']} times "
            "after the broadcast. Dask's Active Memory Manager (on by default, every 2 s) drops 'superfluous' "
            "replicas of keys no task is waiting for, broadcast ones included; the next batch's fits on that "
            "worker then wait for a 'data' transfer (which Dask's sizeof counts as a few bytes). Fix: stop the "
            "AMM for the launch (`client.amm.stop()` before the scatter) so each worker keeps its one copy."
        )
    memory = report.get("memory", {}).get("dask", {})
    if memory.get("live_schedulers_after"):
        findings.append(
            f"dask: {memory['live_schedulers_after']} closed Schedulers were still alive in the driver after the "
            "launches (LocalCluster runs its scheduler in the driver). distributed caches `_expects_comm(handler)` "
            "with an unbounded `functools.cache` keyed by bound methods, which keeps every Scheduler that served "
            "a request alive. Fix: `distributed.core._expects_comm.cache_clear()` after each Dask launch."
        )
    for check in evaluate(report):
        if check.ok is False:
            findings.append(f"MISSED: {check.what}: {_fmt(check.measured, 3)} {check.unit}, limit {check.limit:g}.")
    return findings


# --- measurements ------------------------------------------------------------------------------------------------


def log(message: str) -> None:
    """Progress on stderr."""
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def machine_cores() -> int:
    """Cores of this machine."""
    return os.cpu_count() or 1


def data_nbytes(data: Data) -> int:
    """Bytes of the four arrays a fit receives."""
    return int(sum(a.nbytes for a in (data.X_train, data.y_train, data.X_test, data.y_test)))


@dataclass
class EngineRun:
    """What one engine did during the batch comparison."""

    engine: str
    launch: str
    start_s: float = 0.0
    warmup_s: float = 0.0
    batches_s: list[float] = field(default_factory=list)
    fit_s: list[list[float]] = field(default_factory=list)
    pids: set[int] = field(default_factory=set)
    fits_run: int = 0
    shipping: dict[str, Any] = field(default_factory=dict)
    cpu_s: list[dict[str, float]] = field(default_factory=list)
    environment: dict[str, str] = field(default_factory=dict)

    def summary(self, slots: int) -> dict[str, Any]:
        """The JSON object of this engine."""
        outside = [wall - sum(fits) / slots for wall, fits in zip(self.batches_s, self.fit_s, strict=True)]
        all_fits = [s for fits in self.fit_s for s in fits]
        return {
            "launch": self.launch,
            "start_s": self.start_s,
            "warmup_s": self.warmup_s,
            "batches_s": self.batches_s,
            "batch_median_s": median(self.batches_s),
            "fit_mean_s": statistics.fmean(all_fits) if all_fits else None,
            "fit_max_s": max(all_fits) if all_fits else None,
            "outside_s": outside,
            "outside_median_s": median(outside),
            "worker_processes": len(self.pids),
            "fits_run": self.fits_run,
            "shipping": self.shipping,
            "cpu_s": self.cpu_s,
            "cpu_median_s": {
                part: median([batch.get(part, 0.0) for batch in self.cpu_s]) for part in (*CPU_PARTS, FOREIGN)
            },
            "busy_share": median(
                [
                    batch.get(FOREIGN, 0.0) / max(wall * machine_cores(), 1e-9)
                    for batch, wall in zip(self.cpu_s, self.batches_s, strict=True)
                ]
            ),
            "fit_environment": self.environment,
        }


class LokySession:
    """The peer: ``joblib.Parallel(n_jobs)`` with joblib's default backend, loky."""

    def __init__(self, n_jobs: int) -> None:
        self.n_jobs = n_jobs

    def run_batch(self, tasks: list[FitTask], data: Data) -> list[FitResult]:
        import joblib

        results: list[FitResult] = joblib.Parallel(n_jobs=self.n_jobs)(
            joblib.delayed(run_fit)(task, data) for task in tasks
        )
        return results


def _loky_probe(data: Data) -> tuple[int, bool]:
    """Inside a loky worker: its pid, and whether the training array arrived memory-mapped."""
    import numpy as np

    return os.getpid(), isinstance(data.X_train, np.memmap)


@contextmanager
def loky_started(n_jobs: int, data: Data, run: EngineRun) -> Iterator[LokySession]:
    """Spawn loky's workers (timed as its start); shut them down at the end."""
    import joblib
    from joblib.externals.loky import reusable_executor

    started = time.perf_counter()
    probes = joblib.Parallel(n_jobs=n_jobs)(joblib.delayed(os.getpid)() for _ in range(n_jobs))
    run.start_s = time.perf_counter() - started
    memmapped = joblib.Parallel(n_jobs=n_jobs)(joblib.delayed(_loky_probe)(data) for _ in range(n_jobs))
    run.shipping["memmapped"] = all(flag for _, flag in memmapped)
    run.shipping["startup_pids"] = sorted(set(probes))
    try:
        yield LokySession(n_jobs)
    finally:
        executor = reusable_executor._executor
        if executor is not None:
            executor.shutdown(wait=True, kill_workers=True)


def _dask_worker_copies(dask_worker: Any, key: str | None = None) -> dict[str, Any]:
    """Inside a Dask worker: the training data it holds, and how often it fetched ``key`` from a peer.

    The transfer log's byte counts come from Dask's ``sizeof``, which does not see inside a ``Data``;
    each fetch of the key is a whole copy all the same.
    """
    held = {}
    for name in list(dask_worker.data.keys()):
        value = dask_worker.data[name]
        if isinstance(value, Data):
            held[str(name)] = data_nbytes(value)
    fetches = sum(
        1
        for entry in getattr(dask_worker, "transfer_incoming_log", [])
        if key is not None and key in {str(k) for k in entry.get("keys", {})}
    )
    return {"pid": os.getpid(), "held": held, "fetches": fetches}


def dask_shipping(session: Any, data: Data, run: EngineRun, key_before: str | None) -> dict[str, Any]:
    """Measured on the workers: who holds the scattered data now, and how often each worker received it."""
    key = _dask_key(session)
    workers = session.client.run(_dask_worker_copies, key=key)
    holders = sum(1 for w in workers.values() if w["held"])
    fetches = [int(w["fetches"]) for w in workers.values()]
    received = [1 + n for n in fetches]  # scatter(broadcast=True) gave every worker one copy, then peer fetches
    receivers = sum(received)
    nbytes = data_nbytes(data)
    same = key is not None and key == key_before
    return {
        "data_nbytes": nbytes,
        "scatter_key_unchanged": same,
        "workers": len(workers),
        "holders_at_end": holders,
        "peer_fetches": sum(fetches),
        "copies_per_process": max(received, default=0) if same else None,
        "receivers": receivers,
        "fits": run.fits_run,
        "bytes_per_fit": bytes_per_fit(nbytes, receivers, run.fits_run),
        "how": (
            f"measured on the workers with `client.run`: the data ({_size(nbytes)}) was scattered once "
            f"(broadcast to all {len(workers)} workers; the same key from the warm-up to the last batch: "
            f"{'yes' if same else 'NO'}); afterwards workers fetched it again from a peer {sum(fetches)} times "
            f"(per worker: {fetches}; the transfer log's keys); {holders} of {len(workers)} workers still hold it "
            f"at the end. ({_size(nbytes)} x {receivers} receptions) / {run.fits_run} fits of the launch "
            "(warm-up included). Tasks carry a future, not the arrays."
        ),
    }


def spark_shipping(session: Any, data: Data, run: EngineRun, broadcast_before: Any) -> dict[str, Any]:
    """The broadcast's pickled size, times the Python workers that ran fits (each reads a broadcast once)."""
    shipped = getattr(session, "_shipped", None)
    broadcast = shipped[1].broadcast if shipped else None
    path = getattr(broadcast, "_path", None)
    size = os.path.getsize(path) if path and os.path.exists(path) else data_nbytes(data)
    executors = session.granted.executors
    receivers = len(run.pids)
    return {
        "data_nbytes": data_nbytes(data),
        "broadcast_bytes": size,
        "broadcast_unchanged": broadcast is not None and broadcast is broadcast_before,
        "executors": executors,
        "copies_per_process": 1 if broadcast is not None and broadcast is broadcast_before else None,
        "receivers": receivers,
        "fits": run.fits_run,
        "bytes_per_fit": bytes_per_fit(size, receivers, run.fits_run),
        "how": (
            f"one broadcast of {_size(size)} (pickled) made once per launch (the same broadcast from the warm-up "
            f"to the last batch: {'yes' if broadcast is not None and broadcast is broadcast_before else 'NO'}); "
            f"each of the {executors} executor JVMs fetches it once and each Python worker process reads it once "
            f"(PySpark sends a worker only broadcasts it has not seen); {receivers} Python worker processes ran fits: "
            f"{_size(size)} x {receivers} / {run.fits_run} fits of the launch (warm-up included)."
        ),
    }


def loky_shipping(data: Data, run: EngineRun, batches: int) -> dict[str, Any]:
    """Reasoned from joblib's auto-memmapping: big arrays go to a shared file once per call, small ones per task."""
    arrays = (data.X_train, data.y_train, data.X_test, data.y_test)
    mapped = sum(a.nbytes for a in arrays if a.nbytes > LOKY_MAX_NBYTES)
    pickled = sum(a.nbytes for a in arrays if a.nbytes <= LOKY_MAX_NBYTES)
    shipped = mapped * batches + pickled * run.fits_run
    memmapped = run.shipping.get("memmapped")
    return {
        "data_nbytes": data_nbytes(data),
        "memmapped": memmapped,
        "memmapped_bytes_per_call": mapped,
        "pickled_bytes_per_task": pickled,
        "receivers": len(run.pids),
        "fits": run.fits_run,
        "copies_per_process": None,
        "bytes_per_fit": shipped / run.fits_run if run.fits_run else None,
        "how": (
            f"joblib memory-maps arrays over 1 MiB ({_size(mapped)}; checked inside the workers: "
            f"{'memmapped' if memmapped else 'NOT memmapped'}): they are written once per Parallel call (batch) to a "
            f"shared temporary file both workers map (no copy per process); the small arrays ({_size(pickled)}) are "
            f"pickled with every task. ({_size(mapped)} x {batches} batches + {_size(pickled)} x {run.fits_run} "
            f"fits) / {run.fits_run} fits."
        ),
    }


CPU_PARTS = ("fit workers", "driver", "JVMs", "other processes")
FOREIGN = "not this bench"  # machine-wide busy CPU minus this process tree: CI jobs, other users
BUSY_LIMIT = 0.10  # above this share of the machine used by others during the batches, timing ratios are not judged


def machine_busy_s() -> float:
    """Busy CPU seconds of the whole machine so far (all cores; idle and I/O wait excluded)."""
    import psutil

    times = psutil.cpu_times()
    return float(sum(times) - times.idle - getattr(times, "iowait", 0.0))


def cpu_snapshot() -> dict[int, tuple[float, bool]]:
    """CPU seconds (user + system) so far of this process and every descendant, with whether it is a JVM."""
    import psutil

    me = psutil.Process()
    found = {}
    for process in [me, *me.children(recursive=True)]:
        try:
            times = process.cpu_times()
            found[process.pid] = (times.user + times.system, process.name() == "java")
        except psutil.Error:
            continue
    return found


def cpu_by_part(
    before: Mapping[int, tuple[float, bool]],
    after: Mapping[int, tuple[float, bool]],
    fit_pids: set[int],
    driver: int | None = None,
) -> dict[str, float]:
    """CPU seconds used between two snapshots: by the processes that ran fits, the driver, JVMs, the rest.

    >>> cpu_by_part({1: (1.0, False), 2: (0.0, True)}, {1: (1.5, False), 2: (2.0, True), 3: (3.0, False)}, {3}, 1)
    {'fit workers': 3.0, 'driver': 0.5, 'JVMs': 2.0, 'other processes': 0.0}
    """
    parts = dict.fromkeys(CPU_PARTS, 0.0)
    driver = os.getpid() if driver is None else driver
    for pid, (seconds, is_jvm) in after.items():
        used = seconds - before.get(pid, (0.0, is_jvm))[0]
        if pid in fit_pids:
            parts["fit workers"] += used
        elif pid == driver:
            parts["driver"] += used
        elif is_jvm:
            parts["JVMs"] += used
        else:
            parts["other processes"] += used
    return parts


def _record(run: EngineRun, results: list[FitResult]) -> None:
    run.pids.update(r.pid for r in results)
    run.fits_run += len(results)
    if results and not run.environment:
        run.environment = dict(results[0].environment)


def compare_engines(
    settings: Settings, data: Data, dataset: str, run_dir: Path, profile_dir: Path | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The batch comparison: loky, Dask and Spark up together, taking turns batch by batch."""
    from sweeper import grid as grids
    from sweeper.engines import starter
    from sweeper.engines.base import LaunchContext
    from sweeper.fit_environment import fit_environment
    from sweeper.fitting import make_batch
    from sweeper.plan import make_plan

    raw = launch_grid(dataset, settings.epochs, settings.fits, settings.repeats)
    plan = make_plan(grids.parse(raw, Path("<bench>")))
    launches = {launch.engine: launch for launch in plan.launches}
    workload = plan.grid.workload
    context = LaunchContext(
        run_dir=run_dir,
        environment=fit_environment(workload.threads_per_fit, dict(plan.grid.environment)),
        threads_per_fit=workload.threads_per_fit,
    )
    slots = launches["dask"].total_cores // workload.threads_per_fit

    def batch(trial: int, epochs: int) -> list[FitTask]:
        point = plan.points[0][0]
        return make_batch(
            point.mode,
            point.model_params,
            epochs,
            trial,
            plan.fits(point.mode),
            n_train=data.n_train,
            labels=data.y_train,
            folds=workload.folds,
            param_grid=workload.param_grid,
            seed=workload.seed,
            exact_epochs=workload.exact_epochs,
            threads_per_fit=workload.threads_per_fit,
        )

    runs = {
        "loky": EngineRun("loky", f"joblib.Parallel(n_jobs={slots}), loky"),
        "dask": EngineRun("dask", launches["dask"].label),
        "spark": EngineRun("spark", launches["spark"].label),
    }
    sessions: dict[str, Any] = {}
    marks: dict[str, Any] = {}
    with ExitStack() as stack:
        # loky first: its workers then predate the engines' process tracking, which reaps what a launch started.
        log("starting loky workers")
        sessions["loky"] = stack.enter_context(loky_started(slots, data, runs["loky"]))
        for name in ("dask", "spark"):
            log(f"starting {launches[name].label}")
            started = time.perf_counter()
            sessions[name] = stack.enter_context(starter(name, "local")(launches[name], context))
            runs[name].start_s = time.perf_counter() - started
        stack.callback(_shutdown_loky)  # runs first on exit, before the launches reap their children
        warmup = batch(trial=0, epochs=1)
        for name in ENGINES:
            started = time.perf_counter()
            _record(runs[name], sessions[name].run_batch(warmup, data))
            runs[name].warmup_s = time.perf_counter() - started
            log(f"{name} warm-up {runs[name].warmup_s:.2f} s")
        marks["dask"] = _dask_key(sessions["dask"])
        marks["spark"] = _spark_broadcast(sessions["spark"])
        for repetition in range(settings.repeats):
            tasks = batch(trial=repetition + 1, epochs=settings.epochs)
            for name in rotation(ENGINES, repetition):
                cpu_before, busy_before = cpu_snapshot(), machine_busy_s()
                started = time.perf_counter()
                results = sessions[name].run_batch(tasks, data)
                wall = time.perf_counter() - started
                parts = cpu_by_part(cpu_before, cpu_snapshot(), {r.pid for r in results})
                parts[FOREIGN] = max(0.0, machine_busy_s() - busy_before - sum(parts.values()))
                runs[name].cpu_s.append(parts)
                runs[name].batches_s.append(wall)
                runs[name].fit_s.append([r.fit_s for r in results])
                _record(runs[name], results)
                log(f"repetition {repetition + 1}/{settings.repeats} {name}: {wall:.2f} s")
        if profile_dir is not None:
            profile_batches(sessions, batch(trial=settings.repeats + 1, epochs=settings.epochs), data, profile_dir)
        runs["dask"].shipping = dask_shipping(sessions["dask"], data, runs["dask"], marks["dask"])
        runs["spark"].shipping = spark_shipping(sessions["spark"], data, runs["spark"], marks["spark"])
        runs["loky"].shipping = loky_shipping(data, runs["loky"], 1 + settings.repeats)
        log("tearing down")
    batch_info = {
        "fits": plan.n_fits,
        "epochs": settings.epochs,
        "repeats": settings.repeats,
        "model": "(hidden_layer_sizes=(100, 50), solver='adam')",
        "threads_per_fit": workload.threads_per_fit,
        "slots": slots,
        "machine_cores": machine_cores(),
    }
    return batch_info, {name: run.summary(slots) for name, run in runs.items()}


def _shutdown_loky() -> None:
    from joblib.externals.loky import reusable_executor

    executor = reusable_executor._executor
    if executor is not None:
        executor.shutdown(wait=True, kill_workers=True)


def _dask_key(session: Any) -> str | None:
    shipped = getattr(session, "_shipped", None)
    return str(shipped[1].key) if shipped else None


def _spark_broadcast(session: Any) -> Any:
    shipped = getattr(session, "_shipped", None)
    return shipped[1].broadcast if shipped else None


def profile_batches(sessions: Mapping[str, Any], tasks: list[FitTask], data: Data, directory: Path) -> None:
    """One extra, untimed batch per engine under cProfile (the driver's side): ENGINE.pstats and ENGINE.txt."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, session in sessions.items():
        profiler = cProfile.Profile()
        started = time.perf_counter()
        profiler.enable()
        results = session.run_batch(tasks, data)
        profiler.disable()
        wall = time.perf_counter() - started
        profiler.dump_stats(directory / f"{name}.pstats")
        text = io.StringIO()
        stats = pstats.Stats(profiler, stream=text).sort_stats("cumulative")
        stats.print_stats(30)
        fits = ", ".join(f"{r.fit_s:.2f}" for r in results)
        (directory / f"{name}.txt").write_text(f"wall {wall:.3f} s; fits (s): {fits}\n\n{text.getvalue()}")
        log(f"profiled {name}: {wall:.2f} s -> {directory / f'{name}.pstats'}")


def time_planning(measurements: int, runs: int = 5) -> dict[str, Any]:
    """Parse and plan an in-memory grid of ~``measurements`` measurements; medians of ``runs``."""
    from sweeper import grid as grids
    from sweeper.plan import make_plan

    raw = plan_grid(measurements)
    parse_s, plan_s = [], []
    plan = None
    for _ in range(runs):
        started = time.perf_counter()
        grid = grids.parse(raw, Path("<bench-plan>"))
        parsed = time.perf_counter()
        plan = make_plan(grid)
        plan_s.append(time.perf_counter() - parsed)
        parse_s.append(parsed - started)
    assert plan is not None
    return {
        "measurements": plan.n_measurements,
        "launches": len(plan.launches),
        "points_per_launch": len(plan.points[plan.launches[0].index]),
        "trials": plan.grid.workload.trials,
        "runs": runs,
        "parse_s": parse_s,
        "make_plan_s": plan_s,
        "parse_median_s": median(parse_s),
        "make_plan_median_s": median(plan_s),
    }


def synthetic_rows(count: int, start: int = 0) -> list[Mapping[str, Any]]:
    """Store rows shaped like a sweep's (every column filled, a few distinct values per column)."""
    from sweeper.store import COLUMNS

    base = datetime(2025, 1, 1, tzinfo=UTC)
    rows: list[Mapping[str, Any]] = []
    for i in range(start, start + count):
        engine = ("spark", "dask", "local")[i % 3]
        row: dict[str, Any] = {
            "sweep": "bench",
            "run_id": f"run-{i // 10_000}",
            "grid_hash": "0123456789ab",
            "measurement_key": f"key-{i}",
            "launch_index": i % 5,
            "engine": engine,
            "manager": "local",
            "rule": "report",
            "nodes": 1,
            "cores_per_executor": 1 + i % 2,
            "executors": 2,
            "total_cores": 2,
            "executor_memory_gib": 2.0,
            "memory_overhead_gib": 1.0,
            "granted_executors": 2,
            "granted_cores_per_executor": 1,
            "granted_executor_memory_gib": 2.0,
            "dataset": "fashion-mnist",
            "n_train": 12_000,
            "n_test": 10_000,
            "n_features": 784,
            "fraction": 1.0,
            "mode": "replicas",
            "n_fits": 8,
            "model_params": '{"hidden_layer_sizes": [100, 50], "solver": "adam"}',
            "hidden_layer_sizes": "100,50",
            "exact_epochs": True,
            "epochs": 1 + i % 100,
            "epochs_run": 1 + i % 100,
            "epochs_run_mean": float(1 + i % 100),
            "converged": False,
            "trial": i % 4,
            "cluster_start_s": 2.5,
            "warmup_s": 1.0,
            "fit_wall_s": 10.0 + (i % 97) / 10,
            "fit_task_sum_s": 40.0,
            "fit_task_max_s": 5.0,
            "accuracy": 0.8 + (i % 13) / 100,
            "accuracy_best": 0.85,
            "teardown_s": 1.0,
            "status": "ok" if i % 50 else "failed",
            "error_type": None if i % 50 else "ValueError",
            "error": None if i % 50 else "synthetic failure",
            "host": "bench-host",
            "started_at": base.replace(microsecond=i % 1_000_000),
            "threads_per_fit": 1,
            "fit_environment": '{"OMP_NUM_THREADS": "1", "PYTHONHASHSEED": "6640"}',
            "worker_pids": 2,
            "python_version": "3.11",
            "sklearn_version": "1.9",
            "joblib_version": "1.6",
            "dask_version": "2025.2",
            "pyspark_version": "4.3",
            "java_version": "17",
            "dry_run": False,
        }
        rows.append({key: row[key] for key in COLUMNS if key in row})
    return rows


def time_store(rows: int, files: int, directory: Path, runs: int = 3) -> dict[str, Any]:
    """Write a synthetic store of ``rows`` rows in ``files`` files, then time ``load_results``."""
    from sweeper.store import load_results, write_rows

    per_file = -(-rows // files)
    started = time.perf_counter()
    for index in range(files):
        count = min(per_file, rows - index * per_file)
        write_rows(directory, "bench", synthetic_rows(count, start=index * per_file), f"part-bench-{index:03d}")
    write_s = time.perf_counter() - started
    load_s = []
    loaded = 0
    for _ in range(runs):
        started = time.perf_counter()
        frame = load_results(directory)
        load_s.append(time.perf_counter() - started)
        loaded = len(frame)
        del frame
    return {
        "rows": loaded,
        "files": files,
        "bytes": sum(p.stat().st_size for p in directory.rglob("*.parquet")),
        "write_s": write_s,
        "runs": runs,
        "load_s": load_s,
        "load_median_s": median(load_s),
    }


def _rss_mib() -> float:
    import psutil

    return float(psutil.Process().memory_info().rss) / MIB


def memory_over_launches(
    engine: str, launches: int, data: Data, run_dir: Path, threads_per_fit: int = 1
) -> dict[str, Any]:
    """The driver's RSS after each of ``launches`` consecutive launches of 1 worker x 2 cores with a 2-fit batch."""
    import psutil

    from sweeper import grid as grids
    from sweeper.engines import starter
    from sweeper.engines.base import LaunchContext
    from sweeper.fit_environment import fit_environment
    from sweeper.plan import make_plan

    raw = launch_grid("digits", 1, 2, 1)
    # One worker process of 2 threads: a 1 x 1 launch would make joblib run the fits in the driver (n_jobs=1).
    raw["sizing"]["cores_per_executor"] = [2]
    plan = make_plan(grids.parse(raw, Path("<bench-memory>")))
    launch = next(launch for launch in plan.launches if launch.engine == engine)
    context = LaunchContext(run_dir=run_dir, environment=fit_environment(threads_per_fit, {}), threads_per_fit=1)
    tasks = [
        FitTask(params=(("hidden_layer_sizes", (100, 50)),), epochs=1, seed=i, exact_epochs=True, threads_per_fit=1)
        for i in range(2)
    ]
    me = psutil.Process()
    rss, durations, fds, threads = [], [], [], []
    for index in range(launches):
        started = time.perf_counter()
        with starter(engine, "local")(dataclasses.replace(launch, index=100 + index), context) as session:
            session.run_batch(tasks, data)
        del session
        durations.append(time.perf_counter() - started)
        gc.collect()
        rss.append(_rss_mib())
        fds.append(me.num_fds())
        threads.append(me.num_threads())
        log(f"{engine} launch {index + 1}/{launches}: {durations[-1]:.1f} s, RSS {rss[-1]:.1f} MiB")
    skip = MEMORY_WARMUP_LAUNCHES if launches > MEMORY_WARMUP_LAUNCHES + 2 else 0
    leftovers = None
    if engine == "dask":
        from distributed import Scheduler

        gc.collect()
        leftovers = sum(1 for o in gc.get_objects() if isinstance(o, Scheduler))
    return {
        "launch": launch.label,
        "batch": f"2 fits x 1 epoch, {data.n_train} training rows, data {_size(data_nbytes(data))}",
        "rss_mib": rss,
        "slope_from": skip + 1,
        "slope_mib": robust_slope(rss[skip:]),
        "least_squares_slope_mib": slope(rss[skip:]),
        "live_schedulers_after": leftovers,
        "growth_mib": rss[-1] - rss[skip] if rss else None,
        "fds": f"{fds[0]} -> {fds[-1]}" if fds else "-",
        "threads": f"{threads[0]} -> {threads[-1]}" if threads else "-",
        "launch_median_s": median(durations),
    }


# --- the run -----------------------------------------------------------------------------------------------------


def machine_facts() -> dict[str, str]:
    """What the numbers were measured on."""
    import psutil

    from sweeper.versions import java_version

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    facts = {
        "host": platform.node(),
        "cpu": cpu,
        "cores": f"{os.cpu_count()} ({len(os.sched_getaffinity(0))} usable)",
        "memory": f"{psutil.virtual_memory().total / 1024**3:.1f} GiB",
        "os": f"{platform.system()} {platform.release()}",
        "load average at start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "python": platform.python_version(),
        "java": java_version(),
    }
    for package in ("numpy", "scikit-learn", "joblib", "dask", "distributed", "pyspark", "joblibspark"):
        try:
            facts[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            facts[package] = "not installed"
    return facts


def load_data(rows: int) -> tuple[Data, str, str]:
    """Fashion-MNIST (a stratified ``rows``-row subset), else the bundled digits, saying so."""
    from sweeper import datasets
    from sweeper.errors import UserError
    from sweeper.grid import Dataset

    try:
        datasets.check_available(Dataset("fashion-mnist"))
        data = datasets.load(Dataset("fashion-mnist"), max_train_rows=rows, seed=0)
        return data, "fashion-mnist", f"Fashion-MNIST, a stratified {data.n_train}-row subset"
    except UserError as error:
        log(f"Fashion-MNIST is not available ({error}); falling back to the bundled digits")
        data = datasets.load(Dataset("digits"), max_train_rows=rows, seed=0)
        return data, "digits", "digits (FALLBACK: Fashion-MNIST is not installed; `make datasets`)"


def run(settings: Settings, command: str, profile_dir: Path | None = None) -> dict[str, Any]:
    """Every measurement of the bench, as the report's JSON object."""
    from sweeper.fit_environment import applied, fit_environment

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
    report["machine"]["load average at end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    report["duration_s"] = time.perf_counter() - began
    return report


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m sweeper.bench [--quick] [--markdown BENCHMARKS.md] [--json bench.json]``."""
    parser = argparse.ArgumentParser(prog="python -m sweeper.bench", description=__doc__.split("\n\n")[0])
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
    command = " ".join(["python -m sweeper.bench", *(argv if argv is not None else sys.argv[1:])])
    report = run(settings, command, args.profile)
    write_outputs(report, args.markdown, args.json)
    for check in evaluate(report):
        log(f"{check.what}: {_fmt(check.measured, 3)} {check.unit} (limit {check.limit:g}) {_verdict(check)}")
    log(f"wrote {args.markdown} and {args.json} in {report['duration_s']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
