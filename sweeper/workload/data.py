"""Load a dataset as train/test arrays: bundled digits, MNIST, Fashion-MNIST, or a user's file; for regressors,
scikit-learn's bundled diabetes and California housing (where scikit-learn has it cached: it is downloaded, and
there may be no network).

Every loader returns a :class:`Data` with float32 features scaled to [0, 1] and int64 labels (a regression set's:
float64 targets).
Problems a user can fix (missing files, a truncated download, a file without the expected keys,
no network for OpenML) raise :class:`~sweeper.errors.UserError` naming the file and the fix.

Hostile files are refused the same way, before anything large is allocated and without hanging:
a dataset file must be a regular file (a FIFO, device, socket or directory is refused before it is
opened); every array's declared size (IDX header, ``.npy`` header in a ``.npz``, Parquet footer) is
checked against :data:`MAX_ARRAY_BYTES` and against the bytes the file holds; compressed data (gzip,
deflated ``.npz`` members) is inflated in bounded chunks and must end exactly where its header says.
The formats are read by :mod:`~sweeper.workload.idx` and :mod:`~sweeper.workload.user_files` through
:mod:`~sweeper.workload.bounded_files`; :mod:`~sweeper.workload.arrays` checks and splits what they hold.

>>> data = load(Dataset("digits"), fraction=0.5)
>>> (data.n_train, data.n_test, data.n_features)
(674, 450, 64)
>>> (data.X_train.dtype.name, data.y_train.dtype.name, float(data.X_train.max()))
('float32', 'int64', 1.0)
"""

from __future__ import annotations

import os
import stat
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sweeper.config.grid import TEST_SIZE, Dataset
from sweeper.errors import UserError
from sweeper.workload.arrays import (
    Floats,
    Labels,
    Targets,
    as_features,
    as_labels,
    as_xy,
    check_load_arguments,
    holdout_split,
    random_rows,
    stratified_rows,
)
from sweeper.workload.bounded_files import MAX_ARRAY_BYTES, MAX_DEFLATE_RATIO, stat_or_none
from sweeper.workload.idx import IDX_FILES, find_idx_files, read_idx
from sweeper.workload.user_files import (
    LABEL_COLUMN,
    PARQUET_SUFFIXES,
    SPLIT_COLUMN,
    check_parquet,
    read_npz,
    read_parquet,
    unknown_file_error,
    user_path,
)

__all__ = [
    "FASHION_MNIST_DIR",
    "IDX_FILES",
    "MAX_ARRAY_BYTES",
    "MAX_DEFLATE_RATIO",
    "Data",
    "check_available",
    "data_home",
    "load",
    "read_idx",
]

_BUNDLED = ("digits", "diabetes")  # shipped with scikit-learn: nothing to check before loading
CALIFORNIA = "california_housing"  # downloaded by scikit-learn: read from its cache only
CALIFORNIA_CACHE = "cal_housing_py3.pkz"  # the file scikit-learn's fetch_california_housing caches (Python 3)
FASHION_MNIST_DIR = "/usr/share/datasets/fashion-mnist"
"""Where Debian's ``dataset-fashion-mnist`` package installs the four gzipped IDX files."""

OPENML_MNIST = "mnist_784"
MNIST_ROWS = (60_000, 10_000)


@dataclass(frozen=True, eq=False, repr=False)
class Data:
    """A train/test split ready for scikit-learn: float32 features in [0, 1], int64 labels or float64 targets."""

    name: str
    X_train: Floats
    y_train: Labels | Targets
    X_test: Floats
    y_test: Labels | Targets
    source: str
    capped_from: int | None = None  # training rows before a dry run's cap

    @property
    def n_train(self) -> int:
        """Number of training rows."""
        return int(self.X_train.shape[0])

    @property
    def n_train_planned(self) -> int:
        """Training rows the grid asks for: :attr:`n_train`, or the rows before a dry run's cap."""
        return self.capped_from or self.n_train

    @property
    def n_test(self) -> int:
        """Number of test rows."""
        return int(self.X_test.shape[0])

    @property
    def n_features(self) -> int:
        """Number of feature columns."""
        return int(self.X_train.shape[1])

    def __repr__(self) -> str:
        return (
            f"Data(name={self.name!r}, n_train={self.n_train}, n_test={self.n_test}, "
            f"n_features={self.n_features}, source={self.source!r})"
        )


def data_home() -> Path:
    """Cache directory for downloads: ``$SWEEPER_DATA_HOME``, else ``~/.cache/sweeper``."""
    configured = os.environ.get("SWEEPER_DATA_HOME")
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "sweeper"


