"""The lake on disk: Parquet data files made visible only through atomically committed snapshots.

Layout of a lake folder:

    kindex-lake.json                     format version (a newer kindex format is refused)
    _kindex/CURRENT                      id of the committed snapshot, replaced atomically
    _kindex/snapshots/00000007.json      the files of every table in snapshot 7
    _kindex/empty/<table>.parquet        an empty file per table, read when a table has no data
    _kindex/lock                         held (flock) by the one writer at a time
    _kindex/staging/<tx>/                a writer's scratch space, removed on commit or by the next writer
    runs/source=<s>/year=<y>/part-*.parquet, measurements/..., environments/part-*.parquet, ...

A writer writes new data files under their final names, then writes a new snapshot file and
finally replaces CURRENT with os.replace. A writer killed at any point leaves CURRENT naming the
old snapshot, so readers see the lake exactly as it was; its stray files are referenced by no
snapshot and the next writer deletes them.
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
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from kindex_olap.errors import DAMAGED_LAKE_HINT, ConfigError, LakeError

FORMAT_VERSION = 1
FORMAT_FILE = "kindex-lake.json"
TABLES = (
    "runs",
    "measurements",
    "environments",
    "protocols",
    "workloads",
    "implementations",
    "operations",
    "rejects",
    "ingested_files",
    "serving_runs",
    "run_provenance",
)
# Sort keys inside files: row-group min/max statistics then prune the common filters.
SORT_ORDER = {
    "runs": "kernel, environment_digest, pass, workload_digest, implementation_digest",
    "measurements": "run_id",
    "environments": "environment_digest",
    "protocols": "protocol_digest",
    "workloads": "operation, workload_digest",
    "implementations": "provider, implementation_digest",
    "operations": "family, operation_spec_digest",
    "rejects": "rejected_at, source_file, line",
    "ingested_files": "path",
    "run_provenance": "run_id",
}


def order_clause(table: str) -> str:
    """`ORDER BY ...` for a table's files (fixed vocabulary), or nothing for unsorted tables."""
    return f"ORDER BY {SORT_ORDER[table]}" if table in SORT_ORDER else ""


# Small row groups let min/max statistics of the sorted columns skip most of a file for a
# filtered query (bench/layout.py: 3x faster for one kernel on one GPU than 122,880-row groups).
ROW_GROUP_ROWS = 16_384

# Runs and measurements are partitioned by a coarse key that follows arrivals (docs/layout.md).
PARTITIONED = {"runs": ["source", "year"], "measurements": ["source", "year"]}


# Snapshots whose files are kept although a newer snapshot replaced them (compaction), so that
# a query that started on an older snapshot can finish.
RETAINED_SNAPSHOTS = 5
DEFAULT_LAKE = Path("data/parquet")


@dataclass(frozen=True)
class Snapshot:
    """One committed state of the lake: the data files of every table."""

    lake: Path
    id: int
    tables: dict[str, list[str]] = field(default_factory=dict)
    created_at: str | None = None
    summary: dict[str, Any] = field(default_factory=dict)

    def files(self, table: str) -> list[str]:
        """Absolute paths of `table`'s data files (its empty file when it holds no data)."""
        if table not in TABLES:
            raise LakeError(f"unknown lake table {table!r}", hint=f"tables: {', '.join(TABLES)}")
        relative = self.tables.get(table) or [f"_kindex/empty/{table}.parquet"]
        return [str(self.lake / path) for path in relative]


def resolve_lake(lake: str | os.PathLike[str] | None) -> tuple[Path, str]:
    """The lake folder to use and where that choice came from (for the user's summary)."""
    if lake is not None:
        return Path(lake).expanduser().resolve(), "--lake"
    if os.environ.get("KINDEX_LAKE"):
        return Path(os.environ["KINDEX_LAKE"]).expanduser().resolve(), "$KINDEX_LAKE"
    return DEFAULT_LAKE.resolve(), "default (./data/parquet)"


