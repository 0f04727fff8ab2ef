"""An answer reads the connection's variables once (kindex_olap.query.variables), and again
after kindex sets them."""

from __future__ import annotations

from pathlib import Path

from kindex_olap.ingestion.pipeline import ingest
from kindex_olap.query.engine import connect, read_layers, snapshot_of
from kindex_olap.query.variables import answering, forget, variable


def test_an_answer_holds_the_variables_until_kindex_sets_them(
    seed_inbox: Path, tmp_lake: Path
) -> None:
    ingest([seed_inbox], tmp_lake)
    con = connect(tmp_lake, lean=True)
    try:
        files = variable(con, "layer_steps_files")
        assert files and all(str(tmp_lake) in f for f in files)
        with answering(con):
            assert variable(con, "layer_steps_files") == files
            con.execute("SET VARIABLE layer_steps_files = ['elsewhere.parquet']").fetchall()
            assert variable(con, "layer_steps_files") == files  # held for the answer
            forget(con)
            assert variable(con, "layer_steps_files") == ["elsewhere.parquet"]
            read_layers(con, snapshot_of(tmp_lake))  # sets the layers' variables: forgets
            assert variable(con, "layer_steps_files") == files
        # outside an answer every read asks the connection
        con.execute("SET VARIABLE layer_steps_files = ['elsewhere.parquet']").fetchall()
        assert variable(con, "layer_steps_files") == ["elsewhere.parquet"]
        assert variable(con, "not_a_kindex_variable") is None
    finally:
        con.close()
