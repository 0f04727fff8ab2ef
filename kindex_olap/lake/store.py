"""The lake on disk: one Delta Lake table per kindex table, committed together as lake commits.

Layout of a lake folder (docs/layout.md explains the commit design):

    kindex-lake.json                 format version (2: Delta tables; 1: kindex's own snapshots)
    runs/_delta_log/...              the Delta transaction log of runs (written by delta-rs)
    runs/source=<s>/year=<y>/part-<commit>-<ingest id>-<n>.parquet, measurements/..., ...
    _kindex/lock                     held (flock) by the one kindex writer at a time
    _kindex/empty/<table>.parquet    an empty file per table, read when a table holds no data
    _kindex/files/<runs version>.json  the file lists of the lake commit that runs' newest log
                                     entry belongs to (a cache; the Delta logs are the truth)
    _kindex/staging/<ingest id>/     a writer's scratch space

A lake commit (an ingest, a compaction, a migration) is numbered by kindex and commits each
changed table as one Delta commit carrying `kindex.commit` and `kindex.ingest_id` in its commit
metadata, the table `runs` last, whose commit also records every other table's version
(`kindex.versions`). Runs' log is therefore the lake's log: a lake commit is complete when its
runs commit exists. kindex reads the tables at the versions recorded there, so a writer killed
between table commits changes nothing it reads; the next writer restores the tables it left
ahead (their orphan files then go with `kindex vacuum`).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import signal
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

from kindex_olap.atomic import atomic_path, write_atomic
from kindex_olap.errors import DAMAGED_LAKE_HINT, ConfigError, LakeError
from kindex_olap.lake.tables import PARTITIONED, ROW_GROUP_ROWS, SORT_ORDER, order_clause
from kindex_olap.schema import TABLES, check_table

if TYPE_CHECKING:
    from deltalake import DeltaTable

__all__ = [
    "PARTITIONED",
    "ROW_GROUP_ROWS",
    "SORT_ORDER",
    "TABLES",
    "Lake",
    "LakeCommit",
    "Snapshot",
    "Transaction",
    "order_clause",
]

FORMAT_VERSION = 2
LEGACY_FORMAT = 1  # kindex's own snapshots (_kindex/CURRENT): read only by `kindex migrate`
FORMAT_FILE = "kindex-lake.json"
DEFAULT_LAKE = Path("data/parquet")
# The tables a run depends on commit first, runs last: a reader that starts from runs (every
# speedup does) sees whole lake commits, whichever Delta reader it is.
COMMIT_ORDER = (*(t for t in TABLES if t != "runs"), "runs")
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
_LOG_ENTRY = re.compile(r"^(\d{20})\.json$")
CACHE_KEEP = 4  # file-list cache entries kept (the newest few runs versions)


@dataclass(frozen=True)
class Snapshot:
    """One lake commit as kindex reads it: every table's data files at its recorded version."""

    lake: Path
    id: int  # the lake commit number (0: a lake never written)
    tables: dict[str, list[str]] = field(default_factory=dict)  # absolute paths
    versions: dict[str, int] = field(default_factory=dict)  # Delta version of each table
    created_at: str | None = None
    summary: dict[str, Any] = field(default_factory=dict)

    def files(self, table: str) -> list[str]:
        """Absolute paths of `table`'s data files (its empty file when it holds no data)."""
        check_table(table)
        return self.tables.get(table) or [str(self.lake / "_kindex" / "empty" / f"{table}.parquet")]


@dataclass(frozen=True)
class LakeCommit:
    """One entry of `kindex log`: a lake commit and the Delta version of each table."""

    number: int
    time: datetime  # UTC
    operation: str
    ingest_id: str
    versions: dict[str, int]
    summary: dict[str, Any]


def resolve_lake(lake: str | os.PathLike[str] | None) -> tuple[Path, str]:
    """The lake folder to use and where that choice came from (for the user's summary)."""
    if lake is not None:
        return Path(lake).expanduser().resolve(), "--lake"
    if os.environ.get("KINDEX_LAKE"):
        return Path(os.environ["KINDEX_LAKE"]).expanduser().resolve(), "$KINDEX_LAKE"
    return DEFAULT_LAKE.resolve(), "default (./data/parquet)"


