"""The base interpreter a packed environment carries: what a node with no Python (or another one) needs to run it.

A venv holds no interpreter of its own: its ``bin/python`` links to the base installation (``sys.base_prefix``),
which a cluster node does not have. The archive therefore carries:

- the base interpreter's binary, as ``bin/pythonX.Y`` (a real file);
- its standard library, as ``lib/pythonX.Y/`` beside the venv's ``site-packages`` (what the binary finds from its
  own location: ``lib/pythonX.Y/os.py`` is its landmark), without its test suite, IDLE, Tk, distutils and build files;
- the shared libraries the binary and the standard library's extension modules load (``libpythonX.Y.so``,
  OpenSSL, libffi, SQLite, ...) other than the C library's own (every Linux node has glibc), as ``lib/sweeper-libs/``;
- ``bin/python``, a shell script that puts ``lib/sweeper-libs`` on ``LD_LIBRARY_PATH`` and starts the binary
  (``bin/python3`` links to it). Processes the interpreter starts (loky, multiprocessing) inherit the variable.

The libraries are found with ``ldd`` (glibc's own tool); nothing is fetched.
"""

from __future__ import annotations

import os
import re
import shutil
import site
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from sweeper.errors import UserError

VERSION = f"{sys.version_info.major}.{sys.version_info.minor}"
LIBS = "lib/sweeper-libs"  # the shared libraries, in the archive
# What a node never runs of the standard library (distutils: building packages; gone from Python 3.12)
STDLIB_DROPPED = frozenset(
    {"site-packages", "dist-packages", "test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3",
     "__pycache__", "pydoc_data", "distutils"}
)  # fmt: skip
# The C library's own objects: a node always has them, and they must match its kernel and loader.
GLIBC = re.compile(r"^(ld-linux.*|libc|libm|libpthread|libdl|librt|libresolv|libutil|libanl|libmvec)\.so")
_LDD_LINE = re.compile(r"^\s*(\S+)\s+=>\s+(/\S+)\s+\(0x[0-9a-f]+\)")


def base_binary() -> Path:
    """The base installation's interpreter (the file a venv's ``bin/python`` resolves to)."""
    binary = Path(getattr(sys, "_base_executable", sys.executable)).resolve()
    if not binary.is_file():
        raise UserError(f"{binary}: the base interpreter of this environment is gone; pack-env needs it")
    return binary


def _stdlib_dir() -> Path:
    """The base installation's standard library (``os.py`` is there)."""
    return Path(os.__file__).resolve().parent


def stdlib_members(prefix: str = f"lib/python{VERSION}") -> Iterator[tuple[Path, str]]:
    """(path, name in the archive) of the standard library a node needs, directories first."""
    root = _stdlib_dir()
    for directory, subdirectories, names in os.walk(root):
        here = Path(directory)
        relative = here.relative_to(root).as_posix()
        subdirectories[:] = sorted(
            d for d in subdirectories if d not in STDLIB_DROPPED and not d.startswith("config-")
        )  # fmt: skip
        inner = prefix if relative == "." else f"{prefix}/{relative}"
        if relative != ".":
            yield here, inner
        for name in sorted(names):
            if not name.endswith((".pyc", ".pyo")) and not name.startswith("_tkinter"):
                yield here / name, f"{inner}/{name}"


def shared_libraries(binary: Path) -> list[Path]:
    """The shared libraries (not glibc's) that ``binary`` and the standard library's extension modules load."""
    if shutil.which("ldd") is None:
        raise UserError("pack-env needs ldd (glibc's, package libc-bin) to find the interpreter's shared libraries")
    objects = [binary, *sorted((_stdlib_dir() / "lib-dynload").glob("*.so"))]
    objects = [path for path in objects if not path.name.startswith("_tkinter")]
    found: dict[str, Path] = {}
    for start in range(0, len(objects), 50):
        done = subprocess.run(
            ["ldd", *map(str, objects[start : start + 50])], capture_output=True, text=True, check=False
        )
        for line in done.stdout.splitlines():
            match = _LDD_LINE.match(line)
            if match and not GLIBC.match(match.group(1)):
                found.setdefault(match.group(1), Path(match.group(2)))
    return [found[name] for name in sorted(found)]


def needs_site_path(prefix: Path) -> bool:
    """Whether the base Python would not put ``prefix``'s ``lib/pythonX.Y/site-packages`` on its path by itself.

    Debian's Python looks in ``dist-packages`` only (outside a venv); the launcher then names the directory.
    """
    wanted = prefix / "lib" / f"python{VERSION}" / "site-packages"
    return str(wanted) not in site.getsitepackages([str(prefix)])


def launcher(binary_name: str, site_path: bool) -> str:
    """``bin/python``: the bundled libraries on the loader's path, then the interpreter (argv kept)."""
    lines = [
        "#!/bin/sh",
        "# sweeper pack-env: this environment's own interpreter, with the shared libraries it carries",
        'here=$(cd "$(dirname "$0")" && pwd)',
        'prefix=$(dirname "$here")',
        f'LD_LIBRARY_PATH="$prefix/{LIBS}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}"',
        "export LD_LIBRARY_PATH",
    ]
    if site_path:
        lines += [
            f'PYTHONPATH="$prefix/lib/python{VERSION}/site-packages${{PYTHONPATH:+:$PYTHONPATH}}"',
            "export PYTHONPATH",
        ]
    lines.append(f'exec "$here/{binary_name}" "$@"')
    return "\n".join(lines) + "\n"
