"""Planted versions in Liger's real benchmark history (issue 20's acceptance experiment).

A version 9.9.9 is added to `cells` randomly chosen cells of the history CSV (a fixed seed):
liger's newest run of the cell scaled by `factor` (times lognormal noise when `sigma` is given),
the cell's baseline's newest run unscaled, both a day after the CSV's last timestamp and first
seen in one new commit on main. `versions` plants several versions in turn, a day apart (the
factor applies to the last; the others are x1.0, each its own commit), and `repeats` times each
version a cell as that many runs of the same code, each with its own noise draw (a CI fleet's
replicates). A cell is a kernel, pass, shape and GPU of the speed metric
whose newest liger and baseline rows were seen on main (so that the default, main-branch
history has a point before the plant).
"""

from __future__ import annotations

import csv
import io
import random
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

REFERENCES = ("torch", "huggingface")  # the cells' baselines (kindex_reference_rank's first)
CELL = ("kernel_name", "kernel_operation_mode", "x_name", "x_value",
        "extra_benchmark_config_str", "gpu_name")  # fmt: skip
PLANTED_COMMIT = "9" * 40


def read_rows(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        return list(reader.fieldnames or []), list(reader)


def _newest(rows: list[dict[str, str]]) -> dict[str, str]:
    return max(rows, key=lambda r: (r["timestamp"], r["first_seen_date"]))


def candidate_cells(rows: list[dict[str, str]]) -> dict[tuple[str, ...], dict[str, dict[str, str]]]:
    """Cells with a main-branch liger row and a main-branch baseline row: the newest of each."""
    by_cell: dict[tuple[str, ...], dict[str, list[dict[str, str]]]] = {}
    for row in rows:
        if row["metric_name"] != "speed" or row["on_main_history"] != "1":
            continue
        provider = row["kernel_provider"]
        if provider != "liger" and provider not in REFERENCES:
            continue
        by_cell.setdefault(tuple(row[c] for c in CELL), {}).setdefault(provider, []).append(row)
    cells = {}
    for key, providers in by_cell.items():
        baseline = next((p for p in REFERENCES if p in providers), None)
        if "liger" in providers and baseline:
            cells[key] = {
                "liger": _newest(providers["liger"]),
                "baseline": _newest(providers[baseline]),
            }
    return cells


def plant(
    source: Path,
    factor: float,
    *,
    seed: int = 20,
    cells: int = 20,
    sigma: float | dict[tuple[str, ...], float] | None = None,
    noise_seed: int = 0,
    versions: tuple[str, ...] = ("9.9.9",),
    repeats: int = 1,
) -> tuple[str, list[tuple[str, ...]]]:
    """The planted rows as CSV text (the source's header) and the planted cells."""
    header, rows = read_rows(source)
    chosen_cells = candidate_cells(rows)
    keys = random.Random(seed).sample(sorted(chosen_cells), cells)
    last = max(datetime.fromisoformat(r["timestamp"]) for r in rows)
    rng = np.random.default_rng(noise_seed)
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=header, lineterminator="\n")
    writer.writeheader()
    for number, version in enumerate(versions):
        newest = number == len(versions) - 1
        commit = PLANTED_COMMIT if newest else f"{number + 1:x}" * 40
        for repeat in range(repeats):
            moment = last + timedelta(days=number + 1, minutes=repeat)
            when = moment.strftime("%Y-%m-%d %H:%M:%S")
            for key in keys:
                for side in ("liger", "baseline"):
                    row = dict(chosen_cells[key][side])
                    scale = factor if side == "liger" and newest else 1.0
                    cell_sigma = sigma.get(key) if isinstance(sigma, dict) else sigma
                    if cell_sigma:
                        scale *= float(rng.lognormal(0.0, cell_sigma))
                    for column in ("y_value_50", "y_value_20", "y_value_80"):
                        if row[column]:
                            row[column] = repr(float(row[column]) * scale)
                    row.update(
                        timestamp=when, liger_version=version, first_seen_commit=commit,
                        last_seen_commit=commit, first_seen_date=when.replace(" ", "T") + "+00:00",
                        on_main_history="1", in_head="1",
                    )  # fmt: skip
                    writer.writerow(row)
    return out.getvalue(), keys
