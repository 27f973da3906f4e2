"""Load a dataset as train/test arrays: bundled digits, MNIST, Fashion-MNIST, or a user's file.

Every loader returns a :class:`Data` with float32 features scaled to [0, 1] and int64 labels.
Problems a user can fix (missing files, a truncated download, a file without the expected keys,
no network for OpenML) raise :class:`~sweeper.errors.UserError` naming the file and the fix.

Hostile files are refused the same way, before anything large is allocated and without hanging:
a dataset file must be a regular file (a FIFO, device, socket or directory is refused before it is
opened); every array's declared size (IDX header, ``.npy`` header in a ``.npz``, Parquet footer) is
checked against :data:`MAX_ARRAY_BYTES` and against the bytes the file holds; compressed data (gzip,
deflated ``.npz`` members) is inflated in bounded chunks and must end exactly where its header says.

>>> data = load(Dataset("digits"), fraction=0.5)
>>> (data.n_train, data.n_test, data.n_features)
(674, 450, 64)
>>> (data.X_train.dtype.name, data.y_train.dtype.name, float(data.X_train.max()))
('float32', 'int64', 1.0)
"""

from __future__ import annotations

import contextlib
import gzip
import io
import math
import os
import stat
import struct
import warnings
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

import numpy as np
import numpy.typing as npt

from sweeper.config.grid import Dataset
from sweeper.errors import UserError

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

MAX_ARRAY_BYTES = 1 << 30
"""The largest array a dataset file may declare, in bytes as stored uncompressed (1 GiB; MNIST's images are
47 MB): a larger IDX or ``.npy`` header, or Parquet feature matrix (8 bytes a value), is refused before reading."""

MAX_DEFLATE_RATIO = 1032
"""Deflate inflates n bytes to at most about 1032 n: a gzip or ``.npz`` member declaring more is corrupt."""

_CHUNK_BYTES = 1 << 20
"""Compressed data is inflated (and counted) at most this much at a time."""

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
    planned = max(round(fraction * data.n_train), 1)
    keep = planned if max_train_rows is None else min(planned, max_train_rows)
    if keep >= data.n_train:
        return data
    rows = _stratified_rows(data.y_train, keep, seed)
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
    if dataset.name == "digits":
        return
    if dataset.name == "mnist":
        if dataset.path is not None:
            _idx_paths(Path(dataset.path).expanduser(), hint=_MNIST_HINT, check_max_bytes=max_bytes)
            return
        home = data_home()
        info = _stat(home)
        if info is not None and not stat.S_ISDIR(info.st_mode):
            raise UserError(f"the data cache {home} is not a directory (set SWEEPER_DATA_HOME to a directory)")
        return
    if dataset.name == "fashion-mnist":
        directory = Path(dataset.path or FASHION_MNIST_DIR).expanduser()
        _idx_paths(directory, hint=_FASHION_HINT, check_max_bytes=max_bytes)
        return
    if dataset.name == "path":
        path, is_dir = _user_path(dataset)
        if is_dir:
            _idx_paths(path, hint=_MNIST_HINT, check_max_bytes=max_bytes)
        elif path.suffix == ".npz":
            _read_npz(path, max_bytes, keep=False)
        elif path.suffix in PARQUET_SUFFIXES:
            with _open_regular(path, _PATH_EXPECTED) as file:
                _parquet_file(path, file, max_bytes)
        else:
            raise _unknown_file(path)
        return
    raise _unknown_name(dataset.name)


# --- loading -------------------------------------------------------------------------------------------------------


_MNIST_HINT = "download the four IDX files of MNIST (train-images-idx3-ubyte.gz etc.) into it"
_FASHION_HINT = "install them with `apt-get install dataset-fashion-mnist`, or set dataset.path to a directory of them"


