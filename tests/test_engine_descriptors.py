"""#37: one descriptor per engine (sweeper/engines.py) and per cluster manager (sweeper/config/managers.py), and no
engine or manager name spelled as a string literal in the analysis, report, predict and plan-view layers outside them.

``local`` names both the baseline's engine and a manager: the manager scan takes it only where it stands for a
manager (compared with, passed as or keyed by something called ``manager``); ``yarn``, ``ssh`` and ``standalone``
name nothing else and are taken wherever they stand."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import get_args

import pytest

from sweeper import engines, names
from sweeper.config import managers
from sweeper.config.sections import CLUSTER
from tests.conftest import REPO

ENGINE_LITERALS = frozenset({"spark", "dask", "ray", "spark-mllib"})
MANAGER_LITERALS = frozenset(names.MANAGERS) - {names.BASELINE_ENGINE}  # names that mean a manager alone
PLANNING = REPO / "sweeper" / "planning"
SCANNED = (*sorted((REPO / "sweeper" / "results").rglob("*.py")), PLANNING / "view.py", PLANNING / "hand_commands.py")


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


def _parents(tree: ast.AST) -> dict[int, ast.AST]:
    return {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _about_a_manager(node: ast.Constant, parent: ast.AST | None) -> bool:
    """Whether a constant stands for a manager: compared with, passed as or keyed by something called manager."""
    if isinstance(parent, ast.Compare):
        return any("manager" in ast.unparse(other) for other in (parent.left, *parent.comparators) if other is not node)
    if isinstance(parent, ast.keyword):
        return parent.arg == "manager"
    if isinstance(parent, ast.Dict) and node in parent.values:
        key = parent.keys[parent.values.index(node)]
        return isinstance(key, ast.Constant) and key.value == "manager"
    return False


def manager_literals(path: Path, root: Path = REPO) -> list[str]:
    """Where ``path`` spells a manager's name as a string literal (docstrings and comments aside); ``local`` only
    where it stands for the manager (elsewhere it is the baseline's engine: names.BASELINE_ENGINE)."""
    tree = ast.parse(path.read_text(), str(path))
    docstrings, parents = _docstrings(tree), _parents(tree)
    return [
        f"{path.relative_to(root)}:{node.lineno} {node.value!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and id(node) not in docstrings
        and (
            node.value in MANAGER_LITERALS
            or (node.value == names.BASELINE_ENGINE and _about_a_manager(node, parents.get(id(node))))
        )
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


def test_every_manager_has_one_descriptor_whose_pieces_resolve() -> None:
    from sweeper.launch.options import ManagerOptions

    assert tuple(manager.name for manager in managers.DESCRIPTORS) == names.MANAGERS
    assert CLUSTER.keys[4:] == tuple(field.name for field in managers.MANAGER_FIELDS)
    owned = {key for manager in managers.DESCRIPTORS for key in manager.keys}
    assert owned == {field.name for field in managers.MANAGER_FIELDS}, "a manager key no manager owns"
    for manager in managers.DESCRIPTORS:
        assert manager.options.startswith("sweeper.launch.options:")
        options = managers.resolve(manager.options)
        assert issubclass(options, get_args(ManagerOptions)) and callable(options.from_grid)
        assert callable(managers.resolve(manager.preflight)) and manager.preflight.startswith("sweeper.preflight.")
        assert callable(managers.resolve(manager.hand_command))
        assert manager.hand_command.startswith("sweeper.planning.")
    assert [m.name for m in managers.DESCRIPTORS if m.on_this_machine] == [names.BASELINE_ENGINE]


def test_no_manager_name_is_spelled_in_the_analysis_report_and_predict() -> None:
    found = [hit for path in SCANNED for hit in manager_literals(path)]
    assert not found, "look the manager up in sweeper/config/managers.py instead:\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("line", "found"),
    [
        pytest.param('launch.manager == "local"', True, id="compared-with-a-manager"),
        pytest.param('"local" != grid.manager', True, id="compared-the-other-way"),
        pytest.param('Launch(manager="local")', True, id="passed-as-a-manager"),
        pytest.param('{"manager": "local"}', True, id="keyed-as-a-manager"),
        pytest.param('row["engine"] == "local"', False, id="the-baseline-engine"),
        pytest.param('X = "yarn"', True, id="yarn-anywhere"),
        pytest.param('f(where="ssh")', True, id="ssh-anywhere"),
    ],
)
def test_the_manager_scan_tells_the_manager_local_from_the_baseline_engine(
    tmp_path: Path, line: str, found: bool
) -> None:
    module = tmp_path / "probe.py"
    module.write_text(f'"""A "yarn" docstring."""\n# "ssh" in a comment\n{line}\n')
    assert bool(manager_literals(module, tmp_path)) is found
