"""The checks the schema cannot declare: each section's own rules, and the rules across sections."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from sweeper.config import spark_ml, work
from sweeper.config.estimator import EstimatorProblem, prototype, steps_of
from sweeper.config.grid import (
    AUTO,
    CLASSIFIER,
    DEFAULT_DATASET,
    FULL_GRID,
    HALVING,
    RACE,
    RACE_MIN_TRIALS,
    AdaptiveTrials,
    Dataset,
    Estimator,
    Search,
    Workload,
)
from sweeper.config.managers import SSH, STANDALONE, owners
from sweeper.config.model import MLLIB_ONLY_PARAMS, model_axes, model_params, read_param_grid
from sweeper.config.names import SSH_NAME_RULE, SSH_USER_UNSAFE, is_host, ssh_name_problem
from sweeper.config.schema import Problems, file_kind, is_scalar, item_key, key_name
from sweeper.config.sections import (
    ARCHIVE_SUFFIXES,
    CLUSTER,
    CLUSTER_PATHS,
    DATASET,
    DATASETS,
    FIT_ENVIRONMENT_PREFIX,
    MAX_NODES,
    MAX_RECOMMENDED_CORES_PER_EXECUTOR,
    MAX_SETTING_CHARS,
    REGRESSION_DATASETS,
    RESERVE,
    RULE_AXES,
    SEARCH,
    SIZING,
    SPARK_CONF_OWNED,
    WORKLOAD,
    WORKLOAD_SETTINGS,
)
from sweeper.config.sizing import Cluster, InfeasibleShape, size_executors
from sweeper.names import BASELINE_ENGINE, DATA_PARALLEL, ENGINES, OBSERVED_VARIABLES, ONE_MODEL_ENGINES
from sweeper.text import CONTROL, CONTROL_CHARS, shown

_NUL = re.compile("\x00")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# What interprets a variable that `environment:` may not set: through it a grid could run commands or code, or
# change what runs, as the user running the sweep (spark-submit and Hadoop's clients are shell scripts and JVMs).
_INTERPRETED = {
    **dict.fromkeys(("BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS4", "PROMPT_COMMAND", "IFS", "CDPATH",
                     "GLOBIGNORE", "PATH", "HOME", "SHELL"), "the shell"),
    **dict.fromkeys(("GLIBC_TUNABLES", "GCONV_PATH", "LOCPATH", "NLSPATH", "HOSTALIASES", "RESOLV_HOST_CONF"),
                    "the C library"),
    **dict.fromkeys(("JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "JAVA_HOME", "JAVA_OPTS", "CLASSPATH"),
                    "the JVM"),
    **dict.fromkeys(("PERL5OPT", "PERL5LIB", "PERLLIB", "RUBYOPT", "RUBYLIB", "NODE_OPTIONS"), "an interpreter"),
}  # fmt: skip
_INTERPRETED_PREFIXES = {
    "LD_": "the dynamic loader",
    "DYLD_": "the dynamic loader",
    "BASH_FUNC_": "the shell",
    "PYTHON": "Python",  # PYTHONSTARTUP, PYTHONPATH, ...; PYTHONHASHSEED (a seed) is allowed
    "SPARK_": "Spark's launcher",
    "PYSPARK_": "Spark's launcher",
    "HADOOP_": "Hadoop's launcher",
    "YARN_": "Hadoop's launcher",
    "HDFS_": "Hadoop's launcher",
    "DASK_": "Dask (its configuration can preload code)",
    "SSH_": "ssh",
}
_FIT_VARIABLES = {"PYTHONHASHSEED"}


def _interpreted_by(name: str) -> str | None:
    """What interprets environment variable ``name`` beyond the fits (a shell, the loader, ...), or None."""
    if name in _FIT_VARIABLES:
        return None
    upper = name.upper()
    return _INTERPRETED.get(upper) or next(
        (who for p, who in _INTERPRETED_PREFIXES.items() if upper.startswith(p)), None
    )


_SPARK_PROPERTY = re.compile(rf"spark\.[^\s={CONTROL_CHARS}]+")


def engines_and_workload(check: Problems, engines: list[str], workload: Workload) -> None:
    """One-model engines need data-parallel points (another estimator than MLPClassifier: one Spark ML maps,
    :func:`sweeper.config.spark_ml.check_workload`), which only they train of an estimator other than
    MLPClassifier; ``model.mllib_solver`` needs spark-mllib to matter."""
    one_model = [e for e in engines if e in ONE_MODEL_ENGINES]
    estimator = workload.estimator
    mapped = spark_ml.counterpart(estimator.steps)  # None: MLPClassifier's own, or refused by _estimator_rules
    if mapped is not None and DATA_PARALLEL in workload.modes and not one_model:
        check.fail(
            "workload.mode",
            f"{_NOT_AVERAGED.format(name=estimator.steps[-1])}, or add spark-mllib to engines (it trains Spark ML's "
            f"{mapped.spark_class} across the launch)",
        )
    for engine in one_model:
        if not estimator.is_mlp:
            spark_ml.check_workload(check, engine, workload)
        if DATA_PARALLEL not in workload.modes:
            check.fail(
                "engines",
                f"{engine!r} trains one model per measurement: add data-parallel to workload.mode "
                f"(got {list(workload.modes)})",
            )
    solver_set = any(param in MLLIB_ONLY_PARAMS for param, _ in workload.model_axes)
    if solver_set and "spark-mllib" not in engines:
        check.warn("workload.model.mllib_solver", f"only engine spark-mllib reads it, and engines are {engines}")


def shapes(check: Problems, cluster: Cluster, rule: str, cores: list[int]) -> None:
    """Every ``cores_per_executor`` gives at least one executor; more than 5 cores warns."""
    for index, cpe in enumerate(cores):
        key = item_key("sizing.cores_per_executor", index, len(cores))
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


def cluster(check: Problems, value: Any) -> tuple[str | None, Cluster | None, list[str], dict[str, Any]]:
    """``cluster``: the manager, the nodes' shape (None when refused), the hosts and the ``ssh`` settings."""
    section = check.mapping(value, "cluster")
    if section is None:
        return None, None, [], {}
    if value is None:
        check.fail("cluster", "is required (manager, nodes, cores_per_node, memory_per_node)")
        return None, None, [], {}
    check.known_keys(section, CLUSTER.key, CLUSTER.keys)
    manager = CLUSTER.field("manager").read(section, CLUSTER.key, check)
    listed = section.get("hosts")
    hosts = _hosts(check, listed) if "hosts" in section else []
    if manager in owners("hosts") and "hosts" not in section:
        check.fail("cluster.hosts", f"is required with manager: {manager} (the first host runs the master)")
    ssh = SSH.open(section.get("ssh"), check) or {}
    _ssh_values(check, ssh)
    n_listed = len(listed) if isinstance(listed, list) and listed else None
    nodes = CLUSTER.field("nodes").kind.check(section.get("nodes", n_listed), "cluster.nodes", check)
    if n_listed and nodes is not None and nodes != n_listed:
        check.fail("cluster.nodes", f"is {nodes} but cluster.hosts lists {n_listed} hosts")
    cores = CLUSTER.field("cores_per_node").read(section, CLUSTER.key, check)
    memory = CLUSTER.field("memory_per_node").read(section, CLUSTER.key, check)
    if nodes is None or cores is None or memory is None:
        return manager, None, hosts, ssh
    return manager, Cluster(nodes=nodes, cores_per_node=cores, memory_per_node_mib=memory), hosts, ssh