def _load_full(dataset: Dataset, *, test_size: float, seed: int) -> Data:
    max_bytes = MAX_ARRAY_BYTES
    if dataset.name == "digits":
        return _load_digits(test_size, seed)
    if dataset.name == "mnist":
        if dataset.path is not None:
            return _load_idx_dir(Path(dataset.path).expanduser(), "mnist", _MNIST_HINT, max_bytes)
        return _load_openml_mnist()
    if dataset.name == "fashion-mnist":
        directory = Path(dataset.path or FASHION_MNIST_DIR).expanduser()
        return _load_idx_dir(directory, "fashion-mnist", _FASHION_HINT, max_bytes)
    if dataset.name == "path":
        path, is_dir = _user_path(dataset)
        if is_dir:
            return _load_idx_dir(path, path.name, _MNIST_HINT, max_bytes)
        if path.suffix == ".npz":
            return _load_npz(path, test_size, seed, max_bytes)
        if path.suffix in PARQUET_SUFFIXES:
            return _load_parquet(path, test_size, seed, max_bytes)
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


def _load_idx_dir(directory: Path, name: str, hint: str, max_bytes: int) -> Data:
    paths = _idx_paths(directory, hint=hint)
    arrays = {key: read_idx(path, max_bytes=max_bytes) for key, path in paths.items()}
    for split in ("train", "test"):
        X, y = arrays[f"X_{split}"], arrays[f"y_{split}"]
        if y.ndim != 1 or X.ndim < 2 or X.shape[0] != y.shape[0]:
            raise UserError(
                f"{paths[f'X_{split}']} holds {X.shape} images but {paths[f'y_{split}']} holds {y.shape} labels; "
                "expected n images and n labels"
            )
    source = str(directory)
    X_train = _features(arrays["X_train"], str(paths["X_train"]))
    X_test = _features(arrays["X_test"], str(paths["X_test"]))
    if X_train.shape[1] != X_test.shape[1]:
        raise UserError(f"{paths['X_train']} and {paths['X_test']} have images of different sizes")
    y_train = _labels(arrays["y_train"], str(paths["y_train"]))
    y_test = _labels(arrays["y_test"], str(paths["y_test"]))
    return Data(name, X_train, y_train, X_test, y_test, source)


def _load_npz(path: Path, test_size: float, seed: int, max_bytes: int) -> Data:
    arrays = _read_npz(path, max_bytes, keep=True)
    keys = tuple(arrays)
    source = str(path)
    if len(keys) == 2:
        X, y = _xy(arrays["X"], arrays["y"], f"{path} (X, y)")
        return _holdout(path.name, X, y, source, test_size, seed)
    X_train, y_train = _xy(arrays["X_train"], arrays["y_train"], f"{path} (X_train, y_train)")
    X_test, y_test = _xy(arrays["X_test"], arrays["y_test"], f"{path} (X_test, y_test)")
    if X_train.shape[1] != X_test.shape[1]:
        raise UserError(f"{path}: X_train has {X_train.shape[1]} features but X_test has {X_test.shape[1]}")
    return Data(path.name, X_train, y_train, X_test, y_test, source)


def _load_parquet(path: Path, test_size: float, seed: int, max_bytes: int) -> Data:
    import pyarrow as pa

    with _open_regular(path, _PATH_EXPECTED) as file:
        parquet, features = _parquet_file(path, file, max_bytes)
        try:
            table = parquet.read()
        except (OSError, ValueError, pa.ArrowException) as error:
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


# --- files: regular files only, declared sizes checked, bounded reads ------------------------------------------------


_PATH_EXPECTED = "expected a .npz file, a Parquet file or a directory of IDX files"

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class _Stream(Protocol):
    """What the bounded reader needs: a raw file, a :class:`gzip.GzipFile` or a zip member."""

    def read(self, size: int, /) -> bytes: ...


def _kind(mode: int) -> str:
    return next((name for is_kind, name in _KINDS if is_kind(mode)), f"a file of mode {stat.filemode(mode)}")


def _stat(path: Path) -> os.stat_result | None:
    """``os.stat`` (following links, opening nothing); None when nothing is there."""
    try:
        return os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, ValueError) as error:  # permissions, a link loop, a name too long, a NUL
        raise UserError(f"{path} cannot be examined: {error}") from error


