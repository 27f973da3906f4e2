"""A user's dataset file: a ``.npz`` of NumPy arrays or a Parquet table, read with every declared size checked.

:func:`user_path` accepts a directory or a regular file and nothing else. :func:`read_npz` reads the
arrays of :data:`NPZ_KEYS`, checking each member's ``.npy`` header against the member's zip entry and
the size limit before its data is read (pickled arrays are refused); :func:`read_parquet` and
:func:`check_parquet` check a Parquet file's schema (a ``label`` column, feature columns, an optional
``split`` column) and the sizes its footer declares before reading it. Without their data kept, the
same readers only check a file (:func:`~sweeper.workload.data.check_available`).
"""

from __future__ import annotations

import io
import math
import os
import stat
import zipfile
import zlib
from pathlib import Path
from typing import IO, Any

import numpy as np

from sweeper.config.grid import Dataset
from sweeper.errors import UserError
from sweeper.workload.bounded_files import (
    MAX_DEFLATE_RATIO,
    check_declared,
    kind_of,
    open_regular,
    read_exact,
    stat_or_none,
)

NPZ_KEYS = (("X_train", "y_train", "X_test", "y_test"), ("X", "y"))
PARQUET_SUFFIXES = (".parquet", ".pq")
LABEL_COLUMN = "label"
SPLIT_COLUMN = "split"

_PATH_EXPECTED = "expected a .npz file, a Parquet file or a directory of IDX files"


def user_path(dataset: Dataset) -> tuple[Path, bool]:
    """The dataset's path and whether it is a directory; anything but a directory or a regular file is refused."""
    if dataset.path is None:
        raise UserError(f"dataset 'path' needs a path: {_PATH_EXPECTED.removeprefix('expected ')}")
    path = Path(dataset.path).expanduser()
    info = stat_or_none(path)
    if info is None:
        raise UserError(f"{path} does not exist; {_PATH_EXPECTED}")
    if not (stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode)):
        raise UserError(f"{path} is {kind_of(info.st_mode)}; {_PATH_EXPECTED}")
    return path, stat.S_ISDIR(info.st_mode)


_NPZ_ERRORS = (OSError, EOFError, ValueError, zlib.error, zipfile.BadZipFile, NotImplementedError, RuntimeError)
"""What reading a damaged .npz raises (RuntimeError: an encrypted member; NotImplementedError: an unknown method)."""


def read_npz(path: Path, max_bytes: int, *, keep: bool) -> dict[str, np.ndarray[Any, Any]]:
    """The arrays of ``path`` named by one of NPZ_KEYS, each header checked before its data is read.

    Without ``keep`` only checks: headers, sizes, and deflated data counted in bounded chunks.
    """
    with open_regular(path, _PATH_EXPECTED) as file:
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
        check_declared(source, declared, n_bytes, max_bytes)
        if n_bytes != info.file_size - member.tell():
            raise UserError(
                f"{source} is corrupt or truncated: {declared} needs {n_bytes:,} bytes of data "
                f"but the member holds {info.file_size - member.tell():,}"
            )
        if keep or info.compress_type == zipfile.ZIP_DEFLATED:  # what deflated data holds is known only by inflating
            data = read_exact(member, n_bytes, source, declared, keep=keep)
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
    check_declared(str(path), declared, max(metadata.num_rows, 0) * len(features) * 8, max_bytes)
    check_declared(str(path), "the uncompressed data its footer declares", uncompressed_bytes, max_bytes)
    return parquet, features


def check_parquet(path: Path, max_bytes: int) -> None:
    """Check a Parquet file's schema and the sizes its footer declares, without reading its data."""
    with open_regular(path, _PATH_EXPECTED) as file:
        _parquet_file(path, file, max_bytes)


def read_parquet(path: Path, max_bytes: int) -> tuple[Any, list[str]]:
    """A Parquet file's table and its feature columns, its schema and declared sizes checked first."""
    import pyarrow as pa

    with open_regular(path, _PATH_EXPECTED) as file:
        parquet, features = _parquet_file(path, file, max_bytes)
        try:
            table = parquet.read()
        except (OSError, ValueError, pa.ArrowException) as error:
            raise UserError(f"{path} could not be read as Parquet: {error}") from error
    return table, features


def unknown_file_error(path: Path) -> UserError:
    return UserError(
        f"{path}: unknown dataset file type {path.suffix or '(no extension)'!r}; expected a .npz file "
        f"(X_train, y_train, X_test, y_test or X, y), a Parquet file ({', '.join(PARQUET_SUFFIXES)}) "
        "with a 'label' column, or a directory of IDX files"
    )