def _hosts(check: Problems, listed: Any) -> list[str]:
    """``cluster.hosts``: at most MAX_NODES host names or IP addresses."""
    if not isinstance(listed, list) or not listed or len(listed) > MAX_NODES:
        check.fail("cluster.hosts", f"must be a list of 1 to {MAX_NODES} host names, got {shown(listed)}")
        return []
    checked = [check.host(host, item_key("cluster.hosts", i, len(listed))) for i, host in enumerate(listed)]
    return [host for host in checked if host is not None]


def _ssh_values(check: Problems, ssh: dict[str, Any]) -> None:
    """Every ``cluster.ssh`` value, as ``ssh`` and asyncssh take it, with nothing a shell would interpret."""
    user_problem = ssh_name_problem(ssh["user"], SSH_USER_UNSAFE) if "user" in ssh else None
    if user_problem:
        check.fail(
            "cluster.ssh.user", f"must be a user name ({SSH_NAME_RULE}): {user_problem}, got {shown(ssh['user'])}"
        )
    given = ("port", "identity_file", "known_hosts", "strict_host_key_checking", "dask_tls", "connect_timeout_s")
    SSH.read(ssh, check, tuple(name for name in given if name in ssh))
    if "driver_host" in ssh:
        value = ssh["driver_host"]
        if not isinstance(value, str) or not is_host(value) or value in ("0.0.0.0", "::"):
            check.fail(
                "cluster.ssh.driver_host",
                "must be this machine's host name or IP address as the hosts reach it (not 0.0.0.0), "
                f"got {shown(value)}",
            )