def load(
    dataset: Dataset,
    *,
    fraction: float = 1.0,
    test_size: float = TEST_SIZE,
    seed: int = 0,
    max_train_rows: int | None = None,
) -> Data:
    """Load ``dataset`` as a :class:`Data`.

    Parameters
    ----------
    dataset
        Which data: ``digits``, ``mnist``, ``fashion-mnist`` or ``path`` (with ``dataset.path``).
    fraction
        Share of the training set to keep, 0 < fraction <= 1 (stratified, seeded); the test set is kept whole.
    test_size
        Test share for data without its own split (digits, ``X``/``y`` files, Parquet without ``split``).
    seed
        Seed for the holdout split and the subsample; the same seed gives the same arrays.
    max_train_rows
        Cap on training rows after ``fraction`` (stratified, seeded), e.g. for dry runs.

    Raises
    ------
    UserError
        The data is missing, unreadable or malformed, or an argument is out of range.
    """
    check_load_arguments(fraction, test_size, max_train_rows)
    data = _load_full(dataset, test_size=test_size, seed=seed)
    planned = max(round(fraction * data.n_train), 1)
    keep = planned if max_train_rows is None else min(planned, max_train_rows)
    if keep >= data.n_train:
        return data
    y = data.y_train
    rows = random_rows(len(y), keep, seed) if y.dtype.kind == "f" else stratified_rows(y.astype(np.int64), keep, seed)
    capped_from = planned if keep < planned else None
    return Data(data.name, data.X_train[rows], data.y_train[rows], data.X_test, data.y_test, data.source, capped_from)


def check_available(dataset: Dataset) -> None:
    """Cheaply check that ``dataset`` can be loaded, without downloading it or holding its data in memory.

    Reads the headers of IDX, ``.npz`` and Parquet files and checks the sizes they declare against
    :data:`MAX_ARRAY_BYTES` and the file; gzipped IDX files and deflated ``.npz`` members are inflated
    in bounded chunks (and discarded) to check that they hold exactly what their headers declare.
    MNIST without a path comes from OpenML: whether the network is reachable cannot be known
    without using it, so that case only checks that the cache directory is usable; :func:`load`
    turns a failed download into a :class:`UserError`.

    Raises
    ------
    UserError
        What is missing or malformed and how to fix it.
    """
    max_bytes = MAX_ARRAY_BYTES
    if dataset.name in _BUNDLED:
        return
    if dataset.name == CALIFORNIA:
        _california_cache()
        return
    if dataset.name == "mnist":
        if dataset.path is not None:
            find_idx_files(Path(dataset.path).expanduser(), hint=_MNIST_HINT, check_max_bytes=max_bytes)
            return
        home = data_home()
        info = stat_or_none(home)
        if info is not None and not stat.S_ISDIR(info.st_mode):
            raise UserError(f"the data cache {home} is not a directory (set SWEEPER_DATA_HOME to a directory)")
        return
    if dataset.name == "fashion-mnist":
        directory = Path(dataset.path or FASHION_MNIST_DIR).expanduser()
        find_idx_files(directory, hint=_FASHION_HINT, check_max_bytes=max_bytes)
        return
    if dataset.name == "path":
        path, is_dir = user_path(dataset)
        if is_dir:
            find_idx_files(path, hint=_MNIST_HINT, check_max_bytes=max_bytes)
        elif path.suffix == ".npz":
            read_npz(path, max_bytes, keep=False)
        elif path.suffix in PARQUET_SUFFIXES:
            check_parquet(path, max_bytes)
        else:
            raise unknown_file_error(path)
        return
    raise _unknown_name(dataset.name)


# --- loading -------------------------------------------------------------------------------------------------------


_MNIST_HINT = "download the four IDX files of MNIST (train-images-idx3-ubyte.gz etc.) into it"
_FASHION_HINT = "install them with `apt-get install dataset-fashion-mnist`, or set dataset.path to a directory of them"


