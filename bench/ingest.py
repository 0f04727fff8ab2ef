"""Ingest throughput and memory, against DuckDB's own JSON -> Parquet path measured in the same run.

    .venv/bin/python bench/ingest.py                          # N = 100k
    .venv/bin/python bench/ingest.py --n 100000 1000000       # and 1M (minutes; not for CI)
    .venv/bin/python bench/ingest.py --n 5000000 --only jsonl # 5M: one big file (9 GB of JSONL)
    .venv/bin/python bench/ingest.py --n 5000000 --only jsonl --jsonl b5m.jsonl  # made before
    .venv/bin/python bench/ingest.py --n 5000000 --only jsonl --library-only --no-baselines \
        --jsonl b5m.jsonl      # peak RSS of the library call alone (and adding 1k to 5M)

For each N it prints bundles/s, wall time, CPU time (user + system of the process and its
workers) and peak RSS (the largest sum over the process and its workers, sampled every 50 ms;
also the kernel's own peak of the largest single process) of:
  - two baselines on the same JSONL, neither validating, identifying nor deduplicating:
      raw:    DuckDB `read_ndjson` with an explicit column list -> Parquet (the issue's 1x);
      sorted: the rows the lake stores, written as the lake writes them: runs sorted by the
              lake's sort order and partitioned by source and year, the measurements rows
              (timing statistics and measurements) sorted by run id (the fair floor);
  - kindex ingest of one JSONL file (full validation, identity digests, dedup, rejects);
  - kindex ingest of one seed-text file per bundle (N/10 files for N >= 1M: file count, not
    size, is what this path measures);
and the time to add 1k new bundles to the lake just built: through the CLI (what a user
waits for, the layers' update included), and as a library call with the layers' update off (the
layers are another part's cost: kindex_olap/layers), both as a whole process and inside the
call. Every path runs in its own process.

    .venv/bin/python bench/ingest.py --before ../main --library-only   # before/after, same run

`--before DIR` runs every kindex path also with the code of another checkout (PYTHONPATH=DIR),
alternating before and after, and prints after/before ratios; `--library-only` leaves out the
CLI paths (whose time is mostly the layers' update at 100k); `--add-rounds N` adds 1k bundles N
times with each version (default 2) and prints the median time inside the call of each.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from statistics import median

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

# Adding bundles as a library call, the layers' update off; prints the call's wall and CPU seconds.
ADD_WITHOUT_LAYERS = r"""
import os, sys, time
from kindex_olap.ingestion import pipeline
from kindex_olap.layers import build
build.needs_update = lambda tx: False
if os.environ.get("KINDEX_BENCH_WORKERS"):  # --workers: another number of staging processes
    pipeline._workers = lambda: int(os.environ["KINDEX_BENCH_WORKERS"])
wall, cpu = time.perf_counter(), time.process_time()
pipeline.ingest([sys.argv[1]], sys.argv[2])
print(time.perf_counter() - wall, time.process_time() - cpu)
"""

SORTED_BASELINE = r"""
import sys, duckdb
con = duckdb.connect()
con.execute("SET memory_limit = '512MB'")
con.execute("SET preserve_insertion_order = false")
con.execute("SET temp_directory = ?", [sys.argv[2] + '.spill'])
con.execute("SET VARIABLE src = ?", [sys.argv[1]]).fetchall()
con.execute('''
CREATE TABLE runs AS
SELECT sha256(run.metadata.name) AS run_id, run.metadata.name AS name, run.spec.status AS status,
       run.spec.observedAt::TIMESTAMP AS observed_at, year(run.spec.observedAt::TIMESTAMP) AS year,
       run.spec.protocolDigest AS protocol_digest, run.spec.workloadDigest AS workload_digest,
       run.spec.environmentDigest AS environment_digest,
       run.spec.implementationDigest AS implementation_digest,
       split_part(run.spec.sourceNative.benchmark, '/', 1) AS kernel,
       split_part(run.spec.sourceNative.benchmark, '/', 2) AS pass,
       run.spec.sourceNative.source AS source, run.spec.sourceNative.benchmark AS benchmark,
       run.metadata.labels AS labels, run.spec.timing.latencyNs AS timing,
       run.spec.measurements AS spec_measurements
FROM read_ndjson(getvariable('src'), columns = {
  'run': 'STRUCT(metadata STRUCT(name VARCHAR, labels MAP(VARCHAR, VARCHAR)),
                 spec STRUCT(status VARCHAR, observedAt VARCHAR, protocolDigest VARCHAR,
                             workloadDigest VARCHAR, environmentDigest VARCHAR,
                             implementationDigest VARCHAR,
                             timing STRUCT(latencyNs MAP(VARCHAR, BIGINT)),
                             measurements STRUCT(metric VARCHAR, unit VARCHAR, statistic VARCHAR,
                                                 value DOUBLE)[],
                             sourceNative STRUCT(benchmark VARCHAR, source VARCHAR)))',
  'protocol': 'JSON', 'environment': 'JSON', 'display': 'VARCHAR'})
''').fetchall()
con.sql('''SELECT * EXCLUDE (timing, spec_measurements) FROM runs
ORDER BY kernel, environment_digest, pass, workload_digest, implementation_digest''').write_parquet(
    sys.argv[2] + '.runs', compression='zstd', partition_by=['source', 'year'],
    write_partition_columns=False)
