"""The README's table of grid keys, generated from the schema: ``make docs`` rewrites it.

``python -m sweeper.config.docs README.md`` replaces what lies between BEGIN and END in that file.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

from sweeper.config.schema import Section
from sweeper.config.sections import TOP
from sweeper.text import between_markers

BEGIN = "<!-- grid keys: begin (generated from sweeper/config/sections.py by `make docs`) -->"
END = "<!-- grid keys: end -->"


def _key_rows(section: Section) -> Iterator[str]:
    """One table row per documented key of ``section``, in declared order; a key without a row has its
    section's rows instead."""
    for field in section.fields:
        if field.doc:
            yield f"| `{field.path(section.key)}` | {field.default_text()} | {field.meaning()} |"
        elif field.section is not None:
            yield from _key_rows(field.section)


def key_table() -> str:
    """The Markdown table of every grid key: its default and meaning."""
    return "\n".join(["| key | default | meaning |", "| --- | --- | --- |", *_key_rows(TOP)]) + "\n"


def with_key_table(text: str) -> str:
    """``text`` (a README) with the generated table between its BEGIN and END lines."""
    return between_markers(text, BEGIN, END, key_table())


def main(argv: list[str]) -> int:
    """Rewrite the key table of the README given as the only argument."""
    if len(argv) != 1:
        print("usage: python -m sweeper.config.docs README.md", file=sys.stderr)
        return 2
    readme = Path(argv[0])
    readme.write_text(with_key_table(readme.read_text()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