# manager standalone: the running cluster each engine connects to, and how its address starts
STANDALONE_ADDRESSES = {
    "spark": ("spark_master", "spark://HOST:PORT"),
    "spark-mllib": ("spark_master", "spark://HOST:PORT"),
    "dask": ("dask_scheduler", "tcp://HOST:PORT"),
    "ray": ("ray_address", "HOST:PORT"),
}


def standalone_addresses(check: Problems, value: Any, manager: str | None, engines: list[str]) -> None:
    """With manager standalone, the address of the cluster of every engine listed (and only those)."""
    if manager != STANDALONE or not isinstance(value, dict):
        return
    for key, form in dict(STANDALONE_ADDRESSES[engine] for engine in engines).items():
        address = value.get(key)
        scheme = form.removesuffix("HOST:PORT")
        well_formed = isinstance(address, str) and address.startswith(scheme) and address.rpartition(":")[2].isdigit()
        if not well_formed or (not scheme and "://" in str(address)):
            listed = [engine for engine in engines if STANDALONE_ADDRESSES[engine][0] == key]
            check.fail(
                f"cluster.{key}",
                f"is required with manager: standalone and engine {', '.join(listed)}: {form}, got {shown(address)}",
            )


def cluster_paths(check: Problems, value: Any) -> dict[str, str]:
    """``cluster.python``, ``java_home``, ``remote_dir`` (ssh), ``queue``, ``hadoop_conf_dir`` (yarn) and the
    standalone URLs: they reach command lines, on the hosts too, so none holds a shell metacharacter."""
    if not isinstance(value, dict):
        return {}
    checked = CLUSTER.read(value, check, tuple(name for name in CLUSTER_PATHS if name in value))
    return {name: path for name, path in checked.items() if path is not None}


def python_archive(check: Problems, value: Any, manager: str | None) -> str | None:
    """``cluster.python_archive``: an existing packed environment (``sweeper pack-env``), yarn only."""
    if not isinstance(value, dict) or "python_archive" not in value:
        return None
    archive = value["python_archive"]
    key = "cluster.python_archive"
    if not isinstance(archive, str) or not archive:
        check.fail(key, f"must be the path of a packed environment (sweeper pack-env OUT.tar.gz), got {shown(archive)}")
        return None
    if manager is not None and manager not in owners("python_archive"):
        check.fail(key, f"only applies to manager: {', '.join(owners('python_archive'))}, got manager: {manager}")
        return None
    if check.text(archive, key, shell=True) is None:
        return None
    path = Path(archive).expanduser()
    if not path.name.endswith(ARCHIVE_SUFFIXES):
        check.fail(key, f"{shown(archive)} must end with one of {', '.join(ARCHIVE_SUFFIXES)}")
        return None
    if file_kind(path) != "file":
        check.fail(key, f"{shown(archive)} is not a file (make one with: sweeper pack-env {archive})")
        return None
    return str(path.resolve())


def sizing(check: Problems, value: Any, cluster: Cluster | None) -> tuple[str | None, list[int]]:
    """``sizing``: the rule and the valid ``cores_per_executor`` values, each at most a node's cores."""
    section = SIZING.open(value, check)
    if section is None:
        return None, []
    rule = SIZING.field("rule").read(section, SIZING.key, check)
    field = SIZING.field("cores_per_executor")

    given = field.name in section

    def cores_of_executor(value: Any, key: str) -> int | None:
        checked = field.kind.check(value, key, check)
        if checked is not None and cluster is not None and checked > cluster.cores_per_node:
            if given:
                check.fail(key, f"{checked} is more than the {cluster.cores_per_node} cores of a node")
            elif not check.unknown_keys:  # a typo'd key already says what is wrong: not its default too
                check.fail(
                    key, f"is not set, and its default {checked} is more than the {cluster.cores_per_node} cores "
                    f"of a node: set it (at most {cluster.cores_per_node})",
                )  # fmt: skip
            return None
        return checked

    cores, _ = check.axis(section.get(field.name, field.default), "sizing.cores_per_executor", cores_of_executor)
    return rule, cores


