"""The error edge, as a user meets it: real `python -m kindex_olap` processes given a bad path, a
lake where nothing can be written, a full disk, a damaged lake and a closed pipe. Each ends with
one line on stderr naming the file (and a hint saying what to do), a documented exit code, and
never a traceback."""

from __future__ import annotations

import re
import resource
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import REPO, SEEDS

from kindex_olap.ingestion.pipeline import ingest
from kindex_olap.lake.store import Lake


def kindex(
    *args: str, cwd: Path, preexec_fn: Callable[[], None] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kindex_olap", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        preexec_fn=preexec_fn,
    )


def assert_one_error(done: subprocess.CompletedProcess[str], code: int, *names: str) -> str:
    """The process exited with `code` after one `error:` line (and at most one `hint:` line)
    that names each of `names`; returns that line."""
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert 1 <= len(lines) <= 2 and lines[0].startswith("error: "), done.stderr
    assert all(line.startswith("hint: ") for line in lines[1:]), done.stderr
    for name in names:
        assert name in lines[0], done.stderr
    return lines[0]


@pytest.fixture
def seeded(tmp_path: Path) -> Path:
    lake = tmp_path / "lake"
    assert ingest([SEEDS], lake).runs_added == 3
    return lake


def test_an_input_that_does_not_exist(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    done = kindex("ingest", str(missing), "--lake", str(tmp_path / "lake"), cwd=tmp_path)
    assert_one_error(done, 2, str(missing), "does not exist")


def test_a_lake_under_proc_cannot_be_created(tmp_path: Path) -> None:
    done = kindex("ingest", str(SEEDS), "--lake", "/proc/kindex-lake", cwd=tmp_path)
    line = assert_one_error(done, 2, "/proc/kindex-lake")
    assert "check the path" in line or "permission denied" in line  # root, or not


def test_a_lake_under_sys_is_not_permitted(tmp_path: Path) -> None:
    done = kindex("ingest", str(SEEDS), "--lake", "/sys/kernel/kindex-lake", cwd=tmp_path)
    line = assert_one_error(done, 2, "/sys/kernel/kindex-lake")
    assert "permission denied" in line and "--lake DIR" in line


@pytest.mark.slow
@pytest.mark.parametrize(
    "limit",
    [
        pytest.param(1_000, id="while-creating-the-lake"),  # DuckDB writes the empty tables
        pytest.param(3_000, id="while-staging"),  # Python writes the staged rows
    ],
)
def test_a_full_disk_commits_nothing_and_names_the_file(tmp_path: Path, limit: int) -> None:
    lake = tmp_path / "lake"

    def small_files() -> None:  # Python ignores SIGXFSZ, so a write past the limit gets EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    done = kindex("ingest", str(SEEDS), "--lake", str(lake), cwd=tmp_path, preexec_fn=small_files)
    line = assert_one_error(done, 3, "cannot write " + str(lake), "File too large")
    assert "nothing was committed" in line
    again = kindex("ingest", str(SEEDS), "--lake", str(lake), cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "3 runs added" in again.stderr


def test_out_of_memory_is_one_line_not_a_damaged_lake(tmp_path: Path) -> None:
    """DuckDB running out of memory (the work database's limit made tiny here; a 16-core
    machine's threads did it with the real one) is said as such, exit 3, and commits nothing:
    it was reported as a damaged lake with the damaged-lake hint."""
    lake = tmp_path / "lake"
    tiny = (
        "import sys; from kindex_olap.ingestion import writer; writer.MEMORY_LIMIT = '1MB'; "
        "from kindex_olap.cli.fast import main; sys.argv[0] = 'kindex'; main()"
    )
    done = subprocess.run(
        [sys.executable, "-c", tiny, "ingest", str(SEEDS), "--lake", str(lake)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    line = assert_one_error(done, 3, "error: out of memory (Out of Memory Error")
    assert "damaged" not in done.stderr and "free memory" in done.stderr
    again = kindex("ingest", str(SEEDS), "--lake", str(lake), cwd=tmp_path)
    assert again.returncode == 0 and "3 runs added" in again.stderr, (line, again.stderr)


def test_python_s_memory_error_is_one_line_too() -> None:
    from kindex_olap.cli.edge import outcome

    message, code = outcome(MemoryError())
    assert code == 3 and message is not None
    assert message.splitlines()[0] == "error: out of memory (MemoryError)"


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["log", "--format", "xml"], "'xml' is not one of 'table', 'csv', 'json', 'markdown'"),
        (["export", "--bogus"], "No such option: --bogus"),
        (["check", "--threshold", "abc"], "Invalid value for '--threshold'"),
        (["qeury", "x"], "Did you mean 'query'?"),
    ],
)
def test_a_usage_error_is_one_line(tmp_path: Path, args: list[str], named: str) -> None:
    """A bad option or command was Typer's box of five lines or more under a usage line; it is
    one line and a hint naming the command's --help, exit 2, like every other bad argument."""
    done = kindex(*args, cwd=tmp_path)
    assert_one_error(done, 2, named)
    assert "--help` lists its" in done.stderr


@pytest.mark.slow
def test_a_truncated_parquet_file_is_named(seeded: Path, tmp_path: Path) -> None:
    damaged = Path(Lake(seeded).snapshot().files("runs")[0])
    damaged.write_bytes(damaged.read_bytes()[:100])
    lake = ["--lake", str(seeded)]
    for command in (["query", "speedup jsd"], ["sql", "SELECT count(*) FROM runs"]):
        done = kindex(*command, *lake, cwd=tmp_path)
        assert_one_error(done, 3, str(damaged))
        assert "ingest the bundles again into a new lake" in done.stderr


def test_a_truncated_file_that_compaction_rewrites_is_named(tmp_path: Path) -> None:
    """Compaction reads the files of the partitions it rewrites (those of several files; a
    partition of one is left as it is, unread): a damaged one among them is named."""
    seeds = sorted(SEEDS.iterdir())
    lake = tmp_path / "lake"
    for number, part in enumerate((seeds[:2], seeds[2:])):
        folder = tmp_path / f"in{number}"
        folder.mkdir()
        for seed in part:
            shutil.copy(seed, folder / seed.name)
        assert ingest([folder], lake).runs_added == len(part)
    files = Lake(lake).snapshot().files("ingested_files")  # a file per ingest
    assert len(files) == 2
    damaged = Path(files[0])
    damaged.write_bytes(damaged.read_bytes()[:100])
    done = kindex("compact", "--lake", str(lake), cwd=tmp_path)
    assert_one_error(done, 3, str(damaged))
    assert "ingest the bundles again into a new lake" in done.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    ("file", "garbage"),
    [
        ("runs/_delta_log/00000000000000000001.json", b"garbage\n"),
        ("kindex-lake.json", b"\x00\xff{"),
    ],
)
def test_garbage_in_the_lake_s_own_files_is_named(
    seeded: Path, tmp_path: Path, file: str, garbage: bytes
) -> None:
    (seeded / file).write_bytes(garbage)
    # without the file-list cache, which would answer reads as of the last commit it knew
    shutil.rmtree(seeded / "_kindex" / "files")
    for command in (["query", "gpus"], ["ingest", str(SEEDS)], ["rejects"]):
        done = kindex(*command, "--lake", str(seeded), cwd=tmp_path)
        assert_one_error(done, 3, str(seeded / file))
        assert "hint: " in done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("table", ["runs", "layer_speedups"])
