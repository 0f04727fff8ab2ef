"""One column policy for every verb, as a person sees it in a terminal 80, 100 and 120 wide:
no line wider than the terminal (stdout and stderr), the answer columns on screen, no two rows
that read alike, `--wide` a superset of the default, names never cut below their floor, dates
that keep the day, an empty answer as one line, units on numbers.

Two real lakes: the one `scripts/run` builds (Liger's three current CSVs, here from
tests/data) and Liger's whole history.
"""

from __future__ import annotations

import datetime as dt
import re
import shutil
from pathlib import Path

import pytest

from kindex_olap.cli.table import NAME_FLOOR, display_columns, render, shorten_inside
from kindex_olap.doors.columns import THIN_WORDS, header, verb_columns
from kindex_olap.errors import QueryError
from kindex_olap.query.run import run_query
from tests.conftest import built_once
from tests.realdata import liger_csv
from tests.test_table import ANSI, in_terminal

pytestmark = pytest.mark.slow

RUN_CSVS = (
    "all_benchmark_data.csv",
    "all_benchmark_data_cutedsl.csv",
    "all_benchmark_data_cutile.csv",
)
# the README tour's queries and one per verb
TOUR = (
    "speedup jsd b200",
    "summary kl_div",
    "noise h100",
    "speedup kl_div h100-pcie fwd",
    "speedup cross_entropy b200 liger_cutedsl vs torch",
    "memory jsd b200",
    "latency jsd b200",
    "runs jsd b200",
    "gpus",
    "kernels",
    "history jsd h100-pcie fwd liger",
    "changes kto_loss",
)
WIDTHS = (80, 100, 120)
THIN_HEADERS = {header(name) for spec in (verb_columns("speedup"),) if spec for name in spec.thin}


@pytest.fixture(scope="session")
def run_lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The lake `scripts/run` builds: Liger's three current benchmark CSVs, imported."""
    from kindex_olap.importers.liger.convert import import_liger
    from kindex_olap.ingestion.pipeline import ingest

    def build(root: Path) -> None:
        (root / "csv").mkdir()
        for name in RUN_CSVS:
            shutil.copy(liger_csv(name), root / "csv" / name)
        import_liger(str(root / "csv"), raw_dir=root / "raw")
        ingest([root / "raw"], root / "lake")

    return built_once(tmp_path_factory, "liger-run", build) / "lake"


def groups(screen: str) -> list[tuple[list[str], str, list[str]]]:
    """(title lines, header line, row lines) of each group of a printed table (groups are
    paragraphs: a blank line between them)."""
    found = []
    for paragraph in ANSI.sub("", screen).split("\n\n"):
        lines = paragraph.strip("\n").splitlines()
        rule = next(i for i, line in enumerate(lines) if line.startswith("─"))
        found.append((lines[: rule - 1], lines[rule - 1], lines[rule + 1 :]))
    return found


def table_parts(screen: str) -> tuple[list[str], str, list[str]]:
    """(every group's title lines, the first group's header line, every row line)."""
    parts = groups(screen)
    titles = [line for title, _, _ in parts for line in title]
    return titles, parts[0][1], [line for _, _, rows in parts for line in rows]


def expected_answer(text: str, lake: Path) -> list[str]:
    """The headers of the answer columns a result of `text` must show."""
    result = run_query(text, lake)
    spec = verb_columns(result.verb)
    assert spec is not None, result.verb
    shown = {c.name: c for c in display_columns(result.columns, result.rows)}
    names = [n for n in spec.answer if n in shown]
    thin = [n for n in spec.thin if not any(w in v for v in shown[n].values for w in THIN_WORDS)]
    return [header(n) for n in names if n not in thin]


