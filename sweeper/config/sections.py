"""The grid file's schema: every section with its keys, their kinds, defaults and README rows.

The functions of :mod:`sweeper.config.checks` read the sections; :mod:`sweeper.config.docs` writes the README's table.
"""

from __future__ import annotations

from typing import Any

from sweeper.config.grid import (
    DEFAULT_DATASET,
    ETA,
    INTERFERENCE_LIMIT,
    RACE_CONFIDENCE,
    RACE_DELTA,
    RANK_THRESHOLD,
    REMEASURE_DISTURBED,
    REPLAY_REPEATS,
    REPLAY_SEED,
    RUNG_AXES,
    RUNG_AXIS,
    SEARCH_STRATEGIES,
    SEARCH_STRATEGY,
    START_TIMEOUT_S,
    TEST_SIZE,
    TRIALS_LIMIT,
)
from sweeper.config.managers import LOCAL, MANAGER_FIELDS, manager_doc
from sweeper.config.schema import (
    Boolean,
    Choice,
    Field,
    Integer,
    Number,
    Problems,
    Section,
    Size,
    Text,
    Trials,
    key_problems,
)
from sweeper.config.sizing import APPLICATION_MASTER_SLOTS, REPORT_RULE, RESERVE_CORES, RESERVE_MEMORY_MIB, RULES
from sweeper.names import ACCURACY_MARGIN, DEFAULT_ENGINES, MANAGERS, MODES, OBJECTIVES, TIME
from sweeper.units import MIB_PER_GIB

DATASETS = ("digits", "mnist", "fashion-mnist", "diabetes", "california_housing")
REGRESSION_DATASETS = ("diabetes", "california_housing")  # a continuous target: regressors only
MAX_RECOMMENDED_CORES_PER_EXECUTOR = 5
# cluster.python_archive: what YARN can unpack (spark.yarn.dist.archives; Dask unpacks it in the container)
ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip")
RULE_AXES = ("engine", "cores_per_executor", "epochs", "fraction", "mode")
FIT_ENVIRONMENT_PREFIX = "spark.executorEnv."  # spark_conf may not set the fit environment
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
# Upper bounds (README, "The grid file"), so that no value in a grid can make planning or a launch explode.
# memory_per_node and every size: at most 1 PiB (sweeper.units.MAX_SIZE_MIB)
MAX_SETTING_CHARS = 32768  # an environment or spark_conf value
MAX_NODES = 10_000
MAX_CORES_PER_NODE = 4096
MAX_APPLICATION_MASTER = 1000
MAX_EPOCHS = 1_000_000
MAX_REPLAY_REPEATS = 100_000
MAX_PRICE = 1e9  # a node-hour's price, a measurement's budget, an accuracy margin: beyond any real one
TRIALS = Trials(TRIALS_LIMIT)  # workload.trials, and replay's trial flags
# replay's flags of workload.trials' adaptive keys
TRIAL_FLAGS = {"min": "--min-trials", "max": "--max-trials", "target_rel_ci": "--target-rel-ci"}

DATASET = Section(
    "workload.dataset",
    (
        Field("name"),
        Field("path"),
    ),
)

ITERATIONS = Section(
    "workload.iterations",
    (
        Field("parameter", Text()),
        Field("values", Integer(MAX_EPOCHS), axis=True),
    ),
)


RESERVE = Section(
    "sizing.reserve",
    (
        Field(
            "cores",
            Integer(MAX_CORES_PER_NODE, minimum=0),
            default=RESERVE_CORES,
            doc="cores per node left to the OS and Hadoop daemons, fewer than `cores_per_node`",
        ),
        Field(
            "memory",
            default=f"{RESERVE_MEMORY_MIB // MIB_PER_GIB}GiB",
            doc=(
                "memory per node left to the OS and Hadoop daemons, a size less than `memory_per_node`, or "
                '`0` for none (the integer or the string `"0"`; `false` and `0.0` are refused)'
            ),
        ),
    ),
)


