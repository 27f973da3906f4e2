"""sweeper.results.report: the HTML/Markdown/PNG report of the fixture store, sweep selection, the terminal table."""

from __future__ import annotations

import base64
import html
import re
import shutil
import subprocess
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import matplotlib.image
import pandas as pd
import pytest

from sweeper import load_results
from sweeper.errors import UserError
from sweeper.results import report
from sweeper.store.parquet import load_sweep
from tests.fixtures.make_fixture_store import STORE, fixture_rows
from tests.support.stored_rows import write_test_rows

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
IMG_SRC = re.compile(r"<img\b[^>]*\bsrc=\"([^\"]*)\"", re.IGNORECASE)


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The fixture store's report, written once for the module (with a price, so every figure is drawn)."""
    return report.write_report(STORE, tmp_path_factory.mktemp("report"), cost_per_node_hour=2.5)


def test_writes_html_markdown_and_valid_pngs(written: list[Path]) -> None:
    html_path, md_path, *pngs = written
    assert (html_path.name, md_path.name) == ("report.html", "report.md")
    assert {p.name for p in pngs} == {
        "answer_time.png",  # the answer's figure; no answer_memory.png: the fixture store has no memory figures
        "fit_time_box.png",
        "time_accuracy_vs_epochs.png",
        "accuracy_vs_time.png",
        "speedup_cost.png",
        "time_vs_cost.png",
    }
    for png in pngs:
        assert png.read_bytes().startswith(PNG_SIGNATURE)
        height, width, _ = matplotlib.image.imread(png).shape
        assert height > 100 and width > 100


def test_html_is_self_contained(written: list[Path]) -> None:
    page = written[0].read_text(encoding="utf-8")
    assert "http://" not in page and "https://" not in page
    assert not re.search(r"<(script|link|iframe|object|embed)\b", page, re.IGNORECASE)
    assert not re.search(r"\b(href|url)\s*[=(]", page, re.IGNORECASE)
    sources = IMG_SRC.findall(page)
    assert len(sources) == len(written) - 2 == page.count("<img")
    for source in sources:
        assert source.startswith("data:image/png;base64,")
        assert base64.b64decode(source.removeprefix("data:image/png;base64,"), validate=True).startswith(PNG_SIGNATURE)


def test_report_states_what_was_measured_and_on_what(written: list[Path]) -> None:
    for path in written[:2]:
        text = path.read_text(encoding="utf-8")
        for fact in (
            "sweeper report: fixture",
            "grid hash 0123456789ab",
            "2026-01-05 09:00:00 to 2026-01-05 10:35:08 UTC",
            "Hosts: node1",
            "2 node(s), up to 36 cores per launch",
            "pyspark 4.0.1",
            "java 17.0.16",
            "3 to 5 ok trial(s)",
            "engine local): 10 ok measurement(s)",
            "Dry run: no",
            "64 rows: 62 ok, 1 failed, 1 timeout",
            "Report made on: ",
        ):
            assert fact in text, (path.name, fact)


def test_markdown_tables_per_configuration_statistics_cost_and_failures(written: list[Path]) -> None:
    md = written[1].read_text(encoding="utf-8")
    assert "**Config: 7 executors x 5 cores x 13 GiB (35 cores in all)**" in md
    assert "| # Epochs | Spark time (s) | Spark accuracy | Dask time (s) | Dask accuracy |" in md
    assert "| 10 | 12.0 (IQR 2.00, n=5) | 0.9060 (IQR 0.0020) | 7.00 (IQR 2.00, n=5) | 0.9040 (IQR 0.0020) |" in md
    assert "| 100 | 62.0 (IQR 2.00, n=5), 1 failed |" in md
    assert "| 7 executors x 5 cores x 13 GiB | 10 | 12.0 (IQR 2.00, n=5) | 7.00 (IQR 2.00, n=5) | 1.71 \\[" in md
    assert "| 0.008 | 0.001 | dask faster |" in md
    assert "| too few trials |" in md and "| inconclusive |" in md
    assert "| spark | 100 | 52.0 | never | – |" in md
    assert "| dask | 10 | 22.0 | 30 cores | 5 executors x 6 cores x 19 GiB |" in md
    assert "| failed | Py4JJavaError | java.lang.OutOfMemoryError: Java heap space |" in md
    assert "| timeout | TimeoutError |" in md
    for name in ("fit_time_box.png", "speedup_cost.png", "time_vs_cost.png"):
        assert f"]({name})" in md


def two_sweeps(tmp_path: Path) -> Path:
    store = tmp_path / "store"
    shutil.copytree(STORE, store)
    rows: list[Mapping[str, Any]] = [
        {**row, "fit_wall_s": row["fit_wall_s"] and 2 * row["fit_wall_s"]} for row in fixture_rows(sweep="other")
    ]
    write_test_rows(store, "other", rows, "part-other")
    return store


