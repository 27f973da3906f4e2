"""What both engines on ``manager: yarn`` read about the cluster: its client configuration, the packed environment."""

from __future__ import annotations

import os
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

from sweeper.launch.base import LaunchContext, LaunchError
from sweeper.launch.options import YarnOptions

ARCHIVE_LINK = "environment"  # where YARN unpacks cluster.python_archive in every container


def yarn_options(context: LaunchContext) -> YarnOptions:
    """The launch's YARN options (a YARN launch of a grid of another manager has none)."""
    if not isinstance(context.options, YarnOptions):
        raise LaunchError(f"manager yarn needs the grid's yarn options, got {type(context.options).__name__}")
    return context.options


def yarn_conf_dir(options: YarnOptions) -> Path:
    """The cluster's client configuration (yarn-site.xml, core-site.xml): the grid's, else the environment's."""
    names = ("YARN_CONF_DIR", "HADOOP_CONF_DIR")
    for value in [str(options.conf_dir)] if options.conf_dir else [os.environ.get(name) for name in names]:
        if value and (Path(value) / "yarn-site.xml").is_file():
            return Path(value)
    raise LaunchError("manager yarn needs HADOOP_CONF_DIR or YARN_CONF_DIR pointing at a directory with yarn-site.xml")


def python_archive(options: YarnOptions) -> Path | None:
    """``cluster.python_archive``, if set; it must still be there."""
    archive = options.python_archive
    if archive is not None and not archive.is_file():
        raise LaunchError(f"cluster.python_archive {archive} is gone (make it again with: sweeper pack-env {archive})")
    return archive


def container_python(archive: Path | None) -> str:
    """The Python that runs fits in a container: the unpacked archive's, else this one's same path."""
    return f"./{ARCHIVE_LINK}/bin/python" if archive is not None else sys.executable


def default_fs(conf_dir: Path) -> str:
    """``fs.defaultFS`` of the cluster's core-site.xml (``file:///`` when unset)."""
    core = conf_dir / "core-site.xml"
    if core.is_file():
        for prop in ElementTree.parse(core).getroot().iter("property"):
            if prop.findtext("name") == "fs.defaultFS":
                return prop.findtext("value") or "file:///"
    return "file:///"
