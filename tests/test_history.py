"""History over the real Liger-history lake: golden steps recomputed from the CSV, false alarms
on back-to-back repeats, the version order, `kindex check` exit codes."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import duckdb
import pytest

from kindex_olap.query import history as h
from kindex_olap.query.compile import Options, run_check, run_query
from kindex_olap.query.engine import connect
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


# -- back-to-back repeats -----------------------------------------------------------------


def test_back_to_back_repeats_are_rarely_flagged(liger_history_lake: Path) -> None:
    """Every pair of consecutive runs of one series with the same version label (all branches,
    every implementation, the runs of one benchmark invocation excluded as sql/views/noise.sql does),
    tested as if the two were versions, in one query: at most 5 % flagged."""
    con = connect(liger_history_lake)
    options = h.HistoryOptions(by="run", all_branches=True)
    h.select_runs(con, (None, None, None), [], [], options)
    points = h.fetch_points(con, h.version_order(con), True)
    steps = h.analyse(points, options)
    version, at = points["version"], points["first_observed"]
    repeats = {int(t) for t in steps[0].to if version[t] == version[t - 1] and at[t] > at[t - 1]}
    flagged = {
        int(t)
        for s in steps
        for t, verdict in zip(s.to, s.verdict, strict=True)
        if int(t) in repeats and verdict in (h.REGRESSION, h.IMPROVEMENT)
    }
    # the CSV's natural key finds 884; the lake's series (cell and implementation) a few more
    assert 884 <= len(repeats) <= 1000
    assert len(flagged) / len(repeats) <= 0.05


# -- golden steps -------------------------------------------------------------------------


def _kto_csv_ratios() -> dict[tuple[str, int], float]:
    """liger's kto_loss latency on the H100 80GB HBM3, 0.5.4 median over 0.5.3 median per
    pass and batch size, main-branch rows, straight from the CSV."""
    rows = _csv(
        """
        SELECT kernel_operation_mode, x_value::INT, liger_version,
               median(y_value_50::DOUBLE)
        FROM h
        WHERE kernel_name = 'kto_loss' AND kernel_provider = 'liger' AND metric_name = 'speed'
          AND gpu_name = 'NVIDIA H100 80GB HBM3' AND on_main_history = '1'
          AND liger_version IN ('0.5.3', '0.5.4')
        GROUP BY ALL
        """
    )
    by = {(m, x, v): value for m, x, v, value in rows}
    return {
        (m, x): by[(m, x, "0.5.4")] / by[(m, x, "0.5.3")]
        for m, x, v in by
        if v == "0.5.3" and (m, x, "0.5.4") in by
    }


def test_kto_loss_h100_improvements_match_the_csv(liger_history_lake: Path) -> None:
    expected = _kto_csv_ratios()
    assert len(expected) == 10  # forward and full, five batch sizes
    result = run_query("improvements kto_loss h100 liger", liger_history_lake)
    found = {
        (r["pass"], int(r["shape"].split("-")[0].removeprefix("batch"))): r
        for r in _rows(result)
        if r["series"] == "latency" and r["from_version"] == "0.5.3"
    }
    assert set(found) == set(expected)
    for key, ratio in expected.items():
        row = found[key]
        assert row["to_version"] == "0.5.4"
        assert row["ratio"] == pytest.approx(ratio, rel=1e-6)  # the lake keeps whole ns
        assert 0.38 <= row["ratio"] <= 0.46
        assert row["ratio_lo"] < row["ratio"] < row["ratio_hi"] < 0.95
        assert row["verdict"] == "improvement"
        assert row["q_value"] <= h.ALPHA
    speedups = [r for r in _rows(result) if r["series"] == "speedup"]
    assert len(speedups) == 10 and all(r["ratio"] > 2 for r in speedups)


def test_jsd_h100_pcie_is_an_environment_shift_not_a_regression(
    liger_history_lake: Path,
) -> None:
    """liger's jsd forward on the H100 PCIe, 0.3.0 -> 0.3.1: its latency rose about 12 %, and
    so did torch's run of the same invocation; the speedup did not move."""
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
    assert [r["speedup_verdict"] for r in history] == [None, "within noise"]


def test_a100_kto_loss_transient_shows_by_run(liger_history_lake: Path) -> None:
    """kto_loss on the A100, B=16: 65 ms in 0.5.1, then three 0.5.2 runs at 148, 107, 69 ms
    (branches off main: --all-branches)."""
    options = Options(by="run", all_branches=True)
    text = "history kto_loss a100 liger full batch=16"
    runs = _rows(run_query(text, liger_history_lake, options))
    by_version: dict[str, list[float]] = {}
    for r in runs:
        by_version.setdefault(r["version"], []).append(r["median_ms"])
    assert [round(v) for v in by_version["0.5.2"]] == [148, 107, 69]
    assert by_version["0.5.1"] and round(by_version["0.5.1"][-1]) == 65
    versions = _rows(run_query(text, liger_history_lake, Options(all_branches=True)))
    v052 = next(r for r in versions if r["version"] == "0.5.2")
    assert v052["runs"] == 3 and v052["max_ms"] / v052["min_ms"] > 2  # the spread shows it


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
    assert [r["version"] for r in rows] == ["0.5.3", "0.5.4", "0.5.10"]


def test_commits_travel_with_the_steps(liger_history_lake: Path) -> None:
    rows = _rows(run_query("improvements kto_loss h100 liger fwd batch=16", liger_history_lake))
    commits = _csv(
        "SELECT DISTINCT left(first_seen_commit, 10) FROM h WHERE kernel_name = 'kto_loss' "
        "AND gpu_name = 'NVIDIA H100 80GB HBM3' AND liger_version = '0.5.4' "
        "AND on_main_history = '1' AND kernel_provider = 'liger' AND x_value = '16' "
        "AND kernel_operation_mode = 'forward' AND metric_name = 'speed'"
    )
    assert rows and all(r["to_commits"] == commits[0][0] for r in rows)


# -- kindex check --------------------------------------------------------------------------


def test_check_is_quiet_when_nothing_new(liger_history_lake: Path) -> None:
    newest = _csv("SELECT max(timestamp) FROM h")[0][0]
    result = run_check("", liger_history_lake, since=str(newest))
    assert result.rows == []
    assert math.isfinite(len(result.diagnostics))


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
    assert "the newest version, 99.0.0" in done.stderr
    if regressed:
        assert "jsd" in done.stdout and "regression" in done.stdout
        # the same step, the same verdict, whatever the filters (the correction is lake-wide)
        everything = run_check("", lake)
        jsd = run_check("jsd b200", lake)
        assert jsd.rows and sorted(map(str, jsd.rows)) == sorted(
            str(r) for r in everything.rows if r[0] == "jsd"
        )
        markdown = subprocess.run(
            [*command, "jsd", "-f", "markdown"], capture_output=True, text=True, check=False
        )
        assert markdown.returncode == 1 and markdown.stdout.startswith("| kernel |")
    else:
        assert done.stdout == ""


def test_plot_history_marks_the_flagged_steps(liger_history_lake: Path) -> None:
    from kindex_olap.doors.plot import query_chart

    chart = query_chart("history kto_loss h100-80gb-hbm3 liger fwd", liger_history_lake)
    data = chart.spec["data"]["values"]
    flagged = {(d["version"], d["_flag"]) for d in data if d["_flag"] != "none"}
    assert flagged == {("0.5.4", "improvement")}  # main branch: 0.5.3 -> 0.5.4 only
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
