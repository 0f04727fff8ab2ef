"""The data guard (tests/guard.py) fails a test that touches a guarded folder, in any way a test
could: reading or listing in-process, writing through a subprocess, in a fixture, or rewriting a
file in place. Each case runs in a pytest of its own over a guarded folder under tmp_path."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

TESTS = Path(__file__).resolve().parent

CONFTEST = f"""
import sys
from pathlib import Path

sys.path.insert(0, {str(TESTS)!r})
from guard import install

DATA = Path(__file__).parent / "data"


def pytest_configure(config):
    install(config, [DATA])
"""

CASES = """
import subprocess
import sys
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"


def test_untouched(tmp_path):
    (tmp_path / "mine.txt").write_text("fine")
    assert (Path(__file__).parent / "elsewhere.txt").read_text() == "not guarded"


def test_reads():
    assert (DATA / "seed.txt").read_text() == "seed"


def test_lists():
    assert [p.name for p in DATA.glob("*")] == ["seed.txt"]


def test_subprocess_writes():
    code = f"open({str(DATA / 'new.txt')!r}, 'w').close()"
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.fixture
def writes_in_setup():
    subprocess.run([sys.executable, "-c", f"import os; os.remove({str(DATA / 'new.txt')!r})"])


def test_fixture_writes(writes_in_setup):
    pass
"""


def run_pytest(folder: Path, cases: str) -> tuple[int, str]:
    (folder / "data").mkdir()
    (folder / "data" / "seed.txt").write_text("seed")
    (folder / "elsewhere.txt").write_text("not guarded")
    (folder / "conftest.py").write_text(CONFTEST)
    (folder / "test_cases.py").write_text(textwrap.dedent(cases))
    # its own basetemp: the default one is shared, and pytest prunes old folders there
    basetemp = f"--basetemp={folder / 'tmp'}"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-rfE",
            basetemp,
            "test_cases.py",
        ],
        cwd=folder,
        capture_output=True,
        text=True,
    )
    return done.returncode, done.stdout + done.stderr


def test_the_guard_fails_every_test_that_touches_the_folder(tmp_path: Path) -> None:
    code, output = run_pytest(tmp_path, CASES)
    assert code == 1, output
    assert re.search(r"3 failed, 1 passed, 1 error", output), output
    assert "FAILED test_cases.py::test_reads" in output
    assert "(call) touched the checkout's data folders" in output
    assert "open " + str(tmp_path / "data" / "seed.txt") in output
    assert "FAILED test_cases.py::test_lists" in output
    assert "FAILED test_cases.py::test_subprocess_writes" in output
    assert "ERROR test_cases.py::test_fixture_writes" in output
    assert "changed " + str(tmp_path / "data") in output


def test_the_guard_fails_the_session_when_a_file_is_rewritten_in_place(tmp_path: Path) -> None:
    cases = """
    import subprocess
    import sys
    from pathlib import Path

    SEED = Path(__file__).parent / "data" / "seed.txt"


    def test_rewrites_in_place():
        # an in-place rewrite leaves the folder's listing and mtime as they were
        code = f"open({str(SEED)!r}, 'r+').write('SEED')"
        subprocess.run([sys.executable, "-c", code], check=True)
    """
    code, output = run_pytest(tmp_path, cases)
    assert code == 1, output
    assert "1 passed" in output, output
    assert "the test session touched the checkout's data folders" in output
    assert str(tmp_path / "data" / "seed.txt") in output
