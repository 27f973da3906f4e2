"""The small batch of fits the launch tests run."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sweeper.config.grid import DEFAULT_ESTIMATOR
from sweeper.workload.data import Data
from sweeper.workload.tasks import FitTask, Recipe, make_batch

# Epochs of one MLP (64) fit on digits (exact epochs, 1 thread) that a slot runs in ~2 s on a quiet machine (300 took
# 0.5-0.6 s here, 2026-11-28): twice the span an interference reading needs (sweeper.run.interference.MIN_SPAN_S).
# A batch that must be read gives each slot READABLE_EPOCHS / (its fits) epochs a fit.
READABLE_EPOCHS = 1200

TEST_RECIPE = Recipe(
    seed=0, exact_epochs=False, threads_per_fit=1, folds=2, param_grid=(), local_epochs=1, estimator=DEFAULT_ESTIMATOR
)


def recipe_with(**changes: Any) -> Recipe:
    """The tests' batch recipe (seed 0, 1 thread, 2 folds, no search grid, MLP), with ``changes``."""
    return replace(TEST_RECIPE, **changes)


def replicas(
    data: Data, fits: int = 2, *, epochs: int = 5, hidden: tuple[int, ...] = (16,), exact_epochs: bool = False
) -> list[FitTask]:
    """``fits`` replicas (seeds 0..fits-1, trial 0) of an MLP with ``hidden`` layers, ``epochs`` each (``exact_epochs``:
    no early stop), 1 thread."""
    recipe = recipe_with(exact_epochs=exact_epochs)
    return make_batch(recipe, "replicas", {"hidden_layer_sizes": hidden}, epochs, 0, fits, labels=data.y_train)