con.execute('''CREATE TABLE measurements AS
SELECT run_id, 'latency' AS metric, e.key AS statistic, e.value::DOUBLE AS value
FROM (SELECT run_id, unnest(map_entries(timing)) AS e FROM runs)
UNION ALL
SELECT run_id, m.metric, m.statistic, m.value
FROM (SELECT run_id, unnest(spec_measurements) AS m FROM runs)
''').fetchall()
con.sql('SELECT * FROM measurements ORDER BY run_id').write_parquet(
    sys.argv[2] + '.measurements', compression='zstd')
"""


@dataclass
class Measured:
    seconds: float
    cpu: float  # user + system seconds of the process and its children
    tree_rss: float  # MiB: the largest sum of RSS over the process and its descendants
    max_rss: float  # MiB: the kernel's peak of the largest single process
    stdout: bytes = b""
    stderr: bytes = b""


def timed(command: list[str], code: Path | None = None) -> Measured:
    """Run a command to its end, sampling the RSS of it and its descendants; with `code`, the
    kindex_olap of that checkout is imported (PYTHONPATH)."""
    env = dict(os.environ, PYTHONPATH=str(code)) if code else None
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    peak = 0
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            break
        peak = max(peak, tree_rss(process.pid))
        time.sleep(0.05)
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(
            f"{command} failed: {process.stderr.read().decode() if process.stderr else ''}"
        )
    # the usage of a waited process includes the children it waited for (the workers)
    cpu = usage.ru_utime + usage.ru_stime
    out = process.stdout.read() if process.stdout else b""
    err = process.stderr.read() if process.stderr else b""
    return Measured(seconds, cpu, peak / 2**20, usage.ru_maxrss / 1024, out, err)


def tree_rss(root: int) -> int:
    """Bytes resident in `root` and all its descendants (from /proc; 0 once it has ended)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    page = os.sysconf("SC_PAGE_SIZE")
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(name))
        rss[int(name)] = int(fields[21]) * page
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        total += rss.get(pid, 0)
        stack.extend(children.get(pid, []))
    return total


def kindex(*args: str) -> list[str]:
    return [sys.executable, "-m", "kindex_olap", *args, "-q"]


def report(
    label: str, n: int, m: Measured, baselines: tuple[Measured, Measured] | None = None
) -> None:
    """One line: rate, wall, CPU, peak RSS; against the baselines, wall and CPU ratios (CPU time
    is what a loaded machine moves least)."""
    ratio = ""
    if baselines:
        raw, ordered = baselines
        ratio = (
            f"  wall {m.seconds / raw.seconds:5.2f}x raw {m.seconds / ordered.seconds:5.2f}x sorted"
            f", cpu {m.cpu / raw.cpu:5.2f}x raw {m.cpu / ordered.cpu:5.2f}x sorted"
        )
    print(
        f"{label:<46} {n / m.seconds:>9,.0f}/s {m.seconds:7.2f} s  cpu {m.cpu:7.2f} s  "
        f"rss {m.tree_rss:5.0f} MiB (one process {m.max_rss:4.0f}){ratio}",
        flush=True,
    )


