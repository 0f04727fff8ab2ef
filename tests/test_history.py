"""History over the real Liger-history lake: golden steps recomputed from the CSV, false alarms
on back-to-back repeats, the version order, `kindex check` exit codes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pytest

from kindex_olap.query.compile import Options
from kindex_olap.query.run import run_check, run_query
from tests.conftest import LIGER_HISTORY


def _rows(result: Any) -> list[dict[str, Any]]:
    return [dict(zip(result.columns, row, strict=True)) for row in result.rows]


def _csv(sql: str, *params: Any) -> list[tuple[Any, ...]]:
    con = duckdb.connect()
    try:
        con.read_csv(str(LIGER_HISTORY), all_varchar=True).create("h")
        return con.execute(sql, list(params)).fetchall()
    finally:
        con.close()


# -- runs of one code ---------------------------------------------------------------------


def test_runs_of_one_commit_are_one_point_never_a_step(liger_history_lake: Path) -> None:
    """rope backward on the MI300X, H=8192 T=2048: a hidden-size sweep and a sequence sweep of
    one invocation (commit a054fafd6f, 12 s apart) measured liger at 0.141 and 0.294 ms. One
    code, so one point of two runs whose spread is its noise, not a 2.09x regression."""
    options = Options(by="run", all_branches=True)
    text = "history rope mi300x liger bwd"
    rows = [
        r
        for r in _rows(run_query(text, liger_history_lake, options))
        if r["commit"] == "a054fafd6f" and "8192" in r["shape"] and "2048" in r["shape"]
    ]
    assert len(rows) == 1 and rows[0]["runs"] == 2
    changes = _rows(run_query("changes rope mi300x liger bwd", liger_history_lake, options))
    assert not [r for r in changes if r["to_commits"] == "a054fafd6f" and r["from_commits"]
                == "a054fafd6f"]  # fmt: skip


# -- golden steps -------------------------------------------------------------------------


def _kto_csv_ratios() -> dict[tuple[str, int], float]:
    """liger's kto_loss latency on the H100 80GB HBM3, main-branch rows straight from the CSV:
    the first 0.5.4 commit's run over the last 0.5.3 commit's (each commit's runs are one
    point), per pass and batch size."""
    rows = _csv(
        """
        SELECT kernel_operation_mode, x_value::INT, liger_version,
               arg_max(y_value_50::DOUBLE, timestamp) FILTER (WHERE liger_version = '0.5.3'),
               arg_min(y_value_50::DOUBLE, timestamp) FILTER (WHERE liger_version = '0.5.4')
        FROM h
        WHERE kernel_name = 'kto_loss' AND kernel_provider = 'liger' AND metric_name = 'speed'
          AND gpu_name = 'NVIDIA H100 80GB HBM3' AND on_main_history = '1'
          AND liger_version IN ('0.5.3', '0.5.4')
        GROUP BY ALL
        """
    )
    last = {(m, x): v for m, x, version, v, _ in rows if version == "0.5.3"}
    first = {(m, x): v for m, x, version, _, v in rows if version == "0.5.4"}
    return {key: first[key] / last[key] for key in last if key in first}


def test_kto_loss_h100_improvements_match_the_csv(liger_history_lake: Path) -> None:
    expected = _kto_csv_ratios()
    assert len(expected) == 10  # forward and full, five batch sizes
    result = run_query("improvements kto_loss h100 liger", liger_history_lake)
    found = {
        (r["pass"], int(r["shape"].split("-")[0].removeprefix("batch"))): r
        for r in _rows(result)
        if r["series"] == "latency" and r["from_version"] == "0.5.3" and r["to_version"] == "0.5.4"
    }
    assert set(found) == set(expected)
    for key, ratio in expected.items():
        row = found[key]
        assert row["to_version"] == "0.5.4"
        assert row["ratio"] == pytest.approx(ratio, rel=1e-6)  # the lake keeps whole ns
        assert 0.38 <= row["ratio"] <= 0.46
        assert row["ratio_lo"] < row["ratio"] < row["ratio_hi"] < 0.95
        assert row["verdict"] == "improvement"
        assert row["q_value"] <= 0.01
    speedups = [r for r in _rows(result) if r["series"] == "speedup" and r["to_version"] == "0.5.4"]
    assert len(speedups) == 10 and all(r["ratio"] > 2 for r in speedups)


def test_jsd_h100_pcie_is_an_environment_shift_not_a_regression(
    liger_history_lake: Path,
) -> None:
    """liger's jsd forward on the H100 PCIe, 0.3.0 -> 0.3.1 on the main branch: its latency rose
    about 12 %, and so did torch's run of the same invocation (the same commit); the speedup did
    not move. Main-branch runs only: the branch run between them is another story (below)."""
    result = run_query("changes jsd h100-pcie liger", liger_history_lake)
    rows = [r for r in _rows(result) if r["from_version"] == "0.3.0"]
    assert rows, "the 0.3.0 -> 0.3.1 steps are missing"
    assert not [r for r in rows if r["verdict"] == "regression"]
    shifted = [r for r in rows if r["series"] == "latency" and "65536" in r["shape"]]
    assert shifted and all(r["verdict"] == "environment shift" for r in shifted)
    forward = next(r for r in shifted if r["pass"] == "forward")
    assert forward["ratio"] == pytest.approx(43.490959 / 38.885471, rel=1e-6)
    history = _rows(run_query("history jsd h100-pcie fwd liger vocab=65536", liger_history_lake))
    speedups = [r["speedup"] for r in history]
    assert speedups == pytest.approx([0.85, 0.87], abs=0.005)
    assert [r["verdict"] for r in history] == [None, "environment shift"]
    assert history[0]["speedup_verdict"] is None
    assert history[1]["speedup_verdict"] in ("within noise", "insufficient replicates (floor 4 %)")


def test_jsd_h100_pcie_v16384_is_two_events_with_every_branch(liger_history_lake: Path) -> None:
    """With every branch, jsd forward V=16384 on the H100 PCIe has four points: 0.3.0 at
    ee4cf510b1 and a6c175e7df, 0.3.1 at 6db95c99d0 (branch) and a5d03525a3 (main). liger
    slowed 9.7 % into 6db95c99d0 while torch's run of that invocation stayed at 8.36 ms: no
    environment shift there (the same-invocation rule), a latency step the single runs' noise
    cannot settle; torch rose 14 % only into a5d03525a3, where liger stayed flat (0.5 %)."""
    options = Options(by="run", all_branches=True)
    text = "history jsd h100-pcie fwd liger vocab=16384"
    rows = _rows(run_query(text, liger_history_lake, options))
    assert [r["commit"] for r in rows] == ["ee4cf510b1", "a6c175e7df", "6db95c99d0", "a5d03525a3"]
    into_branch, into_main = rows[2], rows[3]
    assert into_branch["change"] == pytest.approx(10.903103828430176 / 9.939423561096191)
    assert into_branch["verdict"] != "environment shift"
    assert into_branch["verdict"].startswith("insufficient replicates")
    assert into_main["change"] == pytest.approx(10.96003246307373 / 10.903103828430176)
    assert into_main["verdict"] == "within noise"
    assert into_main["speedup"] / into_branch["speedup"] == pytest.approx(
        (9.532496452331543 / 10.96003246307373) / (8.3571195602417 / 10.903103828430176)
    )


def test_a100_kto_loss_transient_shows_by_run(liger_history_lake: Path) -> None:
    """kto_loss on the A100, B=16: 65 ms in 0.5.1, then three 0.5.2 runs at 148, 107, 69 ms
    (branches off main: --all-branches), each of its own commit, so each its own point, by run
    and by version alike."""
    options = Options(by="run", all_branches=True)
    text = "history kto_loss a100 liger full batch=16"
    runs = _rows(run_query(text, liger_history_lake, options))
    by_version: dict[str, list[float]] = {}
    for r in runs:
        by_version.setdefault(r["version"], []).append(r["median_ms"])
    assert [round(v) for v in by_version["0.5.2"]] == [148, 107, 69]
    assert by_version["0.5.1"] and round(by_version["0.5.1"][-1]) == 65
    versions = _rows(run_query(text, liger_history_lake, Options(all_branches=True)))
    points = [r for r in versions if r["version"] == "0.5.2"]
    assert [round(r["median_ms"]) for r in points] == [148, 107, 69]
    assert len({r["commits"] for r in points}) == 3


def test_main_branch_by_default(liger_history_lake: Path) -> None:
    """history reads main-branch runs unless --all-branches: the counts are the CSV's."""
    text = "history kto_loss a100"
    main = _rows(run_query(text, liger_history_lake, Options(by="run")))
    every = _rows(run_query(text, liger_history_lake, Options(by="run", all_branches=True)))
    counts = dict(
        _csv(
            "SELECT on_main_history, count(*) FROM h WHERE kernel_name = 'kto_loss' "
            "AND gpu_name = 'NVIDIA A100-SXM4-80GB' AND metric_name = 'speed' GROUP BY ALL"
        )
    )
    assert len(main) == counts["1"] > 0
    assert len(every) == counts["1"] + counts["0"]


