"""`kindex query`: the shorthand, its SQL (golden), output formats (golden), empty-result
explanations, hostile input, and ratios recomputed from the real Liger CSV."""

from __future__ import annotations

import csv
import dataclasses
import json
import shutil
from dataclasses import replace
from pathlib import Path

import crafted as c
import pytest
from conftest import LIGER_HISTORY, assert_golden
from typer.testing import CliRunner

from kindex_olap.cli.app import app
from kindex_olap.errors import QueryError
from kindex_olap.ingestion.pipeline import ingest
from kindex_olap.query.compile import compile_query
from kindex_olap.query.engine import connect
from kindex_olap.query.run import run_query
from kindex_olap.query.shorthand import parse
from kindex_olap.query.vocabulary import load_vocabulary


def invoke(*args: str) -> object:
    return CliRunner().invoke(app, list(args))


@pytest.fixture
def seeds_lake(tmp_path: Path) -> Path:
    folder = tmp_path / "seeds"
    shutil.copytree(c.SEEDS, folder)
    ingest([folder], tmp_path / "lake")
    return tmp_path / "lake"


@pytest.fixture
def pair_lake(tmp_path: Path) -> Path:
    bundles = [
        c.run("liger", median=1e6, p20=0.9e6, p80=1.1e6),
        c.run("torch", median=4e6, p20=3.8e6, p80=4.2e6),
        c.run("liger", median=2e6, pass_="forward"),
        c.run("torch", median=2.1e6, pass_="forward"),
    ]
    return c.ingest_bundles(tmp_path / "in", bundles, tmp_path / "lake")


def test_seeds_jsd_b200_explains_the_missing_baseline(seeds_lake: Path) -> None:
    result = CliRunner().invoke(app, ["query", "speedup jsd b200", "--lake", str(seeds_lake)])
    assert result.exit_code == 0
    assert "no comparable runs: the lake holds a liger jsd backward run on NVIDIA B200" in (
        result.stderr
    )
    assert "but no comparable baseline" in result.stderr


def test_a_run_of_no_named_provider_is_said_without_none(tmp_path: Path) -> None:
    """A run whose externalId names no provider (it does not begin with its benchmark) has no
    provider; the explanation read "the lake holds a None jsd backward run"."""
    bundle = c.run("liger")
    bundle["run"]["spec"]["sourceNative"]["externalId"] = "elsewhere/liger/b200"
    lake = c.ingest_bundles(tmp_path / "in", [bundle], tmp_path / "lake")
    result = CliRunner().invoke(app, ["query", "speedup jsd", "--lake", str(lake)])
    assert result.exit_code == 0, result.output
    assert "the lake holds a jsd unspecified pass run on NVIDIA B200 but no" in result.stderr
    assert "None" not in result.stderr


def test_filter_that_empties_the_result_is_named(seeds_lake: Path) -> None:
    result = CliRunner().invoke(app, ["query", "speedup grpo h100", "--lake", str(seeds_lake)])
    assert result.exit_code == 0
    assert "the filter gpu h100 left nothing (the runs before it have gpu: NVIDIA A100" in (
        result.stderr
    )


def test_runs_that_all_failed_are_named_by_their_status(tmp_path: Path) -> None:
    """Where every run selected timed out, an empty answer named the metric: "the filter a
    passed run of a metric in a time unit left nothing (the runs before it have metric:
    latency)", and history "the filter metric latency left nothing (... metric: latency)". It
    names their status; a filter that empties the runs first is still the one named."""
    bundles = [c.run(p, status="timeout") for p in ("liger", "torch")]
    lake = c.ingest_bundles(tmp_path / "in", bundles, tmp_path / "lake")
    said = "no runs match: the filter status passed left nothing (the runs before it have status: "
    for text in ("speedup jsd", "summary", "history jsd", "regressions jsd"):
        assert run_query(text, lake).diagnostics[0] == said + "timeout)", text
    assert (
        run_query("speedup jsd forward", lake)
        .diagnostics[0]
        .startswith("no runs match: the filter pass forward left nothing")
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("speedup jdd", "unknown word 'jdd'\nhint: did you mean: jsd?"),
        ("spedup jsd", "unknown verb 'spedup'\nhint: did you mean: speedup?"),
        ("speedup jsd dtype>=fp32", "dtype filters take = or !=, not '>='"),
        ("speedup jsd vocab=1", "unknown shape axis 'vocab'"),
        ("speedup jsd liger vs", "'vs' needs an implementation on each side"),
        ("speedup jsd b200 fp32", "unknown word 'fp32'\nhint: a dtype filter is dtype=fp32"),
        ("speedup jsd --all", "'--all' is an option, not a word of the query\nhint: put it after"),
        # answered "no comparable liger" of a lake full of liger runs
        ("speedup jsd liger vs Liger", "'liger' vs 'liger' compares an implementation with itself"),
        # the user's text is quoted shortened: one line, however long the word
        ("x" * 100_000, f"unknown verb '{'x' * 57}...'\nhint: a query starts with one of"),
        ("speedup jsd " + "y" * 5_000, f"unknown word '{'y' * 57}...'\n"),
    ],
)
def test_bad_words_are_errors_with_hints(seeds_lake: Path, text: str, message: str) -> None:
    result = CliRunner().invoke(app, ["query", text, "--lake", str(seeds_lake)])
    assert result.exit_code == 5
    assert message in result.stderr
    assert result.stdout == ""


