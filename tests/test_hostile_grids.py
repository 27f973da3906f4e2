"""Property test: any mutation of a valid grid gets exit 0 or 2 from ``sweeper plan``, never a traceback.

Hypothesis starts from valid grids of every manager, replaces, deletes, wraps or nests values at
random key paths with hostile ones (wrong types, NaN, huge numbers, unicode, control characters,
shell metacharacters, deep nesting, shared objects that YAML writes as aliases, long lists of
repeated or distinct numbers, values listed twice) and also corrupts the YAML text itself. A refusal
(exit 2) is an ``error:`` line. ``plan`` never starts anything, so every example runs in-process.
No example is timed (a busy machine would make that flaky); the grid tests bound what planning costs.
"""

from __future__ import annotations

import contextlib
import copy
import io
import math
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sweeper.cli import main
from sweeper.errors import USER_ERROR_EXIT
from tests.conftest import minimal_grid

BASES: tuple[dict[str, Any], ...] = (
    minimal_grid(),
    minimal_grid(
        cluster={
            "manager": "ssh",
            "hosts": ["node1", "10.0.0.2"],
            "cores_per_node": 4,
            "memory_per_node": "16GiB",
            "python": "/opt/venv/bin/python",
            "remote_dir": "/tmp/sweeper",
            "ssh": {"user": "sweeper", "port": 22, "connect_timeout_s": 10, "strict_host_key_checking": True},
        },
        sizing={"rule": "spark-default", "cores_per_executor": [1, 2]},
        workload={
            "dataset": "digits",
            "epochs": [5, 10],
            "trials": 2,
            "fraction": [0.5, 1.0],
            "timeout_s": 60,
            "model": {"alpha": [0.0001, 0.001], "hidden_layer_sizes": [[64], [32, 16]]},
        },
        exclude=[{"engine": "spark", "epochs": 10}],
        spark_conf={"spark.executor.extraJavaOptions": "-Dx=1"},
        environment={"OMP_NUM_THREADS": 1},
    ),
    minimal_grid(
        cluster={"manager": "yarn", "nodes": 2, "cores_per_node": 8, "memory_per_node": "32GiB", "queue": "default"},
        engines=["spark", "dask", "spark-mllib"],
        workload={"epochs": [5], "trials": 1, "mode": ["replicas", "data-parallel"], "test_size": 0.2},
        only=[{"mode": "data-parallel"}],
    ),
    minimal_grid(
        workload={"epochs": [5], "trials": 1, "mode": "search", "folds": 2, "param_grid": {"alpha": [0.1, 1.0]}}
    ),
)

HOSTILE_STRINGS = (
    "",
    ".",
    "..",
    "../../etc",
    "-oProxyCommand=touch /tmp/pwned",
    "a'; touch X; echo '",
    "$(id)",
    "`id`",
    "a\nb",
    "nul\x00byte",
    "[bold]x[/]",
    "[/]",
    "9" * 400 + "GiB",
    "10000000000000000000000000000000TiB",
    "1e400",
    ".nan",
    "-.inf",
    "ünïcödé ✓ 🚀",
    "x" * 5000,
    "SPARK.MASTER",
    "spark.master ",
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=10**18, max_value=10**400),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from((math.nan, math.inf, -math.inf, 1e308, -0.0)),
    st.text(max_size=40),
    st.sampled_from(HOSTILE_STRINGS),
)
VALUES = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.one_of(st.text(max_size=12), st.integers()), children, max_size=4),
    ),
    max_leaves=12,
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path into a nested structure of dicts and lists, the root's children first."""
    found: list[tuple[Any, ...]] = []
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, child in items:
        found.append((*prefix, key))
        found.extend(_paths(child, (*prefix, key)))
    return found


OPERATIONS = ("replace", "delete", "wrap", "nest", "share", "new-key", "long-list", "repeat")
# the sweep axes of the bases (and lists that are not axes), where a long or repeating list matters most
AXIS_PATHS = (
    ("workload", "fraction"),
    ("workload", "epochs"),
    ("workload", "mode"),
    ("workload", "model", "alpha"),
    ("workload", "model", "hidden_layer_sizes"),
    ("workload", "param_grid", "alpha"),
    ("sizing", "cores_per_executor"),
    ("engines",),
    ("cluster", "hosts"),
    ("exclude",),
)


