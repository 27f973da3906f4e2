"""The layer contract holds (setup.cfg [importlinter], run by ``make lint``), breaks on an import against it,
no module of ``sweeper`` imports itself back through others (lazy imports included), and no function is long."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import grimp

from tests.conftest import REPO

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
MAX_FUNCTION_LINES = 60


def lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` on the ``sweeper`` package of ``tree`` against ``tree``'s setup.cfg."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", "setup.cfg", "--no-cache"],
        cwd=tree, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_the_layer_contract_holds() -> None:
    done = lint_imports(REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 kept, 0 broken" in done.stdout


def test_an_import_against_the_layers_breaks_the_contract(tmp_path: Path) -> None:
    shutil.copytree(REPO / "sweeper", tmp_path / "sweeper", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "setup.cfg", tmp_path)
    grid = tmp_path / "sweeper" / "config" / "grid.py"
    reach_up = "\n\ndef _reach_up() -> None:\n    from sweeper.run import runner  # noqa: F401\n"
    grid.write_text(grid.read_text() + reach_up)
    done = lint_imports(tmp_path)
    assert done.returncode != 0, done.stdout
    assert "sweeper.config is not allowed to import sweeper.run" in done.stdout
    assert "sweeper.config.grid -> sweeper.run.runner" in done.stdout


def test_no_module_imports_itself_back() -> None:
    graph = grimp.build_graph("sweeper", cache_dir=None)
    modules = sorted(graph.modules)
    cycles = []
    for module in modules:
        for imported in graph.find_modules_directly_imported_by(module):
            chain = graph.find_shortest_chain(importer=imported, imported=module)
            if chain is not None and imported != module:
                cycles.append(" -> ".join((module, *chain)))
    assert not cycles, "\n".join(cycles)


def test_no_function_in_the_package_is_over_60_lines() -> None:
    """#22: a function that grows past a screen does several jobs; split it along them."""
    longest = MAX_FUNCTION_LINES
    found = []
    for path in sorted((REPO / "sweeper").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > longest:
                    found.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name}: {lines} lines")
    assert not found, found
