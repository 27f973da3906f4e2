"""Read a grid file's YAML safely: bounded in size, nesting and alias expansion, and strict about keys.

Only :class:`yaml.SafeLoader` builds the document (plain data, never Python objects). Before anything
is built, the reader refuses, as a :class:`~sweeper.errors.UserError` naming the file:

- a file larger than :data:`MAX_GRID_BYTES` (a regular file or a pipe, such as ``<(generate-grid)``,
  is read up to one byte past that limit), a directory, device or socket, or a file that is not UTF-8;
- lists and mappings nested more than :data:`MAX_DEPTH` deep (PyYAML composes recursively);
- a document of more than :data:`MAX_YAML_NODES` nodes (keys, values, lists and mappings), counted
  with every alias (``*name``) expanded where it is used, so that a "billion laughs" alias bomb is
  refused from its few hundred bytes; aliases are otherwise allowed anywhere; an alias inside the
  node it names is refused;
- a key given twice in one mapping (YAML forbids it), naming the key and both lines.

Numbers follow YAML 1.2 where PyYAML (YAML 1.1) reads them as strings: ``1e-4``, ``1E3`` and ``2.5e+2``
are floats, as users write ``alpha`` and ``learning_rate_init``.
"""

from __future__ import annotations

import os
import re
import select
import stat
import time
from collections.abc import Hashable
from pathlib import Path
from typing import Any

import yaml

from sweeper.errors import UserError
from sweeper.text import shown

MAX_GRID_BYTES = 1024 * 1024
MAX_DEPTH = 64
MAX_YAML_NODES = 100_000
PIPE_TIMEOUT_S = 30.0  # a grid read from a pipe (``<(generate-grid)``) must be complete within this
_NODES = "YAML nodes (keys, values, lists and mappings)"
_MERGE_TAG = "tag:yaml.org,2002:merge"


class _Refused(Exception):
    """A limit or rule of the reader, and where in the file it was met."""

    def __init__(self, message: str, mark: yaml.Mark | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.mark = mark

    def for_file(self, path: Path) -> str:
        if self.mark is None:
            return f"{path}: {self.message}"
        return f"{path}: line {self.mark.line + 1}, column {self.mark.column + 1}: {self.message}"


class GridLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that bounds nesting and nodes while composing and refuses duplicate keys."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.depth = 0
        self.composed = 0

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        mark = self.peek_event().start_mark
        self.composed += 1
        if self.composed > MAX_YAML_NODES:
            raise _Refused(
                f"the document has more than {MAX_YAML_NODES:,} {_NODES}; a grid may have at most that", mark
            )
        if self.depth >= MAX_DEPTH and self.check_event(yaml.CollectionStartEvent):
            raise _Refused(f"nested more than {MAX_DEPTH} levels deep; a grid may nest at most {MAX_DEPTH}", mark)
        self.depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except (ValueError, OverflowError) as error:  # int('9' * 5000), a 30 February timestamp
            reason = str(error).split(";")[0]  # not Python's advice on sys.set_int_max_str_digits
            raise _Refused(f"cannot read the value {shown(node.value)}: {reason}", node.start_mark) from None

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        self._refuse_duplicate_keys(node)
        return super().construct_mapping(node, deep)

    def _refuse_duplicate_keys(self, node: yaml.MappingNode) -> None:
        first_seen: dict[Any, str] = {}
        for key_node, _ in node.value:
            if key_node.tag == _MERGE_TAG:  # `<<: *base` keys may be overridden: that is what merging is
                continue
            key = self.construct_object(key_node, deep=True)
            mark = key_node.start_mark
            where = f"line {mark.line + 1}, column {mark.column + 1}"
            try:
                seen = first_seen.get(key)
            except TypeError:  # an unhashable key: SafeConstructor refuses it with its own message
                continue
            if seen is not None:
                raise _Refused(
                    f"duplicate key {shown(key)} at {seen} and again at {where}; YAML allows each key once in a mapping"
                )
            first_seen[key] = where


# YAML 1.2's core float: an exponent without a dot or a sign (1e-4, 1E3) is a float, where YAML 1.1 reads a string
GridLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)[eE][-+]?[0-9]+$"),
    list("-+.0123456789"),
)


def read_grid_yaml(path: Path) -> Any:
    """The one YAML document of a grid file as plain Python data (``None`` when empty)."""
    text = _grid_text(path)
    try:
        loader = GridLoader(text)  # PyYAML's reader refuses control characters here
    except yaml.YAMLError as error:
        raise UserError(_yaml_error(path, text, error)) from None
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expansion(node)
        return loader.construct_document(node)
    except _Refused as refused:
        raise UserError(refused.for_file(path)) from None
    except yaml.YAMLError as error:
        raise UserError(_yaml_error(path, text, error)) from None
    finally:
        loader.dispose()


