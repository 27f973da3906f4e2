"""Load and validate a grid file (YAML) into a frozen :class:`Grid`.

Everything is checked before anything runs, and every problem in a file is reported together:
each message names the file, the key path, the bad value and what is allowed.
"""

from __future__ import annotations

import difflib
import hashlib
import ipaddress
import json
import math
import os
import re
import stat
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sweeper.config.reader import read_grid_yaml
from sweeper.errors import UserError
from sweeper.planning.sizing import RULES, Cluster, InfeasibleShape, size_executors
from sweeper.text import CONTROL, CONTROL_CHARS, shown
from sweeper.units import SIZE_FORMS, parse_size_mib
from sweeper.workload.environment import OBSERVED_VARIABLES

MANAGERS = ("local", "yarn", "ssh", "standalone")
ENGINES = ("spark", "dask", "spark-mllib")
DEFAULT_ENGINES = ("spark", "dask")
BASELINE_ENGINE = "local"  # the engine of the baseline's rows: not an engine of the grid, nor of its rules
MODES = ("replicas", "cv", "search", "data-parallel")
# engines that train one model per measurement across the launch: they take only data-parallel points
ONE_MODEL_ENGINES = ("spark-mllib",)
DATASETS = ("digits", "mnist", "fashion-mnist")
MAX_RECOMMENDED_CORES_PER_EXECUTOR = 5

TOP_KEYS = (
    "name",
    "description",
    "cluster",
    "sizing",
    "engines",
    "baseline",
    "workload",
    "exclude",
    "only",
    "store",
    "environment",
    "spark_conf",
)
CLUSTER_KEYS = (
    "manager",
    "nodes",
    "cores_per_node",
    "memory_per_node",
    "hosts",
    "ssh",
    "python",
    "java_home",
    "remote_dir",
    "queue",
    "hadoop_conf_dir",
    "python_archive",
    "spark_master",
    "dask_scheduler",
)
# cluster.python_archive: what YARN can unpack (spark.yarn.dist.archives; Dask unpacks it in the container)
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip")
CLUSTER_PATHS = ("python", "java_home", "remote_dir", "queue", "hadoop_conf_dir", "spark_master", "dask_scheduler")
SSH_KEYS = (
    "user",
    "port",
    "identity_file",
    "known_hosts",
    "strict_host_key_checking",
    "connect_timeout_s",
    "driver_host",
    "dask_tls",
)
SIZING_KEYS = ("rule", "cores_per_executor", "reserve", "application_master")
RESERVE_KEYS = ("cores", "memory")
WORKLOAD_KEYS = (
    "dataset",
    "fraction",
    "model",
    "epochs",
    "trials",
    "mode",
    "folds",
    "param_grid",
    "n_fits",
    "local_epochs",
    "shards",
    "exact_epochs",
    "threads_per_fit",
    "timeout_s",
    "start_timeout_s",
    "seed",
    "test_size",
)
DATASET_KEYS = ("name", "path")
# MLPClassifier parameters the sweeper owns: epochs set max_iter, the trial sets random_state.
MODEL_KEYS_OWNED = ("max_iter", "random_state")
DEFAULT_MODEL: dict[str, Any] = {
    "hidden_layer_sizes": (100, 50),
    "activation": "relu",
    "solver": "adam",
}
RULE_AXES = ("engine", "cores_per_executor", "epochs", "fraction", "mode")
# Spark properties the plan sets for every launch: spark_conf may not override them.
FIT_ENVIRONMENT_PREFIX = "spark.executorEnv."  # spark_conf may not set the fit environment
SPARK_CONF_OWNED = (
    "spark.master",
    "spark.submit.deployMode",
    "spark.executor.instances",
    "spark.executor.cores",
    "spark.executor.memory",
    "spark.executor.memoryOverhead",
    "spark.cores.max",
    "spark.task.cpus",
    "spark.dynamicAllocation.enabled",
    "spark.pyspark.python",
    "spark.authenticate",
    "spark.authenticate.secret",
)
# workload.model keys only spark-mllib reads (scikit-learn's MLPClassifier has no such parameter)
MLLIB_ONLY_PARAMS = ("mllib_solver",)
MLLIB_SOLVERS = ("l-bfgs", "gd")  # what Spark ML's MultilayerPerceptronClassifier takes as its solver

# Upper bounds (README, "The grid file"), so that no value in a grid can make planning or a launch explode.
MAX_NAME_CHARS = 100  # a sweep name (one directory of the store)
MAX_NAME_BYTES = 255  # ... and the file systems' limit on one name, in UTF-8
MAX_TEXT_CHARS = 4096  # a path, queue or URL (PATH_MAX)
MAX_SETTING_CHARS = 32768  # an environment or spark_conf value
MAX_NODES = 10_000
MAX_CORES_PER_NODE = 4096
# memory_per_node and every size: at most 1 PiB (sweeper.units.MAX_SIZE_MIB)
MAX_APPLICATION_MASTER = 1000
MAX_EPOCHS = 1_000_000
MAX_LAYERS = 100
MAX_LAYER_WIDTH = 100_000
MAX_PORT = 65535
MAX_CONNECT_TIMEOUT_S = 3600.0
# workload integers: default (None: optional), minimum, maximum. A fit's seed is
# seed + 1000 x trial + its index in the batch, and scikit-learn takes random_state < 2**32.
WORKLOAD_INTEGERS: dict[str, tuple[int | None, int, int]] = {
    "trials": (3, 1, 1000),
    "folds": (3, 2, 100),
    "n_fits": (None, 1, 10_000),
    "local_epochs": (1, 1, 10_000),
    "shards": (None, 1, 10_000),
    "threads_per_fit": (1, 1, MAX_CORES_PER_NODE),
    "seed": (0, 0, 2**31 - 1),
}
# workload numbers: default, and the interval (low, high] they must lie in
WORKLOAD_NUMBERS: dict[str, tuple[float, float, float]] = {
    "timeout_s": (3600, 0.0, 7 * 86400.0),
    "start_timeout_s": (180, 0.0, 86400.0),
    "test_size": (0.25, 0.0, 0.9),
}
MAX_AXIS_VALUES = 1000  # values of one sweep axis (and of engines, param_grid lists): checked before the values
MAX_PROBLEMS = 50  # problems listed for one file; the rest are counted