def _load_full(dataset: Dataset, *, test_size: float, seed: int) -> Data:
    max_bytes = MAX_ARRAY_BYTES
    if dataset.name == "digits":
        return _load_digits(test_size, seed)
    if dataset.name == "diabetes":
        return _load_diabetes(test_size, seed)
    if dataset.name == CALIFORNIA:
        return _load_california(test_size, seed)
    if dataset.name == "mnist":
        if dataset.path is not None:
            return _load_idx_dir(Path(dataset.path).expanduser(), "mnist", _MNIST_HINT, max_bytes)
        return _load_openml_mnist()
    if dataset.name == "fashion-mnist":
        directory = Path(dataset.path or FASHION_MNIST_DIR).expanduser()
        return _load_idx_dir(directory, "fashion-mnist", _FASHION_HINT, max_bytes)
    if dataset.name == "path":
        path, is_dir = user_path(dataset)
        if is_dir:
            return _load_idx_dir(path, path.name, _MNIST_HINT, max_bytes)
        if path.suffix == ".npz":
            return _load_npz(path, test_size, seed, max_bytes)
        if path.suffix in PARQUET_SUFFIXES:
            return _load_parquet(path, test_size, seed, max_bytes)
        raise unknown_file_error(path)
    raise _unknown_name(dataset.name)


def _load_digits(test_size: float, seed: int) -> Data:
    from sklearn.datasets import load_digits

    bunch = load_digits()
    X = (np.asarray(bunch.data) / 16.0).astype(np.float32)
    y = np.asarray(bunch.target).astype(np.int64)
    source = "sklearn bundled digits"
    return Data("digits", *holdout_split(X, y, source, test_size, seed), source)


def _load_diabetes(test_size: float, seed: int) -> Data:
    """scikit-learn's bundled diabetes (442 rows, 10 features, a disease-progression target): features min-max
    scaled to [0, 1], a seeded random holdout."""
    from sklearn.datasets import load_diabetes

    bunch = load_diabetes()
    return _regression_set("diabetes", bunch.data, bunch.target, "sklearn bundled diabetes", test_size, seed)


def _regression_set(name: str, X: Any, y: Any, source: str, test_size: float, seed: int) -> Data:
    """Features min-max scaled to [0, 1], float64 targets, a seeded random holdout."""
    from sklearn.model_selection import train_test_split

    features = np.asarray(X, dtype=np.float64)
    span = features.max(axis=0) - features.min(axis=0)
    scaled = ((features - features.min(axis=0)) / np.where(span > 0, span, 1.0)).astype(np.float32)
    X_train, X_test, y_train, y_test = train_test_split(
        scaled, np.asarray(y, dtype=np.float64), test_size=test_size, random_state=seed
    )
    return Data(name, X_train, y_train, X_test, y_test, source)


def _california_cache() -> Path:
    """scikit-learn's cached California housing (:data:`CALIFORNIA_CACHE` in its data home); raises UserError naming the
    fix when it is not there (it is downloaded once, and this machine may have no network)."""
    from sklearn.datasets import get_data_home

    path = Path(get_data_home()) / CALIFORNIA_CACHE
    info = stat_or_none(path)
    if info is None:
        raise UserError(
            f"california_housing is not in scikit-learn's cache ({path} does not exist): fetch it once on a machine "
            "with network access, `python -c 'from sklearn.datasets import fetch_california_housing as f; f()'`, "
            "and copy that file here (SCIKIT_LEARN_DATA names the cache directory)"
        )
    if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_ARRAY_BYTES:
        raise UserError(
            f"{path} is not scikit-learn's California housing cache (a regular file of at most "
            f"{MAX_ARRAY_BYTES:,} bytes): delete it and fetch it again"
        )
    return path


def _load_california(test_size: float, seed: int) -> Data:
    """California housing (20,640 districts, 8 features, the median house value in $100,000s) from scikit-learn's
    cache, never downloaded: features min-max scaled, a seeded random holdout."""
    from sklearn.datasets import fetch_california_housing

    path = _california_cache()
    try:
        bunch = fetch_california_housing(download_if_missing=False)
    except Exception as error:  # a damaged pickle fails in any way unpickling can (KeyError, ...)
        raise UserError(
            f"{path} cannot be read as California housing ({error}): delete it and fetch it again"
        ) from error
    source = f"sklearn cached California housing ({path})"
    return _regression_set(CALIFORNIA, bunch.data, bunch.target, source, test_size, seed)


