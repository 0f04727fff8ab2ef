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

import json
import os
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kindex_olap import schema
from kindex_olap.errors import DAMAGED_LAKE_HINT, ConfigError, LakeError, quoted
from kindex_olap.schema import LAYERS, TABLES, check_table

if TYPE_CHECKING:
    from collections.abc import Iterable

    from deltalake import DeltaTable

__all__ = ["LAYERS", "TABLES", "Lake", "LakeCommit", "Snapshot"]

FORMAT_VERSION = 2
LEGACY_FORMAT = 1  # kindex's own snapshots (_kindex/CURRENT): read only by `kindex migrate`
FORMAT_FILE = "kindex-lake.json"
DEFAULT_LAKE = Path("data/parquet")
_LOG_ENTRY = re.compile(r"^(\d{20})\.json$")
# the snapshots this process read from cache files, by file, with the file's identity
_READ_SNAPSHOTS: dict[str, tuple[tuple[int, int, int], Snapshot]] = {}


@dataclass(frozen=True)
class Snapshot:
    """One lake commit as kindex reads it: every table's data files at its recorded version."""

    lake: Path
    id: int  # the lake commit number (0: a lake never written)
    tables: dict[str, list[str]] = field(default_factory=dict)  # absolute paths
    versions: dict[str, int] = field(default_factory=dict)  # Delta version of each table
    created_at: str | None = None
    summary: dict[str, Any] = field(default_factory=dict)

    @property
    def has_layers(self) -> bool:
        """Whether this lake commit recorded the layers (kindex_olap.layers) by today's rules:
        a lake commit written before them, or whose layers other rules computed, is read with
        the same views computed live."""
        return self.layer_rules == schema.LAYER_RULES and all(
            table in self.versions for table in LAYERS
        )

    @property
    def layer_rules(self) -> int:
        """The version of the rules this lake commit's layers were computed by (schema.py)."""
        return int(self.summary.get("layer_rules", 1))

    def files(self, table: str) -> list[str]:
        """Absolute paths of `table`'s data files (its empty file when it holds no data)."""
        check_table(table)
        return self.tables.get(table) or [empty_file(self.lake, table)]


def empty_file(lake: Path, table: str) -> str:
    """The Parquet file of `table`'s columns and no rows, read where a lake commit lists no
    data file of it: the lake's, else (a lake whose `_kindex` folder was removed: the next
    writer makes it again) one kept in the cache folder for today's columns."""
    path = os.path.join(lake, "_kindex", "empty", f"{table}.parquet")
    if os.path.exists(path):
        return path
    return str(_spare_empty_files(path) / f"{table}.parquet")


def _spare_empty_files(missing: str) -> Path:
    """A folder of the cache holding today's empty table files, one per columns' SQL."""
    import hashlib

    from kindex_olap.cache import cache_folder
    from kindex_olap.lake.empty import write_empty_tables
    from kindex_olap.sqlfiles import read_sql

    digest = hashlib.sha256(read_sql("schema/tables.sql").encode()).hexdigest()[:16]
    folder = cache_folder() / "empty" / digest
    try:
        write_empty_tables(folder)  # only the files that are missing
    except OSError as e:
        raise LakeError(
            f"{missing} is missing, and the cache folder where kindex would make it again "
            f"cannot be written ({e.strerror})",
            hint=DAMAGED_LAKE_HINT,
        ) from e
    return folder


def missing_files(snapshot: Snapshot) -> list[str]:
    """The files `snapshot` reads that are not there."""
    return [f for files in snapshot.tables.values() for f in files if not os.path.exists(f)]


