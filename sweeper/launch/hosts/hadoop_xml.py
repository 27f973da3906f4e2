"""Hadoop configuration files that could make Hadoop's Java client reach out, refused before it reads them.

Hadoop's ``Configuration`` parses its XML with DTDs allowed and follows ``<include href=...>`` (XInclude; it
matches the element's local name, whatever its namespace): a DOCTYPE's external DTD or entities, or an
include, would have every Java client of a launch fetch a URL or read a local file (and send what it read to
an address of the file's choosing), or read another configuration than the one sweeper checked. So every
``*.xml`` of the directories put on the Java client's classpath (``*-site.xml``, ``resource-types.xml``,
``capacity-scheduler.xml``, ...) is scanned first, by expat, which is never asked to resolve anything: a
DOCTYPE, an entity declaration or reference, an element of the XInclude namespace or named ``include``, a
file that is not well-formed XML, and a file over :data:`MAX_FILE_BYTES` are each refused, naming file and line.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import NoReturn
from xml.parsers import expat

MAX_FILE_BYTES = 4 * 1024 * 1024  # Hadoop's client configuration files are kilobytes: a larger one is refused unread
XINCLUDE_NAMESPACE = "http://www.w3.org/2001/XInclude"
NOT_ALLOWED = "is not allowed in Hadoop configuration (Hadoop's Java client would fetch its DTD and entities)"
NOT_REGULAR = "not a regular file (a Hadoop configuration file must be one)"


class Refused(Exception):
    """What in a file is not allowed, and on which line (None: the file as a whole)."""

    def __init__(self, line: int | None, reason: str) -> None:
        super().__init__(reason)
        self.line = line
        self.reason = reason

    def of(self, path: Path) -> str:
        """``path:line: reason``."""
        return f"{path}{'' if self.line is None else f':{self.line}'}: {self.reason}"


def conf_dir_problems(dirs: Iterable[Path]) -> list[str]:
    """Why each ``*.xml`` of these directories may not be read by a Java client (none: all may)."""
    found = []
    for directory in dict.fromkeys(dirs):  # each directory once, in order
        for path in sorted(directory.iterdir()):
            if path.name.lower().endswith(".xml"):
                problem = file_problem(path)
                if problem is not None:
                    found.append(problem)
    return found


def file_problem(path: Path) -> str | None:
    """Why Hadoop's Java client may not read this file, as ``path[:line]: reason`` (None: it may)."""
    try:
        data = _contents(path)
        if data is not None:  # None: a directory named *.xml
            _scan(data)
    except FileNotFoundError:  # gone, or a dangling link: nothing a client could read either
        return None
    except OSError as error:
        return f"{path}: cannot be read ({error.strerror or error})"
    except Refused as refused:
        return refused.of(path)
    except (expat.ExpatError, ValueError) as error:  # ValueError: an encoding expat cannot read
        return f"{path}: cannot be read as a Hadoop configuration ({error})"
    return None


def _contents(path: Path) -> bytes | None:
    """The file's bytes (None: a directory); no more than :data:`MAX_FILE_BYTES` are read, and a FIFO or device
    is refused, not read (it could block or never end)."""
    mode = os.stat(path).st_mode
    if stat.S_ISDIR(mode):
        return None
    if not stat.S_ISREG(mode):
        raise Refused(None, NOT_REGULAR)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO swapped in since does not block the open
    with os.fdopen(fd, "rb") as file:
        opened = os.fstat(file.fileno())
        if not stat.S_ISREG(opened.st_mode):
            raise Refused(None, NOT_REGULAR)
        if opened.st_size > MAX_FILE_BYTES:
            raise Refused(None, _too_large(opened.st_size))
        data = file.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:  # it grew since
        raise Refused(None, _too_large(len(data)))
    return data


def _too_large(size_bytes: int) -> str:
    return (
        f"{size_bytes} bytes, over the {MAX_FILE_BYTES // 1024 // 1024} MiB a Hadoop configuration file may have "
        "(they are kilobytes): not read"
    )


def _scan(data: bytes) -> None:
    """Raise :class:`Refused` at the first construct that would make a Java client reach out; expat resolves none
    of them, it only reports them."""
    parser = expat.ParserCreate(namespace_separator=" ")
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)

    def refuse(what: str) -> NoReturn:
        raise Refused(parser.CurrentLineNumber, f"{what} {NOT_ALLOWED}")

    def element(name: str, _attributes: dict[str, str]) -> None:
        namespace, _, local = name.rpartition(" ")
        if namespace == XINCLUDE_NAMESPACE or local == "include":  # Hadoop follows any <include href=...>
            raise Refused(
                parser.CurrentLineNumber,
                f"an XInclude (<{local}>) is not allowed in Hadoop configuration "
                "(Hadoop's Java client would read the file or URL it names)",
            )

    parser.StartDoctypeDeclHandler = lambda *_: refuse("a DOCTYPE")
    parser.EntityDeclHandler = lambda *_: refuse("an entity declaration")
    parser.ExternalEntityRefHandler = lambda *_: refuse("an external entity")
    parser.StartElementHandler = element
    parser.Parse(data, True)
