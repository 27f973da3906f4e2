"""Values as the report's table cells and sentences write them: seconds, p-values, ratios, a statistics row's time."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from sweeper.config.work import ACCURACY, EPOCHS


def seconds_text(value: Any) -> str:
    """Seconds for a table: three significant figures or so, a dash for missing.

    >>> seconds_text(7), seconds_text(12), seconds_text(1234.5), seconds_text(float("nan"))
    ('7.00', '12.0', '1,234', '–')
    """
    if value is None or pd.isna(value):
        return "–"
    x = float(value)
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.1f}" if abs(x) >= 10 else f"{x:.2f}"


def p_text(value: Any) -> str:
    """A p-value for a table.

    >>> p_text(0.0079365), p_text(0.00001), p_text(float("nan"))
    ('0.008', '<0.001', '–')
    """
    if value is None or pd.isna(value):
        return "–"
    return "<0.001" if float(value) < 0.001 else f"{float(value):.3f}"


def ratio_text(ratio: Any, low: Any, high: Any) -> str:
    """A ratio with its interval.

    >>> ratio_text(12 / 7, 1.25, 2.4)
    '1.71 [1.25, 2.40]'
    """
    if pd.isna(ratio):
        return "–"
    return f"{float(ratio):.2f} [{float(low):.2f}, {float(high):.2f}]"


def number_text(value: Any, digits: int = 4) -> str:
    """A number with ``digits`` decimals, a dash for missing.

    >>> number_text(0.91234), number_text(2.5, 2), number_text(None)
    ('0.9123', '2.50', '–')
    """
    return "–" if value is None or pd.isna(value) else f"{float(value):.{digits}f}"


def value_text(value: Any) -> str:
    """A store value as written, a question mark for missing.

    >>> value_text(1347), value_text(None)
    ('1347', '?')
    """
    return "?" if value is None or pd.isna(value) else str(value)


def time_cell(row: Mapping[str, Any] | pd.Series, prefix: str = "") -> str:
    """Median time, IQR, trials and failures of a ``statistics`` row; ``prefix`` picks an engine's columns."""
    median, iqr = row[f"{prefix}median_s"], row[f"{prefix}iqr_s"]
    n, failed = int(row[f"{prefix}n"]), int(row[f"{prefix}failed"])
    text = f"{seconds_text(median)} (IQR {seconds_text(iqr)}, n={n})" if n else "no ok trial"
    return f"{text}, {failed} failed" if failed else text


def accuracy_cell(row: Mapping[str, Any] | pd.Series) -> str:
    """Accuracy and its IQR of a ``statistics`` row."""
    return f"{number_text(row['accuracy'])} (IQR {number_text(row['accuracy_iqr'])})"


def distinct(df: pd.DataFrame, column: str) -> list[str]:
    """The distinct values of a column as text, sorted (missing ones left out)."""
    return sorted(str(value) for value in df[column].dropna().unique())


def score_header(score: str) -> str:
    """The score's column header: ``Accuracy`` (a classifier's default scorer), else ``Score (r2)``.

    >>> score_header("accuracy"), score_header("r2")
    ('Accuracy', 'Score (r2)')
    """
    return "Accuracy" if score == ACCURACY else f"Score ({score})"


ACCURACY_HEADER = score_header(ACCURACY)  # a classifier's score, as headers and figures name it


def axis_header(name: str) -> str:
    """The work axis's column header: ``# Epochs`` (an MLP's), else the name of the parameter it set.

    >>> axis_header("epochs"), axis_header("n_estimators")
    ('# Epochs', 'n_estimators')
    """
    return "# Epochs" if name == EPOCHS else name
