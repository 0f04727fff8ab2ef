"""`kindex bench`: the interleaved schedule, the resumable state file, time limits, the CLI end
to end on the fake benchmark (tests/fake_bench.py), labels in the lake, and the Liger path with
an emitted stdlib runner (a fake sdist and fake wheels: no GPU, no package index)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from kindex_olap.cli.app import app
from kindex_olap.errors import ConfigError
from kindex_olap.experiment.plan import generic_plan, settle_plan
from kindex_olap.experiment.standalone import STATE_FILE, execute, read_json, schedule

FAKE = Path(__file__).with_name("fake_bench.py")
PY = sys.executable


def _plan(folder: Path, a: str, b: str, rounds: int = 3, timeout: float = 60.0) -> None:
    settle_plan(folder, generic_plan(folder, [f"A={a}", f"B={b}"], rounds, timeout))


def test_schedule_alternates_the_order_by_round() -> None:
    plan = {"variants": {"A": {}, "B": {}}, "jobs": ["jsd", "tvd"], "rounds": 3}
    assert [s.name for s in schedule(plan)] == [
        "r1-A-jsd", "r1-B-jsd", "r1-A-tvd", "r1-B-tvd",
        "r2-B-jsd", "r2-A-jsd", "r2-B-tvd", "r2-A-tvd",
        "r3-A-jsd", "r3-B-jsd", "r3-A-tvd", "r3-B-tvd",
    ]  # fmt: skip


def test_state_file_resumes_and_time_limit_ends_a_run(tmp_path: Path) -> None:
    folder = tmp_path / "exp"
    slow = f"{PY} -c 'import time; time.sleep(30)'"
    _plan(
        folder, f"{PY} -c 'print(1)'", slow, rounds=2, timeout=3.0
    )  # a loaded machine starts Python in > 0.5 s
    assert execute(folder, budget_s=0) == {"runs": {}}  # a spent budget starts nothing
    first = execute(folder, budget_s=0.01)  # the budget is checked before each run
    assert list(first["runs"]) == ["r1-A-main"]
    # a later call (the plan resumed from the folder) does the rest, in order
    settle_plan(folder, None)
    state = execute(folder)
    assert list(state["runs"]) == ["r1-A-main", "r1-B-main", "r2-B-main", "r2-A-main"]
    assert state["runs"]["r1-B-main"]["status"] == "timed out after 3 s"
    assert state["runs"]["r2-A-main"]["status"] == "passed"
    assert read_json(folder / STATE_FILE) == state
    assert (folder / "runs" / "r2-A-main" / "stdout.txt").read_text() == "1\n"
    env = json.loads((folder / "runs" / "r2-A-main" / "env.json").read_text())
    assert env["python"] and "gpus" in env and "packages" in env


def test_another_plan_in_the_same_folder_is_refused(tmp_path: Path) -> None:
    _plan(tmp_path, "true", "false")
    with pytest.raises(ConfigError, match="another experiment"):
        _plan(tmp_path, "true", "true")
    with pytest.raises(ConfigError, match="expected NAME="):
        generic_plan(tmp_path, ["A=true", "nonsense"], 3, 1.0)


def _sql(lake: Path, query: str) -> list[tuple[object, ...]]:
    result = CliRunner().invoke(app, ["sql", query, "--lake", str(lake), "--format", "csv"])
    assert result.exit_code == 0, result.output
    return [tuple(line.split(",")) for line in result.stdout.strip().splitlines()[1:]]


def test_cli_runs_imports_and_flags_the_planted_slowdown(tmp_path: Path) -> None:
    folder, lake = tmp_path / "exp", tmp_path / "lake"
    fake = f"{PY} {FAKE} --seed 7"
    args = ["bench", "run", "--variant", f"A={fake}", "--variant", f"B={fake} --slowdown 1.2",
            "--rounds", "3", "--dir", str(folder), "--lake", str(lake)]  # fmt: skip
    dry = CliRunner().invoke(app, [*args, "--dry-run"])
    assert dry.exit_code == 0
    assert "r2-B-main                    pending" in dry.stdout
    assert not (folder / STATE_FILE).exists()
    result = CliRunner().invoke(app, [*args, "--format", "csv"])
    assert result.exit_code == 0, result.output
    assert "[6/6] round 3 B main" in result.stderr
    rows = list(csv_rows(result.stdout))
    flagged = {(r["kernel"], r["series"], r["shape"]) for r in rows if r["verdict"] == "regression"}
    assert ("fake_planted", "latency", "T4096-hidden512-fp32") in flagged
    assert {(r["from_version"], r["to_version"]) for r in rows} == {("A", "B")}
    # each variant one code over 3 invocations (rounds), 8 rows a run
    labels = _sql(
        lake,
        "SELECT labels['kindex_code'], count(DISTINCT labels['kindex_invocation']),"
        " count(DISTINCT labels['kindex_round']), count(*) FROM runs GROUP BY 1 ORDER BY 1",
    )
    assert labels == [("exp_a", "3", "3", "24"), ("exp_b", "3", "3", "24")]


def csv_rows(text: str) -> list[dict[str, str]]:
    import csv

    return list(csv.DictReader(io.StringIO(text)))


FAKE_SCRIPT = """
import csv, os, time, liger_kernel
rows = [["kernel_name", "kernel_provider", "kernel_operation_mode", "metric_name",
         "metric_unit", "x_name", "x_label", "x_value", "y_value_50", "y_value_20",
         "y_value_80", "extra_benchmark_config_str", "gpu_name", "timestamp", "liger_version"]]
