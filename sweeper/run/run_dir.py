"""A run's directory, ``STORE/.runs/RUN/``: ``scratch/`` (Spark's local dirs, Dask's spill) and ``logs/``.

The run holds an ``flock`` on ``.runs/RUN/.alive`` while it runs, so the kernel frees it when the run ends
in any way. A run ends by removing its scratch (its logs stay); a run killed with SIGKILL cannot, so every
run first removes the scratch of earlier runs whose ``.alive`` is free (they are gone), saying so. Runs of
other sweeps into the same store hold their own ``.alive`` and are left alone.
"""

from __future__ import annotations

import contextlib
import fcntl
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

ALIVE = ".alive"
SCRATCH = "scratch"


def _gone(run_dir: Path) -> bool:
    """Whether the run of ``run_dir`` has ended (its ``.alive`` can be locked); a directory without one is not known."""
    try:
        with open(run_dir / ALIVE, "r+") as alive:  # never created here: a run that just ended removed it
            fcntl.flock(alive.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(alive.fileno(), fcntl.LOCK_UN)
            return True
    except OSError:  # held (BlockingIOError), or no such file's directory
        return False


def _tidy(run_dir: Path) -> None:
    """Remove a finished run's scratch and marker, and its directory when no logs are left in it."""
    shutil.rmtree(run_dir / SCRATCH, ignore_errors=True)
    with contextlib.suppress(OSError):
        (run_dir / ALIVE).unlink()
    with contextlib.suppress(OSError):
        run_dir.rmdir()


def clean_killed(runs: Path) -> list[str]:
    """Remove what runs killed before their end left in ``runs`` (their scratch); the run ids cleaned."""
    cleaned = []
    with contextlib.suppress(OSError):
        for run_dir in sorted(runs.iterdir()):
            if (run_dir / ALIVE).is_file() and (run_dir / SCRATCH).exists() and _gone(run_dir):
                _tidy(run_dir)
                cleaned.append(run_dir.name)
    return cleaned


@contextlib.contextmanager
def run_directory(store: Path, run_id: str, warn: Callable[[str], None] = print) -> Iterator[Path]:
    """``STORE/.runs/RUN`` for the block, marked alive; scratch removed at the end (logs kept)."""
    runs = store / ".runs"
    cleaned = clean_killed(runs)
    if cleaned:
        warn(f"removed the scratch of {len(cleaned)} run(s) killed before their end: {', '.join(cleaned)}")
    run_dir = runs / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    with open(run_dir / ALIVE, "w") as alive:
        fcntl.flock(alive.fileno(), fcntl.LOCK_EX)
        try:
            yield run_dir
        finally:
            _tidy(run_dir)
            with contextlib.suppress(OSError):  # no run left: another sweep into the store may be starting one
                runs.rmdir()