@contextlib.contextmanager
def _open_regular(path: Path, expected: str) -> Iterator[io.BufferedReader]:
    """Open ``path`` for reading if it is a regular file.

    Anything else is refused before it is opened (opening a FIFO blocks until a writer comes; a
    device never ends), and again on the opened descriptor, which is opened non-blocking in case
    ``path`` was swapped for a FIFO in between.
    """
    info = _stat(path)
    if info is None:
        raise UserError(f"{path} does not exist; {expected}")
    if not stat.S_ISREG(info.st_mode):
        raise UserError(f"{path} is {_kind(info.st_mode)}, not a regular file; {expected}")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as error:
        raise UserError(f"{path} could not be opened: {error.strerror or error}") from error
    with os.fdopen(fd, "rb") as file:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise UserError(f"{path} is {_kind(mode)}, not a regular file; {expected}")
        os.set_blocking(fd, True)
        yield file


def _read_exact(stream: _Stream, n_bytes: int, source: str, declared: str, *, keep: bool) -> npt.NDArray[np.uint8]:
    """Read the ``n_bytes`` that ``declared`` announces, then require the end of ``stream``.

    Reads at most one chunk at a time and never more than ``n_bytes`` + 1 bytes, so a decompression
    bomb stops as soon as it passes its header's promise. Without ``keep`` the data is only counted
    (memory: one chunk) and an empty array is returned.
    """
    buffer = np.empty(n_bytes if keep else 0, dtype=np.uint8)
    done = 0
    while done < n_bytes:
        chunk = stream.read(min(_CHUNK_BYTES, n_bytes - done))
        if not chunk:
            raise UserError(
                f"{source} is corrupt or truncated: {declared} needs {n_bytes:,} bytes of data "
                f"but it holds only {done:,}; download or write it again"
            )
        if keep:
            buffer.data[done : done + len(chunk)] = chunk
        done += len(chunk)
    if stream.read(1):
        raise UserError(
            f"{source} is corrupt: it holds more data than the {n_bytes:,} bytes {declared} needs; "
            "download or write it again"
        )
    return buffer


def _check_declared(source: str, declared: str, n_bytes: int, max_bytes: int) -> None:
    if n_bytes > max_bytes:
        raise UserError(
            f"{source}: {declared} needs {n_bytes:,} bytes, more than the limit of {max_bytes:,} bytes "
            "an array may have (sweeper.workload.data.MAX_ARRAY_BYTES)"
        )


# --- IDX --------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Idx:
    """An open IDX file positioned at its data, with what its header declares."""

    stream: _Stream
    dtype: np.dtype[Any]
    shape: tuple[int, ...]
    n_bytes: int
    declared: str
    gzipped: bool


def read_idx(path: Path | str, *, max_bytes: int | None = None) -> np.ndarray[Any, np.dtype[Any]]:
    """Read one IDX file (optionally gzipped) into an array in native byte order.

    The header's shape is checked against ``max_bytes`` (default :data:`MAX_ARRAY_BYTES`) and
    the file's size before anything is allocated; gzipped data is inflated in bounded chunks.

    Raises
    ------
    UserError
        The file is missing, not a regular file, not IDX, truncated, longer than its header says, or too large.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = Path(tmp) / "labels-idx1-ubyte"
    ...     _ = path.write_bytes(bytes([0, 0, 0x08, 1, 0, 0, 0, 3, 7, 2, 1]))
    ...     read_idx(path).tolist()
    [7, 2, 1]
    >>> with tempfile.TemporaryDirectory() as tmp:  # four dimensions of 2**31: refused, nothing allocated
    ...     path = Path(tmp) / "huge-idx4-ubyte"
    ...     _ = path.write_bytes(bytes([0, 0, 0x08, 4]) + bytes([0x80, 0, 0, 0]) * 4)
    ...     read_idx(path)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    sweeper.errors.UserError: .../huge-idx4-ubyte: the shape (2147483648, ...) of uint8 in its IDX header needs 21,...
    """
    path = Path(path)
    with _open_idx(path, MAX_ARRAY_BYTES if max_bytes is None else max_bytes) as idx:
        data = _read_exact(idx.stream, idx.n_bytes, str(path), idx.declared, keep=True)
    return data.view(idx.dtype).reshape(idx.shape).astype(idx.dtype.newbyteorder("="), copy=False)


