"""Spark vs DuckDB on one lake, same run, per verb: where Spark would pay. Not run in CI.

    .venv/bin/python bench/spark.py --lake data/parquet                  # the real lake
    .venv/bin/python bench/spark.py --lake /tmp/kindex-bench/lake --questions "speedup kernel05 b200"

Needs the [spark] extra and Java 17. For each question: DuckDB's warm `run_query` (best of
--repeat), Spark's first and warm answer (local[--cores]), the rows, and whether Spark's
answer is DuckDB's (kindex_olap.spark.compare, as the tests compare). Also Spark's session
start and `register` (creating the views), and `kindex check` (--check). A history verb's first
answer on Spark computes every series' points and tests (cached for the session); warm, a
question reads that cache. From two lakes' figures, the per-row cost of each
engine is their slope (seconds per run between the two lakes) and the fixed cost their
intercept; with E executors Spark's per-row cost divides by about E (the scans and shuffles
spread; its fixed cost does not): the crossing is the run count where
  duck_fixed + duck_slope * n = spark_fixed + spark_slope * n / E.
`--crossing RUNS1 FILE1 RUNS2 FILE2` prints it from two saved runs (--json FILE).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from kindex_olap.spark.compare import same_answer, same_rows

DEFAULT = ("speedup jsd b200", "summary jsd", "history jsd h100", "regressions jsd")


def best(run: Any, repeat: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - start)
    return min(times), result


def measure(
    lake: str, questions: list[str], cores: int, repeat: int, check: bool = False
) -> dict[str, Any]:
    from kindex_olap.query.run import run_query
    from kindex_olap.spark.run import run_query as run_on_spark
    from kindex_olap.spark.session import local_session, register

    start = time.perf_counter()
    spark = local_session(cores)
    started = time.perf_counter() - start
    start = time.perf_counter()
    register(spark, lake)
    registered = time.perf_counter() - start
    out: dict[str, Any] = {"start_s": started, "register_s": registered, "questions": {}}
    for text in questions:
        duck_s, duck = best(lambda t=text: run_query(t, lake), repeat)
        first_s, _ = best(lambda t=text: run_on_spark(t, lake, spark=spark), 1)
        warm_s, found = best(lambda t=text: run_on_spark(t, lake, spark=spark), repeat)
        same = same_answer(found, duck)
        out["questions"][text] = {
            "rows": len(duck.rows), "same_rows": same,
            "duckdb_s": duck_s, "spark_first_s": first_s, "spark_warm_s": warm_s,
        }  # fmt: skip
        print(
            f"{text:30} rows {len(duck.rows):6}  duckdb {duck_s:7.3f} s  spark first "
            f"{first_s:7.2f} s  warm {warm_s:7.2f} s  ({warm_s / max(duck_s, 1e-9):5.0f}x)  "
            f"same answer: {same}",
            flush=True,
        )
    if check:
        out["questions"]["check"] = _check(lake, spark, repeat)
    spark.stop()
    return out


def _check(lake: str, spark: Any, repeat: int) -> dict[str, Any]:
    """`kindex check` (the newest ingest's runs) on both engines."""
    from kindex_olap.query.run import run_check
    from kindex_olap.spark.run import run_check as check_on_spark

    duck_s, duck = best(lambda: run_check("", lake), repeat)
    first_s, _ = best(lambda: check_on_spark("", lake, spark=spark), 1)
    warm_s, found = best(lambda: check_on_spark("", lake, spark=spark), repeat)
    # every step tested (verdict, q-value), the regressions, the counts
    same = same_rows(found.steps, duck.steps) and same_rows(found.regressions, duck.regressions)
    same = same and found.summary() == duck.summary()
    print(
        f"{'check':30} steps {duck.tested_steps:5}  duckdb {duck_s:7.3f} s  spark first "
        f"{first_s:7.2f} s  warm {warm_s:7.2f} s  ({warm_s / max(duck_s, 1e-9):5.0f}x)  "
        f"same answer: {same}",
        flush=True,
    )
    return {
        "rows": duck.tested_steps, "same_rows": same, "duckdb_s": duck_s,
        "spark_first_s": first_s, "spark_warm_s": warm_s,
    }  # fmt: skip


def crossing(runs1: int, file1: Path, runs2: int, file2: Path, executors: int) -> None:
    one, two = json.loads(file1.read_text()), json.loads(file2.read_text())
    for text in one["questions"]:
        a, b = one["questions"][text], two["questions"].get(text)
        if b is None:
            continue
        duck_slope = (b["duckdb_s"] - a["duckdb_s"]) / (runs2 - runs1)
        spark_slope = (b["spark_warm_s"] - a["spark_warm_s"]) / (runs2 - runs1) / executors
        duck_fixed = a["duckdb_s"] - duck_slope * runs1
        spark_fixed = a["spark_warm_s"] - spark_slope * executors * runs1
        if duck_slope <= spark_slope:
            print(f"{text:30} Spark never catches up with {executors} executors")
            continue
        runs = (spark_fixed - duck_fixed) / (duck_slope - spark_slope)
        print(f"{text:30} crosses at ~{runs:,.0f} runs with {executors} executors")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lake", default="data/parquet")
    parser.add_argument("--questions", nargs="*", default=list(DEFAULT))
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--check", action="store_true", help="also `kindex check`")
    parser.add_argument("--json", type=Path, help="write the figures here")
    parser.add_argument("--crossing", nargs=4, metavar=("RUNS1", "FILE1", "RUNS2", "FILE2"))
    parser.add_argument("--executors", type=int, default=8)
    args = parser.parse_args()
    if args.crossing:
        runs1, file1, runs2, file2 = args.crossing
        crossing(int(runs1), Path(file1), int(runs2), Path(file2), args.executors)
        return
    figures = measure(args.lake, args.questions, args.cores, args.repeat, args.check)
    print(f"spark start {figures['start_s']:.1f} s, register {figures['register_s']:.1f} s")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
