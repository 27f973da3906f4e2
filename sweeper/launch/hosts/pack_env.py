"""Pack this virtualenv into an archive YARN ships to its containers (``cluster.python_archive``).

The archive holds the venv's tree (``bin/``, ``lib/``, ``pyvenv.cfg``) at its root, so YARN's
``environment`` link gives ``./environment/bin/python``. sweeper itself goes in as a real copy of
its package: executors unpickle tasks that name ``sweeper.workload.fit``, and an editable install's
finder points at a source tree the nodes do not have. Left out, because no process in a container
needs them: the compiled modules (``__pycache__``, ``*.pyc``) but those of what a node's processes import
(:mod:`sweeper.launch.hosts.node_imports`: a container cannot write them), type stubs (``*.pyi``), the
packages' own ``tests/`` directories, what only builds extensions (C, C++ and Cython sources and headers,
``include/`` directories: :data:`BUILD_SUFFIXES`), pyspark's ``jars/`` (the executor JVMs get Spark's jars
from ``spark.yarn.jars``; the Python workers never start a JVM), ``examples/`` and their ``data/``, and the
top-level site-packages entries named by ``exclude`` (glob patterns, e.g. ``mypy*``) with the scripts
their distributions installed in ``bin/``. Fewer files matter: a NodeManager without Hadoop's native
library sets the permissions of every unpacked file with a ``chmod`` process of its own (~3 ms a file:
~30 s per node for a 10,000-file archive).

The archive carries its own interpreter (sweeper/launch/hosts/interpreter.py): the base installation's
binary, standard library and the shared libraries they load, with ``bin/python`` a launcher that finds
them; a node needs no Python of its own, and another Python there is not used. ``pyvenv.cfg`` and the
venv's links to its base interpreter are left out. Console scripts in ``bin/`` keep this machine's path in
their ``#!`` line; sweeper runs ``python -m`` only.
"""

from __future__ import annotations

import fnmatch
import io
import os
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from sweeper.errors import UserError
from sweeper.launch.hosts import interpreter
from sweeper.launch.hosts.node_imports import Compiled, compiled_imports

PACK_SUFFIXES = (".tar.gz", ".tgz", ".tar")
ALWAYS_DROPPED = (
    "__pycache__/ and *.pyc but what a node imports", "*.pyi", "tests/ of packages",
    "C, C++ and Cython sources and headers (include/)",
    "pyspark/jars/", "pyspark/work/", "pyspark/examples/", "pyspark/data/", "sweeper editable hooks",
    "pyvenv.cfg and the links to the base interpreter", "the standard library's tests, IDLE, Tk and distutils",
)  # fmt: skip
GZIP_LEVEL = 6  # `sweeper pack-env`'s gzip level: gzip's own default
# What only compiles extensions against a package (never read by a running process); "include" is a directory.
BUILD_SUFFIXES = (".c", ".cc", ".cpp", ".h", ".hpp", ".pyx", ".pxd", ".pxi", ".cmake")
BUILD_NAMES = frozenset({"include", "CMakeLists.txt"})
# pyspark's directories that no process of a YARN container or an SSH host reads (work: a standalone worker's
# scratch; examples: scripts, data: their inputs)
PYSPARK_DROPPED = ("jars", "work", "examples", "data")
VENV_ONLY = frozenset({"pyvenv.cfg", "bin/python", "bin/python3", f"bin/python{interpreter.VERSION}"})
EDITABLE_MARKERS = ("__editable__", ".egg-link")


@dataclass(frozen=True)
class Packed:
    """What :func:`pack` wrote."""

    path: Path
    files: int
    size_mib: float
    pack_s: float
    dropped: tuple[str, ...]


def site_packages(prefix: Path) -> Path:
    """The venv's ``lib/pythonX.Y/site-packages``."""
    return prefix / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"


