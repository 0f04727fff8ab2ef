"""Crash safety and concurrency of the lake: real ingest processes, killed or racing."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import duckdb
import pytest
from conftest import SEEDS
from synthetic import write_jsonl

from kindex_olap.ingestion.pipeline import ingest
from kindex_olap.lake.compact import compact, vacuum
from kindex_olap.lake.create import create
from kindex_olap.lake.recovery import lock
from kindex_olap.lake.store import LAYERS, TABLES, Lake
from kindex_olap.lake.tables import read_table

pytestmark = pytest.mark.slow

# kindex's own points around the Delta commits: before and after the commit of each table the
# ingest commits (runs last), and where the ingest stages and writes its files. Each point must
# really kill the ingest (the test checks), so all of them are reached by this workload. Of the
# ten layer tables, which one loop commits as it commits every other table
# (Transaction.commit), the first, one between and the last: a kill before any layer, between
# two and after all (each trial is two ingests with their layers, 10-20 s on 2 cores; the 14
# other layer points cost CI about 3 minutes of one worker and met the same code)
LAYER_POINTS = [LAYERS[0], LAYERS[len(LAYERS) // 2], LAYERS[-1]]
COMMITTED_TABLES = [
    "measurements", "environments", "protocols", "rejects", "ingested_files", *LAYER_POINTS
]  # fmt: skip
FORCED_POINTS = [
    "ingest:batch-staged",
    "ingest:runs-written",
    "ingest:all-written",
    "ingest:layers-written",
    "commit:start",
    *(f"commit:{t}{suffix}" for t in [*COMMITTED_TABLES, "runs"] for suffix in ("", "-done")),
    "commit:done",
]
# timed kills, each at a delay its seed draws over the ingest's time: most land inside staging,
# DuckDB or a delta-rs commit (15 until CI's time ran short: the forced points above name each
# step between the commits, these probe inside them)
RANDOM_KILLS = 10


def lake_state(root: Path) -> dict[str, object]:
    """What kindex reads from the lake commit it pins (timestamps of the write left out)."""
    snapshot = Lake(root).snapshot()
    con = duckdb.connect()
    state: dict[str, object] = {}
    queries = {
        "runs": "SELECT run_id, latency_median_ns FROM t ORDER BY run_id",
        "measurements": "SELECT run_id, statistic, value FROM t ORDER BY ALL",
        "environments": "SELECT environment_digest FROM t ORDER BY 1",
        "protocols": "SELECT protocol_digest FROM t ORDER BY 1",
        "rejects": "SELECT source_file, line, reason FROM t ORDER BY ALL",
        "ingested_files": "SELECT path, sha256 FROM t ORDER BY ALL",
        # the layers of the lake commit read (kindex_olap.layers): never ahead of its runs
        **{layer: "SELECT * FROM t ORDER BY ALL" for layer in LAYERS},
        # less when their runs were ingested (a rerun ingests them again)
        "layer_steps": "SELECT * EXCLUDE (to_ingested) FROM t ORDER BY ALL",
    }
    for table, sql in queries.items():
        con.register("t", read_table(con, table, snapshot.files(table)))
        state[table] = con.execute(sql).fetchall()
        con.unregister("t")
    return state


def polars_state(root: Path) -> dict[str, object]:
    """What another engine reads from the Delta tables' newest versions, starting from runs:
    the runs, and the measurements and environments those runs reference."""
    import polars as pl

    runs = pl.scan_delta(str(root / "runs")).select(
        "run_id", "latency_median_ns", "environment_digest"
    )
    measurements = pl.scan_delta(str(root / "measurements")).join(runs, on="run_id", how="semi")
    environments = pl.scan_delta(str(root / "environments")).join(
        runs, on="environment_digest", how="semi"
    )
    return {
        "runs": runs.select("run_id", "latency_median_ns").sort("run_id").collect().rows(),
        "measurements": measurements.select("run_id", "statistic", "value")
        .sort("run_id", "statistic", "value")
        .collect()
        .rows(),
        "environments": environments.select("environment_digest")
        .sort("environment_digest")
        .collect()
        .rows(),
    }


def delta_row_counts(root: Path) -> dict[str, int]:
    """Rows of every table at its newest Delta version (orphan rows of a killed ingest count)."""
    import polars as pl

    return {t: pl.scan_delta(str(root / t)).select(pl.len()).collect().item() for t in TABLES}


def run_ingest(
    inputs: list[Path], lake: Path, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    command = [
        sys.executable,
        "-m",
        "kindex_olap",
        "ingest",
        *map(str, inputs),
        "--lake",
        str(lake),
        "-q",
    ]
    return subprocess.Popen(
        command, env={**os.environ, **(env or {})}, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


@pytest.fixture(scope="module")
def workload(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """A base lake (the seeds), an input of 3,000 bundles, and the states before and after."""
    root = tmp_path_factory.mktemp("crash")
    base = root / "base"
    ingest([SEEDS], base)
    data = write_jsonl(3000, root / "batch.jsonl")
    after_lake = root / "after"
    shutil.copytree(base, after_lake)
    started = time.perf_counter()
    process = run_ingest([data], after_lake)
    _, err = process.communicate()
    assert process.returncode == 1 and b"3 rejected" in err, err.decode()
    elapsed = time.perf_counter() - started
    return {
        "base": base,
        "input": data,
        "before": lake_state(base),
        "after": lake_state(after_lake),
        "before_polars": polars_state(base),
        "after_polars": polars_state(after_lake),
        "after_counts": delta_row_counts(after_lake),
        "elapsed": elapsed,
    }


def _trial(
    workload: dict[str, object], lake: Path, env: dict[str, str] | None, delay: float | None
) -> int:
    """Kill an ingest (at a crash point, or after `delay` seconds); check what kindex and polars
    see, then that the next ingest completes the work and vacuum leaves exactly the files in the
    Delta logs. Returns the killed ingest's exit status."""
    shutil.copytree(workload["base"], lake)  # type: ignore[arg-type]
    process = run_ingest([workload["input"]], lake, env)  # type: ignore[list-item]
    if delay is not None:
        time.sleep(delay)
        process.send_signal(signal.SIGKILL)
    process.communicate()
    state = lake_state(lake)
    assert state in (workload["before"], workload["after"]), "lake is neither before nor after"
    seen = polars_state(lake)
    assert seen in (workload["before_polars"], workload["after_polars"]), "polars sees a mix"
    # The next ingest completes the work and leaves no orphan row in any Delta table.
    finish = run_ingest([workload["input"]], lake)
    _, err = finish.communicate()
    assert finish.returncode in (0, 1), err.decode()
    assert lake_state(lake) == workload["after"]
    assert polars_state(lake) == workload["after_polars"]
    assert delta_row_counts(lake) == workload["after_counts"]
    vacuum(lake, retain_hours=0)
    assert files_on_disk(lake) == files_in_logs(lake)
    return process.returncode


