"""`kindex sql`'s answer written as DuckDB streams it, against the whole answer fetched first
(query/readonly.run_sql, the path it replaced), in one run: wall time and peak RSS of each, in a
process of its own, and their ratios.

    python bench/sql_output.py [--lake DIR] [--rows N] [--format csv|json|markdown|table]

Without --lake it makes a small lake of crafted bundles and answers a generated query of --rows
rows (`range`); with --lake it answers `SELECT * FROM speedups` of that lake (the real lake: 655k
rows). Figures in docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

# the whole-answer path, as `kindex sql` ran before it streamed
WHOLE = """
import sys
from kindex_olap.cli.output import Format, write
from kindex_olap.query.readonly import run_sql
result = run_sql(sys.argv[1], sys.argv[2])
write(result.columns, result.rows, Format(sys.argv[3]), sys.stdout)
"""


def measure(argv: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (MiB) of a process whose stdout is discarded."""
    script = (
        "import resource, subprocess, sys, time\n"
        "start = time.perf_counter()\n"
        "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)\n"
        "print(time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, *argv], capture_output=True, text=True, check=True
    )
    wall, peak = done.stdout.split()
    return float(wall), int(peak) // 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lake", type=Path)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--format", default="csv")
    args = parser.parse_args()
    lake = args.lake
    sql = "SELECT * FROM speedups"
    if lake is None:
        import crafted

        work = Path(tempfile.mkdtemp(prefix="kindex-sql-bench-"))
        lake = crafted.ingest_bundles(work / "in", [crafted.run("liger")], work / "lake")
        sql = (
            "SELECT i, i * 1.5 AS x, 'row ' || i AS label, i % 7 = 0 AS flag "
            f"FROM range({args.rows}) t(i)"
        )
    whole = [sys.executable, "-c", WHOLE, sql, str(lake), args.format]
    streamed = [sys.executable, "-m", "kindex_olap", "sql", sql, "--lake", str(lake)]
    streamed += ["--format", args.format]
    print(f"{sql[:70]} ({args.format}), load {os.getloadavg()[0]:.1f}")
    figures = {"whole answer first": measure(whole), "streamed": measure(streamed)}
    for name, (wall, peak) in figures.items():
        print(f"  {name:<20} {wall:7.2f} s  {peak:6d} MiB")
    (w_wall, w_peak), (s_wall, s_peak) = figures.values()
    print(f"  streamed / whole:    {s_wall / w_wall:7.2f}x time  {s_peak / w_peak:5.2f}x peak RSS")


if __name__ == "__main__":
    start = time.perf_counter()
    main()
    print(f"({time.perf_counter() - start:.1f} s)")