SIZING = Section(
    "sizing",
    (
        Field(
            "rule",
            Choice(RULES),
            default=REPORT_RULE,
            doc="`report` or `spark-default` (see the sizing rules)",
        ),
        Field(
            "cores_per_executor",
            Integer(MAX_CORES_PER_NODE),
            default=[5],
            doc=(
                "one value or a list: each value is a configuration, at most `cores_per_node`. More than 5 "
                "warns (HDFS throughput guidance)"
            ),
            axis=True,
        ),
        Field("reserve", section=RESERVE),
        Field(
            "application_master",
            Integer(MAX_APPLICATION_MASTER, minimum=0),
            default=APPLICATION_MASTER_SLOTS,
            doc="executor slots held back for the YARN ApplicationMaster (for Dask, the scheduler), {kind}",
        ),
    ),
)


CLUSTER = Section(
    "cluster",
    (
        Field(
            "manager",
            Choice(MANAGERS),
            default=LOCAL,
            doc=manager_doc(),
        ),
        Field("nodes", Integer(MAX_NODES), shown_default="number of `hosts`", doc="worker nodes, {kind}"),
        Field("cores_per_node", Integer(MAX_CORES_PER_NODE), shown_default="required", doc="cores of one node, {kind}"),
        Field(
            "memory_per_node",
            Size(),
            shown_default="required",
            doc="memory of one node, a size (below), at most 1 PiB (`1024T`)",
        ),
        *MANAGER_FIELDS,
    ),
)


