"""Bounded reads of regular files: the reading rules every dataset file format shares.

A dataset file must be a regular file: a FIFO, device, socket or directory is refused before it is
opened (:func:`open_regular`), and again on the opened descriptor. Every array a file declares is
checked against :data:`MAX_ARRAY_BYTES` before anything is allocated (:func:`check_declared`), and its
data is read (or, to check it, only counted) in bounded chunks that must end exactly where the header
said (:func:`read_exact`), so a truncated file, a longer one or a decompression bomb is refused
without hanging or filling memory. The format readers (:mod:`sweeper.workload.idx`,
:mod:`sweeper.workload.user_files`) read through these.
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

import numpy as np
import numpy.typing as npt

from sweeper.errors import UserError

MAX_ARRAY_BYTES = 1 << 30
"""The largest array a dataset file may declare, in bytes as stored uncompressed (1 GiB; MNIST's images are
47 MB): a larger IDX or ``.npy`` header, or Parquet feature matrix (8 bytes a value), is refused before reading."""

MAX_DEFLATE_RATIO = 1032
"""Deflate inflates n bytes to at most about 1032 n: a gzip or ``.npz`` member declaring more is corrupt."""

_CHUNK_BYTES = 1 << 20
"""Compressed data is inflated (and counted) at most this much at a time."""

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class Stream(Protocol):
    """What the bounded reader needs: a raw file, a :class:`gzip.GzipFile` or a zip member."""

    def read(self, size: int, /) -> bytes: ...


def kind_of(mode: int) -> str:
    return next((name for is_kind, name in _KINDS if is_kind(mode)), f"a file of mode {stat.filemode(mode)}")


def stat_or_none(path: Path) -> os.stat_result | None:
    """``os.stat`` (following links, opening nothing); None when nothing is there."""
    try:
        return os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, ValueError) as error:  # permissions, a link loop, a name too long, a NUL
        raise UserError(f"{path} cannot be examined: {error}") from error


@contextlib.contextmanager
def open_regular(path: Path, expected: str) -> Iterator[io.BufferedReader]:
    """Open ``path`` for reading if it is a regular file.

    Anything else is refused before it is opened (opening a FIFO blocks until a writer comes; a
    device never ends), and again on the opened descriptor, which is opened non-blocking in case
    ``path`` was swapped for a FIFO in between.
    """
    info = stat_or_none(path)
    if info is None:
        raise UserError(f"{path} does not exist; {expected}")
    if not stat.S_ISREG(info.st_mode):
        raise UserError(f"{path} is {kind_of(info.st_mode)}, not a regular file; {expected}")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as error:
        raise UserError(f"{path} could not be opened: {error.strerror or error}") from error
    with os.fdopen(fd, "rb") as file:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise UserError(f"{path} is {kind_of(mode)}, not a regular file; {expected}")
        os.set_blocking(fd, True)
        yield file


def read_exact(stream: Stream, n_bytes: int, source: str, declared: str, *, keep: bool) -> npt.NDArray[np.uint8]:
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


def check_declared(source: str, declared: str, n_bytes: int, max_bytes: int) -> None:
    if n_bytes > max_bytes:
        raise UserError(
            f"{source}: {declared} needs {n_bytes:,} bytes, more than the limit of {max_bytes:,} bytes "
            "an array may have (sweeper.workload.data.MAX_ARRAY_BYTES)"
        )
