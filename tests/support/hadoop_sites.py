"""Planted Hadoop client configuration files for tests (``*-site.xml``)."""

from __future__ import annotations

from pathlib import Path


def site(directory: Path, name: str, properties: dict[str, str], final: tuple[str, ...] = ()) -> Path:
    """Write ``directory/name`` with these properties (``final`` ones marked so); returns the directory."""
    directory.mkdir(parents=True, exist_ok=True)
    body = "".join(
        f"<property><name>{key}</name><value>{value}</value>{'<final>true</final>' if key in final else ''}</property>"
        for key, value in properties.items()
    )
    (directory / name).write_text(f'<?xml version="1.0"?>\n<configuration>{body}</configuration>\n')
    return directory