ms = 1.0 if liger_kernel.__version__ == "0.0.1" else 1.5
for provider, value in (("liger", ms), ("torch", 2.0)):
    rows.append(["fake", provider, "forward", "speed", "ms", "T", "tokens", "1024", str(value),
                 str(value), str(value), '{"dtype": "torch.float32"}', "NVIDIA H200",
                 time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()), liger_kernel.__version__])
data = os.path.join(os.path.dirname(__file__), "..", "data")
os.makedirs(data, exist_ok=True)
with open(os.path.join(data, "all_benchmark_data.csv"), "w", newline="") as f:
    csv.writer(f).writerows(rows)
"""


def _fake_liger(tmp: Path) -> tuple[Path, Path]:
    sdist, wheels = tmp / "liger_kernel-0.0.2.tar.gz", tmp / "wheels"
    with tarfile.open(sdist, "w:gz") as tar:
        body = FAKE_SCRIPT.encode()
        info = tarfile.TarInfo("liger_kernel-0.0.2/benchmark/scripts/benchmark_fake.py")
        info.size = len(body)
        tar.addfile(info, io.BytesIO(body))
    wheels.mkdir()
    for version in ("0.0.1", "0.0.2"):
        with zipfile.ZipFile(wheels / f"liger_kernel-{version}-py3-none-any.whl", "w") as whl:
            whl.writestr("liger_kernel/__init__.py", f"__version__ = {version!r}\n")
    return sdist, wheels


def test_liger_emitted_runner_runs_without_kindex_and_imports(tmp_path: Path) -> None:
    sdist, wheels = _fake_liger(tmp_path)
    folder, lake = tmp_path / "h200", tmp_path / "lake"
    emitted = CliRunner().invoke(app, [
        "bench", "liger", "--versions", "0.0.2,0.0.1", "--kernels", "fake", "--rounds", "2",
        "--sdist", str(sdist), "--wheels", str(wheels), "--dir", str(folder), "--emit-runner",
    ])  # fmt: skip
    assert emitted.exit_code == 0, emitted.output
    assert (folder / "site-0.0.1" / "liger_kernel" / "__init__.py").is_file()
    # -I -S: no site-packages, no PYTHONPATH: kindex and its dependencies cannot be imported
    # run as on the GPU machine: in the folder, which is named relatively
    runner = [PY, "-I", "-S", "kindex_bench_runner.py", "."]
    done = subprocess.run(
        runner, capture_output=True, text=True, timeout=120, check=False, cwd=folder
    )
    assert done.returncode == 0, done.stderr
    assert "all runs done" in done.stderr
    imported = CliRunner().invoke(
        app, ["bench", "import", str(folder), "--lake", str(lake), "--format", "csv"]
    )
    assert imported.exit_code == 0, imported.output
    rows = csv_rows(imported.stdout)
    latency = [r for r in rows if r["series"] == "latency"]
    assert [(r["from_version"], r["to_version"], r["ratio"]) for r in latency] == [
        ("0.0.1", "0.0.2", "1.5")
    ]
    got = _sql(lake, "SELECT DISTINCT version, labels['kindex_wheel_sha256'] IS NOT NULL, "
               "labels['kindex_round'] FROM runs ORDER BY ALL")  # fmt: skip
    assert got == [("0.0.1", "True", "1"), ("0.0.1", "True", "2"),
                   ("0.0.2", "True", "1"), ("0.0.2", "True", "2")]  # fmt: skip


def test_import_of_a_folder_without_csv_rows_says_so(tmp_path: Path) -> None:
    _plan(tmp_path, "true", "true", rounds=1)
    execute(tmp_path)
    result = CliRunner().invoke(
        app, ["bench", "import", str(tmp_path), "--lake", str(tmp_path / "l")]
    )
    assert result.exit_code == 6
    assert "no run left a Liger-format CSV row" in result.stderr
    assert "Traceback" not in result.output


def test_duckdb_is_not_needed_by_the_emitted_runner() -> None:
    text = Path(sys.modules["kindex_olap.experiment.standalone"].__file__ or "").read_text()
    imports = {
        line.split()[1] for line in text.splitlines() if line.startswith(("import ", "from "))
    }
    assert imports <= {"__future__", "argparse", "json", "os", "platform", "shutil",
                       "subprocess", "sys", "time", "dataclasses", "pathlib", "typing"}  # fmt: skip
    assert duckdb  # the lake side does need it


def test_repeats_alternate_within_and_across_rounds() -> None:
    plan = {"variants": {"A": {}, "B": {}}, "jobs": ["jsd"], "rounds": 2, "repeat": 2}
    assert [s.name for s in schedule(plan)] == [
        "r1-A-jsd", "r1-B-jsd", "r1-B-jsd-2", "r1-A-jsd-2",
        "r2-B-jsd", "r2-A-jsd", "r2-A-jsd-2", "r2-B-jsd-2",
    ]  # fmt: skip
    assert {s.group for s in schedule(plan) if s.round == 1 and s.variant == "B"} == {"r1-B-jsd"}


# a Liger-format writer whose liger row is slow in the first repeat of each round and fast in
# the second (a host that slowed down during one run), the torch row the other way round
REPEAT_SCRIPT = """
import csv, os, sys, time
k = os.environ["KINDEX_BENCH_OUT"].rsplit("-", 1)[-1]
first = not k.isdigit()
liger = (3.0 if first else 1.0) * (1.5 if sys.argv[1] == "B" else 1.0)
rows = [["kernel_name", "kernel_provider", "kernel_operation_mode", "metric_name",
         "metric_unit", "x_name", "x_label", "x_value", "y_value_50", "y_value_20",
         "y_value_80", "extra_benchmark_config_str", "gpu_name", "timestamp", "liger_version"]]