@pytest.mark.parametrize("lake_name", ["run_lake", "liger_history_lake"])
@pytest.mark.parametrize("text", TOUR)
def test_every_width_keeps_the_answer(
    request: pytest.FixtureRequest, lake_name: str, text: str
) -> None:
    lake: Path = request.getfixturevalue(lake_name)
    try:
        found = run_query(text, lake).rows
    except QueryError as e:  # the history CSV spells B200's implementations liger-cutedsl
        pytest.skip(f"{text!r} is not a question for this lake: {e}")
    if not found:
        pytest.skip(f"{text!r} has no rows on this lake")  # the empty answer: tested below
    answer = expected_answer(text, lake)
    for width in WIDTHS:
        screen, stderr = in_terminal(["query", text, "--lake", str(lake)], width)
        wide, wide_err = in_terminal(["query", text, "--lake", str(lake), "--wide"], width)
        for out in (screen, stderr, wide, wide_err):
            too_long = [line for line in ANSI.sub("", out).splitlines() if len(line) > width]
            assert not too_long, (width, too_long[:3])
        everything = " ".join(" ".join([*t, h]) for t, h, _ in groups(wide))
        heads = [head for _, head, _ in groups(screen)]
        for name in answer:  # evidence: in the groups where a side was timed once
            assert any(name in head for head in heads), (width, name, heads[:3])
        for _, head, rows in groups(screen):
            for name in answer:
                if name not in THIN_HEADERS:
                    assert name in head, (width, name, head)
            assert len(set(rows)) == len(rows), (width, [r for r in rows if rows.count(r) > 1])
            for name in re.split(r"\s{2,}", head.strip()):
                assert name in everything, (width, name)


def test_stderr_names_no_internal_file(run_lake: Path) -> None:
    _, stderr = in_terminal(["query", "speedup jsd b200", "--lake", str(run_lake)], 120)
    assert ".sql" not in stderr


def test_every_b200_implementation_has_rows_in_the_cutedsl_pair(run_lake: Path) -> None:
    result = run_query("speedup cross_entropy b200 liger_cutedsl vs torch", run_lake)
    assert result.rows
    screen, _ = in_terminal(
        ["query", "speedup cross_entropy b200 liger_cutedsl vs torch", "--lake", str(run_lake)],
        80,
    )
    title, _, rows = table_parts(screen)
    assert "liger_cutedsl" in " ".join(title) and len(rows) == len(result.rows)


def test_thin_evidence_is_on_screen(run_lake: Path) -> None:
    screen, _ = in_terminal(["query", "speedup jsd b200", "--lake", str(run_lake)], 80)
    _, head, rows = table_parts(screen)
    assert "evidence" in head
    assert sum("single timing" in row for row in rows) >= 8


def test_an_empty_answer_is_one_line(run_lake: Path) -> None:
    screen, stderr = in_terminal(
        ["query", "speedup jsd b200 liger vs huggingface", "--lake", str(run_lake)], 80
    )
    assert screen == ""
    assert stderr.startswith("no comparable runs")
    assert "columns left out" not in stderr and "row(s)" not in stderr
    assert all(len(line) <= 80 for line in stderr.splitlines())


def test_kernel_names_are_never_cut_below_their_floor(liger_history_lake: Path) -> None:
    result = run_query("kernels", liger_history_lake)
    kernels = {row[result.columns.index("kernel")] for row in result.rows}
    screen, stderr = in_terminal(["query", "kernels", "--lake", str(liger_history_lake)], 80)
    _, head, rows = table_parts(screen)
    assert head.startswith("kernel")
    for row in rows:
        first = row.split("  ")[0]
        assert first in kernels or (len(first) >= NAME_FLOOR and "…" in first), first
    # what did not fit is named, not cut to nothing
    assert "to fit 80 columns" in " ".join(stderr.split())


def test_dates_keep_the_day() -> None:
    days = [dt.datetime(2024, 12, d, 8, 5) for d in (3, 4, 5)]
    rows = [
        (f"NVIDIA {name}", day, 100 + i)
        for i, (name, day) in enumerate(zip("ABC", days, strict=True))
    ]
    columns = ["gpu", "first_observed", "runs"]
    wide = render(columns, [(*r[:2], r[2]) for r in rows], None)
    assert "2024-12-05 08:05" in wide.lines[-1]
    narrow = render(
        ["environment", *columns],
        [("env-" + "x" * 40 + str(i), *r) for i, r in enumerate(rows)],
        None,
        width=60,
    )
    shown = [c for c in narrow.shown if c.name == "first_observed"]
    assert shown and shown[0].width >= 10
    assert any("2024-12-05" in line for line in narrow.lines)


