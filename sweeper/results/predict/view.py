"""``sweeper predict``'s words and JSON: the fitted coefficients, the held-out errors, the predictions."""

from __future__ import annotations

from typing import Any

from sweeper.results.predict.forecast import Learned, Prediction
from sweeper.results.predict.model import EngineModel
from sweeper.results.predict.validation import MIN_CONFIGURATIONS, TRUSTED_MEDIAN_ERROR
from sweeper.shapes import counted


def model_lines(learned: Learned) -> list[str]:
    """Each engine's fitted formulas, coefficients in place: a line for one fit, the batch and the memory each."""
    lines = []
    for engine, m in learned.models.items():
        lines += [
            f"{engine}: one fit = {m.fixed_s:.3g} s + ({m.work_s:.3g} s + {m.contention_s:.3g} s x (fits per "
            f"executor - 1)) x {learned.work_axis} x rows/1e6",
            f"  batch = {m.batch_overhead_s:.3g} s + {m.per_executor_s:.3g} s x executors + {m.wave_factor:.3g} x "
            f"waves x one fit  [{m.points} medians]",
            *_memory_lines(m),
        ]
    return lines


def _memory_lines(model: EngineModel) -> list[str]:
    if model.base_gib is None or model.per_fit_gib is None:
        return []
    return [f"  peak = {model.base_gib:.3g} GiB + {model.per_fit_gib:.3g} GiB x fits per executor"]


def validation_lines(learned: Learned) -> list[str]:
    """Per engine: the held-out error, or why there is none; and whether recommend trusts it."""
    lines = []
    for engine in learned.models:
        errors = learned.validation.errors(engine)
        if not errors.size:
            lines.append(
                f"{engine}: not validated: fewer than {MIN_CONFIGURATIONS} configurations measured; "
                "treat its predictions as untested"
            )
            continue
        median, largest = learned.validation.median_error(engine), learned.validation.max_error(engine)
        verdict = (
            "good enough to name shapes worth measuring"
            if learned.validation.trusted(engine)
            else f"over {TRUSTED_MEDIAN_ERROR:.0%}: do not rely on its predictions"
        )
        lines.append(
            f"{engine}: each configuration predicted from the others: median error {median:.1%}, largest "
            f"{largest:.1%} over {errors.size} configuration-points ({verdict})"
        )
    return lines


def unpredicted_lines(engines: list[str]) -> list[str]:
    """The grid's engines the sweep measured no batch of."""
    return [f"{engine}: the sweep measured no {engine} batch: its launches are not predicted" for engine in engines]


def prediction_rows(predictions: list[Prediction]) -> list[list[str]]:
    """Table cells: engine, shape, the work axis's value, fits, predicted median, interval, memory, extrapolation (an
    engine whose model could not be validated: "not validated", no number)."""
    rows = []
    for p in predictions:
        s = p.shape
        memory = "" if p.peak_gib is None else f"{p.peak_gib:.2f} of {s.executor_memory_gib:.2f} GiB"
        if p.fits_memory is False:
            memory += " (would not fit)"
        rows.append(
            [
                s.engine,
                f"{s.executors} x {counted(s.cores_per_executor, 'core')}, {counted(s.nodes, 'node')}",
                str(s.epochs),
                str(s.n_fits),
                # no point estimate without a validated interval to back it
                "not validated" if p.interval_s is None else f"{p.predicted_s:.3g} s",
                "-" if p.interval_s is None else f"{p.interval_s[0]:.3g}-{p.interval_s[1]:.3g} s",
                memory,
                ", ".join(p.extrapolated_on) if p.extrapolated else "",
            ]
        )
    return rows


def prediction_headers(learned: Learned) -> list[str]:
    """The table's headers, the work axis by the name of the sweep's (``epochs``, ``n_estimators``)."""
    return ["engine", "shape", learned.work_axis, "fits", "predicted median", "interval", "peak memory", "beyond"]


def to_json(learned: Learned, predictions: list[Prediction]) -> dict[str, Any]:
    """The README's keys: predictions, validation (and per engine), each engine's coefficients."""
    return {
        "predictions": [
            {
                "engine": p.shape.engine,
                "cores_per_executor": p.shape.cores_per_executor,
                "executors": p.shape.executors,
                "nodes": p.shape.nodes,
                "executor_memory_gib": p.shape.executor_memory_gib,
                "epochs": p.shape.epochs,
                "n_fits": p.shape.n_fits,
                "n_train": p.shape.n_train,
                "predicted_median_s": p.predicted_s,
                "interval_s": None if p.interval_s is None else list(p.interval_s),
                "extrapolated": p.extrapolated,
                "extrapolated_on": list(p.extrapolated_on),
                "predicted_peak_gib": p.peak_gib,
                "fits_memory": p.fits_memory,
            }
            for p in predictions
        ],
        "validation": learned.validation.to_json(),
        "validation_by_engine": {
            engine: {
                "held_out_median_rel_error": learned.validation.median_error(engine),
                "held_out_max_rel_error": learned.validation.max_error(engine),
                "n_held_out": int(learned.validation.errors(engine).size),
            }
            for engine in learned.models
        },
        "models": {engine: model.coefficients() for engine, model in learned.models.items()},
    }