def delta_error() -> tuple[type[BaseException], ...]:
    """The exceptions delta-rs raises (imported only when a Delta table is touched)."""
    from deltalake.exceptions import DeltaError

    return (DeltaError, OSError)


def delta_failure(error: BaseException, doing: str, table_path: Path) -> Exception:
    """A delta-rs error as one line: an OSError where the system refused a write (a full disk:
    the CLI edge names it), else a LakeError naming the damaged log file when there is one."""
    first = str(error).splitlines()[0] if str(error) else type(error).__name__
    number = re.search(r"\(os error (\d+)\)", str(error))
    if number is not None:  # delta-rs's storage errors carry the errno only in their text
        code = int(number.group(1))
        return OSError(code, os.strerror(code), str(table_path))
    if isinstance(error, OSError) and error.errno is not None:
        return error
    damaged = _unreadable_log_entry(table_path)
    where = f" ({damaged} is not a Delta log entry)" if damaged else ""
    return LakeError(f"{doing}: {first}{where}", hint=DAMAGED_LAKE_HINT)


def _unreadable_log_entry(table_path: Path) -> Path | None:
    for entry in sorted((table_path / "_delta_log").glob("*.json")):
        try:
            for line in entry.read_bytes().splitlines():
                if line.strip():
                    json.loads(line)
        except (OSError, ValueError):
            return entry
    return None


