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
