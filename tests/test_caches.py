"""What kindex keeps in its cache folder for the next process: the views' catalog file
(query/catalog.py: made once, attached read-only by every connection, the same answers as views
created in memory, no setting shared between two connections of one process) and each lake
commit's vocabulary (query/vocabulary.py)."""

from __future__ import annotations

import json
from pathlib import Path

import crafted as c
import duckdb
import pytest

from kindex_olap.query import catalog
from kindex_olap.query.engine import connect
from kindex_olap.query.run import run_query


def _lake(tmp_path: Path) -> Path:
    bundles = [
        c.run("liger", median=1.0e6, p20=0.99e6, p80=1.01e6),
        c.run("torch", median=1.3e6, p20=1.28e6, p80=1.32e6),
    ]
    return c.ingest_bundles(tmp_path / "in", bundles, tmp_path / "lake")


def _catalogs(cache: Path) -> list[Path]:
    return sorted((cache / "kindex" / "views").glob("views-*.duckdb"))


def test_connections_attach_one_catalog_file_made_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    lake = _lake(tmp_path)  # the ingest's layer update made the live catalog
    con = connect(lake, lean=True)
    made = _catalogs(tmp_path / "cache")
    assert len(made) == 2  # live (the layer update's) and over layers (this reader's)
    database = con.execute("SELECT current_database()").fetchall()[0][0]
    assert database == catalog.CATALOG
    stamps = {path: path.stat().st_mtime_ns for path in made}
    connect(lake, lean=True).close()
    assert {p: p.stat().st_mtime_ns for p in _catalogs(tmp_path / "cache")} == stamps
    con.close()


def test_without_a_writable_cache_the_views_are_made_in_memory_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lake = _lake(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    attached = run_query("speedup jsd", lake)
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder would be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocked))
    con = connect(lake, lean=True)
    assert con.execute("SELECT current_database()").fetchall()[0][0] == "memory"
    in_memory = run_query("speedup jsd", con=con)
    assert in_memory.rows == attached.rows and in_memory.columns == attached.columns
    assert attached.rows and attached.rows[0][attached.columns.index("speedup")] == 1.3


def test_a_locked_connection_leaves_another_free(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    lake = _lake(tmp_path)
    locked = connect(lake)  # read_only: locked down, as `kindex sql` is
    free = connect(lake, read_only=False)
    with pytest.raises(duckdb.Error):
        locked.execute("SET threads = 1").fetchall()
    free.execute("SET threads = 1").fetchall()  # its own database instance, its own settings
    for con in (locked, free):
        with pytest.raises(duckdb.Error):
            con.execute("CREATE VIEW speedups AS SELECT 1").fetchall()  # the file is read-only


def test_a_lake_commits_vocabulary_is_read_once_then_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kindex_olap.query import kept
    from kindex_olap.query.vocabulary import load_vocabulary, read_vocabulary

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    lake = _lake(tmp_path)
    con = connect(lake, lean=True)
    first = load_vocabulary(con)
    assert first == read_vocabulary(con) and first.kernels == ("jsd",)
    (stored,) = (tmp_path / "cache" / "kindex" / "vocabulary").glob("*.json")
    # the next reader of this lake commit takes the stored one (planted: it would not say so);
    # this process holds it in memory (its file is read once)
    planted = json.loads(stored.read_text())
    planted["kernels"] = ["jsd", "planted"]
    stored.write_text(json.dumps(planted))
    assert load_vocabulary(connect(lake, lean=True)).kernels == ("jsd",)
    monkeypatch.setattr(kept, "_KEPT", {})  # as a new process
    assert load_vocabulary(connect(lake, lean=True)).kernels == ("jsd", "planted")
    # a new lake commit lists other files: its vocabulary is read from the lake
    other = c.run("liger", kernel="geglu", median=2.0e6, p20=1.9e6, p80=2.1e6)
    c.ingest_bundles(tmp_path / "in2", [other], lake)
    newer = load_vocabulary(connect(lake, lean=True))
    assert newer.kernels == ("geglu", "jsd")
    assert len(list((tmp_path / "cache" / "kindex" / "vocabulary").glob("*.json"))) == 2


def test_no_connection_draws_duckdbs_progress_bar(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DuckDB prints its bar to stdout for a statement over 2 s, into CSV or JSON output."""
    from kindex_olap.layers.connection import layer_connection

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    lake = _lake(tmp_path)
    setting = "SELECT current_setting('enable_progress_bar')"
    for con in (connect(lake), connect(lake, read_only=False, lean=True)):
        assert con.execute(setting).fetchall() == [(False,)]

    class Tx:  # what layer_connection reads of a transaction
        staging = tmp_path / "staging"

    layers = layer_connection(Tx())  # type: ignore[arg-type]
    assert layers.execute(setting).fetchall() == [(False,)]
