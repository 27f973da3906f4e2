"""Text as messages and consoles show it: values quoted in bounded form, and what counts as a control character.

A leaf module (no project imports), so the grid, its reader, the units and the console views share
one definition of each; :func:`visible` is how every output a person reads shows text from a store or a
grid (:func:`plain` on a console, the report's Markdown and HTML, figure labels), and :func:`json_text`
is how every ``--json`` prints; :func:`wrapped` is how a console view breaks a long line.
"""

from __future__ import annotations

import json
import math
import numbers
import re
import reprlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rich.text import Text

if TYPE_CHECKING:
    from rich.console import Console

MAX_SHOWN_CHARS = 80  # a value quoted in a message
OUTPUT_COLUMNS = 100  # the widest line the command line prints to a pipe or file, and the widest it wraps text at

# Control characters (C0, DEL, C1, line/paragraph separators, invisible and bidirectional format
# characters, lone surrogates), as the body of a regular expression's character class.
CONTROL_CHARS = r"\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u2069\ufeff\ud800-\udfff"
CONTROL = re.compile(f"[{CONTROL_CHARS}]")
# What a console must not print as it is: every control character but tab and newline.
UNPRINTABLE = re.compile(f"(?![\t\n])[{CONTROL_CHARS}]")


def visible(text: str) -> str:
    r"""``text`` with every control character but tab and newline shown as ``\xNN`` (``\uNNNN`` above 0xff).

    What any output a person reads gets (the terminal, report.html, report.md): an escape sequence in a
    value from a store or a grid is shown, never acted on by the terminal that prints or ``cat``\ s it.

    >>> visible("a\x1b]0;x\x07\u202eb\tc")
    'a\\x1b]0;x\\x07\\u202eb\tc'
    """
    return UNPRINTABLE.sub(_escaped, text)


def _escaped(found: re.Match[str]) -> str:
    code = ord(found.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


class _Shown(reprlib.Repr):
    """``repr`` cut short: bounded whatever the size, depth or sharing of the value."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel = 3
        self.maxstring = self.maxother = self.maxlong = MAX_SHOWN_CHARS
        self.maxlist = self.maxtuple = self.maxdict = self.maxset = self.maxfrozenset = 6

    def repr_bytes(self, value: bytes, level: int) -> str:
        return repr(value[: self.maxstring]) + ("..." if len(value) > self.maxstring else "")

    def repr_int(self, value: int, level: int) -> str:
        if value.bit_length() > 256:  # repr of a huge int is slow, and refused past 4300 digits
            return f"<an integer of {value.bit_length()} bits>"
        return super().repr_int(value, level)


_SHOWN = _Shown()


def shown(value: Any) -> str:
    r"""A value as messages show it: its ``repr``, cut short when long, deep or self-referencing.

    At most MAX_SHOWN_CHARS characters, and control characters appear escaped, as ``repr`` writes them.

    >>> shown("x" * 1000)[:12], len(shown("x" * 1000)) <= MAX_SHOWN_CHARS, shown([[[[[1]]]]])
    ("'xxxxxxxxxxx", True, '[[[[...]]]]')
    >>> shown(10**400), shown("a\x1b[2J\u202e")
    ('<an integer of 1329 bits>', "'a\\x1b[2J\\u202e'")
    >>> [bool(CONTROL.search(c)) for c in "\t\u200b a"], [bool(UNPRINTABLE.search(c)) for c in "\t\n\r\u202e"]
    ([True, True, False, False], [False, False, True, True])
    """
    text = _SHOWN.repr(value)
    return text if len(text) <= MAX_SHOWN_CHARS else text[: MAX_SHOWN_CHARS - 3] + "..."


def plain(text: object, style: str = "") -> Text:
    r"""Text that prints as written on any console: no markup, no emoji codes, no control characters.

    Control characters (a terminal's escape sequences among them) are shown as ``\xNN`` (``\uNNNN``
    for the invisible ones that reorder or hide text, such as U+202E).

    >>> plain("[bold]x :smile:\x1b[2J").plain
    '[bold]x :smile:\\x1b[2J'
    """
    return Text(visible(str(text)), style=style)


def json_nulls(value: Any) -> Any:
    """``value`` as JSON holds it: NaN and infinities as None, NumPy numbers as Python's, tuples as lists, all the
    way down.

    >>> json_nulls({"a": (float("nan"), 1.5, float("-inf")), 2: [None, True]})
    {'a': [None, 1.5, None], '2': [None, True]}
    """
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(key): json_nulls(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_nulls(item) for item in value]
    return value


def json_text(value: Any, indent: int | None = None) -> str:
    """``value`` as a JSON document every parser reads: NaN and infinities as ``null`` (:func:`json_nulls`), never
    the ``NaN`` that :func:`json.dumps` writes by default; what :func:`json.dumps` cannot write raises.

    >>> json_text({"ratio": float("nan"), "n": 3})
    '{"ratio": null, "n": 3}'
    """
    return json.dumps(json_nulls(value), indent=indent, allow_nan=False)


def between_markers(text: str, begin: str, end: str, content: str) -> str:
    """``text`` (a README) with ``content`` between its ``begin`` and ``end`` lines, a blank line either side.

    >>> between_markers("a\\n<!-- b -->\\nold\\n<!-- e -->\\nz\\n", "<!-- b -->", "<!-- e -->", "new\\n")
    'a\\n<!-- b -->\\n\\nnew\\n\\n<!-- e -->\\nz\\n'
    """
    before, found_begin, rest = text.partition(begin + "\n")
    _, found_end, after = rest.partition(end + "\n")
    if not found_begin or not found_end:
        raise ValueError(f"the README needs the lines {begin} and {end} around the generated table")
    return f"{before}{begin}\n\n{content}\n{end}\n{after}"


def wrapped(text: Text, width: int, together: int = 1) -> Text:
    """``text`` broken at spaces into lines of ``width`` columns, styles kept; a line that goes on is indented 2 more
    than the first, and a word longer than a line (a path) is kept whole, so that it can still be copied; the
    first ``together`` words stay on the first line (a label and the path it names: ``error: FILE: ...``).

    >>> print(wrapped(Text("  one two three four"), 11).plain)
      one two
        three
        four
    >>> print(wrapped(Text("error: /a/long/path is bad"), 12, together=2).plain)
    error: /a/long/path
      is bad
    """
    first = text.plain
    indent = len(first) - len(first.lstrip(" ")) + 2
    out = Text()
    column = 0
    for position, word in enumerate(text.split(" ", allow_blank=True)):
        if position >= together and column + 1 + word.cell_len > width and column > indent:
            out.rstrip()
            out.append("\n" + " " * indent)
            column = indent
            if not word.plain:
                continue
        elif position:
            out.append(" ")
            column += 1
        out.append_text(word)
        column += word.cell_len
    return out


def say(console: Console, text: Text | str) -> None:
    """Print a line of the command line, :func:`wrapped` at the console's width and at most :data:`OUTPUT_COLUMNS`
    (a string as written: no markup)."""
    line = plain(text) if isinstance(text, str) else text
    console.print(wrapped(line, min(console.width, OUTPUT_COLUMNS)), soft_wrap=True)
