"""Load a dataset as train/test arrays: bundled digits, MNIST, Fashion-MNIST, or a user's file.

Every loader returns a :class:`Data` with float32 features scaled to [0, 1] and int64 labels.
Problems a user can fix (missing files, a truncated download, a file without the expected keys,
no network for OpenML) raise :class:`~sweeper.errors.UserError` naming the file and the fix.

>>> data = load(Dataset("digits"), fraction=0.5)
>>> (data.n_train, data.n_test, data.n_features)
(674, 450, 64)
>>> (data.X_train.dtype.name, data.y_train.dtype.name, float(data.X_train.max()))
('float32', 'int64', 1.0)
"""

from __future__ import annotations

import gzip
import os
import warnings
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from sweeper.errors import UserError
from sweeper.grid import Dataset

__all__ = [
    "FASHION_MNIST_DIR",
    "IDX_FILES",
    "Data",
    "check_available",
    "data_home",
    "load",
    "read_idx",
]

FASHION_MNIST_DIR = "/usr/share/datasets/fashion-mnist"
"""Where Debian's ``dataset-fashion-mnist`` package installs the four gzipped IDX files."""

IDX_FILES = {
    "X_train": "train-images-idx3-ubyte",
    "y_train": "train-labels-idx1-ubyte",
    "X_test": "t10k-images-idx3-ubyte",
    "y_test": "t10k-labels-idx1-ubyte",
}
"""The original MNIST file names (each may also end in ``.gz``, or use ``.idx`` for ``-idx``)."""

OPENML_MNIST = "mnist_784"
MNIST_ROWS = (60_000, 10_000)
NPZ_KEYS = (("X_train", "y_train", "X_test", "y_test"), ("X", "y"))
PARQUET_SUFFIXES = (".parquet", ".pq")
LABEL_COLUMN = "label"
SPLIT_COLUMN = "split"

# IDX type codes -> big-endian numpy dtypes (http://yann.lecun.com/exdb/mnist/, "THE IDX FILE FORMAT").
_IDX_DTYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
_GZIP_MAGIC = b"\x1f\x8b"

Floats = npt.NDArray[np.float32]
Labels = npt.NDArray[np.int64]


@dataclass(frozen=True, eq=False, repr=False)
class Data:
    """A train/test split ready for scikit-learn: float32 features in [0, 1], int64 labels."""

    name: str
    X_train: Floats
    y_train: Labels
    X_test: Floats
    y_test: Labels
    source: str

    @property
    def n_train(self) -> int:
        """Number of training rows."""
        return int(self.X_train.shape[0])

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
    test_size: float = 0.25,
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
    _check_arguments(fraction, test_size, max_train_rows)
    data = _load_full(dataset, test_size=test_size, seed=seed)
    keep = round(fraction * data.n_train)
    if max_train_rows is not None:
        keep = min(keep, max_train_rows)
    keep = max(keep, 1)
    if keep >= data.n_train:
        return data
    rows = _stratified_rows(data.y_train, keep, seed)
    return Data(data.name, data.X_train[rows], data.y_train[rows], data.X_test, data.y_test, data.source)


def check_available(dataset: Dataset) -> None:
    """Cheaply check that ``dataset`` can be loaded, without downloading or reading whole files.

    MNIST without a path comes from OpenML: whether the network is reachable cannot be known
    without using it, so that case only checks that the cache directory is usable; :func:`load`
    turns a failed download into a :class:`UserError`.

    Raises
    ------
    UserError
        What is missing and how to get it.
    """
    if dataset.name == "digits":
        return
    if dataset.name == "mnist":
        if dataset.path is not None:
            _idx_paths(Path(dataset.path).expanduser(), check_headers=True, hint=_MNIST_HINT)
            return
        home = data_home()
        if home.exists() and not home.is_dir():
            raise UserError(f"the data cache {home} is not a directory (set SWEEPER_DATA_HOME to a directory)")
        return
    if dataset.name == "fashion-mnist":
        directory = Path(dataset.path or FASHION_MNIST_DIR).expanduser()
        _idx_paths(directory, check_headers=True, hint=_FASHION_HINT)
        return
    if dataset.name == "path":
        path = _user_path(dataset)
        if path.is_dir():
            _idx_paths(path, check_headers=True, hint=_MNIST_HINT)
        elif path.suffix == ".npz":
            _npz_keys(path)
        elif path.suffix in PARQUET_SUFFIXES:
            _parquet_columns(path)
        else:
            raise _unknown_file(path)
        return
    raise _unknown_name(dataset.name)


