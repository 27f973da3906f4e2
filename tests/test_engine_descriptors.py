"""#37: one descriptor per engine (sweeper/engines.py), and no engine name spelled as a string literal in the
analysis, report, predict and plan-view layers outside it."""

from __future__ import annotations

import ast
from pathlib import Path

from sweeper import engines, names
from tests.conftest import REPO

ENGINE_LITERALS = frozenset({"spark", "dask", "ray", "spark-mllib"})
SCANNED = (*sorted((REPO / "sweeper" / "results").rglob("*.py")), REPO / "sweeper" / "planning" / "view.py")


def _docstrings(tree: ast.AST) -> set[int]:
    """The ids of the string constants that are docstrings (a module's, a class's, a function's)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def engine_literals(path: Path, root: Path = REPO) -> list[str]:
    """Where ``path`` spells an engine's name as a string literal (docstrings and comments aside)."""
    tree = ast.parse(path.read_text(), str(path))
    docstrings = _docstrings(tree)
    return [
        f"{path.relative_to(root)}:{node.lineno} {node.value!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value in ENGINE_LITERALS and id(node) not in docstrings
    ]


def test_every_engine_a_grid_lists_has_one_descriptor() -> None:
    assert sorted(engines.BY_NAME) == sorted(names.ENGINES)
    assert len(engines.DESCRIPTORS) == len(engines.BY_NAME)
    assert {e.name for e in engines.DESCRIPTORS if e.one_model} == set(names.ONE_MODEL_ENGINES)
    assert len({e.colour for e in engines.DESCRIPTORS}) == len(engines.DESCRIPTORS)
    assert [engines.display_name(name) for name in engines.figure_order(names.ENGINES)] == [
        "Spark",
        "Dask",
        "Ray",
        "Spark ML",
    ]


def test_no_engine_name_is_spelled_in_the_analysis_report_and_predict() -> None:
    found = [hit for path in SCANNED for hit in engine_literals(path)]
    assert not found, "look the engine up in sweeper/engines.py instead:\n" + "\n".join(found)


def test_the_scan_finds_a_literal_and_skips_docstrings_and_comments(tmp_path: Path) -> None:
    module = tmp_path / "probe.py"
    probe = '"""A "spark" docstring."""\n# "dask" in a comment\nX = "ray"\n\n\ndef f():\n    """dask"""\n'
    module.write_text(probe + '    return "dask"\n')
    assert engine_literals(module, tmp_path) == ["probe.py:3 'ray'", "probe.py:8 'dask'"]