WORKLOAD = Section(
    "workload",
    (
        Field(
            "dataset",
            default=DEFAULT_DATASET,
            doc=(
                "`digits` (bundled with scikit-learn), `mnist`, `fashion-mnist`, `diabetes` (scikit-learn's bundled "
                "regression set: 442 rows, 10 features), `california_housing` (scikit-learn's, 20,640 rows, 8 "
                "features, read from its cache: fetched once where there is network), a path (a regular file or "
                "a directory; a FIFO, device or socket is refused), or `{name: mnist, path: DIR}` with a "
                "directory of IDX files"
            ),
            section=DATASET,
        ),
        Field(
            "fraction",
            Number(0.0, 1.0),
            default=1.0,
            doc="fraction of the training set, {kind}; a list is an axis",
            axis=True,
        ),
        Field(
            "estimator",
            shown_default="`sklearn.neural_network.MLPClassifier`",
            doc=(
                "what each fit trains: the dotted name of a scikit-learn-compatible classifier or regressor class "
                "installed beside the sweeper (`sklearn.ensemble.RandomForestClassifier`), or a list of them, a "
                "pipeline (`[sklearn.preprocessing.StandardScaler, sklearn.linear_model.LogisticRegression]`, "
                "steps named as `make_pipeline` names them); imported with importlib (the module, then the "
                "class), never executed from the grid"
            ),
        ),
        Field(
            "model",
            shown_default="`{hidden_layer_sizes: [100, 50], activation: relu, solver: adam}` (MLPClassifier)",
            doc=(
                "the estimator's parameters (its `get_params()` names; a pipeline's: `step__param`, such as "
                "`logisticregression__C`), each checked by its `_parameter_constraints`; never `random_state` "
                "(trials set it), `n_jobs` (1) or the work axis's parameter; a list value is an axis. "
                "MLPClassifier: its defaults above, `hidden_layer_sizes: [[64], [100, 50]]` for layers (1 to 100 "
                "layers of 1 to 100000 units), and `mllib_solver` (`l-bfgs` or `gd`, read by `spark-mllib` only)"
            ),
        ),
        Field(
            "epochs",
            Integer(MAX_EPOCHS),
            default=[10, 100],
            shown_default="`[10, 100]` (MLPClassifier)",
            doc=(
                "`max_iter` of each fit, {kind}; a list is an axis (the work axis): the spelling of "
                "`iterations: {parameter: max_iter, values: [...]}`"
            ),
            axis=True,
        ),
        Field(
            "iterations",
            shown_default="none but MLPClassifier's `epochs`",
            doc=(
                "the work axis: `{parameter: n_estimators, values: [10, 50, 200]}`, an integer knob of work of the "
                "estimator (`max_iter`, `n_estimators`, `max_depth`, ...; in a pipeline the step's, found by its "
                "name), values from 1 to 1000000; an estimator given neither `epochs` nor `iterations` sweeps no "
                "work axis (its rows: `epochs` 1). Halving's `rung_axis: epochs`, exclude/only's `epochs` and the "
                "`epochs` column mean this axis"
            ),
            section=ITERATIONS,
        ),
        Field(
            "scoring",
            shown_default="`accuracy` (classifiers), `r2` (regressors)",
            doc=(
                "the held-out score each fit records in `accuracy` (and recommend's accuracy check compares): a "
                "scikit-learn scorer name (`sklearn.metrics.get_scorer_names()`: `f1_macro`, "
                "`neg_mean_squared_error`, ...; higher is better)"
            ),
        ),
        Field(
            "trials",
            TRIALS,
            default=3,
            doc="repetitions of every measurement, {kind}",
        ),
        Field(
            "mode",
            Choice(MODES),
            default="replicas",
            doc=(
                "`replicas` (a batch of fits, one per seed), `cv` (one per fold), `search` (param_grid x "
                "folds), `data-parallel` (ONE model trained across the launch: MLPClassifier's averaged weights on "
                "the joblib engines; spark-mllib's own model for the estimators Spark ML has); a list is an axis"
            ),
            axis=True,
        ),
        Field("folds", Integer(100, minimum=2), default=3, doc="`cv` and `search`: folds, {kind}"),
        Field("param_grid", doc="`search`: the estimator's parameter lists, as `GridSearchCV` takes"),
        Field(
            "n_fits",
            Integer(10_000),
            shown_default="slots of the largest launch",
            doc="`replicas`: fits per batch, the same for every launch so times compare; {kind}",
            nullable=True,
        ),
        Field(
            "local_epochs",
            Integer(10_000),
            default=1,
            doc=("`data-parallel`: passes over its shard each worker makes between two weight averagings, {kind}"),
        ),
        Field(
            "shards",
            Integer(10_000),
            shown_default="the launch's slots",
            doc="`data-parallel`: shards P, {kind} (the baseline always uses 1)",
            nullable=True,
        ),
        Field(
            "exact_epochs",
            Boolean(),
            default=False,
            shown_default="`false`",
            doc="run every fit for all its epochs (no early stopping on tolerance)",
        ),
        Field(
            "threads_per_fit",
            Integer(MAX_CORES_PER_NODE),
            default=1,
            doc="BLAS threads per fit, pinned the same way on every engine; {kind}",
        ),
        Field(
            "timeout_s",
            Number(0.0, 7 * 86400.0),
            default=3600,
            doc="per-measurement time limit, in {kind} (7 days)",
        ),
        Field(
            "start_timeout_s",
            Number(0.0, 86400.0),
            default=START_TIMEOUT_S,
            shown_default=f"`{START_TIMEOUT_S:g}`",
            doc=(
                "time a launch has to start and get all its executors/workers, in {kind}; after it the "
                "launch fails, naming what it got"
            ),
        ),
        Field(
            "interference_limit",
            Number(0.0, 100.0),
            default=INTERFERENCE_LIMIT,
            shown_default=f"`{INTERFERENCE_LIMIT:g}`",
            doc=(
                "a measurement during which other processes used more than this share of the launch's cores on a "
                "node (or the hypervisor stole more than this share of a node's CPU) is disturbed: kept, marked, "
                "left out of every verdict; in {kind}"
            ),
        ),
        Field(
            "remeasure_disturbed",
            Integer(100, minimum=0),
            default=REMEASURE_DISTURBED,
            doc=(
                "how many times per point a run takes a disturbed trial again, at once (a resumed run does not "
                "retake the store's; a race does not either: its next round measures the configuration again), {kind}"
            ),
        ),
        Field(
            "seed",
            Integer(2**31 - 1, minimum=0),
            default=0,
            doc=(
                "seed of the data split and the fits, {kind} (2^31 - 1: a fit's seed, `seed + 1000 x trial "
                "+ fit`, must stay below scikit-learn's 2^32)"
            ),
        ),
        Field(
            "test_size",
            Number(0.0, 0.9),
            default=TEST_SIZE,
            doc="held-out share for datasets without their own test split, in {kind}",
        ),
    ),
)


