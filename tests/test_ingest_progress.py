"""The progress display of long jobs, as a person sees it: `kindex ingest` of one big file and
`kindex import` run with stderr on a real pseudo-terminal show a bar that updates and leaves
only the summary behind; piped, there is no bar, only the summary; Ctrl-C while the bar shows
still rolls back.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import shutil
import signal
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from realdata import DATA, KERNELINDEX_SLICES, decompressed
from synthetic import write_jsonl

from kindex_olap.lake.store import Lake

pytestmark = pytest.mark.slow

KINDEX = Path(sys.executable).parent / "kindex"
ESCAPE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
DOCUMENTS = re.compile(r"([\d,]+) documents, [\d,]+/s, ([\d,]+) rejected")


def on_terminal(args: list[str], interrupt_when: str | None = None) -> tuple[int, str]:
    """Run kindex with stderr on a pseudo-terminal (stdout discarded); (exit code, what the
    terminal received). With `interrupt_when`, send SIGINT to the process group (Ctrl-C) as
    soon as that text has appeared."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 160, 0, 0))
    environment = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "NO_COLOR")}
    environment["TERM"] = "xterm-256color"
    process = subprocess.Popen(
        [str(KINDEX), *args],
        stdout=subprocess.DEVNULL,
        stderr=slave,
        env=environment,
        start_new_session=True,
    )
    os.close(slave)
    received = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        received += chunk
        if interrupt_when and interrupt_when.encode() in received:
            os.killpg(process.pid, signal.SIGINT)
            interrupt_when = None
    os.close(master)
    return process.wait(timeout=120), received.decode()


def frames(screen: str) -> list[str]:
    """Each redraw of the bar line, without colours (rich redraws with CR + erase line)."""
    plain = ESCAPE.sub("", screen.replace("\x1b[2K", "\x00"))
    return [frame.strip() for frame in re.split(r"[\r\x00]", plain) if "documents," in frame]


def left_on_screen(screen: str) -> list[str]:
    """The lines written after the bar was wiped (rich's last cursor movement)."""
    tail = screen.rsplit("\x1b[2K", 1)[-1]
    return [line for line in ESCAPE.sub("", tail).replace("\r", "").split("\n") if line.strip()]


# 36,000 generated bundles, 36 of them defective: one JSONL file of about 64 MB, eight byte
# ranges staged by worker processes, so that the bar moves between ranges even on a loaded
# machine (with three ranges it was seen to jump straight to the end)
BUNDLES, DEFECTIVE = 36_000, 36


@pytest.fixture(scope="module")
def big_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """BUNDLES generated bundles (DEFECTIVE of them defective) in one JSONL file."""
    return write_jsonl(BUNDLES, tmp_path_factory.mktemp("big") / "big.jsonl")


def test_one_big_file_shows_a_bar_that_updates(big_file: Path, tmp_path: Path) -> None:
    code, screen = on_terminal(["ingest", str(big_file), "--lake", str(tmp_path / "lake")])
    assert code == 1, screen  # the generator's defective bundles are rejected
    shown = frames(screen)
    assert shown, screen
    counts = [DOCUMENTS.search(frame) for frame in shown]
    documents = {int(m.group(1).replace(",", "")) for m in counts if m}
    assert len(documents) >= 2, shown  # it moved while the file was staged
    assert max(documents) == BUNDLES
    assert any("MiB" in frame and frame.startswith("ingesting") for frame in shown)
    # a new lake's first ingest computes its layers last (seconds): the bar says so
    assert shown[-1].startswith("computing verdict layers"), shown[-3:]
    rejected = {int(m.group(2).replace(",", "")) for m in counts if m}
    assert max(rejected) == DEFECTIVE
    lines = left_on_screen(screen)
    assert "documents," not in "\n".join(lines)  # the bar is gone
    assert lines[-1].startswith("1 files read") and f"{DEFECTIVE} rejected" in lines[-1]
    assert lines[-2] == f"... and {DEFECTIVE - 10} more: see `kindex rejects`"


def test_piped_there_is_no_bar_only_the_summary(big_file: Path, tmp_path: Path) -> None:
    result = subprocess.run(
        [str(KINDEX), "ingest", str(big_file), "--lake", str(tmp_path / "lake")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 1, result.stderr
    assert result.stdout == ""
    assert "\x1b" not in result.stderr and "\r" not in result.stderr
    lines = result.stderr.splitlines()
    assert lines[-1].startswith("1 files read") and f"{BUNDLES - DEFECTIVE} runs added" in lines[-1]
    assert len(lines) == 12  # ten rejects, "... and N more", the summary


def test_ctrl_c_while_the_bar_shows_rolls_back(big_file: Path, tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    code, screen = on_terminal(["ingest", str(big_file), "--lake", str(lake)], "documents,")
    if code == 1:  # the machine was fast enough to finish first
        pytest.skip("the ingest finished before the interrupt")
    assert code == 130, screen
    assert left_on_screen(screen)[-1] == (
        "interrupted: an ingest commits all or nothing; the lake is as last committed"
    )
    assert Lake(lake).snapshot().id == 0
    assert not any((lake / "_kindex" / "staging").iterdir())


def test_import_kernelindex_shows_each_step(tmp_path: Path) -> None:
    export = KERNELINDEX_SLICES[0]
    code, screen = on_terminal(
        ["import", "kernelindex", str(export), "--raw", str(tmp_path / "raw"),
         "--lake", str(tmp_path / "lake")]
    )  # fmt: skip
    assert code == 0, screen
    plain = ESCAPE.sub("", screen)
    name = export.name.removesuffix(".jsonl.zst")
    for step in ("reading", f"converting {name}", f"ingesting {name}"):
        assert f"\r{step} " in plain.replace("\x1b[2K", ""), step
    shown = frames(screen)
    assert shown and DOCUMENTS.search(shown[-1]), shown
    lines = left_on_screen(screen)
    assert "documents," not in "\n".join(lines)
    assert lines[0].startswith(f"{name}: 1016 kernel runs")
    assert any(line.startswith("7 files read") for line in lines)


def test_import_liger_shows_each_step(tmp_path: Path) -> None:
    csv = decompressed(DATA / "liger" / "all_benchmark_data.csv.zst")
    code, screen = on_terminal(
        ["import", "liger", str(csv), "--raw", str(tmp_path / "raw"),
         "--lake", str(tmp_path / "lake")]
    )  # fmt: skip
    assert code == 0, screen
    plain = ESCAPE.sub("", screen).replace("\x1b[2K", "")
    for step in ("reading the CSVs", "converting", "ingesting"):
        assert f"\r{step} " in plain, step
    lines = left_on_screen(screen)
    assert lines[-1].startswith("ingest: ") and " runs added" in lines[-1]


def test_migrate_shows_the_layers_step(tmp_path: Path) -> None:
    lake = tmp_path / "lake"
    shutil.copytree(Path(__file__).parent / "fixtures" / "lake-v1", lake)  # before the layers
    code, screen = on_terminal(["migrate", "--lake", str(lake)])
    assert code == 0, screen
    assert "\rcomputing verdict layers " in ESCAPE.sub("", screen).replace("\x1b[2K", "")
    lines = left_on_screen(screen)
    assert "layers built" in lines[-1], lines


def test_import_piped_shows_no_bar(tmp_path: Path) -> None:
    result = subprocess.run(
        [str(KINDEX), "import", "kernelindex", str(KERNELINDEX_SLICES[0]),
         "--raw", str(tmp_path / "raw"), "--lake", str(tmp_path / "lake")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "\x1b" not in result.stderr and "\r" not in result.stderr
    assert "documents," not in result.stderr