def files_on_disk(lake: Path) -> set[str]:
    return {str(p) for t in TABLES for p in (lake / t).rglob("*.parquet")}


def files_in_logs(lake: Path) -> set[str]:
    from deltalake import DeltaTable

    return {uri for t in TABLES for uri in DeltaTable(str(lake / t)).file_uris()}


def test_state_before_and_after_differ(workload: dict[str, object]) -> None:
    before, after = workload["before"], workload["after"]
    assert len(after["runs"]) == len(before["runs"]) + 2997  # type: ignore[index]
    assert len(after["rejects"]) == 3  # type: ignore[index]


@pytest.mark.parametrize("point", FORCED_POINTS)
def test_kill_at_forced_point(workload: dict[str, object], tmp_path: Path, point: str) -> None:
    status = _trial(workload, tmp_path / "lake", {"KINDEX_CRASHPOINT": point}, None)
    assert status == -signal.SIGKILL, f"the ingest never reached {point}"


@pytest.mark.parametrize("trial", range(RANDOM_KILLS))
def test_kill_after_random_delay(workload: dict[str, object], tmp_path: Path, trial: int) -> None:
    elapsed = float(workload["elapsed"])  # type: ignore[arg-type]
    delay = random.Random(trial).uniform(0.05, elapsed * 1.1)
    _trial(workload, tmp_path / "lake", None, delay)


def test_two_ingests_and_a_reader(tmp_path: Path) -> None:
    first = write_jsonl(1500, tmp_path / "a.jsonl", start=0)
    second = write_jsonl(1500, tmp_path / "b.jsonl", start=1000)  # 500 runs overlap
    lake = tmp_path / "lake"
    with lock(Lake(lake)):
        create(Lake(lake))
    seen: list[int] = []
    errors: list[BaseException] = []
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            try:
                state = lake_state(lake)
                seen.append(len(state["runs"]))  # type: ignore[arg-type]
            except BaseException as e:
                errors.append(e)
                return

    thread = threading.Thread(target=reader)
    thread.start()
    processes = [run_ingest([first], lake), run_ingest([second], lake)]
    for process in processes:
        _, err = process.communicate()
        assert process.returncode in (0, 1), err.decode()
    stop.set()
    thread.join()
    assert not errors, errors
    final = lake_state(lake)
    run_ids = [row[0] for row in final["runs"]]  # type: ignore[union-attr]
    valid = {i for i in range(2500) if i % 1000 != 999}
    assert len(run_ids) == len(set(run_ids)) == len(valid)
    # A reader only ever saw a committed state: nothing, one ingest, or both.
    assert set(seen) <= {0, 1499, len(valid)}, set(seen)
    assert seen, "the reader never ran"


def test_compact_keeps_contents_and_merges_files(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    for start in range(0, 2000, 500):
        ingest([write_jsonl(500, tmp_path / f"part{start}.jsonl", start=start)], lake)
    before = lake_state(lake)
    files_before = Lake(lake).snapshot().tables["runs"]
    report = compact(lake)
    after = Lake(lake).snapshot()
    assert lake_state(lake) == before
    assert len(after.tables["runs"]) < len(files_before)
    assert report.files_after["runs"] == len(after.tables["runs"])
    # one file per (source, year) partition
    partitions = {str(Path(f).parent) for f in after.tables["runs"]}
    assert len(partitions) == len(after.tables["runs"])


def test_a_compaction_killed_between_its_table_commits_changes_nothing(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    for start in range(0, 1000, 500):
        ingest([write_jsonl(500, tmp_path / f"part{start}.jsonl", start=start)], lake)
    before, before_polars = lake_state(lake), polars_state(lake)
    code = "import sys; from kindex_olap.lake.compact import compact; compact(sys.argv[1])"
    for point in ("commit:measurements-done", "commit:runs"):
        env = {**os.environ, "KINDEX_CRASHPOINT": point}
        done = subprocess.run([sys.executable, "-c", code, str(lake)], env=env)
        assert done.returncode == -signal.SIGKILL, point
        assert lake_state(lake) == before
        assert polars_state(lake) == before_polars
    compact(lake)  # undoes the killed compaction's commits, then compacts
    assert lake_state(lake) == before
    assert [c.operation for c in Lake(lake).log()] == ["ingest", "ingest", "compact"]