# --- loading -------------------------------------------------------------------------------------------------------


_MNIST_HINT = "download the four IDX files of MNIST (train-images-idx3-ubyte.gz etc.) into it"
_FASHION_HINT = "install them with `apt-get install dataset-fashion-mnist`, or set dataset.path to a directory of them"


def _load_full(dataset: Dataset, *, test_size: float, seed: int) -> Data:
    if dataset.name == "digits":
        return _load_digits(test_size, seed)
    if dataset.name == "mnist":
        if dataset.path is not None:
            return _load_idx_dir(Path(dataset.path).expanduser(), "mnist", _MNIST_HINT)
        return _load_openml_mnist()
    if dataset.name == "fashion-mnist":
        return _load_idx_dir(Path(dataset.path or FASHION_MNIST_DIR).expanduser(), "fashion-mnist", _FASHION_HINT)
    if dataset.name == "path":
        path = _user_path(dataset)
        if path.is_dir():
            return _load_idx_dir(path, path.name, _MNIST_HINT)
        if path.suffix == ".npz":
            return _load_npz(path, test_size, seed)
        if path.suffix in PARQUET_SUFFIXES:
            return _load_parquet(path, test_size, seed)
        raise _unknown_file(path)
    raise _unknown_name(dataset.name)


def _load_digits(test_size: float, seed: int) -> Data:
    from sklearn.datasets import load_digits

    bunch = load_digits()
    X = (np.asarray(bunch.data) / 16.0).astype(np.float32)
    y = np.asarray(bunch.target).astype(np.int64)
    return _holdout("digits", X, y, "sklearn bundled digits", test_size, seed)


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
    y = _labels(np.asarray(bunch.target), source)
    n_train, n_test = MNIST_ROWS
    if X.ndim != 2 or X.shape[0] != n_train + n_test or y.shape != (X.shape[0],):
        raise UserError(
            f"{source} has shape {X.shape} with {y.shape[0]} labels, expected {n_train + n_test} rows; "
            f"delete {home / 'openml'} to download it again"
        )
    X = (X / 255.0).astype(np.float32)
    return Data("mnist", X[:n_train], y[:n_train], X[n_train:], y[n_train:], source)


def _load_idx_dir(directory: Path, name: str, hint: str) -> Data:
    paths = _idx_paths(directory, check_headers=False, hint=hint)
    arrays = {key: read_idx(path) for key, path in paths.items()}
    for split in ("train", "test"):
        X, y = arrays[f"X_{split}"], arrays[f"y_{split}"]
        if y.ndim != 1 or X.ndim < 2 or X.shape[0] != y.shape[0]:
            raise UserError(
                f"{paths[f'X_{split}']} holds {X.shape} images but {paths[f'y_{split}']} holds {y.shape} labels; "
                "expected n images and n labels"
            )
    source = str(directory)
    X_train = _features(arrays["X_train"].reshape(arrays["X_train"].shape[0], -1), str(paths["X_train"]))
    X_test = _features(arrays["X_test"].reshape(arrays["X_test"].shape[0], -1), str(paths["X_test"]))
    if X_train.shape[1] != X_test.shape[1]:
        raise UserError(f"{paths['X_train']} and {paths['X_test']} have images of different sizes")
    y_train = _labels(arrays["y_train"], str(paths["y_train"]))
    y_test = _labels(arrays["y_test"], str(paths["y_test"]))
    return Data(name, X_train, y_train, X_test, y_test, source)


def _load_npz(path: Path, test_size: float, seed: int) -> Data:
    keys = _npz_keys(path)
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {key: np.asarray(archive[key]) for key in keys}
    except (OSError, ValueError, zlib.error, EOFError) as error:
        raise UserError(f"{path} could not be read as a NumPy .npz file: {error}") from error
    source = str(path)
    if len(keys) == 2:
        X, y = _xy(arrays["X"], arrays["y"], f"{path} (X, y)")
        return _holdout(path.name, X, y, source, test_size, seed)
    X_train, y_train = _xy(arrays["X_train"], arrays["y_train"], f"{path} (X_train, y_train)")
    X_test, y_test = _xy(arrays["X_test"], arrays["y_test"], f"{path} (X_test, y_test)")
    if X_train.shape[1] != X_test.shape[1]:
        raise UserError(f"{path}: X_train has {X_train.shape[1]} features but X_test has {X_test.shape[1]}")
    return Data(path.name, X_train, y_train, X_test, y_test, source)


