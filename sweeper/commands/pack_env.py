"""``sweeper pack-env OUT``: this virtualenv as an archive for ``cluster.python_archive``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console

from sweeper.launch.hosts.pack_env import GZIP_LEVEL
from sweeper.text import plain


def add_parser(commands: Any) -> None:
    """Register ``pack-env`` on the CLI's subparsers (``commands`` from ``add_subparsers``)."""
    pack_env: argparse.ArgumentParser = commands.add_parser(
        "pack-env",
        help="pack this virtualenv with its own interpreter (and a real copy of sweeper) for cluster.python_archive",
    )
    pack_env.add_argument("out", help="archive to write: .tar.gz, .tgz or .tar")
    pack_env.add_argument(
        "--exclude", action="append", metavar="PATTERN",
        help="leave out site-packages entries matching this glob (repeatable), e.g. 'mypy*'",
    )  # fmt: skip
    pack_env.add_argument(
        "--level", type=int, default=GZIP_LEVEL, choices=range(1, 10), help=f"gzip level (default {GZIP_LEVEL})"
    )
    pack_env.add_argument(
        "--spark-jars", action="store_true",
        help="keep pyspark's jars: for SSH hosts, which run Spark's daemons from the environment (YARN needs none)",
    )  # fmt: skip
    pack_env.set_defaults(func=main)


def main(args: argparse.Namespace, console: Console) -> int:
    """``sweeper pack-env OUT [--exclude PATTERN ...]``: this venv as an archive for ``cluster.python_archive``."""
    from sweeper.launch.hosts.pack_env import pack

    packed = pack(Path(args.out), exclude=args.exclude or (), compresslevel=args.level, spark_jars=args.spark_jars)
    console.print(
        plain(
            f"{packed.path}: {packed.files} files, {packed.size_mib:.0f} MiB in {packed.pack_s:.1f} s "
            f"(left out: {', '.join(packed.dropped)})"
        )
    )
    if args.spark_jars:  # an SSH host's environment: unpacked there, its bin/python named by cluster.python
        console.print(plain("unpack it on every host and set cluster.python to its bin/python"), soft_wrap=True)
    else:
        console.print(plain(f"use it in the grid: cluster.python_archive: {packed.path}"), soft_wrap=True)
    return 0