class Lake:
    """A lake folder: read a lake commit of it, or open a write transaction on it."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).resolve()
        self.meta = self.root / "_kindex"

    def table_path(self, table: str) -> Path:
        check_table(table)
        return self.root / table

    # -- format -------------------------------------------------------------------------------

    def exists(self) -> bool:
        return (self.root / FORMAT_FILE).is_file()

    def format_version(self) -> int:
        try:
            info = json.loads((self.root / FORMAT_FILE).read_text())
            return int(info["format"])
        except FileNotFoundError as e:
            raise LakeError(
                f"{self.root} is not a kindex lake (no {FORMAT_FILE})",
                hint="run `kindex ingest` to create one, or pass --lake DIR",
            ) from e
        except (ValueError, KeyError, TypeError) as e:
            raise LakeError(
                f"{self.root / FORMAT_FILE} is unreadable: {e}", hint=DAMAGED_LAKE_HINT
            ) from e

    def check_format(self) -> None:
        """Refuse a lake of kindex's pre-Delta format, or one written by a newer kindex."""
        version = self.format_version()
        if version == LEGACY_FORMAT:
            raise LakeError(
                f"the lake at {self.root} is in kindex's pre-Delta format (format 1)",
                hint=f"convert it once with `kindex migrate --lake {self.root}`",
            )
        if version > FORMAT_VERSION:
            raise LakeError(
                f"the lake at {self.root} has format {version}; this kindex reads format "
                f"{FORMAT_VERSION}",
                hint="upgrade kindex-olap (pip install -U kindex-olap)",
            )

    # -- reading ------------------------------------------------------------------------------

    def snapshot(self, as_of: str | None = None) -> Snapshot:
        """The newest complete lake commit, or the one `as_of` names (see `resolve_as_of`)."""
        self.check_format()
        if as_of is not None:
            snapshot = self._snapshot_at(self.resolve_as_of(as_of))
            gone = [p for files in snapshot.tables.values() for p in files if not Path(p).exists()]
            if gone:
                raise LakeError(
                    f"--as-of {as_of}: lake commit {snapshot.id} can no longer be read "
                    f"({len(gone)} of its files were removed, e.g. {gone[0]})",
                    hint="`kindex vacuum` removes the files of commits older than --retain",
                )
            return snapshot
        cached = self._cached_snapshot(self.newest_log_version("runs"))
        if cached is not None:
            return cached
        commits = self.log(limit=20) or self.log()
        if not commits:
            return Snapshot(lake=self.root, id=0)
        newest = commits[-1]
        # runs at its newest version: later runs commits (vacuum) do not change its files
        versions = newest.versions | {"runs": self.newest_log_version("runs")}
        return self._snapshot_at(
            LakeCommit(
                newest.number,
                newest.time,
                newest.operation,
                newest.ingest_id,
                versions,
                newest.summary,
            )
        )

    def newest_log_version(self, table: str) -> int:
        """The newest Delta version of `table` from its log folder's names (no delta-rs)."""
        try:
            names = os.listdir(self.table_path(table) / "_delta_log")
        except FileNotFoundError as e:
            raise LakeError(
                f"{self.table_path(table)} is not a Delta table (no _delta_log)",
                hint=DAMAGED_LAKE_HINT,
            ) from e
        versions = [int(m.group(1)) for name in names if (m := _LOG_ENTRY.match(name))]
        if not versions:
            raise LakeError(f"{self.table_path(table) / '_delta_log'} holds no commit")
        return max(versions)

    def delta_table(self, table: str, version: int | None = None) -> DeltaTable:
        from deltalake import DeltaTable

        try:
            return DeltaTable(str(self.table_path(table)), version=version)
        except delta_error() as e:
            at = "" if version is None else f" at version {version}"
            doing = f"cannot read the Delta table {self.table_path(table)}{at}"
            raise delta_failure(e, doing, self.table_path(table)) from e

    def log(self, limit: int | None = None) -> list[LakeCommit]:
        """The lake commits, oldest first (the kindex commits in runs' Delta history)."""
        try:
            history = self.delta_table("runs").history(limit)
        except delta_error() as e:
            doing = f"cannot read the history of {self.table_path('runs')}"
            raise delta_failure(e, doing, self.table_path("runs")) from e
        commits = []
        for entry in history:
            if "kindex.versions" not in entry:
                continue  # not a lake commit (vacuum, or another tool's write)
            versions = json.loads(entry["kindex.versions"]) | {"runs": int(entry["version"])}
            commits.append(
                LakeCommit(
                    number=int(entry["kindex.commit"]),
                    time=datetime.fromtimestamp(entry["timestamp"] / 1000, UTC),
                    operation=entry.get("kindex.operation", ""),
                    ingest_id=entry.get("kindex.ingest_id", ""),
                    versions=versions,
                    summary=json.loads(entry.get("kindex.summary", "{}")),
                )
            )
        return sorted(commits, key=lambda c: c.number)

    def resolve_as_of(self, as_of: str) -> LakeCommit:
        """The lake commit `--as-of` names: a number N (the Nth lake commit), or a timestamp
        (the last lake commit at or before it; ISO 8601, UTC unless it says otherwise)."""
        commits = self.log()
        text = as_of.strip()
        if text.isdigit():
            for commit in commits:
                if commit.number == int(text):
                    return commit
            newest = commits[-1].number if commits else 0
            raise ConfigError(
                f"--as-of {text}: the lake has no commit {text}",
                hint=f"lake commits are numbered 1 to {newest}; see `kindex log`",
            )
        moment = parse_moment(text)
        before = [c for c in commits if c.time <= moment]
        if not before:
            first = f" (the first is {commits[0].time:%Y-%m-%d %H:%M:%S} UTC)" if commits else ""
            raise ConfigError(f"--as-of {text}: the lake has no commit at or before it{first}")
        return before[-1]

    def _snapshot_at(self, commit: LakeCommit) -> Snapshot:
        tables: dict[str, list[str]] = {}
        for table in TABLES:
            version = commit.versions.get(table)
            if version is None:
                raise LakeError(f"lake commit {commit.number} records no version of {table}")
            try:
                tables[table] = list(self.delta_table(table, version).file_uris())
            except LakeError as e:
                raise LakeError(
                    f"lake commit {commit.number} cannot be read: {e.message}",
                    hint="`kindex vacuum` may have removed the log or files of old commits",
                ) from e
        return Snapshot(
            self.root,
            commit.number,
            tables,
            dict(commit.versions),
            commit.time.strftime("%Y-%m-%dT%H:%M:%SZ"),
            commit.summary,
        )

    def _cached_snapshot(self, runs_version: int) -> Snapshot | None:
        """The file lists cached for runs' newest version, when kindex wrote them (no delta-rs
        import: it costs a cold query about 40 ms)."""
        try:
            data = json.loads((self.meta / "files" / f"{runs_version:020d}.json").read_text())
        except (OSError, ValueError):
            return None
        tables = {t: [str(self.root / t / p) for p in files] for t, files in data["tables"].items()}
        return Snapshot(
            self.root,
            int(data["commit"]),
            tables,
            {t: int(v) for t, v in data["versions"].items()},
            data.get("created_at"),
            data.get("summary", {}),
        )

    def write_cache(self, snapshot: Snapshot) -> None:
        """Cache `snapshot`'s file lists under runs' version (call while holding the lock)."""
        runs_version = snapshot.versions["runs"]
        tables = {
            t: [os.path.relpath(p, self.root / t) for p in files]
            for t, files in snapshot.tables.items()
        }
        body = {
            "commit": snapshot.id,
            "versions": snapshot.versions,
            "created_at": snapshot.created_at,
            "summary": snapshot.summary,
            "tables": tables,
        }
        folder = self.meta / "files"
        folder.mkdir(parents=True, exist_ok=True)
        write_atomic(folder / f"{runs_version:020d}.json", json.dumps(body).encode())
        for old in sorted(folder.glob("*.json"))[:-CACHE_KEEP]:
            old.unlink(missing_ok=True)

    # -- writing ------------------------------------------------------------------------------

    def create(self) -> None:
        """Make the folder a lake (idempotent; call while holding the lock): an empty Delta
        table per table, an empty Parquet file per table, then the format file."""
        if self.exists():
            self.check_format()
        elif self.root.exists() and not self.root.is_dir():
            raise ConfigError(f"lake path {self.root} exists and is not a folder")
        self.create_tables()
        if not self.exists():
            write_format(self.root, FORMAT_VERSION)

    def create_tables(self) -> None:
        """A Delta table (version 0, no files) for every table that has none yet."""
        from deltalake import CommitProperties, Schema
        from deltalake.transaction import create_table_with_add_actions

        from kindex_olap.schema import arrow_schema

        write_empty_tables(self.meta / "empty")
        for table in TABLES:
            path = self.table_path(table)
            if (path / "_delta_log").is_dir() and any((path / "_delta_log").glob("*.json")):
                continue
            path.mkdir(parents=True, exist_ok=True)
            try:
                create_table_with_add_actions(
                    str(path),
                    Schema.from_arrow(arrow_schema(table)),
                    [],
                    mode="error",
                    partition_by=PARTITIONED.get(table),
                    name=table,
                    commit_properties=CommitProperties(custom_metadata={"kindex.commit": "0"}),
                )
            except delta_error() as e:
                raise delta_failure(e, f"cannot create the Delta table {path}", path) from e

    @contextlib.contextmanager
    def transaction(
        self,
        operation: str = "ingest",
        timeout: float = 600.0,
        on_wait: Callable[[str], None] | None = None,
    ) -> Iterator[Transaction]:
        """Hold the writer lock, undo what a killed writer left, and yield a transaction."""
        with self.lock(timeout, on_wait):
            self.create()
            base = self.recover()
            tx = Transaction(self, base, operation)
            try:
                yield tx
            finally:
                shutil.rmtree(tx.staging, ignore_errors=True)

    @contextlib.contextmanager
    def lock(
        self, timeout: float = 600.0, on_wait: Callable[[str], None] | None = None
    ) -> Iterator[None]:
        """The writer lock: one kindex writer at a time (blind Delta appends never conflict, so
        two ingests of the same runs would both commit them without it)."""
        self.meta.mkdir(parents=True, exist_ok=True)
        with open(self.meta / "lock", "a+") as handle:
            deadline = time.monotonic() + timeout
            told = False
            while True:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if not told and on_wait is not None:
                        on_wait(f"waiting for another kindex writer on {self.root} to finish...")
                        told = True
                    if time.monotonic() > deadline:
                        raise LakeError(
                            f"another kindex writer holds {self.meta / 'lock'} "
                            f"(waited {timeout:.0f} s)",
                            hint="wait for it to finish, or raise --lock-timeout",
                        ) from None
                    time.sleep(0.05)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def recover(self) -> Snapshot:
        """Undo what a killed writer left (call while holding the lock): its staging folders,
        and the Delta commits of an incomplete lake commit, each table restored to the version
        the last complete lake commit recorded. Returns that lake commit."""
        shutil.rmtree(self.meta / "staging", ignore_errors=True)
        base = self.snapshot()
        if base.id == 0:
            return base
        restored = False
        for table in TABLES:
            pinned = base.versions[table]
            if self.newest_log_version(table) == pinned:
                continue
            current = self.delta_table(table)
            if set(current.file_uris()) == set(base.tables[table]):
                continue  # later commits changed no file (vacuum)
            from deltalake import CommitProperties

            metadata = {"kindex.operation": "rollback", "kindex.commit": str(base.id)}
            try:
                current.restore(
                    pinned, commit_properties=CommitProperties(custom_metadata=metadata)
                )
            except delta_error() as e:
                doing = f"cannot restore {table} to version {pinned}"
                raise delta_failure(e, doing, self.table_path(table)) from e
            restored = True
        return self.snapshot() if restored else base