def _check_idx(path: Path, max_bytes: int) -> None:
    """Check an IDX file's header against its size; inflate gzipped data in chunks to count it."""
    with _open_idx(path, max_bytes) as idx:
        if idx.gzipped:  # what a gzip holds is known only by inflating it
            _read_exact(idx.stream, idx.n_bytes, str(path), idx.declared, keep=False)


@contextlib.contextmanager
def _open_idx(path: Path, max_bytes: int) -> Iterator[_Idx]:
    """Open an IDX file (gzipped or not) and check its header against ``max_bytes`` and the file's size."""
    with _open_regular(path, "expected an IDX file") as file:
        file_bytes = os.fstat(file.fileno()).st_size
        gzipped = file.read(2) == _GZIP_MAGIC
        file.seek(0)
        try:
            with gzip.GzipFile(fileobj=file, mode="rb") if gzipped else contextlib.nullcontext(file) as stream:
                dtype, shape = _idx_header(stream, path)
                n_bytes = math.prod(shape) * dtype.itemsize  # Python ints: no wrap-around
                declared = f"the shape {shape} of {dtype.name} in its IDX header"
                _check_declared(str(path), declared, n_bytes, max_bytes)
                _check_idx_size(path, declared, 4 + 4 * len(shape) + n_bytes, file_bytes, gzipped=gzipped)
                yield _Idx(stream, dtype, shape, n_bytes, declared, gzipped)
        except (OSError, EOFError, zlib.error) as error:
            raise UserError(f"{path} could not be read as an IDX file: {error}") from error


def _idx_header(stream: _Stream, path: Path) -> tuple[np.dtype[Any], tuple[int, ...]]:
    magic = stream.read(4)
    if len(magic) < 4 or magic[:2] != b"\0\0" or magic[2] not in _IDX_DTYPES or magic[3] == 0:
        codes = " ".join(f"{code:02x}" for code in _IDX_DTYPES)
        raise UserError(
            f"{path} is not an IDX file: it starts with 0x{magic.hex()}, not an IDX magic number "
            f"(00 00, a type code among {codes}, then 1 to 255 dimensions)"
        )
    ndim = magic[3]
    dims = stream.read(4 * ndim)
    if len(dims) < 4 * ndim:
        raise UserError(f"{path} is corrupt or truncated: its IDX header is incomplete; download it again")
    return np.dtype(_IDX_DTYPES[magic[2]]), struct.unpack(f">{ndim}I", dims)


def _check_idx_size(path: Path, declared: str, total_bytes: int, file_bytes: int, *, gzipped: bool) -> None:
    """The whole file (header and data) that ``declared`` needs must fit what the file can hold."""
    if not gzipped and total_bytes != file_bytes:
        raise UserError(
            f"{path} is corrupt or truncated: {declared} needs {total_bytes:,} bytes with the header "
            f"but the file holds {file_bytes:,}; download it again"
        )
    if gzipped and total_bytes > file_bytes * MAX_DEFLATE_RATIO:
        raise UserError(
            f"{path} is corrupt or truncated: {declared} needs {total_bytes:,} bytes with the header "
            f"but {file_bytes:,} gzipped bytes inflate to at most {file_bytes * MAX_DEFLATE_RATIO:,}; download it again"
        )


def _idx_candidates(stem: str) -> list[str]:
    dotted = stem.replace("-idx", ".idx")
    return [stem, f"{stem}.gz", dotted, f"{dotted}.gz"]


