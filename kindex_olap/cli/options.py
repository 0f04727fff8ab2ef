"""Options and helpers shared by every command module (so none imports the app back)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

LakeOption = Annotated[
    Path | None,
    typer.Option(
        "--lake",
        help="Lake folder (default: $KINDEX_LAKE, else ./data/parquet).",
        show_default=False,
    ),
]
AsOfOption = Annotated[
    str | None,
    typer.Option(
        "--as-of",
        metavar="N|TIMESTAMP",
        help="Read the lake as of its Nth lake commit, or the last one at or before a UTC "
        "timestamp (2026-11-24T17:00); see `kindex log`.",
        show_default=False,
    ),
]