def pack(
    out: Path,
    *,
    prefix: Path | None = None,
    exclude: Sequence[str] = (),
    compresslevel: int = GZIP_LEVEL,
    spark_jars: bool = False,
) -> Packed:
    """Write the venv at ``prefix`` (default: this one) to ``out`` (.tar.gz, .tgz or .tar); ``spark_jars`` keeps
    pyspark's jars (an SSH host runs Spark's daemons from the environment; YARN's containers get them apart)."""
    started = time.perf_counter()
    prefix = Path(prefix or sys.prefix)
    if not (prefix / "pyvenv.cfg").is_file():
        raise UserError(f"{prefix}: not a virtualenv (no pyvenv.cfg); pack-env packs the venv sweeper runs from")
    if not out.name.endswith(PACK_SUFFIXES):
        raise UserError(f"{out}: the archive must end with one of {', '.join(PACK_SUFFIXES)}")
    site = site_packages(prefix)
    if not site.is_dir():
        raise UserError(f"{site}: no site-packages for Python {sys.version_info.major}.{sys.version_info.minor}")
    source = _sweeper_source()
    foreign = [p.name for p in site.iterdir() if _is_editable(p.name) and "sweeper" not in p.name]
    if foreign:
        raise UserError(f"{site}: editable installs cannot be shipped to nodes: {', '.join(sorted(foreign))}")
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(f"{out.name}.partial-{os.getpid()}")  # two sweeps packing at once write apart
    mode = "w:gz" if out.name.endswith((".tar.gz", ".tgz")) else "w"
    files = 0
    options = {"compresslevel": compresslevel} if mode == "w:gz" else {}
    try:
        with (
            tempfile.TemporaryDirectory(prefix="sweeper-pyc-") as scratch,
            tarfile.open(partial, mode, **options) as archive,  # type: ignore[call-overload]
        ):
            compiled = compiled_imports(prefix / "bin" / "python", source, Path(scratch))
            for path, name in _with_compiled(_members(prefix, site, source, exclude, spark_jars), compiled):
                archive.add(path, arcname=name, recursive=False)
                files += 1
            files += _add_interpreter(archive, prefix, compiled)
        partial.replace(out)
    finally:
        partial.unlink(missing_ok=True)
    dropped = (*ALWAYS_DROPPED, *exclude)
    return Packed(out, files, out.stat().st_size / 2**20, time.perf_counter() - started, dropped)


def _add_interpreter(archive: tarfile.TarFile, prefix: Path, compiled: Mapping[str, Compiled]) -> int:
    """The base interpreter, its standard library (with the ``compiled`` modules) and libraries, and the
    ``bin/python`` launcher; entries added."""
    binary = interpreter.base_binary()
    name = f"python{interpreter.VERSION}"
    members = [(binary, f"bin/{name}"), *_with_compiled(interpreter.stdlib_members(), compiled)]
    libraries = [(library, f"{interpreter.LIBS}/{library.name}") for library in interpreter.shared_libraries(binary)]
    _add_generated(archive, interpreter.LIBS, tarfile.DIRTYPE, 0o755)
    for path, inner in [*members, *libraries]:
        archive.add(path.resolve() if path.is_symlink() else path, arcname=inner, recursive=False)
    script = interpreter.launcher(name, interpreter.needs_site_path(prefix)).encode()
    _add_generated(archive, "bin/python", tarfile.REGTYPE, 0o755, data=script)
    _add_generated(archive, "bin/python3", tarfile.SYMTYPE, 0o777, link="python")
    return len(members) + len(libraries) + 3


def _with_compiled(members: Iterable[tuple[Path, str]], compiled: Mapping[str, Compiled]) -> Iterator[tuple[Path, str]]:
    """``members``, each source module in ``compiled`` followed by its ``.pyc`` (after its ``__pycache__``)."""
    directories: set[str] = set()
    for path, name in members:
        yield path, name
        cached = compiled.get(os.path.realpath(path)) if name.endswith(".py") else None
        if cached is None:
            continue
        inner = f"{name.rpartition('/')[0]}/__pycache__"
        if inner not in directories:
            directories.add(inner)
            yield path.parent, inner  # the source's directory: its mode and owner
        yield cached.path, f"{inner}/{cached.name}"


def _add_generated(
    archive: tarfile.TarFile, name: str, kind: bytes, mode: int, data: bytes = b"", link: str = ""
) -> None:
    """An archive entry made here, not read from a file."""
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.mtime, info.size, info.linkname = kind, mode, int(time.time()), len(data), link
    archive.addfile(info, io.BytesIO(data) if data else None)


