"""Which sweeper code runs: its version and a hash of its source, the same wherever it is computed.

A host or container that imports another sweeper than the driver's would run other fit code
silently; ``sweeper check`` compares this hash on every node with the driver's.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


def _source_files(package: Path = PACKAGE) -> list[Path]:
    """The package's Python files, in a fixed order."""
    return sorted(package.rglob("*.py"), key=lambda path: path.relative_to(package).as_posix())


@functools.lru_cache(maxsize=4)
def source_hash(package: Path = PACKAGE) -> str:
    """SHA-256 over every ``*.py`` file's relative path and bytes, first 16 hex digits."""
    digest = hashlib.sha256()
    for path in _source_files(package):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]