def _idx_file(directory: Path, stem: str, hint: str) -> Path | None:
    """The first regular file among the names of ``stem``; None if nothing has them; refused if only non-files do."""
    other: tuple[Path, int] | None = None
    for path in map(directory.joinpath, _idx_candidates(stem)):
        info = _stat(path)
        if info is not None and stat.S_ISREG(info.st_mode):
            return path
        if info is not None and other is None:
            other = (path, info.st_mode)
    if other is not None:
        raise UserError(f"{other[0]} is {_kind(other[1])}, not a regular file; {hint}")
    return None


def _idx_paths(directory: Path, *, hint: str, check_max_bytes: int | None = None) -> dict[str, Path]:
    """Find the four IDX files in ``directory`` (regular files only); with ``check_max_bytes``, check each."""
    info = _stat(directory)
    if info is None or not stat.S_ISDIR(info.st_mode):
        kind = "" if info is None else f" ({_kind(info.st_mode)})"
        raise UserError(f"{directory}{kind} is not a directory of IDX files; {hint}")
    found: dict[str, Path] = {}
    missing = []
    for key, stem in IDX_FILES.items():
        path = _idx_file(directory, stem, hint)
        if path is None:
            missing.append(f"{stem}[.gz]")
        else:
            found[key] = path
    if missing:
        raise UserError(f"{directory} lacks the IDX files {', '.join(missing)}; {hint}")
    if check_max_bytes is not None:
        for path in found.values():
            _check_idx(path, check_max_bytes)
    return found


# --- user files -------------------------------------------------------------------------------------------------------


def _user_path(dataset: Dataset) -> tuple[Path, bool]:
    """The dataset's path and whether it is a directory; anything but a directory or a regular file is refused."""
    if dataset.path is None:
        raise UserError(f"dataset 'path' needs a path: {_PATH_EXPECTED.removeprefix('expected ')}")
    path = Path(dataset.path).expanduser()
    info = _stat(path)
    if info is None:
        raise UserError(f"{path} does not exist; {_PATH_EXPECTED}")
    if not (stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode)):
        raise UserError(f"{path} is {_kind(info.st_mode)}; {_PATH_EXPECTED}")
    return path, stat.S_ISDIR(info.st_mode)


_NPZ_ERRORS = (OSError, EOFError, ValueError, zlib.error, zipfile.BadZipFile, NotImplementedError, RuntimeError)
"""What reading a damaged .npz raises (RuntimeError: an encrypted member; NotImplementedError: an unknown method)."""


def _read_npz(path: Path, max_bytes: int, *, keep: bool) -> dict[str, np.ndarray[Any, Any]]:
    """The arrays of ``path`` named by one of NPZ_KEYS, each header checked before its data is read.

    Without ``keep`` only checks: headers, sizes, and deflated data counted in bounded chunks.
    """
    with _open_regular(path, _PATH_EXPECTED) as file:
        try:
            with zipfile.ZipFile(file) as archive:
                members = _npz_members(path, archive)
                file_bytes = os.fstat(file.fileno()).st_size
                return {
                    key: _npz_array(path, archive, info, file_bytes, max_bytes, keep=keep)
                    for key, info in members.items()
                }
        except _NPZ_ERRORS as error:
            raise UserError(f"{path} could not be read as a NumPy .npz file: {error}") from error


def _npz_members(path: Path, archive: zipfile.ZipFile) -> dict[str, zipfile.ZipInfo]:
    infos = {info.filename.removesuffix(".npy"): info for info in archive.infolist()}
    for keys in NPZ_KEYS:
        if set(infos).issuperset(keys):
            return {key: infos[key] for key in keys}
    expected = " or ".join(", ".join(keys) for keys in NPZ_KEYS)
    names = sorted(infos)
    shown = f"{names[:10]} and {len(names) - 10} more" if len(names) > 10 else str(names)
    raise UserError(f"{path} holds the arrays {shown}; expected {expected}")


