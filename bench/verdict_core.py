"""The verdict core (issue 21): answers read the layers a lake commit stored. Not run in CI.

    .venv/bin/python bench/verdict_core.py --runs 1000000 --work /tmp/kindex-bench \
        --real /tmp/real-lake

At N synthetic runs (bench/query.py's generator: 40 kernels x 3 providers x 3 passes x 8 GPUs x
12 shapes x versions, a planted regression in kernel05), on a warm session (kindex_olap.Lake:
one unmeasured call, then the median of 9), in one run:
- `speedup KERNEL GPU`, `summary`, `regressions KERNEL` against `speedup KERNEL`, and a whole-
  lake `kindex check` against `summary` (the issue's ratios). The check tests what CI tests:
  the lake commit of one CI run (1,000 new runs of one GPU, ingested with the layers once,
  after the build); right after the build it would test the last 250k-run chunk of the
  generator, every step of a quarter of the lake, which no gate sees;
- the same questions on a connection whose views compute the noise model live (what every
  answer paid before the layers), as the same-run baseline;
- adding 1,000 bundles (of one GPU; of every GPU) and a CI run of one kernel on one GPU to a copy
  of the lake with and without the layers' update (the CI commit before it left its GPU's
  partitions in files of kernel ranges, as a lake ingesting CI runs has them).
With --real LAKE (a lake with layers: Liger's history and a KernelIndex export): the API's
repeated `speedups("jsd b200")`, and a cold `kindex query "speedup jsd b200"` against a floor
process (import duckdb, typer, deltalake; connect), 15 paired runs.
Prints the machine's load before and after: the machine is shared.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from query import build_lake, bundles  # noqa: E402  (bench/query.py, beside this file)

PLANTED = "kernel05"
NEW_DAY = "2030-01-01"  # after every sweep of the generator at any size (a sweep a day)
FLOOR = "import duckdb, typer, deltalake; duckdb.connect(':memory:')"


def median_ms(fn: Callable[[], Any], repeat: int = 9) -> float:
    fn()  # one unmeasured call
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e3


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def warm(lake: Path) -> None:
    import kindex_olap
    from kindex_olap.query.compile import Options
    from kindex_olap.query.engine import connect
    from kindex_olap.query.run import run_check, run_query

    warnings.simplefilter("ignore")
    session = kindex_olap.Lake(lake)
    con = session.connection()
    runs = con.execute("SELECT count(*) FROM runs").fetchall()[0][0]
    gpu = "b200"
    print(f"lake: {runs} runs, load {load()}")
    live = connect(lake, live=True)

    def ask(con_: Any, text: str) -> Callable[[], Any]:
        return lambda: run_query(text, con=con_, vocab=session.vocabulary())

    figures: dict[str, dict[str, float]] = {}
    for label, con_ in (("layers", con), ("live", live)):
        repeat = 9 if label == "layers" else 3
        figures[label] = {
            "speedup K GPU": median_ms(ask(con_, f"speedup {PLANTED} {gpu}"), repeat),
            "speedup K": median_ms(ask(con_, f"speedup {PLANTED}"), repeat),
            "summary": median_ms(ask(con_, "summary"), repeat),
        }
    # the step verbs and the check read the stored steps (layer_steps): medians of 9 as the
    # others, measured on the session (no live figure: the live history at 1M takes seconds)
    figures["layers"]["regressions K"] = median_ms(ask(con, f"regressions {PLANTED}"))
    figures["layers"]["check (CI commit)"] = median_ms(
        lambda: run_check("", lake, options=Options(), con=con)
    )
    print(f"{'question':<22}{'layers ms':>11}{'live ms':>11}{'live/layers':>13}")
    for name, ms in figures["layers"].items():
        before = figures["live"].get(name)
        if before is None:
            print(f"{name:<22}{ms:>11.1f}{'':>11}{'':>13}")
        else:
            print(f"{name:<22}{ms:>11.1f}{before:>11.1f}{before / ms:>12.1f}x")
    f = figures["layers"]
    print(
        f"ratios (layers): regressions K / speedup K = "
        f"{f['regressions K'] / f['speedup K']:.2f} (target <= 2); "
        f"check / summary = {f['check (CI commit)'] / f['summary']:.2f} (target <= 2)"
    )
    live.close()
    session.close()


def ci_commit(lake: Path, work: Path) -> None:
    """Ingest one CI run (1,000 new runs of one GPU, layers updated) into the built lake, once:
    the newest lake commit a check then tests is the one a gate tests."""
    done = work / "ci-commit.done"
    if done.exists():
        return
    from kindex_olap.ingestion.pipeline import ingest

    one_gpu, _, _ = new_bundles(work, "ci", day="2029-12-31", version="9.8.0")
    started = time.perf_counter()
    report = ingest([one_gpu], lake)
    print(
        f"CI commit: {report.runs_added} runs of one GPU in {time.perf_counter() - started:.1f} s"
    )
    done.touch()


def new_bundles(
    work: Path, tag: str, day: str = NEW_DAY, version: str = "9.9.0"
) -> tuple[Path, Path, Path]:
    """1,000 new bundles of one GPU (a CI run of the first ten kernels), 1,000 over every GPU
    (a sweep: the layers' worst case) and the 108 of one kernel on one GPU (a CI run of one
    kernel, as Liger's benchmark scripts run), named `tag`-N, of a new `version` observed on
    `day` (after the lake's runs)."""
    import orjson

    one_gpu = work / f"{tag}-1k-one-gpu.jsonl"
    every_gpu = work / f"{tag}-1k-every-gpu.jsonl"
    one_kernel = work / f"{tag}-one-kernel-one-gpu.jsonl"
    with one_gpu.open("wb") as one, every_gpu.open("wb") as every, one_kernel.open("wb") as alone:
        kept = 0
        for i, bundle in enumerate(bundles(8000, seed=99)):
            bundle["run"]["metadata"]["name"] = f"{tag}-{i}"
            bundle["run"]["metadata"]["labels"]["liger_version"] = version
            # a new commit's runs are observed after the lake's (the generator dates sweep 0
            # at the lake's first day, where a check's pruning by date finds nothing to prune)
            spec = bundle["run"]["spec"]
            spec["observedAt"] = day + spec["observedAt"][len(day) :]
            line = orjson.dumps(bundle) + b"\n"
            if i < 1000:
                every.write(line)
            gpu = bundle["environment"]["spec"]["hardware"]["product"]
            if gpu == "NVIDIA B200" and kept < 1000:
                one.write(line)
                kept += 1
            if gpu == "NVIDIA B200" and spec["sourceNative"]["benchmark"].startswith("kernel03/"):
                alone.write(line)
    return one_gpu, every_gpu, one_kernel


def add_1k(lake: Path, work: Path) -> None:
    """New bundles into copies of the lake, with and without the layers' update."""
    for new in new_bundles(work, "added"):
        _add(lake, work, new)


def _add(lake: Path, work: Path, new: Path) -> None:
    from kindex_olap.ingestion.pipeline import ingest
    from kindex_olap.layers import build

    seconds = {}
    for label in ("with layers", "without layers"):
        copy = work / f"copy-{label.replace(' ', '-')}"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(lake, copy)
        original = build.needs_update
        if label == "without layers":
            build.needs_update = lambda tx: False
        try:
            started = time.perf_counter()
            report = ingest([new], copy)
            seconds[label] = time.perf_counter() - started
        finally:
            build.needs_update = original
        print(f"add {new.stem} ({label}): {seconds[label]:.2f} s, {report.runs_added} runs")
        shutil.rmtree(copy, ignore_errors=True)
    ratio = seconds["with layers"] / seconds["without layers"]
    print(f"add {new.stem}: with / without layers = {ratio:.2f}x (target <= 1.5)")


def real(lake: Path) -> None:
    import kindex_olap

    warnings.simplefilter("ignore")
    with kindex_olap.Lake(lake) as session:
        api = median_ms(lambda: session.speedups("jsd b200"))
    print(f"real lake, API repeated speedups('jsd b200'): {api:.1f} ms (target <= 10)")
    python, kindex = sys.executable, str(Path(sys.executable).with_name("kindex"))
    floor, query = [], []
    for _ in range(15):
        started = time.perf_counter()
        subprocess.run([python, "-c", FLOOR], check=True)
        middle = time.perf_counter()
        subprocess.run(
            [kindex, "query", "speedup jsd b200", "--lake", str(lake)],
            check=True,
            capture_output=True,
        )
        floor.append(middle - started)
        query.append(time.perf_counter() - middle)
    f, q = statistics.median(floor) * 1e3, statistics.median(query) * 1e3
    print(
        f"real lake, cold kindex query 'speedup jsd b200': {q:.0f} ms, floor {f:.0f} ms, "
        f"over the floor {q - f:+.0f} ms (target <= +60; medians of 15 pairs)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--work", type=Path, default=Path("/tmp/kindex-bench"))
    parser.add_argument("--real", type=Path, help="a lake with layers (the real data)")
    parser.add_argument("--skip-add", action="store_true", help="leave out the 1k-bundle ingest")
    parser.add_argument(
        "--replicates",
        type=int,
        default=1,
        help="sweeps per version (2: each version measured twice by the same code, as a CI "
        "fleet repeats a commit; 1: every step judged against the default floors)",
    )
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    print(f"load before: {load()}")
    if args.real:  # first: after the 1M lake's session, this process answered 1.7-2x slower
        real(args.real)
    lake = build_lake(args.work, args.runs, args.replicates)
    ci_commit(lake, args.work)
    warm(lake)
    if not args.skip_add:
        add_1k(lake, args.work)
    print(f"load after: {load()}")


if __name__ == "__main__":
    main()
