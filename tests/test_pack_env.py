"""``sweeper pack-env`` on a small real venv: what goes in, what stays out, and bad input."""

from __future__ import annotations

import fnmatch
import json
import os
import shlex
import subprocess
import sys
import tarfile
import time
import venv
from pathlib import Path

import pytest

from sweeper.errors import UserError
from sweeper.launch.hosts import packed_cache
from sweeper.launch.hosts.node_imports import CONTAINER_MODULES, compiled_imports
from sweeper.launch.hosts.pack_env import pack, site_packages
from tests.conftest import REPO, run_cli


@pytest.fixture(scope="module")
def small_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv of this interpreter with a few fake packages: a test suite, a stub, caches, jars, an editable hook,
    sources and headers of an extension, pyspark's examples, a tool with a script in bin/."""
    prefix = tmp_path_factory.mktemp("venv") / "env"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(prefix)
    site = site_packages(prefix)
    for relative, content in {
        "numpyish/__init__.py": "x = 1\n",
        "numpyish/core.pyi": "x: int\n",
        "numpyish/tests/test_core.py": "def test(): pass\n",
        "numpyish/__pycache__/__init__.cpython-311.pyc": "",
        "pyspark/__init__.py": "",
        "pyspark/jars/spark-core.jar": "jar",
        "pyspark/examples/src/main/python/pi.py": "",
        "pyspark/data/mllib/sample.txt": "",
        "numpyish/_ext.pyx": "",
        "numpyish/_ext.c": "",
        "numpyish/include/numpyish/api.h": "",
        "mypy/__init__.py": "",
        "mypy-1.0.dist-info/RECORD": "mypy/__init__.py,,\n../../../bin/mypy,sha256=x,10\n",
        "../../../bin/mypy": "#!/usr/bin/env python\n",
        "__editable__.sweeper-0.1.0.pth": "/somewhere/else\n",
    }.items():
        path = site / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return prefix


def test_the_archive_has_the_venv_a_real_sweeper_and_none_of_what_containers_do_not_need(
    small_venv: Path, tmp_path: Path
) -> None:
    packed = pack(tmp_path / "env.tar.gz", prefix=small_venv, exclude=("mypy*",), compresslevel=1)
    site = site_packages(small_venv).relative_to(small_venv).as_posix()
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    with tarfile.open(packed.path) as archive:
        names = set(archive.getnames())
        assert archive.getmember("bin/python").isfile()  # the launcher, not the venv's link to its base interpreter
        assert archive.getmember(f"bin/python{version}").isfile()  # the interpreter itself
        assert archive.getmember("bin/python3").issym()
    assert {f"{site}/numpyish/__init__.py", f"{site}/pyspark/__init__.py", f"lib/python{version}/os.py"} <= names
    assert f"lib/python{version}/lib-dynload" in names and "pyvenv.cfg" not in names
    assert not [name for name in names if name.startswith(f"lib/python{version}/test/")]
    assert {f"{site}/sweeper/__init__.py", f"{site}/sweeper/workload/fit.py", f"{site}/sweeper/launch/base.py"} <= names
    left_out = (
        "numpyish/core.pyi", "numpyish/tests", "numpyish/__pycache__", "pyspark/jars", "pyspark/examples",
        "pyspark/data", "numpyish/_ext.pyx", "numpyish/_ext.c", "numpyish/include", "mypy", "mypy-1.0.dist-info",
        "__editable__",
    )  # fmt: skip
    assert not [name for name in names for part in left_out if f"{site}/{part}" in name or part in name.split("/")]
    # what a node's Python imports (numpyish is not), compiled: sweeper's package and the standard library's json
    tag = sys.implementation.cache_tag
    assert {
        f"{site}/sweeper/__pycache__/__init__.{tag}.pyc",
        f"lib/python{version}/json/__pycache__/__init__.{tag}.pyc",
    } <= names
    assert "bin/mypy" not in names  # the script the left-out distribution installed
    assert packed.files == len(names)
    assert not list(tmp_path.glob("*.partial*"))


def without_this_python(argv: list[str]) -> list[str]:
    """``argv`` in a mount namespace where this machine's Python is hidden: the base installation's standard
    library and binary, this venv and the repository (a node that has none of them)."""
    base = Path(sys._base_executable).resolve()  # type: ignore[attr-defined]
    hidden = [Path(os.__file__).resolve().parent, Path(sys.prefix), REPO]
    mounts = [f"mount -t tmpfs -o ro,size=4k hidden {shlex.quote(str(path))}" for path in hidden if path.is_dir()]
    mounts.append(f"mount --bind /dev/null {shlex.quote(str(base))}")
    return ["unshare", "--mount", "--", "sh", "-c", " && ".join([*mounts, 'exec "$@"']), "hide", *argv]