def check_files(snapshot: Snapshot) -> None:
    """Refuse a lake commit whose files are not all there, as a damaged lake (a reader would
    stop at the first one, DuckDB or Spark, with an error of its own)."""
    gone = missing_files(snapshot)
    if gone:
        raise LakeError(
            f"lake commit {snapshot.id} is damaged: {len(gone)} of the files it reads are "
            f"missing, e.g. {gone[0]}",
            hint=DAMAGED_LAKE_HINT,
        )


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
    """A lake folder, read side: its format and its lake commits (the newest, or `--as-of`).
    Writing goes through `lake.transaction` (lock and recovery: `lake.recovery`; creation:
    `lake.create`)."""

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
        except NotADirectoryError as e:  # --lake README.md: a file where a folder belongs
            raise ConfigError(
                f"--lake {self.root} is a file, not a lake folder",
                hint="pass the lake's folder, e.g. --lake data/parquet",
            ) from e
        except FileNotFoundError as e:  # a path that does not exist: a setting (exit 2)
            raise ConfigError(
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
            commits = self.log()
            commit = self.resolve_as_of(as_of, commits)
            is_newest = commit.number == commits[-1].number
            snapshot = self._snapshot_at(commit, is_newest)
            if is_newest:  # `kindex check` reads the newest commit by its number too
                check_files(snapshot)
                return snapshot
            gone = missing_files(snapshot)  # vacuum removes an older commit's files
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
            ),
            newest=True,
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

    def resolve_as_of(self, as_of: str, commits: list[LakeCommit] | None = None) -> LakeCommit:
        """The lake commit `--as-of` names: a number N (the Nth lake commit), or a timestamp
        (the last lake commit at or before it; ISO 8601, UTC unless it says otherwise), of
        `commits` (the lake's log when not given)."""
        commits = self.log() if commits is None else commits
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

    def files_at(self, commit: LakeCommit, table: str, newest: bool = False) -> list[str]:
        """`table`'s data files at lake commit `commit`: one table's log (a check needs only
        the runs', and reading all 22 tables' logs cost 0.9 s at 1M runs). `newest`: the
        commit is the lake's newest, which vacuum keeps, so a log it cannot read is damage."""
        version = commit.versions.get(table)
        if version is None:
            raise LakeError(f"lake commit {commit.number} records no version of {table}")
        try:
            return list(self.delta_table(table, version).file_uris())
        except LakeError as e:
            raise LakeError(
                f"lake commit {commit.number} cannot be read: {e.message}",
                hint=DAMAGED_LAKE_HINT
                if newest
                else "`kindex vacuum` may have removed the log or files of old commits",
            ) from e

    def _snapshot_at(self, commit: LakeCommit, newest: bool = False) -> Snapshot:
        tables: dict[str, list[str]] = {}
        for table in TABLES:
            if commit.versions.get(table) is None and table in LAYERS:
                continue  # a lake commit written before the layers: read live (has_layers)
            tables[table] = self.files_at(commit, table, newest)
        return Snapshot(
            self.root,
            commit.number,
            tables,
            dict(commit.versions),
            commit.time.strftime("%Y-%m-%dT%H:%M:%SZ"),
            commit.summary,
        )

    def cache_file(self, runs_version: int) -> Path:
        """Where the file lists of the lake commit that runs' `runs_version` belongs to are
        cached (written by `lake.transaction.write_cache`)."""
        return self.meta / "files" / f"{runs_version:020d}.json"

    def log_entry_sizes(
        self, versions: dict[str, int], tables: Iterable[str] | None = None
    ) -> dict[str, int]:
        """The size of each table's log entry at its version in `versions` (or of `tables`'
        only), -1 where it is gone. A cache of file lists is only as good as the logs it was
        read from: with a log entry truncated, every reader of the logs (log, check, Spark,
        polars) failed while `kindex query` answered from the cache."""
        root = str(self.root)  # os.path: 50 us for 22 tables where pathlib took 150
        sizes = {}
        for table in versions if tables is None else tables:
            entry = os.path.join(root, table, "_delta_log", f"{int(versions[table]):020d}.json")
            try:
                sizes[table] = os.stat(entry).st_size
            except OSError:
                sizes[table] = -1
        return sizes

    def _cached_snapshot(self, runs_version: int) -> Snapshot | None:
        """The file lists cached for runs' newest version, when kindex wrote them (no delta-rs
        import: it costs a cold query about 40 ms)."""
        path = self.cache_file(runs_version)
        try:
            stat = path.stat()
            # a cache file is written once, atomically (a new one is a new inode): the one this
            # process read before is the same while its inode, size and time are (a warm
            # session's every answer: 0.3-0.7 ms of a 5-13 ms answer at 1M runs, to read it again)
            seen = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
            held = _READ_SNAPSHOTS.get(str(path))
            if held is not None and held[0] == seen:
                return held[1]
            data = json.loads(path.read_text())
            # none recorded by a cache written before they were; a changed one is damage,
            # which reading the logs names
            recorded = data.get("log_bytes", {})
            if recorded != self.log_entry_sizes(data["versions"], recorded):
                return None
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None
        root = str(self.root)  # os.path.join: a tenth of pathlib's time for 22 tables' files
        tables = {
            t: [os.path.join(root, t, p) for p in files] for t, files in data["tables"].items()
        }
        snapshot = Snapshot(
            self.root,
            int(data["commit"]),
            tables,
            {t: int(v) for t, v in data["versions"].items()},
            data.get("created_at"),
            data.get("summary", {}),
        )
        if len(_READ_SNAPSHOTS) >= 8:  # a process reads few lakes
            _READ_SNAPSHOTS.clear()
        _READ_SNAPSHOTS[str(path)] = (seen, snapshot)
        return snapshot


def parse_moment(text: str) -> datetime:
    """An --as-of timestamp: ISO 8601 (a date, or a date and time); UTC unless it says so."""
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as e:
        raise ConfigError(
            f"--as-of {quoted(text)} is neither a lake commit number nor a timestamp",
            hint="e.g. --as-of 3, --as-of 2026-11-24, --as-of 2026-11-24T17:00:00Z",
        ) from e
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
