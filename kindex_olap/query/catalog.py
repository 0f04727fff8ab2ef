"""kindex's macros and views kept in a DuckDB file, made once, attached by every connection.

Creating the fifty-odd macros and views of sql/views binds each one: 0.2-0.3 s of every cold
`kindex query` and of every ingest's layer update (docs/performance.md). Their text changes
only with kindex itself and with the kind of lake commit read (whether it stored its layers), so
they are created once into a file named by a digest of their sources and of DuckDB's version, in
kindex's cache folder (~/.cache/kindex/views), and a connection attaches that file read-only and
makes it its default catalog: 40-60 ms. A file attached to an in-memory database, not opened as the
database: DuckDB shares one instance between connections to the same file in one process, and
with it settings such as lock_down's (a locked `kindex sql` connection would lock an ingest's).

Everything a connection creates after that is TEMP (noise.py, layers/): temporary views and
macros are found before the attached ones, also from inside them. Where the cache folder cannot
be written (a read-only home), the caller creates the views in memory as before: the same
objects, only slower.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import duckdb

from kindex_olap import duck
from kindex_olap.cache import cache_folder, prune

CATALOG = "kindex_views"  # the attached file's name in SQL
KEEP = 8  # catalog files kept (each kindex version and lake kind makes its own)
_PREFIX = "views-"


def catalog_file(folder: Path, sources: list[str]) -> Path:
    """The file that holds the objects made from `sources` (every text that decides the
    statements: a digest of them and of DuckDB's version names it)."""
    digest = hashlib.sha256(duckdb.__version__.encode())
    for source in sources:
        digest.update(b"\x00" + source.encode())
    return folder / f"{_PREFIX}{digest.hexdigest()[:24]}.duckdb"


def attach(
    con: duckdb.DuckDBPyConnection,
    sources: list[str],
    statements: Callable[[], list[str]],
    prepare: Callable[[duckdb.DuckDBPyConnection], None],
) -> bool:
    """Attach the catalog file of `sources` to `con` read-only and make it the default, making
    the file first if it is missing: `statements()` are run on a connection `prepare` readied
    (the variables the views read). False, with `con` untouched, where no cache folder can hold
    it. `statements` is called only then: choosing them costs a cold start 30 ms."""
    folder = cache_folder() / "views"
    path = catalog_file(folder, sources)
    try:
        if not path.is_file():
            _make(folder, path, statements(), prepare)
        con.execute(f"ATTACH ? AS {CATALOG} (READ_ONLY)", [str(path)]).fetchall()
    except (OSError, duckdb.IOException):
        return False  # an unwritable folder, a file removed meanwhile: create them in memory
    con.execute(f"USE {CATALOG}").fetchall()
    return True


def _make(
    folder: Path,
    path: Path,
    statements: list[str],
    prepare: Callable[[duckdb.DuckDBPyConnection], None],
) -> None:
    """Create the objects in a new file beside `path`, moved into place when done (two processes
    making the same file both succeed: the contents are the same)."""
    from kindex_olap.atomic import atomic_path  # only when made: not on every cold start

    folder.mkdir(parents=True, exist_ok=True)
    with atomic_path(path, durable=False) as partial:  # a cache: made again if lost
        con = duck.connect(str(partial))
        try:
            prepare(con)
            for statement in statements:
                con.execute(statement).fetchall()
            con.execute("CHECKPOINT").fetchall()
        finally:
            con.close()
        Path(f"{partial}.wal").unlink(missing_ok=True)
    prune(folder, f"{_PREFIX}*.duckdb", KEEP)
