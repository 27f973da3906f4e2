"""A store holds what anyone wrote into its Parquet files: impossible values are named and never analysed
(sweeper/results/validity.py), and the flags of replay are bounded like the grid's keys."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from sweeper import load_results
from sweeper.config import load as grid_file
from sweeper.errors import UserError
from sweeper.results import recommend as rec
from sweeper.results import recommend_view as view
from sweeper.search.adaptive import TrialPolicy
from sweeper.store.parquet import write_rows
from tests.conftest import minimal_grid
from tests.support.synthetic_stores import ArmSpec, synthetic_rows

ARMS = [ArmSpec("spark", 2, 2, 4.0, median_s=10.0), ArmSpec("dask", 2, 2, 4.0, median_s=15.0)]


@pytest.mark.parametrize(
    ("column", "value"),
    [("fit_wall_s", math.inf), ("fit_wall_s", -1.0), ("fit_wall_s", 1e300), ("fit_wall_s", math.nan),
     ("launch_index", 2**31 - 1), ("launch_index", -5), ("accuracy", 7.0), ("trial", -1)],
)  # fmt: skip
def test_an_ok_row_with_an_impossible_value_is_named_invalid_and_left_out(
    column: str, value: float, tmp_path: Path
) -> None:
    rows = synthetic_rows(ARMS, epochs=(5,), seed=1)
    rows[0][column] = value  # a spark row
    write_rows(tmp_path, rows[0]["sweep"], rows, "part-hostile")
    frame = load_results(tmp_path)
    bad = frame[frame["status"] == "invalid"]
    assert len(bad) == 1 and bad["error"].iloc[0].startswith(f"invalid value read from the store: {column}=")
    recommendation = rec.recommend(frame, n_bootstrap=200)
    assert all(math.isfinite(arm.median_s) for answer in recommendation.answers for arm in answer.arms)
    assert sum(arm.n for answer in recommendation.answers for arm in answer.arms) == len(rows) - 1
    assert "\n".join(view.lines(recommendation))  # renders


def test_an_infinite_memory_peak_is_dropped_with_a_note_and_the_row_still_counts(tmp_path: Path) -> None:
    rows = synthetic_rows(ARMS, epochs=(5,), seed=1)
    rows[0]["worker_peak_rss_gib_max"] = math.inf
    write_rows(tmp_path, rows[0]["sweep"], rows, "part-hostile")
    frame = load_results(tmp_path)
    assert set(frame["status"]) == {"ok"} and frame["worker_peak_rss_gib_max"].isna().sum() == 1
    assert frame["resource_note"].str.contains("out of range in the store", na=False).sum() == 1
    assert "\n".join(view.lines(rec.recommend(frame, n_bootstrap=200)))  # no OverflowError


@pytest.mark.parametrize(
    ("policy", "named"),
    [((3, 10**9, 0.05), "workload.trials.max (--max-trials): must be an integer from 1 to 1000, got 1000000000"),
     ((3, 3000, 1e-300), "workload.trials.target_rel_ci (--target-rel-ci): must be a number in [0.001, 0.5]"),
     ((3, 20, 1.0), "workload.trials.target_rel_ci (--target-rel-ci): must be a number in [0.001, 0.5], got 1.0")],
)  # fmt: skip
def test_trial_flags_are_bounded_like_the_grid(policy: tuple[int, int, float], named: str) -> None:
    with pytest.raises(UserError, match=re.escape(named)):
        TrialPolicy(*policy)


def test_a_grid_target_of_one_is_refused_by_plan_with_the_same_rule(tmp_path: Path) -> None:
    spec = minimal_grid()
    spec["workload"]["trials"] = {"min": 3, "max": 20, "target_rel_ci": 1}
    with pytest.raises(UserError, match=r"workload.trials.target_rel_ci: must be a number in \[0.001, 0.5\], got 1"):
        grid_file.parse(spec, tmp_path / "g.yaml")


def test_bootstrap_in_chunks_draws_what_one_draw_would_and_bounds_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy as np

    from sweeper.results import statistics

    values = np.arange(1000.0)
    whole = np.median(np.random.default_rng(7).choice(values, size=(300, values.size)), axis=1)
    monkeypatch.setattr(statistics, "BOOTSTRAP_CHUNK_VALUES", 7 * values.size)  # 7 resamples at a time
    chunked = statistics.bootstrap(values, 300, np.random.default_rng(7))
    assert np.array_equal(whole, chunked)
