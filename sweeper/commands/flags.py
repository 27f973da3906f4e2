"""Command-line flags that stand for schema keys: type, choices and default come from the key's field."""

from __future__ import annotations

import argparse
from typing import Any

from sweeper.config.schema import Choice, Integer, Kind, Number, Section
from sweeper.config.sections import flag_name


def add_key_flag(
    parser: argparse.ArgumentParser, section: Section, name: str, help: str = "", default: Any = None
) -> None:
    """``--NAME`` for key ``name`` of ``section``: ``help`` or the key's doc, the key's default unless ``default``
    gives the command's own (see :func:`add_kind_flag`)."""
    field = section.field(name)
    add_kind_flag(parser, flag_name(name), field.kind, field.default if default is None else default, help or field.doc)


def add_kind_flag(parser: argparse.ArgumentParser, flag: str, kind: Kind, default: Any, help: str) -> None:
    """``flag`` parsed as ``kind`` takes it (a number's type, a choice's words), its range and default in the help;
    the value is checked by the kind where it is used, so that all bad values are named at once."""
    options: dict[str, Any] = {}
    allowed = ""
    if isinstance(kind, Choice):
        options["choices"] = kind.values
    elif isinstance(kind, (Integer, Number)):
        options["type"] = int if isinstance(kind, Integer) else float
        allowed = f"{kind.describe()}, "
    if default is None:  # an optional flag: its range alone
        help += f", in {allowed.removesuffix(', ')}" if allowed else ""
    else:
        help += f" ({allowed}default {default})"
    parser.add_argument(flag, default=default, help=help, **options)
