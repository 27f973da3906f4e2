"""One module per command: ``add_parser(commands)`` registers its arguments, ``main(args, console)`` runs it.

Tests call ``main`` as a plain function; :mod:`sweeper.cli` only builds the parser from :data:`COMMANDS`
and turns a :class:`~sweeper.errors.UserError` into exit code 2. A module imports what its command
needs inside ``main``, so building the parser imports no analysis (pandas, scipy) and no engine.
"""

from __future__ import annotations

from sweeper.commands import check, compare, pack_env, plan, predict, recommend, replay, report, run

COMMANDS = (plan, run, check, report, compare, recommend, replay, predict, pack_env)  # in the order --help lists them