SEARCH = Section(
    "search",
    (
        Field(
            "strategy",
            Choice(SEARCH_STRATEGIES),
            default=SEARCH_STRATEGY,
            doc=(
                "`grid` measures every configuration; `halving` measures every configuration at the rung axis's "
                "cheapest value and promotes the fastest 1/`eta` (at least 2, and the best of each engine) to "
                "the next, up to the full measurement; those it does not promote get `pruned` rows; `race` "
                "measures every configuration at every point, 2 trials first, then at counts "
                "growing by half (4, 6, 10, ...) up to the grid's trials, until the leader is within `delta` of "
                "every configuration still in the race with `confidence`; a configuration confidently more than "
                "`delta` slower leaves it; "
                "`auto` (the default of a `search:` section; without one: `grid`) races where `trials` is 2 or "
                "more and, after the first round, races on only where that is expected to cost less than "
                "measuring every remaining trial at once; `sweeper run` says why"
            ),
        ),
        Field(
            "eta",
            Integer(100, minimum=2),
            default=ETA,
            doc="`halving`: keep 1/eta per rung, {kind}",
        ),
        Field(
            "rung_axis",
            Choice(RUNG_AXES),
            default=RUNG_AXIS,
            doc="`halving`: the workload axis whose values are the rungs, cheapest first",
        ),
        Field(
            "delta",
            Number(0.0, 0.5),
            default=RACE_DELTA,
            doc=(
                "`race`: the indifference zone, a share of the best time (0.05: any configuration within 5 % is "
                "a right answer); `halving`: a rank swap counts only between configurations confidently more than "
                "this apart, {kind}"
            ),
        ),
        Field(
            "confidence",
            Number(0.5, 0.999),
            default=RACE_CONFIDENCE,
            doc="`race`: how sure each of its decisions is; `halving`: how sure its rank check is that two "
            "configurations are apart, {kind}",
        ),
    ),
)

TOP = Section(
    "",
    (
        Field(
            "name",
            shown_default="required",
            doc=(
                "sweep name, one directory of the store; rows in the store carry it. 1 to 100 characters "
                "(at most 255 bytes in UTF-8), no `/`, `\\` or control characters, not starting with `-`, "
                "`.` or `_` (readers of the store skip such directories)"
            ),
        ),
        Field("description", doc="free text"),
        Field("cluster", section=CLUSTER),
        Field("sizing", section=SIZING),
        Field(
            "engines",
            default=list(DEFAULT_ENGINES),
            shown_default="`[spark, dask]`",
            doc=(
                "engines to compare: `spark`, `dask`, `ray` (optional: `sweeper[ray]`), `spark-mllib` (Spark ML's "
                "own model, one across the launch; takes the `data-parallel` points; MLPClassifier, "
                "LogisticRegression, RandomForestClassifier and -Regressor, GradientBoostingClassifier and "
                "HistGradientBoostingClassifier (two classes), LinearRegression)"
            ),
        ),
        Field(
            "baseline",
            Boolean(),
            default=True,
            shown_default="`true`",
            doc="also measure the same batch with plain scikit-learn, 1 thread, no cluster (engine `local`)",
        ),
        Field("workload", section=WORKLOAD),
        Field("search", section=SEARCH),
        Field(
            "exclude",
            shown_default="`[]`",
            doc=(
                "list of `{axis: value}` rules; a measurement matching all keys of a rule is dropped. Axes: "
                "`engine`, `cores_per_executor`, `epochs`, `fraction`, `mode`, `model.PARAM` "
                "(`model.mllib_solver` too); a value is a number, string, boolean or null, or a list of "
                "them (a mapping is refused). An `engine` is `spark`, `dask` or `spark-mllib`: the baseline "
                "(`local`) is not one, and `engine: local` is an error; `baseline: false` leaves the "
                "baseline out"
            ),
        ),
        Field(
            "only", shown_default="`[]`", doc="like `exclude`, but keeps only measurements matching at least one rule"
        ),
        Field(
            "store",
            Text(),
            default="results/",
            doc="the Parquet store directory (relative to where you run sweeper)",
        ),
        Field(
            "environment",
            shown_default="`{}`",
            doc=(
                "environment variables set, the same way, in every process that runs fits; names "
                "`[A-Za-z_][A-Za-z0-9_]*`, values a string, number or boolean without NUL; not variables a shell, "
                "the dynamic loader, the JVM, Python or Spark's, Hadoop's or Dask's launchers read (`LD_*`, "
                "`BASH_ENV`, `JAVA_TOOL_OPTIONS`, `PYTHON*` but `PYTHONHASHSEED`, `SPARK_*`, `PATH`, ...)"
            ),
        ),
        Field(
            "spark_conf",
            shown_default="`{}`",
            doc=(
                "extra Spark properties for every Spark launch (`spark.network.timeout: 300s`, "
                "`spark.driver.port: 40000`); the properties the plan sets (`spark.master`, "
                "`spark.executor.*` sizes, `spark.cores.max`, `spark.task.cpus`, dynamic allocation, "
                "`spark.pyspark.python`, authentication) are refused, compared ignoring case and "
                'surrounding spaces (`SPARK.Master`, `"spark.master "`); a name is `spark.` then no spaces, '
                "`=` or control characters, a value a string, number or boolean without control characters"
            ),
        ),
    ),
)
# cluster values that reach command lines, on the hosts too (checked only when given)
CLUSTER_PATHS = tuple(field.name for field in CLUSTER.fields if field.kind == Text(shell=True))
# the workload's settings: integers, then numbers, then exact_epochs (the order their problems are listed in)
WORKLOAD_SETTINGS = tuple(
    field.name
    for kind in (Integer, Number, Boolean)
    for field in WORKLOAD.fields
    if isinstance(field.kind, kind) and not field.axis
)


