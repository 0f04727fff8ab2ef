"""The comparability rule, ratios, intervals, verdicts and pairing, on crafted bundles."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import crafted as c
import pytest

from kindex_olap.cli.table import render
from kindex_olap.query.compile import Options
from kindex_olap.query.engine import connect, init_sql, quote_literal
from kindex_olap.query.noise import settings
from kindex_olap.query.run import run_query


def speedups(lake: Path, text: str = "speedup jsd", **options: object) -> list[dict[str, object]]:
    result = run_query(text, lake, Options(**options))  # type: ignore[arg-type]
    return [dict(zip(result.columns, row, strict=True)) for row in result.rows]


@pytest.fixture
def one_pair_and_decoys(tmp_path: Path) -> Path:
    """liger vs torch in one cell, plus torch runs differing in exactly one comparability key."""
    base = c.run("torch", median=4e6, p20=3.8e6, p80=4.2e6)
    decoys = [
        c.on_gpu(c.run("torch", median=9e6), "NVIDIA H100", "sm_90", "h100"),
        c.run("torch", median=9e6, pass_="forward"),
        c.run("torch", median=9e6, shape="tokens8192-vocab128256-fp32"),
        c.with_protocol(c.run("torch", median=9e6), "cpu_clock", "cpu"),
        c.run("torch", median=9e6, status="runtime_error", observed="2026-06-01T00:00:00.000Z"),
    ]
    bundles = [c.run("liger", median=1e6, p20=0.9e6, p80=1.1e6), base, *decoys]
    return c.ingest_bundles(tmp_path / "in", bundles, tmp_path / "lake")


def test_only_the_comparable_run_is_paired(one_pair_and_decoys: Path) -> None:
    rows = speedups(one_pair_and_decoys)
    assert [(r["pass"], r["gpu"], r["baseline"], r["speedup"]) for r in rows] == [
        ("backward", "NVIDIA B200", "torch", 4.0)
    ]


def test_no_pair_crosses_gpus_passes_workloads_or_protocols(one_pair_and_decoys: Path) -> None:
    con = connect(one_pair_and_decoys)
    rows = con.execute(
        "SELECT count(*) FROM comparable_pairs p "
        "JOIN runs b ON b.run_id = p.baseline_run_id JOIN runs c ON c.run_id = p.candidate_run_id "
        "WHERE b.environment_digest <> c.environment_digest OR b.pass <> c.pass "
        "OR b.workload_digest <> c.workload_digest OR b.protocol_digest <> c.protocol_digest "
        "OR b.status <> 'passed' OR c.status <> 'passed'"
    ).fetchall()
    total = con.execute("SELECT count(*) FROM comparable_pairs").fetchall()
    assert rows == [(0,)]
    assert total[0][0] == 4  # (liger, torch) both ways, in both pairings


def test_interval_and_verdicts(tmp_path: Path) -> None:
    bundles = [
        c.run("liger", median=1e6, p20=0.9e6, p80=1.1e6),
        c.run("torch", median=4e6, p20=3.8e6, p80=4.2e6),
        c.run("liger", median=1e6, p20=0.9e6, p80=1.2e6, pass_="forward"),
        c.run("torch", median=1.05e6, p20=1e6, p80=1.1e6, pass_="forward"),
        c.run("liger", median=2e6, pass_="full"),
        c.run("torch", median=1e6, pass_="full"),
    ]
    lake = c.ingest_bundles(tmp_path / "in", bundles, tmp_path / "lake")
    rows = {r["pass"]: r for r in speedups(lake)}
    assert rows["backward"]["run_speedup_lo"] == pytest.approx(3.8 / 1.1)
    assert rows["backward"]["run_speedup_hi"] == pytest.approx(4.2 / 0.9)
    # no replicates in this lake: both sides (1-10 ms) take the class's documented default, and
    # two single runs widen the interval by exactly that floor
    floor = settings().latency_class(1e6).default_floor
    assert rows["backward"]["noise_source"] == "default"
    assert rows["backward"]["speedup_lo"] == pytest.approx(3.8 / 1.1 / (1 + floor))
    assert rows["backward"]["speedup_hi"] == pytest.approx(4.2 / 0.9 * (1 + floor))
    assert rows["backward"]["verdict"] == "faster"
    assert rows["forward"]["speedup"] == pytest.approx(1.05)
    assert rows["forward"]["verdict"] == "within noise"
    assert rows["full"]["speedup"] == 0.5
    assert rows["full"]["verdict"] == "slower"


def test_a_median_outside_its_own_p20_p80_widens_the_interval_to_hold_it(tmp_path: Path) -> None:
    """A run whose median lies outside its own [p20, p80] (quantiles of another sample, a hand-
    edited bundle; no real run has one) gave an interval without the speedup in it: torch's
    median 6.3 ms with p20/p80 at 3.71 ms against liger at 3.7 ms read "1.70x, [0.89, 1.12],
    within noise". Its spread is widened to hold its median, so the interval holds the speedup,
    in the stored layers and in the live views alike."""
    bundles = [
        c.run("liger", median=3.715e6, p20=3.713e6, p80=3.716e6),
        c.run("torch", median=6.315e6, p20=3.713e6, p80=3.716e6),  # median above its p80
        c.run("liger", median=3e6, p20=3.2e6, p80=3.3e6, pass_="forward"),  # below its p20
        c.run("torch", median=3.6e6, p20=3.5e6, p80=3.7e6, pass_="forward"),
    ]
    lake = c.ingest_bundles(tmp_path / "in", bundles, tmp_path / "lake")
    columns = "pass, speedup, run_speedup_lo, run_speedup_hi"
    stored = {r["pass"]: r for r in speedups(lake)}
    con = connect(lake, live=True)
    live = {row[0]: dict(zip(columns.split(", "), row, strict=True))
            for row in con.execute(f"SELECT {columns} FROM speedups WHERE candidate = 'liger'")
            .fetchall()}  # fmt: skip
    con.close()
    for rows in (stored, live):
        backward, forward = rows["backward"], rows["forward"]
        assert backward["speedup"] == pytest.approx(6.315 / 3.715)
        assert backward["run_speedup_lo"] == pytest.approx(3.713 / 3.716)
        assert backward["run_speedup_hi"] == pytest.approx(6.315 / 3.713)
        assert forward["speedup"] == pytest.approx(1.2)
        assert forward["run_speedup_lo"] == pytest.approx(3.5 / 3.3)
        assert forward["run_speedup_hi"] == pytest.approx(3.7 / 3.0)


def test_a_spread_given_in_milliseconds_is_a_spread(tmp_path: Path) -> None:
    """p20 and p80 measured in ms (or us, s) are the run's spread, in ns: only those in ns were
    read, so a run stating its spread in ms was taken for one without (its interval a point,
    its verdict surer than its own spread allows)."""
    liger = c.run("liger", median=1e6)
    for measurement, ms in zip(liger["run"]["spec"]["measurements"], (0.5, 1.5), strict=True):
        measurement.update(unit="ms", value=ms)
    torch = c.run("torch", median=1.2e6)
    for measurement, us in zip(torch["run"]["spec"]["measurements"], (1100, 1300), strict=True):
        measurement.update(unit="us", value=us)
    lake = c.ingest_bundles(tmp_path / "in", [liger, torch], tmp_path / "lake")
    (row,) = speedups(lake)
    assert row["run_speedup_lo"] == pytest.approx(1.1e6 / 1.5e6)
    assert row["run_speedup_hi"] == pytest.approx(1.3e6 / 0.5e6)
    assert row["verdict"] == "within noise" and row["evidence"] is None  # not a single timing


def test_a_run_measured_in_milliseconds_without_timing(tmp_path: Path) -> None:
    """A run without timing takes its first measurement as its value, in that measurement's
    unit (ms), while its p20/p80 are stored in ns: they were compared as they were (an interval
    of [1.6e-06, 2.5e+06], "within noise" for a 2x speedup), and `latency` printed its median
    as 1e-06 ms. Both now read the value and the spread in one unit."""
    bundles = []
    for provider, median in (("liger", 1.0), ("torch", 2.0)):
        bundle = c.run(provider)
        spec = bundle["run"]["spec"]
        del spec["timing"]
        spec["measurements"] = [
            {"unit": "ms", "value": value, "metric": "latency", "statistic": statistic}
            for statistic, value in (
                ("median", median),
                ("p20", median * 0.9),
                ("p80", median * 1.1),
            )
        ]
        bundles.append(bundle)
    lake = c.ingest_bundles(tmp_path / "in", bundles, tmp_path / "lake")
    (row,) = speedups(lake)
    assert (row["speedup"], row["candidate_ms"], row["baseline_ms"]) == (2.0, 1.0, 2.0)
    assert row["run_speedup_lo"] == pytest.approx(1.8 / 1.1)
    assert row["run_speedup_hi"] == pytest.approx(2.2 / 0.9)
    assert row["verdict"] == "faster"
    latency = run_query("latency jsd", lake)
    index = latency.columns.index
    assert sorted((r[index("median_ms")], r[index("p20_ms")]) for r in latency.rows) == [
        (1.0, pytest.approx(0.9)),
        (2.0, pytest.approx(1.8)),
    ]


def test_runs_of_one_cell_in_milliseconds_and_nanoseconds_pair(tmp_path: Path) -> None:
    """Two runs that share every comparability key pair whatever time unit each gave: liger
    without timing, in ms, against torch timed in ns said "no comparable baseline (same kernel,
    pass, workload, environment, protocol, metric and statistic)" of runs that shared them all.
    Stored layers and live views alike; the history of liger's two versions steps across units."""
    liger = c.run("liger", median=1e6, version="0.8.0")
    spec = liger["run"]["spec"]
    del spec["timing"]
    spec["measurements"] = [
        {"unit": "ms", "value": value, "metric": "latency", "statistic": statistic}
        for statistic, value in (("median", 1.0), ("p20", 0.9), ("p80", 1.1))
    ]
    bundles = [
        liger,
        c.run(
            "liger",
            median=2e6,
            p20=1.9e6,
            p80=2.1e6,
            version="0.7.0",
            observed="2026-05-20T17:14:30.000Z",
        ),
        c.run("torch", median=2e6, p20=1.9e6, p80=2.1e6),
    ]
    lake = c.ingest_bundles(tmp_path / "in", bundles, tmp_path / "lake")
    (row,) = speedups(lake)
    assert (row["speedup"], row["candidate_ms"], row["baseline_ms"]) == (2.0, 1.0, 2.0)
    assert row["run_speedup_lo"] == pytest.approx(1.9 / 1.1)
    assert row["run_speedup_hi"] == pytest.approx(2.1 / 0.9)
    con = connect(lake, live=True)
    live = con.execute("SELECT speedup, run_speedup_lo FROM speedups WHERE candidate = 'liger' "
                       "AND pairing = 'latest'").fetchall()  # fmt: skip
    con.close()
    assert live == [(2.0, pytest.approx(1.9 / 1.1))]
    steps = run_query("changes jsd liger", lake)
    index = steps.columns.index
    (step,) = [r for r in steps.rows if r[index("series")] == "latency"]
    assert (step[index("from_value")], step[index("to_value")]) == (2.0, 1.0)