def _load_parquet(path: Path, test_size: float, seed: int) -> Data:
    import pyarrow.parquet as pq

    features = _parquet_columns(path)
    try:
        table = pq.read_table(path)
    except (OSError, ValueError) as error:
        raise UserError(f"{path} could not be read as Parquet: {error}") from error
    columns = []
    for column in features:
        values = table.column(column).to_numpy()
        if values.dtype.kind not in "biuf":
            raise UserError(f"{path}: feature column {column!r} is {values.dtype}, expected numbers")
        columns.append(values)
    X_all = np.column_stack(columns) if columns else np.empty((table.num_rows, 0))
    y_all = np.asarray(table.column(LABEL_COLUMN).to_numpy())
    if SPLIT_COLUMN not in table.column_names:
        X, y = _xy(X_all, y_all, str(path))
        return _holdout(path.name, X, y, str(path), test_size, seed)
    split = np.asarray(table.column(SPLIT_COLUMN).to_numpy()).astype(str)
    unknown = sorted(set(split.tolist()) - {"train", "test"})
    if unknown:
        raise UserError(f"{path}: column {SPLIT_COLUMN!r} has {unknown}, expected only 'train' and 'test'")
    train, test = split == "train", split == "test"
    if not train.any() or not test.any():
        raise UserError(f"{path}: column {SPLIT_COLUMN!r} needs both 'train' and 'test' rows")
    X_train, y_train = _xy(X_all[train], y_all[train], f"{path} (train rows)")
    X_test, y_test = _xy(X_all[test], y_all[test], f"{path} (test rows)")
    return Data(path.name, X_train, y_train, X_test, y_test, str(path))


# --- IDX --------------------------------------------------------------------------------------------------------------