def test_shortening_keeps_the_part_that_differs() -> None:
    shapes = [f"tokens{n}-vocab128256-fp32" for n in (1024, 2048, 4096, 8192)]
    cut = [shorten_inside(s, 16, 6, len("-vocab128256-fp32")) for s in shapes]
    assert len(set(cut)) == 4 and all(len(c) == 16 for c in cut)
    assert all(str(n) in c for n, c in zip((1024, 2048, 4096, 8192), cut, strict=True))


def test_units_and_q_values_in_step_tables() -> None:
    columns = ["kernel", "series", "from_value", "to_value", "ratio", "q_value", "verdict"]
    rows = [
        ("jsd", "latency", 1.5, 1.2, 0.8, 0.0, "improvement"),
        ("jsd", "speedup", 3.0, 3.6, 1.2, 1e-5, "improvement"),
    ]
    table = render(columns, rows, "changes")
    text = "\n".join(table.lines)
    assert "1.50 ms" in text and "3.00×" in text
    assert "<1e-300" in text and "1e-05" in text


def test_a_baseline_that_differs_by_row_stays_before_an_environment(run_lake: Path) -> None:
    """`summary jsd` compares liger with torch on most GPUs and Liger's B200 kernels with the
    cell's fastest: at 100 columns the baseline of each row stays on screen (it was left out
    for the environment, which repeats the GPU's name)."""
    result = run_query("summary jsd", run_lake)
    baselines = {row[result.columns.index("baseline")] for row in result.rows}
    assert len(baselines) > 1, baselines
    screen, _ = in_terminal(["query", "summary jsd", "--lake", str(run_lake)], 100)
    _, head, rows = table_parts(screen)
    assert re.search(r"\bbaseline\b", head), head
    assert {b for b in baselines if any(f" {b} " in row for row in rows)} == baselines


def test_every_row_of_jsd_on_b200_names_its_baseline_at_100(run_lake: Path) -> None:
    """At 100 columns `speedup jsd b200` could not show the baseline beside the answer (stderr
    said it differs by row); grouped by pass, each row names its baseline, or its group's
    title does, so no ratio reads as against torch."""
    result = run_query("speedup jsd b200", run_lake)
    baselines = {row[result.columns.index("baseline")] for row in result.rows}
    assert baselines == {"liger_cutile", "liger_triton", "torch"}
    screen, stderr = in_terminal(["query", "speedup jsd b200", "--lake", str(run_lake)], 100)
    parts = groups(screen)
    assert [title[0].split(" · ")[1] for title, _, _ in parts] == ["forward", "backward", "full"]
    for title, head, rows in parts:
        said = {b for b in baselines if re.search(rf"\bbaseline {b}\b", " ".join(title))}
        assert said or re.search(r"\bbaseline\b", head), (title, head)
        for row in rows:
            assert said or any(f" {b} " in row for b in baselines), row
    assert "baseline differs by row" not in stderr


