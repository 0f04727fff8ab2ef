"""What `kindex check` tests: the runs a lake commit added (by default the newest commit that
added runs), or those added after a lake commit, observed after a date or of versions after a
version (`--since`), and what prunes the steps that may hold them."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from kindex_olap.errors import ConfigError, LakeError, quoted
from kindex_olap.lake.store import Lake, LakeCommit, Snapshot, empty_file
from kindex_olap.lake.tables import scan_sql


@dataclass(frozen=True)
class NewRuns:
    """The runs a check tests: their ids and environments, and how to say which they are."""

    run_ids: list[str]
    environments: list[str | None]
    what: str
    # what prunes the steps that may hold them: their kernels (None: one has none) and the
    # earliest observed_at (None: one was not dated; a point that holds one was last observed
    # at or after it)
    kernels: list[str] | None = None
    earliest: datetime | None = None
    # no other run of their kernels and environments was observed at or after the earliest:
    # every step into a point last observed since then holds one (a check need not read the
    # steps' run ids, 18 of its 40 ms at 1M runs)
    alone: bool = False
    # the earliest ingested_at (None: one has none): a point that holds one has a run ingested
    # at or after it, and the steps of a partition's newest ingest are stored first
    # (layer_steps.to_ingested)
    ingested: datetime | None = None


def new_runs(con: duckdb.DuckDBPyConnection, snapshot: Snapshot, since: str | None) -> NewRuns:
    """The runs a check tests, kept while the lake commit's runs files stay those read: finding
    them reads the Delta log twice through delta-rs (23 of a warm check's 80 ms at 1M runs)."""
    from kindex_olap.query.kept import kept
    from kindex_olap.query.stored import layer_files

    key = (str(snapshot.lake), str(snapshot.id), since or "", *layer_files(con, "runs_files"))
    return kept("new_runs", key, lambda: _new_runs(con, snapshot, since))


def _new_runs(con: duckdb.DuckDBPyConnection, snapshot: Snapshot, since: str | None) -> NewRuns:
    """The runs a check tests, found."""
    if since is None:
        log = [c for c in Lake(snapshot.lake).log() if c.number <= snapshot.id]
        added = [c for c in log if c.summary.get("runs_added")]
        if not added:
            return NewRuns([], [], "the newest lake commit: no commit added runs")
        newest = added[-1].number
        what = f"runs of lake commit {newest}"
        try:
            return _added_after(con, snapshot, newest - 1, log, what)
        except LakeError:  # the commit before was vacuumed (after a compaction, say)
            stamped = _stamped(con, added[-1], what)
            if stamped is None:
                raise
            return stamped
    text = since.strip()
    if text.isdigit():
        if int(text) >= snapshot.id:
            return NewRuns([], [], f"runs added after lake commit {text}, the newest")
        log = [c for c in Lake(snapshot.lake).log() if c.number <= snapshot.id]
        return _added_after(con, snapshot, int(text), log, f"runs added after lake commit {text}")
    moment = _as_date(text)
    if moment is not None:
        observed = f"SELECT {NEW} FROM run_rows WHERE observed_at > ?"
        return _runs(con, observed, [moment], f"runs observed after {text}")
    later = _versions_after(con, text)
    versions = f"SELECT {NEW} FROM run_rows WHERE list_contains(?, version)"
    return _runs(con, versions, [later], f"versions after {text}")


def _stamped(con: duckdb.DuckDBPyConnection, commit: LakeCommit, what: str) -> NewRuns | None:
    """The runs ingest `commit` added, by the ingested_at it stamped them with (its summary
    says which, since this kindex), when exactly its count of runs has it; else None."""
    stamp = commit.summary.get("ingested_at")
    if not isinstance(stamp, str):
        return None
    try:
        moment = datetime.fromisoformat(stamp)
    except ValueError:
        return None
    found = _runs(con, f"SELECT {NEW} FROM run_rows WHERE ingested_at = ?", [moment], what)
    # an ingest of the same second stamps its runs alike: then they cannot be told apart
    return found if len(found.run_ids) == commit.summary.get("runs_added") else None


# what a check reads of its new runs
NEW = "run_id, environment_digest, observed_at, kernel, ingested_at"


def _runs(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any], what: str) -> NewRuns:
    """The runs `sql` selects (NEW)."""
    rows = con.execute(sql, params).fetchall()
    kernels, dates, ingested = {r[3] for r in rows}, [r[2] for r in rows], [r[4] for r in rows]
    new = NewRuns(
        [r[0] for r in rows],
        sorted({r[1] for r in rows}, key=str),
        what,
        None if None in kernels else sorted(kernels),
        min(dates) if dates and None not in dates else None,
        ingested=min(ingested) if ingested and None not in ingested else None,
    )
    if new.kernels is None or new.earliest is None or None in new.environments:
        return new
    since = con.execute(
        "SELECT count(*) FROM run_rows WHERE observed_at >= ? AND "
        "list_contains(?::VARCHAR[], environment_digest) AND list_contains(?::VARCHAR[], kernel)",
        [new.earliest, new.environments, new.kernels],
    ).fetchall()[0][0]
    return replace(new, alone=since == len(set(new.run_ids)))