def test_bundles_without_a_workload_document_name_their_shape(tmp_path: Path) -> None:
    """A bundle carries no workload document, so bundles ingested as they come (a CI fleet's)
    had no shape: `speedup jsd` printed one row per workload with nothing to tell them apart.
    The shape is the workload's where one is described, else the one a Liger-shaped externalId
    names (benchmark/provider/gpu/SHAPE/time), else the workload digest's first 12 digits."""
    small, large = "tokens1024-vocab128256-fp32", "tokens8192-vocab128256-fp32"
    bundles = [
        c.run(provider, median=median * scale, shape=shape)
        for shape, scale in ((small, 1), (large, 4))
        for provider, median in (("liger", 1e6), ("torch", 2e6))
    ]
    unnamed = [c.run(provider, median=median, shape="unnamed") for provider, median in
               (("liger", 1e6), ("torch", 3e6))]  # fmt: skip
    for bundle, provider in zip(unnamed, ("liger", "torch"), strict=True):  # no shape in it
        bundle["run"]["spec"]["sourceNative"]["externalId"] = f"jsd/backward/{provider}/b200"
    memory = [c.memory_run("liger", 1e9, 0.9e9, 1.1e9), c.memory_run("torch", 2e9, 1.9e9, 2.1e9)]
    lake = c.ingest_bundles(tmp_path / "in", [*bundles, *unnamed, *memory], tmp_path / "lake")
    rows = speedups(lake)
    digest = c.digest("workload-unnamed")
    assert sorted((r["shape"], r["speedup"]) for r in rows) == sorted(
        [(small, 2.0), (large, 2.0), (f"workload {digest[7:19]}", 3.0)]
    )
    memory_rows = speedups(lake, "memory jsd")
    assert [r["shape"] for r in memory_rows] == ["tokens4096-vocab128256-fp32"]
    result = run_query("speedup jsd", lake)  # the command line's table tells them apart
    lines = render(result.columns, result.rows, "speedup", width=100).lines
    assert len(set(lines)) == len(lines) and any(small in line for line in lines)


