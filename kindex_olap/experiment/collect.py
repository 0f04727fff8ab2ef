"""An experiment's runs -> labelled bundles -> the lake, and the verdict on what it measured.

Each passed run's Liger-format CSVs go through the Liger importer's converter; every run bundle
then gets the experiment's labels: `version` (the variant's version label), `kindex_code` (one
per variant: a variant's runs across rounds are its replicates, pooled into one point; runs of
different variants are never pooled), `kindex_invocation` (one per process), `kindex_round`,
`kindex_variant`, `kindex_experiment` (and, for Liger, `kindex_wheel_sha256`). The rows keep
their own timestamps; the externalId gains the invocation so that two runs that wrote the same
row in the same second stay two runs.

A plan with `repeat` k > 1 runs each job k times per variant and round; the import keeps, per
row (kernel, implementation, pass, metric, size, configuration), the fastest of the k runs as
the round's replicate (label `kindex_repeats`: k; its `kindex_invocation` is the run it came
from). A slower host only ever adds time to a host-bound timing, so the fastest of k runs is
the one least disturbed; both variants are read the same way.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kindex_olap.atomic import write_if_changed
from kindex_olap.errors import SourceError
from kindex_olap.experiment.standalone import PLAN_FILE, STATE_FILE, read_json
from kindex_olap.importers.liger.jsontext import bundle_text
from kindex_olap.importers.liger.read import COLUMNS, read_rows
from kindex_olap.importers.liger.runs import Converter
from kindex_olap.importers.liger.write import write_dimensions

BUNDLES = "bundles"
# Liger's own key of a row (its scripts overwrite the row with this key)
ROW_KEY = ("kernel_name", "kernel_provider", "kernel_operation_mode", "metric_name", "x_name",
           "x_value", "extra_benchmark_config_str", "gpu_name")  # fmt: skip


@dataclass
class Collected:
    """What an import found in an experiment folder."""

    folder: Path
    plan: dict[str, Any]
    runs_passed: int = 0
    runs_other: list[str] = field(default_factory=list)  # "name: status"
    pending: int = 0
    csv_files: int = 0
    bundles: int = 0
    skipped_rows: int = 0
    slower_repeats: int = 0  # rows of a repeat that another repeat of its group beat

    def summary(self) -> str:
        """One line for stderr."""
        other = f", {len(self.runs_other)} not passed" if self.runs_other else ""
        left = f", {self.pending} still pending" if self.pending else ""
        slower = (f", {self.slower_repeats} slower repeat row(s) left out"
                  if self.slower_repeats else "")  # fmt: skip
        return (
            f"{self.runs_passed} run(s) passed{other}{left}: {self.csv_files} CSV file(s), "
            f"{self.bundles} run bundle(s), {self.skipped_rows} row(s) skipped{slower}"
        )


def is_liger_csv(path: Path) -> bool:
    """Whether a CSV has Liger's benchmark header."""
    with path.open(encoding="utf-8", errors="replace") as handle:
        header = handle.readline()
    return all(column in header for column in COLUMNS)


def labels_for(plan: dict[str, Any], record: dict[str, Any]) -> dict[str, str]:
    """The experiment's labels of one run (see the module docstring)."""
    variant = plan["variants"][record["variant"]]
    labels = {
        "version": variant["version"],
        "kindex_code": variant["code"],
        "kindex_invocation": record["invocation"],
        "kindex_round": str(record["round"]),
        "kindex_variant": record["variant"],
        "kindex_experiment": plan["name"],
    }
    if variant.get("wheel_sha256"):
        labels["kindex_wheel_sha256"] = variant["wheel_sha256"]
    return labels


def _label(bundle: dict[str, Any], labels: dict[str, str], invocation: str) -> None:
    """Put the labels on the run and make its externalId the invocation's own."""
    run = bundle["run"]
    run["metadata"]["labels"] = {**run["metadata"].get("labels", {}), **labels}
    native = run["spec"]["sourceNative"]
    native["externalId"] = f"{invocation}/{native['externalId']}"


def collect(folder: Path) -> Collected:
    """Convert every passed run's CSVs into labelled bundles under folder/bundles."""
    plan = read_json(folder / PLAN_FILE)
    if not plan:
        raise SourceError(f"{folder}: no {PLAN_FILE}: not a kindex bench experiment folder")
    state = read_json(folder / STATE_FILE).get("runs", {})
    out = Collected(folder, plan)
    converter = Converter()
    raw = folder / BUNDLES
    raw.mkdir(exist_ok=True)
    groups: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    for name, record in sorted(state.items()):
        if record["status"] != "passed":
            out.runs_other.append(f"{name}: {record['status']}")
            continue
        out.runs_passed += 1
        groups.setdefault(record.get("group") or name, []).append((name, record))
    for runs in groups.values():
        _collect_group(folder, plan, runs, converter, raw, out)
    write_dimensions(raw, converter.dimensions)
    from kindex_olap.experiment.standalone import pending

    out.pending = len(pending(plan, {"runs": state}))
    if not out.bundles:
        raise SourceError(
            f"{folder}: no run left a Liger-format CSV row ({out.summary()})",
            hint=f"see each run's stderr.txt and stdout.txt under {folder / 'runs'}",
        )
    return out


def _collect_group(
    folder: Path,
    plan: dict[str, Any],
    runs: list[tuple[str, dict[str, Any]]],
    converter: Converter,
    raw: Path,
    out: Collected,
) -> None:
    """Convert a group's rows (one run's, or the fastest of its repeats') into bundles."""
    for row, record in group_rows(folder, runs, out):
        labels = labels_for(plan, record)
        if len(runs) > 1:
            labels["kindex_repeats"] = str(len(runs))
        result = converter.convert(row)
        if isinstance(result, tuple):
            out.skipped_rows += 1
            continue
        _label(result.bundle, labels, record["invocation"])
        text = bundle_text(result.display, result.bundle)
        key = hashlib.sha256(json.dumps(result.bundle["run"], sort_keys=True).encode())
        write_if_changed(raw / f"bench_{key.hexdigest()[:24]}.txt", text.encode())
        out.bundles += 1


def group_rows(
    folder: Path, runs: list[tuple[str, dict[str, Any]]], out: Collected
) -> list[tuple[dict[str, str], dict[str, Any]]]:
    """(row, run record) to import: every row of a lone run; of a group of repeats, per row key
    (ROW_KEY) the row with the smallest median (y_value_50) and the run it came from."""
    rows = []
    for name, record in runs:
        run_dir = folder / "runs" / name
        for csv_path in sorted(p for p in run_dir.rglob("*.csv") if is_liger_csv(p)):
            out.csv_files += 1
            for _line, row, problem in read_rows(csv_path):
                if problem:
                    out.skipped_rows += 1
                else:
                    rows.append((row, record))
    if len(runs) < 2:
        return rows
    best: dict[tuple[str, ...], tuple[dict[str, str], dict[str, Any]]] = {}
    for row, record in rows:
        key = tuple(row[c] for c in ROW_KEY)
        if key not in best or _median(row) < _median(best[key][0]):
            best[key] = (row, record)
    out.slower_repeats += len(rows) - len(best)
    return list(best.values())


def _median(row: dict[str, str]) -> float:
    try:
        value = float(row["y_value_50"])
    except ValueError:
        return math.inf
    return value if math.isfinite(value) else math.inf
