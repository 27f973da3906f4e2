"""The bench's pure pieces: ratios and slopes, target evaluation, findings, the markdown and JSON writers."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sweeper.config.load import parse
from sweeper.planning.plan import make_plan
from sweeper.store.parquet import COLUMNS, load_results
from tests import bench
from tests.support.stored_rows import write_test_rows


def engine(batch_s: float, fit_s: float, **extra: Any) -> dict[str, Any]:
    return {
        "launch": "x",
        "start_s": 1.0,
        "warmup_s": 1.0,
        "batches_s": [batch_s] * 3,
        "batch_median_s": batch_s,
        "fit_mean_s": fit_s,
        "outside_median_s": 0.3,
        "slower_slot_median_s": 0.1,
        "worker_processes": 2,
        "cpu_s": [{"fit workers": 19.0, "driver": 0.1, "JVMs": 0.5, "other processes": 0.1}] * 3,
        "cpu_median_s": {"fit workers": 19.0, "driver": 0.1, "JVMs": 0.5, "other processes": 0.1},
        "fit_environment": {"OMP_NUM_THREADS": "1"},
        "measuring_median_s": 0.002,
        "interference_median_s": 0.001,
        **extra,
    }


def full_report(**changes: Any) -> dict[str, Any]:
    """A report of a full-size run: dask 1.05x, spark 1.30x loky."""
    report: dict[str, Any] = {
        "date": "2025-01-01 00:00 UTC",
        "command": "python -m tests.bench",
        "quick": False,
        "machine": {"cpu": "test", "cores": "2"},
        "batch": {
            "fits": 8,
            "epochs": 32,
            "repeats": 5,
            "dataset": "fashion-mnist",
            "machine_cores": 2,
            "slots": 2,
            "probe_s": 0.0001,
            "machine_probe_s": 0.00005,
        },
        "engines": {
            "loky": engine(10.0, 2.4, shipping={"how": "memmap", "bytes_per_fit": 1e6}),
            "dask": engine(10.5, 2.45, shipping={"copies_per_process": 1, "peer_fetches": 0, "how": "scatter"}),
            "spark": engine(13.0, 2.6, shipping={"copies_per_process": 1, "how": "broadcast"}),
        },
        "plan": {"measurements": 10_000, "make_plan_median_s": 0.01},
        "store": {"rows": 100_000, "load_median_s": 0.3, "load_s": [0.3], "load_vs_parquet": 2.5},
        "memory": {"dask": {"rss_mib": [300.0] * 20, "slope_mib": 0.0, "live_schedulers_after": 0}},
        "analysis": analysis(1_000, recommend=3.0, report=12.0),
    }
    report.update(changes)
    return report


def analysis(configurations: int, **wall_s: float) -> dict[str, Any]:
    """The analysis part of a report: each named command's wall time, exit 0."""
    commands = {name: {"exit": 0, "wall_s": s, "peak_mib": 300.0, "error": ""} for name, s in wall_s.items()}
    return {"configurations": configurations, "rows": 2 * configurations, "commands": commands}


def test_the_analysis_target_is_its_slowest_command_on_1000_configurations() -> None:
    found = checks(full_report())["analysis_s"]
    assert found.measured == 12.0 and found.ok is False  # report 12 s > 10 s
    assert checks(full_report(analysis=analysis(1_000, recommend=3.0, report=9.0)))["analysis_s"].ok is True
    small = checks(full_report(analysis=analysis(20, recommend=3.0)))["analysis_s"]
    assert small.ok is None and "20 configurations" in small.note
    failed = analysis(1_000, recommend=3.0)
    failed["commands"]["recommend"]["exit"] = 1
    found = checks(full_report(analysis=failed))["analysis_s"]
    assert found.ok is False and "failed: recommend" in found.note
    assert "`recommend` 3.00 s" in bench.render_markdown(full_report())