def test_summary_uses_the_geometric_mean(tmp_path: Path) -> None:
    shapes = ["tokens1024-vocab128256-fp32", "tokens2048-vocab128256-fp32"]
    bundles = []
    for shape, ratio in zip(shapes, (2.0, 8.0), strict=True):
        bundles += [
            c.run("liger", median=1e6, shape=shape),
            c.run("torch", median=ratio * 1e6, shape=shape),
        ]
    lake = c.ingest_bundles(tmp_path / "in", bundles, tmp_path / "lake")
    (row,) = speedups(lake, "summary jsd b200")
    assert row["cases"] == 2
    assert row["geomean_speedup"] == pytest.approx(4.0)  # arithmetic mean would be 5
    assert (row["min_speedup"], row["max_speedup"]) == (2.0, 8.0)
    assert row["share_faster"] == 1.0


@pytest.fixture
def two_releases(tmp_path: Path) -> Path:
    """Each side measured with 0.7.0 (older) and 0.8.0 (newer)."""
    old, new = "2026-01-01T00:00:00.000Z", "2026-05-01T00:00:00.000Z"
    bundles = [
        c.run("liger", median=2e6, version="0.7.0", observed=old),
        c.run("torch", median=4e6, version="0.7.0", observed=old),
        c.run("liger", median=1e6, version="0.8.0", observed=new),
        c.run("torch", median=5e6, version="0.8.0", observed=new),
    ]
    return c.ingest_bundles(tmp_path / "in", bundles, tmp_path / "lake")


