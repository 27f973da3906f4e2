"""``sweeper replay``: its options, and the replay's result as terminal text or JSON."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from rich.console import Console
from rich.table import Table
from rich.text import Text

from sweeper.commands.flags import add_key_flag, add_kind_flag
from sweeper.config.grid import AUTO, FULL_GRID, HALVING, RACE, REPLAY_REPEATS, REPLAY_STRATEGY, RUNG_AXES
from sweeper.config.schema import ADAPTIVE_DEFAULTS, Kind
from sweeper.config.sections import REPLAY, SEARCH, TRIAL_FLAGS, TRIALS
from sweeper.config.work import EPOCHS
from sweeper.errors import UserError
from sweeper.search.adaptive import TrialPolicy
from sweeper.search.halving import HalvingPolicy
from sweeper.text import json_text, plain, say, visible

if TYPE_CHECKING:
    from sweeper.results.replay import ReplaySettings, StoreLimits


T = TypeVar("T")


def add_parser(commands: Any) -> argparse.ArgumentParser:
    """Register ``replay`` on the CLI's subparsers (``commands = parser.add_subparsers(...)``)."""
    parser: argparse.ArgumentParser = commands.add_parser(
        "replay", help="replay halving, racing or the grid offline on a sweep measured in full"
    )
    parser.add_argument("store", help="store directory")
    parser.add_argument("--sweep", help="sweep name (default: the store's only sweep; required when it holds several)")
    add_key_flag(parser, SEARCH, "strategy", "what to replay", default=REPLAY_STRATEGY)
    add_key_flag(parser, SEARCH, "eta", "halving keeps the best 1/eta per rung")
    parser.add_argument(
        "--trials", default="adaptive", help="'adaptive' or a fixed number per point (default adaptive)"
    )
    held = "the trials the store holds per point"
    helps = {
        "min": f"adaptive: at least ({{}}, default {ADAPTIVE_DEFAULTS['min']}, or {held} when fewer)",
        "max": f"adaptive: at most ({{}}, default {held})",
    }
    for key, text in helps.items():
        _store_flag(parser, TRIAL_FLAGS[key], TRIALS.adaptive_kinds[key], text)
    add_kind_flag(
        parser,
        TRIAL_FLAGS["target_rel_ci"],
        TRIALS.adaptive_kinds["target_rel_ci"],
        ADAPTIVE_DEFAULTS["target_rel_ci"],
        "adaptive: stop at a CI of +-this",
    )
    add_key_flag(parser, REPLAY, "rank_threshold")
    parser.add_argument(
        "--rung-axis",
        choices=RUNG_AXES,
        help="halving: the axis whose values are the rungs (default: the sweep's, as its rows recorded it, else the "
        "first of epochs and fraction with several values)",
    )
    add_key_flag(
        parser,
        SEARCH,
        "delta",
        "race: the indifference zone; halving: swaps of pairs not confidently further apart are ties",
    )
    add_key_flag(parser, SEARCH, "confidence", "race: how sure each decision is; halving: of a pair confidently apart")
    parser.add_argument(
        "--compare", action="store_true", help="replay every strategy on the same store and seed, side by side"
    )
    _store_flag(
        parser,
        "--repeats",
        REPLAY.field("repeats").kind,
        f"bootstrap repeats ({{}}, default {REPLAY_REPEATS}, fewer where the store is too large for them)",
    )
    add_key_flag(parser, REPLAY, "seed")
    parser.add_argument("--json", action="store_true", help="print the result as one JSON object")
    parser.set_defaults(func=main)
    return parser


def _store_flag(parser: argparse.ArgumentParser, flag: str, kind: Kind, text: str) -> None:
    """``flag``, an integer whose default the store decides (None here): ``text`` with its range at ``{}``."""
    parser.add_argument(flag, type=int, default=None, help=text.format(kind.describe()))


def _settings_from(args: argparse.Namespace, limits: StoreLimits) -> ReplaySettings:
    """The replay's settings from the options, each unset one from what the store can replay (``limits``); every
    bad value at once, one UserError naming each option."""
    from sweeper.results.replay import ReplaySettings

    problems: list[str] = []
    trials = _checked(problems, lambda: _trials(args, limits)) or TrialPolicy.fixed(1)
    halving = _checked(
        problems,
        lambda: HalvingPolicy(
            eta=args.eta, rank_threshold=args.rank_threshold, tie_rel=args.delta, confidence=args.confidence
        ),
    )
    settings = _checked(
        problems,
        lambda: ReplaySettings(
            strategy=args.strategy, trials=trials, halving=halving or HalvingPolicy(),
            repeats=limits.repeats(trials.max_trials) if args.repeats is None else args.repeats,
            rung_axis=limits.rung_axis, seed=args.seed, delta=args.delta, confidence=args.confidence,
        ),
    )  # fmt: skip
    if problems or settings is None:
        raise UserError(problems)
    return settings


def _checked(problems: list[str], make: Callable[[], T]) -> T | None:
    """``make()``, or None with its UserError's problems added to ``problems`` (each once)."""
    try:
        return make()
    except UserError as error:
        problems.extend(problem for problem in error.problems if problem not in problems)
        return None


def _trials(args: argparse.Namespace, limits: StoreLimits) -> TrialPolicy:
    text = str(args.trials).strip()
    if text != "adaptive" and not text.isdigit():
        raise UserError(f"workload.trials (--trials): must be 'adaptive' or a number of trials, got {args.trials!r}")
    fixed = None if text == "adaptive" else int(text)
    return limits.trials(fixed, args.min_trials, args.max_trials, args.target_rel_ci)


