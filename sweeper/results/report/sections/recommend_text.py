"""What ``sweeper recommend`` prints, as the report's blocks: the answer says everything recommend says.

The text is :func:`sweeper.results.recommend_view.lines`' own, never written a second time here: each line
that starts a group becomes a paragraph and its indented lines the bullets under it. The ``Overall`` line
opens the answer (the headline); the memory and idle-slot groups are left to :mod:`.memory`, which says them
in the same sentences and counts them beyond a few configurations. A group of more than
:data:`LISTED_LINES` bullets lists that many and counts the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sweeper.results import recommend, recommend_view
from sweeper.results.predict.worth import WorthMeasuring
from sweeper.results.report.blocks import Block, Bullets, Paragraph

OVERALL = "Overall: "
SAID_BY_MEMORY = ("Memory (", "Slots left idle")  # groups the answer's memory and idle sentences say
LISTED_LINES = 24  # bullets of one group said one by one; the rest counted


@dataclass(frozen=True)
class Group:
    """A line of recommend's text and the indented lines under it."""

    line: str
    items: tuple[str, ...]


def groups(found: recommend.Recommendation, worth: Sequence[WorthMeasuring] = ()) -> list[Group]:
    """recommend's lines (its title left out) as groups: a line that is not indented and those indented under it."""
    found_groups: list[Group] = []
    for line in recommend_view.lines(found, worth)[1:]:
        if line.startswith(" ") and found_groups:
            last = found_groups[-1]
            found_groups[-1] = Group(last.line, (*last.items, line.strip()))
        else:
            found_groups.append(Group(line, ()))
    return found_groups


def headline(found: recommend.Recommendation) -> str:
    """recommend's ``Overall`` line as the answer's first sentence, with what recommend says under it."""
    overall = next(g for g in groups(found) if g.line.startswith(OVERALL))
    text = " ".join([overall.line.removeprefix(OVERALL), *overall.items])
    return f"{text[:1].upper()}{text[1:]}."


def said_blocks(found: recommend.Recommendation, worth: Sequence[WorthMeasuring] = ()) -> list[Block]:
    """The rest of recommend's text (``worth`` as :func:`~sweeper.results.recommend_view.lines` takes it), group by
    group, but the headline and what :mod:`.memory` says."""
    blocks: list[Block] = []
    for group in groups(found, worth):
        if group.line.startswith((OVERALL, *SAID_BY_MEMORY)):
            continue
        blocks.append(Paragraph(group.line))
        if group.items:
            blocks.append(Bullets(_listed(group.items)))
    return blocks


def _listed(items: tuple[str, ...]) -> tuple[str, ...]:
    """The first :data:`LISTED_LINES` items, and a count of the others.

    >>> _listed(tuple(str(i) for i in range(26)))[-2:]
    ('23', '2 more: `sweeper recommend` lists every one')
    """
    if len(items) <= LISTED_LINES:
        return items
    return (*items[:LISTED_LINES], f"{len(items) - LISTED_LINES:,} more: `sweeper recommend` lists every one")
