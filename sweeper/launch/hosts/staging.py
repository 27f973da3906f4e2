"""Files put once on the cluster's file system and reused by every application of a sweep (and later sweeps).

On a cluster with a file system of its own (``fs.defaultFS`` hdfs:// ...) the nodes localize what an
application names from there. Left to themselves, Spark uploads pyspark's ~460 MB of jars and the packed
environment into every application's staging directory. Instead each is put once under the Hadoop user's
home, ``.sweeper/<name>/<file>``, where ``<name>`` is made of what the file holds (the archive's content hash;
pyspark's version and its jars' names and sizes): a file of that name is always whole (a partial upload is made
under another name and renamed when complete) and never changes.

Each file is readable by everyone and its directories searchable (0644, 0755), so YARN localizes it as a
*public* resource where the user's home lets others through (Spark decides so for its own files, the
ApplicationMaster of ``sweeper.yarn.Containers`` likewise): every NodeManager downloads and unpacks it once
into its public cache, keyed by the file's path and time, and every later application on that node, of either
engine and of any user, starts from that copy. A home others may not enter makes it private: one copy per
user and node, still shared by both engines.

One JVM (``sweeper.yarn.Stage``, deploy/yarn) does a launch's work: it says which files are there, then puts the
missing ones, made here only then (pyspark's jars are zipped only when the cluster does not have them yet).
"""

from __future__ import annotations

import getpass
import hashlib
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from sweeper.launch.base import LaunchError
from sweeper.launch.hosts.hadoop_conf import HadoopConf
from sweeper.launch.hosts.yarn_client import hadoop_java

STAGE_CLASS = "sweeper.yarn.Stage"
STAGED: dict[tuple[str, str], str] = {}  # (fs.defaultFS, path under .sweeper) -> its URI, staged or found here
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip", ".jar")  # what YARN unpacks, by the file's name


@dataclass(frozen=True)
class Upload:
    """One file to have on the cluster: ``.sweeper/<path>``, made by ``make(scratch)`` only when it is missing."""

    path: str  # under .sweeper: "<name>/<file>", <name> made of the content
    make: Callable[[Path], Path]  # the local file (made in the scratch directory if need be)


def existing(path: Path) -> Callable[[Path], Path]:
    """``make`` of an :class:`Upload` of a file that is already here."""
    return lambda _scratch: path


def sweeper_home(conf: HadoopConf) -> str:
    """``<fs.defaultFS>/user/<Hadoop user>/.sweeper``: where staged files go."""
    user = os.environ.get("HADOOP_USER_NAME") or getpass.getuser()
    return f"{conf.default_fs.rstrip('/')}/user/{user}/.sweeper"


def staged_uris(conf: HadoopConf, uploads: Sequence[Upload]) -> list[str]:
    """Each upload's URI on the cluster's file system, known before it is staged (its name is made of its content)."""
    home = sweeper_home(conf)
    return [f"{home}/{upload.path}" for upload in uploads]


def stage(
    conf: HadoopConf,
    lib: Path,
    uploads: Sequence[Upload],
    timeout_s: float = 600,
    environment: Mapping[str, str] | None = None,
) -> tuple[list[str], float]:
    """Each upload's URI on the cluster's file system, put there unless it is; and the seconds spent here.

    What an earlier launch of this process staged or found costs nothing; the rest costs one JVM (started with
    ``environment``, else this process's), which looks for every file at once and uploads the missing ones.
    """
    uris = staged_uris(conf, uploads)
    known = {path for fs, path in STAGED if fs == conf.default_fs}
    wanted = {uri: upload for uri, upload in zip(uris, uploads, strict=True) if upload.path not in known}
    if not wanted:
        return uris, 0.0
    started = time.monotonic()
    with (
        tempfile.TemporaryDirectory(prefix="sweeper-staging-") as scratch,
        _StageJvm(conf, lib, list(wanted), timeout_s, environment) as jvm,
    ):
        missing = jvm.missing()
        made = {uri: wanted[uri].make(Path(scratch)) for uri in missing}
        jvm.put(made)
        for uri, local in made.items():
            print(  # into the launch's log (its standard error)
                f"sweeper: staged {local.name} ({local.stat().st_size / 2**20:.0f} MiB) as {uri}, once: later "
                f"applications reuse it (this launch's staging: {time.monotonic() - started:.1f} s)",
                file=sys.stderr,
                flush=True,
            )
    for uri, upload in wanted.items():
        STAGED[(conf.default_fs, upload.path)] = uri
    return uris, time.monotonic() - started