def _sweeper_source() -> Path:
    """The directory of the ``sweeper`` package this process imported (a source tree when editable)."""
    return Path(__file__).resolve().parents[2]


def _is_editable(name: str) -> bool:
    return any(marker in name for marker in EDITABLE_MARKERS)


def members(prefix: Path, exclude: Sequence[str] = ()) -> Iterator[tuple[Path, str]]:
    """(path, name in the archive) of what :func:`pack` reads from the venv at ``prefix`` and sweeper's package."""
    yield from _members(prefix, site_packages(prefix), _sweeper_source(), exclude)


def _members(
    prefix: Path, site: Path, source: Path, exclude: Sequence[str], spark_jars: bool = False
) -> Iterator[tuple[Path, str]]:
    """(path, name in the archive) of everything packed, sweeper's package copied into site-packages."""
    site_name = site.relative_to(prefix).as_posix()
    scripts = _installed_scripts(prefix, site, exclude)
    for directory, subdirectories, names in os.walk(prefix):
        here = Path(directory)
        relative = here.relative_to(prefix).as_posix()
        kept = []
        for sub in sorted(subdirectories):
            inner = f"{relative}/{sub}" if relative != "." else sub
            kept_jars = spark_jars and inner == f"{site_name}/pyspark/jars"
            if (_dropped(inner, sub, site_name, exclude) and not kept_jars) or (here / sub).resolve() == source:
                continue
            if (here / sub).is_symlink():  # lib64 -> lib: keep the link, do not walk it twice
                yield here / sub, inner
                continue
            kept.append(sub)
        subdirectories[:] = kept
        if relative != ".":
            yield here, relative
        for name in sorted(names):
            inner = f"{relative}/{name}" if relative != "." else name
            if inner not in VENV_ONLY and inner not in scripts and not _dropped(inner, name, site_name, exclude):
                yield here / name, inner
    target = f"{site_name}/sweeper"
    for directory, subdirectories, names in os.walk(source):
        subdirectories[:] = sorted(d for d in subdirectories if d != "__pycache__")
        here = Path(directory)
        inner = f"{target}/{here.relative_to(source).as_posix()}".removesuffix("/.")
        yield here, inner
        for name in sorted(names):
            if not name.endswith(".pyc"):
                yield here / name, f"{inner}/{name}"


def _installed_scripts(prefix: Path, site: Path, exclude: Sequence[str]) -> frozenset[str]:
    """The files (as named in the archive: ``bin/ruff``) that the distributions ``exclude`` names installed outside
    site-packages, as their ``*.dist-info/RECORD`` lists them (``../../../bin/ruff``)."""
    names: set[str] = set()
    for record in sorted(site.glob("*.dist-info/RECORD")):
        if not any(fnmatch.fnmatch(record.parent.name, pattern) for pattern in exclude):
            continue
        for line in record.read_text(errors="replace").splitlines():
            path = os.path.normpath(site / line.rsplit(",", 2)[0])
            if not path.startswith(str(site) + os.sep) and path.startswith(str(prefix) + os.sep):
                names.add(Path(path).relative_to(prefix).as_posix())
    return frozenset(names)


def _dropped(inner: str, name: str, site_name: str, exclude: Sequence[str]) -> bool:
    if name == "__pycache__" or name.endswith((".pyc", ".pyi")):
        return True
    if name == "tests" and inner.startswith(site_name + "/"):  # packages' own test suites, never imported
        return True
    in_package = inner.startswith(site_name + "/") and inner.count("/") > site_name.count("/") + 1
    if in_package and (name in BUILD_NAMES or name.endswith(BUILD_SUFFIXES)):  # what builds against a package
        return True
    if inner in {f"{site_name}/pyspark/{sub}" for sub in PYSPARK_DROPPED}:
        return True
    if inner.startswith(site_name + "/") and inner.count("/") == site_name.count("/") + 1:
        if _is_editable(name) and "sweeper" in name:
            return True
        return any(fnmatch.fnmatch(name, pattern) for pattern in exclude)
    return False