def quick_memory() -> dict[str, Any]:
    return {"dask": {"rss_mib": [300.0] * 4, "slope_mib": 30.0, "live_schedulers_after": 4}}


def checks(report: dict[str, Any]) -> dict[str, bench.Check]:
    return {check.key: check for check in bench.evaluate(report)}


def test_ratio_and_slopes() -> None:
    assert bench.ratio(11.0, 10.0) == pytest.approx(1.1)
    assert bench.ratio(None, 10.0) is None
    assert bench.ratio(1.0, 0.0) is None
    assert bench.slope([5.0]) is None
    assert bench.slope([0.0, 2.0, 4.0]) == pytest.approx(2.0)
    # a late allocator jump does not make a leak, a steady climb does
    assert bench.robust_slope([100.0] * 15 + [130.0] * 2) == 0.0
    assert bench.robust_slope([100.0 + 0.5 * i for i in range(20)]) == pytest.approx(0.5)


def test_turns_keep_spark_last_and_its_gap_at_two_batches() -> None:
    orders = [bench.turns(bench.ENGINES, repetition, last="spark") for repetition in range(4)]
    assert orders[0] == ("loky", "dask", "spark")
    assert {order[0] for order in orders} == {"loky", "dask"}
    stream = [engine for order in orders for engine in order]
    spark_at = [i for i, engine in enumerate(stream) if engine == "spark"]
    assert {b - a - 1 for a, b in itertools.pairwise(spark_at)} == {2}  # two other batches between Spark's own
    assert all(sorted(order) == sorted(bench.ENGINES) for order in orders)


def test_the_time_outside_the_fits_names_the_slower_slots_share() -> None:
    run = bench.EngineRun("spark", "x", batches_s=[10.0, 9.0], fit_s=[[2.0, 2.0, 2.0, 3.0], [2.0] * 4])
    run.slot_s = [[4.0, 5.0], [2.0, 2.0, 4.0]]  # the second batch: a third process (a worker started anew)
    run.cpu_s = [{}, {}]
    summary = run.summary(slots=2)
    assert summary["outside_s"] == [5.5, 5.0]
    assert summary["slower_slot_s"] == [0.5, None]
    assert summary["slower_slot_median_s"] == 0.5


def test_bytes_per_fit_counts_receptions_not_fits() -> None:
    assert bench.bytes_per_fit(1000, receivers=2, fits=40) == 50
    assert bench.bytes_per_fit(1000, receivers=2, fits=0) is None


def test_cpu_is_split_between_fit_workers_driver_jvms_and_the_rest() -> None:
    before = {1: (1.0, False), 2: (0.0, True), 3: (0.0, False)}
    after = {1: (1.5, False), 2: (2.0, True), 3: (4.0, False), 4: (1.0, False)}
    parts = bench.cpu_by_part(before, after, fit_pids={3}, driver=1)
    assert parts == {"fit workers": 4.0, "driver": 0.5, "JVMs": 2.0, "other processes": 1.0}


def test_the_plan_grid_has_ten_thousand_measurements() -> None:
    plan = make_plan(parse(bench.plan_grid(10_000), Path("<test>")))
    assert plan.n_measurements == 10_000


def test_the_launch_grid_plans_matched_two_by_one_launches() -> None:
    plan = make_plan(parse(bench.launch_grid("digits", epochs=32, fits=8, trials=5), Path("<test>")))
    shapes = {(launch.engine, launch.executors, launch.cores_per_executor) for launch in plan.launches}
    assert shapes == {("spark", 2, 1), ("dask", 2, 1)}
    assert plan.n_fits == 8


def test_synthetic_rows_fill_a_store(tmp_path: Path) -> None:
    rows = bench.synthetic_rows(50)
    assert set(rows[0]) <= set(COLUMNS)
    write_test_rows(tmp_path, "bench", rows, "part-0")
    assert len(load_results(tmp_path)) == 50