class Transaction:
    """A writer's view of the lake: write data files, then commit them as the next lake commit."""

    def __init__(self, lake: Lake, base: Snapshot, operation: str) -> None:
        self.lake = lake
        self.base = base
        self.id = base.id + 1
        self.operation = operation
        self.token = uuid.uuid4().hex[:12]  # the ingest id: in file names and commit metadata
        self.staging = lake.meta / "staging" / self.token
        self.staging.mkdir(parents=True, exist_ok=True)
        self._added: dict[str, list[Path]] = {}
        self._replaced: set[str] = set()

    def new_file_name(self, table: str, partition: dict[str, Any] | None = None) -> Path:
        """A fresh, collision-free data file path inside `table`'s folder."""
        folder = self.lake.table_path(table)
        for key, value in (partition or {}).items():
            folder = folder / f"{key}={partition_folder(value)}"
        folder.mkdir(parents=True, exist_ok=True)
        return folder / f"part-{self.id:08d}-{self.token}-{uuid.uuid4().hex[:8]}.parquet"

    def adopt_partitioned(self, table: str, folder: Path) -> list[Path]:
        """Move a Hive-partitioned folder written by DuckDB into the table under fresh names.

        The files are not yet part of the table: pass them to `add` or `replace`.
        """
        moved = []
        for path in sorted(folder.rglob("*.parquet")):
            partition = partition_values(path.relative_to(folder))
            final = self.new_file_name(table, partition)
            os.replace(path, final)
            moved.append(final)
        return moved

    def add(self, table: str, path: Path) -> None:
        """Make a written data file part of `table` once the transaction commits."""
        self._added.setdefault(table, []).append(path)

    def replace(self, table: str, paths: list[Path]) -> None:
        """Make `paths` the whole of `table` (compaction)."""
        self._replaced.add(table)
        self._added[table] = list(paths)

    def has_changes(self) -> bool:
        return bool(self._added or self._replaced)

    def commit(self, summary: dict[str, Any]) -> Snapshot:
        """Commit each changed table (runs last, always), then cache the new file lists."""
        crashpoint("commit:start")
        metadata = {
            "kindex.commit": str(self.id),
            "kindex.ingest_id": self.token,
            "kindex.operation": self.operation,
        }
        versions = dict(self.base.versions)
        for table in COMMIT_ORDER:
            if table == "runs":
                metadata["kindex.versions"] = json.dumps(
                    {t: v for t, v in versions.items() if t != "runs"}
                )
                metadata["kindex.summary"] = json.dumps(summary)
            elif table not in self._added and table not in self._replaced:
                # newer than base only by commits that change no file (vacuum): see recover()
                versions[table] = self.lake.newest_log_version(table)
                continue
            crashpoint(f"commit:{table}")
            versions[table] = self._commit_table(table, metadata)
            crashpoint(f"commit:{table}-done")
        tables = {
            t: ([] if t in self._replaced else list(self.base.tables.get(t, [])))
            + [str(p) for p in self._added.get(t, [])]
            for t in TABLES
        }
        created_at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        snapshot = Snapshot(self.lake.root, self.id, tables, versions, created_at, summary)
        self.lake.write_cache(snapshot)
        crashpoint("commit:done")
        return snapshot

    def _commit_table(self, table: str, metadata: dict[str, str]) -> int:
        from deltalake import CommitProperties
        from deltalake.transaction import RemoveAction

        delta = self.lake.delta_table(table)
        actions: list[Any] = [
            _add_action(self.lake.table_path(table), path) for path in self._added.get(table, [])
        ]
        if table in self._replaced:
            now = int(time.time() * 1000)
            import pyarrow as pa

            for add in pa.table(delta.get_add_actions(flatten=True)).to_pylist():
                values = {
                    k.removeprefix("partition."): (None if v is None else str(v))
                    for k, v in add.items()
                    if k.startswith("partition.")
                }
                actions.append(
                    RemoveAction(add["path"], True, now, add["size_bytes"], values or None)
                )
        try:
            delta.create_write_transaction(
                actions,
                mode="append",
                schema=delta.schema(),
                partition_by=PARTITIONED.get(table),
                commit_properties=CommitProperties(custom_metadata=metadata),
            )
        except delta_error() as e:
            doing = f"cannot commit to the Delta table {table}"
            raise delta_failure(e, doing, self.lake.table_path(table)) from e
        return self.lake.newest_log_version(table)


