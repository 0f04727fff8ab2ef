"""Every command and sub-command answers --help: the tree is walked, so a new command is covered
without a change here."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from kindex_olap.cli.app import app


def command_paths(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """The path of `command` and of every command below it (typer vendors click, so groups are
    recognised by their `commands`)."""
    yield path
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from command_paths(sub, (*path, name))


PATHS = list(command_paths(typer.main.get_command(app)))


def test_the_tree_holds_every_command_group() -> None:
    assert {path[0] for path in PATHS if path} >= {"ingest", "query", "sql", "import"}
    assert ("import", "liger") in PATHS and ("import", "kernelindex") in PATHS


@pytest.mark.parametrize("path", PATHS, ids=lambda path: " ".join(("kindex", *path)))
def test_help(path: tuple[str, ...]) -> None:
    result = CliRunner().invoke(app, [*path, "--help"], terminal_width=100)
    assert result.exit_code == 0, result.output
    assert "Usage: kindex" in result.output or "Usage: root" in result.output, result.output
    assert " ".join(path) in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("path", PATHS, ids=lambda path: " ".join(("kindex", *path)))
def test_help_text_flows_at_80_columns(path: tuple[str, ...]) -> None:
    """A paragraph of the description is wrapped at the terminal's width, not also where the
    docstring's lines end (Typer keeps those: at 80 columns every line broke twice)."""
    result = CliRunner().invoke(app, [*path, "--help"], terminal_width=80)
    description = result.output.split("╭")[0].splitlines()[3:]  # after the usage line
    for line, after in pairwise(description):
        if line.strip() and after.strip():
            fits = len(line.strip()) + 1 + len(after.split()[0]) <= 76
            assert not fits, f"{line.strip()!r} breaks before {after.split()[0]!r}"
