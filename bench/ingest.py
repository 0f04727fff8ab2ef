"""Ingest throughput and memory, against DuckDB's own JSON -> Parquet path measured in the same run.

    .venv/bin/python bench/ingest.py                 # N = 100k
    .venv/bin/python bench/ingest.py --n 1000000     # N = 1M (several minutes; not for CI)

For each N it prints bundles/s and peak RSS of:
  - kindex ingest of one JSONL file (full validation, identity digests, dedup, rejects);
  - kindex ingest of one seed-text file per bundle (N/10 files for N >= 1M: file count, not size,
    is what this path measures);
  - the baseline: DuckDB `read_ndjson` with an explicit column list -> `COPY ... TO parquet`
    of the same JSONL (no validation, no identity, no dedup);
and the time to add 1k new bundles to the lake just built. Every path runs in its own process,
so peak RSS is that process's (and its workers').
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from synthetic import write_files, write_jsonl

BASELINE = r"""
import sys, duckdb
con = duckdb.connect()
con.execute("SET VARIABLE src = ?", [sys.argv[1]]).fetchall()
rel = con.sql('''
SELECT run.metadata.name AS name, run.spec.status AS status, run.spec.observedAt AS observed_at,
       run.spec.protocolDigest AS protocol_digest, run.spec.workloadDigest AS workload_digest,
       run.spec.environmentDigest AS environment_digest,
       run.spec.implementationDigest AS implementation_digest,
       run.spec.timing.latencyNs.median AS median, run.spec.measurements AS measurements,
       run.spec.sourceNative.benchmark AS benchmark, run.metadata.labels AS labels
FROM read_ndjson(getvariable('src'), columns = {
  'run': 'STRUCT(metadata STRUCT(name VARCHAR, labels MAP(VARCHAR, VARCHAR)),
                 spec STRUCT(status VARCHAR, observedAt VARCHAR, protocolDigest VARCHAR,
                             workloadDigest VARCHAR, environmentDigest VARCHAR,
                             implementationDigest VARCHAR,
                             timing STRUCT(latencyNs STRUCT(median BIGINT)),
                             measurements STRUCT(metric VARCHAR, unit VARCHAR, statistic VARCHAR,
                                                 value DOUBLE)[],
                             sourceNative STRUCT(benchmark VARCHAR)))',
  'protocol': 'JSON', 'environment': 'JSON', 'display': 'VARCHAR'})
''')
rel.write_parquet(sys.argv[2], compression='zstd')
"""


def timed(command: list[str]) -> tuple[float, float]:
    """Run a command; return (seconds, peak RSS in MiB of it and its children)."""
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(
            f"{command} failed: {process.stderr.read().decode() if process.stderr else ''}"
        )
    return seconds, usage.ru_maxrss / 1024


def kindex(*args: str) -> list[str]:
    return [sys.executable, "-m", "kindex_olap", *args, "-q"]


def report(label: str, n: int, seconds: float, rss: float, baseline: float | None = None) -> None:
    ratio = f"  {seconds / baseline:5.2f}x baseline time" if baseline else ""
    print(
        f"{label:<44} {n / seconds:>10,.0f} bundles/s  {seconds:7.2f} s  peak {rss:7.0f} MiB{ratio}"
    )


def run(n: int, work: Path) -> None:
    print(f"\nN = {n:,}")
    jsonl = write_jsonl(n, work / f"bundles-{n}.jsonl")
    base_s, base_rss = timed(
        [sys.executable, "-c", BASELINE, str(jsonl), str(work / "baseline.parquet")]
    )
    report("DuckDB read_ndjson -> COPY parquet (baseline)", n, base_s, base_rss)
    lake = work / f"lake-{n}"
    seconds, rss = timed(kindex("ingest", str(jsonl), "--lake", str(lake)))
    report("kindex ingest, one JSONL file", n, seconds, rss, base_s)
    files_n = n if n < 1_000_000 else n // 10
    folder = write_files(files_n, work / f"files-{files_n}")
    seconds, rss = timed(kindex("ingest", str(folder), "--lake", str(work / f"lake-files-{n}")))
    report(f"kindex ingest, {files_n:,} seed-text files", files_n, seconds, rss)
    extra = write_jsonl(1000, work / "extra.jsonl", start=n + 10_000_000)
    seconds, rss = timed(kindex("ingest", str(extra), "--lake", str(lake)))
    print(
        f"{'add 1k new bundles to the ' + format(n, ',') + '-run lake':<44} {seconds:7.2f} s  peak {rss:7.0f} MiB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, nargs="*", default=[100_000])
    parser.add_argument(
        "--work", type=Path, default=None, help="scratch folder (default: a temp dir)"
    )
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores; python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory(dir=args.work) as scratch:
        for n in args.n:
            run(n, Path(scratch))


if __name__ == "__main__":
    main()
