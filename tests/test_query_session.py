"""kindex_olap.Lake, the warm session (query/session.py): the rows of `kindex query`, one
connection kept across questions, a refresh when the lake gains a commit."""

from __future__ import annotations

from pathlib import Path

import crafted as c
import pytest

import kindex_olap
from kindex_olap.query import stored_steps
from kindex_olap.query.compile import Options
from kindex_olap.query.run import run_query
from kindex_olap.query.session import Lake


def _lake(tmp_path: Path, torch_ms: float = 1.3) -> Path:
    bundles = [
        c.run("liger", median=1.0e6, p20=0.99e6, p80=1.01e6),
        c.run("torch", median=torch_ms * 1e6, p20=torch_ms * 0.99e6, p80=torch_ms * 1.01e6),
    ]
    return c.ingest_bundles(tmp_path / "in", bundles, tmp_path / "lake")


def test_a_session_answers_as_kindex_query_and_keeps_its_connection(tmp_path: Path) -> None:
    lake = _lake(tmp_path)
    expected = run_query("speedup jsd", lake)
    with Lake(lake) as session:
        first = session.speedups("jsd")
        con = session.connection()
        second = session.speedups("jsd")
        assert session.connection() is con  # no new connection, no views defined again
        assert first.columns == second.columns == expected.columns
        assert first.rows() == second.rows() == expected.rows
        assert session.query("speedup jsd").rows == expected.rows
    assert "closed" in repr(session)


def test_a_session_sees_a_new_lake_commit(tmp_path: Path) -> None:
    lake = _lake(tmp_path)
    session = Lake(lake)
    before = session.speedups("jsd")["speedup"].to_list()
    con = session.connection()
    newer = c.run(
        "torch", median=2.6e6, p20=2.57e6, p80=2.63e6, observed="2026-06-01T00:00:00.000Z"
    )
    c.ingest_bundles(tmp_path / "in2", [newer], lake)
    after = session.speedups("jsd")["speedup"].to_list()
    assert session.connection() is not con
    assert before == [1.3] and after == [2.6]
    session.close()


def test_module_functions_share_one_session_per_lake(tmp_path: Path) -> None:
    from kindex_olap.query import api

    lake = _lake(tmp_path)
    kindex_olap.speedups("jsd", lake=lake)
    session = api._session(lake)
    con = session.connection()
    kindex_olap.summary("jsd", lake=str(lake))  # the same folder, spelled as text
    assert api._session(lake) is session and session.connection() is con
    assert isinstance(kindex_olap.Lake(lake), Lake)


def test_a_session_holds_the_stored_answers_in_memory(tmp_path: Path) -> None:
    lake = _lake(tmp_path)
    with Lake(lake) as session:
        con = session.connection()
        held = con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE temporary ORDER BY 1"
        ).fetchall()
        assert ("layer_speedups",) in held and ("layer_summary",) in held
        # the same rows as the lake commit's files (the views of a fresh connection read them)
        assert session.speedups("jsd").rows() == [
            tuple(r) for r in run_query("speedup jsd", lake).rows
        ]


STEP_QUESTIONS = ("regressions", "improvements", "regressions jsd", "improvements b200")
LOOSE = Options(threshold=0.01, q_level=0.1)  # more steps pass: the bound the table holds moves


def test_a_session_reads_its_kept_significant_steps_and_answers_as_a_command(
    liger_history_lake: Path,
) -> None:
    expected = {
        (text, rules): run_query(text, liger_history_lake, options=rules).rows
        for text in STEP_QUESTIONS
        for rules in (Options(), LOOSE)
    }
    assert sum(len(rows) for rows in expected.values()) > 50  # Liger's history has steps to show
    with Lake(liger_history_lake) as session:
        for (text, rules), rows in expected.items():
            assert session.query(text, options=rules).rows == rows, (text, rules)
            assert session.query(text, options=rules).rows == rows, (text, rules)
            con = session.connection()
            held = con.execute("SELECT getvariable('kindex_significant')").fetchall()[0][0]
            assert held and "too many" not in held  # read from the kept table
            kept = con.execute(f"SELECT count(*) FROM {stored_steps.SIGNIFICANT}").fetchall()
            assert 0 < kept[0][0] < 10_000  # of the history's steps, the significant ones


def test_a_session_with_too_many_significant_steps_reads_the_files(
    liger_history_lake: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stored_steps, "SIGNIFICANT_ROWS", 0)
    expected = run_query("improvements", liger_history_lake).rows
    assert expected
    with Lake(liger_history_lake) as session:
        assert session.query("improvements").rows == expected
        assert session.query("improvements").rows == expected
        con = session.connection()
        held = con.execute("SELECT getvariable('kindex_significant')").fetchall()[0][0]
        assert held.endswith("too many")
        tables = con.execute(
            "SELECT count(*) FROM duckdb_tables() WHERE table_name = ?", [stored_steps.SIGNIFICANT]
        ).fetchall()
        assert tables[0][0] == 0


def test_a_folder_that_is_not_a_lake_is_said_so(tmp_path: Path) -> None:
    """As `kindex query --lake` says it (the session read the runs table's log first: "/x/runs
    is not a Delta table"), for the module functions too."""
    from kindex_olap.errors import ConfigError

    with pytest.raises(ConfigError, match="is not a kindex lake"):
        Lake(tmp_path)
    with pytest.raises(ConfigError, match="is not a kindex lake"):
        kindex_olap.speedups("jsd", lake=tmp_path / "nothing")


def test_a_history_verb_as_a_frame_is_kindex_querys_rows(liger_history_lake: Path) -> None:
    """`frame` of a step verb or history (no SQL of their own: it raised an AssertionError) is
    the rows `kindex query` answers; an empty one warns why, as the command says it."""
    with Lake(liger_history_lake) as lake:
        for text in ("regressions", "changes kto_loss h100", "history jsd h100-pcie fwd liger"):
            verb, *filters = text.split()
            frame = lake.frame(verb, *filters)
            expected = run_query(text, liger_history_lake)
            assert frame.columns == expected.columns and frame.height == len(expected.rows) > 0
            assert frame.rows() == expected.rows
        with pytest.warns(UserWarning, match="no runs match: the filter gpu a100"):
            assert lake.frame("regressions", "jsd a100").is_empty()
