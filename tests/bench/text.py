"""How the bench writes numbers, sizes and its progress lines."""

from __future__ import annotations

import sys
import time
from typing import Any

MIB = 1024 * 1024


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return str(value)


def _size(nbytes: float | None) -> str:
    if nbytes is None:
        return "-"
    return f"{nbytes / MIB:,.1f} MiB" if nbytes >= MIB else f"{nbytes / 1024:,.1f} KiB"


def log(message: str) -> None:
    """Progress on stderr."""
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)
