"""The install: every requirement is used, every upper bound names and tests its breakage, nothing else is installed."""

from __future__ import annotations

import ast
import importlib.metadata as metadata
import re
import site
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.support.oldest_constraints import install_requires, oldest_pins

ROOT = Path(__file__).resolve().parent.parent
SETUP_CFG = ROOT / "setup.cfg"

# Requirements the sweeper uses through another package's import, and the module that relies on each.
USED_THROUGH = {
    "asyncssh": ("sweeper/launch/dask/ssh.py", "distributed.deploy.ssh connects to the hosts with it"),
    "cryptography": ("sweeper/launch/dask/ssh.py", "distributed's Security.temporary makes the TLS keys"),
}
# Installed by pip itself or by the venv, not by a requirement.
TOOLING = {"pip", "setuptools", "wheel"}
# An engine installed as an extra (pip install 'sweeper[ray]'; make setup installs it): its modules import it
ENGINE_EXTRAS = Requirement("sweeper[ray]")


def requirements() -> list[Requirement]:
    return [Requirement(line) for line in install_requires(SETUP_CFG)]


def sweeper_imports() -> set[str]:
    """Top-level module names the installed package imports anywhere (also inside functions)."""
    names: set[str] = set()
    for path in (ROOT / "sweeper").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module.split(".")[0])
    return names


def imported_distributions() -> set[str]:
    providers = metadata.packages_distributions()
    return {canonicalize_name(dist) for name in sweeper_imports() for dist in providers.get(name, [])}


def test_every_requirement_is_imported_by_sweeper() -> None:
    imported = imported_distributions()
    unused = []
    for requirement in requirements():
        names = {canonicalize_name(requirement.name)} | {canonicalize_name(extra) for extra in requirement.extras}
        for name in names:
            if name in imported:
                continue
            if name in USED_THROUGH:
                module, _why = USED_THROUGH[name]
                assert name in (ROOT / module).read_text(encoding="utf-8"), f"{module} no longer uses {name}"
                continue
            unused.append(name)
    assert not unused, f"setup.cfg requires packages sweeper/ never imports: {unused}"


def test_every_upper_bound_names_its_breakage_and_test() -> None:
    """A ``<`` bound stands under a comment that says what breaks and which test shows it."""
    lines = SETUP_CFG.read_text(encoding="utf-8").splitlines()
    block = lines[lines.index("install_requires =") + 1 :]
    comment: list[str] = []
    bounded = []
    for line in block:
        text = line.strip()
        if not line.startswith("    "):
            break
        if text.startswith("#"):
            comment.append(text)
            continue
        if "<" in text:
            bounded.append(text)
            why = " ".join(comment)
            assert "tests/test_dependencies.py" in why, f"{text}: its comment names no test: {why!r}"
        comment = []
    assert bounded == ["pandas>=2.2,<3", "joblibspark>=0.6,<0.7"], "an upper bound was added: test its breakage here"