for provider, value in (("liger", liger), ("torch", 2.0 if first else 4.0)):
    rows.append(["fake_rep", provider, "forward", "speed", "ms", "T", "tokens", "1024",
                 str(value), str(value), str(value), '{"dtype": "torch.float32"}',
                 "NVIDIA H200", time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()), "0"])
with open(os.path.join(os.environ["KINDEX_BENCH_OUT"], "rows.csv"), "w", newline="") as f:
    csv.writer(f).writerows(rows)
"""


def test_repeats_import_the_fastest_run_of_each_row(tmp_path: Path) -> None:
    from kindex_olap.experiment.collect import collect

    script = tmp_path / "rep.py"
    script.write_text(REPEAT_SCRIPT)
    folder = tmp_path / "exp"
    plan = generic_plan(folder, [f"A={PY} {script} A", f"B={PY} {script} B"], 2, 60.0, repeat=2)
    settle_plan(folder, plan)
    state = execute(folder)
    assert len(state["runs"]) == 8 and {r["group"] for r in state["runs"].values()} == {
        "r1-A-main", "r1-B-main", "r2-A-main", "r2-B-main"}  # fmt: skip
    collected = collect(folder)
    assert (collected.bundles, collected.slower_repeats) == (8, 8)
    assert "8 slower repeat row(s) left out" in collected.summary()
    lake = tmp_path / "lake"
    result = CliRunner().invoke(app, ["bench", "import", str(folder), "--lake", str(lake)])
    assert result.exit_code == 0, result.output
    got = _sql(lake, "SELECT labels['kindex_invocation'], labels['kindex_repeats'], "
               "display_name, value FROM runs ORDER BY ALL")  # fmt: skip
    # liger: the second repeat's 1.0 ms (A) and 1.5 ms (B); torch: the first repeat's 2.0 ms;
    # each row keeps the invocation of the run it came from
    assert got == [
        ("exp_r1_a_main", "2", "PyTorch", "2000000.0"), ("exp_r1_a_main_2", "2", "Liger", "1000000.0"),
        ("exp_r1_b_main", "2", "PyTorch", "2000000.0"), ("exp_r1_b_main_2", "2", "Liger", "1500000.0"),
        ("exp_r2_a_main", "2", "PyTorch", "2000000.0"), ("exp_r2_a_main_2", "2", "Liger", "1000000.0"),
        ("exp_r2_b_main", "2", "PyTorch", "2000000.0"), ("exp_r2_b_main_2", "2", "Liger", "1500000.0"),
    ]  # fmt: skip


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="pinning needs Linux")
def test_pinned_runs_record_the_cpu_and_its_probe(tmp_path: Path) -> None:
    folder = tmp_path / "exp"
    code = "import os; print(sorted(os.sched_getaffinity(0)))"
    plan = generic_plan(folder, [f"A={PY} -c '{code}'", f"B={PY} -c '{code}'"], 1, 60.0,
                        pin_cpu=True)  # fmt: skip
    settle_plan(folder, plan)
    allowed = os.sched_getaffinity(0)
    record = execute(folder)["runs"]["r1-A-main"]
    cpu = record["cpu"]["cpu"]
    assert cpu in allowed and os.sched_getaffinity(0) == allowed  # the runner's own is restored
    assert (folder / "runs" / "r1-A-main" / "stdout.txt").read_text() == f"[{cpu}]\n"
    assert record["cpu"]["probe_ms_before"] > 0 and record["cpu"]["probe_ms_after"] > 0
    env = json.loads((folder / "runs" / "r1-A-main" / "env.json").read_text())
    assert set(env["cpu_probe_ms"]) == {str(c) for c in allowed}
    assert env["cpu_probe_ms"][str(cpu)] == min(env["cpu_probe_ms"].values())
