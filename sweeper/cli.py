"""The ``sweeper`` command line: the parser of :mod:`sweeper.commands`, and the one place errors become exit codes.

User errors (:class:`~sweeper.errors.UserError`) are caught here and only here: they print
a clear message and exit with code 2, without a traceback; Ctrl-C and SIGTERM exit 130 and 143.

The consoles read no markup and no emoji codes, and user text goes through
:func:`~sweeper.text.plain`: paths, names and messages show as written (``[bold]``, ``[/]``,
``:smile:`` and terminal escape sequences included); styles come only from :class:`rich.text.Text`.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from rich.console import Console

from sweeper import __version__
from sweeper.commands import COMMANDS
from sweeper.errors import USER_ERROR_EXIT, UserError
from sweeper.run.signals import exit_status
from sweeper.text import OUTPUT_COLUMNS, plain, wrapped


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sweeper",
        description="Size executors, launch matched Spark and Dask clusters, and time scikit-learn training.",
    )
    parser.add_argument("--version", action="version", version=f"sweeper {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``sweeper`` console script."""
    args = build_parser().parse_args(argv)
    console = _plain_console(width=_output_width(sys.stdout))
    errors = _plain_console(stderr=True, width=_output_width(sys.stderr))
    try:
        code: int = args.func(args, console)
    except KeyboardInterrupt as stop:
        errors.print(plain("interrupted", "red"))
        return exit_status(stop)
    except UserError as error:
        for problem in error.problems:
            for line in (plain("error:", "red") + plain(f" {problem}")).split("\n"):
                errors.print(wrapped(line, min(errors.width, OUTPUT_COLUMNS), together=2), soft_wrap=True)
        return USER_ERROR_EXIT
    return code


def _output_width(stream: TextIO) -> int | None:
    """A terminal's own width (None: rich reads it, or COLUMNS where set); a pipe's or file's OUTPUT_COLUMNS."""
    return None if stream.isatty() or "COLUMNS" in os.environ else OUTPUT_COLUMNS


def _plain_console(**options: Any) -> Console:
    """A console that prints strings as written: no markup, emoji codes or highlighting."""
    return Console(markup=False, emoji=False, highlight=False, **options)


if __name__ == "__main__":
    sys.exit(main())
