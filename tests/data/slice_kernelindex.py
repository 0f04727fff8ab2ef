"""Cut the KernelIndex catalog exports in tests/data/kernelindex from the full ones in ../shared.

Usage (from the repository root, with ../shared beside it):

    .venv/bin/python tests/data/slice_kernelindex.py ../shared/data/kernelindex tests/data/kernelindex

Deterministic: the same full exports give byte-identical slices. The rule, on the export with
serving runs (0022af0b):
- for each operation, its first workload (line order) that has benchmark runs, and the first
  RUNS_PER_WORKLOAD runs of that workload (so leaderboard cells still hold several entries);
- every run whose workload and implementation name different operations (operation_mismatch);
- the first SERVING_RUNS serving runs;
- the measurements and record events of the kept runs, the workloads and implementations they
  link, the first ARTIFACTS artifacts (a table the importer skips), and every other row whole.
The kernels-only export (94af2ae7) keeps the same kernel runs (by id) under the same rule.
Lines are copied byte for byte, in their original order, and recompressed with zstd level 19.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

import zstandard

RUNS_PER_WORKLOAD = 6
SERVING_RUNS = 60
ARTIFACTS = 20
EXPORTS = ("catalog-2026-08-16-0022af0b.jsonl.zst", "catalog-2026-08-16-94af2ae7.jsonl.zst")


def read_lines(path: Path) -> list[bytes]:
    with path.open("rb") as handle:
        data = zstandard.ZstdDecompressor().stream_reader(handle).read()
    return data.splitlines(keepends=True)


def choose(lines: list[bytes]) -> set[str]:
    """The ids of the benchmark and serving runs to keep (from the export with serving runs)."""
    rows: dict[str, list[dict]] = defaultdict(list)
    for line in lines:
        item = json.loads(line)
        rows[item["table"]].append(item["row"])
    workloads = {w["id"]: w for w in rows["workloads"]}
    implementations = {i["id"]: i for i in rows["implementations"]}
    by_workload: dict[str, list[dict]] = defaultdict(list)
    first: dict[str, str] = {}
    keep: set[str] = set()
    for run in rows["benchmark_runs"]:
        workload = workloads[run["workloadId"]]
        by_workload[run["workloadId"]].append(run)
        first.setdefault(workload["operationId"], run["workloadId"])
        implementation = implementations.get(run["implementationId"]) or {}
        if implementation.get("operationId") != workload["operationId"]:
            keep.add(run["id"])
    for workload_id in first.values():
        keep.update(run["id"] for run in by_workload[workload_id][:RUNS_PER_WORKLOAD])
    keep.update(run["id"] for run in rows["serving_runs"][:SERVING_RUNS])
    return keep


def cut(lines: list[bytes], runs: set[str]) -> bytes:
    """The lines of one export that the kept runs need, in order."""
    items = [json.loads(line) for line in lines]
    linked: dict[str, set[str]] = {"workloads": set(), "implementations": set()}
    for item in items:
        if item["table"] == "benchmark_runs" and item["row"]["id"] in runs:
            linked["workloads"].add(item["row"]["workloadId"])
            linked["implementations"].add(item["row"]["implementationId"])
    out, artifacts = [], 0
    for line, item in zip(lines, items, strict=True):
        table, row = item["table"], item["row"]
        if table in ("benchmark_runs", "serving_runs"):
            kept = row["id"] in runs
        elif table in ("measurements", "serving_measurements", "record_events"):
            kept = row["runId"] in runs
        elif table in linked:
            kept = row["id"] in linked[table]
        elif table == "artifacts":
            artifacts += 1
            kept = artifacts <= ARTIFACTS
        else:
            kept = True
        if kept:
            out.append(line)
    return b"".join(out)


def main(source: Path, target: Path) -> None:
    full = {name: read_lines(source / name) for name in EXPORTS}
    runs = choose(full[EXPORTS[0]])
    for name in EXPORTS:
        data = cut(full[name], runs)
        (target / name).write_bytes(zstandard.ZstdCompressor(level=19).compress(data))
        count = data.count(b"\n")
        print(f"{name}: {count} of {len(full[name])} lines")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
