"""Load and validate a grid file (YAML) into a frozen :class:`Grid`.

Everything is checked before anything runs, and every problem in a file is reported together:
each message names the file, the key path, the bad value and what is allowed.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from sweeper.errors import UserError
from sweeper.sizing import RULES, Cluster, InfeasibleShape, size_executors
from sweeper.units import SIZE_FORMS, parse_size_mib

MANAGERS = ("local", "yarn", "ssh", "standalone")
ENGINES = ("spark", "dask", "spark-mllib")
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
    """Collects problems with their key paths, so one run reports them all."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.problems: list[str] = []
        self.warnings: list[str] = []

    def fail(self, key: str, message: str) -> None:
        self.problems.append(f"{self.path}: {key}: {message}")

    def warn(self, key: str, message: str) -> None:
        self.warnings.append(f"{self.path}: {key}: {message}")

    def mapping(self, value: Any, key: str) -> dict[str, Any] | None:
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.fail(key, f"must be a mapping, got {value!r}")
            return None
        return value

    def known_keys(self, value: dict[str, Any], key: str, allowed: tuple[str, ...]) -> None:
        for name in value:
            if name in allowed:
                continue
            where = f"{key}.{name}" if key else str(name)
            close = difflib.get_close_matches(str(name), allowed, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            self.fail(where, f"unknown key {name!r}{hint} (allowed: {', '.join(allowed)})")

    def integer(self, value: Any, key: str, minimum: int = 1) -> int | None:
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(key, f"must be an integer >= {minimum}, got {value!r}")
            return None
        if value < minimum:
            self.fail(key, f"must be an integer >= {minimum}, got {value!r}")
            return None
        return value

    def number(self, value: Any, key: str, low: float, high: float, open_low: bool = True) -> float | None:
        allowed = f"a number in {'(' if open_low else '['}{low}, {high}]"
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(key, f"must be {allowed}, got {value!r}")
            return None
        if value > high or value < low or (open_low and value == low):
            self.fail(key, f"must be {allowed}, got {value!r}")
            return None
        return float(value)

    def size_mib(self, value: Any, key: str) -> int | None:
        try:
            mib = parse_size_mib(value)
        except ValueError:
            self.fail(key, f"must be {SIZE_FORMS}, got {value!r}")
            return None
        if mib <= 0:
            self.fail(key, f"must be a positive size, got {value!r}")
            return None
        return mib

    def choice(self, value: Any, key: str, allowed: tuple[str, ...]) -> str | None:
        if value not in allowed:
            close = difflib.get_close_matches(str(value), allowed, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            self.fail(key, f"must be one of {', '.join(allowed)}, got {value!r}{hint}")
            return None
        return str(value)

    def boolean(self, value: Any, key: str) -> bool | None:
        if not isinstance(value, bool):
            self.fail(key, f"must be true or false, got {value!r}")
            return None
        return value

    def axis(self, value: Any, key: str) -> list[Any] | None:
        """A sweep axis: one value or a non-empty list of values."""
        if isinstance(value, list):
            if not value:
                self.fail(key, "must not be an empty list")
                return None
            return value
        return [value]


def load(path: str | Path) -> Grid:
    """Read, validate and normalise a grid file; raise :class:`UserError` listing all problems."""
    grid_path = Path(path)
    try:
        text = grid_path.read_text()
    except FileNotFoundError:
        raise UserError(f"{grid_path}: no such grid file") from None
    except OSError as error:
        raise UserError(f"{grid_path}: cannot read the grid file: {error.strerror}") from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "somewhere"
        problem = getattr(error, "problem", None) or str(error)
        raise UserError(f"{grid_path}: YAML syntax error at {where}: {problem}") from None
    return parse(raw, grid_path)


def parse(raw: Any, path: Path) -> Grid:
    """Validate an already-parsed YAML document."""
    check = _Checker(path)
    if not isinstance(raw, dict):
        raise UserError(f"{path}: the grid must be a YAML mapping with keys {', '.join(TOP_KEYS)}")
    check.known_keys(raw, "", TOP_KEYS)

    name = raw.get("name")
    if not isinstance(name, str) or not name.strip() or "/" in name:
        check.fail("name", f"must be a non-empty name without '/', got {name!r}")

    manager, cluster, hosts, ssh = _cluster(check, raw.get("cluster"))
    paths = _cluster_paths(check, raw.get("cluster"))
    archive = _python_archive(check, raw.get("cluster"), manager)
    rule, cores = _sizing(check, raw.get("sizing"), cluster)
    if cluster is not None and "sizing" in raw and isinstance(raw["sizing"], dict):
        cluster = _with_reserve(check, raw["sizing"], cluster)
    engines = _engines(check, raw.get("engines", list(ENGINES)))
    baseline = check.boolean(raw.get("baseline", True), "baseline")
    workload = _workload(check, raw.get("workload"))
    exclude = _rules(check, raw.get("exclude"), "exclude")
    only = _rules(check, raw.get("only"), "only")
    store = raw.get("store", "results/")
    if not isinstance(store, str) or not store:
        check.fail("store", f"must be a directory path, got {store!r}")
    environment = _environment(check, raw.get("environment"))
    spark_conf = _spark_conf(check, raw.get("spark_conf"))
    if engines and workload:
        for engine in set(engines) & set(ONE_MODEL_ENGINES):
            if "data-parallel" not in workload.modes:
                check.fail(
                    "engines",
                    f"{engine!r} trains one model per measurement: add data-parallel to workload.mode "
                    f"(got {list(workload.modes)})",
                )

    if cluster is not None and rule is not None and cores:
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
    if check.problems:
        raise UserError(check.problems)
    assert cluster and manager and rule and engines is not None and workload and baseline is not None
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
        store=Path(str(store)),
        environment=tuple(sorted(environment.items())),
        spark_conf=tuple(sorted(spark_conf.items())),
        hosts=tuple(hosts),
        ssh=tuple(sorted(ssh.items())),
        **paths,
        python_archive=archive,
        grid_hash=grid_hash(raw),
        warnings=tuple(check.warnings),
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
    hosts: list[str] = []
    if "hosts" in section:
        listed = section["hosts"]
        if not isinstance(listed, list) or not listed or not all(isinstance(h, str) and h for h in listed):
            check.fail("cluster.hosts", f"must be a non-empty list of host names, got {listed!r}")
        else:
            hosts = listed
    if manager == "standalone":
        for key, scheme in (("spark_master", "spark://"), ("dask_scheduler", "tcp://")):
            if not str(section.get(key, "")).startswith(scheme):
                check.fail(f"cluster.{key}", f"is required with manager: standalone, e.g. {scheme}HOST:PORT")
    if manager == "ssh" and not hosts:
        check.fail("cluster.hosts", "is required with manager: ssh (the first host runs the master)")
    ssh = check.mapping(section.get("ssh"), "cluster.ssh") or {}
    check.known_keys(ssh, "cluster.ssh", SSH_KEYS)
    _ssh_values(check, ssh)
    nodes = check.integer(section.get("nodes", len(hosts) or None), "cluster.nodes")
    if hosts and nodes is not None and nodes != len(hosts):
        check.fail("cluster.nodes", f"is {nodes} but cluster.hosts lists {len(hosts)} hosts")
    cores = check.integer(section.get("cores_per_node"), "cluster.cores_per_node")
    memory = check.size_mib(section.get("memory_per_node"), "cluster.memory_per_node")
    if nodes is None or cores is None or memory is None:
        return manager, None, hosts, ssh
    return manager, Cluster(nodes=nodes, cores_per_node=cores, memory_per_node_mib=memory), hosts, ssh


def _ssh_values(check: _Checker, ssh: dict[str, Any]) -> None:
    """``cluster.ssh.dask_tls`` is true or false; ``cluster.ssh.driver_host`` a host name or address."""
    if "dask_tls" in ssh:
        check.boolean(ssh["dask_tls"], "cluster.ssh.dask_tls")
    if "driver_host" in ssh:
        value = ssh["driver_host"]
        if not isinstance(value, str) or not value.strip() or any(c.isspace() for c in value) or value == "0.0.0.0":
            check.fail(
                "cluster.ssh.driver_host",
                f"must be this machine's host name or address as the hosts reach it (not 0.0.0.0), got {value!r}",
            )


def _cluster_paths(check: _Checker, value: Any) -> dict[str, str]:
    """``cluster.python``, ``java_home``, ``remote_dir`` (ssh) and ``queue``, ``hadoop_conf_dir`` (yarn)."""
    if not isinstance(value, dict):
        return {}
    paths = {}
    for key in CLUSTER_PATHS:
        if key in value:
            if not isinstance(value[key], str) or not value[key]:
                check.fail(f"cluster.{key}", f"must be a non-empty string, got {value[key]!r}")
            else:
                paths[key] = value[key]
    return paths


def _python_archive(check: _Checker, value: Any, manager: str | None) -> str | None:
    """``cluster.python_archive``: an existing packed environment (``sweeper pack-env``), yarn only."""
    if not isinstance(value, dict) or "python_archive" not in value:
        return None
    archive = value["python_archive"]
    key = "cluster.python_archive"
    if not isinstance(archive, str) or not archive:
        check.fail(key, f"must be the path of a packed environment (sweeper pack-env OUT.tar.gz), got {archive!r}")
        return None
    if manager is not None and manager != "yarn":
        check.fail(key, f"only applies to manager: yarn, got manager: {manager}")
        return None
    path = Path(archive).expanduser()
    if not path.name.endswith(ARCHIVE_SUFFIXES):
        check.fail(key, f"{archive!r} must end with one of {', '.join(ARCHIVE_SUFFIXES)}")
        return None
    if not path.is_file():
        check.fail(key, f"{archive!r} is not a file (make one with: sweeper pack-env {archive})")
        return None
    return str(path.resolve())


def _sizing(check: _Checker, value: Any, cluster: Cluster | None) -> tuple[str | None, list[int]]:
    section = check.mapping(value, "sizing")
    if section is None:
        return None, []
    check.known_keys(section, "sizing", SIZING_KEYS)
    rule = check.choice(section.get("rule", "report"), "sizing.rule", RULES)
    listed = check.axis(section.get("cores_per_executor", [5]), "sizing.cores_per_executor") or []
    cores = []
    for index, cpe in enumerate(listed):
        key = _item_key("sizing.cores_per_executor", index, len(listed))
        checked = check.integer(cpe, key)
        if checked is None:
            continue
        if cluster is not None and checked > cluster.cores_per_node:
            check.fail(key, f"{checked} is more than the {cluster.cores_per_node} cores of a node")
            continue
        cores.append(checked)
    if len(set(cores)) != len(cores):
        check.fail("sizing.cores_per_executor", f"lists a value twice: {listed!r}")
    return rule, cores


def _with_reserve(check: _Checker, section: dict[str, Any], cluster: Cluster) -> Cluster:
    reserve = check.mapping(section.get("reserve"), "sizing.reserve") or {}
    check.known_keys(reserve, "sizing.reserve", RESERVE_KEYS)
    cores = check.integer(reserve.get("cores", 1), "sizing.reserve.cores", minimum=0)
    memory = reserve.get("memory", "1GiB")
    memory_mib = 0 if memory in (0, "0") else check.size_mib(memory, "sizing.reserve.memory")
    am = check.integer(section.get("application_master", 1), "sizing.application_master", minimum=0)
    if cores is not None and cores >= cluster.cores_per_node:
        check.fail("sizing.reserve.cores", f"{cores} leaves no core of the {cluster.cores_per_node} per node")
    if memory_mib is not None and memory_mib >= cluster.memory_per_node_mib:
        check.fail("sizing.reserve.memory", f"{memory!r} leaves no memory on a node")
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
        check.fail("engines", f"must be a non-empty list among {', '.join(ENGINES)}, got {value!r}")
        return None
    engines = [check.choice(e, f"engines[{i}]", ENGINES) for i, e in enumerate(value)]
    if len(set(value)) != len(value):
        check.fail("engines", f"lists an engine twice: {value!r}")
    return [e for e in engines if e]


def _dataset(check: _Checker, value: Any) -> Dataset | None:
    if isinstance(value, str):
        value = {"name": value} if value in DATASETS else {"name": "path", "path": value}
    section = check.mapping(value, "workload.dataset")
    if section is None:
        return None
    check.known_keys(section, "workload.dataset", DATASET_KEYS)
    name = section.get("name", "digits")
    path = section.get("path")
    if path is not None and not isinstance(path, str):
        check.fail("workload.dataset.path", f"must be a path, got {path!r}")
        return None
    if name == "path":
        if path is None:
            check.fail("workload.dataset", "a dataset path is required")
            return None
        if not Path(path).exists():
            check.fail(
                "workload.dataset", f"{path!r} is neither a dataset ({', '.join(DATASETS)}) nor an existing file"
            )
            return None
        return Dataset(name="path", path=path)
    checked = check.choice(name, "workload.dataset.name", DATASETS)
    if checked is None:
        return None
    if path is not None and not Path(path).is_dir():
        check.fail("workload.dataset.path", f"{path!r} is not a directory of IDX files")
    return Dataset(name=checked, path=path)


def _model(check: _Checker, value: Any) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    section = check.mapping(value, "workload.model")
    if section is None:
        return ()
    from sklearn.neural_network import MLPClassifier

    allowed = _mlp_params()
    for owned in MODEL_KEYS_OWNED:
        if owned in section:
            check.fail(
                f"workload.model.{owned}", "is set by the sweeper (epochs set max_iter, trials set random_state)"
            )
    check.known_keys({k: v for k, v in section.items() if k not in MODEL_KEYS_OWNED}, "workload.model", allowed)
    merged = {**DEFAULT_MODEL, **{k: v for k, v in section.items() if k in allowed}}
    axes = []
    for param, raw in merged.items():
        key = f"workload.model.{param}"
        if param == "hidden_layer_sizes":
            options = raw if isinstance(raw, list) and raw and all(isinstance(x, list) for x in raw) else [raw]
            values = []
            for option in options:
                layers = option if isinstance(option, (list, tuple)) else [option]
                if not layers or not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in layers):
                    check.fail(key, f"must be positive layer widths such as [100, 50], got {option!r}")
                    continue
                values.append(tuple(layers))
        else:
            values = check.axis(raw, key) or []
        for one in values:
            try:
                MLPClassifier(**{param: one})._validate_params()
            except (ValueError, TypeError) as error:
                check.fail(key, str(error))
        axes.append((param, tuple(values)))
    return tuple(axes)


def _workload(check: _Checker, value: Any) -> Workload | None:
    section = check.mapping(value, "workload")
    if section is None:
        return None
    check.known_keys(section, "workload", WORKLOAD_KEYS)
    dataset = _dataset(check, section.get("dataset", "digits"))
    fractions = [
        check.number(f, "workload.fraction", 0.0, 1.0)
        for f in check.axis(section.get("fraction", 1.0), "workload.fraction") or []
    ]
    epochs = [
        check.integer(e, "workload.epochs")
        for e in check.axis(section.get("epochs", [10, 100]), "workload.epochs") or []
    ]
    trials = check.integer(section.get("trials", 3), "workload.trials")
    listed_modes = check.axis(section.get("mode", "replicas"), "workload.mode") or []
    modes = [
        check.choice(m, _item_key("workload.mode", i, len(listed_modes)), MODES) for i, m in enumerate(listed_modes)
    ]
    if len(set(listed_modes)) != len(listed_modes):
        check.fail("workload.mode", f"lists a mode twice: {listed_modes!r}")
    mode = "search" if "search" in modes else (modes[0] if modes else None)
    folds = check.integer(section.get("folds", 3), "workload.folds", minimum=2)
    param_grid = _param_grid(check, section.get("param_grid"), mode)
    n_fits = section.get("n_fits")
    if n_fits is not None:
        n_fits = check.integer(n_fits, "workload.n_fits")
        if "replicas" not in modes and n_fits is not None:
            check.fail("workload.n_fits", f"only applies to mode replicas (modes {modes!r} have their own batch)")
    local_epochs = check.integer(section.get("local_epochs", 1), "workload.local_epochs")
    shards = section.get("shards")
    if shards is not None:
        shards = check.integer(shards, "workload.shards")
    exact = check.boolean(section.get("exact_epochs", False), "workload.exact_epochs")
    threads = check.integer(section.get("threads_per_fit", 1), "workload.threads_per_fit")
    timeout_s = check.number(section.get("timeout_s", 3600), "workload.timeout_s", 0.0, 7 * 86400.0)
    start_timeout_s = check.number(section.get("start_timeout_s", 180), "workload.start_timeout_s", 0.0, 86400.0)
    seed = check.integer(section.get("seed", 0), "workload.seed", minimum=0)
    test_size = check.number(section.get("test_size", 0.25), "workload.test_size", 0.0, 0.9)
    model = _model(check, section.get("model"))
    if (
        None in (dataset, trials, folds, exact, threads, timeout_s, start_timeout_s, seed, test_size, local_epochs)
        or None in modes
        or None in fractions
        or None in epochs
    ):
        return None
    if len(set(epochs)) != len(epochs):
        check.fail("workload.epochs", f"lists a value twice: {epochs!r}")
    assert dataset is not None and trials is not None and folds is not None and local_epochs is not None
    assert exact is not None and threads is not None and timeout_s is not None and seed is not None
    assert test_size is not None and start_timeout_s is not None
    return Workload(
        dataset=dataset,
        fractions=tuple(f for f in fractions if f is not None),
        model_axes=model,
        epochs=tuple(e for e in epochs if e is not None),
        trials=trials,
        modes=tuple(m for m in modes if m is not None),
        folds=folds,
        param_grid=param_grid,
        n_fits=n_fits,
        local_epochs=local_epochs,
        shards=shards,
        exact_epochs=exact,
        threads_per_fit=threads,
        timeout_s=timeout_s,
        start_timeout_s=start_timeout_s,
        seed=seed,
        test_size=test_size,
    )


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
    from sklearn.neural_network import MLPClassifier

    allowed = _mlp_params()
    check.known_keys(section, "workload.param_grid", allowed)
    grid = []
    for param, raw in section.items():
        if param not in allowed:
            continue
        values = check.axis(raw, f"workload.param_grid.{param}") or []
        if param == "hidden_layer_sizes":
            values = [tuple(v) if isinstance(v, list) else (v,) for v in values]
        for one in values:
            try:
                MLPClassifier(**{param: one})._validate_params()
            except (ValueError, TypeError) as error:
                check.fail(f"workload.param_grid.{param}", str(error))
        grid.append((param, tuple(values)))
    return tuple(grid)


def _rules(check: _Checker, value: Any, key: str) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        check.fail(key, f"must be a list of mappings such as [{{engine: spark, epochs: 10000}}], got {value!r}")
        return []
    rules = []
    for index, rule in enumerate(value):
        where = f"{key}[{index}]"
        if not isinstance(rule, dict) or not rule:
            check.fail(where, f"must be a non-empty mapping of axis: value, got {rule!r}")
            continue
        allowed = RULE_AXES + tuple(f"model.{p}" for p in _mlp_params())
        check.known_keys(rule, where, allowed)
        rules.append(rule)
    return rules


def _mlp_params() -> tuple[str, ...]:
    """The MLPClassifier parameters a grid may set."""
    from sklearn.neural_network import MLPClassifier

    return tuple(k for k in MLPClassifier().get_params() if k not in MODEL_KEYS_OWNED)


def _environment(check: _Checker, value: Any) -> dict[str, str]:
    section = check.mapping(value, "environment")
    if section is None:
        return {}
    environment = {}
    for name, setting in section.items():
        if not isinstance(name, str) or not name.replace("_", "").isalnum():
            check.fail(f"environment.{name}", "must be an environment variable name")
        elif isinstance(setting, (dict, list)) or setting is None:
            check.fail(f"environment.{name}", f"must be a string or number, got {setting!r}")
        else:
            environment[name] = str(setting)
    return environment


def _spark_conf(check: _Checker, value: Any) -> dict[str, str]:
    """Extra Spark properties for every Spark launch; those the plan sets are refused."""
    section = check.mapping(value, "spark_conf")
    if section is None:
        return {}
    conf = {}
    for name, setting in section.items():
        key = f"spark_conf.{name}"
        if not isinstance(name, str) or not name.startswith("spark."):
            check.fail(key, "must be a Spark property (a name starting with 'spark.')")
        elif name in SPARK_CONF_OWNED:
            check.fail(
                key, f"is set from the plan for every launch; spark_conf may not set {', '.join(SPARK_CONF_OWNED)}"
            )
        elif isinstance(setting, (dict, list)) or setting is None:
            check.fail(key, f"must be a string, number or boolean, got {setting!r}")
        else:
            conf[name] = str(setting).lower() if isinstance(setting, bool) else str(setting)
    return conf