def test_versions_order_semantically(liger_history_lake: Path) -> None:
    text = "history kto_loss h100-80gb-hbm3 liger fwd batch=16"
    rows = _rows(run_query(text, liger_history_lake, Options(all_branches=True)))
    # 0.5.3 was measured at three commits (each a point), then 0.5.4, then 0.5.10
    assert [r["version"] for r in rows] == ["0.5.3", "0.5.3", "0.5.3", "0.5.4", "0.5.10"]


def test_commits_travel_with_the_steps(liger_history_lake: Path) -> None:
    rows = _rows(run_query("improvements kto_loss h100 liger fwd batch=16", liger_history_lake))
    commits = _csv(
        "SELECT DISTINCT left(first_seen_commit, 10) FROM h WHERE kernel_name = 'kto_loss' "
        "AND gpu_name = 'NVIDIA H100 80GB HBM3' AND liger_version = '0.5.4' "
        "AND on_main_history = '1' AND kernel_provider = 'liger' AND x_value = '16' "
        "AND kernel_operation_mode = 'forward' AND metric_name = 'speed'"
    )
    assert rows and all(r["to_commits"] == commits[0][0] for r in rows)


def test_an_empty_step_answer_says_why_first(liger_history_lake: Path) -> None:
    """A history verb that shows nothing says why, in its first note (a table prints that line
    alone): the filter that emptied the runs; runs with no main-branch point or step (jsd on
    the MI300X: one version, first seen on a branch); only the cells' baselines stepping
    (torch, the baseline of every jsd cell); or steps that none of
    the verb's verdicts fit (jsd on the H100 PCIe, whose 0.3.0 -> 0.3.1 is an environment
    shift), with the rules that flag one."""

    def why(text: str, options: Options = Options()) -> str:
        result = run_query(text, liger_history_lake, options)
        assert result.rows == [], text
        return str(result.diagnostics[0])

    assert why("regressions jsd a100").startswith("no runs match: the filter gpu a100 left")
    assert why("history jsd a100").startswith("no runs match: the filter gpu a100 left")
    assert why("history jsd mi300x") == (
        "no history points for the runs selected; main-branch runs only (--all-branches adds "
        "runs first seen elsewhere)"
    )
    assert why("regressions jsd mi300x").startswith(
        "no regressions: the runs selected make no step (a step joins two versions of an "
        "implementation in one cell); main-branch runs only"
    )
    assert why("improvements torch jsd").startswith(
        "no improvements: of the runs selected only their cells' baselines (torch) make steps"
    )
    # every step moved a little: `changes` with no threshold lists each
    steps = run_query("changes jsd h100-pcie", liger_history_lake, Options(threshold=0.0)).rows
    assert why("regressions jsd h100-pcie") == (
        f"no regressions: none of the {len(steps)} steps of the runs selected is a regression (a "
        "change > 5% with Benjamini-Hochberg q <= 0.01); main-branch runs only (--all-branches "
        "adds runs first seen elsewhere)"
    )
    # by run (computed live, not read from the stored steps): the same explanation, its count
    by_run = run_query(
        "changes jsd h100-pcie", liger_history_lake, Options(threshold=0.0, by="run")
    ).rows
    assert why("regressions jsd h100-pcie", Options(threshold=0.5, by="run")) == (
        f"no regressions: none of the {len(by_run)} steps of the runs selected is a regression (a "
        "change > 50% with Benjamini-Hochberg q <= 0.01); main-branch runs only (--all-branches "
        "adds runs first seen elsewhere)"
    )


