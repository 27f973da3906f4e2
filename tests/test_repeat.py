"""Does the answer repeat? Two sweeps of one grid compared point by point (:mod:`sweeper.results.repeat`) and
``sweeper compare STORE --against STORE2``."""

from __future__ import annotations

from pathlib import Path

from sweeper import cli
from sweeper.results.recommend import recommend
from sweeper.results.repeat import repetition
from tests.support.stored_rows import write_test_rows
from tests.support.synthetic_stores import ArmSpec, synthetic_rows, to_frame


def arms(spark_s: float, dask_s: float) -> list[ArmSpec]:
    return [
        ArmSpec("spark", 2, 2, 4.0, median_s=spark_s, trials=6),
        ArmSpec("dask", 2, 2, 4.0, median_s=dask_s, trials=6),
    ]


def sweep(
    seed: int, at_10: tuple[float, float], at_100: tuple[float, float], name: str = "s"
) -> list[dict[str, object]]:
    """A sweep of two configurations at epochs 10 and 100, with these median times (spark, dask)."""
    return [
        *synthetic_rows(arms(*at_10), epochs=(10,), seed=seed, sweep=name),
        *synthetic_rows(arms(*at_100), epochs=(100,), seed=seed + 1, sweep=name),
    ]


def test_the_same_settled_winner_agrees_and_a_settled_winner_slower_in_the_other_sweep_differs() -> None:
    first = recommend(to_frame(sweep(1, at_10=(10.0, 20.0), at_100=(50.0, 80.0))))
    again = recommend(to_frame(sweep(3, at_10=(10.0, 20.0), at_100=(90.0, 60.0))))  # at 100, dask clearly now
    repeated = repetition(first, again)
    by_epochs = {point.epochs: point for point in repeated.points}
    assert by_epochs[10].agrees and by_epochs[10].why == "the same winner"
    assert not by_epochs[100].agrees and "more than 5% slower in the other" in by_epochs[100].why
    assert repeated.summary == "the answers agree at 1 of 2 points both sweeps answered"


def test_a_near_tie_and_two_unsettled_answers_agree_though_the_winners_differ() -> None:
    # within 2 % of each other, a few trials: whichever wins, neither sweep settles, or it settles within 5 %
    first = recommend(to_frame(sweep(5, at_10=(10.0, 10.2), at_100=(50.0, 51.0))))
    again = recommend(to_frame(sweep(7, at_10=(10.2, 10.0), at_100=(51.0, 50.0))))
    repeated = repetition(first, again)
    assert [point.agrees for point in repeated.points] == [True, True], [p.why for p in repeated.points]
    assert repeated.only_first == repeated.only_second == ()


def test_compare_against_a_second_store_prints_each_point_and_the_summary(tmp_path: Path, capsys: object) -> None:
    write_test_rows(tmp_path / "a", "s", sweep(1, at_10=(10.0, 20.0), at_100=(50.0, 80.0)), "p")
    write_test_rows(tmp_path / "b", "t", sweep(3, at_10=(10.0, 20.0), at_100=(90.0, 60.0), name="t"), "p")
    again = ["--against", str(tmp_path / "b"), "--against-sweep", "t"]  # the grid swept again under another name
    assert cli.main(["compare", str(tmp_path / "a"), *again]) == 0
    out = " ".join(capsys.readouterr().out.split())  # type: ignore[attr-defined]
    assert "Does the answer repeat?" in out and "the answers agree at 1 of 2 points both sweeps answered" in out
    assert f"{tmp_path / 'a'} s" in out and f"{tmp_path / 'b'} t" in out
    assert out.count(" yes ") == 1 and out.count(" no ") == 1, out
