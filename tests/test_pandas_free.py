"""kindex never imports pandas on the paths a kernel team's CI takes: a check, the step verbs,
an ingest that updates the layers of an existing lake, and a first ingest (dimension rows).

pyarrow imports pandas, where it is installed, for any conversion between Arrow and numpy or
Python values (Array.to_numpy, pa.array, pa.table of a stream): 0.33 s of each such command.
A fake `pandas` put first on the path records its import in a file and fails as a missing
pandas would, so these tests hold whether or not pandas is installed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from realdata import SEEDS

FAKE = """
import os
with open(os.environ["KINDEX_TEST_PANDAS_MARKER"], "a") as handle:
    handle.write("imported\\n")
raise ImportError("pandas is not for kindex")
"""


@pytest.fixture
def fake_pandas(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """An environment whose `pandas` is the fake, and the file its import writes to."""
    package = tmp_path / "fake" / "pandas"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(FAKE, encoding="utf-8")
    marker = tmp_path / "pandas-imported"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path / "fake"), str(REPO)])
    env["KINDEX_TEST_PANDAS_MARKER"] = str(marker)
    env["COLUMNS"] = "100"
    return env, marker


def kindex(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kindex_olap", *args],
        env=env,
        capture_output=True,
        text=True,
        cwd=REPO.parent,  # not the checkout: -m would find the package there before PYTHONPATH
        timeout=300,
    )


def later_and_slower(raw: Path, folder: Path, count: int) -> Path:
    """`count` latency bundles of `raw` (seed-text files) measured again a year later and 50 %
    slower: new runs of cells, code and dimensions the lake holds."""
    folder.mkdir()
    made = 0
    for path in sorted(raw.glob("*.txt")):
        title, _, body = path.read_text(encoding="utf-8").partition("\n\n")
        bundle = json.loads(body)
        spec = bundle["run"]["spec"]
        if not any(m["metric"] == "latency" for m in spec.get("measurements", [])):
            continue
        spec["observedAt"] = spec["observedAt"].replace("202", "203", 1)
        for m in spec["measurements"]:
            m["value"] *= 1.5
        if isinstance(spec.get("timing"), dict):
            _slower(spec["timing"])
        (folder / path.name).write_text(f"{title}\n\n{json.dumps(bundle)}", encoding="utf-8")
        made += 1
        if made == count:
            break
    return folder


def _slower(timing: dict[str, object]) -> None:
    latency = timing.get("latencyNs")
    if isinstance(latency, dict):
        for key, value in latency.items():
            if isinstance(value, (int, float)):
                latency[key] = round(value * 1.5)


def test_check_and_step_verbs_do_not_import_pandas(
    liger_history_lake: Path, fake_pandas: tuple[dict[str, str], Path]
) -> None:
    env, marker = fake_pandas
    for args in (
        ["check"],
        ["query", "regressions"],
        ["query", "changes jsd", "--format", "json"],
        ["query", "improvements", "--format", "csv"],
    ):
        done = kindex(env, *args, "--lake", str(liger_history_lake))
        assert "Traceback" not in done.stderr, done.stderr
        assert done.stdout, (args, done.stderr)
        assert not marker.exists(), f"kindex {' '.join(args)} imported pandas"


def test_an_ingest_into_a_lake_and_its_check_do_not_import_pandas(
    liger_history_lake: Path, fake_pandas: tuple[dict[str, str], Path], tmp_path: Path
) -> None:
    env, marker = fake_pandas
    lake = tmp_path / "lake"
    shutil.copytree(liger_history_lake, lake)
    new = later_and_slower(liger_history_lake.parent / "raw", tmp_path / "new", 40)
    done = kindex(env, "ingest", str(new), "--lake", str(lake), "-q")
    assert done.returncode == 0, done.stderr
    assert "40 runs added" in done.stderr, done.stderr
    assert not marker.exists(), "an ingest that updates the layers imported pandas"
    done = kindex(env, "check", "--lake", str(lake), "--format", "json")
    assert "Traceback" not in done.stderr, done.stderr
    assert json.loads(done.stdout), done.stderr
    assert not marker.exists(), "a check of new runs imported pandas"


def test_a_first_ingest_with_new_dimension_rows_does_not_import_pandas(
    fake_pandas: tuple[dict[str, str], Path], tmp_path: Path
) -> None:
    env, marker = fake_pandas
    done = kindex(env, "ingest", str(SEEDS), "--lake", str(tmp_path / "lake"), "-q")
    assert done.returncode == 0, done.stderr
    assert "dimension rows added" in done.stderr and " 0 dimension rows" not in done.stderr
    assert not marker.exists(), "a first ingest (dimension rows, layers) imported pandas"


def test_an_ingest_of_many_files_does_not_import_pandas(
    fake_pandas: tuple[dict[str, str], Path], tmp_path: Path
) -> None:
    """Past FILE_ROWS_AS_JSON files, the files' rows go to DuckDB as Arrow (set to 0 here)."""
    env, marker = fake_pandas
    script = (
        "import sys; from kindex_olap.ingestion import writer; writer.FILE_ROWS_AS_JSON = 0; "
        "from kindex_olap.cli.fast import main; sys.argv[0] = 'kindex'; main()"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, "ingest", str(SEEDS), "--lake", str(tmp_path / "l"), "-q"],
        env=env,
        capture_output=True,
        text=True,
        cwd=REPO.parent,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "3 files read" in done.stderr, done.stderr
    assert not marker.exists(), "the files' rows as Arrow imported pandas"
