"""Load and validate a grid file (YAML) into a frozen :class:`Grid`.

Everything is checked before anything runs, and every problem in a file is reported together:
each message names the file, the key path, the bad value and what is allowed.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from sweeper.config import checks
from sweeper.config.environment_defaults import with_environment_defaults
from sweeper.config.grid import Grid
from sweeper.config.names import check_sweep_name
from sweeper.config.reader import read_grid_yaml
from sweeper.config.schema import Problems
from sweeper.config.sections import TOP
from sweeper.errors import UserError


def load(path: str | Path) -> Grid:
    """Read, validate and normalise a grid file; raise :class:`UserError` listing all problems."""
    grid_path = Path(path)
    return parse(read_grid_yaml(grid_path), grid_path)


def parse(raw: Any, path: Path) -> Grid:
    """Validate an already-parsed YAML document; any value of any type gives a :class:`UserError`, nothing else."""
    check = Problems(path)
    if not isinstance(raw, dict):
        raise UserError(f"{path}: the grid must be a YAML mapping with keys {', '.join(TOP.keys)}")
    check.known_keys(raw, "", TOP.keys)
    values = _read_grid(check, raw)
    if values is None:
        raise check.error()
    grid = Grid(path=path, **values, grid_hash=grid_hash(raw), warnings=tuple(check.warnings))
    return with_environment_defaults(grid, raw)


def _read_grid(check: Problems, raw: dict[str, Any]) -> dict[str, Any] | None:
    """The fields of a :class:`Grid` (but its path, hash and warnings) from the grid mapping ``raw``.

    Sections are read in the order their problems are listed, then the rules across sections;
    None when ``check`` holds a problem.
    """
    name = raw.get("name")
    problem = check_sweep_name(name)
    if problem:
        check.fail("name", problem)
    manager, machines, hosts, ssh = checks.cluster(check, raw.get("cluster"))
    paths = checks.cluster_paths(check, raw.get("cluster"))
    archive = checks.python_archive(check, raw.get("cluster"), manager)
    rule, cores = checks.sizing(check, raw.get("sizing"), machines)
    if machines is not None and isinstance(raw.get("sizing"), dict):
        machines = checks.with_reserve(check, raw["sizing"], machines)
    listed = checks.engines(check, raw.get("engines", TOP.field("engines").default))
    baseline = TOP.field("baseline").read(raw, "", check)
    measured = checks.workload(check, raw.get("workload"))
    strategy = checks.search(check, raw.get("search"), measured)
    params = checks.rule_model_params(raw.get("workload"))
    exclude, only = (checks.rules(check, raw.get(key), key, params) for key in ("exclude", "only"))
    store = TOP.field("store").read(raw, "", check)
    variables = checks.environment(check, raw.get("environment"))
    conf = checks.spark_conf(check, raw.get("spark_conf"))
    if listed and measured:
        checks.engines_and_workload(check, listed, measured)
    if listed:
        checks.standalone_addresses(check, raw.get("cluster"), manager, listed)
    if machines is not None and rule is not None and cores:
        checks.shapes(check, machines, rule, cores)
    if check.problems:
        return None
    return {
        "name": name,
        "manager": manager,
        "cluster": machines,
        "rule": rule,
        "cores_per_executor": tuple(cores),
        "engines": tuple(listed or ()),
        "baseline": baseline,
        "workload": measured,
        "search": strategy,
        "exclude": tuple(exclude),
        "only": tuple(only),
        "store": Path(store),
        "environment": tuple(sorted(variables.items())),
        "spark_conf": tuple(sorted(conf.items())),
        "cluster_keys": _cluster_keys(hosts, ssh, paths, archive),
    }


def _cluster_keys(
    hosts: list[str], ssh: dict[str, Any], paths: dict[str, str], archive: str | None
) -> tuple[tuple[str, Any], ...]:
    """The managers' cluster keys the grid gives, by name (``Grid.cluster_keys``)."""
    given = {"hosts": tuple(hosts), "ssh": tuple(sorted(ssh.items())), **paths, "python_archive": archive}
    return tuple((name, value) for name, value in given.items() if value)


def grid_hash(raw: dict[str, Any]) -> str:
    """A short, stable hash of what the grid asks for (its name and store excluded)."""
    asked = {k: v for k, v in raw.items() if k not in ("name", "store", "description")}
    text = json.dumps(asked, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]
