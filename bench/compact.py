"""`kindex compact`'s time and peak memory, against DuckDB rewriting the same files measured in
the same run.

    .venv/bin/python bench/compact.py                       # 100k runs in three ingests
    .venv/bin/python bench/compact.py --n 1000000           # 1M (minutes: the ingests' layers)
    .venv/bin/python bench/compact.py --lake LAKE           # a lake made before (copied, not changed)
    .venv/bin/python bench/compact.py --before ../main      # another checkout's code too, alternating

The lake is `--ingests` ingests of synthetic bundles (bench/synthetic.py) through `kindex
ingest` (its layers included): every partition of runs and measurements then holds a file per
ingest. Each measured compaction runs on a fresh copy of it, in its own process; peak RSS is the
largest sum over the process and its descendants, sampled every 50 ms (bench/ingest.py's
`timed`). The baseline is a DuckDB process, under the same memory limit and threads as kindex's
writes (lake/spill.py), that reads every data file of the lake's newest commit and writes each
table's rows sorted as one Parquet file: what a rewrite of the whole lake costs at the least.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from ingest import Measured, kindex, timed
from synthetic import write_jsonl

# Every data file of the lake's newest commit, rewritten sorted, one file per table (argv: the
# lake, the output folder, the memory limit, the threads).
BASELINE = r"""
import sys
from pathlib import Path
import duckdb
from kindex_olap.lake.store import Lake
from kindex_olap.lake.tables import SORT_ORDER, read_table
lake, out = Lake(sys.argv[1]), Path(sys.argv[2])
con = duckdb.connect()
con.execute("SET memory_limit = ?", [sys.argv[3]]).fetchall()
con.execute("SET threads = ?", [int(sys.argv[4])]).fetchall()
con.execute("SET temp_directory = ?", [str(out / "spill")]).fetchall()
for table, files in lake.snapshot().tables.items():
    if files:
        read_table(con, table, files).query(
            "rows", f"SELECT * FROM rows ORDER BY {SORT_ORDER[table]}"
        ).write_parquet(str(out / f"{table}.parquet"), compression="zstd")
"""


def build(n: int, ingests: int, work: Path) -> Path:
    """A lake of `n` synthetic bundles written by `ingests` ingests."""
    lake = work / "lake"
    size = n // ingests
    for number in range(ingests):
        part = write_jsonl(size, work / f"part-{number}.jsonl", start=number * size)
        measured = timed(kindex("ingest", str(part), "--lake", str(lake)))
        print(f"  ingest {number + 1}/{ingests}: {measured.seconds:.1f} s", flush=True)
        part.unlink()
    return lake


@contextlib.contextmanager
def scratch(given: Path | None, prefix: str) -> Iterator[Path]:
    """The folder a bench works in: `given` (kept), else a temporary one (removed after)."""
    work = Path(given or tempfile.mkdtemp(prefix=prefix))
    work.mkdir(parents=True, exist_ok=True)
    print(f"load average {os.getloadavg()[0]:.1f}", flush=True)
    try:
        yield work
    finally:
        print(f"load average after: {os.getloadavg()[0]:.1f}", flush=True)
        if not given:
            shutil.rmtree(work, ignore_errors=True)


def line(label: str, m: Measured, base: Measured | None = None) -> None:
    ratio = (
        ""
        if base is None
        else (f"   {m.seconds / base.seconds:5.2f}x time, {m.tree_rss / base.tree_rss:5.2f}x rss")
    )
    print(f"{label:<34} {m.seconds:7.2f} s  rss {m.tree_rss:6.0f} MiB{ratio}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=100_000, help="bundles (default 100k)")
    parser.add_argument("--ingests", type=int, default=3, help="ingests that write them")
    parser.add_argument("--lake", type=Path, help="a lake made before, instead of building one")
    parser.add_argument("--before", type=Path, help="a checkout whose code is measured too")
    parser.add_argument("--rounds", type=int, default=1, help="compactions per version")
    parser.add_argument("--work", type=Path, help="scratch folder (default: a temp dir)")
    options = parser.parse_args()
    from kindex_olap.lake.spill import MEMORY_LIMIT, THREADS

    with scratch(options.work, "kindex-compact-") as work:
        lake = options.lake or build(options.n, options.ingests, work)
        from kindex_olap.lake.store import Lake

        files = sum(len(f) for f in Lake(lake).snapshot().tables.values())
        print(f"lake {lake}: {files} data files", flush=True)
        out = work / "baseline"
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        base = timed(
            [sys.executable, "-c", BASELINE, str(lake), str(out), MEMORY_LIMIT, str(THREADS)]
        )
        line("DuckDB, every table sorted", base)
        code = [("before", options.before), ("after", None)] if options.before else [("", None)]
        for _ in range(options.rounds):
            for version, checkout in code:
                copy = work / "copy"
                shutil.rmtree(copy, ignore_errors=True)
                shutil.copytree(lake, copy)
                command = [sys.executable, "-m", "kindex_olap", "compact", "--lake", str(copy)]
                m = timed(command, checkout)
                line(f"kindex compact {version}".rstrip(), m, base)
                print(f"    {m.stderr.decode().strip().splitlines()[-1]}", flush=True)


if __name__ == "__main__":
    main()