@pytest.mark.parametrize("width", [80, 100])
@pytest.mark.parametrize("verb", ["summary", "speedup", "memory", "latency"])
def test_a_whole_lake_answer_says_what_each_row_is(run_lake: Path, verb: str, width: int) -> None:
    """A whole-lake answer at 80 or 100 columns left out kernel, GPU and pass to fit, and rows
    read alike (`cross_entropy  4  1.38×  [1.02, 1.71]  faster` twice): each kernel, GPU and
    pass it cannot show per row is said in its group's title, and every row of a group reads
    apart from the others by the row keys it shows (numbers aside: two runs of one latency
    case may print alike, and are told apart by their observed_at, not shown by default)."""
    result = run_query(verb, run_lake)
    index = {name: i for i, name in enumerate(result.columns)}
    screen, stderr = in_terminal(["query", verb, "--lake", str(run_lake)], width)
    for out in (screen, stderr):
        assert all(len(line) <= width for line in ANSI.sub("", out).splitlines())
    parts = groups(screen)
    assert sum(len(rows) for _, _, rows in parts) == len(result.rows)
    assert len(parts) > 1
    kernels = {row[index["kernel"]] for row in result.rows}
    passes = {row[index["pass"]] for row in result.rows}
    gpus = {r[index["gpu"]] for r in result.rows}  # the model: "NVIDIA H100 PCIe"
    for title, head, rows in parts:
        said = " · ".join(title).split(" · ")
        for name, values in (("kernel", kernels), ("pass", passes), ("gpu", gpus)):
            named = [v for v in values if v in said or f"{v} (" in " ".join(title)]
            assert len(named) == 1 or re.search(rf"\b{name}\b", head), (name, title, head)
        if verb != "latency":
            assert len(set(rows)) == len(rows), (title, rows)


def test_a_history_at_80_columns_says_which_shape_each_row_is(
    liger_history_lake: Path,
) -> None:
    """Where the answer leaves room for one key but not two, the one that tells most rows apart
    is put back (the shapes; the versions follow at 100 columns): the history of jsd's forward
    pass showed medians and verdicts with neither, so no row said what it measured."""
    text = "history jsd h100-pcie fwd liger"
    screen, _ = in_terminal(["query", text, "--lake", str(liger_history_lake)], 80)
    _, head, rows = table_parts(screen)
    assert head.startswith("shape"), head
    vocabs = {m for row in rows for m in re.findall(r"b(\d+)-fp32", row)}
    assert len(vocabs) == 6, rows
    wider, _ = in_terminal(["query", text, "--lake", str(liger_history_lake)], 100)
    _, head, _ = table_parts(wider)
    assert "shape" in head and "version" in head, head


def test_a_steps_rule_shows_whole_or_not_at_all(liger_history_lake: Path) -> None:
    """A step's rule ("step (1->1 runs; noise +-2.7%, floor: replicates, all GPUs)") is spare:
    left out first where a group has no room for it, never cut (at 80 columns it read "…2.7%,
    floor…s, all GPUs)" and cost the step's from and to values); shown whole where it fits."""
    result = run_query("regressions", liger_history_lake)
    rules = {row[result.columns.index("rule")] for row in result.rows}
    assert result.rows and all(rule and "floor" in rule for rule in rules)
    for width in (80, 100, 120, 220):
        screen, _ = in_terminal(["query", "regressions", "--lake", str(liger_history_lake)], width)
        lines = ANSI.sub("", screen).splitlines()
        # every rule says its floor: a line that shows part of one shows it whole
        cut = [line for line in lines if "floor" in line and not any(r in line for r in rules)]
        assert not cut, (width, cut)
        if width == 80:
            assert "from_value" in lines[3] and "to_value" in lines[3], lines[:5]
    # one group with room for it: every row's rule, whole
    text = "regressions fused_linear_cross_entropy a100"
    one = run_query(text, liger_history_lake)
    screen, _ = in_terminal(["query", text, "--lake", str(liger_history_lake)], 140)
    lines = ANSI.sub("", screen).splitlines()
    for row in one.rows:
        assert any(row[one.columns.index("rule")] in line for line in lines), (row, lines)


def test_check_names_what_its_table_left_out(liger_history_lake: Path) -> None:
    """`kindex check` prints its regressions as `kindex query regressions` does, and says as it
    does which columns the table left out (it said nothing), with --wide to add them."""
    lake = str(liger_history_lake)
    _, stderr = in_terminal(["check", "--lake", lake], 80, code=1)
    said = " ".join(stderr.split())
    left = "columns left out: step, implementation_name; to fit 80 columns: rule (--wide adds them)"
    assert left in said
    _, wide = in_terminal(["check", "--lake", lake, "--wide"], 80, code=1)
    assert "to fit 80 columns: step, rule (--format csv shows every column)" in " ".join(
        wide.split()
    )