# Control characters (sweeper.text.CONTROL_CHARS) are refused in every name, path and Spark value.
# What a shell gives a meaning to inside or around quotes: refused in values that reach a command line on the hosts.
SHELL_CHARS = "'\"$`;&|<>\\"
SHELL_CHARS_TEXT = "quotes, $, backticks, ;, &, |, <, >, backslashes or control characters"
_SHELL_UNSAFE = re.compile(f"[{CONTROL_CHARS}{re.escape(SHELL_CHARS)}]")
_NAME_UNSAFE = re.compile(rf"[{CONTROL_CHARS}/\\]")
_NUL = re.compile("\x00")
# A host or user name on ssh's command line, as OpenSSH itself checks them (ssh.c): 1 to MAX_SSH_NAME_CHARS
# characters, no leading '-' (an option), no whitespace, control characters or shell metacharacters
# (SSH_NAME_CHARS); a host name has no '/', ':' (but in an IPv6 address), '@' or ',' (SSH_HOST_CHARS) either.
MAX_SSH_NAME_CHARS = 255
SSH_NAME_CHARS = "'\"$`\\;&|<>(){}"
SSH_HOST_CHARS = "/:@,"
SSH_NAME_RULE = (
    f"1 to {MAX_SSH_NAME_CHARS} characters, not starting with '-', without whitespace, control characters "
    f"or any of {' '.join(SSH_NAME_CHARS)}"
)
_SSH_USER_UNSAFE = re.compile(rf"[\s{CONTROL_CHARS}{re.escape(SSH_NAME_CHARS)}]")
_SSH_HOST_UNSAFE = re.compile(rf"[\s{CONTROL_CHARS}{re.escape(SSH_NAME_CHARS + SSH_HOST_CHARS)}]")
_IP_TEXT = re.compile(r"[0-9A-Fa-f:.]+(?:%[A-Za-z0-9_.-]+)?")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SPARK_PROPERTY = re.compile(rf"spark\.[^\s={CONTROL_CHARS}]+")


def check_sweep_name(name: object) -> str | None:
    """What is wrong with a sweep name (None: nothing): it must be ONE safe directory name in the store.

    Shared by the grid's ``name``, the store and the command line's ``--sweep``.

    >>> check_sweep_name("2node") is None
    True
    >>> [check_sweep_name(name).split(": ")[-1] for name in ("..", "a/b", "-x", "")]
    ["it is '..', got '..'", "it contains '/', got 'a/b'", "it starts with '-', got '-x'", "it is blank, got ''"]
    """
    rule = (
        f"must be one directory name (1 to {MAX_NAME_CHARS} characters; no '/', '\\' or control characters; "
        "not starting with '-', '.' or '_', which readers of the store skip)"
    )
    reason = _sweep_name_problem(name)
    return None if reason is None else f"{rule}: {reason}, got {shown(name)}"


def _sweep_name_problem(name: object) -> str | None:
    if name is None:
        return "it is missing"
    if not isinstance(name, str):
        return "it is not a string"
    if not name.strip():
        return "it is blank"
    if len(name) > MAX_NAME_CHARS:
        return f"it has {len(name)} characters"
    found = _NAME_UNSAFE.search(name)
    if found:
        return f"it contains {found.group()!r}"
    if name in (".", ".."):
        return f"it is {name!r}"
    if name.startswith(("-", ".", "_")):
        return f"it starts with {name[0]!r}"
    if len(name.encode()) > MAX_NAME_BYTES:
        return f"it is longer than {MAX_NAME_BYTES} bytes in UTF-8"
    return None


def is_host(text: str) -> bool:
    """Whether ``text`` is a host name or an IP address that ``ssh`` and a shell take literally (never an option).

    >>> [is_host(h) for h in ("node-1.example.org", "node_1.lan", "10.0.0.2", "::1", "fe80::1%eth0")]
    [True, True, True, True, True]
    >>> [is_host(h) for h in ("-oProxyCommand=x", "a b", "a;b", "$(id)", "root@a", "a:22", "a/b", "")]
    [False, False, False, False, False, False, False, False]
    """
    return host_problem(text) is None


def host_problem(value: object) -> str | None:
    """What makes ``value`` unsafe as a host of ``ssh`` (None: nothing): see SSH_NAME_RULE and SSH_HOST_CHARS."""
    if isinstance(value, str) and _IP_TEXT.fullmatch(value):
        try:
            ipaddress.ip_address(value)
            return None
        except ValueError:
            pass
    return _ssh_name_problem(value, _SSH_HOST_UNSAFE)


def _ssh_name_problem(value: object, unsafe: re.Pattern[str]) -> str | None:
    """What makes ``value`` unsafe as a host or user name on ssh's command line (None: nothing).

    >>> [_ssh_name_problem(u, _SSH_USER_UNSAFE) for u in ("john.doe@corp.example.com", "1ops", "-l", "a b", "")]
    [None, None, "it starts with '-'", "it contains ' '", 'it is empty']
    """
    if not isinstance(value, str):
        return "it is not a string"
    if not value:
        return "it is empty"
    if len(value) > MAX_SSH_NAME_CHARS:
        return f"it has {len(value)} characters"
    if value.startswith("-"):
        return "it starts with '-'"
    found = unsafe.search(value)
    return f"it contains {found.group()!r}" if found else None