def test_a_truncated_log_entry_is_damage_to_the_cached_reader_too(
    seeded: Path, tmp_path: Path, table: str
) -> None:
    """The newest log entry of a table cut short: `kindex log`, `check`, polars and Spark
    could not read the lake, while `query` and `sql` answered from the file lists cached at
    the commit. The cache records each entry's size; a changed one sends the reader to the
    logs, which name the damage."""
    version = Lake(seeded).snapshot().versions[table]
    entry = seeded / table / "_delta_log" / f"{version:020d}.json"
    lake = ["--lake", str(seeded)]
    assert kindex("query", "gpus", *lake, cwd=tmp_path).returncode == 0
    entry.write_bytes(entry.read_bytes()[:150])
    for command in (["query", "gpus"], ["sql", "SELECT count(*) FROM runs"], ["check"]):
        done = kindex(*command, *lake, cwd=tmp_path)
        assert_one_error(done, 3, str(entry))
        assert "ingest the bundles again into a new lake" in done.stderr


@pytest.mark.slow
def test_a_missing_lake_file_is_a_damaged_lake_for_every_reader(
    seeded: Path, tmp_path: Path
) -> None:
    """A data file the newest lake commit reads, deleted: every reader says it is missing, as
    a damaged lake (exit 3), in one line. DuckDB names a file it cannot find in double quotes,
    and `sql`, `export` and the step verbs said "query failed" (exit 5) with its SQL and a
    caret under it; `check` said "--as-of 1" and blamed `kindex vacuum`."""
    missing = Path(Lake(seeded).snapshot().files("runs")[0])
    missing.unlink()
    lake = ["--lake", str(seeded)]
    for command in (
        ["query", "speedup jsd"],
        ["sql", "SELECT count(*) FROM runs"],
        ["export", "--out", str(tmp_path / "out"), "speedup jsd"],
        ["check"],
    ):
        done = kindex(*command, *lake, cwd=tmp_path)
        line = assert_one_error(done, 3, str(missing))
        assert "--as-of" not in line and "vacuum" not in done.stderr, done.stderr
        assert "ingest the bundles again into a new lake" in done.stderr