def read_idx(path: Path | str) -> np.ndarray[Any, np.dtype[Any]]:
    """Read one IDX file (optionally gzipped) into an array in native byte order.

    Raises
    ------
    UserError
        The file is missing, not IDX, or truncated.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = Path(tmp) / "labels-idx1-ubyte"
    ...     _ = path.write_bytes(bytes([0, 0, 0x08, 1, 0, 0, 0, 3, 7, 2, 1]))
    ...     read_idx(path).tolist()
    [7, 2, 1]
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
        if raw[:2] == _GZIP_MAGIC:
            raw = gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as error:
        raise UserError(f"{path} could not be read as an IDX file: {error}") from error
    dtype, shape, offset = _idx_header(raw, path)
    expected = offset + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(raw) != expected:
        raise UserError(
            f"{path} is corrupt or truncated: its IDX header announces shape {shape} ({expected} bytes) "
            f"but the file holds {len(raw)} bytes; download it again"
        )
    array = np.frombuffer(raw, dtype=dtype, offset=offset).reshape(shape)
    return array.astype(dtype.newbyteorder("="))


def _idx_header(raw: bytes, path: Path) -> tuple[np.dtype[Any], tuple[int, ...], int]:
    if len(raw) < 4 or raw[:2] != b"\0\0" or raw[2] not in _IDX_DTYPES or raw[3] == 0:
        raise UserError(f"{path} is not an IDX file: it starts with 0x{raw[:4].hex()}, not an IDX magic number")
    ndim = raw[3]
    offset = 4 + 4 * ndim
    if len(raw) < offset:
        raise UserError(f"{path} is corrupt or truncated: its IDX header is incomplete; download it again")
    shape = tuple(int(d) for d in np.frombuffer(raw, dtype=">u4", count=ndim, offset=4))
    return np.dtype(_IDX_DTYPES[raw[2]]), shape, offset


def _idx_candidates(stem: str) -> list[str]:
    dotted = stem.replace("-idx", ".idx")
    return [stem, f"{stem}.gz", dotted, f"{dotted}.gz"]


def _idx_paths(directory: Path, *, check_headers: bool, hint: str) -> dict[str, Path]:
    """Find the four IDX files in ``directory``; optionally read their headers (cheap, even gzipped)."""
    if not directory.is_dir():
        raise UserError(f"{directory} is not a directory of IDX files; {hint}")
    found: dict[str, Path] = {}
    missing = []
    for key, stem in IDX_FILES.items():
        path = next((directory / n for n in _idx_candidates(stem) if (directory / n).is_file()), None)
        if path is None:
            missing.append(f"{stem}[.gz]")
        else:
            found[key] = path
    if missing:
        raise UserError(f"{directory} lacks the IDX files {', '.join(missing)}; {hint}")
    if check_headers:
        for path in found.values():
            try:
                with path.open("rb") as raw:
                    head = raw.read(2)
                with gzip.open(path, "rb") if head == _GZIP_MAGIC else path.open("rb") as stream:
                    _idx_header(stream.read(4 + 4 * 255), path)
            except (OSError, EOFError, zlib.error) as error:
                raise UserError(f"{path} could not be read as an IDX file: {error}") from error
    return found


# --- user files -------------------------------------------------------------------------------------------------------


def _user_path(dataset: Dataset) -> Path:
    if dataset.path is None:
        raise UserError("dataset 'path' needs a path: a .npz file, a Parquet file or a directory of IDX files")
    path = Path(dataset.path).expanduser()
    if not path.exists():
        raise UserError(f"{path} does not exist; expected a .npz file, a Parquet file or a directory of IDX files")
    return path


def _npz_keys(path: Path) -> tuple[str, ...]:
    try:
        with np.load(path, allow_pickle=False) as archive:
            present = set(archive.files)
    except (OSError, ValueError, zlib.error, EOFError, AttributeError) as error:
        raise UserError(f"{path} could not be read as a NumPy .npz file: {error}") from error
    for keys in NPZ_KEYS:
        if present.issuperset(keys):
            return keys
    expected = " or ".join(", ".join(keys) for keys in NPZ_KEYS)
    raise UserError(f"{path} holds the arrays {sorted(present)}; expected {expected}")


def _parquet_columns(path: Path) -> list[str]:
    """Check the schema of a Parquet file and return its feature columns."""
    import pyarrow.parquet as pq

    try:
        names = list(pq.read_schema(path).names)
    except (OSError, ValueError) as error:
        raise UserError(f"{path} could not be read as Parquet: {error}") from error
    if LABEL_COLUMN not in names:
        raise UserError(
            f"{path} has no {LABEL_COLUMN!r} column (columns: {names[:10]}); expected a {LABEL_COLUMN!r} column, "
            f"feature columns and optionally a {SPLIT_COLUMN!r} column of 'train'/'test'"
        )
    features = [n for n in names if n not in (LABEL_COLUMN, SPLIT_COLUMN) and not n.startswith("__index_level_")]
    if not features:
        raise UserError(f"{path} has no feature columns besides {LABEL_COLUMN!r}")
    return features


def _unknown_file(path: Path) -> UserError:
    return UserError(
        f"{path}: unknown dataset file type {path.suffix or '(no extension)'!r}; expected a .npz file "
        f"(X_train, y_train, X_test, y_test or X, y), a Parquet file ({', '.join(PARQUET_SUFFIXES)}) "
        "with a 'label' column, or a directory of IDX files"
    )


def _unknown_name(name: str) -> UserError:
    return UserError(f"unknown dataset {name!r}; expected digits, mnist, fashion-mnist or path")


# --- arrays -----------------------------------------------------------------------------------------------------------


def _xy(X: np.ndarray[Any, Any], y: np.ndarray[Any, Any], source: str) -> tuple[Floats, Labels]:
    if X.ndim < 2 or y.ndim != 1 or X.shape[0] != y.shape[0]:
        raise UserError(f"{source}: features have shape {X.shape} and labels {y.shape}; expected (n, ...) and (n,)")
    return _features(X.reshape(X.shape[0], -1), source), _labels(y, source)


def _features(X: np.ndarray[Any, Any], source: str) -> Floats:
    """Scale to float32 in [0, 1]: integers 0..255 are 8-bit pixels (/255), floats must already be in [0, 1]."""
    if X.size == 0:
        raise UserError(f"{source}: no feature values")
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


def _labels(y: np.ndarray[Any, Any], source: str) -> Labels:
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


def _holdout(name: str, X: Floats, y: Labels, source: str, test_size: float, seed: int) -> Data:
    from sklearn.model_selection import train_test_split

    try:
        X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=test_size, random_state=seed, stratify=y)
    except ValueError as error:
        raise UserError(f"{source}: cannot make a stratified {test_size:g} test holdout: {error}") from error
    return Data(name, X_train, y_train, X_test, y_test, source)


def _stratified_rows(y: Labels, keep: int, seed: int) -> npt.NDArray[np.intp]:
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


def _check_arguments(fraction: float, test_size: float, max_train_rows: int | None) -> None:
    problems = []
    if not 0 < fraction <= 1:
        problems.append(f"fraction must be in (0, 1], got {fraction!r}")
    if not 0 < test_size < 1:
        problems.append(f"test_size must be in (0, 1), got {test_size!r}")
    if max_train_rows is not None and max_train_rows < 1:
        problems.append(f"max_train_rows must be at least 1, got {max_train_rows!r}")
    if problems:
        raise UserError(problems)
