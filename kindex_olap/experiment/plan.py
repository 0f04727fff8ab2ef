"""The plan of an experiment: its variants (a command each, or a job table), rounds and time
limit, written as `plan.json` into the experiment folder (standalone.py runs it)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

from kindex_olap.errors import ConfigError, quoted
from kindex_olap.experiment.standalone import PLAN_FILE, PLAN_SCHEMA, read_json, write_json

VARIANT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+]*$")
GENERIC_JOB = "main"


def parse_variant(text: str) -> tuple[str, list[str]]:
    """`A=cmd arg ...` -> ("A", argv); the name becomes the runs' version label."""
    name, sep, command = text.partition("=")
    name = name.strip()
    if not sep or not VARIANT_NAME.match(name) or not command.strip():
        raise ConfigError(
            f"--variant {quoted(text)}: expected NAME='command ...' (NAME: letters, digits, _ . +)",
            hint="e.g. --variant main='python bench.py' --variant pr='python bench.py --new'",
        )
    try:
        argv = shlex.split(command)
    except ValueError as e:
        raise ConfigError(f"--variant {name}: cannot split the command ({e})") from e
    return name, argv


def experiment_name(folder: Path) -> str:
    """A run-label-safe name for the experiment, from its folder's name."""
    name = re.sub(r"[^a-z0-9_]+", "_", folder.resolve().name.lower()).strip("_")
    return name if name and name[0].isalpha() else f"bench_{name}"


def generic_plan(
    folder: Path,
    variants: list[str],
    rounds: int,
    timeout_s: float,
    repeat: int = 1,
    pin_cpu: bool = False,
) -> dict[str, Any]:
    """The plan of `kindex bench run`: one job, each variant's own command."""
    parsed = [parse_variant(v) for v in variants]
    names = [n for n, _ in parsed]
    if len(parsed) < 2 or len(set(names)) != len(names):
        raise ConfigError(
            "give at least two --variant options with different names",
            hint="kindex bench run --variant A='cmd ...' --variant B='cmd ...'",
        )
    plan = new_plan(folder, "generic", [GENERIC_JOB], {
        name: {"command": argv, "jobs": {}, "env": {}, "version": name} for name, argv in parsed
    }, rounds, timeout_s, repeat, pin_cpu)  # fmt: skip
    # the commands run where kindex was called (their relative paths mean what the user meant)
    plan["cwd"] = str(Path.cwd())
    return plan


def new_plan(
    folder: Path,
    kind: str,
    jobs: list[str],
    variants: dict[str, dict[str, Any]],
    rounds: int,
    timeout_s: float,
    repeat: int = 1,
    pin_cpu: bool = False,
) -> dict[str, Any]:
    """A plan document; its name gives every run's labels their prefix. `repeat` runs of a job
    per variant and round are pooled by the import into one replicate (the fastest of them per
    row); `pin_cpu` pins each run to the fastest CPU at its start (standalone.py)."""
    if rounds < 1 or repeat < 1 or timeout_s <= 0:
        raise ConfigError("--rounds and --repeat must be at least 1 and --timeout positive")
    name = experiment_name(folder)
    for variant in variants.values():
        variant["code"] = f"{name}_{variant['version']}".lower()
    return {
        "schema": PLAN_SCHEMA, "name": name, "kind": kind, "jobs": jobs,
        "variants": variants, "rounds": rounds, "repeat": repeat, "pin_cpu": pin_cpu,
        "timeout_s": timeout_s,
    }  # fmt: skip


def settle_plan(folder: Path, plan: dict[str, Any] | None) -> dict[str, Any]:
    """The folder's plan: a new one is written; a folder that has one resumes it (the same
    plan, or none given); another plan there is an error rather than a mixed experiment."""
    existing = read_json(folder / PLAN_FILE)
    if existing and existing.get("schema") != PLAN_SCHEMA:
        raise ConfigError(f"{folder / PLAN_FILE}: not a kindex bench plan")
    if plan is None:
        if not existing:
            raise ConfigError(
                f"{folder}: no experiment here ({PLAN_FILE} is missing)",
                hint="start one with --variant A='cmd ...' --variant B='cmd ...'",
            )
        return existing
    if existing and _comparable(existing) != _comparable(plan):
        raise ConfigError(
            f"{folder} holds another experiment's plan",
            hint="use another --dir, or leave out --variant/--rounds to resume the one there",
        )
    if not existing:
        folder.mkdir(parents=True, exist_ok=True)
        write_json(folder / PLAN_FILE, plan)
    return existing or plan


def _comparable(plan: dict[str, Any]) -> dict[str, Any]:
    keys = ("kind", "jobs", "variants", "rounds", "repeat", "pin_cpu", "cwd")
    return {k: plan.get(k) for k in keys}