def test_default_pairs_the_newest_runs(two_releases: Path) -> None:
    (row,) = speedups(two_releases)
    assert (row["speedup"], row["candidate_version"], row["baseline_version"]) == (
        5.0,
        "0.8.0",
        "0.8.0",
    )
    assert str(row["candidate_observed_at"]).startswith("2026-05-01")


@pytest.mark.slow
def test_version_pins_and_all_lists_every_same_version_pair(two_releases: Path) -> None:
    (row,) = speedups(two_releases, version="0.7.0")
    assert (row["speedup"], row["candidate_version"]) == (2.0, "0.7.0")
    rows = speedups(two_releases, all_pairs=True)
    assert sorted((r["candidate_version"], r["speedup"]) for r in rows) == [
        ("0.7.0", 2.0),
        ("0.8.0", 5.0),
    ]


def test_memory_ratios(tmp_path: Path) -> None:
    bundles = [c.memory_run("liger", 100, 90, 110), c.memory_run("torch", 300, 290, 310)]
    bundles.append(c.run("torch", median=4e6))  # a latency run never pairs with memory
    lake = c.ingest_bundles(tmp_path / "in", bundles, tmp_path / "lake")
    (row,) = speedups(lake, "memory jsd")
    assert row["memory_ratio"] == 3.0
    assert (row["ratio_lo"], row["ratio_hi"]) == (pytest.approx(290 / 110), pytest.approx(310 / 90))
    assert row["verdict"] == "smaller"


@pytest.mark.slow
def test_views_see_a_new_ingest_without_rebuilding(tmp_path: Path) -> None:
    lake = c.ingest_bundles(tmp_path / "a", [c.run("liger")], tmp_path / "lake")
    assert speedups(lake) == []
    c.ingest_bundles(tmp_path / "b", [c.run("torch", median=3e6)], lake)
    assert [r["speedup"] for r in speedups(lake)] == [3.0]


def test_init_sql_writes_quoted_literal_paths(tmp_path: Path) -> None:
    lake = c.ingest_bundles(tmp_path / "in", [c.run("liger")], tmp_path / "lake")
    script = init_sql(lake)
    assert "getvariable('runs_files')" not in script
    assert quote_literal(str(lake.resolve() / "_kindex/empty/workloads.parquet")) in script
    import duckdb

    con = duckdb.connect(str(tmp_path / "kindex.duckdb"))
    con.execute(script).fetchall()
    con.close()
    con = duckdb.connect(str(tmp_path / "kindex.duckdb"))
    assert con.execute("SELECT count(*) FROM latency").fetchall() == [(1,)]