def with_reserve(check: Problems, section: dict[str, Any], cluster: Cluster) -> Cluster:
    """``cluster`` with ``sizing.reserve`` and ``application_master``; a reserve must leave room on a node."""
    reserve = RESERVE.open(section.get("reserve"), check) or {}
    cores = RESERVE.field("cores").read(reserve, RESERVE.key, check)
    memory = reserve.get("memory", RESERVE.field("memory").default)
    none_reserved = memory == "0" or (type(memory) is int and memory == 0)  # not False, 0.0 or "0.0"
    memory_mib = 0 if none_reserved else check.size_mib(memory, "sizing.reserve.memory")
    am = SIZING.field("application_master").read(section, SIZING.key, check)
    if cores is not None and cores >= cluster.cores_per_node:
        check.fail("sizing.reserve.cores", f"{cores} leaves no core of the {cluster.cores_per_node} per node")
    if memory_mib is not None and memory_mib >= cluster.memory_per_node_mib:
        check.fail("sizing.reserve.memory", f"{shown(memory)} leaves no memory on a node")
    given = {"reserve_cores": cores, "reserve_memory_mib": memory_mib, "application_master": am}
    return replace(cluster, **{name: value for name, value in given.items() if value is not None})  # refused: problems


def engines(check: Problems, value: Any) -> list[str] | None:
    """``engines``: a non-empty list of ENGINES, none twice (None when refused)."""
    if not isinstance(value, list) or not value:
        check.fail("engines", f"must be a non-empty list among {', '.join(ENGINES)}, got {shown(value)}")
        return None
    engines, _ = check.axis(value, "engines", lambda one, key: check.choice(one, key, ENGINES))
    return engines


def _dataset(check: Problems, value: Any) -> Dataset | None:
    path_key = "workload.dataset" if isinstance(value, str) else "workload.dataset.path"
    if isinstance(value, str):
        value = {"name": value} if value in DATASETS else {"name": "path", "path": value}
    section = DATASET.open(value, check)
    if section is None:
        return None
    name = section.get("name", DEFAULT_DATASET)
    path = section.get("path")
    if path is not None and check.text(path, path_key) is None:
        return None
    if name == "path":
        return _dataset_path(check, path)
    checked = check.choice(name, "workload.dataset.name", DATASETS)
    if checked is None:
        return None
    if path is not None and file_kind(Path(path)) != "directory":
        check.fail("workload.dataset.path", f"{shown(path)} is not a directory of IDX files")
    return Dataset(name=checked, path=path)


def _dataset_path(check: Problems, path: str | None) -> Dataset | None:
    """A dataset given as a path: a regular file or a directory (never a FIFO, device or socket)."""
    if path is None:
        check.fail("workload.dataset", "a dataset path is required")
        return None
    kind = file_kind(Path(path))
    if kind is None:
        check.fail(
            "workload.dataset", f"{shown(path)} is neither a dataset ({', '.join(DATASETS)}) nor an existing file"
        )
        return None
    if kind not in ("file", "directory"):
        check.fail("workload.dataset", f"{shown(path)} must be a regular file or a directory, got a {kind}")
        return None
    return Dataset(name="path", path=path)


def workload(check: Problems, value: Any) -> Workload | None:
    """``workload``: what every launch trains, with its axes (None when refused)."""
    section = WORKLOAD.open(value, check)
    if section is None:
        return None
    dataset = _dataset(check, section.get("dataset", WORKLOAD.field("dataset").default))
    chosen = work.estimator(check, section)
    steps, estimated, kind = chosen or ((), None, None)
    axes = {"fraction": WORKLOAD.field("fraction").read_axis(section, WORKLOAD.key, check)}
    work_parameter, epochs, epochs_valid = (
        work.work_axis(check, section, steps, estimated) if chosen else (None, [], False)
    )
    axes["epochs"] = (epochs, epochs_valid)
    axes["mode"] = WORKLOAD.field("mode").read_axis(section, WORKLOAD.key, check)
    modes = axes["mode"][0]
    mode = "search" if "search" in modes else (modes[0] if modes else None)
    settings = _workload_settings(check, section, modes)
    param_grid = read_param_grid(check, section.get("param_grid"), mode, estimated) if chosen else ()
    model = model_axes(check, section.get("model"), estimated) if chosen else ()
    scorer = work.scoring(check, section.get("scoring"), kind) if kind else None
    trials = WORKLOAD.field("trials").read(section, WORKLOAD.key, check)
    if chosen:
        _estimator_rules(check, section, steps, modes, work_parameter, {"model": model, "param_grid": param_grid})
    if dataset is not None and dataset.name in REGRESSION_DATASETS and kind == CLASSIFIER:
        check.fail(
            "workload.dataset",
            f"{dataset.name} is a regression set (a continuous target): name a regressor in workload.estimator, "
            "such as sklearn.linear_model.Ridge or sklearn.ensemble.RandomForestRegressor",
        )
    if dataset is None or settings is None or trials is None or not all(valid for _, valid in axes.values()):
        return None
    if kind is None or scorer is None:
        return None
    adaptive = trials if isinstance(trials, AdaptiveTrials) else None
    return Workload(
        dataset=dataset,
        fractions=tuple(axes["fraction"][0]),
        model_axes=model,
        epochs=tuple(axes["epochs"][0]),
        trials=adaptive.max_trials if adaptive else trials,
        adaptive=adaptive,
        modes=tuple(modes),
        param_grid=param_grid,
        estimator=Estimator(steps=steps, kind=kind, work_parameter=work_parameter, scoring=scorer),
        **settings,
    )