# lake commits that only add runs files (an ingest; the layers' own commit writes no runs): the
# runs added after a lake commit are then the rows of the runs files added since
_APPENDS = ("ingest", "layers")


def _added_after(
    con: duckdb.DuckDBPyConnection,
    snapshot: Snapshot,
    commit: int,
    log: list[LakeCommit],
    what: str,
) -> NewRuns:
    """The runs of `snapshot` that lake commit `commit` did not hold."""
    if commit <= 0:
        return _runs(con, f"SELECT {NEW} FROM run_rows", [], what)
    base = next((c for c in log if c.number == commit), None)
    if base is None:
        raise ConfigError(f"--since {commit}: the lake has no commit {commit}")
    before = Lake(snapshot.lake).files_at(base, "runs")
    if all(c.operation in _APPENDS for c in log if c.number > commit):
        # the files added since hold exactly the new runs: read them, not every run id twice
        # (0.8 s at 1M runs)
        held = set(before)
        files = [f for f in snapshot.files("runs") if f not in held]
        if not files:
            return NewRuns([], [], what)
        con.execute("SET VARIABLE kindex_check_new_runs = ?", [files]).fetchall()
        return _runs(
            con,
            f"SELECT {NEW} FROM ({scan_sql('runs', NEW_FILES)})",
            [],
            what,
        )
    gone = [path for path in before if not Path(path).exists()]
    if gone:
        raise LakeError(
            f"lake commit {commit} can no longer be read ({len(gone)} of its runs files were "
            f"removed, e.g. {gone[0]})",
            hint="`kindex vacuum` removed them; `--since DATE` or `--since VERSION` selects "
            "runs without them",
        )
    base_files = before or [empty_file(snapshot.lake, "runs")]
    con.execute("SET VARIABLE kindex_check_base_runs = ?", [base_files]).fetchall()
    return _runs(
        con,
        f"SELECT {NEW} FROM run_rows ANTI JOIN ("
        "SELECT run_id FROM read_parquet(getvariable('kindex_check_base_runs'))) USING (run_id)",
        [],
        what,
    )


NEW_FILES = "getvariable('kindex_check_new_runs')"


def _as_date(text: str) -> datetime | None:
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment


def _versions_after(con: duckdb.DuckDBPyConnection, version: str) -> list[str]:
    """The lake's version labels after `version` (PEP 440)."""
    from packaging.version import InvalidVersion, Version

    labels = [r[0] for r in con.execute("SELECT DISTINCT version FROM run_rows").fetchall() if r[0]]
    try:
        wanted = Version(version)
    except InvalidVersion as e:
        raise ConfigError(  # a bad argument, as `--since 999` of a lake of 3 commits is
            f"--since {quoted(version)} is neither a lake commit, an ISO date nor a version",
            hint="lake commits: `kindex log`; dates like 2025-03-01; versions like 0.8.0",
        ) from e
    later = []
    for label in labels:
        try:
            if Version(label) > wanted:
                later.append(label)
        except InvalidVersion:
            continue
    return later
