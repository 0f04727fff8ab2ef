"""Seeing the answers, timed: `kindex plot` against `kindex query`, `kindex report` against
`kindex export` of the same lake, and `kindex query`'s cold start against `import duckdb`.
Ratios from one run (the machine is shared and noisy); each command runs as a fresh process,
interleaved with its baseline, and the median of the repeats is used. Not run in CI.

    .venv/bin/python bench/see.py --work /tmp/kindex-see

The lake is the real one: Liger's benchmark history plus both KernelIndex catalog exports from
../shared/data (built once into WORK/lake). Targets (issue 12): plot <= 3x query, report <= 15x
export, query's cold start unchanged against `python -c "import duckdb"`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
BIN = Path(sys.executable).parent
KINDEX = str(BIN / "kindex")
QUERY = "speedup jsd b200"


def run(args: list[str], env: dict[str, str] | None = None) -> float:
    """Seconds of wall time of one fresh process."""
    start = time.perf_counter()
    subprocess.run(args, check=True, capture_output=True, env=env)
    return time.perf_counter() - start


def kindex_from(tree: Path, args: list[str]) -> list[str]:
    """`kindex ARGS` run from the source tree `tree` (ahead of the installed package)."""
    code = (
        f"import sys; sys.path.insert(0, {str(tree)!r}); from kindex_olap.cli.app import app; app()"
    )
    return [sys.executable, "-c", code, *args]


def build_lake(work: Path) -> Path:
    lake = work / "lake"
    if (lake / "_kindex" / "CURRENT").exists():
        return lake
    history = SHARED / "liger" / "all_benchmark_data_history.csv"
    lake_args = ["--lake", str(lake)]
    subprocess.run(
        [KINDEX, "import", "liger", str(history), "--raw", str(work / "raw"), *lake_args],
        check=True,
    )
    for export in sorted((SHARED / "kernelindex").glob("catalog-*.jsonl.zst")):
        raw = ["--raw", str(work / export.name)]
        subprocess.run([KINDEX, "import", "kernelindex", str(export), *raw, *lake_args], check=True)
    return lake


def pairs(
    name: str, first: list[str], second: list[str], repeats: int, env: dict[str, str] | None
) -> tuple[float, float]:
    """Median seconds of `first` and `second`, run alternately `repeats` times each."""
    a, b = [], []
    for _ in range(repeats):
        a.append(run(first, env))
        b.append(run(second, env))
    ma, mb = statistics.median(a), statistics.median(b)
    print(f"{name}: {ma:.3f} s / {mb:.3f} s = {ma / mb:.2f}x  (medians of {repeats})")
    return ma, mb


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "kindex-see")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--before",
        type=Path,
        help="a source tree of an earlier kindex (git archive main | tar -x -C DIR): its "
        "`kindex query` cold start against this checkout's",
    )
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    lake = build_lake(args.work)
    env = {k: v for k, v in os.environ.items() if k not in ("KINDEX_LAKE", "COLUMNS")}
    env["XDG_CACHE_HOME"] = str(args.work / "cache")
    out = args.work / "out"
    out.mkdir(exist_ok=True)
    at = ["--lake", str(lake)]
    query = [KINDEX, "query", QUERY, *at]
    # the first HTML write builds vl-convert's JavaScript bundle (once per version, cached)
    shutil.rmtree(args.work / "cache", ignore_errors=True)
    cold = run([KINDEX, "report", "--out", str(out / "cold.html"), *at], env)
    print(f"report with an empty cache (builds the Vega bundle once): {cold:.2f} s")
    pairs("plot PNG vs query", [KINDEX, "plot", QUERY, "--out", str(out / "x.png"), *at], query,
          args.repeats, env)  # fmt: skip
    pairs("plot SVG vs query", [KINDEX, "plot", QUERY, "--out", str(out / "x.svg"), *at], query,
          args.repeats, env)  # fmt: skip
    pairs("report vs export (whole lake)",
          [KINDEX, "report", "--out", str(out / "report.html"), *at],
          [KINDEX, "export", "--out", str(out / "export"), *at], max(args.repeats // 2, 2), env)  # fmt: skip
    pairs("query cold start vs import duckdb", query,
          [sys.executable, "-c", "import duckdb"], args.repeats, env)  # fmt: skip
    pairs("query --help vs import duckdb", [KINDEX, "query", "--help"],
          [sys.executable, "-c", "import duckdb"], args.repeats, env)  # fmt: skip
    if args.before:
        pairs("query cold start, this checkout vs --before", kindex_from(REPO, query[1:]),
              kindex_from(args.before, query[1:]), args.repeats, env)  # fmt: skip
    size = (out / "report.html").stat().st_size / 1e6
    print(f"report size: {size:.1f} MB (limit 25 MB)")


if __name__ == "__main__":
    main()
