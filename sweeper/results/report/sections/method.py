"""The "Method" section: how every figure of the report is computed, in a few bullets."""

from __future__ import annotations

from sweeper.config.work import EPOCHS, axis_point
from sweeper.results import statistics
from sweeper.results.report.blocks import Block, Bullets, Heading

ANSWER = (
    "The answer: per workload and {point}, the engine and configuration with the lowest median time, its "
    "95 % bootstrap interval, and the runner-up's median over it with its interval; the verdict tests the "
    "recommendation against every other configuration (Mann-Whitney U, Holm-corrected), and where it is "
    "inconclusive estimates the trials that would settle it (sweeper recommend prints the same)."
)
METHOD = (
    "Time is fit_wall_s, the wall time of one whole parallel batch of fits; accuracy is the mean test "
    "accuracy of the batch's fits. Only ok measurements enter a statistic.",
    "Tables give the median over trials and the interquartile range (IQR) as spread.",
    f"Spark vs Dask: ratio of median times (above 1: Dask faster) with a 95 % percentile-bootstrap interval "
    f"({statistics.N_BOOTSTRAP:,} resamples, seed {statistics.SEED}); the verdict is Mann-Whitney U, two-sided, "
    f"at alpha {statistics.ALPHA}; Welch's t p-value shown too. Fewer than {statistics.MIN_TRIALS} ok trials on "
    f"either side: {statistics.TOO_FEW_TRIALS}.",
    "Configurations of one engine: Kruskal-Wallis (one-way ANOVA shown too); the fastest by median, and how "
    "many times slower the second fastest and the slowest are.",
    "Speedup = the single-thread baseline's median time / the median time. COST (McSherry, Isard and Murray, "
    "Scalability! But at what COST?, HotOS 2015) = the fewest total cores whose median time beats the "
    "single-thread baseline's median; never when no configuration does.",
)


def method_blocks(work_axis: str = EPOCHS) -> list[Block]:
    """ "Method": one bullet per kind of figure (``work_axis``: the name of the sweep's)."""
    return [Heading("Method"), Bullets((ANSWER.format(point=axis_point(work_axis)), *METHOD))]