def test_quote_literal_doubles_quotes() -> None:
    assert quote_literal("it's") == "'it''s'"


def test_engine_import_stays_light() -> None:
    code = (
        "import sys, kindex_olap.query.engine, kindex_olap.query.compile, kindex_olap.query.shorthand;"
        "bad = [m for m in ('typer', 'rich', 'polars', 'pyarrow') if m in sys.modules];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    "text", ["speedup jsd", "speedup jsd b200 bwd", "summary jsd", "latency jsd", "runs jsd h100"]
)
def test_macro_filters_match_the_views(one_pair_and_decoys: Path, text: str) -> None:
    """The <view>_for(kernels, environments, passes) macros, filtered before pairing, return what
    the same filters in a WHERE over the unfiltered view return."""
    from kindex_olap.query.compile import assemble, compile_query, where_of
    from kindex_olap.query.shorthand import parse
    from kindex_olap.query.verbs import REGISTRY
    from kindex_olap.query.vocabulary import load_vocabulary

    con = connect(one_pair_and_decoys)
    query = parse(text, load_vocabulary(con))
    compiled = compile_query(query)
    spec = REGISTRY[query.verb].sql
    assert spec is not None
    where = where_of(query, Options())
    plain = assemble(spec, spec.view, where.clauses)
    expected = con.execute(plain, where.params).fetchall()
    assert con.execute(compiled.sql, list(compiled.params)).fetchall() == expected
    assert expected or query.verb == "runs"


def test_gpu_names_the_model_so_grouping_never_pools_two(liger_history_lake: Path) -> None:
    """H100 PCIe and H100 80GB HBM3 are one product, two models: every view's gpu column names
    the model, so `SELECT gpu, count(*) FROM latency GROUP BY ALL` (the README's example) keeps
    them apart, and the noise model and speedups say the same label."""
    with connect(liger_history_lake) as con:
        products = con.execute(
            "SELECT count(DISTINCT product), count(DISTINCT (product, form_factor)) "
            "FROM environments WHERE product = 'NVIDIA H100'"
        ).fetchall()[0]
        assert products[0] == 1 and products[1] >= 2  # one product, several models
        groups = dict(con.execute("SELECT gpu, count(*) FROM latency GROUP BY ALL").fetchall())
        assert {"NVIDIA H100 PCIe", "NVIDIA H100 80GB HBM3"} <= set(groups)
        assert "NVIDIA H100" not in groups
        for view in ("speedups", "noise_model"):
            labels = {r[0] for r in con.execute(f"SELECT DISTINCT gpu FROM {view}").fetchall()}
            assert "NVIDIA H100" not in labels and "NVIDIA H100 PCIe" in labels, view


def test_speedup_summary_has_the_summary_verbs_interval_and_verdict(
    liger_history_lake: Path,
) -> None:
    """speedup_summary is the summary verb's query over every newest pair (sql/queries/
    summary.sql, included): where a group holds the same pairs as `kindex query summary`'s
    (which keeps each cell's default pairs), the view's geometric mean, bootstrap interval and
    verdict are the verb's."""
    keys = ("kernel", "pass", "gpu", "environment", "metric", "baseline", "candidate", "cases")
    values = ("geomean_speedup", "geomean_lo", "geomean_hi", "verdict")
    with connect(liger_history_lake) as con:
        cursor = con.execute("SELECT * FROM speedup_summary")
        names = [d[0] for d in cursor.description]
        view = {
            tuple(row[names.index(k)] for k in keys): tuple(row[names.index(v)] for v in values)
            for row in cursor.fetchall()
        }
    assert {"geomean_lo", "geomean_hi", "verdict", "baseline_is_reference"} <= set(names)
    assert all(lo <= mean <= hi for mean, lo, hi, _ in view.values())
    summary = run_query("summary", liger_history_lake)
    index = {name: i for i, name in enumerate(summary.columns)}
    same = 0
    for row in summary.rows:
        key = tuple(row[index[k]] for k in keys)
        if key in view:
            mine = tuple(row[index[v]] for v in values)
            assert view[key][3] == mine[3] and view[key][:3] == pytest.approx(mine[:3]), key
            same += 1
    assert same > len(summary.rows) * 0.7
