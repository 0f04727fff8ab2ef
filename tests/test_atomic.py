"""Atomic writes (kindex_olap.atomic): replace a file whole or not at all, never share a temporary
name, keep an unchanged file's mtime."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kindex_olap.atomic import atomic_path, replace_if_changed, write_atomic, write_if_changed


def test_write_atomic_replaces_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    target = tmp_path / "file.txt"
    target.write_bytes(b"old")
    write_atomic(target, b"new")
    assert target.read_bytes() == b"new"
    assert [p.name for p in tmp_path.iterdir()] == ["file.txt"]


def test_a_failed_write_keeps_the_old_file_and_removes_its_temporary(tmp_path: Path) -> None:
    target = tmp_path / "file.txt"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_bytes(b"half")
        raise RuntimeError("the writer failed")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["file.txt"]


def test_two_writers_never_share_a_temporary_name(tmp_path: Path) -> None:
    target = tmp_path / "file.txt"
    with atomic_path(target) as first, atomic_path(target) as second:
        assert first != second and first.parent == second.parent == tmp_path
        first.write_bytes(b"first")
        second.write_bytes(b"second")
    assert target.read_bytes() == b"first"  # the outer block ends last and wins


def test_an_unchanged_file_keeps_its_mtime(tmp_path: Path) -> None:
    target = tmp_path / "file.txt"
    assert write_if_changed(target, b"same")
    os.utime(target, ns=(1, 1))
    assert not write_if_changed(target, b"same")
    assert target.stat().st_mtime_ns == 1
    tmp = tmp_path / "next"
    tmp.write_bytes(b"same")
    assert not replace_if_changed(tmp, target) and not tmp.exists()
    assert target.stat().st_mtime_ns == 1
    tmp.write_bytes(b"other")
    assert replace_if_changed(tmp, target) and target.read_bytes() == b"other"
