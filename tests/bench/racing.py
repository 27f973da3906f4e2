"""Racing's cost (#38): ``sweeper replay --strategy auto`` on stores shaped like the report's experiment.

Seed 001's stores (:func:`tests.support.budget_stores.seed_001`: 3 shapes x 2 engines at 10/100/1000 epochs,
10 trials, 4 % noise, Spark 3-4x slower, Spark's order reversing, Dask's shapes 1-4 % apart), one per seed, and a
store where starts dominate (starts of 15 s against batches of 0.1-0.3 s): the share of the grid's node-seconds
``auto`` spends and the share of repeats whose choice is within 5 % of the full grid's best.
"""

from __future__ import annotations

from typing import Any

SEEDS = range(1, 6)


def _outcome(result: dict[str, Any]) -> dict[str, float]:
    return {"cost_share": result["cluster_s_fraction"], "within_5pct": result["within_5pct"]}


def replay_racing(repeats: int) -> dict[str, Any]:
    """``auto`` replayed ``repeats`` times on each of seed 001's stores (:data:`SEEDS`) and where starts dominate."""
    from sweeper.results.replay import ReplaySettings, replay
    from tests.support.budget_stores import SEED_EPOCHS, Arm, Overhead, budget_rows, frame, seed_001

    settings = ReplaySettings(strategy="auto", repeats=repeats)
    stores = {
        f"seed 001, seed {seed}": _outcome(
            replay(frame(budget_rows(seed_001(), epochs=SEED_EPOCHS, trials=10, seed=seed)), settings)
        )
        for seed in SEEDS
    }
    arms = [Arm("spark", 1, 2, 0.30, 0.0), Arm("spark", 2, 1, 0.29, 0.0), Arm("dask", 1, 2, 0.09, 0.0)]
    arms.append(Arm("dask", 2, 1, 0.15, 0.0))
    starts = frame(budget_rows(arms, epochs=(5, 30), trials=6, seed=2, overhead=Overhead(10.0, 4.0, 1.0)))
    dominated = _outcome(replay(starts, settings))
    return {
        "repeats": repeats,
        "stores": stores,
        "cost_pct": 100 * max(store["cost_share"] for store in stores.values()),
        "missed_pct": 100 * (1 - min(store["within_5pct"] for store in stores.values())),
        "starts_dominate_pct": 100 * dominated["cost_share"],
    }