def test_installed_versions_satisfy_every_requirement() -> None:
    result = subprocess.run([sys.executable, "-m", "pip", "check"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    for requirement in requirements():
        installed = metadata.version(requirement.name)
        assert requirement.specifier.contains(installed, prereleases=True), f"{requirement}: {installed} installed"


def required_closure(roots: list[Requirement]) -> set[str]:
    """Every distribution the roots pull in, following installed metadata and markers."""
    seen: set[str] = set()
    pending: list[tuple[Requirement, frozenset[str]]] = [(root, frozenset(root.extras)) for root in roots]
    while pending:
        requirement, extras = pending.pop()
        name = canonicalize_name(requirement.name)
        if name in seen and not extras:
            continue
        seen.add(name)
        try:
            dist = metadata.distribution(requirement.name)
        except metadata.PackageNotFoundError:
            continue
        for line in dist.requires or []:
            child = Requirement(line)
            active = child.marker is None or any(child.marker.evaluate({"extra": extra}) for extra in (extras or {""}))
            if active:
                pending.append((child, frozenset(child.extras)))
    return seen


def installed_distributions() -> Iterator[str]:
    """What pip installed in this environment: the distributions of its site-packages, not whatever is on sys.path
    (ray puts ray/thirdparty_files, colorama and psutil, there when imported: another test's ``import ray`` would
    make them look installed)."""
    for dist in metadata.distributions(path=site.getsitepackages()):
        yield canonicalize_name(dist.metadata["Name"])


def test_nothing_is_installed_that_neither_sweeper_nor_its_tests_need() -> None:
    """dask-ml, for one, is gone: nothing in sweeper/ imports it, and it held Dask at 2025.2."""
    wanted = required_closure([Requirement("sweeper[test]"), ENGINE_EXTRAS]) | TOOLING
    extra = sorted(set(installed_distributions()) - wanted)
    assert not extra, f"installed but required by nothing: {extra} (make setup recreates .venv)"
    assert "dask-ml" not in wanted


def test_pyspark_pandas_api_imports_with_the_installed_pandas() -> None:
    """Why ``pandas<3``: pyspark 4.3's ``pyspark/pandas/frame.py`` imports ``DateOffset`` from
    ``pandas.tseries.frequencies``, which pandas 3 removed (ImportError), so installing the sweeper
    with pandas 3 would break the pandas API of the user's own Spark."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pyspark.pandas warns about PYARROW_IGNORE_TIMEZONE on import
        import pyspark.pandas  # noqa: F401


def test_joblibspark_still_has_the_internals_the_sweeper_overrides() -> None:
    """Why ``joblibspark<0.7``: the exception-keeping backend wraps 0.6's own ``apply_async`` (joblib's
    ``retrieve_result`` unwraps it; the engine contract test shows a raising fit's exception kept on Spark), and
    replaces 0.6's ``get_spark_session`` while 0.6's ``__init__`` runs (the contract test: no SQL session made)."""
    from joblibspark.backend import SparkDistributedBackend

    from sweeper.launch.spark.joblib_backend import ExceptionKeepingSparkBackend

    assert "apply_async" in vars(SparkDistributedBackend), "joblibspark no longer defines apply_async"
    # the backend is given the launch's context through this module global while it starts
    assert "get_spark_session" in SparkDistributedBackend.__init__.__code__.co_names
    assert callable(getattr(SparkDistributedBackend, "retrieve_result", None))
    for method in ("apply_async", "retrieve_result", "submit"):
        assert method in vars(ExceptionKeepingSparkBackend)


def test_oldest_constraints_pin_every_lower_bound() -> None:
    pins = oldest_pins(install_requires(SETUP_CFG))
    assert len(pins) == len(requirements())
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+==[0-9][A-Za-z0-9.]*", pin) for pin in pins), pins


def test_rows_record_the_dask_that_runs() -> None:
    import dask
    import distributed

    from sweeper.run.versions import versions

    assert versions()["dask_version"] == dask.__version__ == distributed.__version__


def test_sweeper_imports_only_what_its_runtime_requirements_install() -> None:
    """A user's .venv (``make venv``: ``pip install -e .``, no test extra) runs every command: nothing in sweeper/
    imports a package only the ``test`` extra brings."""
    runtime = required_closure([*requirements(), ENGINE_EXTRAS]) | TOOLING
    test_only = required_closure([Requirement("sweeper[test]")]) - runtime - {"sweeper"}
    assert not sorted(imported_distributions() & test_only), "sweeper/ imports a test-only package"


MAKE_TARGET = re.compile(r"^([a-z-]+):([^#=]*)(?:##\s*(.*))?$")
SWEEPING_TARGETS = ("venv", "plan", "check", "sweep", "dry-run", "report", "docs")


def make_targets() -> dict[str, tuple[list[str], str]]:
    """The Makefile's named targets: their prerequisites and their ``##`` help."""
    found = {}
    for line in (ROOT / "Makefile").read_text(encoding="utf-8").splitlines():
        if matched := MAKE_TARGET.match(line):
            found[matched[1]] = (matched[2].split(), matched[3] or "")
    return found


def test_sweeping_needs_no_test_lab_and_every_target_says_whether_it_needs_root() -> None:
    targets = make_targets()
    for name in SWEEPING_TARGETS:
        prerequisites, help_text = targets[name]
        assert not {"setup", "test-packages", "$(TEST_TOOLS)"} & set(prerequisites), name
        assert "(no root" in help_text, (name, help_text)
    for name in ("test", "test-fast", "lint", "bench", "test-oldest", "test-yarn"):
        assert "setup" in targets[name][0] and "root or sudo" in targets[name][1], name
    for name, (_, help_text) in targets.items():
        assert not help_text or "root" in help_text, f"make {name}: its help does not say whether it needs root"