def test_a_store_of_two_sweeps_reports_each_by_name(tmp_path: Path) -> None:
    store = two_sweeps(tmp_path)
    for sweep in ("fixture", "other"):
        html_path, md_path, *_ = report.write_report(store, tmp_path / sweep, sweep=sweep)
        md = md_path.read_text(encoding="utf-8")
        assert md.startswith(f"# sweeper report: {sweep}\n") and html_path.exists()
    assert "| 10 | 24.0 (IQR 4.00, n=5) |" in md  # the other sweep's own numbers, not mixed with the first's
    with pytest.raises(UserError, match=r"holds 2 sweeps: fixture, other; pass one with --sweep NAME"):
        report.write_report(store, tmp_path / "none")
    with pytest.raises(UserError, match=r"no sweep 'nope'; the store holds: fixture, other"):
        load_sweep(store, "nope")
    assert not (tmp_path / "none").exists()


def test_empty_or_missing_store_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such store directory"):
        load_sweep(tmp_path / "missing")
    with pytest.raises(UserError, match="holds no measurements"):
        report.write_report(tmp_path, tmp_path / "out")


def test_a_sparse_sweep_still_reports_and_escapes_error_text(tmp_path: Path) -> None:
    """One engine, no baseline, one trial, an all-failed epoch count, markup in an error message."""
    base: dict[str, Any] = {
        "sweep": "sparse",
        "engine": "dask",
        "cores_per_executor": 2,
        "executors": 1,
        "total_cores": 2,
        "executor_memory_gib": 3.0,
        "nodes": 1,
        "trial": 0,
        "launch_index": 0,
        "started_at": datetime(2026, 2, 1, tzinfo=UTC),
    }
    rows: list[Mapping[str, Any]] = [
        {**base, "epochs": 5, "status": "ok", "fit_wall_s": 1.5, "accuracy": 0.8},
        {**base, "epochs": 50, "status": "failed", "error_type": "ValueError", "error": "bad <b>x</b> | y"},
    ]
    write_test_rows(tmp_path / "store", "sparse", rows, "p")
    html_path, md_path, *pngs = report.write_report(tmp_path / "store", tmp_path / "out", cost_per_node_hour=1.0)
    md, page = md_path.read_text(encoding="utf-8"), html_path.read_text(encoding="utf-8")
    assert "Not both engines measured (engines: dask)." in md
    assert "No single-thread baseline in this workload: no speedup, no COST." in md
    assert "| 50 | 0 | failed | ValueError | bad \\<b\\>x\\</b\\> \\| y |" in md
    assert "bad &lt;b&gt;x&lt;/b&gt; | y" in page and "<b>x</b>" not in page
    assert all(p.read_bytes().startswith(PNG_SIGNATURE) for p in pngs)


HOSTILE_ERROR = (
    "a | b\nsecond line `rm -rf` <script>alert(1)</script> *bold* _it_ [link](http://x) &amp; $x$ ~~s~~ \\ #"
)


def test_markdown_shows_store_strings_as_written(tmp_path: Path) -> None:
    """Rendered by a real CommonMark parser (with GFM tables), store text is text: no HTML, link, code or cell."""
    from markdown_it import MarkdownIt

    rows: list[Mapping[str, Any]] = [
        {**row, "error": HOSTILE_ERROR, "error_type": "Bad|Type<i>"} if row["status"] != "ok" else row
        for row in fixture_rows(sweep="we[ir]d_name #")
    ]
    write_test_rows(tmp_path / "store", "we[ir]d_name #", rows, "p")
    md = report.write_report(tmp_path / "store", tmp_path / "out")[1].read_text(encoding="utf-8")
    rendered = MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(md)
    for tag in ("<script", "<a ", "<code", "<em", "<s>", "<del", "<i>"):
        assert tag not in rendered, tag
    assert "<h1>sweeper report: we[ir]d_name #</h1>" in rendered
    error_cells = f"<td>{html.escape('Bad|Type<i>')}</td>\n<td>{html.escape(HOSTILE_ERROR.replace(chr(10), ' '))}</td>"
    assert rendered.count(error_cells) == 2, rendered[-3000:]
    failure_rows = [line for line in md.splitlines() if "Bad\\|Type" in line]
    assert len(failure_rows) == 2 and all(line.count(" | ") == 7 for line in failure_rows)  # 8 cells, one line


def test_figures_draw_an_engine_name_with_dollar_signs_as_written(tmp_path: Path) -> None:
    """A '$' pair in a store string would be parsed as matplotlib maths (and '\\foo' fail to parse)."""
    rows: list[Mapping[str, Any]] = [
        {**row, "engine": "$\\foo{$"} if row["engine"] == "dask" else row for row in fixture_rows()
    ]
    write_test_rows(tmp_path / "store", "fixture", rows, "p")
    _, md_path, *pngs = report.write_report(tmp_path / "store", tmp_path / "out", cost_per_node_hour=1.0)
    assert len(pngs) == 6 and all(p.read_bytes().startswith(PNG_SIGNATURE) for p in pngs)
    assert "\\$\\\\foo{\\$" in md_path.read_text(encoding="utf-8")