@pytest.mark.skipif(os.geteuid() != 0, reason="hiding this machine's Python needs a mount namespace (root)")
def test_the_packed_environment_runs_sweeper_where_this_python_is_gone(small_venv: Path, tmp_path: Path) -> None:
    packed = pack(tmp_path / "env.tar", prefix=small_venv)
    packed_at = time.time()
    unpacked = tmp_path / "node" / "environment"
    unpacked.mkdir(parents=True)
    with tarfile.open(packed.path) as archive:
        archive.extractall(unpacked, filter="data")  # nothing in it links outside it
    script = "import sys, ssl, sqlite3, json, sweeper; print(sys.prefix); print(sweeper.__file__)"
    found = subprocess.run(
        without_this_python([str(unpacked / "bin" / "python"), "-c", script]),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert found.returncode == 0, found.stderr
    prefix, package = found.stdout.split()
    assert Path(prefix) == unpacked and Path(package).is_relative_to(unpacked), found.stdout
    written = {
        path.relative_to(unpacked).as_posix() for path in unpacked.rglob("*.pyc") if path.stat().st_mtime > packed_at
    }
    # what no node's process imports was compiled there (sqlite3); what they do came compiled (json, sweeper)
    stdlib = f"lib/python{sys.version_info.major}.{sys.version_info.minor}"
    assert f"{stdlib}/sqlite3/__pycache__/dbapi2.{sys.implementation.cache_tag}.pyc" in written
    assert not [name for name in written if "/json/" in name or "/sweeper/" in name]
    hidden = subprocess.run(without_this_python([sys.executable, "-c", "1"]), capture_output=True, check=False)
    assert hidden.returncode != 0  # the mounts did hide this Python


def test_bad_input_is_a_clear_error_and_writes_nothing(small_venv: Path, tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"env\.zip: the archive must end with one of \.tar\.gz, \.tgz, \.tar"):
        pack(tmp_path / "env.zip", prefix=small_venv)
    with pytest.raises(UserError, match="not a virtualenv"):
        pack(tmp_path / "env.tar", prefix=tmp_path)
    result = run_cli("pack-env", str(tmp_path / "env.zip"))
    said = " ".join(result.stderr.split())  # its lines unwrapped
    assert result.returncode == 2 and "must end with one of" in said and "Traceback" not in said
    assert not list(tmp_path.iterdir())


def test_an_editable_install_other_than_sweeper_is_refused(tmp_path: Path) -> None:
    prefix = tmp_path / "env"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(prefix)
    (site_packages(prefix) / "__editable__.other-1.0.pth").write_text("/src/other\n")
    with pytest.raises(UserError, match=r"editable installs cannot be shipped to nodes: __editable__\.other-1\.0\.pth"):
        pack(tmp_path / "env.tar", prefix=prefix)
    assert sys.prefix != str(prefix)


def test_a_yarn_launch_packs_an_unchanged_environment_once(
    small_venv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(packed_cache, "_PACKED", {})
    first, first_s = packed_cache.packed_environment(small_venv)
    assert first.parent == tmp_path / "cache" / "sweeper" / "envs" and first.name.startswith("env-")
    with tarfile.open(first) as archive:
        assert "bin/python" in archive.getnames()
    assert packed_cache.packed_environment(small_venv) == (first, 0.0)  # this process: no look at all
    monkeypatch.setattr(packed_cache, "_PACKED", {})
    again, _ = packed_cache.packed_environment(small_venv)  # a later sweep: found by its fingerprint
    assert again == first and first.stat().st_mtime_ns == again.stat().st_mtime_ns
    (site_packages(small_venv) / "numpyish" / "added.py").write_text("y = 2\n")
    try:
        changed, _ = packed_cache.packed_environment(small_venv)
    finally:
        (site_packages(small_venv) / "numpyish" / "added.py").unlink()
    assert changed != first and changed.is_file() and first_s > 0
    assert not list(first.parent.glob("*.partial*"))


def test_no_process_in_a_container_imports_what_an_automatic_pack_leaves_out_or_compiles_a_module(
    tmp_path: Path,
) -> None:
    """A fresh interpreter imports what a node's processes import and runs a fit on digits: no module it loaded is a
    package that packed_cache.AUTO_EXCLUDED leaves out (matplotlib, pygments, asyncssh, the test tools, ...), and
    every source module it loaded is one whose .pyc the archive carries."""
    code = "\n".join(
        [
            "import importlib, json, os, sys",
            "started = set(sys.modules)  # and what the venv's .pth files import (not packed: _distutils_hack)",
            f"for name in {CONTAINER_MODULES!r}: importlib.import_module(name)",
            "from sweeper.workload.data import Dataset, load",
            "from sweeper.workload.fit import run_fit",
            "from sweeper.config.grid import DEFAULT_ESTIMATOR",
            "from sweeper.workload.tasks import Recipe, make_batch",
            "data = load(Dataset('digits'))",
            "recipe = Recipe(0, False, 1, 2, (), 1, DEFAULT_ESTIMATOR)",
            "tasks = make_batch(recipe, 'replicas', {'hidden_layer_sizes': (8,)}, 2, 0, 1, labels=data.y_train)",
            "assert run_fit(tasks[0], data).accuracy > 0",
            "print(json.dumps(sorted({name.split('.')[0] for name in set(sys.modules) - started})))",
            "modules = [sys.modules[name] for name in set(sys.modules) - started]",
            "sources = {os.path.realpath(m.__file__) for m in modules if getattr(m, '__cached__', None)}",
            "print(json.dumps(sorted(sources)))",
        ]
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    imported, sources = map(json.loads, done.stdout.splitlines()[-2:])
    assert {"sweeper", "sklearn", "pyspark", "distributed"} <= set(imported)
    patterns = packed_cache.AUTO_EXCLUDED
    assert not [name for name in imported if any(fnmatch.fnmatch(name, pattern) for pattern in patterns)]
    compiled = compiled_imports(Path(sys.executable), REPO / "sweeper", tmp_path)
    assert len(sources) > 1000 and not sorted(set(sources) - set(compiled))


def test_spark_jars_stay_for_ssh_hosts_when_asked(small_venv: Path, tmp_path: Path) -> None:
    site = site_packages(small_venv).relative_to(small_venv).as_posix()
    with tarfile.open(pack(tmp_path / "ssh.tar", prefix=small_venv, spark_jars=True).path) as archive:
        assert f"{site}/pyspark/jars/spark-core.jar" in archive.getnames()
    with tarfile.open(pack(tmp_path / "yarn.tar", prefix=small_venv).path) as archive:
        assert not [name for name in archive.getnames() if "pyspark/jars" in name]
