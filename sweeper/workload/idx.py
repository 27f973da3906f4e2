"""The IDX format (MNIST's and Fashion-MNIST's files): read one file, find and check a directory of four.

:func:`read_idx` reads one IDX file, gzipped or not, into an array; its header's shape is checked
against the size limit and the file's size before anything is allocated, and gzipped data is
inflated in bounded chunks (:mod:`sweeper.workload.bounded_files`). :func:`find_idx_files` finds the
four files of :data:`IDX_FILES` in a directory (regular files only) and, when asked, checks each
without keeping its data.
"""

from __future__ import annotations

import contextlib
import gzip
import math
import os
import stat
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sweeper.errors import UserError
from sweeper.workload.bounded_files import (
    MAX_ARRAY_BYTES,
    MAX_DEFLATE_RATIO,
    Stream,
    check_declared,
    kind_of,
    open_regular,
    read_exact,
    stat_or_none,
)

IDX_FILES = {
    "X_train": "train-images-idx3-ubyte",
    "y_train": "train-labels-idx1-ubyte",
    "X_test": "t10k-images-idx3-ubyte",
    "y_test": "t10k-labels-idx1-ubyte",
}
"""The original MNIST file names (each may also end in ``.gz``, or use ``.idx`` for ``-idx``)."""

# IDX type codes -> big-endian numpy dtypes (http://yann.lecun.com/exdb/mnist/, "THE IDX FILE FORMAT").
_IDX_DTYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
_GZIP_MAGIC = b"\x1f\x8b"


@dataclass(frozen=True)
class _Idx:
    """An open IDX file positioned at its data, with what its header declares."""

    stream: Stream
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
        data = read_exact(idx.stream, idx.n_bytes, str(path), idx.declared, keep=True)
    return data.view(idx.dtype).reshape(idx.shape).astype(idx.dtype.newbyteorder("="), copy=False)


def _check_idx(path: Path, max_bytes: int) -> None:
    """Check an IDX file's header against its size; inflate gzipped data in chunks to count it."""
    with _open_idx(path, max_bytes) as idx:
        if idx.gzipped:  # what a gzip holds is known only by inflating it
            read_exact(idx.stream, idx.n_bytes, str(path), idx.declared, keep=False)


@contextlib.contextmanager
def _open_idx(path: Path, max_bytes: int) -> Iterator[_Idx]:
    """Open an IDX file (gzipped or not) and check its header against ``max_bytes`` and the file's size."""
    with open_regular(path, "expected an IDX file") as file:
        file_bytes = os.fstat(file.fileno()).st_size
        gzipped = file.read(2) == _GZIP_MAGIC
        file.seek(0)
        try:
            with gzip.GzipFile(fileobj=file, mode="rb") if gzipped else contextlib.nullcontext(file) as stream:
                dtype, shape = _idx_header(stream, path)
                n_bytes = math.prod(shape) * dtype.itemsize  # Python ints: no wrap-around
                declared = f"the shape {shape} of {dtype.name} in its IDX header"
                check_declared(str(path), declared, n_bytes, max_bytes)
                _check_idx_size(path, declared, 4 + 4 * len(shape) + n_bytes, file_bytes, gzipped=gzipped)
                yield _Idx(stream, dtype, shape, n_bytes, declared, gzipped)
        except (OSError, EOFError, zlib.error) as error:
            raise UserError(f"{path} could not be read as an IDX file: {error}") from error


def _idx_header(stream: Stream, path: Path) -> tuple[np.dtype[Any], tuple[int, ...]]:
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
        info = stat_or_none(path)
        if info is not None and stat.S_ISREG(info.st_mode):
            return path
        if info is not None and other is None:
            other = (path, info.st_mode)
    if other is not None:
        raise UserError(f"{other[0]} is {kind_of(other[1])}, not a regular file; {hint}")
    return None


def find_idx_files(directory: Path, *, hint: str, check_max_bytes: int | None = None) -> dict[str, Path]:
    """Find the four IDX files in ``directory`` (regular files only); with ``check_max_bytes``, check each."""
    info = stat_or_none(directory)
    if info is None or not stat.S_ISDIR(info.st_mode):
        kind = "" if info is None else f" ({kind_of(info.st_mode)})"
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