def test_out_that_is_a_file_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    out.write_text("my own file")
    with pytest.raises(UserError, match=r"report\.html: exists and is not a directory"):
        report.write_report(STORE, out)
    with pytest.raises(UserError, match=r"report\.html/sub: cannot create the report directory: Not a directory"):
        report.write_report(STORE, out / "sub")
    assert out.read_text() == "my own file" and [p.name for p in tmp_path.iterdir()] == ["report.html"]


def test_a_broken_file_in_another_sweep_does_not_stop_the_sweep_asked_for(tmp_path: Path) -> None:
    store = two_sweeps(tmp_path)
    broken = store / "other" / "part-other.parquet"
    broken.write_bytes(b"PAR1 but not really")
    md_path = report.write_report(store, tmp_path / "out", sweep="fixture")[1]
    assert md_path.read_text(encoding="utf-8").startswith("# sweeper report: fixture\n")
    assert "1.71 [1.25, 2.40]" in report.compare_text(load_sweep(store, "fixture"), width=200)
    # without --sweep the sweeps are told apart by their directories: the broken file is not read to list them
    with pytest.raises(UserError, match=r"holds 2 sweeps: fixture, other; pass one with --sweep NAME"):
        load_sweep(store)
    with pytest.raises(UserError, match=r"other/part-other\.parquet: not a readable Parquet file"):
        load_sweep(store, "other")
    with pytest.raises(UserError, match=r"^sweep name must be one directory name .*got '\.\.'"):
        load_sweep(store, "..")


def test_compare_text_is_the_side_by_side_engines_table() -> None:
    text = report.compare_text(load_results(STORE), width=200)
    assert "Spark vs Dask" in text
    assert "1.71 [1.25, 2.40]" in text
    for verdict in ("dask faster", "inconclusive", "too few trials"):
        assert verdict in text
    assert "2 failed or timed-out measurement(s) left out" in text
    assert "\x1b[" not in text  # plain text, no colour codes


def test_compare_text_tells_workloads_apart() -> None:
    df = load_results(STORE)
    both = pd.concat([df, df.assign(n_train=999)], ignore_index=True)
    text = report.compare_text(both, width=250)
    assert "Workload" in text and "n_train=999" in text and "n_train=1347" in text
    assert "Workload" not in report.compare_text(df, width=250)


# -- in a real browser -------------------------------------------------------------------------

PROBE = """<script>
window.addEventListener("load", function () {
  var images = Array.from(document.images);
  var loaded = images.filter(function (image) { return image.complete && image.naturalWidth > 0; });
  var probe = document.createElement("div");
  probe.id = "probe";
  probe.textContent = "images " + images.length + " loaded " + loaded.length;
  document.body.appendChild(probe);
});
</script>"""
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def chromium(page: Path, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    binary = shutil.which("chromium")
    if binary is None:
        pytest.skip("chromium is not installed (Debian: apt-get install chromium)")
    command = [binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args, page.as_uri()]
    return subprocess.run(command, capture_output=True, text=True, timeout=180, check=True)


def browser_check(page: Path, profile: Path) -> tuple[int, int, list[str]]:
    """Load a copy of ``page`` with a probe script: (images, images loaded, console messages)."""
    probe = profile.with_name(f"probe-{page.name}")
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8")
    result = chromium(probe, profile, "--enable-logging=stderr", "--v=0", "--virtual-time-budget=10000", "--dump-dom")
    counts = re.search(r'<div id="probe">images (\d+) loaded (\d+)</div>', result.stdout)
    assert counts, result.stdout[-2000:]
    console = [line for line in result.stderr.splitlines() if ":CONSOLE" in line]
    return int(counts.group(1)), int(counts.group(2)), console


@pytest.mark.integration
def test_report_renders_in_headless_chromium(written: list[Path], tmp_path: Path) -> None:
    page = written[0]
    images, loaded, console = browser_check(page, tmp_path / "profile")
    assert (images, loaded, console) == (len(written) - 2, len(written) - 2, [])

    # the check can fail: a corrupted image and a console error are both caught
    broken = tmp_path / "broken.html"
    text = page.read_text(encoding="utf-8").replace("base64,", "base64,AAAA", 1)
    broken.write_text(text.replace("</body>", '<script>console.error("deliberate")</script></body>'), encoding="utf-8")
    images, loaded, console = browser_check(broken, tmp_path / "profile-broken")
    assert loaded == images - 1 and len(console) == 1 and "deliberate" in console[0]

    screenshot = tmp_path / "screenshot.png"
    chromium(page, tmp_path / "profile-shot", f"--screenshot={screenshot}", "--window-size=1280,2400")
    assert matplotlib.image.imread(screenshot).shape[:2] == (2400, 1280)
