"""How much of the ingest budget validation alone costs: the floor under `bench/ingest.py`.

    .venv/bin/python bench/validation_floor.py --n 1000000

Times, on the same JSONL and in the same run as the baseline of bench/ingest.py (DuckDB
`read_ndjson` with explicit columns -> `COPY ... TO parquet`):
  - parsing alone: orjson.loads of every line, in one process per core;
  - the schema check alone: msgspec decoding every line into kindex's validated types (the
    cheapest complete check Python has), one process per core;
  - the schema checks DuckDB could do itself, without writing anything: the lines read raw,
    every strict object's keys listed (unknown, missing and repeated keys) and the run decoded
    into typed columns (json_transform).
None of these computes an identity, flattens or writes a row; each is a lower bound for a
validating ingest built that way.
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from synthetic import write_jsonl

BASELINE = Path(__file__).with_name("ingest.py")

DUCKDB_CHECKS = r"""
import sys, duckdb
con = duckdb.connect()
con.execute("SET enable_progress_bar = false").fetchall()
con.execute("SET VARIABLE src = ?", [sys.argv[1]]).fetchall()
con.execute('''
CREATE TEMP TABLE lines AS
SELECT doc FROM read_csv(getvariable('src'), columns = {'doc': 'VARCHAR'}, delim = E'\x01',
                         quote = '', escape = '', header = false, auto_detect = false)
''').fetchall()
con.execute('''
SELECT count(*),
       sum(len(json_keys(doc, ['$', '$.run', '$.run.metadata', '$.run.spec', '$.run.spec.timing',
                               '$.run.spec.timing.latencyNs', '$.run.spec.sourceNative',
                               '$.run.metadata.labels', '$.run.spec.sourceNative.metrics']))),
       count(json_transform(doc, '{"run": {"apiVersion": "VARCHAR", "kind": "VARCHAR",
           "metadata": {"name": "VARCHAR", "title": "VARCHAR", "labels": "MAP(VARCHAR, VARCHAR)"},
           "spec": {"status": "VARCHAR", "observedAt": "VARCHAR", "protocolDigest": "VARCHAR",
                    "workloadDigest": "VARCHAR", "environmentDigest": "VARCHAR",
                    "implementationDigest": "VARCHAR",
                    "timing": {"primaryStatistic": "VARCHAR", "latencyNs": {"median": "DOUBLE"}},
                    "measurements": [{"metric": "VARCHAR", "unit": "VARCHAR",
                                      "statistic": "VARCHAR", "value": "DOUBLE"}],
                    "sourceNative": {"source": "VARCHAR", "benchmark": "VARCHAR",
                                     "externalId": "VARCHAR",
                                     "metrics": "MAP(VARCHAR, DOUBLE)"}}}}'))
FROM lines
''').fetchall()
"""


def _lines_of(path: str, part: int, parts: int) -> list[bytes]:
    with open(path, "rb") as handle:
        lines = handle.read().split(b"\n")
    return [line for line in lines[part::parts] if line]


def _parse(args: tuple[str, int, int]) -> float:
    import orjson

    lines = _lines_of(*args)
    started = time.perf_counter()
    for line in lines:
        orjson.loads(line)
    return time.perf_counter() - started


def _decode(args: tuple[str, int, int]) -> float:
    import msgspec

    from kindex_olap.ingestion.stage import _ENVELOPE

    lines = _lines_of(*args)
    started = time.perf_counter()
    for line in lines:
        with contextlib.suppress(msgspec.ValidationError):  # the few invalid ones
            _ENVELOPE.decode(line)
    return time.perf_counter() - started


def _in_processes(work: object, path: str, processes: int) -> float:
    """Wall time of `work` over the file split between processes (reading excluded)."""
    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        return max(pool.map(work, [(path, i, processes) for i in range(processes)]))  # type: ignore[arg-type]


def _subprocess_seconds(code: str, *args: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code, *args], check=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--work", type=Path, default=None)
    args = parser.parse_args()
    sys.path.insert(0, str(BASELINE.parent))
    from ingest import BASELINE as BASELINE_CODE  # bench/ingest.py's baseline, same code

    cores = multiprocessing.cpu_count()
    with tempfile.TemporaryDirectory(dir=args.work) as scratch:
        jsonl = str(write_jsonl(args.n, Path(scratch) / "bundles.jsonl"))
        base = _subprocess_seconds(BASELINE_CODE, jsonl, str(Path(scratch) / "base.parquet"))
        rows = [
            ("baseline: read_ndjson -> COPY parquet", base),
            (f"orjson.loads only, {cores} processes", _in_processes(_parse, jsonl, cores)),
            (f"msgspec typed decode only, {cores} processes", _in_processes(_decode, jsonl, cores)),
            (
                "DuckDB: raw lines + json_keys + json_transform",
                _subprocess_seconds(DUCKDB_CHECKS, jsonl),
            ),
        ]
    print(f"N = {args.n:,}; {cores} cores")
    for label, seconds in rows:
        print(f"{label:<50} {seconds:7.2f} s  {seconds / base:5.2f}x baseline time")


if __name__ == "__main__":
    main()
