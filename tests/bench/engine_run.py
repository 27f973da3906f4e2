"""What one engine did during the batch comparison, and its JSON summary."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from tests.bench.machine import CPU_PARTS, FOREIGN, machine_cores
from tests.bench.stats import median


@dataclass
class EngineRun:
    """What one engine did during the batch comparison."""

    engine: str
    launch: str
    start_s: float = 0.0
    start_note: str = ""  # spark: whether its JVMs mapped Spark's class archive (sweeper.launch.spark.class_archive)
    warmup_s: float = 0.0
    batches_s: list[float] = field(default_factory=list)
    fit_s: list[list[float]] = field(default_factory=list)
    slot_s: list[list[float]] = field(default_factory=list)  # per batch: each worker process's fits, summed
    pids: set[int] = field(default_factory=set)
    fits_run: int = 0
    shipping: dict[str, Any] = field(default_factory=dict)
    cpu_s: list[dict[str, float]] = field(default_factory=list)
    environment: dict[str, str] = field(default_factory=dict)
    measuring_s: list[float] = field(default_factory=list)  # the driver's share of a row's resource figures
    interference_s: list[float] = field(default_factory=list)  # the driver's share of a row's interference figures

    def summary(self, slots: int) -> dict[str, Any]:
        """The JSON object of this engine."""
        outside = [wall - sum(fits) / slots for wall, fits in zip(self.batches_s, self.fit_s, strict=True)]
        all_fits = [s for fits in self.fit_s for s in fits]
        slower = [max(busy) - sum(busy) / slots if len(busy) == slots else None for busy in self.slot_s]
        return {
            "launch": self.launch,
            "start_s": self.start_s,
            "start_note": self.start_note,
            "warmup_s": self.warmup_s,
            "batches_s": self.batches_s,
            "batch_median_s": median(self.batches_s),
            "fit_mean_s": statistics.fmean(all_fits) if all_fits else None,
            "fit_max_s": max(all_fits) if all_fits else None,
            "outside_s": outside,
            "outside_median_s": median(outside),
            "slower_slot_s": slower,
            "slower_slot_median_s": median([s for s in slower if s is not None]),
            "worker_processes": len(self.pids),
            "fits_run": self.fits_run,
            "shipping": self.shipping,
            "cpu_s": self.cpu_s,
            "cpu_median_s": {
                part: median([batch.get(part, 0.0) for batch in self.cpu_s]) for part in (*CPU_PARTS, FOREIGN)
            },
            "busy_share": median(
                [
                    batch.get(FOREIGN, 0.0) / max(wall * machine_cores(), 1e-9)
                    for batch, wall in zip(self.cpu_s, self.batches_s, strict=True)
                ]
            ),
            "fit_environment": self.environment,
            "measuring_median_s": median(self.measuring_s),
            "interference_median_s": median(self.interference_s),
        }