_NOT_AVERAGED = (
    "data-parallel averages the weights of MLPClassifier only (its coefs_ and intercepts_); {name} has none to "
    "average: use replicas, cv or search"
)


def _estimator_rules(
    check: Problems,
    section: dict[str, Any],
    steps: tuple[str, ...],
    modes: list[str],
    work_parameter: str | None,
    parameters: dict[str, tuple[tuple[str, Any], ...]],
) -> None:
    """The work axis's parameter is set by the axis alone (not in ``parameters``: model, param_grid); an estimator
    other than MLPClassifier takes no data-parallel (only MLPClassifier's weights are averaged; one Spark ML maps
    may, on spark-mllib: :func:`engines_and_workload`) and reads no exact_epochs."""
    if steps != Estimator().steps:
        if DATA_PARALLEL in modes and spark_ml.counterpart(steps) is None:  # one Spark ML maps: see engines
            check.fail("workload.mode", _NOT_AVERAGED.format(name=steps[-1]))
        if "exact_epochs" in section:
            check.warn("workload.exact_epochs", f"only MLPClassifier's fits read it, not {steps[-1]}'s")
    for key, axes in parameters.items():
        if work_parameter is not None and any(name == work_parameter for name, _ in axes):
            check.fail(
                f"workload.{key}.{work_parameter}", "is set by the work axis (workload.iterations): set it there"
            )


def search(check: Problems, value: Any, measured: Workload | None) -> Search | None:
    """``search``: the whole grid, successive halving on a workload axis with at least two values, or a race."""
    if value is None:
        return Search()
    section = SEARCH.open(value, check)
    if section is None:
        return None
    read = SEARCH.read(section, check, SEARCH.keys)
    if any(v is None for v in read.values()):
        return None
    chosen = Search(**read)
    if chosen.strategy == AUTO and measured is not None:
        chosen = auto_strategy(chosen, measured)
    if chosen.strategy == RACE and measured is not None and measured.trials < RACE_MIN_TRIALS:
        check.fail(
            "search.strategy",
            f"race needs workload.trials of at least {RACE_MIN_TRIALS} (its first round), got {measured.trials}",
        )
        return None
    if chosen.strategy == HALVING and measured is not None:
        values = measured.epochs if chosen.rung_axis == "epochs" else measured.fractions
        if chosen.rung_axis == "epochs" and measured.estimator.work_parameter is None:
            check.fail(
                "search.rung_axis",
                f"{measured.estimator.steps[-1]} sweeps no work axis (name one with workload.iterations), so halving "
                "has no epochs rungs: use rung_axis: fraction",
            )
            return None
        if len(values) < 2:
            check.fail(
                "search.rung_axis",
                f"halving needs at least two values of workload.{chosen.rung_axis} (its rungs), got {list(values)}",
            )
            return None
    return chosen


def auto_strategy(search: Search, measured: Workload) -> Search:
    """``search.strategy: auto``: a race where a point has at least 2 trials to decide on, else the grid; with why."""
    if measured.trials < RACE_MIN_TRIALS:
        reason = f"grid: {measured.trials} trial a point gives a race nothing to decide on"
        return replace(search, strategy=FULL_GRID, auto_reason=reason)
    reason = (
        "race: it measures each point only until the best is known within delta, and a started launch takes "
        "every trial it may still need where that costs less than starting again; after the first round it "
        "races on only where the first round's times expect that to cost less than measuring every remaining "
        "trial at once (`sweeper replay --compare` shows racing against halving on a full sweep)"
    )
    return replace(search, strategy=RACE, auto_reason=reason)


