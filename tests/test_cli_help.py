"""Every command and sub-command answers --help: the tree is walked, so a new command is covered
without a change here."""

from __future__ import annotations

from collections.abc import Iterator
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
