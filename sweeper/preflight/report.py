"""The checks' outcome: one line per check, exit 0 only when everything holds, and ``--json``."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class Check:
    """One check on one node (``node`` None: the driver or the cluster as a whole)."""

    check: str
    node: str | None
    ok: bool
    detail: str
    warning: bool = False  # holds, with something the user should know (ok is True)


@dataclass
class Preflight:
    """Every check of a grid's cluster, and what its configuration resolved to."""

    checks: list[Check] = field(default_factory=list)
    resource_manager: str | None = None
    default_fs: str | None = None

    @property
    def ok(self) -> bool:
        return all(check.ok for check in self.checks)

    def add(self, check: str, node: str | None, ok: bool, detail: str) -> None:
        self.checks.append(Check(check, node, ok, detail))

    def warn(self, check: str, node: str | None, detail: str) -> None:
        """A check that holds, with a warning: ``sweeper check`` still exits 0."""
        self.checks.append(Check(check, node, True, detail, warning=True))

    def problems(self) -> list[Check]:
        return [check for check in self.checks if not check.ok]

    def as_json(self) -> str:
        return json.dumps(
            {
                "ok": self.ok,
                "checks": [asdict(check) for check in self.checks],
                "resource_manager": self.resource_manager,
                "default_fs": self.default_fs,
            },
            indent=2,
        )

    def lines(self) -> list[str]:
        """``ok      node  check: detail`` / ``warning node  check: detail`` / ``PROBLEM node  check: detail and the
        fix``."""
        width = max((len(check.node or "-") for check in self.checks), default=1)
        return [
            f"{_label(check):7} {(check.node or '-'):{width}}  {check.check}: {check.detail}" for check in self.checks
        ]


def _label(check: Check) -> str:
    return "PROBLEM" if not check.ok else "warning" if check.warning else "ok"