# -- kindex check --------------------------------------------------------------------------


def test_check_is_quiet_when_nothing_new(liger_history_lake: Path) -> None:
    newest = _csv("SELECT max(timestamp) FROM h")[0][0]
    result = run_check("", liger_history_lake, since=str(newest))
    assert result.tested_steps == 0 and result.regressions == []
    assert result.summary().startswith("nothing to test: no step into runs observed after")


def test_check_names_a_filter_that_matches_no_run(liger_history_lake: Path) -> None:
    """A gate whose filter names a GPU the lake has never held (a100 for jsd) tests nothing and
    says which filter emptied the runs, before its summary; a filter that matches runs whose
    steps are old says only that nothing is new."""
    empty = run_check("jsd a100", liger_history_lake)
    assert empty.tested_steps == 0
    assert empty.notes[0].startswith("no runs match: the filter gpu a100 left nothing (the runs")
    newest = _csv("SELECT max(timestamp) FROM h")[0][0]
    old = run_check("jsd h100-pcie", liger_history_lake, since=str(newest))
    assert old.tested_steps == 0
    assert not [n for n in old.notes if n.startswith("no runs match")]


def _plant(raw: Path, out: Path, factor: float) -> int:
    """Copies of liger's and torch's jsd forward runs on the B200 (every shape) as a new
    version 99.0.0 a year later; liger's latency (median, p20, p80) times `factor`."""
    import json

    from tests.conftest import read_seed, seed_text

    out.mkdir()
    count = 0
    for path in sorted(raw.glob("*.txt")):
        text = path.read_text(encoding="utf-8")
        if '"jsd/forward"' not in text or '"NVIDIA B200"' not in text:
            continue
        display, bundle = read_seed(path)
        run = bundle["run"]
        if run["metadata"]["labels"].get("liger_version") != "0.8.0":
            continue
        spec = run["spec"]
        provider = spec["sourceNative"]["externalId"].split("/")[2]
        if provider not in ("liger", "torch"):
            continue
        scale = factor if provider == "liger" else 1.0
        spec["timing"]["latencyNs"]["median"] = round(spec["timing"]["latencyNs"]["median"] * scale)
        for m in spec["measurements"]:
            m["value"] = round(m["value"] * scale)
        spec["observedAt"] = spec["observedAt"].replace("2026-", "2027-", 1)
        spec["sourceNative"]["externalId"] += "/planted"
        run["metadata"]["name"] = run["metadata"]["name"][:180] + "-planted"
        run["metadata"]["labels"]["liger_version"] = "99.0.0"
        (out / path.name).write_text(seed_text(display, bundle), encoding="utf-8")
        count += 1
    assert json  # the bundles are JSON text in the seed format
    return count