def test_targets_pass_and_miss() -> None:
    found = checks(full_report())
    assert found["dask_vs_loky"].ok is True
    assert found["dask_vs_loky"].measured == pytest.approx(1.05)
    assert found["spark_vs_loky"].ok is False  # 1.30 > 1.05
    assert found["spark_outside_s"].ok is True and found["spark_outside_s"].measured == 0.3
    assert found["spark_start_s"].ok is True and found["spark_start_s"].measured == 1.0
    assert found["dask_copies_per_process"].ok is True
    assert found["plan_s"].ok is True
    assert found["store_load_s"].ok is True
    assert found["store_load_vs_parquet"].ok is False  # 2.5 x a plain read_parquet > 2.0 x
    assert found["dask_rss_slope_mib"].ok is True
    assert found["dask_schedulers_alive"].ok is True
    # the slowest-measured engine: (4 fits / slot x 0.1 ms + 2 ms) / 10.5 s
    assert found["measuring_pct"].measured == pytest.approx(100 * (4 * 0.0001 + 0.002) / 10.5)
    assert found["measuring_pct"].ok is True
    # reading interference: (4 fits / slot x 0.05 ms + 1 ms) / 10.5 s, under issue 34's 1 %
    assert found["interference_pct"].measured == pytest.approx(100 * (4 * 0.00005 + 0.001) / 10.5)
    assert found["interference_pct"].ok is True


def test_measuring_that_takes_a_batch_s_time_misses_its_target() -> None:
    report = full_report()
    report["engines"]["spark"]["measuring_median_s"] = 0.5  # 0.5 s of a 13 s batch: 3.8 %
    assert checks(report)["measuring_pct"].ok is False


def test_ratio_targets_do_not_apply_to_a_small_batch() -> None:
    report = full_report()
    report["batch"]["fits"] = 4
    found = checks(report)
    assert found["dask_vs_loky"].ok is None and found["spark_start_s"].ok is None
    assert found["interference_pct"].ok is None and found["measuring_pct"].ok is None
    assert "8 fits" in found["dask_vs_loky"].note
    assert checks(full_report())["interference_pct"].ok is not None
    report = full_report(store={"rows": 10_000, "load_median_s": 0.05})
    assert checks(report)["store_load_s"].ok is None and checks(report)["store_load_vs_parquet"].ok is None
    found = checks(full_report(memory=quick_memory()))
    assert found["dask_rss_slope_mib"].ok is None
    assert found["dask_schedulers_alive"].ok is None


def test_a_missing_measurement_is_not_a_pass() -> None:
    report = full_report(memory={})
    found = checks(report)
    assert found["dask_rss_slope_mib"].ok is None
    assert found["dask_rss_slope_mib"].note == "not measured"


def test_a_later_yarn_start_is_judged_against_the_first_and_an_unavailable_cluster_is_not() -> None:
    """tests/bench/yarn_starts.py: the later starts' median over the first's, at most 0.25."""
    from tests.bench.yarn_starts import start_figures, yarn_starts_lines

    launches = [{"start_s": s, "staging_s": 0.0, "warmup_s": 1.0} for s in (60.0, 14.0, 16.0)]
    measured = {"cluster_start_s": 70.0, **start_figures(launches)}
    assert checks(full_report(yarn_starts=measured))["yarn_later_start_ratio"].ok is True  # 15 / 60
    launches[1]["start_s"] = launches[2]["start_s"] = 30.0
    later = {"cluster_start_s": 70.0, **start_figures(launches)}
    slow = checks(full_report(yarn_starts=later))["yarn_later_start_ratio"]
    assert slow.measured == 0.5 and slow.ok is False
    assert "30.0 s against the first's 60.0 s: 0.50x" in yarn_starts_lines(later)[0]
    unavailable = checks(full_report(yarn_starts={"unavailable": "needs root"}))["yarn_later_start_ratio"]
    assert unavailable.ok is None and "needs root" in unavailable.note


