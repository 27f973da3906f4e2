"""The report's blocks as ``report.html``: one self-contained page (inline CSS, figures as ``data:`` URIs).

No scripts, no links, no external resources; every text is HTML-escaped.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence

from sweeper.results.report.blocks import Block, Bullets, Heading, Paragraph, Rows
from sweeper.text import visible

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; padding: 0 1em; color: #222; }
h1 { border-bottom: 2px solid #444; } h2 { border-bottom: 1px solid #bbb; margin-top: 2em; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
caption { font-weight: bold; text-align: left; padding: 0.3em 0; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
th { background: #f0f0f0; } tr:nth-child(even) td { background: #fafafa; }
figure { margin: 1em 0; } img { max-width: 100%; height: auto; } figcaption { color: #555; font-size: 0.9em; }
"""


def _escape(text: str) -> str:
    """HTML-escaped, control characters shown as ``\\xNN`` (a page ``cat`` to a terminal does nothing)."""
    return html.escape(visible(text))


def to_html(blocks: Sequence[Block]) -> str:
    """The report as one self-contained HTML page: figures inline as data: URIs, no scripts or links."""
    title = next((b.text for b in blocks if isinstance(b, Heading)), "sweeper report")
    body: list[str] = []
    for block in blocks:
        if isinstance(block, Heading):
            body.append(f"<h{block.level}>{_escape(block.text)}</h{block.level}>")
        elif isinstance(block, Paragraph):
            body.append(f"<p>{_escape(block.text)}</p>")
        elif isinstance(block, Bullets):
            body.append("<ul>" + "".join(f"<li>{_escape(item)}</li>" for item in block.items) + "</ul>")
        elif isinstance(block, Rows):
            body.append(_table(block))
        else:
            data = base64.b64encode(block.png).decode("ascii")
            alt = _escape(block.alt)
            body.append(
                f'<figure><img src="data:image/png;base64,{data}" alt="{alt}"><figcaption>{alt}</figcaption></figure>'
            )
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{_escape(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )


def _table(block: Rows) -> str:
    head = "".join(f"<th>{_escape(cell)}</th>" for cell in block.header)
    rows = "".join("<tr>" + "".join(f"<td>{_escape(c)}</td>" for c in row) + "</tr>" for row in block.rows)
    return (
        f"<table><caption>{_escape(block.caption)}</caption><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
    )
