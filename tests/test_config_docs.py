"""The README's table of grid keys is generated from the schema (``make docs``) and covers every key."""

from __future__ import annotations

import difflib
from pathlib import Path

from sweeper.config import docs
from sweeper.config.schema import Section
from sweeper.config.sections import TOP

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_key_table_is_generated() -> None:
    readme = README.read_text()
    generated = docs.with_key_table(readme)
    diff = "\n".join(
        difflib.unified_diff(readme.splitlines(), generated.splitlines(), "README.md", "generated", lineterm="")
    )
    assert readme == generated, f"README.md's key table is out of date: run make docs\n{diff}"


def _undocumented(section: Section) -> list[str]:
    """The keys of ``section`` with neither a row nor rows of their own section's keys."""
    missing = []
    for field in section.fields:
        if field.section is not None and not field.doc:
            missing += _undocumented(field.section)
        elif not field.doc:
            missing.append(field.path(section.key))
    return missing


def test_every_key_of_a_grid_has_a_row() -> None:
    assert _undocumented(TOP) == []


def test_a_bound_in_the_table_comes_from_the_schema() -> None:
    rows = docs.key_table().splitlines()
    assert "| `cluster.nodes` | number of `hosts` | worker nodes, 1 to 10000 |" in rows
    assert any(
        row.startswith("| `workload.timeout_s` | `3600` | per-measurement time limit, in (0, 604800]") for row in rows
    )
