"""`--format table` as a person sees it: every verb in a real pseudo-terminal at 80 and 120
columns (no line wider than the terminal, answers on screen), shortening that keeps values
apart, colour only on a terminal, nothing cut without a width, and `kindex query` start-up
without the plotting libraries.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kindex_olap.cli.app import app
from kindex_olap.cli.table import Table, render, shorten
from kindex_olap.query.run import run_query

pytestmark = pytest.mark.slow

KINDEX = Path(sys.executable).parent / "kindex"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
# every verb of `kindex query`, with what must be on screen (data from the Liger history)
VERB_QUERIES = {
    "speedup jsd b200": ("×", "faster", "slower"),
    "summary jsd": ("×",),
    "summary": ("×",),
    "speedup b200": ("×", "faster"),
    "memory jsd": ("×", "smaller"),
    "latency jsd b200": ("liger", "torch"),
    "runs jsd b200": ("liger",),
    "gpus": ("NVIDIA B200",),
    "kernels": ("jsd",),
}


def in_terminal(
    args: list[str], columns: int, env: dict[str, str] | None = None, code: int = 0
) -> tuple[str, str]:
    """Run kindex with stdout on a pseudo-terminal `columns` wide, expecting exit `code`;
    (screen text, stderr)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    environment = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "NO_COLOR")}
    environment.update({"TERM": "xterm-256color", **(env or {})})
    process = subprocess.Popen(
        [str(KINDEX), *args], stdout=slave, stderr=subprocess.PIPE, env=environment
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    stderr = process.stderr.read().decode() if process.stderr else ""
    assert process.wait() == code, stderr
    os.close(master)
    return b"".join(chunks).decode().replace("\r\n", "\n"), stderr


@pytest.mark.parametrize("columns", [80, 120])
@pytest.mark.parametrize("text", sorted(VERB_QUERIES))
def test_every_verb_fits_a_terminal(liger_history_lake: Path, text: str, columns: int) -> None:
    screen, stderr = in_terminal(["query", text, "--lake", str(liger_history_lake)], columns)
    lines = ANSI.sub("", screen).splitlines()
    assert len(lines) > 2
    too_long = [line for line in lines if len(line) > columns]
    assert not too_long, too_long[:3]
    for word in VERB_QUERIES[text]:
        assert word in screen, (word, screen[:2000])
    rows = len(run_query(text, liger_history_lake).rows)
    assert f"{rows} row(s)" in stderr


def test_speedup_answer_columns_and_title(liger_history_lake: Path) -> None:
    screen, stderr = in_terminal(
        ["query", "speedup jsd b200", "--lake", str(liger_history_lake)], 100
    )
    plain = ANSI.sub("", screen).splitlines()
    # constant columns read once, in the title line; the answer stays in the table
    assert plain[0].startswith("jsd · NVIDIA B200 (liger-bench-nvidia-b200)")
    assert "liger 0.8.0 vs torch 0.8.0" in plain[0]
    header = plain[1].split()
    assert header[:5] == ["pass", "shape", "speedup", "interval±noise", "verdict"], header
    result = run_query("speedup jsd b200", liger_history_lake)
    first = dict(zip(result.columns, result.rows[0], strict=True))
    cells = plain[3].split()
    # the shape keeps the part that differs between rows: the token count
    assert cells[0] == first["pass"] and cells[1].startswith("tokens1024-")
    assert cells[2] == f"{first['speedup']:.2f}×"
    assert " ".join(cells[3:5]) == f"[{first['speedup_lo']:.2f}, {first['speedup_hi']:.2f}]"
    assert "columns left out: candidate_name, baseline_name, baseline_rule" in " ".join(
        stderr.split()
    )
    assert "--wide adds them" in " ".join(stderr.split())


def test_verdicts_coloured_on_a_terminal_only(liger_history_lake: Path) -> None:
    args = ["query", "speedup jsd b200", "--lake", str(liger_history_lake)]
    screen, _ = in_terminal(args, 120)
    assert "\x1b[32mfaster" in screen and "\x1b[31mslower" in screen
    no_color, _ = in_terminal(args, 120, {"NO_COLOR": "1"})
    assert "\x1b[" not in no_color and "faster" in no_color
    piped = CliRunner().invoke(app, args)
    assert "\x1b[" not in piped.stdout


def test_no_width_nothing_shortened(
    liger_history_lake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    args = ["query", "speedup jsd", "--lake", str(liger_history_lake)]
    piped = CliRunner().invoke(app, args)
    assert "…" not in piped.stdout
    assert "liger-bench-nvidia-h100-pcie" in piped.stdout
    monkeypatch.setenv("COLUMNS", "80")
    narrow = CliRunner().invoke(app, args)
    assert max(len(line) for line in narrow.stdout.splitlines()) <= 80


def test_wide_shows_every_column(liger_history_lake: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    result = CliRunner().invoke(
        app, ["query", "speedup jsd b200", "--wide", "--lake", str(liger_history_lake)]
    )
    # what every row shares is in the title (once), the rest in the table
    title, header = result.stdout.split("\n─")[0].rsplit("\n", 1)
    assert title.startswith("jsd · NVIDIA B200 (liger-bench-nvidia-b200)")
    assert "liger 0.8.0 vs torch 0.8.0" in title
    for column in ("candidate_name", "base observed"):
        assert column in title or column in header
    for column in ("pass", "shape", "noise", "run p20–p80", "candidate_runs"):
        assert column in header, header
    assert "left out" not in result.stderr


def test_shortening_keeps_row_keys_apart() -> None:
    shapes = ["tokens1024-vocab128256-fp32", "tokens1024-vocab32000-fp32"]
    assert shorten(shapes[0], 12) == shorten(shapes[1], 12)  # a naive cut merges them
    rows = [("jsd", "forward", shape, 1.5, 1.4, 1.6, "faster") for shape in shapes]
    columns = ["kernel", "pass", "shape", "speedup", "speedup_lo", "speedup_hi", "verdict"]
    table = render(columns, rows, "speedup", width=52)
    assert all(len(line) <= 52 for line in table.lines)
    visible = [line.split()[0] for line in table.lines[-2:]]
    assert visible[0] != visible[1], table.lines


def test_a_cut_never_splits_a_number() -> None:
    """The token count is what tells the rows apart: `tokens10…256-fp32` said nothing."""
    assert shorten("tokens1024-vocab128256-fp32", 17) == "tokens1024…-fp32"
    assert shorten("tokens8192-vocab128256-fp32", 15) == "tokens8192…fp32"
    # no room for the whole first number: the cut goes before it, never through it
    assert shorten("tokens1048576-vocab128256-fp32", 12) == "tokens…-fp32"
    for value in ("tokens1024-vocab128256-fp32", "BT1024-bsz1-seq_len8192-vocab_size128256"):
        for width in range(8, len(value)):
            head, _, tail = shorten(value, width).partition("…")
            after_head = value[len(head) : len(head) + 1]
            before_tail = value[len(value) - len(tail) - 1 : len(value) - len(tail)]
            assert not (head[-1:].isdigit() and after_head.isdigit()), (value, width)
            assert not (tail[:1].isdigit() and before_tail.isdigit()), (value, width)


@pytest.mark.parametrize("text", ["speedup", "summary", "latency", "runs", "kernels"])
def test_real_values_stay_distinct_at_80(liger_history_lake: Path, text: str) -> None:
    result = run_query(text, liger_history_lake)
    table = render(result.columns, result.rows, result.verb, width=80)
    assert all(len(line) <= 80 for line in table.lines)
    for column in table.shown:
        full = set(column.values)
        if column.head:  # an evidence keeps its first words where a group has no more room
            assert column.width >= min(column.longest, len("single timing…")), column.name
            continue
        assert len({column.cut(v, column.width) for v in full}) == len(full), column.name


def test_query_does_not_import_plotting(liger_history_lake: Path) -> None:
    code = (
        "import sys\n"
        "from kindex_olap.cli.app import app\n"
        "try:\n"
        f"    app(['query', 'speedup jsd b200', '--lake', {str(liger_history_lake)!r}])\n"
        "except SystemExit as e:\n"
        "    assert not e.code, e.code\n"
        "heavy = sorted(m for m in ('altair', 'vl_convert', 'playwright') if m in sys.modules)\n"
        "print('heavy:', heavy)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert "heavy: []" in out


def test_two_runs_of_one_case_are_told_apart_by_when_they_ran(liger_history_lake: Path) -> None:
    """`latency` rows of one case and version (two runs) differ only in observed_at, which the
    default columns leave out: where the keys shown leave two rows alike, observed_at is shown
    after them; where they do not, it stays out (--wide adds it)."""
    result = run_query("latency jsd h100-pcie", liger_history_lake)
    index = {name: i for i, name in enumerate(result.columns)}
    keys = ("pass", "shape", "provider", "version")
    seen = [tuple(row[index[k]] for k in keys) for row in result.rows]
    assert len(set(seen)) < len(seen)  # the Liger history holds such runs
    table = render(result.columns, result.rows, result.verb, width=100)
    shown = [c.name for c in table.shown]
    assert "observed_at" in shown and shown.index("observed_at") > shown.index("version")
    lines = [line for line in table.lines if "jsd" not in line]
    assert len(set(lines)) == len(lines)  # no two rows print the same
    first = {key: row for key, row in zip(seen, result.rows, strict=True)}  # one run a case
    single = render(result.columns, list(first.values()), result.verb, width=100)
    assert "observed_at" not in [c.name for c in single.shown]


def test_a_step_inside_one_version_label_says_which_code(liger_history_lake: Path) -> None:
    """Liger measured 0.5.3 at three commits: a step from 0.5.3 to 0.5.3 read as same-to-same
    until its commits (and when the later point ran) came in after the versions; steps between
    two labels, and history points of labels measured once, leave them out."""

    def said(table: Table) -> list[str]:  # in a title line or a column
        return [*table.titled, *(c.name for c in table.shown)]

    result = run_query("changes kto_loss", liger_history_lake)
    index = {name: i for i, name in enumerate(result.columns)}
    inside = [r for r in result.rows if r[index["from_version"]] == r[index["to_version"]]]
    across = [r for r in result.rows if r[index["from_version"]] != r[index["to_version"]]]
    assert inside and across
    table = render(result.columns, inside, result.verb)
    assert {"from_commits", "to_commits", "to_observed"} <= set(said(table))
    assert not {"from_commits", "to_commits", "to_observed"} & set(table.left_out)
    plain = render(result.columns, across, result.verb)
    assert not {"from_commits", "to_commits", "to_observed"} & set(said(plain))
    history = run_query("history kto_loss h100 forward liger", liger_history_lake)
    shown = said(render(history.columns, history.rows, history.verb))
    assert "commits" in shown and shown.index("commits") > shown.index("version")
    once = [r for r in history.rows if r[history.columns.index("version")] != "0.5.3"]
    assert "commits" not in said(render(history.columns, once, history.verb))
    # at 80 columns the 0.5.3 group has no room for its commits: named once, as left out to fit
    narrow = render(history.columns, history.rows, history.verb, width=80)
    assert "commits" in narrow.dropped_to_fit
    assert not set(narrow.left_out) & set(narrow.dropped_to_fit)


def test_times_keep_distinct_times_distinct() -> None:
    """A time column reads to the minute, else to the second or the millisecond where the
    minute would make two distinct times read alike (two steps of one series 0.6 s apart,
    seen in a KernelIndex export, read "2026-06-06 21:33" twice)."""
    from kindex_olap.cli.table import display_columns

    def shown(*times: dt.datetime | None) -> list[str]:
        return display_columns(["to_observed"], [(t,) for t in times])[0].values

    minute = dt.datetime(2026, 6, 6, 21, 33, 24, 370_000)
    assert shown(minute, minute + dt.timedelta(minutes=5), None) == [
        "2026-06-06 21:33", "2026-06-06 21:38", ""
    ]  # fmt: skip
    assert shown(minute, minute + dt.timedelta(seconds=2)) == [
        "2026-06-06 21:33:24", "2026-06-06 21:33:26"
    ]  # fmt: skip
    assert shown(minute, minute + dt.timedelta(milliseconds=568), minute) == [
        "2026-06-06 21:33:24.370", "2026-06-06 21:33:24.938", "2026-06-06 21:33:24.370"
    ]  # fmt: skip


def test_csv_spells_each_kind_of_value_column_by_column() -> None:
    """CSV fields are made a column at a time (2 us a value one at a time: 43 s for the real
    lake's 655k speedups); each kind keeps its spelling: a control character escaped, NaN and
    NULL empty, a struct or list as sorted JSON, a timestamp in ISO 8601, a bool as Python's."""
    import io

    from kindex_olap.cli.output import Format, write

    columns = ["name", "ratio", "axes", "at", "n", "ok", "none"]
    rows = [
        (
            "a\x1bb",
            float("nan"),
            {"b": 2, "a": [1]},
            dt.datetime(2026, 1, 2, 3, 4, 5),
            7,
            True,
            None,
        ),
        (None, 1.5, None, None, None, False, None),
        ("plain, quoted", float("inf"), {"a": 1}, dt.datetime(2026, 1, 2), -1, None, None),
    ]
    out = io.StringIO()
    write(columns, rows, Format.csv, out)
    assert out.getvalue().splitlines() == [
        "name,ratio,axes,at,n,ok,none",
        'a\\x1bb,,"{""a"": [1], ""b"": 2}",2026-01-02T03:04:05,7,True,',
        ",1.5,,,,False,",
        '"plain, quoted",,"{""a"": 1}",2026-01-02T00:00:00,-1,,',
    ]
