"""Which Parquet layout for the runs table: partition keys and sort order, measured.

    .venv/bin/python bench/layout.py --n 300000

Builds a lake of N synthetic runs with kindex, then writes the same runs in alternative layouts
and times, warm (median of 7), a filtered query (one kernel on one environment, the shape of
`kindex query "speedup jsd b200"`) and a full aggregate (the shape of `summary`), plus the file
count. Figures are ratios against kindex's own layout, measured in the same run.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import duckdb
from synthetic import write_jsonl

from kindex_olap.ingestion.pipeline import ingest
from kindex_olap.lake.store import Lake

FILTERED = """
SELECT pass, workload_digest, implementation_digest, latency_median_ns
FROM read_parquet(getvariable('files'), hive_partitioning = false)
WHERE kernel = 'jsd' AND environment_digest = getvariable('env')
"""
AGGREGATE = """
SELECT kernel, environment_digest, pass, count(*), geomean(latency_median_ns)
FROM read_parquet(getvariable('files'), hive_partitioning = false)
GROUP BY ALL
"""


def layouts(con: duckdb.DuckDBPyConnection, work: Path) -> dict[str, list[str]]:
    """Write the lake's runs again in each alternative layout; return the file lists."""
    out: dict[str, list[str]] = {}
    # kindex's files keep source and year in the folder names (Delta), not inside
    runs = con.sql("SELECT * FROM read_parquet(getvariable('files'), hive_partitioning = true)")
    unsorted = work / "one-file-unsorted.parquet"
    runs.order("run_id").write_parquet(str(unsorted), compression="zstd")
    out["one file, unsorted (by run id)"] = [str(unsorted)]
    order = "kernel, environment_digest, pass, workload_digest"
    for rows in (122_880, 16_384):
        sorted_one = work / f"one-file-sorted-{rows}.parquet"
        runs.order(order).write_parquet(str(sorted_one), compression="zstd", row_group_size=rows)
        out[f"one file, sorted, row groups of {rows:,}"] = [str(sorted_one)]
    for rows in (122_880, 16_384):
        folder = work / f"source-year-{rows}"
        runs.order(order).write_parquet(
            str(folder),
            compression="zstd",
            partition_by=["source", "year"],
            write_partition_columns=True,
            row_group_size=rows,
        )
        out[f"Hive by source/year, sorted, row groups of {rows:,}"] = [
            str(p) for p in folder.rglob("*.parquet")
        ]
    for keys in (["kernel"], ["environment_digest", "kernel"]):
        folder = work / "-".join(keys)
        runs.write_parquet(
            str(folder), compression="zstd", partition_by=keys, write_partition_columns=True
        )
        out[f"Hive by {'/'.join(keys)}"] = [str(p) for p in folder.rglob("*.parquet")]
    return out


def timed(con: duckdb.DuckDBPyConnection, sql: str, repeat: int = 7) -> float:
    con.execute(sql).fetchall()
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        con.execute(sql).fetchall()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--n", type=int, default=300_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        lake = work / "lake"
        ingest([write_jsonl(args.n, work / "runs.jsonl")], lake)
        con = duckdb.connect()
        kindex_files = Lake(lake).snapshot().files("runs")
        con.execute("SET VARIABLE files = ?", [kindex_files]).fetchall()
        env = con.sql(
            "SELECT any_value(environment_digest) FROM read_parquet(getvariable('files'))"
        ).fetchall()[0][0]
        con.execute("SET VARIABLE env = ?", [env]).fetchall()
        candidates = {"kindex: Hive by source/year, sorted inside": kindex_files}
        candidates.update(layouts(con, work))
        base: tuple[float, float] | None = None
        print(f"{args.n:,} runs; warm medians of 7; ratios against kindex's layout")
        print(
            f"{'layout':<58} {'files':>6} {'filtered':>10} {'ratio':>6} {'aggregate':>10} {'ratio':>6}"
        )
        for name, files in candidates.items():
            con.execute("SET VARIABLE files = ?", [files]).fetchall()
            filtered, aggregate = timed(con, FILTERED), timed(con, AGGREGATE)
            base = base or (filtered, aggregate)
            print(
                f"{name:<58} {len(files):>6} {filtered * 1000:>8.1f}ms {filtered / base[0]:>6.2f}"
                f" {aggregate * 1000:>8.1f}ms {aggregate / base[1]:>6.2f}"
            )


if __name__ == "__main__":
    main()
