"""Arrays as scikit-learn takes them: features and labels checked and converted, holdouts and subsamples.

:func:`as_xy`, :func:`as_features` and :func:`as_labels` turn the arrays a dataset file holds into
float32 features in [0, 1] (flattened to one row per sample) and int64 labels, refusing what cannot
be meant as such; :func:`holdout_split` makes a stratified, seeded test holdout and
:func:`stratified_rows` a stratified, seeded subsample of training rows; :func:`check_load_arguments`
checks the shares and the cap :func:`~sweeper.workload.data.load` is given.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from sweeper.errors import UserError

Floats = npt.NDArray[np.float32]
Labels = npt.NDArray[np.int64]
Targets = npt.NDArray[np.float64]  # a regression set's (diabetes)


def as_xy(X: np.ndarray[Any, Any], y: np.ndarray[Any, Any], source: str) -> tuple[Floats, Labels]:
    if X.ndim < 2 or y.ndim != 1 or X.shape[0] != y.shape[0]:
        raise UserError(f"{source}: features have shape {X.shape} and labels {y.shape}; expected (n, ...) and (n,)")
    return as_features(X, source), as_labels(y, source)


def as_features(X: np.ndarray[Any, Any], source: str) -> Floats:
    """Flatten to (n, features) and scale to float32 in [0, 1].

    Integers 0..255 are 8-bit pixels (/255); floats must already be in [0, 1].
    """
    if X.size == 0:
        raise UserError(f"{source}: no feature values (shape {X.shape})")
    X = X.reshape(X.shape[0], -1)
    if X.dtype.kind == "b":
        return X.astype(np.float32)
    if X.dtype.kind in "iu":
        low, high = int(X.min()), int(X.max())
        if low < 0 or high > 255:
            raise UserError(f"{source}: integer features range {low}..{high}; expected 8-bit pixels 0..255")
        scaled = X.astype(np.float32)
        scaled /= np.float32(255)
        return scaled
    if X.dtype.kind == "f":
        if not np.isfinite(X).all():
            raise UserError(f"{source}: features contain NaN or infinity")
        low_f, high_f = float(X.min()), float(X.max())
        if low_f < 0.0 or high_f > 1.0:
            raise UserError(
                f"{source}: float features range {low_f:g}..{high_f:g}; expected [0, 1] (or uint8 pixels 0..255)"
            )
        return X.astype(np.float32)
    raise UserError(f"{source}: features are {X.dtype}, expected numbers")


def as_labels(y: np.ndarray[Any, Any], source: str) -> Labels:
    """Integer class labels as int64 (integral floats and digit strings are accepted)."""
    if y.dtype.kind in "biu":
        return y.astype(np.int64)
    if y.dtype.kind == "f":
        if np.isfinite(y).all() and bool((y == np.round(y)).all()):
            return y.astype(np.int64)
    elif y.dtype.kind in "OSU":
        try:
            return y.astype(np.int64)
        except (ValueError, TypeError, OverflowError):
            pass
    raise UserError(f"{source}: labels must be integers, got {y.dtype} values such as {y[:3].tolist()}")


def holdout_split(
    X: Floats, y: Labels, source: str, test_size: float, seed: int
) -> tuple[Floats, Labels, Floats, Labels]:
    """A stratified, seeded ``test_size`` holdout of ``X`` and ``y``: X_train, y_train, X_test, y_test."""
    from sklearn.model_selection import train_test_split

    try:
        X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=test_size, random_state=seed, stratify=y)
    except ValueError as error:
        raise UserError(f"{source}: cannot make a stratified {test_size:g} test holdout: {error}") from error
    return X_train, y_train, X_test, y_test


def stratified_rows(y: Labels, keep: int, seed: int) -> npt.NDArray[np.intp]:
    """Sorted indices of ``keep`` rows, allotted to classes in proportion (every class kept when ``keep`` allows)."""
    classes, inverse, counts = np.unique(y, return_inverse=True, return_counts=True)
    quota = counts * keep / len(y)
    alloc = np.floor(quota).astype(np.int64)
    if keep >= len(classes):
        alloc = np.maximum(alloc, 1)
    short = keep - int(alloc.sum())
    if short > 0:  # largest remainders first; stable for ties
        alloc[np.argsort(alloc - quota, kind="stable")[:short]] += 1
    while short < 0:  # the minimum of one per class overshot: take back from the most over-allotted
        over = np.where(alloc > 1, alloc - quota, -np.inf)
        alloc[int(np.argmax(over))] -= 1
        short += 1
    rng = np.random.default_rng(seed)
    chosen = [rng.choice(np.flatnonzero(inverse == c), size=int(n), replace=False) for c, n in enumerate(alloc) if n]
    return np.sort(np.concatenate(chosen))


def random_rows(n_rows: int, keep: int, seed: int) -> npt.NDArray[np.intp]:
    """Sorted indices of ``keep`` of ``n_rows`` rows, seeded (a regression set has no classes to stratify by)."""
    return np.sort(np.random.default_rng(seed).choice(n_rows, size=keep, replace=False))


def check_load_arguments(fraction: float, test_size: float, max_train_rows: int | None) -> None:
    problems = []
    if not 0 < fraction <= 1:
        problems.append(f"fraction must be in (0, 1], got {fraction!r}")
    if not 0 < test_size < 1:
        problems.append(f"test_size must be in (0, 1), got {test_size!r}")
    if max_train_rows is not None and max_train_rows < 1:
        problems.append(f"max_train_rows must be at least 1, got {max_train_rows!r}")
    if problems:
        raise UserError(problems)
