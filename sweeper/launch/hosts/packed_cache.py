"""This environment packed for the nodes once, when a YARN grid names no ``cluster.python_archive``.

A node of a real cluster has none of this machine's Python: a YARN launch ships the environment, packed by
:func:`sweeper.launch.hosts.pack_env.pack` (its own interpreter included) into
``~/.cache/sweeper/envs/env-<fingerprint>.tar.gz`` (``$XDG_CACHE_HOME`` if set). The fingerprint covers
what the archive is made of (every file's path, size and modification time in the venv and in sweeper's
package, and the base interpreter), so an unchanged environment is packed once and reused by every launch
and every later sweep; a changed one is packed again, and only the newest archives are kept. Left out, with the
scripts they installed in ``bin/``: build and test tools (:data:`DEV_TOOLS`: pip, setuptools, mypy, ruff, pytest,
...) and what only the driver runs (:data:`DRIVER_ONLY`: matplotlib and what only it needs, for reports; pygments
and markdown-it, for rich in a terminal; asyncssh and cryptography, for ``manager: ssh``). No process in a
container imports them: tests/test_pack_env.py checks the fits, the workers and the probe.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from sweeper.errors import UserError
from sweeper.launch.base import LaunchError
from sweeper.launch.hosts import interpreter
from sweeper.launch.hosts.pack_env import members, pack

PACK_FORMAT = "6"  # bump when pack() changes what it writes
KEPT_ARCHIVES = 3
AUTO_LEVEL = 1  # gzip level of an automatic pack: 3-4x faster than 6, ~10 % larger
# Tools for building and checking code, which no process in a container imports: fewer files for every
# NodeManager to unpack (a NodeManager without Hadoop's native library sets each file's permissions by a process).
DEV_TOOLS = ("pip", "pip-*", "setuptools*", "pkg_resources", "_distutils_hack", "distutils-precedence.pth",
             "wheel", "wheel-*",
             "mypy", "mypy-*", "*__mypyc*", "mypyc", "librt", "librt-*", "ast_serialize", "ast_serialize-*",
             "pathspec", "pathspec-*", "*-stubs", "types_*",
             "ruff", "ruff-*", "_pytest", "pytest*", "py.py", "pluggy", "pluggy-*", "iniconfig", "iniconfig-*",
             "hypothesis", "hypothesis-*", "grimp*", "importlinter", "import_linter*")  # fmt: skip
# What only the driver imports: the report's figures (matplotlib and the packages only it requires), what rich
# needs for syntax and Markdown in a terminal (a node uses rich.text alone), the SSH client of manager: ssh and its
# certificates. Top-level module names match these patterns too (the test of what containers import).
DRIVER_ONLY = ("matplotlib", "matplotlib-*", "mpl_toolkits", "contourpy", "contourpy-*", "cycler", "cycler-*",
               "fontTools", "fonttools-*", "kiwisolver", "kiwisolver-*", "PIL", "pillow-*", "pillow.libs",
               "pyparsing", "pyparsing-*", "pygments", "pygments-*", "markdown_it", "markdown_it_py-*", "mdurl",
               "mdurl-*", "asyncssh", "asyncssh-*", "cryptography", "cryptography-*", "cffi", "cffi-*",
               "_cffi_backend*", "pycparser", "pycparser-*")  # fmt: skip
AUTO_EXCLUDED = (*DEV_TOOLS, *DRIVER_ONLY)  # what an automatic pack leaves out of site-packages (and bin/)
_PACKED: dict[str, Path] = {}  # fingerprint -> archive, packed or found by this process


def sweeper_cache() -> Path:
    """The sweeper's cache of what it makes once per machine: ``$XDG_CACHE_HOME/sweeper``, else ``~/.cache/sweeper``."""
    return Path(os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")) / "sweeper"


def cache_dir() -> Path:
    """Where automatic packs are kept."""
    return sweeper_cache() / "envs"


def fingerprint(prefix: Path, exclude: Sequence[str] = AUTO_EXCLUDED) -> str:
    """A digest of what :func:`pack` reads (the same walk): paths, sizes and modification times, not contents."""
    digest = hashlib.sha256(PACK_FORMAT.encode())
    digest.update(_stamp(interpreter.base_binary()))
    for path, name in members(prefix, exclude):
        digest.update(name.encode() + b"\0" + _stamp(path))
    return digest.hexdigest()[:16]


def _stamp(path: Path) -> bytes:
    try:
        stat = path.lstat()
    except OSError:
        return b""
    return f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode()


def packed_environment(prefix: Path | None = None) -> tuple[Path, float]:
    """This environment (or the venv at ``prefix``) as an archive for the containers, and the seconds this call
    spent (0 when this process packed or found it before)."""
    started = time.monotonic()
    prefix = prefix or Path(sys.prefix)
    key = fingerprint(prefix)
    if key in _PACKED and _PACKED[key].is_file():
        return _PACKED[key], 0.0
    archive = cache_dir() / f"env-{key}.tar.gz"
    if not archive.is_file():
        print(f"sweeper: packing this environment for the nodes into {archive} (once)", file=sys.stderr, flush=True)
        try:
            pack(archive, prefix=prefix, exclude=AUTO_EXCLUDED, compresslevel=AUTO_LEVEL)
        except UserError as error:
            raise LaunchError(f"{error}; or pack one by hand and set cluster.python_archive") from error
        _prune(archive)
    _PACKED[key] = archive
    return archive, time.monotonic() - started


def _prune(keep: Path) -> None:
    """Remove all but the newest :data:`KEPT_ARCHIVES` automatic packs."""
    archives = sorted(keep.parent.glob("env-*.tar.gz"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in archives[KEPT_ARCHIVES:]:
        if old != keep:
            old.unlink(missing_ok=True)
