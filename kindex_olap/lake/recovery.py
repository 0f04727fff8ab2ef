"""The writer's guard: one kindex writer at a time (the lock), and undoing what a killed writer
left (its staging folders, and the Delta commits of an incomplete lake commit)."""

from __future__ import annotations

import contextlib
import fcntl
import shutil
import time
from collections.abc import Callable, Iterator
from typing import IO

from kindex_olap.errors import LakeError
from kindex_olap.lake.store import TABLES, Lake, Snapshot, delta_error, delta_failure


@contextlib.contextmanager
def lock(
    lake: Lake, timeout: float = 600.0, on_wait: Callable[[str], None] | None = None
) -> Iterator[None]:
    """The writer lock: one kindex writer at a time (blind Delta appends never conflict, so
    two ingests of the same runs would both commit them without it)."""
    lake.meta.mkdir(parents=True, exist_ok=True)
    with _lock_file(lake) as handle:
        deadline = time.monotonic() + timeout
        told = False
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not told and on_wait is not None:
                    on_wait(f"waiting for another kindex writer on {lake.root} to finish...")
                    told = True
                if time.monotonic() > deadline:
                    raise LakeError(
                        f"another kindex writer holds {lake.meta / 'lock'} "
                        f"(waited {timeout:.0f} s)",
                        hint="wait for it to finish, or raise --lock-timeout",
                    ) from None
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _lock_file(lake: Lake) -> IO[str]:
    path = lake.meta / "lock"
    try:
        return open(path, "a+")
    except IsADirectoryError as e:  # not a file kindex writes: something else made it
        raise LakeError(
            f"{path} is a folder; kindex's writer lock is a file",
            hint="remove that folder when no kindex writer runs, then try again",
        ) from e


def recover(lake: Lake) -> Snapshot:
    """Undo what a killed writer left (call while holding the lock): its staging folders,
    and the Delta commits of an incomplete lake commit, each table restored to the version
    the last complete lake commit recorded. Returns that lake commit."""
    shutil.rmtree(lake.meta / "staging", ignore_errors=True)
    base = lake.snapshot()
    if base.id == 0:
        return base
    restored = False
    for table in TABLES:
        # a layer the last lake commit did not record (a lake written before the layers) is
        # restored to its creation: version 0, no files
        pinned = base.versions.get(table, 0)
        if lake.newest_log_version(table) == pinned:
            continue
        current = lake.delta_table(table)
        if set(current.file_uris()) == set(base.tables.get(table, [])):
            continue  # later commits changed no file (vacuum)
        from deltalake import CommitProperties

        metadata = {"kindex.operation": "rollback", "kindex.commit": str(base.id)}
        try:
            current.restore(pinned, commit_properties=CommitProperties(custom_metadata=metadata))
        except delta_error() as e:
            doing = f"cannot restore {table} to version {pinned}"
            raise delta_failure(e, doing, lake.table_path(table)) from e
        restored = True
    return lake.snapshot() if restored else base
