"""The README's table of row columns is generated (``make docs``) and names every stored column once."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from sweeper.store import column_docs
from sweeper.store.parquet import COLUMNS
from sweeper.text import between_markers

README = Path(__file__).resolve().parents[1] / "README.md"


def test_every_stored_column_is_in_exactly_one_group() -> None:
    named = Counter(name for names, _ in column_docs.GROUPS for name in names)
    assert set(named) == set(COLUMNS), (set(COLUMNS) - set(named), set(named) - set(COLUMNS))
    assert [name for name, count in named.items() if count > 1] == []


def test_readme_column_table_is_generated() -> None:
    readme = README.read_text()
    assert between_markers(readme, column_docs.BEGIN, column_docs.END, column_docs.column_table()) == readme, (
        "README.md's column table is out of date: run make docs"
    )
