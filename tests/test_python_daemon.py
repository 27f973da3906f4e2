"""Spark's Python daemon of the sweeper drops pyspark's zips of sources only where the same version is installed."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

from sweeper.launch.spark.python_daemon import without_shadowing_zips


def zipped(path: Path, package: str, version: str) -> str:
    """A zip like Spark's: ``package/__init__.py`` and ``package/version.py`` saying ``version``."""
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{package}/__init__.py", "")
        archive.writestr(f"{package}/version.py", f'__version__ = "{version}"\n')
    return str(path)


def installed(site: Path, package: str, version: str) -> None:
    (site / package).mkdir(parents=True)
    (site / package / "__init__.py").write_text("")
    (site / package / "version.py").write_text(f'__version__ = "{version}"\n')


def test_a_zip_of_the_installed_version_goes_another_version_stays(tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    installed(site, "pyspark", "4.3.0")
    installed(site, "py4j", "0.10.9.9")
    same = zipped(tmp_path / "pyspark.zip", "pyspark", "4.3.0")
    other = zipped(tmp_path / "py4j-0.10.9.8-src.zip", "py4j", "0.10.9.8")
    jar = zipped(tmp_path / "spark-core.jar", "org", "1")  # no package of ours in it
    path = [same, other, jar, str(tmp_path / "missing.zip"), str(site)]
    assert without_shadowing_zips(path) == [other, jar, str(tmp_path / "missing.zip"), str(site)]


def test_zips_stay_where_the_environment_has_no_pyspark(tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    site.mkdir()
    path = [zipped(tmp_path / "pyspark.zip", "pyspark", "4.3.0"), str(site)]
    assert without_shadowing_zips(path) == path


def test_this_venvs_pyspark_takes_the_place_of_its_own_zip() -> None:
    import pyspark

    lib = Path(pyspark.__file__).parent / "python" / "lib"
    zips = [str(z) for z in sorted(lib.glob("*.zip"))]
    assert zips, lib
    assert without_shadowing_zips([*zips, *sys.path]) == sys.path