@dataclass
class Options:
    only: str | None = None
    given: Path | None = None  # an existing JSONL file of n bundles
    before: Path | None = None  # a checkout whose code is measured too, for before/after ratios
    library_only: bool = False  # leave out the CLI paths (the layers' update)
    no_baselines: bool = False  # leave out the two DuckDB baselines (a 5M memory run)
    add_rounds: int = 2  # additions of 1k measured per version of the code


def versions(options: Options, rounds: int = 1) -> list[tuple[str, Path | None]]:
    """(label, code) of the code measured: this checkout, and `before` first when given; both
    `rounds` times, alternating."""
    if not options.before:
        return [("", None)] * rounds
    return [("before", options.before), ("after", None)] * rounds


def library(
    label: str,
    n: int,
    inputs: list[Path],
    lake: Path,
    options: Options,
    baselines: tuple[Measured, Measured] | None = None,
    fresh: bool = True,
) -> None:
    """Ingest as a library call without the layers' update, with each version of the code
    (alternating), into a fresh lake (or, not `fresh`, into `lake` as it is: one input each)."""
    measured: dict[str, list[Measured]] = {}
    inside: dict[str, list[tuple[float, float]]] = {}  # the call's own wall and CPU seconds
    # fresh: one input, once per version; else one input per run, the versions alternating
    rounds = 1 if fresh else len(inputs) // len(versions(options))
    for number, (version, code) in enumerate(versions(options, rounds)):
        if fresh:
            shutil.rmtree(lake, ignore_errors=True)
        source = inputs[0] if fresh else inputs[number]
        m = timed([sys.executable, "-c", ADD_WITHOUT_LAYERS, str(source), str(lake)], code)
        if not m.stdout.strip():  # the call failed (exit 1 is allowed for the CLI's rejects)
            raise SystemExit(f"{label} {version} failed:\n{m.stderr.decode()[-4000:]}")
        measured.setdefault(version, []).append(m)
        report(f"{label} {version}".rstrip(), n, m, baselines)
        # the last line: DuckDB may print its progress bar to stdout before it (the before code)
        call_wall, call_cpu = (float(x) for x in m.stdout.splitlines()[-1].split())
        inside.setdefault(version, []).append((call_wall, call_cpu))
        print(f"{'    inside the call':<46} {'':>11} {call_wall:7.2f} s  cpu {call_cpu:7.2f} s")
    if options.before:  # summed over the rounds
        b, a = measured["before"], measured["after"]
        wall = sum(m.seconds for m in a) / sum(m.seconds for m in b)
        cpu = sum(m.cpu for m in a) / sum(m.cpu for m in b)
        rss = max(m.tree_rss for m in a) / max(m.tree_rss for m in b)
        print(
            f"{'    after / before':<46} {'':>11} wall {wall:5.2f}   cpu {cpu:5.2f}   rss {rss:5.2f}",
            flush=True,
        )
        for version, calls in inside.items():
            walls = sorted(w for w, _ in calls)
            cpus = sorted(c for _, c in calls)
            print(
                f"{f'    inside the call, {version}':<46} {'':>11} median {median(walls):.3f} s "
                f"(min {walls[0]:.3f}, max {walls[-1]:.3f}), cpu median {median(cpus):.3f} s",
                flush=True,
            )


def measure_baselines(n: int, jsonl: Path, work: Path) -> tuple[Measured, Measured]:
    """The raw and sorted DuckDB baselines on `jsonl`, each reported."""
    raw = timed([sys.executable, "-c", BASELINE, str(jsonl), str(work / "baseline.parquet")])
    report("DuckDB read_ndjson -> Parquet (raw baseline)", n, raw)
    ordered = timed([sys.executable, "-c", SORTED_BASELINE, str(jsonl), str(work / "sorted")])
    report("DuckDB, the lake's tables sorted (sorted)", n, ordered)
    return raw, ordered