def test_ambiguous_kernel_lists_choices(seeds_lake: Path) -> None:
    con = connect(seeds_lake)
    vocab = load_vocabulary(con)
    vocab = type(vocab)(kernels=("kl_div", "kto_loss", "jsd"), gpus=vocab.gpus)
    with pytest.raises(QueryError, match="choose one of: kl_div, kto_loss"):
        parse("speedup k", vocab)


def test_aliases_and_families(seeds_lake: Path) -> None:
    con = connect(seeds_lake)
    vocab = load_vocabulary(con)
    assert parse("speedup kldiv", vocab).kernels == ("kl_div",)
    assert parse("speedup grpo", vocab).kernels == ("fused_linear_grpo_loss_token",)
    query = parse("latency h100-pcie bwd liger vs pytorch", vocab)
    assert (query.passes, query.candidate, query.baseline) == (("backward",), "liger", "torch")
    assert parse("runs b200", vocab).environments == parse("runs sm_100", vocab).environments
    assert len(parse("runs b200", vocab).environments) == 1


def test_a_question_asked_in_english_reads_its_filler_words_as_nothing(seeds_lake: Path) -> None:
    """ "speedup jsd backward on the b200" said "unknown word 'on'": the small words of a
    question filter nothing; a kernel that happens to be named one is still that kernel."""
    vocab = load_vocabulary(connect(seeds_lake))
    assert parse("speedup jsd backward on the b200", vocab) == replace(
        parse("speedup jsd backward b200", vocab), text="speedup jsd backward on the b200"
    )
    named = type(vocab)(kernels=(*vocab.kernels, "on"), gpus=vocab.gpus)
    assert parse("speedup on b200", named).kernels == ("on",)


def test_an_implementation_spelled_with_the_other_separator_is_that_one(seeds_lake: Path) -> None:
    """Liger's CSV spelled B200's implementations liger-cutedsl before liger_cutedsl: the
    spelling a table prints names the implementation a lake holds in the other one; where both
    spellings are in the lake, each names its own."""
    vocab = load_vocabulary(connect(seeds_lake))
    older = type(vocab)(
        kernels=vocab.kernels, gpus=vocab.gpus, providers=("liger-cutedsl", "torch")
    )
    assert parse("speedup jsd liger_cutedsl vs torch", older).candidate == "liger-cutedsl"
    both = type(vocab)(
        kernels=vocab.kernels,
        gpus=vocab.gpus,
        providers=("liger-cutedsl", "liger_cutedsl", "torch"),
    )
    assert parse("speedup jsd liger_cutedsl vs torch", both).candidate == "liger_cutedsl"
    with pytest.raises(QueryError, match="unknown implementation 'liger_cutile'"):
        parse("speedup jsd liger_cutile vs torch", older)