def _warnings_of(args: argparse.Namespace, settings: ReplaySettings, limits: StoreLimits) -> list[str]:
    """What the options ask beyond what the store can replay honestly."""
    flag = "--trials" if str(args.trials).strip() != "adaptive" else "--max-trials"
    return [warning for warning in [limits.beyond(settings.trials, flag)] if warning]


def main(args: argparse.Namespace, console: Console) -> int:
    """``sweeper replay STORE [--sweep NAME] [--strategy halving|grid] [--eta 3] [--trials adaptive|N] ...``."""
    from sweeper.results.replay import KEYS, StoreLimits, replay
    from sweeper.store.parquet import load_sweep

    df = load_sweep(args.store, args.sweep)
    limits = StoreLimits.of(df, args.rung_axis)
    settings = _settings_from(args, limits)
    for warning in _warnings_of(args, settings, limits):
        print(f"warning: {visible(warning)}", file=sys.stderr)
    if args.compare:
        results = [
            {**replay(df, replace(settings, strategy=strategy)), "strategy": strategy}
            for strategy in COMPARED_STRATEGIES
        ]  # named as asked: auto's result is a race's or the grid's
        if args.json:
            print(json_text({r["strategy"]: {key: r[key] for key in KEYS} for r in results}))
        else:
            console.print(_comparison_table(results))
        return 0
    result = replay(df, settings)
    if args.json:
        print(json_text({key: result[key] for key in KEYS}))
    else:
        from sweeper.results.dry_run import dry_run_banner

        banner = dry_run_banner(df)
        from sweeper.results.predict.forecast import work_axis_name

        for line in ([plain(banner)] if banner else []) + _replay_lines(result, work_axis_name(df)):
            say(console, line)
    return 0


COMPARED_STRATEGIES = (FULL_GRID, HALVING, RACE, AUTO)  # auto: a race, or everything at once where starts dominate
COMPARED = (  # (column, key, how a value is shown)
    ("within 5 %", "within_5pct", "share"),
    ("within 10 %", "within_10pct", "share"),
    ("regret median", "regret_median", "share"),
    ("regret p95", "regret_p95", "share"),
    ("cluster time", "cluster_s_fraction", "share"),
    ("cluster p95", "cluster_s_fraction_p95", "share"),
    ("wrong engine", "wrong_engine", "share"),
    ("trials per point", "trials_mean", "number"),
)


def _comparison_table(results: list[dict[str, Any]]) -> Table:
    """Every strategy replayed on the same store, one row each (cluster time: a share of the full grid's)."""
    first = results[0]
    table = Table(
        title=plain(
            f"{first['repeats']} bootstrap repeats of {first['configurations']} configurations; full grid "
            f"{first['full_grid_cluster_s']:.0f} node-seconds, best {first['full_grid_best']}"
        )
    )
    table.add_column("strategy")
    for column, _, _ in COMPARED:
        table.add_column(column, justify="right")
    for result in results:
        cells = [_share(result[key]) if kind == "share" else f"{result[key]:.1f}" for _, key, kind in COMPARED]
        table.add_row(plain(result["strategy"]), *cells)
    return table


def _share(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f} %"


def _replay_lines(result: dict[str, Any], work_axis: str = EPOCHS) -> list[Text]:
    """The replay as a few lines of terminal text; a rung axis of the epochs column named as the sweep's work axis
    (``n_estimators``)."""
    halving = result["strategy"] == HALVING
    axis = work_axis if result["rung_axis"] == EPOCHS else result["rung_axis"]
    rungs = ", ".join(str(v) for v in result["rungs"])
    policy = f", eta {result['eta']}, rank threshold {result['rank_threshold']:g}" if halving else ""
    stops = f", {_share(result['ci_reached'])} stopped on 'ci reached'" if result["ci_reached"] is not None else ""
    if result["race_settled"] is not None:
        stops = f"; {_share(result['race_settled'])} of races settled before their most trials"
    engine = (
        f"engine: {result['engine_verdict']} in the full grid; picked the slower engine in "
        f"{_share(result['wrong_engine'])} of repeats"
        if result["wrong_engine"] is not None
        else f"engine: {result['engine_verdict']} in the full grid (no wrong-engine share)"
    )
    lines = [
        plain(result["strategy"], "bold")
        + plain(
            f" with trials {result['trials']}{policy}: {result['repeats']} bootstrap repeats of "
            f"{result['configurations']} configurations in {result['races']} race(s), {axis} {rungs}"
        ),
        plain(f"full grid's best: {result['full_grid_best']}, median {result['full_grid_best_s']:.2f} s"),
        plain(
            f"chose within 5 % of it in {_share(result['within_5pct'])} of repeats, within 10 % in "
            f"{_share(result['within_10pct'])}; regret median {_share(result['regret_median'])}, "
            f"95th percentile {_share(result['regret_p95'])}"
        ),
        plain(
            f"cluster time: {_share(result['cluster_s_fraction'])} of the full grid's "
            f"{result['full_grid_cluster_s']:.0f} node-seconds on average "
            f"(95th percentile {_share(result['cluster_s_fraction_p95'])}); "
            f"{result['trials_mean']:.1f} trials per measured point{stops}"
        ),
        plain(engine),
    ]
    if halving:
        lines.append(plain(f"rank check promoted more in {_share(result['rank_check_widened'])} of repeats"))
    if result["left_out"]:
        lines.append(plain(f"{result['left_out']} configurations left out: not measured at every rung", "yellow"))
    return lines
