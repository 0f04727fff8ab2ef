"""kindex's cache folder: what it keeps there can be made again (downloads, built files)."""

from __future__ import annotations

import os
from pathlib import Path


def cache_folder() -> Path:
    """$XDG_CACHE_HOME/kindex, else ~/.cache/kindex (not created here)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "kindex"
