"""How a grid's values are checked: :class:`Problems` collects every problem with its key path."""

from __future__ import annotations

import difflib
import math
import os
import stat
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from sweeper.config.grid import ADAPTIVE, TARGET_REL_CI_LIMITS, AdaptiveTrials
from sweeper.config.names import (
    MAX_NAME_CHARS,
    SHELL_CHARS_TEXT,
    SHELL_UNSAFE,
    SSH_HOST_CHARS,
    SSH_NAME_RULE,
    host_problem,
)
from sweeper.errors import UserError
from sweeper.text import CONTROL, shown
from sweeper.units import SIZE_FORMS, parse_size_mib

MAX_TEXT_CHARS = 4096  # a path, queue or URL (PATH_MAX)
MAX_AXIS_VALUES = 1000  # values of one sweep axis (and of engines, param_grid lists): checked before the values
MAX_PROBLEMS = 50  # problems listed for one file; the rest are counted
ADAPTIVE_DEFAULTS = {"min": ADAPTIVE.min_trials, "max": ADAPTIVE.max_trials, "target_rel_ci": ADAPTIVE.target_rel_ci}


def _axis_identity(value: Any) -> Hashable | None:
    """What makes two axis values the same: equality, a list compared as a tuple, and True is not 1.

    None for a value that cannot be compared (a mapping, a set, a list holding lists).

    >>> same = _axis_identity([64, 32]) == _axis_identity((64, 32)), _axis_identity(True) == _axis_identity(1)
    >>> same, _axis_identity([[1]])
    ((True, False), None)
    """
    candidate = (type(value) is bool, tuple(value) if isinstance(value, list) else value)
    try:
        hash(candidate)
    except TypeError:
        return None
    return candidate


def is_scalar(value: Any, max_chars: int = MAX_NAME_CHARS) -> bool:
    """A string of at most ``max_chars``, a boolean, a 64-bit integer or a finite float."""
    if isinstance(value, str):
        return len(value) <= max_chars
    if isinstance(value, int):
        return -(2**63) <= value < 2**63
    return isinstance(value, float) and math.isfinite(value)


def key_name(name: Any) -> str:
    """A mapping key as a key path shows it: itself when a plain short string, else :func:`shown`."""
    if isinstance(name, str) and len(name) <= MAX_NAME_CHARS and not CONTROL.search(name):
        return name
    return shown(name)


