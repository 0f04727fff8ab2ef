"""`kindex export`'s time and peak memory under its memory limit, against the same export
without one, measured in the same run.

    .venv/bin/python bench/export.py --lake LAKE              # a lake made before
    .venv/bin/python bench/export.py --n 1000000             # builds one (minutes)
    .venv/bin/python bench/export.py --lake LAKE --rounds 2  # alternating, twice

Each export is a process of its own writing into a new folder; peak RSS is the largest sum over
the process and its descendants, sampled every 50 ms (bench/ingest.py's `timed`). The baseline
is the same export with DuckDB's memory limit lifted (its default, 80 % of RAM: what kindex did
before the limit), so the ratios say what bounding the memory costs in time and saves in memory.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

from compact import build, scratch
from ingest import Measured, timed

EXPORT = r"""
import sys
from kindex_olap.doors import export
if sys.argv[3] != "limit":
    export.MEMORY_LIMIT = sys.argv[3]
print(export.export(sys.argv[1], None, sys.argv[2]).summary())
"""


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lake", type=Path, help="a lake made before")
    parser.add_argument("--n", type=int, default=100_000, help="bundles of a new lake")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--work", type=Path, help="scratch folder (default: a temp dir)")
    options = parser.parse_args()
    with scratch(options.work, "kindex-export-") as work:
        lake = options.lake or build(options.n, 1, work)
        from kindex_olap.lake.spill import MEMORY_LIMIT

        # DuckDB's own default: 80 % of RAM
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        unlimited = f"{int(ram * 0.8) // 2**20}MB"
        measured: dict[str, list[Measured]] = {}
        for _ in range(options.rounds):
            for label, limit in (("no limit", unlimited), (MEMORY_LIMIT, "limit")):
                out = work / "out"
                shutil.rmtree(out, ignore_errors=True)
                m = timed([sys.executable, "-c", EXPORT, str(out), str(lake), limit])
                measured.setdefault(label, []).append(m)
                print(
                    f"kindex export, {label:<9} {m.seconds:7.2f} s  rss {m.tree_rss:6.0f} MiB"
                    f"   {m.stdout.decode().strip()[:60]}",
                    flush=True,
                )
        base, limited = measured["no limit"], measured[MEMORY_LIMIT]
        time_ratio = sum(m.seconds for m in limited) / sum(m.seconds for m in base)
        rss_ratio = max(m.tree_rss for m in limited) / max(m.tree_rss for m in base)
        print(f"limited / no limit: {time_ratio:.2f}x time, {rss_ratio:.2f}x peak RSS")


if __name__ == "__main__":
    main()