@pytest.mark.slow
def test_a_table_that_lost_its_log_is_not_made_again(seeded: Path, tmp_path: Path) -> None:
    """runs' Delta log removed: an ingest made runs a new, empty table (lake commit 1 of a
    lake that had runs), the runs before were gone from every answer, and `kindex vacuum`
    then deleted their files. It is a damaged lake now; nothing is written or removed."""
    files = sorted(seeded.rglob("*.parquet"))
    shutil.rmtree(seeded / "runs" / "_delta_log")
    for command in (["ingest", str(SEEDS)], ["vacuum", "--retain", "0"], ["compact"]):
        done = kindex(*command, "--lake", str(seeded), cwd=tmp_path)
        assert_one_error(done, 3, str(seeded / "runs"), "_delta_log")
    assert not (seeded / "runs" / "_delta_log").exists()
    assert sorted(seeded.rglob("*.parquet")) == files


@pytest.mark.slow
def test_a_lake_without_its_kindex_folder_is_read(seeded: Path, tmp_path: Path) -> None:
    """`_kindex` (lock, caches, the empty files of tables without data) removed: the readers
    of a table without data (the rejects) failed with "a lake file is damaged"; they read an
    empty file of today's columns from the cache folder, and the next writer makes the lake's
    own again. A lock that is a folder is named as such (exit 3, not a bare OSError)."""
    shutil.rmtree(seeded / "_kindex")
    done = kindex("rejects", "--lake", str(seeded), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "0 rejected document(s)" in done.stderr
    (seeded / "_kindex" / "lock").mkdir(parents=True)
    done = kindex("ingest", str(SEEDS), "--lake", str(seeded), cwd=tmp_path)
    assert_one_error(done, 3, str(seeded / "_kindex" / "lock"), "is a folder")


@pytest.mark.parametrize(
    "command",
    [
        'kindex query "speedup kl_div" --lake LAKE | head -1',
        'kindex query "speedup kl_div" --lake LAKE --format csv | head -1',
        'kindex sql "SELECT * FROM runs" --lake LAKE --format csv | head -1',
    ],
)
def test_a_closed_pipe_ends_quietly(liger_history_lake: Path, tmp_path: Path, command: str) -> None:
    kindex_command = f"{sys.executable} -m kindex_olap"
    script = command.replace("kindex", kindex_command, 1).replace("LAKE", str(liger_history_lake))
    done = subprocess.run(
        ["bash", "-c", script + '; echo "status=${PIPESTATUS[0]}" >&2'],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert len(done.stdout.splitlines()) == 1, done.stdout
    assert "status=0" in done.stderr, done.stderr
    assert "BrokenPipe" not in done.stderr and "Traceback" not in done.stderr, done.stderr


# Each documented exit code and a command that reaches it (LAKE: a lake holding the seeds).
REACHED = {
    0: ["query", "gpus", "--lake", "LAKE"],
    1: ["ingest", "BROKEN", "--lake", "LAKE"],
    2: ["query", "gpus", "--format", "xml", "--lake", "LAKE"],
    3: ["query", "gpus", "--lake", "DAMAGED"],
    4: ["ingest", "EMPTY", "--lake", "LAKE"],
    5: ["query", "speedup jsdd", "--lake", "LAKE"],
    6: ["import", "liger", "BAD_CSV", "--raw", "RAW", "--lake", "LAKE"],
}
# Reached in another test: Ctrl-C during an ingest.
REACHED_ELSEWHERE = {130: "test_ctrl_c_during_a_parallel_ingest_rolls_back_quietly"}


@pytest.mark.slow
@pytest.mark.parametrize(("code", "command"), REACHED.items())
def test_every_documented_exit_code_is_reachable(
    seeded: Path, tmp_path: Path, code: int, command: list[str]
) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "broken.json").write_text('{"not": "a bundle"}')
    (tmp_path / "bad.csv").write_text("a,b\n1,2\n")
    (tmp_path / "damaged").mkdir()
    (tmp_path / "damaged" / "kindex-lake.json").write_text("not json")
    places = {
        "DAMAGED": tmp_path / "damaged",
        "LAKE": seeded,
        "BROKEN": tmp_path / "broken.json",
        "EMPTY": tmp_path / "empty",
        "BAD_CSV": tmp_path / "bad.csv",
        "RAW": tmp_path / "raw",
    }
    done = kindex(*[str(places.get(arg, arg)) for arg in command], cwd=tmp_path)
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr, done.stderr


def documented_codes(text: str) -> set[int]:
    """The codes of an `Exit codes: 0 ...; 1 ...; ...` paragraph."""
    paragraph = text.split("Exit codes:", 1)[1].split("\n\n", 1)[0]
    return {int(code) for code in re.findall(r"(?:^|;)\s*(\d+)\s", paragraph)}


def readme_codes(text: str) -> set[int]:
    """The codes of the README's one exit-code table (`| N | meaning | commands |` rows)."""
    section = text.split("### Exit codes", 1)[1]
    table = next(part for part in section.split("\n\n") if part.startswith("| code"))
    return {int(code) for code in re.findall(r"^\|\s*(\d+)\s*\|", table, re.MULTILINE)}


# `kindex check`'s own code (nothing was tested), documented in the README's table; the edge
# never produces it.
CHECK_ONLY = {7}


def test_the_documented_exit_codes_are_the_reachable_ones() -> None:
    readme = readme_codes((REPO / "README.md").read_text(encoding="utf-8")) - CHECK_ONLY
    edge = documented_codes((REPO / "kindex_olap" / "cli" / "edge.py").read_text(encoding="utf-8"))
    assert readme == edge == REACHED.keys() | REACHED_ELSEWHERE.keys()
    elsewhere = (REPO / "tests" / "test_cli_ingest.py").read_text(encoding="utf-8")
    assert all(f"def {name}(" in elsewhere for name in REACHED_ELSEWHERE.values())