def _workload_settings(check: Problems, section: dict[str, Any], modes: list[str]) -> dict[str, Any] | None:
    """The workload's bounded integers, numbers and exact_epochs (WORKLOAD_SETTINGS)."""
    settings = WORKLOAD.read(section, check, WORKLOAD_SETTINGS)
    if settings["n_fits"] is not None and "replicas" not in modes:
        check.fail("workload.n_fits", f"only applies to mode replicas (modes {modes!r} have their own batch)")
    refused = any(value is None and not WORKLOAD.field(name).nullable for name, value in settings.items())
    return None if refused else settings


def rule_model_params(raw_workload: Any) -> tuple[str, ...] | None:
    """The ``model.PARAM`` names exclude/only may use: the grid's estimator's (None when it does not resolve: its
    problem is reported by :func:`workload`)."""
    steps = steps_of(raw_workload.get("estimator") if isinstance(raw_workload, dict) else None)
    if steps is None:
        return None
    try:
        return model_params(None if steps == Estimator().steps else prototype(steps))
    except EstimatorProblem:
        return None


def rules(check: Problems, value: Any, key: str, params: tuple[str, ...] | None) -> list[dict[str, Any]]:
    """``exclude``/``only``: mappings of axis to a value or a list of values (``model.PARAM``: ``params``; None:
    any)."""
    if value is None:
        return []
    if not isinstance(value, list):
        check.fail(key, f"must be a list of mappings such as [{{engine: spark, epochs: 10000}}], got {shown(value)}")
        return []
    allowed = RULE_AXES + tuple(f"model.{p}" for p in params or ())
    rules = []
    for index, rule in enumerate(value):
        where = f"{key}[{index}]"
        if not isinstance(rule, dict) or not rule:
            check.fail(where, f"must be a non-empty mapping of axis: value, got {shown(rule)}")
            continue
        check.known_keys({k: v for k, v in rule.items() if params is not None or not str(k).startswith("model.")},
                         where, allowed)  # fmt: skip
        for axis, wanted in rule.items():
            items = wanted if isinstance(wanted, list) else [wanted]
            if not items or not all(item is None or is_scalar(item) for item in items):
                check.fail(
                    f"{where}.{key_name(axis)}",
                    f"must be a value (a number, string, boolean or null) or a list of values, got {shown(wanted)}",
                )
            elif axis == "engine":
                _rule_engines(check, items, f"{where}.engine")
        rules.append(rule)
    return rules


def _rule_engines(check: Problems, items: list[Any], key: str) -> None:
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


def _setting(check: Problems, value: Any, key: str, refused: re.Pattern[str], refused_text: str) -> Any:
    """An environment or spark_conf value: a string, a finite number or a boolean (None: refused)."""
    if not is_scalar(value, MAX_SETTING_CHARS):
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


def environment(check: Problems, value: Any) -> dict[str, str]:
    """``environment``: variable names and their values as strings."""
    section = check.mapping(value, "environment")
    if section is None:
        return {}
    environment = {}
    for name, setting in section.items():
        key = f"environment.{key_name(name)}"
        if not isinstance(name, str) or not _ENV_NAME.fullmatch(name):
            check.fail(key, f"must be an environment variable name ([A-Za-z_][A-Za-z0-9_]*), got {shown(name)}")
            continue
        who = _interpreted_by(name)
        if who is not None:
            check.fail(
                key,
                f"{name} is read by {who}, not only by the fits: environment may set only what the fits read "
                "(thread counts, seeds, library switches such as OMP_NUM_THREADS or PYTHONHASHSEED)",
            )
            continue
        checked = _setting(check, setting, key, _NUL, "NUL characters")
        if checked is not None:
            environment[name] = str(checked)
    return environment


def spark_conf(check: Problems, value: Any) -> dict[str, str]:
    """Extra Spark properties for every Spark launch; those the plan sets are refused, whatever their case."""
    section = check.mapping(value, "spark_conf")
    if section is None:
        return {}
    owned = {name.casefold() for name in SPARK_CONF_OWNED}
    conf = {}
    for name, setting in section.items():
        key = f"spark_conf.{key_name(name)}"
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
