"""A guard that fails any test touching folders that tests must leave alone.

The checkout's `data/raw/` and `data/parquet/` belong to the README's main job (`scripts/run`):
a test that reads them depends on what that job left there, and one that writes them spoils it.
Two checks, so that neither in-process nor subprocess access goes unnoticed:

- an audit hook (PEP 578) records every `open`, listing, rename, removal or copy of a path under a
  guarded folder made by this interpreter while a test phase runs (Python-level access; DuckDB
  and Arrow read through C++, but kindex reads the lake's snapshot pointer with Python first);
- the guarded trees' directory listings and mtimes are compared before and after each phase,
  which catches files created, removed or renamed by a subprocess (`kindex ingest` run by a test);
  a full comparison of every file's size and mtime at the end of the session catches a subprocess
  that rewrote a file in place.

A violation fails the test phase in which it happened, naming the paths.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Generator, Iterable
from pathlib import Path
from typing import Any

import pytest

# Audit events whose first arguments are paths (see the audit events table in the Python docs).
_PATH_EVENTS: dict[str, int] = {
    "open": 1,
    "os.listdir": 1,
    "os.scandir": 1,
    "os.mkdir": 1,
    "os.rename": 2,
    "os.remove": 1,
    "os.rmdir": 1,
    "os.truncate": 1,
    "os.chmod": 1,
    "os.chown": 1,
    "os.utime": 1,
    "os.link": 2,
    "os.symlink": 2,
    "os.chflags": 1,
    "shutil.copyfile": 2,
    "shutil.copymode": 2,
    "shutil.copystat": 2,
    "shutil.copytree": 2,
    "shutil.move": 2,
    "shutil.rmtree": 1,
    "glob.glob": 1,
}


class DataGuard:
    """Watches `roots`; install once per interpreter (audit hooks cannot be removed)."""

    def __init__(self, roots: Iterable[Path]) -> None:
        self.roots = tuple(os.path.abspath(root) for root in roots)
        self.active = False
        self.touched: list[str] = []
        self.session_files = self.files()
        sys.addaudithook(self._audit)

    def _audit(self, event: str, args: tuple[Any, ...]) -> None:
        count = _PATH_EVENTS.get(event)
        if not self.active or count is None:
            return
        for arg in args[:count]:
            if isinstance(arg, str | bytes | os.PathLike):
                path = os.path.abspath(os.fsdecode(arg))
                if self._guarded(path):
                    self.touched.append(f"{event} {path}")

    def _guarded(self, path: str) -> bool:
        return any(path == root or path.startswith(root + os.sep) for root in self.roots)

    def folders(self) -> dict[str, tuple[int, tuple[str, ...]]]:
        """Each folder under the roots: its mtime and sorted entry names (cheap: no file stats)."""
        found: dict[str, tuple[int, tuple[str, ...]]] = {}
        stack = [root for root in self.roots if os.path.isdir(root)]
        while stack:
            folder = stack.pop()
            with os.scandir(folder) as entries:
                names = []
                for entry in entries:
                    names.append(entry.name)
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
            found[folder] = (os.stat(folder).st_mtime_ns, tuple(sorted(names)))
        return found

    def files(self) -> dict[str, tuple[int, int]]:
        """Every file under the roots with its mtime and size."""
        found: dict[str, tuple[int, int]] = {}
        for root in self.roots:
            for folder, _, names in os.walk(root):
                for name in names:
                    path = os.path.join(folder, name)
                    stat = os.lstat(path)
                    found[path] = (stat.st_mtime_ns, stat.st_size)
        return found

    def start(self) -> dict[str, tuple[int, tuple[str, ...]]]:
        """Begin watching one test phase; returns the folders as they were."""
        before = self.folders()
        self.touched = []
        self.active = True
        return before

    def stop(self, before: dict[str, tuple[int, tuple[str, ...]]]) -> list[str]:
        """End the phase; returns what it touched (empty when nothing)."""
        self.active = False
        after = self.folders()
        changed = [
            f"changed {path}"
            for path in sorted(before.keys() | after.keys())
            if before.get(path) != after.get(path)
        ]
        return list(dict.fromkeys(self.touched + changed))


def _message(where: str, touched: list[str]) -> str:
    shown = "\n  ".join(touched[:10])
    more = f"\n  ... and {len(touched) - 10} more" if len(touched) > 10 else ""
    return (
        f"{where} touched the checkout's data folders, which belong to `bash scripts/run` "
        f"(copy what a test needs from ../shared/seeds into tmp_path):\n  {shown}{more}"
    )


class GuardPlugin:
    """pytest hooks that run every test phase under a `DataGuard`."""

    def __init__(self, guard: DataGuard) -> None:
        self.guard = guard

    def _phase(self, item: pytest.Item, phase: str) -> Generator[None, Any, Any]:
        before = self.guard.start()
        try:
            return (yield)
        finally:
            touched = self.guard.stop(before)
            if touched:
                raise pytest.fail.Exception(_message(f"{item.nodeid} ({phase})", touched))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> Generator[None, Any, Any]:
        return (yield from self._phase(item, "setup"))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, Any, Any]:
        return (yield from self._phase(item, "call"))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_teardown(self, item: pytest.Item) -> Generator[None, Any, Any]:
        return (yield from self._phase(item, "teardown"))

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        after = self.guard.files()
        before = self.guard.session_files
        changed = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
        if changed:
            sys.stderr.write(_message("the test session", changed) + "\n")
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def install(config: pytest.Config, roots: Iterable[Path]) -> None:
    """Register the guard for `roots` with this pytest run."""
    config.pluginmanager.register(GuardPlugin(DataGuard(roots)), "kindex-data-guard")
