"""Judging a bench report: its measurements against the targets, and the findings read off the numbers."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tests.bench.machine import CPU_PARTS
from tests.bench.stats import ratio
from tests.bench.text import _fmt

# The targets (issues 7, 34, 38 and 39), as (key, what, limit, unit); a measured value <= limit passes.
TARGETS: tuple[tuple[str, str, float, str], ...] = (
    ("dask_vs_loky", "Dask warm batch time / loky's", 1.05, "x"),
    ("spark_vs_loky", "Spark warm batch time / loky's", 1.05, "x"),
    ("spark_outside_s", "Spark: a warm batch's time outside the fits", 0.5, "s/batch"),
    ("spark_start_s", "Spark: a local launch's start (2 executors, until registered)", 6.0, "s"),
    ("dask_copies_per_process", "Dask: copies of the data per worker process per launch", 1, "copies"),
    ("spark_copies_per_process", "Spark: copies of the data per Python worker per launch", 1, "copies"),
    ("plan_s", "planning a ~10,000-measurement grid (make_plan)", 1.0, "s"),
    ("store_load_s", "loading a 100,000-row store into pandas (load_results)", 0.3, "s"),
    (
        "store_load_vs_parquet",
        "loading a 100,000-row store (load_results) / a plain pandas.read_parquet of its files, taking turns",
        2.0,
        "x",
    ),
    (
        "analysis_s",
        "slowest of recommend, predict --validate, replay race/halving, report on 1,000 configurations",
        10.0,
        "s",
    ),
    (
        "racing_cost_pct",
        "replay --strategy auto on seed 001's stores: the most node-seconds, share of the grid",
        30.0,
        "%",
    ),
    ("racing_missed_pct", "replay --strategy auto on seed 001's stores: repeats not within 5 % of the best", 5.0, "%"),
    ("racing_starts_pct", "replay --strategy auto where starts dominate: node-seconds, share of the grid", 105.0, "%"),
    (
        "yarn_later_start_ratio",
        "namespaced YARN cluster: a later Spark launch's start / the first's (jars and environment localized once)",
        0.25,
        "x",
    ),
    ("dask_schedulers_alive", "closed Dask schedulers still alive in the driver after the launches", 0, "objects"),
    ("dask_rss_slope_mib", "driver RSS growth per Dask launch (Theil-Sen slope, after warm-up)", 0.1, "MiB/launch"),
    ("measuring_pct", "measuring CPU and memory (in the fits and the driver), share of a batch's time", 2.0, "%"),
    (
        "interference_pct",
        "reading interference (CPU counters in the fits, the driver's process tree), share of a batch's time",
        1.0,
        "%",
    ),
    ("false_marks_pct", "a local sweep's measurements taken while quiet, marked disturbed", 5.0, "%"),
)
MIN_FITS = 8
MIN_FIT_S = 2.0
FULL_LAUNCHES = 20  # the memory targets are about 20 consecutive launches
ANALYSIS_CONFIGURATIONS = 1_000  # the analysis target is about a store of this many configurations


BUSY_LIMIT = 0.10  # above this share of the machine used by others during the batches, timings are not judged
# judged on a full, quiet run only: the ratios and Spark's times, and the shares of a batch's time (a quick run's
# batches of a few tenths of a second made reading interference 3 % of one)
TIMED = ("dask_vs_loky", "spark_vs_loky", "spark_outside_s", "spark_start_s", "measuring_pct", "interference_pct")


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
        "spark_outside_s": engines.get("spark", {}).get("outside_median_s"),
        "spark_start_s": engines.get("spark", {}).get("start_s"),
        "dask_copies_per_process": engines.get("dask", {}).get("shipping", {}).get("copies_per_process"),
        "spark_copies_per_process": engines.get("spark", {}).get("shipping", {}).get("copies_per_process"),
        "plan_s": report.get("plan", {}).get("make_plan_median_s"),
        "store_load_s": report.get("store", {}).get("load_median_s"),
        "store_load_vs_parquet": report.get("store", {}).get("load_vs_parquet"),
        "dask_rss_slope_mib": report.get("memory", {}).get("dask", {}).get("slope_mib"),
        "dask_schedulers_alive": report.get("memory", {}).get("dask", {}).get("live_schedulers_after"),
        "measuring_pct": measuring_pct(report),
        "interference_pct": interference_pct(report),
        "analysis_s": slowest_analysis_s(report),
        "racing_cost_pct": report.get("racing", {}).get("cost_pct"),
        "racing_missed_pct": report.get("racing", {}).get("missed_pct"),
        "racing_starts_pct": report.get("racing", {}).get("starts_dominate_pct"),
        "false_marks_pct": report.get("quiet_sweep", {}).get("false_marks_pct"),
        "yarn_later_start_ratio": report.get("yarn_starts", {}).get("later_vs_first"),
    }
    quiet = report.get("quiet_sweep", {})
    launches = len(report.get("memory", {}).get("dask", {}).get("rss_mib", []))
    checks = []
    for key, what, limit, unit in TARGETS:
        value = measured[key]
        note = ""
        if value is None:
            ok: bool | None = None
            note = "not measured"
            if key == "false_marks_pct" and quiet:
                note = f"{quiet.get('quiet')} measurements taken while quiet: too few (a busy machine)"
            if key == "yarn_later_start_ratio" and "unavailable" in report.get("yarn_starts", {}):
                note = f"not measured: {report['yarn_starts']['unavailable']}"
        elif key in TIMED and not sized:
            ok, note = None, size_note
        elif key.startswith("store_load") and report.get("store", {}).get("rows", 0) < 100_000:
            ok, note = None, f"store of {report['store']['rows']} rows, not 100,000"
        elif key.startswith("dask_") and key != "dask_copies_per_process" and launches < FULL_LAUNCHES:
            ok, note = None, f"{launches} launches, not {FULL_LAUNCHES}"
        elif key == "analysis_s" and report.get("analysis", {}).get("configurations", 0) < ANALYSIS_CONFIGURATIONS:
            ok, note = None, f"store of {report['analysis']['configurations']} configurations, not 1,000"
        elif key == "analysis_s" and any(c["exit"] for c in report["analysis"]["commands"].values()):
            ok, note = (
                False,
                "a command failed: "
                + ", ".join(name for name, c in report["analysis"]["commands"].items() if c["exit"]),
            )
        elif key == "plan_s" and report.get("plan", {}).get("measurements", 0) < 10_000:
            ok, note = None, f"grid of {report['plan']['measurements']} measurements, not 10,000"
        else:
            ok = value <= limit
        checks.append(Check(key, what, value, limit, unit, ok, note))
    return checks


def slowest_analysis_s(report: Mapping[str, Any]) -> float | None:
    """The longest wall time of the analysis commands on the large store (None: not measured)."""
    commands = report.get("analysis", {}).get("commands", {})
    return max((c["wall_s"] for c in commands.values()), default=None)


def measuring_pct(report: Mapping[str, Any]) -> float | None:
    """The largest, over engines, percentage of a batch's time spent measuring resources.

    Each fit's probe runs in the fit's worker, ``fits / slots`` of them one after another per slot;
    the driver then reads Spark's heap peak and builds the row's columns.
    """
    return _largest_share_pct(report, "probe_s", "measuring_median_s")


def interference_pct(report: Mapping[str, Any]) -> float | None:
    """The largest, over engines, percentage of a batch's time spent reading interference (issue 34: under 1 %):
    each fit's two readings of its machine's counters, ``fits / slots`` of them per slot, and the driver's part."""
    return _largest_share_pct(report, "machine_probe_s", "interference_median_s")


def _largest_share_pct(report: Mapping[str, Any], per_fit_key: str, per_batch_key: str) -> float | None:
    """The largest, over engines, share of a batch's time taken by ``per_fit_key`` seconds in each fit (``fits /
    slots`` of them one after another per slot) and the driver's ``per_batch_key`` seconds."""
    batch = report.get("batch", {})
    per_fit_s, fits, slots = batch.get(per_fit_key), batch.get("fits"), batch.get("slots")
    if per_fit_s is None or not fits or not slots:
        return None
    shares = [
        (per_fit_s * fits / slots + engine[per_batch_key]) / engine["batch_median_s"]
        for name, engine in report.get("engines", {}).items()
        if name != "loky" and engine.get(per_batch_key) is not None and engine.get("batch_median_s")
    ]
    return 100 * max(shares) if shares else None


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