@st.composite
def long_lists(draw: st.DrawFn) -> list[Any]:
    """2,000 to 100,000 numbers, all the same or all different (past the axis limit, up to past the YAML node limit)."""
    length = draw(st.integers(2_000, 100_000))
    kind = draw(st.sampled_from(("repeated", "integers", "fractions")))
    if kind == "repeated":
        return [draw(st.one_of(st.integers(0, 10), st.floats(0.0, 1.0)))] * length
    return [index + 1 if kind == "integers" else (index + 1) / length for index in range(length)]


def _nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


@st.composite
def mutated_grids(draw: st.DrawFn) -> Any:
    """A valid grid with one to three hostile edits."""
    grid = copy.deepcopy(draw(st.sampled_from(BASES)))
    for _ in range(draw(st.integers(1, 3))):
        operation = draw(st.sampled_from(OPERATIONS))
        paths: list[tuple[Any, ...]] = _paths(grid)
        on_an_axis = operation in ("long-list", "repeat") and draw(st.booleans())
        known = set(paths) if on_an_axis else set()
        axes = [path for path in AXIS_PATHS if path in known]
        path = draw(st.sampled_from(axes or paths))
        parent: Any = grid
        for key in path[:-1]:
            parent = parent[key]
        key = path[-1]
        if operation == "replace":
            parent[key] = draw(VALUES)
        elif operation == "delete":
            del parent[key]
        elif operation == "wrap":
            parent[key] = [parent[key]]
        elif operation == "nest":
            parent[key] = _nested(draw(st.integers(10, 300)))
        elif operation == "share":  # the same object twice: YAML writes an anchor and an alias
            shared = draw(st.lists(VALUES, min_size=1, max_size=3))
            parent[key] = [shared, shared]
        elif operation == "long-list":
            parent[key] = draw(long_lists())
        elif operation == "repeat":  # a value listed twice (a copy: YAML writes it out again, not as an alias)
            listed = parent[key] if isinstance(parent[key], list) and parent[key] else [parent[key]]
            parent[key] = [*listed, copy.deepcopy(draw(st.sampled_from(listed)))]
        elif isinstance(parent, dict):
            parent[draw(st.sampled_from((*HOSTILE_STRINGS, "extra")))] = draw(VALUES)
    return grid


def _plan_exit_code(text: bytes) -> tuple[int, str]:
    """``sweeper plan`` on a grid file holding ``text``: its exit code and stderr; any exception escapes."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "grid.yaml"
        path.write_bytes(text)
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            code = main(["plan", str(path)])
        return code, err.getvalue()


def _assert_planned_or_refused(text: bytes) -> None:
    """Exit 0, or exit 2 with an ``error:`` line first (no traceback, no other output before it)."""
    code, err = _plan_exit_code(text)
    assert code in (0, USER_ERROR_EXIT), (code, err)
    if code == USER_ERROR_EXIT:
        assert err.startswith("error:"), err


PROPERTY = settings(
    max_examples=250,
    deadline=None,  # no timing: a busy machine would make it flaky
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
)


def test_the_bases_are_valid_grids() -> None:
    """The starting points plan cleanly, so a refusal below comes from the mutation."""
    for base in BASES:
        assert _plan_exit_code(yaml.safe_dump(base).encode()) == (0, "")


@pytest.mark.slow  # 250 grids, ~45 s
@PROPERTY
@given(mutated_grids())
def test_a_mutated_grid_is_planned_or_refused_without_a_traceback(grid: Any) -> None:
    try:
        text = yaml.safe_dump(grid, allow_unicode=True).encode()
    except (yaml.YAMLError, ValueError, RecursionError):
        return  # PyYAML itself cannot write this value (or this deep): nothing reaches the sweeper
    _assert_planned_or_refused(text)


@PROPERTY
@given(st.sampled_from(BASES), st.binary(min_size=1, max_size=8), st.integers(min_value=0))
def test_corrupted_yaml_text_is_planned_or_refused_without_a_traceback(
    base: dict[str, Any], garbage: bytes, position: int
) -> None:
    text = yaml.safe_dump(base).encode()
    at = position % (len(text) + 1)
    _assert_planned_or_refused(text[:at] + garbage + text[at:])