def _add_action(table_root: Path, path: Path) -> Any:
    import pyarrow.parquet as pq
    from deltalake.transaction import AddAction

    relative = path.relative_to(table_root)
    stat = path.stat()
    rows = pq.read_metadata(path).num_rows
    values = {k: (None if v is None else str(v)) for k, v in partition_values(relative).items()}
    return AddAction(
        str(relative),
        stat.st_size,
        values,
        stat.st_mtime_ns // 1_000_000,
        True,
        json.dumps({"numRecords": rows}),
    )


def partition_folder(value: object) -> str:
    """A partition value as a Hive folder name spells it (as DuckDB writes and reads it back:
    percent-encoded UTF-8, NULL as __HIVE_DEFAULT_PARTITION__)."""
    return HIVE_NULL if value is None else quote(str(value), safe="")


def partition_values(relative: Path) -> dict[str, str | None]:
    """The partition values in a data file's path relative to its table folder."""
    values: dict[str, str | None] = {}
    for part in relative.parts[:-1]:
        key, _, raw = part.partition("=")
        values[key] = None if raw == HIVE_NULL else unquote(raw)
    return values


def parse_moment(text: str) -> datetime:
    """An --as-of timestamp: ISO 8601 (a date, or a date and time); UTC unless it says so."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as e:
        raise ConfigError(
            f"--as-of {text!r} is neither a lake commit number nor a timestamp",
            hint="e.g. --as-of 3, --as-of 2026-11-24, --as-of 2026-11-24T17:00:00Z",
        ) from e
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def crashpoint(name: str) -> None:
    """Failure injection for the crash tests: KINDEX_CRASHPOINT=NAME kills the process here."""
    if os.environ.get("KINDEX_CRASHPOINT") == name:
        os.kill(os.getpid(), signal.SIGKILL)


def write_format(root: Path, version: int) -> None:
    text = json.dumps({"format": version, "tool": "kindex-olap", "tables": "delta"}, indent=2)
    write_atomic(root / FORMAT_FILE, (text + "\n").encode())


def write_empty_tables(folder: Path) -> None:
    """One empty Parquet file per table (all its columns), for views over a table without data."""
    tables = [t for t in TABLES if not (folder / f"{t}.parquet").is_file()]
    if not tables:
        return
    import duckdb

    from kindex_olap.sqlfiles import read_sql

    folder.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    try:
        con.execute(read_sql("tables.sql"))
        for table in tables:
            with atomic_path(folder / f"{table}.parquet") as tmp:
                con.table(table).write_parquet(str(tmp), compression="zstd")
    finally:
        con.close()


def write_relation(tx: Transaction, table: str, relation: Any, replace: bool = False) -> int:
    """Write a DuckDB relation of `table`'s rows (all columns) as its data files, sorted, in
    row groups of ROW_GROUP_ROWS, zstd; partitioned tables get one file per partition, without
    the partition columns (Delta keeps them in the paths). Returns the files written."""
    ordered = relation.query("rows", f"SELECT * FROM rows {order_clause(table)}")
    partition_by = PARTITIONED.get(table)
    if partition_by is None:
        path = tx.new_file_name(table)
        ordered.write_parquet(str(path), compression="zstd", row_group_size=ROW_GROUP_ROWS)
        written = [path]
    else:
        out = tx.staging / f"{table}-{uuid.uuid4().hex[:8]}"
        ordered.write_parquet(
            str(out),
            compression="zstd",
            row_group_size=ROW_GROUP_ROWS,
            partition_by=partition_by,
            write_partition_columns=False,
        )
        written = tx.adopt_partitioned(table, out)
    if replace:
        tx.replace(table, written)
    else:
        for path in written:
            tx.add(table, path)
    return len(written)
