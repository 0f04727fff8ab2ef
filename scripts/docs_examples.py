"""Regenerate every example output in README.md and docs/*.md from the real run it shows.

A block to keep fresh is a ```text fence right after a marker line:

    <!-- docs-example: LAKE ARGS... -->

LAKE is `run` (the lake `bash scripts/run` builds: `kindex import liger` from the package
index) or `history` (Liger's whole benchmark history, tests/data's copy of the CSV); ARGS are
kindex's arguments (shell words), run with the lake at a width of 100 columns, no colour.
`import` as ARGS is the import's own summary (stderr). Timings and paths are left out (`...`):
performance figures do not belong in a comparison. `plot` examples also rewrite their PNG.

    .venv/bin/python scripts/docs_examples.py           # rewrite the blocks (and PNGs)
    .venv/bin/python scripts/docs_examples.py --check   # exit 1 naming each stale block

tests/test_docs_examples.py runs the check.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
KINDEX = Path(sys.executable).parent / "kindex"
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
MARKER = re.compile(r"^<!-- docs-example: (\w+) (.+?) -->\n```text\n(.*?)```\n", re.M | re.S)
WIDTH = "100"
TIMING = re.compile(r" in [\d.]+ s -> .*$", re.M)


def kindex(args: list[str], cwd: Path, lake: Path | None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": WIDTH, "NO_COLOR": "1", "TERM": "dumb"}
    env.pop("KINDEX_LAKE", None)
    full = [*args, "--lake", str(lake)] if lake is not None else args
    done = subprocess.run(
        [str(KINDEX), *full], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"kindex {shlex.join(full)} failed: {done.stderr.strip()}")
    return done


def history_csv() -> Path:
    sys.path.insert(0, str(REPO))
    from tests.realdata import LIGER_HISTORY

    return LIGER_HISTORY


class Lakes:
    """The lakes the examples come from, built on first use in one temporary folder."""

    def __init__(self, root: Path, write_pictures: bool) -> None:
        self.root = root
        self.write_pictures = write_pictures
        self.built: dict[str, tuple[Path, str]] = {}

    def get(self, name: str) -> tuple[Path, str]:
        """(the lake, the import's summary) of `run` or `history`."""
        if name not in self.built:
            folder = self.root / name
            folder.mkdir()
            source = [] if name == "run" else [str(history_csv())]
            done = kindex(["import", "liger", *source], folder, None)
            self.built[name] = (folder / "data" / "parquet", TIMING.sub(" ...", done.stderr))
        return self.built[name]


def output(lakes: Lakes, lake_name: str, args: list[str]) -> str:
    """The text an example block shows."""
    lake, summary = lakes.get(lake_name)
    if args == ["import"]:
        return summary
    if args[0] == "plot":
        out = REPO / args[2] if lakes.write_pictures else lakes.root / Path(args[2]).name
        kindex([*args[:2], "--out", str(out)], REPO, lake)
        return ""
    return kindex(args, lake.parent, lake).stdout


def refresh(text: str, lakes: Lakes, stale: Callable[[str], None]) -> str:
    """`text` with every marked block replaced by a fresh run's output."""

    def block(match: re.Match[str]) -> str:
        lake_name, words = match.group(1), shlex.split(match.group(2))
        fresh = output(lakes, lake_name, words)
        if words[0] == "plot":
            return match.group(0)
        if fresh != match.group(3):
            stale(f"{lake_name} {match.group(2)}")
        return f"<!-- docs-example: {lake_name} {match.group(2)} -->\n```text\n{fresh}```\n"

    return MARKER.sub(block, text)


def main(check: bool) -> int:
    stale: list[str] = []
    with tempfile.TemporaryDirectory(prefix="kindex-docs-") as root:
        lakes = Lakes(Path(root), write_pictures=not check)
        for path in DOCS:
            text = path.read_text(encoding="utf-8")
            name = path.relative_to(REPO)
            new = refresh(text, lakes, lambda what, n=name: stale.append(f"{n}: {what}"))
            if new != text and not check:
                path.write_text(new, encoding="utf-8")
    for line in stale:
        print(("stale " if check else "rewrote ") + line, file=sys.stderr)
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main("--check" in sys.argv[1:]))
