"""The report's blocks: what a section is made of (headings, text, bullets, tables of formatted cells, figures).

Nothing here is Markdown or HTML: :mod:`.render_md` and :mod:`.render_html` draw every kind of block,
so a section built of them shows in both.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Heading:
    text: str
    level: int = 2


@dataclass(frozen=True)
class Paragraph:
    text: str


@dataclass(frozen=True)
class Bullets:
    items: tuple[str, ...]


@dataclass(frozen=True)
class Rows:
    """A table: caption, header and rows of already formatted cells."""

    caption: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Picture:
    name: str
    alt: str
    png: bytes


Block = Heading | Paragraph | Bullets | Rows | Picture