REPLAY = Section(
    "replay",  # `sweeper replay`'s own flags, no grid key standing for them; doc: the flag's help
    (
        Field("repeats", Integer(MAX_REPLAY_REPEATS), default=REPLAY_REPEATS, doc="bootstrap repeats"),
        Field("seed", Integer(2**32 - 1, minimum=0), default=REPLAY_SEED, doc="seed of the resampling"),
        Field(
            "rank_threshold",
            Number(-1.0, 1.0, open_low=False),
            default=RANK_THRESHOLD,
            doc="halving: promote more configurations where two rungs' orders agree less (Kendall tau)",
        ),
    ),
)


RECOMMEND = Section(
    "recommend",  # `sweeper recommend`'s flags (and report's --cost-per-node-hour), no grid key standing for them
    (
        Field("objective", Choice(OBJECTIVES), default=TIME, doc="what to minimise"),
        Field(
            "accuracy_margin",
            Number(0.0, MAX_PRICE, open_low=False),
            default=ACCURACY_MARGIN,
            doc="accuracy the choice may lose to the most accurate one",
        ),
        Field("cost_per_node_hour", Number(0.0, MAX_PRICE), doc="price of a node-hour (needed by --objective cost)"),
        Field("budget", Number(0.0, MAX_PRICE), doc="most a measurement may cost: the fastest configuration within it"),
    ),
)
COMMAND_SECTIONS = (REPLAY, RECOMMEND)  # a command's own flags: named by the flag alone


def flag_name(name: str) -> str:
    """The command-line flag of key ``name``: ``rung_axis`` -> ``--rung-axis``."""
    return "--" + name.replace("_", "-")


def flag_problems(section: Section, **values: Any) -> list[str]:
    """Values given outside a grid (a flag, a policy built in code), checked by their keys' own kinds: the grid's
    ranges and words, named ``search.delta (--delta)`` (``--repeats`` for a flag no grid key stands for)."""

    def label(name: str) -> str:
        return flag_name(name) if section in COMMAND_SECTIONS else f"{section.key}.{name} ({flag_name(name)})"

    return key_problems([(section.field(name), value, label(name)) for name, value in values.items()])


def search_problems(**values: Any) -> list[str]:
    """``search`` keys given outside a grid (:func:`flag_problems`)."""
    return flag_problems(SEARCH, **values)


def trials_problems(min_trials: int, max_trials: int, target_rel_ci: float | None) -> list[str]:
    """A trial policy given outside a grid, checked by ``workload.trials``' kind: a fixed count (``--trials N``)
    when ``target_rel_ci`` is None, else adaptive (``--min-trials``, ``--max-trials``, ``--target-rel-ci``)."""
    problems = Problems(None)
    if target_rel_ci is None:
        TRIALS.check(max_trials, "workload.trials (--trials)", problems)
    else:
        values = {"min": min_trials, "max": max_trials, "target_rel_ci": target_rel_ci}
        labels = {name: f"workload.trials.{name} ({flag})" for name, flag in TRIAL_FLAGS.items()}
        TRIALS.check_adaptive(values, labels, problems)
    return problems.problems