def test_names_the_lake_spells_in_capitals_are_those_names(tmp_path: Path) -> None:
    """The shorthand is read in lower case, and a kernel or an implementation the lake spells
    with capitals (a CI fleet's FusedLinearCE, Triton) could not be asked for: "unknown word
    'fusedlinearce'", with the hint "did you mean: FusedLinearCE?", which failed the same way.
    Any case names it; where the lake holds a name in two cases, the one typed in lower case
    is the lower-case one."""
    bundles = [
        c.run("Triton", kernel="FusedLinearCE", median=1e6),
        c.run("torch", kernel="FusedLinearCE", median=2e6),
        c.run("Triton", kernel="jsd", median=1e6),
        c.run("torch", kernel="JSD", median=3e6),
    ]
    lake = c.ingest_bundles(tmp_path / "in", bundles, tmp_path / "lake")
    vocab = load_vocabulary(connect(lake))
    for word in ("FusedLinearCE", "fusedlinearce", "FUSEDLINEARCE", "fused"):
        assert parse(f"speedup {word}", vocab).kernels == ("FusedLinearCE",)
    assert parse("speedup jsd", vocab).kernels == ("jsd",)
    assert parse("speedup triton vs torch", vocab).candidate == "Triton"
    (row,) = run_query("speedup FusedLinearCE Triton", lake).rows
    assert row[:2] == ("FusedLinearCE", "backward")


INJECTIONS = [
    "speedup jsd'; DROP VIEW runs; --",
    "speedup jsd vocab=1);DROP",
    "speedup jsd dtype=x')OR(1=1",
    "speedup jsd shape=';COPY runs TO 'x'",
    'speedup "jsd" b200',
]


@pytest.mark.parametrize("text", INJECTIONS)
def test_injection_strings_never_reach_sql(pair_lake: Path, text: str) -> None:
    con = connect(pair_lake)
    try:
        result = run_query(text, con=con)
    except QueryError:
        result = None
    if result is not None:
        for word in text.split()[1:]:
            assert word not in result.sql
    assert con.execute("SELECT count(*) FROM runs").fetchall() == [(4,)]


SHORTHANDS = {
    "speedup_jsd_b200": "speedup jsd b200",
    "summary_jsd": "summary jsd",
    "speedup_vs_shape": "speedup jsd sm_100 bwd torch vs liger tokens>=4096 dtype=fp32",
    "memory_jsd": "memory jsd fwd",
    "latency_jsd": "latency jsd b200 liger",
    "runs": "runs jsd",
    "gpus": "gpus",
    "kernels": "kernels",
}


@pytest.mark.parametrize("name", sorted(SHORTHANDS))
def test_golden_sql(pair_lake: Path, name: str) -> None:
    con = connect(pair_lake)
    # crafted lakes carry no workload documents: give the vocabulary the axes the shorthand names
    vocab = dataclasses.replace(load_vocabulary(con), axes=("tokens", "vocab"))
    compiled = compile_query(parse(SHORTHANDS[name], vocab))
    assert_golden(
        f"sql_{name}.sql", f"{compiled.sql}\n-- parameters: {json.dumps(compiled.params)}\n"
    )


@pytest.mark.parametrize("fmt", ["table", "csv", "json", "markdown"])
def test_golden_formats(pair_lake: Path, fmt: str) -> None:
    result = CliRunner().invoke(
        app, ["query", "speedup jsd b200", "--lake", str(pair_lake), "--format", fmt]
    )
    assert result.exit_code == 0, result.stderr
    assert_golden(
        f"speedup_jsd_b200.{'txt' if fmt == 'table' else 'md' if fmt == 'markdown' else fmt}",
        result.stdout,
    )
    assert "baseline: torch" in result.stderr


def test_show_sql_goes_to_stderr(pair_lake: Path) -> None:
    result = CliRunner().invoke(
        app, ["query", "summary jsd", "--lake", str(pair_lake), "--show-sql", "-f", "csv"]
    )
    assert result.exit_code == 0
    # the lake stores its summary (layer_summary): the SQL reads it
    assert "FROM layer_summary" in result.stderr
    assert "FROM layer_summary" not in result.stdout
    shaped = CliRunner().invoke(
        app, ["query", "summary jsd liger vs torch", "--lake", str(pair_lake), "--show-sql"]
    )
    assert shaped.exit_code == 0  # a named baseline: the speedups are bootstrapped again
    assert "FROM speedups" in shaped.stderr and "FROM speedups" not in shaped.stdout


# -- real data: the Liger history CSV -----------------------------------------------------------


@pytest.fixture
def liger_lake(liger_history_lake: Path) -> Path:
    """Liger's whole benchmark history (conftest)."""
    return liger_history_lake


def csv_rows(kernel: str, gpu: str) -> list[dict[str, str]]:
    with open(LIGER_HISTORY, newline="", encoding="utf-8") as handle:
        return [
            r
            for r in csv.DictReader(handle)
            if r["kernel_name"] == kernel and r["gpu_name"] == gpu and r["metric_name"] == "speed"
        ]