def test_findings_name_the_causes() -> None:
    report = full_report()
    report["engines"]["dask"]["shipping"]["peer_fetches"] = 3
    report["memory"]["dask"]["live_schedulers_after"] = 20
    report["batch"]["slots"] = 2
    report["engines"]["spark"]["worker_processes"] = 4
    findings = " ".join(bench.diagnose(report))
    assert "Active Memory Manager" in findings
    assert "_expects_comm" in findings
    assert "MISSED: Spark warm batch time / loky's: 1.300 x" in findings
    assert "spark: warm batch 1.300x loky's" in findings
    assert "4 Python worker processes ran fits on 2 slots" in findings


def test_markdown_has_the_table_targets_and_command() -> None:
    text = bench.render_markdown(full_report())
    assert "Generated by `python -m tests.bench` on 2025-01-01 00:00 UTC." in text
    assert "| spark | x | 1.00 | 1.00 | 13.00 | 13.00, 13.00, 13.00 | 1.30 | 2.60 | 0.30 | 0.10 | 2 |" in text
    assert "| Spark warm batch time / loky's | 1.300 x | 1.050 x | **MISSED** |" in text
    assert "| Dask warm batch time / loky's | 1.050 x | 1.050 x | **pass** |" in text
    assert "the same on every engine" in text


def test_outputs_are_written_where_asked(tmp_path: Path) -> None:
    markdown, machine = tmp_path / "B.md", tmp_path / "b.json"
    bench.write_outputs(full_report(), markdown, machine)
    data = json.loads(machine.read_text())
    assert {target["key"] for target in data["targets"]} == {key for key, *_ in bench.TARGETS}
    assert data["findings"]
    assert "`" + str(machine) + "`" in markdown.read_text()


def test_quick_settings_are_smaller_than_the_targets_need() -> None:
    assert bench.QUICK.fits < bench.MIN_FITS
    assert bench.Settings().fits >= bench.MIN_FITS
    assert bench.Settings().dask_launches == 20


def test_timing_ratios_are_not_judged_on_a_busy_machine() -> None:
    report = full_report()
    report["engines"]["spark"]["busy_share"] = 0.3
    found = checks(report)
    assert found["spark_vs_loky"].ok is None
    assert "machine busy: 30 %" in found["spark_vs_loky"].note
    assert found["spark_start_s"].ok is None and "machine busy" in found["spark_start_s"].note
    assert found["plan_s"].ok is True  # not a timing ratio
    assert "**The machine was busy**" in bench.render_markdown(report)


@pytest.mark.integration
def test_a_quick_bench_runs_every_engine_and_writes_both_files(tmp_path: Path) -> None:
    """``python -m tests.bench --quick``: the whole path of ``make bench`` at tiny sizes."""
    from tests.conftest import REPO
    from tests.support.leftovers import assert_no_launch_processes

    markdown, report_json = tmp_path / "B.md", tmp_path / "b.json"
    result = subprocess.run(
        [sys.executable, "-m", "tests.bench", "--quick", "--markdown", str(markdown), "--json", str(report_json)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = json.loads(report_json.read_text())
    assert report["quick"] is True
    for name in bench.ENGINES:
        measured = report["engines"][name]
        assert measured["batch_median_s"] > 0 and measured["worker_processes"] == 2, (name, measured)
    targets = {target["key"]: target for target in report["targets"]}
    # the shipping counts hold at any size; the timing ratios are not judged on a quick run
    assert targets["dask_copies_per_process"]["measured"] == 1
    assert targets["spark_copies_per_process"]["measured"] == 1
    assert all(c["exit"] == 0 for c in report["analysis"]["commands"].values()), report["analysis"]
    assert report["analysis"]["rows"] == 2 * bench.QUICK.analysis_configurations
    text = markdown.read_text()
    assert "## Targets" in text and "--quick**: smoke-test sizes, targets do not apply" in text
    assert_no_launch_processes()
