"""``sweeper pack-env`` on a small real venv: what goes in, what stays out, and bad input."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import venv
from pathlib import Path

import pytest

from sweeper.errors import UserError
from sweeper.launch.hosts.pack_env import pack, site_packages
from tests.conftest import run_cli


@pytest.fixture(scope="module")
def small_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv of this interpreter with a few fake packages: a test suite, a stub, caches, jars, an editable hook."""
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
        "mypy/__init__.py": "",
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
    with tarfile.open(packed.path) as archive:
        names = set(archive.getnames())
        assert archive.getmember("bin/python").issym()  # the venv's link to its base interpreter
    assert {"pyvenv.cfg", f"{site}/numpyish/__init__.py", f"{site}/pyspark/__init__.py"} <= names
    assert {f"{site}/sweeper/__init__.py", f"{site}/sweeper/workload/fit.py", f"{site}/sweeper/launch/base.py"} <= names
    left_out = ("numpyish/core.pyi", "numpyish/tests", "__pycache__", "pyspark/jars", "mypy", "__editable__")
    assert not [name for name in names for part in left_out if f"{site}/{part}" in name or part in name.split("/")]
    assert packed.files == len(names)
    assert not list(tmp_path.glob("*.partial"))


def test_the_packed_environment_runs_sweeper_without_this_source_tree(small_venv: Path, tmp_path: Path) -> None:
    packed = pack(tmp_path / "env.tar", prefix=small_venv)
    unpacked = tmp_path / "node" / "environment"
    unpacked.mkdir(parents=True)
    with tarfile.open(packed.path) as archive:
        archive.extractall(unpacked, filter="fully_trusted")  # the archive's bin/python links out of it
    found = subprocess.run(
        [str(unpacked / "bin" / "python"), "-c", "import sweeper; print(sweeper.__file__)"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert found.returncode == 0, found.stderr
    assert Path(found.stdout.strip()).is_relative_to(unpacked), found.stdout


def test_bad_input_is_a_clear_error_and_writes_nothing(small_venv: Path, tmp_path: Path) -> None:
    with pytest.raises(UserError, match=r"env\.zip: the archive must end with one of \.tar\.gz, \.tgz, \.tar"):
        pack(tmp_path / "env.zip", prefix=small_venv)
    with pytest.raises(UserError, match="not a virtualenv"):
        pack(tmp_path / "env.tar", prefix=tmp_path)
    result = run_cli("pack-env", str(tmp_path / "env.zip"))
    assert result.returncode == 2 and "must end with one of" in result.stderr and "Traceback" not in result.stderr
    assert not list(tmp_path.iterdir())


def test_an_editable_install_other_than_sweeper_is_refused(tmp_path: Path) -> None:
    prefix = tmp_path / "env"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(prefix)
    (site_packages(prefix) / "__editable__.other-1.0.pth").write_text("/src/other\n")
    with pytest.raises(UserError, match=r"editable installs cannot be shipped to nodes: __editable__\.other-1\.0\.pth"):
        pack(tmp_path / "env.tar", prefix=prefix)
    assert sys.prefix != str(prefix)