def _npz_array(
    path: Path, archive: zipfile.ZipFile, info: zipfile.ZipInfo, file_bytes: int, max_bytes: int, *, keep: bool
) -> np.ndarray[Any, Any]:
    """One member's array: its .npy header is checked against the member's sizes and ``max_bytes`` first.

    Without ``keep`` only checks, and returns an empty array.
    """
    source = f"{path} (member {info.filename})"
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise UserError(f"{source} is compressed with zip method {info.compress_type}; NumPy writes stored or deflated")
    ratio = MAX_DEFLATE_RATIO if info.compress_type == zipfile.ZIP_DEFLATED else 1
    if info.header_offset + info.compress_size > file_bytes or info.file_size > info.compress_size * ratio:
        raise UserError(
            f"{source} is corrupt or truncated: its zip entry declares {info.file_size:,} bytes from "
            f"{info.compress_size:,} bytes at offset {info.header_offset:,} of a {file_bytes:,}-byte file"
        )
    with archive.open(info) as member:
        shape, fortran, dtype = _npy_header(source, member)
        n_bytes = math.prod(shape) * dtype.itemsize  # Python ints: no wrap-around
        declared = f"the shape {shape} of {dtype} in its .npy header"
        _check_declared(source, declared, n_bytes, max_bytes)
        if n_bytes != info.file_size - member.tell():
            raise UserError(
                f"{source} is corrupt or truncated: {declared} needs {n_bytes:,} bytes of data "
                f"but the member holds {info.file_size - member.tell():,}"
            )
        if keep or info.compress_type == zipfile.ZIP_DEFLATED:  # what deflated data holds is known only by inflating
            data = _read_exact(member, n_bytes, source, declared, keep=keep)
    if not keep:
        return np.empty(0, dtype=np.uint8)
    return data.view(dtype).reshape(shape, order="F" if fortran else "C")


def _npy_header(source: str, member: IO[bytes]) -> tuple[tuple[int, ...], bool, np.dtype[Any]]:
    """Shape, Fortran order and dtype of a .npy header; pickled (object) arrays are refused."""
    version = np.lib.format.read_magic(member)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(member)
    elif version == (2, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(member)
    else:
        raise UserError(f"{source} is a .npy file of version {version}; expected version 1.0 or 2.0")
    if dtype.hasobject:
        raise UserError(
            f"{source} holds Python objects ({dtype}), which only unpickling could read; pickles are refused: "
            "save arrays of numbers"
        )
    if dtype.itemsize == 0 or any(d < 0 for d in shape):
        raise UserError(f"{source} declares an empty dtype or a negative dimension: shape {shape} of {dtype}")
    return shape, fortran, dtype


def _parquet_file(path: Path, file: io.BufferedReader, max_bytes: int) -> tuple[Any, list[str]]:
    """Open a Parquet file, check its schema and declared sizes; return it and its feature columns."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(file)
        names = list(parquet.schema_arrow.names)
        metadata = parquet.metadata
        uncompressed_bytes = sum(metadata.row_group(i).total_byte_size for i in range(metadata.num_row_groups))
    except (OSError, ValueError, pa.ArrowException) as error:
        raise UserError(f"{path} could not be read as Parquet: {error}") from error
    if LABEL_COLUMN not in names:
        raise UserError(
            f"{path} has no {LABEL_COLUMN!r} column (columns: {names[:10]}); expected a {LABEL_COLUMN!r} column, "
            f"feature columns and optionally a {SPLIT_COLUMN!r} column of 'train'/'test'"
        )
    features = [n for n in names if n not in (LABEL_COLUMN, SPLIT_COLUMN) and not n.startswith("__index_level_")]
    if not features:
        raise UserError(f"{path} has no feature columns besides {LABEL_COLUMN!r}")
    declared = (
        f"the {metadata.num_rows:,} rows x {len(features):,} feature columns its footer declares (8 bytes a value)"
    )
    _check_declared(str(path), declared, max(metadata.num_rows, 0) * len(features) * 8, max_bytes)
    _check_declared(str(path), "the uncompressed data its footer declares", uncompressed_bytes, max_bytes)
    return parquet, features


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
    return _features(X, source), _labels(y, source)


def _features(X: np.ndarray[Any, Any], source: str) -> Floats:
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
