"""kindex's cache folder: what it keeps there can be made again (downloads, built files)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_folder() -> Path:
    """$XDG_CACHE_HOME/kindex, else ~/.cache/kindex (not created here)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kindex"


def prune(folder: Path, pattern: str, keep: int) -> None:
    """Keep the `keep` newest files of `folder` matching `pattern` (older kindex versions and
    lake commits made the others)."""
    files = sorted(folder.glob(pattern), key=_mtime, reverse=True)
    for old in files[keep:]:
        old.unlink(missing_ok=True)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