def _grid_text(path: Path) -> str:
    """The file's text: at most MAX_GRID_BYTES bytes of UTF-8 from a regular file or a pipe."""
    try:
        kind = _kind_refused(path.stat().st_mode)
        if kind:
            raise UserError(f"{path}: is a {kind}; a grid is a YAML file (or a pipe that gives one)")
        if stat.S_ISFIFO(path.stat().st_mode):
            data = _read_pipe(path, MAX_GRID_BYTES + 1, PIPE_TIMEOUT_S)
        else:
            with path.open("rb") as file:
                data = file.read(MAX_GRID_BYTES + 1)
    except FileNotFoundError:
        raise UserError(f"{path}: no such grid file") from None
    except OSError as error:
        raise UserError(f"{path}: cannot read the grid file: {error.strerror}") from None
    if len(data) > MAX_GRID_BYTES:
        raise UserError(f"{path}: is larger than {MAX_GRID_BYTES // 1024} KiB; a grid file may be at most that")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise UserError(
            f"{path}: is not UTF-8 text: byte {error.start} (line {line}) is 0x{data[error.start]:02x}; "
            "save the grid as UTF-8"
        ) from None


def _read_pipe(path: Path, limit: int, timeout_s: float) -> bytes:
    """Up to ``limit`` bytes of a pipe, until its writer closes it; a pipe with no writer, or one that does
    not finish within ``timeout_s``, is a :class:`~sweeper.errors.UserError` (never a wait for ever)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # does not wait for a writer
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        chunks: list[bytes] = []
        size = 0
        deadline = time.monotonic() + timeout_s
        while size < limit:
            remaining_s = deadline - time.monotonic()
            if remaining_s <= 0:
                raise UserError(
                    f"{path}: the pipe gave no complete grid within {timeout_s:.0f} s (no program writes to it, "
                    "or it never finished)"
                )
            events = poller.poll(remaining_s * 1000)
            try:
                chunk = os.read(fd, min(65536, limit - size))
            except BlockingIOError:
                continue
            if chunk:
                chunks.append(chunk)
                size += len(chunk)
            elif any(flags & select.POLLHUP for _, flags in events):
                break  # its writer closed it: the end
        return b"".join(chunks)
    finally:
        os.close(fd)


def _kind_refused(mode: int) -> str | None:
    """What a grid cannot be read from (None: a regular file or a pipe, read up to MAX_GRID_BYTES + 1 bytes).

    A device is never opened: opening one can have effects of its own, and /dev/zero never ends.
    """
    if stat.S_ISREG(mode) or stat.S_ISFIFO(mode):
        return None
    if stat.S_ISDIR(mode):
        return "directory"
    return "socket" if stat.S_ISSOCK(mode) else "device"


def _check_expansion(root: yaml.Node) -> None:
    """Refuse a node graph whose aliases expand it past MAX_YAML_NODES nodes or MAX_DEPTH levels, or into a cycle.

    Iterative and memoised per node, so linear in the nodes and aliases as written, however much
    they would expand.
    """
    expanded: dict[int, tuple[int, int]] = {}  # id(node) -> (nodes, depth) once expanded
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if children_done:
            open_nodes.discard(id(node))
            expanded[id(node)] = _expanded_size(node, expanded)
        elif id(node) in open_nodes:
            raise _Refused("an alias refers to a value that contains it (a recursive alias)", node.start_mark)
        elif id(node) not in expanded:
            open_nodes.add(id(node))
            stack.append((node, True))
            stack.extend((child, False) for child in _children(node))


def _expanded_size(node: yaml.Node, expanded: dict[int, tuple[int, int]]) -> tuple[int, int]:
    sizes = [expanded[id(child)] for child in _children(node)]
    nodes = 1 + sum(count for count, _ in sizes)
    depth = 1 + max((levels for _, levels in sizes), default=0) if isinstance(node, yaml.CollectionNode) else 0
    if nodes > MAX_YAML_NODES:
        raise _Refused(
            f"with its aliases (*name) expanded, this value has more than {MAX_YAML_NODES:,} {_NODES}; "
            "a grid may have at most that",
            node.start_mark,
        )
    if depth > MAX_DEPTH:
        raise _Refused(
            f"with its aliases (*name) expanded, this value nests more than {MAX_DEPTH} levels deep; "
            f"a grid may nest at most {MAX_DEPTH}",
            node.start_mark,
        )
    return nodes, depth


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [child for pair in node.value for child in pair]
    return []


def _yaml_error(path: Path, text: str, error: yaml.YAMLError) -> str:
    """A PyYAML error as "FILE: YAML syntax error at line L, column C: problem"."""
    if isinstance(error, yaml.MarkedYAMLError) and error.problem_mark is not None:
        mark = error.problem_mark
        return f"{path}: YAML syntax error at line {mark.line + 1}, column {mark.column + 1}: {error.problem}"
    if isinstance(error, yaml.reader.ReaderError):
        line = text.count("\n", 0, error.position) + 1
        return f"{path}: line {line}: character U+{error.character:04X} is not allowed in YAML: {error.reason}"
    return f"{path}: YAML syntax error: {error}"
