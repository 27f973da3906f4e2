"""Pin every requirement of setup.cfg to its lower bound: ``make test-oldest``'s constraints.

Run with any Python 3.11+ (standard library only), before the project's virtualenv exists::

    python3 tests/support/oldest_constraints.py setup.cfg > constraints.txt

Each ``name>=X`` in ``install_requires`` becomes ``name==X``; a requirement without a lower bound is
an error, since the oldest supported version must be one that is tested.
"""

from __future__ import annotations

import configparser
import re
import sys
from pathlib import Path

REQUIREMENT = re.compile(r"^(?P<name>[A-Za-z0-9._-]+)(?:\[[^\]]*\])?\s*(?P<spec>.*)$")
LOWER_BOUND = re.compile(r">=\s*(?P<version>[0-9][A-Za-z0-9.]*)")


def install_requires(setup_cfg: Path) -> list[str]:
    """The requirement lines of ``[options] install_requires``, comments dropped."""
    parser = configparser.ConfigParser(comment_prefixes=("#",), inline_comment_prefixes=None)
    parser.read(setup_cfg, encoding="utf-8")
    lines = parser.get("options", "install_requires").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.strip().startswith("#")]


def oldest_pins(requirements: list[str]) -> list[str]:
    """``name==lower`` for every requirement.

    >>> oldest_pins(["dask[distributed]>=2025.1", "pandas>=2.2,<3"])
    ['dask==2025.1', 'pandas==2.2']
    """
    pins = []
    for requirement in requirements:
        match = REQUIREMENT.match(requirement)
        bound = LOWER_BOUND.search(match.group("spec")) if match else None
        if match is None or bound is None:
            raise ValueError(f"setup.cfg: requirement {requirement!r} has no lower bound (name>=VERSION)")
        pins.append(f"{match.group('name')}=={bound.group('version')}")
    return pins


def main(argv: list[str]) -> int:
    setup_cfg = Path(argv[1] if len(argv) > 1 else "setup.cfg")
    try:
        print("\n".join(oldest_pins(install_requires(setup_cfg))))
    except (ValueError, configparser.Error) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
