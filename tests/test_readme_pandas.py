"""The README's pandas example runs as written on a store of two sweeps and reads only the sweep it names."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.support.budget_stores import budget_rows, close_race, easy_winner, write_store


def pandas_example() -> str:
    """The ```python block of README.md's section "The store"."""
    section = REPO.joinpath("README.md").read_text(encoding="utf-8").split("\n## The store\n", 1)[1]
    found = re.search(r"```python\n(.*?)```", section.split("\n## ", 1)[0], re.DOTALL)
    assert found, "README's 'The store' has no python example"
    return found.group(1)


def test_the_pandas_example_reads_one_sweep(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_store(
        tmp_path / "results",
        budget_rows(easy_winner(), sweep="local", seed=1) + budget_rows(close_race(), sweep="other", seed=2),
    )
    monkeypatch.chdir(tmp_path)
    names: dict[str, Any] = {}
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(pandas_example(), names)  # the README's own code, as a user pastes it
    df, ok = names["df"], names["ok"]
    assert list(df.sweep.unique()) == ["local"]
    assert len(ok) == len(budget_rows(easy_winner()))
    assert "fit_wall_s" in printed.getvalue() and "dask" in printed.getvalue()
