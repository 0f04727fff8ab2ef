"""`kindex check` as a CI gate, on Liger's real history (issue 20's acceptance): planted versions
are found or said to be beyond the noise, a noisy null is quiet, the plain history is tested,
same-code pairs held out are rarely called different, and the gate file works."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest
from planted import candidate_cells, plant, read_rows

from kindex_olap.importers.liger.convert import import_liger
from kindex_olap.ingestion.pipeline import ingest
from kindex_olap.query.compile import Options
from kindex_olap.query.gate import CheckResult, rules_for
from kindex_olap.query.run import run_check
from tests.conftest import LIGER_HISTORY

pytestmark = pytest.mark.slow

VERDICT, RATIO, RATIO_HI, TO_VALUE = 13, 10, 12, 9


def _planted_lake(base: Path, root: Path, factor: float, **noise: Any) -> tuple[Path, list[Any]]:
    """A copy of the Liger-history lake with a planted version ingested as its own commit."""
    shutil.copytree(base, root / "lake")
    text, keys = plant(LIGER_HISTORY, factor, **noise)
    (root / "plant.csv").write_text(text, encoding="utf-8")
    import_liger(str(root / "plant.csv"), raw_dir=root / "raw")
    ingest([root / "raw"], root / "lake")
    return root / "lake", keys


def _check(lake: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "kindex_olap", "check", "--lake", str(lake), *args]
    return subprocess.run(command, capture_output=True, text=True, check=False)


def _latency_steps(result: CheckResult) -> list[tuple[Any, ...]]:
    return [r for r in result.steps if r[5] == "latency"]


def _cells_flagged(result: CheckResult) -> set[tuple[Any, ...]]:
    return {r[:5] for r in result.regressions}


@pytest.mark.parametrize("factor", [2.0, 1.5, 1.2])
def test_planted_versions_are_flagged_or_said_to_be_beyond_the_noise(
    liger_history_lake: Path, tmp_path: Path, factor: float
) -> None:
    lake, keys = _planted_lake(liger_history_lake, tmp_path, factor)
    result = run_check("", lake, rules=rules_for(None, None))
    latency = _latency_steps(result)
    assert len(latency) == len(keys) == 20  # one liger step into each planted cell
    assert all(r[RATIO] == pytest.approx(factor, rel=0.02) for r in latency)
    flagged = _cells_flagged(result)
    for row in latency:
        floor = math.expm1(math.log(row[RATIO_HI] / row[RATIO]))  # the step's noise
        if row[:5] in flagged:
            continue
        assert row[VERDICT].startswith("insufficient replicates"), row
        assert floor > 0.08, row  # every cell whose noise is at most 8 % is flagged
    if factor == 2.0:
        assert len(flagged) >= 18
        done = _check(lake)
        assert done.returncode == 1, done.stderr
        assert "regression(s) in" in done.stderr and "(runs of lake commit 2)" in done.stderr


def _cell_noise(base: Path, root: Path) -> dict[Any, float]:
    """Each planted cell's noise as a lognormal sigma: its step's noise in an exact x1.0 plant
    (a pair of same-code runs differs by that much 95 % of the time)."""
    lake, keys = _planted_lake(base, root, 1.0)
    cells = candidate_cells(read_rows(LIGER_HISTORY)[1])
    exact = _latency_steps(run_check("", lake))
    sigma = {}
    for key in keys:
        value = float(cells[key]["liger"]["y_value_50"])
        row = next(r for r in exact if r[TO_VALUE] == pytest.approx(value, rel=1e-6))
        sigma[key] = math.log(row[RATIO_HI] / row[RATIO]) / 1.959964
    return sigma


def test_a_noisy_null_is_quiet(liger_history_lake: Path, tmp_path: Path) -> None:
    """The plant at x1.0, times lognormal noise at each cell's own noise: at most 1 of 20
    cells flagged, 5 seeds."""
    sigma = _cell_noise(liger_history_lake, tmp_path / "zero")
    for seed in range(5):
        noisy, _ = _planted_lake(
            liger_history_lake, tmp_path / f"null{seed}", 1.0, sigma=sigma, noise_seed=seed
        )
        result = run_check("", noisy)
        moved = {r[:5] for r in result.steps if r[VERDICT] in ("regression", "improvement")}
        assert len(moved) <= 1, (seed, moved)


def test_replicated_versions_are_judged_by_the_floor_not_their_own_spread(
    liger_history_lake: Path, tmp_path: Path
) -> None:
    """Two versions planted in turn, each as two runs of one code (a CI fleet's replicates):
    at x1.0 with each cell's own noise a step between them is rarely flagged (judged by the two
    runs' spread alone, 28 of 100 cells over these seeds were), and an exact x1.2 is flagged in
    every cell. The spread of two draws is often far narrower than the run-to-run noise, so a
    point's noise is never less than its class floor's share for its run count."""
    sigma = _cell_noise(liger_history_lake, tmp_path / "zero")
    replicated: dict[str, Any] = {"versions": ("9.9.8", "9.9.9"), "repeats": 2}
    flagged = 0
    for seed in range(5):
        noisy, _ = _planted_lake(
            liger_history_lake, tmp_path / f"null{seed}", 1.0,
            sigma=sigma, noise_seed=seed, **replicated,
        )  # fmt: skip
        result = run_check("", noisy)
        assert len(_latency_steps(result)) == 40  # into 9.9.8, then into 9.9.9, per cell
        moved = {r[:5] for r in result.steps if r[VERDICT] in ("regression", "improvement")}
        assert len(moved) <= 2, (seed, moved)
        flagged += len(moved)
    assert flagged <= 5
    lake, keys = _planted_lake(liger_history_lake, tmp_path / "x1.2", 1.2, **replicated)
    result = run_check("", lake)
    assert len(_cells_flagged(result)) == len(keys) == 20


def test_the_plain_history_is_tested(liger_history_lake: Path) -> None:
    """Every series with two points or more (main branch, not a baseline) gets its steps
    tested: the whole history arrived in lake commit 1, the newest that added runs."""
    from kindex_olap.query import history as h
    from kindex_olap.query.engine import connect

    con = connect(liger_history_lake)
    options = h.HistoryOptions()
    h.select_points(con, [], [], options)
    points = h.analyse_lake(con, options).points
    con.close()
    keys = [k for k, base in zip(points["series_key"], points["is_baseline"], strict=True)
            if not base]  # fmt: skip
    series = {k for k in keys if keys.count(k) >= 2}
    result = run_check("", liger_history_lake)
    assert result.tested_series >= len(series) > 0
    assert f"steps of {result.tested_series} series" in result.summary()
    assert "lake commit 1" in result.summary()


def test_nothing_new_exits_7_and_says_so(liger_history_lake: Path) -> None:
    done = _check(liger_history_lake, "--since", "1")
    assert done.returncode == 7
    assert "nothing to test" in done.stderr and done.stdout == ""
    markdown = _check(liger_history_lake, "--since", "1", "--format", "markdown")
    assert markdown.returncode == 7 and markdown.stdout.startswith("### kindex check: nothing")
    document = json.loads(_check(liger_history_lake, "--since", "1", "-f", "json").stdout)
    assert document["schema"] == "kindex.check/v1" and document["tested_steps"] == 0
    assert document["passed"] is True and document["regressions"] == []


def test_markdown_and_json_always_say_what_was_tested(liger_history_lake: Path) -> None:
    markdown = _check(liger_history_lake, "--format", "markdown")
    assert markdown.returncode in (0, 1)
    assert markdown.stdout.startswith("### kindex check: ")
    assert " steps of " in markdown.stdout.splitlines()[0]
    document = json.loads(_check(liger_history_lake, "--format", "json").stdout)
    assert set(document) >= {
        "schema", "lake_commit", "tested", "tested_steps", "tested_series", "threshold",
        "thresholds", "q_level", "passed", "regressions", "accepted", "improvements",
        "insufficient",
    }  # fmt: skip
    assert document["passed"] == (markdown.returncode == 0) == (not document["regressions"])
    # the comment's table reads as the terminal's: units, one interval, no empty column
    lines = markdown.stdout.splitlines()
    header = next(line for line in lines if line.startswith("| kernel |"))
    names = [name.strip() for name in header.strip("|").split("|")]
    assert {"from_value", "to_value", "interval±noise", "verdict", "step"} <= set(names)
    assert "ratio_lo" not in names
    rows = [
        [c.strip() for c in line.strip("|").split("|")] for line in lines[lines.index(header) + 2 :]
    ]
    rows = [row for row in rows if len(row) == len(names)]
    assert len(rows) == len(document["regressions"]) > 0
    assert all(any(row[i] for row in rows) for i in range(len(names)))
    units = [row[names.index("from_value")].endswith((" ms", "×")) for row in rows]
    assert all(units), rows


def test_a_gate_file_accepts_a_known_regression_and_sets_thresholds(
    liger_history_lake: Path, tmp_path: Path
) -> None:
    lake, _ = _planted_lake(liger_history_lake, tmp_path, 2.0)
    first = json.loads(_check(lake, "-f", "json").stdout)
    steps = [r["step"] for r in first["regressions"]]
    assert len(steps) >= 36
    gate = tmp_path / "kindex-gate.toml"
    accepted = "\n".join(f'[[accept]]\nstep = "{s}"\nreason = "planted"\n' for s in steps)
    gate.write_text(f"threshold = 0.05\nq = 0.01\n{accepted}", encoding="utf-8")
    done = _check(lake, "--gate", str(gate), "-f", "json")
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["accepted"]) == len(steps)
    kernels = {r["kernel"] for r in first["regressions"]}
    lenient = "[thresholds]\n" + "".join(f'"{k}" = 1.5\n' for k in kernels)
    gate.write_text(lenient, encoding="utf-8")
    assert _check(lake, "--gate", str(gate)).returncode == 0  # a 2x step is under 150 %
    gate.write_text("treshold = 0.1\n", encoding="utf-8")
    bad = _check(lake, "--gate", str(gate))
    assert bad.returncode == 2 and "unknown setting 'treshold'" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_one_verdict_per_step_whatever_the_verb_and_filter(liger_history_lake: Path) -> None:
    """For every kernel, `changes KERNEL --by run --all-branches` lists exactly the whole-lake
    query's rows for that kernel, and `history` gives those steps the same verdicts."""
    from kindex_olap.query.run import run_query

    options = Options(by="run", all_branches=True)
    everything = run_query("changes", liger_history_lake, options)
    kernels = run_query("kernels", liger_history_lake)
    names = [r[kernels.columns.index("kernel")] for r in kernels.rows]
    checked = 0
    for kernel in names:
        mine = run_query(f"changes {kernel}", liger_history_lake, options)
        expected = [r for r in everything.rows if r[0] == kernel]
        assert sorted(map(repr, mine.rows)) == sorted(map(repr, expected)), kernel
        checked += bool(expected)
    assert checked >= 10


def test_same_code_pairs_held_out_are_rarely_called_different(liger_history_lake: Path) -> None:
    """Two-fold: the floors learned on one half of each class's same-code pairs (the model's
    tiers: the class's own pairs, else every class's), the other half tested as steps of one
    run each side. At most 5 % called different; the same figure for same-label pairs (other
    commits under one label, real changes among them) is reported beside it."""
    from kindex_olap.query.engine import connect
    from kindex_olap.query.noise import settings

    con = connect(liger_history_lake)
    pairs = con.execute(
        "SELECT class_rank, log_change, same_code, row_number() OVER ("
        "PARTITION BY class_rank, same_code ORDER BY observed_at, run_id) % 2 AS half "
        "FROM replicate_pairs"
    ).fetchall()
    con.close()
    called = {True: 0, False: 0}
    tested = {True: 0, False: 0}
    for fold in (0, 1):
        floors = _learned_floors([(c, x) for c, x, same, half in pairs if same and half == fold])
        for c, x, same, half in pairs:
            if same and half == fold:
                continue
            se = math.log1p(max(floors[c], settings().min_floor)) / 1.959964
            different = abs(x) > math.log1p(0.05) and abs(x) / se > 2.5758
            called[same] += different
            tested[same] += 1
    assert tested[True] >= 60
    assert called[True] / tested[True] <= 0.05, (called, tested)
    print(f"same-code held out: {called[True]}/{tested[True]}; "
          f"same-label: {called[False]}/{tested[False]}")  # fmt: skip


def _learned_floors(pairs: list[tuple[int, float]]) -> dict[int, float]:
    import numpy as np

    from kindex_olap.query.noise import settings

    def p95(values: list[float]) -> float:
        return math.expm1(float(np.quantile(np.abs(values), settings().quantile)))

    everything = [x for _, x in pairs]
    floors = {}
    for item in settings().classes:
        own = [x for c, x in pairs if c == item.rank]
        floors[item.rank] = p95(own) if len(own) >= settings().min_pairs else p95(everything)
    return floors


def test_the_new_runs_are_the_same_after_a_compaction(
    liger_history_lake: Path, tmp_path: Path
) -> None:
    """A check finds the runs a lake commit added from the runs files it added while every lake
    commit since only appended (ingests); after a compaction rewrote the files, by comparing run
    ids: the same runs, steps and verdicts either way."""
    from kindex_olap.lake.compact import compact

    lake, keys = _planted_lake(liger_history_lake, tmp_path, 2.0)
    appended = run_check("", lake, since="1")
    assert len(_latency_steps(appended)) == len(keys)
    compact(lake)
    rewritten = run_check("", lake, since="1")
    assert rewritten.what == appended.what == "runs added after lake commit 1"
    assert (rewritten.steps, rewritten.regressions) == (appended.steps, appended.regressions)


def test_a_check_after_a_compaction_and_a_vacuum_tests_the_newest_ingest(
    liger_history_lake: Path, tmp_path: Path
) -> None:
    """`kindex check` tells the newest ingest's runs from the runs files of the lake commit
    before it; once a compaction and `kindex vacuum --retain 0` removed those, every check
    failed ("lake commit 1 can no longer be read") until the next ingest. The ingest's
    commit names the ingested_at it stamped its runs with, which finds the same runs."""
    from kindex_olap.lake.compact import compact, vacuum
    from kindex_olap.lake.store import Lake

    lake, keys = _planted_lake(liger_history_lake, tmp_path, 2.0)
    before = run_check("", lake)
    assert len(_latency_steps(before)) == len(keys)
    compact(lake)
    vacuum(lake, retain_hours=0)
    (first, *_) = Lake(lake).log()
    assert not all(Path(f).exists() for f in Lake(lake).files_at(first, "runs"))
    after = run_check("", lake)
    assert after.what == before.what == "runs of lake commit 2"
    assert (after.steps, after.regressions) == (before.steps, before.regressions)


def test_a_check_that_skips_the_steps_run_ids_tests_the_same_steps(
    liger_history_lake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When no other run of the new runs' kernels and GPUs was observed since the earliest of
    them (NewRuns.alone), a check reads no run ids: every step into a point observed since then
    holds a new run. The same steps and verdicts as matching each step's run ids in every step
    whenever ingested (NewRuns.ingested unset), and the steps of each partition's newest ingest
    are stored in a file of their own, which is what lets a check read them alone."""
    import dataclasses

    from kindex_olap.query import kept, new_runs
    from kindex_olap.query.engine import connect, snapshot_of

    lake, _ = _planted_lake(liger_history_lake, tmp_path, 1.5)
    with connect(lake) as con:
        found = new_runs._new_runs(con, snapshot_of(lake), None)
    assert found.alone and found.earliest is not None
    skipped = run_check("", lake)
    calls = []

    def matching(*args: Any) -> Any:
        calls.append(args)
        return dataclasses.replace(found, alone=False, ingested=None)

    monkeypatch.setattr(new_runs, "_new_runs", matching)
    monkeypatch.setattr(kept, "_KEPT", {})  # what the first check kept for the lake commit
    matched = run_check("", lake)
    assert calls, "the second check did not find its new runs again"
    assert len(skipped.steps) >= 20
    assert (skipped.steps, skipped.regressions) == (matched.steps, matched.regressions)
    assert found.ingested is not None
    with connect(lake) as con:
        files = con.execute("SELECT getvariable('layer_steps_files')").fetchall()[0][0]
    by_partition: dict[str, list[set[Any]]] = {}
    for path in files:
        times = duckdb.sql("SELECT DISTINCT to_ingested FROM read_parquet(?)", params=[path])
        by_partition.setdefault(Path(path).parent.name, []).append({r[0] for r in times.fetchall()})
    apart = 0
    for pieces in by_partition.values():
        newest = max(max(p) for p in pieces if p)
        assert sum(newest in p for p in pieces) == 1  # in one file
        apart += len(pieces) == 2 and {newest} in pieces  # and alone in it
    assert apart >= 1  # a partition of the planted ingest's steps and older ones
