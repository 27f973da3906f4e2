"""The report's blocks as ``report.md``: figures linked as PNG files beside it, every text escaped."""

from __future__ import annotations

import re
from collections.abc import Sequence

from sweeper.results.report.blocks import Block, Bullets, Heading, Paragraph, Rows
from sweeper.text import visible

_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>|&~$])")
_LINE_BREAKS = re.compile(r"[\r\n\v\f\x1c-\x1e\x85\u2028\u2029]+")


def to_markdown(blocks: Sequence[Block]) -> str:
    """The report as Markdown; figures are linked as PNG files beside it.

    Every text is written through :func:`_markdown_text`, so what the store holds (error
    messages, names) shows as written and never as Markdown or HTML.
    """
    out: list[str] = []
    for block in blocks:
        if isinstance(block, Heading):
            text = _markdown_text(block.text).replace("#", "\\#")  # a closing '#' would end the heading
            out.append(f"{'#' * block.level} {text}")
        elif isinstance(block, Paragraph):
            out.append(_markdown_text(block.text))
        elif isinstance(block, Bullets):
            out.append("\n".join(f"- {_markdown_text(item)}" for item in block.items))
        elif isinstance(block, Rows):
            lines = [
                f"**{_markdown_text(block.caption)}**",
                "",
                _md_row(block.header),
                _md_row(["---"] * len(block.header)),
                *(_md_row(row) for row in block.rows),
            ]
            out.append("\n".join(lines))
        else:
            out.append(f"![{_markdown_text(block.alt)}]({block.name})")
    return "\n\n".join(out) + "\n"


def _markdown_text(text: str) -> str:
    r"""Plain text as inline Markdown that shows it as written, on one line.

    Backslash-escapes what would start markup (emphasis, code, links, HTML, entities, table
    cells, maths) and turns line breaks into spaces, as
    :func:`~sweeper.results.report.render_html.to_html` escapes for HTML.

    >>> print(_markdown_text("a|b `c` <script> *d*\nnext"))
    a\|b \`c\` \<script\> \*d\* next
    """
    return _MARKDOWN_SPECIAL.sub(r"\\\1", visible(_LINE_BREAKS.sub(" ", text)))


def _md_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(_markdown_text(cell) for cell in cells) + " |"