def _load_openml_mnist() -> Data:
    from sklearn.datasets import fetch_openml

    home = data_home()
    source = f"OpenML {OPENML_MNIST} (cache dir {home})"
    try:
        with warnings.catch_warnings():  # sklearn warns before each retry; the UserError below tells the outcome
            warnings.filterwarnings("ignore", message="A network error occurred", category=UserWarning)
            bunch = fetch_openml(OPENML_MNIST, version=1, as_frame=False, parser="auto", data_home=str(home))
    except OSError as error:  # URLError, TimeoutError, socket errors, an unwritable cache
        raise UserError(
            f"MNIST could not be fetched from OpenML into the cache {home} ({error}); this needs the network once. "
            "Offline, put the four MNIST IDX files (train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, "
            "t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz) in a directory DIR and use "
            "`dataset: {name: mnist, path: DIR}`"
        ) from error
    X = np.asarray(bunch.data)
    y = as_labels(np.asarray(bunch.target), source)
    n_train, n_test = MNIST_ROWS
    if X.ndim != 2 or X.shape[0] != n_train + n_test or y.shape != (X.shape[0],):
        raise UserError(
            f"{source} has shape {X.shape} with {y.shape[0]} labels, expected {n_train + n_test} rows; "
            f"delete {home / 'openml'} to download it again"
        )
    X = (X / 255.0).astype(np.float32)
    return Data("mnist", X[:n_train], y[:n_train], X[n_train:], y[n_train:], source)


def _load_idx_dir(directory: Path, name: str, hint: str, max_bytes: int) -> Data:
    paths = find_idx_files(directory, hint=hint)
    arrays = {key: read_idx(path, max_bytes=max_bytes) for key, path in paths.items()}
    for split in ("train", "test"):
        X, y = arrays[f"X_{split}"], arrays[f"y_{split}"]
        if y.ndim != 1 or X.ndim < 2 or X.shape[0] != y.shape[0]:
            raise UserError(
                f"{paths[f'X_{split}']} holds {X.shape} images but {paths[f'y_{split}']} holds {y.shape} labels; "
                "expected n images and n labels"
            )
    source = str(directory)
    X_train = as_features(arrays["X_train"], str(paths["X_train"]))
    X_test = as_features(arrays["X_test"], str(paths["X_test"]))
    if X_train.shape[1] != X_test.shape[1]:
        raise UserError(f"{paths['X_train']} and {paths['X_test']} have images of different sizes")
    y_train = as_labels(arrays["y_train"], str(paths["y_train"]))
    y_test = as_labels(arrays["y_test"], str(paths["y_test"]))
    return Data(name, X_train, y_train, X_test, y_test, source)


def _load_npz(path: Path, test_size: float, seed: int, max_bytes: int) -> Data:
    arrays = read_npz(path, max_bytes, keep=True)
    keys = tuple(arrays)
    source = str(path)
    if len(keys) == 2:
        X, y = as_xy(arrays["X"], arrays["y"], f"{path} (X, y)")
        return Data(path.name, *holdout_split(X, y, source, test_size, seed), source)
    X_train, y_train = as_xy(arrays["X_train"], arrays["y_train"], f"{path} (X_train, y_train)")
    X_test, y_test = as_xy(arrays["X_test"], arrays["y_test"], f"{path} (X_test, y_test)")
    if X_train.shape[1] != X_test.shape[1]:
        raise UserError(f"{path}: X_train has {X_train.shape[1]} features but X_test has {X_test.shape[1]}")
    return Data(path.name, X_train, y_train, X_test, y_test, source)


def _load_parquet(path: Path, test_size: float, seed: int, max_bytes: int) -> Data:
    table, features = read_parquet(path, max_bytes)
    columns = []
    for column in features:
        values = table.column(column).to_numpy()
        if values.dtype.kind not in "biuf":
            raise UserError(f"{path}: feature column {column!r} is {values.dtype}, expected numbers")
        columns.append(values)
    X_all = np.column_stack(columns) if columns else np.empty((table.num_rows, 0))
    y_all = np.asarray(table.column(LABEL_COLUMN).to_numpy())
    if SPLIT_COLUMN not in table.column_names:
        X, y = as_xy(X_all, y_all, str(path))
        return Data(path.name, *holdout_split(X, y, str(path), test_size, seed), str(path))
    split = np.asarray(table.column(SPLIT_COLUMN).to_numpy()).astype(str)
    unknown = sorted(set(split.tolist()) - {"train", "test"})
    if unknown:
        raise UserError(f"{path}: column {SPLIT_COLUMN!r} has {unknown}, expected only 'train' and 'test'")
    train, test = split == "train", split == "test"
    if not train.any() or not test.any():
        raise UserError(f"{path}: column {SPLIT_COLUMN!r} needs both 'train' and 'test' rows")
    X_train, y_train = as_xy(X_all[train], y_all[train], f"{path} (train rows)")
    X_test, y_test = as_xy(X_all[test], y_all[test], f"{path} (test rows)")
    return Data(path.name, X_train, y_train, X_test, y_test, str(path))


def _unknown_name(name: str) -> UserError:
    return UserError(
        f"unknown dataset {name!r}; expected digits, mnist, fashion-mnist, diabetes, california_housing or path"
    )
