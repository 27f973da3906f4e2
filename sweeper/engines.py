"""One descriptor per engine, registered in one place: what the analysis, the report, the plan view and
``sweeper predict`` need to know of an engine (a leaf above names.py: it imports nothing else of sweeper).

The analysis looks engines up here rather than spelling their names: a new engine is one line of
:data:`DESCRIPTORS` (and its backend in ``launch/``), and every table, figure and model takes it in.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sweeper.names import BASELINE_ENGINE


@dataclass(frozen=True)
class EngineDescriptor:
    """An engine as the analysis sees it.

    ``name`` as grids and rows spell it; ``display`` as tables and figures write it; ``colour`` its lines and
    points in figures; ``version_column`` the row's column recording the version of its library, the installed
    distribution ``version_package`` (None: not recorded);
    ``one_model``: one model per measurement across the executors (else a joblib engine: many fits per batch);
    ``predicted``: ``sweeper predict`` models it; ``threads_share_interpreter``: an executor's cores are
    threads of one Python interpreter (GIL-bound for pure-Python work).
    """

    name: str
    display: str
    colour: str
    version_column: str | None
    version_package: str | None
    one_model: bool = False
    predicted: bool = True
    threads_share_interpreter: bool = False

    @property
    def joblib(self) -> bool:
        """Whether the engine runs a batch's fits through joblib (many fits, each on its slot)."""
        return not self.one_model


SPARK, DASK, RAY, SPARK_MLLIB = "spark", "dask", "ray", "spark-mllib"

DESCRIPTORS = (  # in the order of tables and figures
    EngineDescriptor(SPARK, "Spark", "#e8710a", "pyspark_version", "pyspark"),
    EngineDescriptor(DASK, "Dask", "#1f77b4", "dask_version", "dask", threads_share_interpreter=True),
    EngineDescriptor(RAY, "Ray", "#2ca02c", "ray_version", "ray"),
    EngineDescriptor(SPARK_MLLIB, "Spark ML", "#8c564b", "pyspark_version", "pyspark", one_model=True, predicted=False),
)
BY_NAME = {engine.name: engine for engine in DESCRIPTORS}
# the row's version columns of the engines' libraries: column -> installed distribution
VERSION_PACKAGES = {
    engine.version_column: engine.version_package
    for engine in DESCRIPTORS
    if engine.version_column and engine.version_package
}
PREDICTED_ENGINES = tuple(engine.name for engine in DESCRIPTORS if engine.predicted and engine.joblib)


def descriptor(name: str) -> EngineDescriptor | None:
    """The descriptor of engine ``name``; None for the baseline and for a name no descriptor has.

    >>> descriptor("ray").display, descriptor("local")
    ('Ray', None)
    """
    return BY_NAME.get(name)


def display_name(name: str) -> str:
    """How tables and figures write engine ``name`` (the name itself when no descriptor has it).

    >>> display_name("spark-mllib"), display_name("other")
    ('Spark ML', 'other')
    """
    engine = BY_NAME.get(name)
    return engine.display if engine else name


def figure_order(names: Iterable[object]) -> list[str]:
    """The engines of ``names`` in the descriptors' order, then any other by name; the baseline left out.

    >>> figure_order(["dask", "local", "zeta", "ray", "spark"])
    ['spark', 'dask', 'ray', 'zeta']
    """
    present = {name for name in names if isinstance(name, str) and name != BASELINE_ENGINE}
    known = [engine.name for engine in DESCRIPTORS if engine.name in present]
    return known + sorted(present - set(known))