class Lake:
    """A lake folder: read its committed snapshot, or open a write transaction on it."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).resolve()
        self.meta = self.root / "_kindex"

    # -- reading ------------------------------------------------------------------------------

    def exists(self) -> bool:
        return (self.root / FORMAT_FILE).is_file()

    def check_format(self) -> None:
        """Refuse a lake written by a newer kindex (its files may mean something else)."""
        try:
            info = json.loads((self.root / FORMAT_FILE).read_text())
            version = int(info["format"])
        except FileNotFoundError as e:
            raise LakeError(
                f"{self.root} is not a kindex lake (no {FORMAT_FILE})",
                hint="run `kindex ingest` to create one, or pass --lake DIR",
            ) from e
        except (ValueError, KeyError, TypeError) as e:
            raise LakeError(
                f"{self.root / FORMAT_FILE} is unreadable: {e}", hint=DAMAGED_LAKE_HINT
            ) from e
        if version > FORMAT_VERSION:
            raise LakeError(
                f"the lake at {self.root} has format {version}; this kindex reads format "
                f"{FORMAT_VERSION} and older",
                hint="upgrade kindex-olap (pip install -U kindex-olap)",
            )

    def snapshot(self) -> Snapshot:
        """The committed snapshot (an empty one for a lake that has never been written)."""
        self.check_format()
        try:
            current = int((self.meta / "CURRENT").read_text().strip())
        except FileNotFoundError:
            return Snapshot(lake=self.root, id=0)
        except ValueError as e:
            raise LakeError(
                f"{self.meta / 'CURRENT'} is corrupt: {e}", hint=DAMAGED_LAKE_HINT
            ) from e
        return self._read_snapshot(current)

    def _read_snapshot(self, snapshot_id: int) -> Snapshot:
        path = self.meta / "snapshots" / f"{snapshot_id:08d}.json"
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise LakeError(f"snapshot {path} cannot be read: {e}", hint=DAMAGED_LAKE_HINT) from e
        return Snapshot(
            lake=self.root,
            id=snapshot_id,
            tables={name: list(files) for name, files in data["tables"].items()},
            created_at=data.get("created_at"),
            summary=data.get("summary", {}),
        )

    # -- writing ------------------------------------------------------------------------------

    def create(self) -> None:
        """Make the folder a lake (idempotent): format file and one empty Parquet file per table."""
        if self.exists():
            self.check_format()
            _write_empty_tables(self.meta / "empty", missing_only=True)  # tables added later
            return
        if self.root.exists() and not self.root.is_dir():
            raise ConfigError(f"lake path {self.root} exists and is not a folder")
        (self.meta / "snapshots").mkdir(parents=True, exist_ok=True)
        _write_empty_tables(self.meta / "empty")
        _atomic_write(
            self.root / FORMAT_FILE,
            json.dumps({"format": FORMAT_VERSION, "tool": "kindex-olap"}, indent=2) + "\n",
        )

    @contextlib.contextmanager
    def transaction(
        self, timeout: float = 600.0, on_wait: Callable[[str], None] | None = None
    ) -> Iterator[Transaction]:
        """Hold the writer lock, clean up after any writer that died, and yield a transaction."""
        self.create()
        with self._lock(timeout, on_wait):
            self.collect_garbage()
            tx = Transaction(self, self.snapshot())
            try:
                yield tx
            finally:
                shutil.rmtree(tx.staging, ignore_errors=True)

    @contextlib.contextmanager
    def _lock(self, timeout: float, on_wait: Callable[[str], None] | None) -> Iterator[None]:
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

    def collect_garbage(self) -> int:
        """Delete data files no retained snapshot references (a killed writer's leftovers).

        Call only while holding the writer lock: another writer's files are not yet referenced.
        """
        shutil.rmtree(self.meta / "staging", ignore_errors=True)
        keep = self._retained_files()
        removed = 0
        for table in TABLES:
            folder = self.root / table
            if not folder.is_dir():
                continue
            for path in folder.rglob("*"):
                if path.is_file() and str(path.relative_to(self.root)) not in keep:
                    path.unlink()
                    removed += 1
        self._prune_snapshots()
        return removed

    def _snapshot_ids(self) -> list[int]:
        folder = self.meta / "snapshots"
        ids = (
            [int(p.stem) for p in folder.glob("*.json") if p.stem.isdigit()]
            if folder.is_dir()
            else []
        )
        return sorted(ids)

    def _retained_ids(self) -> list[int]:
        current = self.snapshot().id
        return [i for i in self._snapshot_ids() if i <= current][-RETAINED_SNAPSHOTS:]

    def _retained_files(self) -> set[str]:
        keep: set[str] = set()
        for snapshot_id in self._retained_ids():
            for files in self._read_snapshot(snapshot_id).tables.values():
                keep.update(files)
        return keep

    def _prune_snapshots(self) -> None:
        retained = set(self._retained_ids())
        for snapshot_id in self._snapshot_ids():
            if snapshot_id not in retained:
                (self.meta / "snapshots" / f"{snapshot_id:08d}.json").unlink(missing_ok=True)


class Transaction:
    """A writer's view of the lake: stage files, then commit them as the next snapshot."""

    def __init__(self, lake: Lake, base: Snapshot) -> None:
        self.lake = lake
        self.base = base
        self.id = base.id + 1
        self.token = uuid.uuid4().hex[:12]
        self.staging = lake.meta / "staging" / self.token
        self.staging.mkdir(parents=True, exist_ok=True)
        self._added: dict[str, list[str]] = {}
        self._replaced: dict[str, list[str]] = {}

    def new_file_name(self, table: str, partition: dict[str, str] | None = None) -> Path:
        """A fresh, collision-free data file path inside the lake for `table`."""
        folder = self.lake.root / table
        for key, value in (partition or {}).items():
            folder = folder / f"{key}={partition_value(value)}"
        folder.mkdir(parents=True, exist_ok=True)
        return folder / f"part-{self.id:08d}-{self.token}-{uuid.uuid4().hex[:8]}.parquet"

    def adopt_partitioned(self, table: str, folder: Path) -> list[Path]:
        """Move a Hive-partitioned folder written by DuckDB into the lake under fresh names.

        The files are not yet part of the table: pass them to `add` or `replace`.
        """
        moved = []
        for path in sorted(folder.rglob("*.parquet")):
            parts = path.relative_to(folder).parts[:-1]
            partition = dict(unquote(part).split("=", 1) for part in parts)
            final = self.new_file_name(table, partition)
            os.replace(path, final)
            moved.append(final)
        return moved

    def add(self, table: str, path: Path) -> None:
        """Make a written data file part of `table` once the transaction commits."""
        self._added.setdefault(table, []).append(str(path.relative_to(self.lake.root)))

    def replace(self, table: str, paths: list[Path]) -> None:
        """Make `paths` the whole of `table` (compaction)."""
        self._replaced[table] = [str(p.relative_to(self.lake.root)) for p in paths]

    def has_changes(self) -> bool:
        return bool(self._added or self._replaced)

    def commit(self, summary: dict[str, Any]) -> Snapshot:
        """Write the next snapshot and point CURRENT at it: the single atomic step."""
        tables = {t: list(self.base.tables.get(t, [])) for t in TABLES}
        for table, files in self._replaced.items():
            tables[table] = files
        for table, files in self._added.items():
            tables[table].extend(files)
        created_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        body = {"id": self.id, "parent": self.base.id, "created_at": created_at, "tables": tables}
        body["summary"] = summary
        snapshots = self.lake.meta / "snapshots"
        crashpoint("commit:start")
        _atomic_write(snapshots / f"{self.id:08d}.json", json.dumps(body, indent=1))
        crashpoint("commit:snapshot-written")
        _atomic_write(self.lake.meta / "CURRENT", f"{self.id}\n")
        crashpoint("commit:done")
        return Snapshot(self.lake.root, self.id, tables, created_at, summary)


_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


def partition_value(value: object) -> str:
    """A folder-safe spelling of a partition value: no separators, no '..', never empty."""
    text = _UNSAFE.sub(lambda m: f"%{ord(m.group()):02X}", str(value))[:100]
    if text in {"", ".", ".."}:
        text = "%2E" * len(text) or "_"
    return text


def crashpoint(name: str) -> None:
    """Failure injection for the crash tests: KINDEX_CRASHPOINT=NAME kills the process here."""
    if os.environ.get("KINDEX_CRASHPOINT") == name:
        os.kill(os.getpid(), signal.SIGKILL)


def _atomic_write(path: Path, text: str) -> None:
    """Write a file so that readers see the old content or the new, never a mix."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    with open(tmp, "w") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    crashpoint("atomic-write:before-replace")
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_empty_tables(folder: Path, missing_only: bool = False) -> None:
    tables = [t for t in TABLES if not (missing_only and (folder / f"{t}.parquet").is_file())]
    if not tables:
        return
    import duckdb

    from kindex_olap.sqlfiles import read_sql

    folder.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    try:
        con.execute(read_sql("tables.sql"))
        for table in tables:
            path = folder / f"{table}.parquet"
            tmp = path.with_name(f".{path.name}.tmp")
            con.table(table).write_parquet(str(tmp), compression="zstd")
            os.replace(tmp, path)
    finally:
        con.close()