def csv_median(source: list[dict[str, str]], provider: str, mode: str, tokens: str) -> float:
    """The one y_value_50 of the CSV for (provider, pass, token count)."""
    (value,) = {
        float(r["y_value_50"])
        for r in source
        if r["kernel_provider"] == provider
        and r["kernel_operation_mode"] == mode
        and str(int(float(r["x_value"]))) == tokens
    }
    return value


@pytest.mark.slow
def test_jsd_b200_ratios_match_the_csv(liger_lake: Path) -> None:
    result = run_query("speedup jsd b200", liger_lake)
    rows = [dict(zip(result.columns, r, strict=True)) for r in result.rows]
    assert {r["pass"] for r in rows} == {"forward", "backward", "full"}
    assert {(r["candidate"], r["baseline"]) for r in rows} == {("liger", "torch")}
    source = csv_rows("jsd", "NVIDIA B200")
    checked = 0
    for row in rows:
        tokens = row["shape"].split("-")[0].removeprefix("tokens")
        key = (row["pass"], tokens)
        torch, liger = (csv_median(source, provider, *key) for provider in ("torch", "liger"))
        assert row["speedup"] == pytest.approx(torch / liger, rel=1e-6)
        checked += 1
    assert checked == len(rows) >= 12


@pytest.mark.slow
def test_summary_kl_div_is_per_gpu(liger_lake: Path) -> None:
    result = run_query("summary kl_div", liger_lake)
    rows = [dict(zip(result.columns, r, strict=True)) for r in result.rows]
    environments = {r["environment"] for r in rows}
    assert len(environments) >= 2
    keys = [(r["environment"], r["pass"], r["baseline"]) for r in rows]
    assert len(keys) == len(set(keys))  # one geomean per GPU environment, pass and baseline
    assert all(r["geomean_speedup"] > 0 and r["cases"] >= 1 for r in rows)


@pytest.mark.slow
def test_real_pairs_never_cross_comparability_keys(liger_lake: Path) -> None:
    con = connect(liger_lake)
    crossing = con.execute(
        "SELECT count(*) FROM comparable_pairs p "
        "JOIN runs b ON b.run_id = p.baseline_run_id JOIN runs c ON c.run_id = p.candidate_run_id "
        "WHERE b.environment_digest <> c.environment_digest OR b.pass <> c.pass "
        "OR b.workload_digest <> c.workload_digest OR b.protocol_digest <> c.protocol_digest "
        "OR b.metric <> c.metric OR b.unit <> c.unit"
    ).fetchall()
    assert crossing == [(0,)]


@pytest.fixture(scope="module")
def leaderboard_lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The slice of KernelIndex's kernels-only export: GPU MODE's leaderboards, whose kernels
    are spelled with hyphens (amd-fp8-mm)."""
    from realdata import KERNELINDEX_SLICES

    from kindex_olap.importers.kernelindex.convert import import_kernelindex

    root = tmp_path_factory.mktemp("leaderboards")
    import_kernelindex(str(KERNELINDEX_SLICES[1]), raw_dir=root / "raw", lake=root / "lake")
    return root / "lake"


@pytest.mark.slow
@pytest.mark.parametrize("word", ["amd-fp8-mm", "amd_fp8_mm", "AMD-FP8-MM"])
def test_a_hyphenated_kernel_name_is_that_kernel(leaderboard_lake: Path, word: str) -> None:
    """A leaderboard's name as the lake spells it (with hyphens) selects that kernel; it was
    'unknown word ... did you mean: amd-fp8-mm', since only an underscored spelling was tried."""
    vocab = load_vocabulary(connect(leaderboard_lake))
    assert "amd-fp8-mm" in vocab.kernels
    assert parse(f"speedup {word}", vocab).kernels == ("amd-fp8-mm",)
    result = invoke("query", f"speedup {word}", "--lake", str(leaderboard_lake), "--format", "csv")
    assert result.exit_code == 0, result.output  # type: ignore[attr-defined]
    rows = list(csv.DictReader(result.stdout.splitlines()))  # type: ignore[attr-defined]
    assert rows and {r["kernel"] for r in rows} == {"amd-fp8-mm"}
    # a prefix with hyphens is a prefix too
    assert parse("runs amd-fp8", vocab).kernels == ("amd-fp8-mm",)