def _identity(value: Any) -> Hashable | None:
    """What makes two axis values the same: equality, a list compared as a tuple, and True is not 1.

    None for a value that cannot be compared (a mapping, a set, a list holding lists).

    >>> _identity([64, 32]) == _identity((64, 32)), _identity(True) == _identity(1), _identity([[1]])
    (True, False, None)
    """
    candidate = (type(value) is bool, tuple(value) if isinstance(value, list) else value)
    try:
        hash(candidate)
    except TypeError:
        return None
    return candidate


def _is_scalar(value: Any, max_chars: int = MAX_NAME_CHARS) -> bool:
    """A string of at most ``max_chars``, a boolean, a 64-bit integer or a finite float."""
    if isinstance(value, str):
        return len(value) <= max_chars
    if isinstance(value, int):
        return -(2**63) <= value < 2**63
    return isinstance(value, float) and math.isfinite(value)


def _key_name(name: Any) -> str:
    """A mapping key as a key path shows it: itself when a plain short string, else :func:`shown`."""
    if isinstance(name, str) and len(name) <= MAX_NAME_CHARS and not CONTROL.search(name):
        return name
    return shown(name)


def _did_you_mean(value: Any, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str) or len(value) > MAX_NAME_CHARS:
        return ""
    close = difflib.get_close_matches(value, allowed, n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def _file_kind(path: Path) -> str | None:
    """What ``path`` is: ``file``, ``directory``, ``FIFO``, ``socket`` or ``device``; None if it cannot be seen."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode):
        return "file"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISFIFO(mode):
        return "FIFO"
    return "socket" if stat.S_ISSOCK(mode) else "device"


@dataclass(frozen=True)
class Dataset:
    """Which data to train on: a bundled name, or a file/directory path."""

    name: str
    path: str | None = None


@dataclass(frozen=True)
class Workload:
    """What every launch trains, with its sweep axes as tuples."""

    dataset: Dataset
    fractions: tuple[float, ...]
    model_axes: tuple[tuple[str, tuple[Any, ...]], ...]
    epochs: tuple[int, ...]
    trials: int
    modes: tuple[str, ...]
    folds: int
    param_grid: tuple[tuple[str, tuple[Any, ...]], ...]
    n_fits: int | None
    local_epochs: int
    shards: int | None
    exact_epochs: bool
    threads_per_fit: int
    timeout_s: float
    seed: int
    test_size: float
    start_timeout_s: float = 180.0


@dataclass(frozen=True)
class Grid:
    """A validated grid file."""

    path: Path
    name: str
    manager: str
    cluster: Cluster
    rule: str
    cores_per_executor: tuple[int, ...]
    engines: tuple[str, ...]
    baseline: bool
    workload: Workload
    exclude: tuple[dict[str, Any], ...]
    only: tuple[dict[str, Any], ...]
    store: Path
    environment: tuple[tuple[str, str], ...]
    spark_conf: tuple[tuple[str, str], ...] = ()
    hosts: tuple[str, ...] = ()
    ssh: tuple[tuple[str, Any], ...] = ()
    python: str | None = None
    java_home: str | None = None
    remote_dir: str | None = None
    queue: str | None = None
    hadoop_conf_dir: str | None = None
    python_archive: str | None = None
    spark_master: str | None = None
    dask_scheduler: str | None = None
    grid_hash: str = field(default="", compare=False)
    warnings: tuple[str, ...] = field(default=(), compare=False)


class _Checker:
    """Collects problems with their key paths, so one run reports them all (the first MAX_PROBLEMS)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.problems: list[str] = []
        self.warnings: list[str] = []
        self.unlisted = 0

    def fail(self, key: str, message: str) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(f"{self.path}: {key}: {message}")
        else:
            self.unlisted += 1

    def warn(self, key: str, message: str) -> None:
        self.warnings.append(f"{self.path}: {key}: {message}")

    def error(self) -> UserError:
        """All problems as one :class:`UserError`."""
        more = [f"{self.path}: and {self.unlisted} more problems"] if self.unlisted else []
        return UserError(self.problems + more)

    def mapping(self, value: Any, key: str) -> dict[str, Any] | None:
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.fail(key, f"must be a mapping, got {shown(value)}")
            return None
        return value

    def known_keys(self, value: dict[str, Any], key: str, allowed: tuple[str, ...]) -> None:
        for name in value:
            if isinstance(name, str) and name in allowed:
                continue
            where = f"{key}.{_key_name(name)}" if key else _key_name(name)
            hint = _did_you_mean(name, allowed)
            self.fail(where, f"unknown key {shown(name)}{hint} (allowed: {', '.join(allowed)})")

    def integer(self, value: Any, key: str, *, minimum: int = 1, maximum: int) -> int | None:
        if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
            self.fail(key, f"must be an integer from {minimum} to {maximum}, got {shown(value)}")
            return None
        return value

    def number(self, value: Any, key: str, low: float, high: float, open_low: bool = True) -> float | None:
        """A finite number in (low, high] (``[low, high]`` unless ``open_low``)."""
        allowed = f"a number in {'(' if open_low else '['}{low}, {high}]"
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(key, f"must be {allowed}, got {shown(value)}")
            return None
        finite = not isinstance(value, float) or math.isfinite(value)
        if not finite or value > high or value < low or (open_low and value == low):
            self.fail(key, f"must be {allowed}, got {shown(value)}")
            return None
        return float(value)

    def size_mib(self, value: Any, key: str) -> int | None:
        """A positive size (a string; units bounds it), in MiB."""
        try:
            if not isinstance(value, str):
                raise ValueError(value)
            mib = parse_size_mib(value)
        except ValueError:
            self.fail(key, f"must be {SIZE_FORMS}, got {shown(value)}")
            return None
        if mib <= 0:
            self.fail(key, f"must be a positive size, got {shown(value)}")
            return None
        return mib

    def choice(self, value: Any, key: str, allowed: tuple[str, ...]) -> str | None:
        if isinstance(value, str) and value in allowed:
            return value
        hint = _did_you_mean(value, allowed)
        self.fail(key, f"must be one of {', '.join(allowed)}, got {shown(value)}{hint}")
        return None

    def boolean(self, value: Any, key: str) -> bool | None:
        if not isinstance(value, bool):
            quoted = isinstance(value, str) and value.lower() in ("true", "false", "yes", "no", "on", "off")
            hint = " (a YAML boolean: write it without quotes)" if quoted else ""
            self.fail(key, f"must be true or false{hint}, got {shown(value)}")
            return None
        return value

    def axis(self, value: Any, key: str, validate: Callable[[Any, str], Any]) -> tuple[list[Any], bool]:
        """A sweep axis: one value or a list of 1 to MAX_AXIS_VALUES values, no value twice.

        The length is checked first; then ``validate(value, item_key)`` checks each distinct value once,
        returning it as the grid keeps it, or None when refused (it records the problem). Returns the
        valid values in order, and whether the whole axis is valid.
        """
        listed = value if isinstance(value, list) else [value]
        if not listed:
            self.fail(key, "must not be an empty list")
            return [], False
        if len(listed) > MAX_AXIS_VALUES:
            self.fail(key, f"lists {len(listed):,} values; an axis may list at most {MAX_AXIS_VALUES:,}: shorten it")
            return [], False
        kept: list[Any] = []
        first_at: dict[Hashable, int] = {}  # the identity of a value (as written, and as kept) -> its first index
        repeats: list[tuple[int, int]] = []
        for index, one in enumerate(listed):
            written = _identity(one)
            if written in first_at:
                repeats.append((first_at[written], index))
                continue
            checked = validate(one, _item_key(key, index, len(listed)))
            kept_as = None if checked is None else _identity(checked)
            if kept_as in first_at:
                repeats.append((first_at[kept_as], index))
            elif checked is not None:
                kept.append(checked)
            for identity in (written, kept_as):
                if identity is not None:
                    first_at.setdefault(identity, index)
        if repeats:
            first, again = repeats[0]
            more = f" ({len(repeats)} repeats in all)" if len(repeats) > 1 else ""
            self.fail(
                key,
                f"lists a value twice: {shown(listed[again])} at [{first}] and [{again}]{more}; "
                "an axis lists each value once (the same value gives the same measurements)",
            )
        return kept, len(kept) == len(listed)

    def text(self, value: Any, key: str, *, shell: bool = False) -> str | None:
        """A non-empty string of at most MAX_TEXT_CHARS without control characters.

        ``shell``: the value reaches a command line on the hosts, so it holds nothing a shell interprets.
        """
        if not isinstance(value, str) or not value:
            self.fail(key, f"must be a non-empty string, got {shown(value)}")
            return None
        if len(value) > MAX_TEXT_CHARS:
            self.fail(key, f"must be at most {MAX_TEXT_CHARS} characters, got {len(value)}: {shown(value)}")
            return None
        found = (_SHELL_UNSAFE if shell else CONTROL).search(value)
        if found:
            refused = f"{SHELL_CHARS_TEXT} (it reaches a command line)" if shell else "control characters"
            self.fail(key, f"must not contain {refused}, got {found.group()!r} in {shown(value)}")
            return None
        return value

    def host(self, value: Any, key: str) -> str | None:
        problem = host_problem(value)
        if problem is None:
            return str(value)
        self.fail(
            key,
            f"must be a host name or IP address ({SSH_NAME_RULE}, and no {' '.join(SSH_HOST_CHARS)} "
            f"but ':' in an IPv6 address): {problem}, got {shown(value)}",
        )
        return None


def load(path: str | Path) -> Grid:
    """Read, validate and normalise a grid file; raise :class:`UserError` listing all problems."""
    grid_path = Path(path)
    return parse(read_grid_yaml(grid_path), grid_path)


def parse(raw: Any, path: Path) -> Grid:
    """Validate an already-parsed YAML document; any value of any type gives a :class:`UserError`, nothing else."""
    check = _Checker(path)
    if not isinstance(raw, dict):
        raise UserError(f"{path}: the grid must be a YAML mapping with keys {', '.join(TOP_KEYS)}")
    check.known_keys(raw, "", TOP_KEYS)

    name = raw.get("name")
    problem = check_sweep_name(name)
    if problem:
        check.fail("name", problem)

    manager, cluster, hosts, ssh = _cluster(check, raw.get("cluster"))
    paths = _cluster_paths(check, raw.get("cluster"))
    archive = _python_archive(check, raw.get("cluster"), manager)
    rule, cores = _sizing(check, raw.get("sizing"), cluster)
    if cluster is not None and "sizing" in raw and isinstance(raw["sizing"], dict):
        cluster = _with_reserve(check, raw["sizing"], cluster)
    engines = _engines(check, raw.get("engines", list(DEFAULT_ENGINES)))
    baseline = check.boolean(raw.get("baseline", True), "baseline")
    workload = _workload(check, raw.get("workload"))
    exclude = _rules(check, raw.get("exclude"), "exclude")
    only = _rules(check, raw.get("only"), "only")
    store = check.text(raw.get("store", "results/"), "store")
    environment = _environment(check, raw.get("environment"))
    spark_conf = _spark_conf(check, raw.get("spark_conf"))
    if engines and workload:
        _engines_and_workload(check, engines, workload)
    if cluster is not None and rule is not None and cores:
        _shapes(check, cluster, rule, cores)
    if check.problems:
        raise check.error()
    assert cluster and manager and rule and engines is not None and workload and baseline is not None and store
    return Grid(
        path=path,
        name=str(name),
        manager=manager,
        cluster=cluster,
        rule=rule,
        cores_per_executor=tuple(cores),
        engines=tuple(engines),
        baseline=baseline,
        workload=workload,
        exclude=tuple(exclude),
        only=tuple(only),
        store=Path(store),
        environment=tuple(sorted(environment.items())),
        spark_conf=tuple(sorted(spark_conf.items())),
        hosts=tuple(hosts),
        ssh=tuple(sorted(ssh.items())),
        **paths,
        python_archive=archive,
        grid_hash=grid_hash(raw),
        warnings=tuple(check.warnings),
    )


def _engines_and_workload(check: _Checker, engines: list[str], workload: Workload) -> None:
    """One-model engines need data-parallel points; ``model.mllib_solver`` needs spark-mllib to matter."""
    for engine in [e for e in engines if e in ONE_MODEL_ENGINES]:
        if "data-parallel" not in workload.modes:
            check.fail(
                "engines",
                f"{engine!r} trains one model per measurement: add data-parallel to workload.mode "
                f"(got {list(workload.modes)})",
            )
    solver_set = any(param in MLLIB_ONLY_PARAMS for param, _ in workload.model_axes)
    if solver_set and "spark-mllib" not in engines:
        check.warn("workload.model.mllib_solver", f"only engine spark-mllib reads it, and engines are {engines}")


def _shapes(check: _Checker, cluster: Cluster, rule: str, cores: list[int]) -> None:
    """Every ``cores_per_executor`` gives at least one executor; more than 5 cores warns."""
    for index, cpe in enumerate(cores):
        key = _item_key("sizing.cores_per_executor", index, len(cores))
        try:
            size_executors(cluster, cpe, rule)
        except InfeasibleShape as error:
            check.fail(key, str(error))
        if cpe > MAX_RECOMMENDED_CORES_PER_EXECUTOR:
            check.warn(
                key,
                f"{cpe} cores per executor: more than {MAX_RECOMMENDED_CORES_PER_EXECUTOR} "
                "tends to hurt HDFS throughput (the report's guidance)",
            )


def _item_key(key: str, index: int, length: int) -> str:
    """``key[index]`` for an item of a list, plain ``key`` when the list has one item."""
    return f"{key}[{index}]" if length > 1 else key


def grid_hash(raw: dict[str, Any]) -> str:
    """A short, stable hash of what the grid asks for (its name and store excluded)."""
    asked = {k: v for k, v in raw.items() if k not in ("name", "store", "description")}
    text = json.dumps(asked, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _cluster(check: _Checker, value: Any) -> tuple[str | None, Cluster | None, list[str], dict[str, Any]]:
    section = check.mapping(value, "cluster")
    if section is None:
        return None, None, [], {}
    if value is None:
        check.fail("cluster", "is required (manager, nodes, cores_per_node, memory_per_node)")
        return None, None, [], {}
    check.known_keys(section, "cluster", CLUSTER_KEYS)
    manager = check.choice(section.get("manager", "local"), "cluster.manager", MANAGERS)
    listed = section.get("hosts")
    hosts = _hosts(check, listed) if "hosts" in section else []
    if manager == "standalone":
        for key, scheme in (("spark_master", "spark://"), ("dask_scheduler", "tcp://")):
            url = section.get(key)
            if not isinstance(url, str) or not url.startswith(scheme):
                check.fail(f"cluster.{key}", f"is required with manager: standalone, e.g. {scheme}HOST:PORT")
    if manager == "ssh" and "hosts" not in section:
        check.fail("cluster.hosts", "is required with manager: ssh (the first host runs the master)")
    ssh = check.mapping(section.get("ssh"), "cluster.ssh") or {}
    check.known_keys(ssh, "cluster.ssh", SSH_KEYS)
    _ssh_values(check, ssh)
    n_listed = len(listed) if isinstance(listed, list) and listed else None
    nodes = check.integer(section.get("nodes", n_listed), "cluster.nodes", maximum=MAX_NODES)
    if n_listed and nodes is not None and nodes != n_listed:
        check.fail("cluster.nodes", f"is {nodes} but cluster.hosts lists {n_listed} hosts")
    cores = check.integer(section.get("cores_per_node"), "cluster.cores_per_node", maximum=MAX_CORES_PER_NODE)
    memory = check.size_mib(section.get("memory_per_node"), "cluster.memory_per_node")
    if nodes is None or cores is None or memory is None:
        return manager, None, hosts, ssh
    return manager, Cluster(nodes=nodes, cores_per_node=cores, memory_per_node_mib=memory), hosts, ssh


def _hosts(check: _Checker, listed: Any) -> list[str]:
    """``cluster.hosts``: at most MAX_NODES host names or IP addresses."""
    if not isinstance(listed, list) or not listed or len(listed) > MAX_NODES:
        check.fail("cluster.hosts", f"must be a list of 1 to {MAX_NODES} host names, got {shown(listed)}")
        return []
    checked = [check.host(host, _item_key("cluster.hosts", i, len(listed))) for i, host in enumerate(listed)]
    return [host for host in checked if host is not None]


def _ssh_values(check: _Checker, ssh: dict[str, Any]) -> None:
    """Every ``cluster.ssh`` value, as ``ssh`` and asyncssh take it, with nothing a shell would interpret."""
    user_problem = _ssh_name_problem(ssh["user"], _SSH_USER_UNSAFE) if "user" in ssh else None
    if user_problem:
        check.fail(
            "cluster.ssh.user", f"must be a user name ({SSH_NAME_RULE}): {user_problem}, got {shown(ssh['user'])}"
        )
    if "port" in ssh:
        check.integer(ssh["port"], "cluster.ssh.port", maximum=MAX_PORT)
    for key in ("identity_file", "known_hosts"):
        if key in ssh:
            check.text(ssh[key], f"cluster.ssh.{key}", shell=True)
    for key in ("strict_host_key_checking", "dask_tls"):
        if key in ssh:
            check.boolean(ssh[key], f"cluster.ssh.{key}")
    if "connect_timeout_s" in ssh:
        check.number(ssh["connect_timeout_s"], "cluster.ssh.connect_timeout_s", 0.0, MAX_CONNECT_TIMEOUT_S)
    if "driver_host" in ssh:
        value = ssh["driver_host"]
        if not isinstance(value, str) or not is_host(value) or value in ("0.0.0.0", "::"):
            check.fail(
                "cluster.ssh.driver_host",
                "must be this machine's host name or IP address as the hosts reach it (not 0.0.0.0), "
                f"got {shown(value)}",
            )


def _cluster_paths(check: _Checker, value: Any) -> dict[str, str]:
    """``cluster.python``, ``java_home``, ``remote_dir`` (ssh), ``queue``, ``hadoop_conf_dir`` (yarn) and the
    standalone URLs: they reach command lines, on the hosts too, so none holds a shell metacharacter."""
    if not isinstance(value, dict):
        return {}
    paths = {}
    for key in CLUSTER_PATHS:
        if key in value:
            checked = check.text(value[key], f"cluster.{key}", shell=True)
            if checked is not None:
                paths[key] = checked
    return paths


def _python_archive(check: _Checker, value: Any, manager: str | None) -> str | None:
    """``cluster.python_archive``: an existing packed environment (``sweeper pack-env``), yarn only."""
    if not isinstance(value, dict) or "python_archive" not in value:
        return None
    archive = value["python_archive"]
    key = "cluster.python_archive"
    if not isinstance(archive, str) or not archive:
        check.fail(key, f"must be the path of a packed environment (sweeper pack-env OUT.tar.gz), got {shown(archive)}")
        return None
    if manager is not None and manager != "yarn":
        check.fail(key, f"only applies to manager: yarn, got manager: {manager}")
        return None
    if check.text(archive, key, shell=True) is None:
        return None
    path = Path(archive).expanduser()
    if not path.name.endswith(ARCHIVE_SUFFIXES):
        check.fail(key, f"{shown(archive)} must end with one of {', '.join(ARCHIVE_SUFFIXES)}")
        return None
    if _file_kind(path) != "file":
        check.fail(key, f"{shown(archive)} is not a file (make one with: sweeper pack-env {archive})")
        return None
    return str(path.resolve())


def _sizing(check: _Checker, value: Any, cluster: Cluster | None) -> tuple[str | None, list[int]]:
    section = check.mapping(value, "sizing")
    if section is None:
        return None, []
    check.known_keys(section, "sizing", SIZING_KEYS)
    rule = check.choice(section.get("rule", "report"), "sizing.rule", RULES)

    def cores_of_executor(value: Any, key: str) -> int | None:
        checked = check.integer(value, key, maximum=MAX_CORES_PER_NODE)
        if checked is not None and cluster is not None and checked > cluster.cores_per_node:
            check.fail(key, f"{checked} is more than the {cluster.cores_per_node} cores of a node")
            return None
        return checked

    cores, _ = check.axis(section.get("cores_per_executor", [5]), "sizing.cores_per_executor", cores_of_executor)
    return rule, cores


def _with_reserve(check: _Checker, section: dict[str, Any], cluster: Cluster) -> Cluster:
    reserve = check.mapping(section.get("reserve"), "sizing.reserve") or {}
    check.known_keys(reserve, "sizing.reserve", RESERVE_KEYS)
    cores = check.integer(reserve.get("cores", 1), "sizing.reserve.cores", minimum=0, maximum=MAX_CORES_PER_NODE)
    memory = reserve.get("memory", "1GiB")
    none_reserved = memory == "0" or (type(memory) is int and memory == 0)  # not False, 0.0 or "0.0"
    memory_mib = 0 if none_reserved else check.size_mib(memory, "sizing.reserve.memory")
    am = check.integer(
        section.get("application_master", 1), "sizing.application_master", minimum=0, maximum=MAX_APPLICATION_MASTER
    )
    if cores is not None and cores >= cluster.cores_per_node:
        check.fail("sizing.reserve.cores", f"{cores} leaves no core of the {cluster.cores_per_node} per node")
    if memory_mib is not None and memory_mib >= cluster.memory_per_node_mib:
        check.fail("sizing.reserve.memory", f"{shown(memory)} leaves no memory on a node")
    return Cluster(
        nodes=cluster.nodes,
        cores_per_node=cluster.cores_per_node,
        memory_per_node_mib=cluster.memory_per_node_mib,
        reserve_cores=cores if cores is not None else 1,
        reserve_memory_mib=memory_mib if memory_mib is not None else 1024,
        application_master=am if am is not None else 1,
    )


def _engines(check: _Checker, value: Any) -> list[str] | None:
    if not isinstance(value, list) or not value:
        check.fail("engines", f"must be a non-empty list among {', '.join(ENGINES)}, got {shown(value)}")
        return None
    engines, _ = check.axis(value, "engines", lambda one, key: check.choice(one, key, ENGINES))
    return engines


def _dataset(check: _Checker, value: Any) -> Dataset | None:
    path_key = "workload.dataset" if isinstance(value, str) else "workload.dataset.path"
    if isinstance(value, str):
        value = {"name": value} if value in DATASETS else {"name": "path", "path": value}
    section = check.mapping(value, "workload.dataset")
    if section is None:
        return None
    check.known_keys(section, "workload.dataset", DATASET_KEYS)
    name = section.get("name", "digits")
    path = section.get("path")
    if path is not None and check.text(path, path_key) is None:
        return None
    if name == "path":
        return _dataset_path(check, path)
    checked = check.choice(name, "workload.dataset.name", DATASETS)
    if checked is None:
        return None
    if path is not None and _file_kind(Path(path)) != "directory":
        check.fail("workload.dataset.path", f"{shown(path)} is not a directory of IDX files")
    return Dataset(name=checked, path=path)


def _dataset_path(check: _Checker, path: str | None) -> Dataset | None:
    """A dataset given as a path: a regular file or a directory (never a FIFO, device or socket)."""
    if path is None:
        check.fail("workload.dataset", "a dataset path is required")
        return None
    kind = _file_kind(Path(path))
    if kind is None:
        check.fail(
            "workload.dataset", f"{shown(path)} is neither a dataset ({', '.join(DATASETS)}) nor an existing file"
        )
        return None
    if kind not in ("file", "directory"):
        check.fail("workload.dataset", f"{shown(path)} must be a regular file or a directory, got a {kind}")
        return None
    return Dataset(name="path", path=path)


def _model(check: _Checker, value: Any) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    section = check.mapping(value, "workload.model")
    if section is None:
        return ()
    allowed = _mlp_params() + MLLIB_ONLY_PARAMS
    for owned in MODEL_KEYS_OWNED:
        if owned in section:
            check.fail(
                f"workload.model.{owned}", "is set by the sweeper (epochs set max_iter, trials set random_state)"
            )
    check.known_keys({k: v for k, v in section.items() if k not in MODEL_KEYS_OWNED}, "workload.model", allowed)
    merged = {**DEFAULT_MODEL, **{k: v for k, v in section.items() if k in allowed}}
    return tuple((param, tuple(_model_values(check, param, raw))) for param, raw in merged.items())


def _model_values(check: _Checker, param: str, raw: Any) -> list[Any]:
    """The values of one ``workload.model`` parameter (a list is an axis; a list of layer widths is one value)."""
    if param == "hidden_layer_sizes" and not (isinstance(raw, list) and raw and all(isinstance(x, list) for x in raw)):
        raw = [raw]
    values, _ = check.axis(raw, f"workload.model.{param}", _param_check(check, param))
    return values


def _param_check(check: _Checker, param: str) -> Callable[[Any, str], Any]:
    """How one value of a model parameter is checked (see :meth:`_Checker.axis`)."""
    if param == "hidden_layer_sizes":
        return lambda value, key: _layers(check, value, key)
    if param == "mllib_solver":
        return lambda value, key: check.choice(value, key, MLLIB_SOLVERS)
    return lambda value, key: _mlp_value(check, param, value, key)


def _layers(check: _Checker, option: Any, key: str) -> tuple[int, ...] | None:
    """One ``hidden_layer_sizes`` value: one width or a list of widths, each within MAX_LAYER_WIDTH."""
    layers = option if isinstance(option, (list, tuple)) else [option]
    if (
        not layers
        or len(layers) > MAX_LAYERS
        or not all(isinstance(n, int) and not isinstance(n, bool) and 0 < n <= MAX_LAYER_WIDTH for n in layers)
    ):
        check.fail(
            key,
            f"must be 1 to {MAX_LAYERS} layer widths from 1 to {MAX_LAYER_WIDTH}, such as [100, 50], "
            f"got {shown(option)}",
        )
        return None
    return tuple(layers)


def _mlp_value(check: _Checker, param: str, value: Any, key: str) -> Any:
    """``value`` if ``MLPClassifier`` takes it for ``param``; else None, the problem recorded.

    (No parameter a grid may set takes None.)
    """
    if value is not None and not _is_scalar(value):
        check.fail(key, f"must be a number, a string or a boolean, got {shown(value)}")
        return None
    from sklearn.neural_network import MLPClassifier

    try:
        MLPClassifier(**{param: value})._validate_params()
    except (ValueError, TypeError) as error:
        check.fail(key, str(error))
        return None
    return value


def _workload(check: _Checker, value: Any) -> Workload | None:
    section = check.mapping(value, "workload")
    if section is None:
        return None
    check.known_keys(section, "workload", WORKLOAD_KEYS)
    dataset = _dataset(check, section.get("dataset", "digits"))
    fractions, fractions_valid = check.axis(
        section.get("fraction", 1.0), "workload.fraction", lambda value, key: check.number(value, key, 0.0, 1.0)
    )
    epochs, epochs_valid = check.axis(
        section.get("epochs", [10, 100]),
        "workload.epochs",
        lambda value, key: check.integer(value, key, maximum=MAX_EPOCHS),
    )
    modes, modes_valid = check.axis(
        section.get("mode", "replicas"), "workload.mode", lambda value, key: check.choice(value, key, MODES)
    )
    mode = "search" if "search" in modes else (modes[0] if modes else None)
    settings = _workload_settings(check, section, modes)
    param_grid = _param_grid(check, section.get("param_grid"), mode)
    model = _model(check, section.get("model"))
    if dataset is None or settings is None or not (fractions_valid and epochs_valid and modes_valid):
        return None
    return Workload(
        dataset=dataset,
        fractions=tuple(fractions),
        model_axes=model,
        epochs=tuple(epochs),
        modes=tuple(modes),
        param_grid=param_grid,
        **settings,
    )


def _workload_settings(check: _Checker, section: dict[str, Any], modes: list[str]) -> dict[str, Any] | None:
    """The workload's bounded integers and numbers (WORKLOAD_INTEGERS, WORKLOAD_NUMBERS) and exact_epochs."""
    settings: dict[str, Any] = {}
    for name, (default, minimum, maximum) in WORKLOAD_INTEGERS.items():
        value = section.get(name, default)
        key = f"workload.{name}"
        unset = default is None and value is None
        settings[name] = None if unset else check.integer(value, key, minimum=minimum, maximum=maximum)
    for name, (default_number, low, high) in WORKLOAD_NUMBERS.items():
        settings[name] = check.number(section.get(name, default_number), f"workload.{name}", low, high)
    settings["exact_epochs"] = check.boolean(section.get("exact_epochs", False), "workload.exact_epochs")
    if settings["n_fits"] is not None and "replicas" not in modes:
        check.fail("workload.n_fits", f"only applies to mode replicas (modes {modes!r} have their own batch)")
    optional = [name for name, (default, _, _) in WORKLOAD_INTEGERS.items() if default is None]
    return None if any(v is None for k, v in settings.items() if k not in optional) else settings


def _param_grid(check: _Checker, value: Any, mode: str | None) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    if value is None:
        if mode == "search":
            check.fail("workload.param_grid", "is required with mode: search, e.g. {alpha: [0.0001, 0.001]}")
        return ()
    section = check.mapping(value, "workload.param_grid")
    if section is None:
        return ()
    if mode != "search":
        check.fail("workload.param_grid", f"only applies to mode: search, not {mode!r}")
    allowed = _mlp_params()
    check.known_keys(section, "workload.param_grid", allowed)
    grid = []
    for param, raw in section.items():
        if param not in allowed:
            continue
        values, _ = check.axis(raw, f"workload.param_grid.{param}", _param_check(check, param))
        grid.append((param, tuple(values)))
    return tuple(grid)


def _rules(check: _Checker, value: Any, key: str) -> list[dict[str, Any]]:
    """``exclude``/``only``: mappings of axis to a value or a list of values."""
    if value is None:
        return []
    if not isinstance(value, list):
        check.fail(key, f"must be a list of mappings such as [{{engine: spark, epochs: 10000}}], got {shown(value)}")
        return []
    allowed = RULE_AXES + tuple(f"model.{p}" for p in _mlp_params() + MLLIB_ONLY_PARAMS)
    rules = []
    for index, rule in enumerate(value):
        where = f"{key}[{index}]"
        if not isinstance(rule, dict) or not rule:
            check.fail(where, f"must be a non-empty mapping of axis: value, got {shown(rule)}")
            continue
        check.known_keys(rule, where, allowed)
        for axis, wanted in rule.items():
            items = wanted if isinstance(wanted, list) else [wanted]
            if not items or not all(item is None or _is_scalar(item) for item in items):
                check.fail(
                    f"{where}.{_key_name(axis)}",
                    f"must be a value (a number, string, boolean or null) or a list of values, got {shown(wanted)}",
                )
            elif axis == "engine":
                _rule_engines(check, items, f"{where}.engine")
        rules.append(rule)
    return rules


def _rule_engines(check: _Checker, items: list[Any], key: str) -> None:
    """The engines of an exclude/only rule: among ENGINES; the baseline is not one (``baseline`` switches it)."""
    for item in items:
        if item == BASELINE_ENGINE:
            check.fail(
                key,
                f"{BASELINE_ENGINE!r} is the baseline, not an engine of exclude/only rules (they select among "
                f"{', '.join(ENGINES)}); to measure without the baseline, use baseline: false",
            )
        elif item not in ENGINES:
            check.choice(item, key, ENGINES)


def _mlp_params() -> tuple[str, ...]:
    """The MLPClassifier parameters a grid may set."""
    from sklearn.neural_network import MLPClassifier

    return tuple(k for k in MLPClassifier().get_params() if k not in MODEL_KEYS_OWNED)


def _setting(check: _Checker, value: Any, key: str, refused: re.Pattern[str], refused_text: str) -> Any:
    """An environment or spark_conf value: a string, a finite number or a boolean (None: refused)."""
    if not _is_scalar(value, MAX_SETTING_CHARS):
        check.fail(
            key,
            f"must be a string of at most {MAX_SETTING_CHARS} characters, a finite number or a boolean, "
            f"got {shown(value)}",
        )
        return None
    found = refused.search(value) if isinstance(value, str) else None
    if found:
        check.fail(key, f"must not contain {refused_text}, got {found.group()!r} in {shown(value)}")
        return None
    return value


def _environment(check: _Checker, value: Any) -> dict[str, str]:
    section = check.mapping(value, "environment")
    if section is None:
        return {}
    environment = {}
    for name, setting in section.items():
        key = f"environment.{_key_name(name)}"
        if not isinstance(name, str) or not _ENV_NAME.fullmatch(name):
            check.fail(key, f"must be an environment variable name ([A-Za-z_][A-Za-z0-9_]*), got {shown(name)}")
            continue
        checked = _setting(check, setting, key, _NUL, "NUL characters")
        if checked is not None:
            environment[name] = str(checked)
    return environment


def _spark_conf(check: _Checker, value: Any) -> dict[str, str]:
    """Extra Spark properties for every Spark launch; those the plan sets are refused, whatever their case."""
    section = check.mapping(value, "spark_conf")
    if section is None:
        return {}
    owned = {name.casefold() for name in SPARK_CONF_OWNED}
    conf = {}
    for name, setting in section.items():
        key = f"spark_conf.{_key_name(name)}"
        if isinstance(name, str) and name.strip().casefold() in owned:
            check.fail(
                key,
                f"is set from the plan for every launch; spark_conf may not set {', '.join(SPARK_CONF_OWNED)} "
                "(compared ignoring case and surrounding spaces)",
            )
        elif not isinstance(name, str) or not _SPARK_PROPERTY.fullmatch(name):
            check.fail(
                key,
                "must be a Spark property name (starting with 'spark.', without spaces, '=' or control "
                f"characters), got {shown(name)}",
            )
        elif name.startswith(FIT_ENVIRONMENT_PREFIX) and name[len(FIT_ENVIRONMENT_PREFIX) :] in OBSERVED_VARIABLES:
            check.fail(
                key,
                f"{name[len(FIT_ENVIRONMENT_PREFIX) :]} is part of the fit environment every engine gets; "
                "set it with environment: (spark_conf would apply it to Spark only)",
            )
        else:
            checked = _setting(check, setting, key, CONTROL, "control characters (newlines, NUL, ...)")
            if checked is not None:
                conf[name] = str(checked).lower() if isinstance(checked, bool) else str(checked)
    return conf
