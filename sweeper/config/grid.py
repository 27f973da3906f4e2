"""A validated grid: frozen dataclasses (no YAML, no scikit-learn: workers import them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sweeper.config.sizing import Cluster

DEFAULT_DATASET = "digits"  # workload.dataset's default, and a dry run's when the grid's cannot be read here
TEST_SIZE = 0.25  # workload.test_size's default: the held-out share of a dataset without its own test split


@dataclass(frozen=True)
class Dataset:
    """Which data to train on: a bundled name, or a file/directory path."""

    name: str
    path: str | None = None


FULL_GRID, HALVING, RACE, AUTO = "grid", "halving", "race", "auto"  # search.strategy
SEARCH_STRATEGIES = (FULL_GRID, HALVING, RACE, AUTO)
RUNG_AXES = ("epochs", "fraction")
TRIALS_LIMIT = 1000  # trials of one point, in a grid and in replay's flags alike
TARGET_REL_CI_LIMITS = (0.001, 0.5)  # an adaptive point's target: +-0.1 % to +-50 % of the median


@dataclass(frozen=True)
class AdaptiveTrials:
    """``workload.trials: {min, max, target_rel_ci}``: measure a point until its median's 95 % CI is that tight."""

    min_trials: int = 3
    max_trials: int = 20
    target_rel_ci: float = 0.05


ADAPTIVE = AdaptiveTrials()  # the defaults of workload.trials {min, max, target_rel_ci} and of replay's flags
ETA = 3  # halving keeps the best 1/eta per rung
START_TIMEOUT_S = 180.0  # how long a launch may take to start
# Other processes' CPU over the launch's cores above which a measurement is disturbed (sweeper.run.interference):
# quiet local batches here read under 0.05 (the launch's own driver and daemons subtracted); a second process
# spinning on one core of a 2-core launch reads about 0.5.
INTERFERENCE_LIMIT = 0.25
# How often a run takes a disturbed trial of a point again (sweeper.run.trials): two bound the
# cost of a busy spell at two batches per point; a longer spell leaves the point with fewer quiet trials.
REMEASURE_DISTURBED = 2
SEARCH_STRATEGY = AUTO  # search.strategy of a search: section that names none (no search: section: the grid)
RUNG_AXIS = "epochs"  # what halving's rungs grow: search.rung_axis and replay's --rung-axis
RANK_THRESHOLD = 0.5  # halving promotes more configurations when the rung orders agree less (Kendall tau)
RACE_DELTA = 0.05  # a race's indifference zone: configurations within 5 % of the best are all right answers
RACE_CONFIDENCE = 0.95  # how sure a race is of each decision
RACE_MIN_TRIALS = 2  # a race's first round (a grid with a fixed trial count: its max)
REPLAY_STRATEGY = HALVING  # what `sweeper replay` replays unless --strategy says otherwise
REPLAY_REPEATS = 1000  # replay's bootstrap repeats
REPLAY_SEED = 0  # the seed of replay's resampling


@dataclass(frozen=True)
class Search:
    """``search``: measure the whole grid, halve the configurations on the rung axis (successive halving), or race
    them at every point until the best is known within ``delta`` with ``confidence``."""

    strategy: str = FULL_GRID  # a grid without a search: section measures everything
    eta: int = ETA
    rung_axis: str = RUNG_AXIS
    delta: float = RACE_DELTA
    confidence: float = RACE_CONFIDENCE
    auto_reason: str | None = None  # strategy auto: why it chose the strategy above


MLP_ESTIMATOR = "sklearn.neural_network.MLPClassifier"
CLASSIFIER, REGRESSOR = "classifier", "regressor"
MLP_WORK_PARAMETER = "max_iter"  # what workload.epochs sets
SCORING = {CLASSIFIER: "accuracy", REGRESSOR: "r2"}  # workload.scoring's default, by the estimator's kind


@dataclass(frozen=True)
class Estimator:
    """``workload.estimator``: what each fit trains (one class, or a pipeline's steps in order), its kind, the
    parameter the work axis sets (None: the grid sweeps no work axis) and the scorer of the held-out score."""

    steps: tuple[str, ...] = (MLP_ESTIMATOR,)
    kind: str = CLASSIFIER
    work_parameter: str | None = MLP_WORK_PARAMETER
    scoring: str = SCORING[CLASSIFIER]

    @property
    def name(self) -> str:
        """The dotted name, or a pipeline's steps joined by ``+``."""
        return " + ".join(self.steps)

    @property
    def is_mlp(self) -> bool:
        """Whether the fits train MLPClassifier alone (its own checks, data-parallel, spark-mllib's MLP)."""
        return self.steps == (MLP_ESTIMATOR,)


DEFAULT_ESTIMATOR = Estimator()


@dataclass(frozen=True)
class Workload:
    """What every launch trains, with its sweep axes as tuples."""

    dataset: Dataset
    fractions: tuple[float, ...]
    model_axes: tuple[tuple[str, tuple[Any, ...]], ...]
    epochs: tuple[int, ...]
    trials: int  # the most trials of a point (adaptive: its max)
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
    start_timeout_s: float = START_TIMEOUT_S
    interference_limit: float = INTERFERENCE_LIMIT
    remeasure_disturbed: int = REMEASURE_DISTURBED
    adaptive: AdaptiveTrials | None = None
    estimator: Estimator = DEFAULT_ESTIMATOR  # epochs: the values of its work_parameter


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
    # the cluster keys the managers own (sweeper/config/managers.py) the grid gives, validated, by name:
    # hosts a tuple, ssh its sorted key/value pairs, the others a text
    cluster_keys: tuple[tuple[str, Any], ...] = ()
    search: Search = Search()
    grid_hash: str = field(default="", compare=False)
    warnings: tuple[str, ...] = field(default=(), compare=False)

    def cluster_key(self, name: str) -> Any:
        """The validated value of the manager's ``cluster`` key ``name``; None where the grid gives none."""
        return dict(self.cluster_keys).get(name)