@pytest.mark.slow
@pytest.mark.parametrize("factor,regressed", [(2.0, True), (1.0, False)])
def test_check_exit_code_with_and_without_a_planted_regression(
    liger_history_lake: Path, tmp_path: Path, factor: float, regressed: bool
) -> None:
    import shutil
    import subprocess
    import sys

    from kindex_olap.ingestion.pipeline import ingest

    lake = tmp_path / "lake"
    shutil.copytree(liger_history_lake, lake)
    planted = _plant(liger_history_lake.parent / "raw", tmp_path / "planted", factor)
    assert planted >= 8
    ingest([tmp_path / "planted"], lake)
    command = [sys.executable, "-m", "kindex_olap", "check", "--lake", str(lake)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == (1 if regressed else 0), done.stderr
    assert "(runs of lake commit 2)" in done.stderr
    if regressed:
        assert "jsd" in done.stdout and "regression" in done.stdout
        # the same step, the same verdict, whatever the filters (the correction is lake-wide)
        everything = run_check("", lake)
        jsd = run_check("jsd b200", lake)
        assert jsd.regressions and sorted(map(str, jsd.regressions)) == sorted(
            str(r) for r in everything.regressions if r[0] == "jsd"
        )
        markdown = subprocess.run(
            [*command, "jsd", "-f", "markdown"], capture_output=True, text=True, check=False
        )
        assert markdown.returncode == 1
        assert markdown.stdout.startswith("### kindex check: ") and "| kernel |" in markdown.stdout
    else:
        assert done.stdout == ""


def test_plot_history_marks_the_flagged_steps(liger_history_lake: Path) -> None:
    from kindex_olap.doors.plot import query_chart

    chart = query_chart("history kto_loss h100-80gb-hbm3 liger fwd", liger_history_lake)
    data = chart.spec["data"]["values"]
    flagged = {(d["version"], d["_flag"]) for d in data if d["_flag"] != "none"}
    # main branch: 0.5.3 -> 0.5.4, and steps inside 0.5.3 (three commits measured under it)
    assert ("0.5.4", "improvement") in flagged
    steps = _rows(run_query("changes kto_loss h100-80gb-hbm3 liger fwd", liger_history_lake))
    assert flagged == {
        (r["to_version"], r["verdict"])
        for r in steps
        if r["verdict"] in ("regression", "improvement", "environment shift")
    }
    points = [
        next(layer for layer in panel["layer"] if layer["mark"]["type"] == "point")
        for panel in chart.spec["vconcat"]
    ]
    assert [p["encoding"]["y"]["field"] for p in points] == ["median_ms", "speedup"]
    # the ratio on a log axis that names its baseline; one legend for the lines
    speed_y = points[1]["encoding"]["y"]
    assert speed_y["scale"] == {"type": "log", "base": 2}
    assert speed_y["title"].startswith("speedup vs huggingface")
    assert points[1]["encoding"]["stroke"]["legend"] is None


def test_tiled_speedups_on_the_rtx_4090_hold_their_baseline(liger_history_lake: Path) -> None:
    """tiled_geglu and tiled_swiglu on the RTX 4090: huggingface and deepspeed_tiled share one
    implementation digest, as do liger and liger_tiled. Series are keyed by the run's own label
    and the cell's baseline label is fixed (huggingface), so a speedup step is never a change of
    divisor (issue 20 saw liger_tiled 'improve' 0.595 -> 1.027 while its latency moved 0.04 %):
    every flagged speedup step has its latency step flagged the other way."""
    options = Options(by="run", all_branches=True)
    for kernel in ("tiled_geglu", "tiled_swiglu"):
        history = _rows(run_query(f"history {kernel} 4090", liger_history_lake, options))
        assert history and {r["baseline"] for r in history} == {"huggingface"}
        steps = _rows(run_query(f"changes {kernel} 4090", liger_history_lake, options))
        flagged = {
            (r["series"], r["pass"], r["shape"], r["implementation"], r["to_observed"]): r
            for r in steps
            if r["verdict"] in ("regression", "improvement")
        }
        for (series, *point), row in flagged.items():
            if series == "speedup":
                latency = flagged.get(("latency", *point))
                assert latency is not None and latency["verdict"] == row["verdict"], row