class BackgroundStaging:
    """:func:`stage` on a thread, so that a driver JVM starts beside it: the URIs at once, the result at :meth:`wait`.

    The staging JVM starts with the environment of the moment this is made (the launch sets the driver's after).
    """

    def __init__(self, conf: HadoopConf, lib: Path, uploads: Sequence[Upload]) -> None:
        self.uris = staged_uris(conf, uploads)
        self._call = (conf, lib, list(uploads))
        self._environment = dict(os.environ)
        self._thread: threading.Thread | None = None
        self._staged_s = 0.0
        self._error: BaseException | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="sweeper-staging", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            _, self._staged_s = stage(*self._call, environment=self._environment)
        except BaseException as error:  # raised again in the launch's thread by wait()
            self._error = error

    def wait(self) -> float:
        """The seconds spent staging (0: found staged by this process); its error, raised here."""
        if self._thread is not None:
            self._thread.join()
        if self._error is not None:
            raise self._error
        return self._staged_s


class _StageJvm:
    """``sweeper.yarn.Stage``: its answers on stdout, its log in a file, killed at ``timeout_s``."""

    def __init__(
        self, conf: HadoopConf, lib: Path, uris: list[str], timeout_s: float, environment: Mapping[str, str] | None
    ) -> None:
        self.command = [*hadoop_java(conf, lib, STAGE_CLASS), *uris]
        self.environment = environment
        self.uris = uris
        self.timeout_s = timeout_s
        self.timed_out = False

    def __enter__(self) -> _StageJvm:
        self.log = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            self.command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            env=self.environment,
        )
        self.timer = threading.Timer(self.timeout_s, self._kill)
        self.timer.daemon = True
        self.timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.timer.cancel()
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()
        self.log.close()

    def _kill(self) -> None:
        self.timed_out = True
        self.process.kill()

    def _fail(self, what: str) -> LaunchError:
        if self.timed_out:
            return LaunchError(f"staging on the cluster's file system: no end within {self.timeout_s:.0f} s ({what})")
        self.log.seek(0)
        tail = self.log.read().decode(errors="replace").strip()[-800:]
        return LaunchError(f"could not stage {what} on the cluster's file system: {tail}")

    def missing(self) -> list[str]:
        """The URIs the cluster does not have yet."""
        assert self.process.stdout is not None
        missing: list[str] = []
        for line in self.process.stdout:
            state, _, uri = line.rstrip("\n").partition("\t")
            if state == "ready":
                return missing
            if state == "missing":
                missing.append(uri)
        raise self._fail(", ".join(self.uris))

    def put(self, files: dict[str, Path]) -> None:
        """Upload each URI's local file (none: just end the JVM); a LaunchError if one could not be put."""
        assert self.process.stdin is not None and self.process.stdout is not None
        try:
            self.process.stdin.write("".join(f"{uri}\t{local}\n" for uri, local in files.items()))
            self.process.stdin.close()
        except BrokenPipeError:
            pass  # it ended: its exit status says why
        answers: dict[str, tuple[str, str]] = {}
        for line in self.process.stdout:
            state, _, rest = line.rstrip("\n").partition("\t")
            uri, _, why = rest.partition("\t")
            answers[uri] = (state, why)
        self.process.wait()
        failed = [f"{uri}: {answers[uri][1]}" for uri in files if answers.get(uri, ("", ""))[0] == "failed"]
        if failed:
            raise LaunchError("could not stage on the cluster's file system: " + "; ".join(failed))
        if self.process.returncode != 0 or any(uri not in answers for uri in files):
            raise self._fail(", ".join(files) or ", ".join(self.uris))


@lru_cache(maxsize=8)
def _content_hash(path: Path, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()[:16]


def content_hash(path: Path) -> str:
    """The first 16 hex digits of the file's SHA-256 (read once per process while it is unchanged)."""
    stat = path.stat()
    return _content_hash(path.resolve(), stat.st_size, stat.st_mtime_ns)


def archive_upload(archive: Path) -> Upload:
    """The packed environment as ``env-<content hash>/environment<suffix>`` (the suffix tells YARN how to unpack it:
    the same archive under another local name is the same file on the cluster)."""
    name = archive.name.lower()
    suffix = next((s for s in ARCHIVE_SUFFIXES if name.endswith(s)), archive.suffix)
    return Upload(f"env-{content_hash(archive)}/environment{suffix}", existing(archive))


def staged_archive(conf: HadoopConf, lib: Path, archive: Path) -> tuple[str, float]:
    """The packed environment on the cluster's file system, and the seconds spent staging it here, hashing included
    (0 when an earlier launch of this process staged or found the same archive; a look, about a second, when an
    earlier sweep did)."""
    started = time.monotonic()
    upload = archive_upload(archive)
    hashed_s = time.monotonic() - started  # 0 once cached
    (uri,), staged_s = stage(conf, lib, [upload])
    return uri, staged_s + (hashed_s if staged_s else 0.0)