def run(n: int, work: Path, options: Options) -> None:
    print(f"\nN = {n:,}  (load average {os.getloadavg()[0]:.1f})", flush=True)
    lake = work / f"lake-{n}"
    only, given, cli = options.only, options.given, not options.library_only
    if only in (None, "jsonl"):
        jsonl = given or write_jsonl(n, work / f"bundles-{n}.jsonl")
        baselines = None if options.no_baselines else measure_baselines(n, jsonl, work)
        if cli:
            measured = timed(kindex("ingest", str(jsonl), "--lake", str(lake)))
            report("kindex ingest, one JSONL file", n, measured, baselines)
        bare = work / f"lake-{n}-no-layers"
        label = "JSONL, library call, no layers' update"
        library(label, n, [jsonl], bare, options, baselines)
        if cli:
            shutil.rmtree(bare)
        else:  # the lake the 1k are added to
            bare.rename(lake)
        if given is None:
            jsonl.unlink()
    if only in (None, "files"):
        files_n = n if n < 1_000_000 else n // 10
        folder = write_files(files_n, work / f"files-{files_n}")
        if cli:
            measured = timed(kindex("ingest", str(folder), "--lake", str(work / f"lake-files-{n}")))
            report(f"kindex ingest, {files_n:,} seed-text files", files_n, measured)
        label = f"{files_n:,} seed-text files, library, no layers"
        library(label, files_n, [folder], work / f"lake-files-{n}-bare", options)
        shutil.rmtree(folder)
    if only in (None, "jsonl"):
        if cli:
            extra = write_jsonl(1000, work / "extra.jsonl", start=n + 10_000_000)
            measured = timed(kindex("ingest", str(extra), "--lake", str(lake)))
            report(f"add 1k new bundles to the {n:,}-run lake", 1000, measured)
        extras = [  # fresh bundles for each version of the code, add_rounds times, to the same lake
            write_jsonl(1000, work / f"extra-{number}.jsonl", start=n + (2 + number) * 10**7)
            for number, _ in enumerate(versions(options, options.add_rounds))
        ]
        label = (
            "  the same, library call, no layers' update" if cli else "add 1k, library, no layers"
        )
        library(label, 1000, extras, lake, options, fresh=False)
    print(f"load average after: {os.getloadavg()[0]:.1f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, nargs="*", default=[100_000])
    parser.add_argument("--only", choices=["jsonl", "files"], help="one path (and its baselines)")
    parser.add_argument(
        "--work", type=Path, default=None, help="scratch folder (default: a temp dir)"
    )
    parser.add_argument(
        "--jsonl",
        type=Path,
        default=None,
        help="an existing JSONL file of --n bundles (from synthetic.py) instead of a new one",
    )
    parser.add_argument(
        "--before", type=Path, default=None, help="a checkout whose code is measured too"
    )
    parser.add_argument(
        "--library-only", action="store_true", help="leave out the CLI paths (layers' update)"
    )
    parser.add_argument(
        "--no-baselines",
        action="store_true",
        help="leave out the DuckDB baselines (for a memory run at 5M)",
    )
    parser.add_argument(
        "--add-rounds",
        type=int,
        default=2,
        help="additions of 1k bundles per version of the code (each to the lake as it is then)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="staging processes of the library calls (default: kindex's own choice, one per "
        "core up to MAX_STAGING_WORKERS)",
    )
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores; python {sys.version.split()[0]}")
    if args.workers:
        os.environ["KINDEX_BENCH_WORKERS"] = str(args.workers)  # the library calls' processes
        print(f"staging processes: {args.workers}")
    before = args.before.resolve() if args.before else None
    options = Options(
        args.only, args.jsonl, before, args.library_only, args.no_baselines, args.add_rounds
    )
    if args.work is not None:
        Path(args.work).mkdir(parents=True, exist_ok=True)  # a folder named but not made yet
    with tempfile.TemporaryDirectory(dir=args.work) as scratch:
        for n in args.n:
            run(n, Path(scratch), options)


if __name__ == "__main__":
    main()
