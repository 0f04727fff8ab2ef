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

# The pairing and history options shared by `kindex query` and `kindex plot` (one query path).
VersionOption = Annotated[
    str | None, typer.Option("--version", help="Pair only runs labelled with this version.")
]
AllPairsOption = Annotated[
    bool, typer.Option("--all", help="Every same-version pair, not only the newest runs.")
]
ByOption = Annotated[
    str, typer.Option("--by", help="history verbs: one point per version, or per run (run).")
]
AllBranchesOption = Annotated[
    bool,
    typer.Option("--all-branches", help="history verbs: also runs first seen off the main branch."),
]