def did_you_mean(value: Any, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str) or len(value) > MAX_NAME_CHARS:
        return ""
    close = difflib.get_close_matches(value, allowed, n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def file_kind(path: Path) -> str | None:
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


def item_key(key: str, index: int, length: int) -> str:
    """``key[index]`` for an item of a list, plain ``key`` when the list has one item."""
    return f"{key}[{index}]" if length > 1 else key


class Problems:
    """Collects problems with their key paths, so one run reports them all (the first MAX_PROBLEMS)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path  # None: values from outside a grid file (flags, policies), named by key alone
        self.problems: list[str] = []
        self.warnings: list[str] = []
        self.unlisted = 0
        self.unknown_keys = 0  # a typo'd key: defaults are then not checked against the section it was meant for

    def fail(self, key: str, message: str) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(f"{key}: {message}" if self.path is None else f"{self.path}: {key}: {message}")
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
            where = f"{key}.{key_name(name)}" if key else key_name(name)
            hint = did_you_mean(name, allowed)
            self.unknown_keys += 1
            self.fail(where, f"unknown key {shown(name)}{hint} (allowed: {', '.join(allowed)})")

    def integer(self, value: Any, key: str, *, minimum: int = 1, maximum: int) -> int | None:
        if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
            self.fail(key, f"must be an integer from {minimum} to {maximum}, got {shown(value)}")
            return None
        return value

    def number(self, value: Any, key: str, low: float, high: float, open_low: bool = True) -> float | None:
        """A finite number in (low, high] (``[low, high]`` unless ``open_low``)."""
        allowed = f"a number in {'(' if open_low else '['}{_number_text(low)}, {_number_text(high)}]"
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
        hint = did_you_mean(value, allowed)
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
            written = _axis_identity(one)
            if written in first_at:
                repeats.append((first_at[written], index))
                continue
            checked = validate(one, item_key(key, index, len(listed)))
            kept_as = None if checked is None else _axis_identity(checked)
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
        found = (SHELL_UNSAFE if shell else CONTROL).search(value)
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


class Kind(Protocol):
    """What one value of a key may be: ``check`` returns it as the grid keeps it, or None (problem recorded)."""

    def check(self, value: Any, key: str, problems: Problems) -> Any: ...

    def describe(self) -> str: ...


def _number_text(number: float) -> str:
    """A bound as the README writes it: ``0`` and ``604800``, not ``0.0`` and ``604800.0``."""
    return str(int(number)) if float(number).is_integer() else str(number)


@dataclass(frozen=True)
class Integer:
    """An integer from ``minimum`` to ``maximum`` (a boolean is not one)."""

    maximum: int
    minimum: int = 1

    def check(self, value: Any, key: str, problems: Problems) -> int | None:
        return problems.integer(value, key, minimum=self.minimum, maximum=self.maximum)

    def describe(self) -> str:
        return f"{self.minimum} to {self.maximum}"


@dataclass(frozen=True)
class Number:
    """A finite number in (low, high] (``[low, high]`` unless ``open_low``)."""

    low: float
    high: float
    open_low: bool = True

    def check(self, value: Any, key: str, problems: Problems) -> float | None:
        return problems.number(value, key, self.low, self.high, self.open_low)

    def describe(self) -> str:
        return f"{'(' if self.open_low else '['}{_number_text(self.low)}, {_number_text(self.high)}]"


@dataclass(frozen=True)
class Trials:
    """A fixed number of trials, or ``{min, max, target_rel_ci}`` (adaptive: until the median's CI is that tight)."""

    maximum: int

    @property
    def adaptive_kinds(self) -> dict[str, Kind]:
        """The kind of each key of the adaptive mapping, in the order they are checked."""
        low, high = TARGET_REL_CI_LIMITS
        return {"min": Integer(self.maximum), "max": Integer(self.maximum), "target_rel_ci": Number(low, high, False)}

    def check(self, value: Any, key: str, problems: Problems) -> int | AdaptiveTrials | None:
        if not isinstance(value, dict):
            return problems.integer(value, key, maximum=self.maximum)
        problems.known_keys(value, key, tuple(self.adaptive_kinds))
        values = {name: value.get(name, default) for name, default in ADAPTIVE_DEFAULTS.items()}
        return self.check_adaptive(values, {name: f"{key}.{name}" for name in values}, problems)

    def check_adaptive(
        self, values: dict[str, Any], labels: dict[str, str], problems: Problems
    ) -> AdaptiveTrials | None:
        """An adaptive policy's ``min``, ``max`` and ``target_rel_ci``, each named by its label; max at least min."""
        checked = {name: kind.check(values[name], labels[name], problems) for name, kind in self.adaptive_kinds.items()}
        low, high, target = checked["min"], checked["max"], checked["target_rel_ci"]
        if low is None or high is None or target is None:
            return None
        if high < low:
            problems.fail(labels["max"], f"must be at least {labels['min']} ({low}), got {high}")
            return None
        return AdaptiveTrials(low, high, target)

    def describe(self) -> str:
        return (
            f"1 to {self.maximum}, or `{{min: {ADAPTIVE.min_trials}, max: {ADAPTIVE.max_trials}, target_rel_ci: "
            f"{ADAPTIVE.target_rel_ci:g}}}`: after `min` trials a point is "
            "measured until the 95 % CI of its median time is within +-`target_rel_ci` of the median, or `max` "
            "trials (each row's `stop_reason` says which)"
        )


@dataclass(frozen=True)
class Size:
    """A positive size such as ``64GiB``, kept in MiB."""

    def check(self, value: Any, key: str, problems: Problems) -> int | None:
        return problems.size_mib(value, key)

    def describe(self) -> str:
        return "a size"


@dataclass(frozen=True)
class Choice:
    """One of ``values``."""

    values: tuple[str, ...]

    def check(self, value: Any, key: str, problems: Problems) -> str | None:
        return problems.choice(value, key, self.values)

    def describe(self) -> str:
        return ", ".join(f"`{value}`" for value in self.values)


@dataclass(frozen=True)
class Boolean:
    """A YAML boolean (a quoted ``"true"`` is refused)."""

    def check(self, value: Any, key: str, problems: Problems) -> bool | None:
        return problems.boolean(value, key)

    def describe(self) -> str:
        return "`true` or `false`"


@dataclass(frozen=True)
class Text:
    """A non-empty string without control characters; ``shell``: nor anything a shell interprets."""

    shell: bool = False

    def check(self, value: Any, key: str, problems: Problems) -> str | None:
        return problems.text(value, key, shell=self.shell)

    def describe(self) -> str:
        return f"at most {MAX_TEXT_CHARS} characters"


@dataclass(frozen=True)
class Custom:
    """A value a function of the section checks (dataset, model, rules, ...): the schema only documents it."""

    def check(self, value: Any, key: str, problems: Problems) -> Any:
        raise TypeError(f"{key} is checked by its section's own function")

    def describe(self) -> str:
        return ""


@dataclass(frozen=True)
class Field:
    """One key of a section: what it may hold, its default, whether a list of values is an axis, its README row.

    ``doc`` is the README's meaning, ``{kind}`` in it replaced by the kind's description; a field without
    ``doc`` has no row (its ``section``'s fields have theirs). ``nullable``: a missing or null value stays None.
    ``shown_default``: the README's default where it is not ``default`` itself (a rule, "required").
    """

    name: str
    kind: Kind = Custom()
    default: Any = None
    shown_default: str | None = None
    doc: str = ""
    axis: bool = False
    nullable: bool = False
    section: Section | None = None

    def read(self, raw: dict[str, Any], where: str, problems: Problems) -> Any:
        """The field's value in the mapping ``raw`` of section ``where``: checked, or None when refused."""
        value = raw.get(self.name, self.default)
        if self.nullable and value is None:
            return None
        return self.kind.check(value, self.path(where), problems)

    def read_axis(self, raw: dict[str, Any], where: str, problems: Problems) -> tuple[list[Any], bool]:
        """An axis field's valid values in ``raw``, and whether all of them are (see :meth:`Problems.axis`)."""
        value = raw.get(self.name, self.default)
        return problems.axis(value, self.path(where), lambda one, key: self.kind.check(one, key, problems))

    def path(self, where: str) -> str:
        """The field's key path in section ``where``."""
        return f"{where}.{self.name}" if where else self.name

    def default_text(self) -> str:
        """The README's default of this key: ``shown_default``, else ``default`` as code, else "-"."""
        if self.shown_default is not None:
            return self.shown_default
        return "-" if self.default is None else f"`{self.default}`"

    def meaning(self) -> str:
        """The README's meaning of this key."""
        return self.doc.replace("{kind}", self.kind.describe())


@dataclass(frozen=True)
class Section:
    """A mapping of a grid file: its key path and its fields, in the order "(allowed: ...)" lists them."""

    key: str
    fields: tuple[Field, ...]

    @property
    def keys(self) -> tuple[str, ...]:
        """The keys a grid may give this section."""
        return tuple(field.name for field in self.fields)

    def field(self, name: str) -> Field:
        """The field called ``name``."""
        return next(field for field in self.fields if field.name == name)

    def read(self, raw: dict[str, Any], problems: Problems, names: tuple[str, ...]) -> dict[str, Any]:
        """The fields ``names`` of ``raw``, checked in that order (the order their problems are listed in)."""
        return {name: self.field(name).read(raw, self.key, problems) for name in names}

    def open(self, value: Any, problems: Problems) -> dict[str, Any] | None:
        """The section's mapping (``{}`` when missing) with its unknown keys reported; None when not a mapping."""
        raw = problems.mapping(value, self.key)
        if raw is not None:
            problems.known_keys(raw, self.key, self.keys)
        return raw


def key_problems(checks: Iterable[tuple[Field, Any, str]]) -> list[str]:
    """Values given outside a grid file (a command-line flag, a policy built in code), each checked by the kind of
    the grid key it stands for, ``label`` naming both (``search.delta (--delta)``): the grid's ranges and words."""
    problems = Problems(None)
    for field, value, label in checks:
        field.kind.check(value, label, problems)
    return problems.problems
