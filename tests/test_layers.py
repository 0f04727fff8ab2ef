"""The layers (kindex_olap.layers): the noise model's inputs and floors stored per lake commit.

On Liger's real history: layers built over several ingests equal one ingest's row for row, also
after a kill between the layers' commit and the runs' commit; views over the layers return the
same rows as the views computed live; a lake written before the layers is read live and gets
them from `kindex migrate` or its next ingest; --as-of reads the layers of the commit it names.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from realdata import KERNELINDEX_SLICES
from typer.testing import CliRunner

from kindex_olap.cli.app import app
from kindex_olap.ingestion.pipeline import ingest
from kindex_olap.lake.store import LAYERS, Lake
from kindex_olap.query.compile import Options
from kindex_olap.query.engine import connect
from kindex_olap.query.run import run_query

pytestmark = pytest.mark.slow

# views computed from the layers, and one question per verb that reads them
VIEWS = (
    "run_code", "replicate_pairs", "replicate_spread", "noise_model", "run_noise",
    "comparable_pairs", "speedups", "memory_ratios",
)  # fmt: skip
QUESTIONS = (
    "speedup jsd",  # read from layer_speedups, as is the next
    "speedup jsd h100 vocab>4096",
    "speedup jsd liger vs torch",  # a named baseline: computed from the stored pairs
    "summary",  # read from layer_summary, as are the next two
    "summary jsd h100",
    "summary liger",
    "summary jsd vocab>4096",  # a shape filter: bootstrapped from the stored pairs
    "memory jsd",
    "noise",
    "history jsd h100 liger",
    "regressions",
    "changes",
)


# each layer's rows as a rebuild gives them: less when their runs were ingested
COMPARED = {t: "* EXCLUDE (to_ingested)" if t == "layer_steps" else "*" for t in LAYERS}


def layer_rows(lake: Path, as_of: str | None = None) -> dict[str, list[tuple[object, ...]]]:
    with connect(lake, as_of=as_of) as con:
        return {
            t: con.execute(f"SELECT {COMPARED[t]} FROM {t} ORDER BY ALL").fetchall() for t in LAYERS
        }


def differences(
    a: dict[str, list[tuple[object, ...]]], b: dict[str, list[tuple[object, ...]]]
) -> list[str]:
    """How two lakes' layers differ, a line per layer (empty: row for row the same): pytest's
    own diff of tens of thousands of rows ran for minutes."""
    out = []
    for table in sorted(set(a) | set(b)):
        left, right = a.get(table, []), b.get(table, [])
        if left != right:
            pairs = enumerate(zip(left, right, strict=False))
            first = next((i for i, (x, y) in pairs if x != y), min(len(left), len(right)))
            out.append(f"{table}: {len(left)} and {len(right)} rows, first difference at {first}")
    return out


def batches(raw: Path, root: Path, parts: int) -> list[Path]:
    """The raw bundle files of a lake in `parts` folders (hard links), the dimension and
    provenance files in the first."""
    files = sorted(p for p in raw.iterdir() if p.is_file())
    shared = [p for p in files if p.name.startswith("_")]
    bundles = [p for p in files if not p.name.startswith("_")]
    folders = []
    for number in range(parts):
        folder = root / f"batch{number}"
        folder.mkdir(parents=True)
        chosen = bundles[number::parts] + (shared if number == 0 else [])
        for path in chosen:
            os.link(path, folder / path.name)
        folders.append(folder)
    return folders


def test_layers_after_several_ingests_equal_one_ingest(
    liger_history_lake: Path, tmp_path: Path
) -> None:
    lake = tmp_path / "lake"
    for folder in batches(liger_history_lake.parent / "raw", tmp_path, 3):
        ingest([folder], lake)
    assert Lake(lake).snapshot().has_layers
    assert not differences(layer_rows(lake), layer_rows(liger_history_lake))
    assert len(layer_rows(lake)["layer_replicate_pairs"]) > 500


def split_by(raw: Path, root: Path, parts: int, key: Callable[[dict[str, Any]], str]) -> list[Path]:
    """The raw bundle files of a lake in `parts` folders of whole groups by `key` of a bundle
    (hard links), the dimension and provenance files in the first."""
    files = sorted(p for p in raw.iterdir() if p.is_file())
    groups: dict[str, list[Path]] = {}
    for path in files:
        if not path.name.startswith("_"):
            bundle = json.loads(path.read_text().split("\n\n", 1)[1])
            groups.setdefault(key(bundle), []).append(path)
    names = sorted(groups)
    folders = []
    for number in range(parts):
        folder = root / f"part{number}"
        folder.mkdir(parents=True)
        chosen = [p for name in names[number::parts] for p in groups[name]]
        chosen += [p for p in files if p.name.startswith("_")] if number == 0 else []
        for path in chosen:
            os.link(path, folder / path.name)
        folders.append(folder)
    return folders


def by_environment(raw: Path, root: Path, parts: int) -> list[Path]:
    """Folders of whole environments (split_by): each later ingest touches only its own
    environments, and moves the floors that pool every environment's pairs."""
    return split_by(raw, root, parts, lambda b: str(b["environment"]["metadata"]["name"]))


def test_layers_of_ingests_of_some_environments_equal_one_ingest(
    liger_history_lake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kindex_olap.layers import build

    reports: list[build.LayerReport] = []
    update = build.update
    monkeypatch.setattr(build, "update", lambda tx: reports.append(update(tx)) or reports[-1])
    lake = tmp_path / "lake"
    for folder in by_environment(liger_history_lake.parent / "raw", tmp_path, 3):
        assert ingest([folder], lake).runs_added
    # the later ingests updated their own environments (and those whose floors moved) only
    assert reports[0].environments is None and reports[1].environments and reports[2].environments
    assert not differences(layer_rows(lake), layer_rows(liger_history_lake))


def by_kernel(raw: Path, root: Path, parts: int) -> list[Path]:
    """Folders of whole kernels (split_by): each later ingest adds runs of its own kernels to
    environments that hold others (a CI run of a few kernels)."""
    return split_by(
        raw, root, parts, lambda b: str(b["run"]["spec"]["sourceNative"]["benchmark"]).split("/")[0]
    )


def recorded_touches(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """What each layer update of an ingest found it touched (kindex_olap.layers.cells.Touched),
    in order, from now on."""
    from kindex_olap.layers import build, cells

    found: list[cells.Touched] = []
    touched = cells.touched

    def recorded(*args: Any, **kwargs: Any) -> cells.Touched:
        found.append(touched(*args, **kwargs))
        return found[-1]

    monkeypatch.setattr(build, "touched_cells", recorded)
    return found


def test_layers_of_ingests_of_some_kernels_equal_one_ingest(
    liger_history_lake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Later ingests recompute the kernels they add runs of and keep the others' stored rows
    (kindex_olap.layers.cells), in groups of a kernel too: the layers of one ingest."""
    from kindex_olap.layers import build, points

    touches = recorded_touches(monkeypatch)
    lake = tmp_path / "lake"
    for number, folder in enumerate(by_kernel(liger_history_lake.parent / "raw", tmp_path, 3)):
        if number == 2:  # a kernel a group, as in an environment past GROUP_RUNS
            monkeypatch.setattr(build, "GROUP_RUNS", 1)
            monkeypatch.setattr(build, "STEP_TEST_RUNS", 1)
            monkeypatch.setattr(points, "POINT_RUNS", 1)
        assert ingest([folder], lake).runs_added
    # both later ingests kept other kernels' rows in some environment
    assert len(touches) == 2 and all(t.operations for t in touches)
    assert not differences(layer_rows(lake), layer_rows(liger_history_lake))


def test_a_ci_run_of_one_kernel_recomputes_that_kernel_as_a_rebuild(
    liger_history_lake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CI run of one kernel (every series of it measured once more by a new version, later:
    no replicate, so no floor moves) recomputes that kernel alone in each environment, its step
    tests, speedups and summary too, and keeps the rest: the layers of a full rebuild."""
    import kindex_olap.schema
    from kindex_olap.layers import build

    narrowed: list[dict[str, list[str]]] = []
    whole = build.write_whole

    def recorded(con: Any, tx: Any, environments: Any, kernels: Any = None) -> Any:
        narrowed.append(kernels or {})
        return whole(con, tx, environments, kernels)

    lake = tmp_path / "lake"
    shutil.copytree(liger_history_lake, lake)
    ci = tmp_path / "ci.jsonl"
    with ci.open("w") as bundles:
        for path in sorted((liger_history_lake.parent / "raw").glob("liger_*")):
            bundle = json.loads(path.read_text().split("\n\n", 1)[1])
            run = bundle["run"]
            if not run["spec"]["sourceNative"]["benchmark"].startswith("jsd/"):
                continue
            run["metadata"]["name"] += "-ci"
            run["metadata"]["labels"]["liger_version"] = "99.0.0"
            run["spec"]["observedAt"] = "2030-01-01T00:00:00.000Z"
            bundles.write(json.dumps(bundle) + "\n")
    monkeypatch.setattr(build, "write_whole", recorded)
    assert ingest([ci], lake).runs_added > 100
    assert narrowed and narrowed[0] and all(k == ["jsd"] for k in narrowed[0].values())
    after = layer_rows(lake)
    monkeypatch.setattr(kindex_olap.schema, "LAYER_RULES", kindex_olap.schema.LAYER_RULES + 1)
    out = CliRunner().invoke(app, ["migrate", "--lake", str(lake)])  # every layer again
    assert out.exit_code == 0 and "layers built" in out.stderr, out.output
    assert not differences(after, layer_rows(lake))


def test_kernelindex_runs_of_some_kernels_at_a_time_equal_one_ingest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A KernelIndex export (whose runs' labels and operations differ, in case: the pairs and
    points key kernels by operation, the replicate layers by label) ingested with its runs of
    every other kernel first, then the rest into the same environments: the layers of one
    ingest."""
    import zstandard

    from kindex_olap.importers.kernelindex.convert import import_kernelindex

    raw = tmp_path / "raw"
    import_kernelindex(str(KERNELINDEX_SLICES[0]), raw_dir=raw, ingest=False)
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    for path in sorted(raw.iterdir()):
        if not path.name.startswith("runs-"):
            os.link(path, first / path.name)
            continue
        text = zstandard.ZstdDecompressor().stream_reader(path.open("rb")).read().decode()
        halves: tuple[list[str], list[str]] = ([], [])
        benchmarks = [
            json.loads(line)["run"]["spec"]["sourceNative"]["benchmark"]
            for line in text.splitlines()
        ]
        kernels = sorted(set(benchmarks))
        for line, benchmark in zip(text.splitlines(), benchmarks, strict=True):
            halves[kernels.index(benchmark) % 2].append(line)
        for folder, lines in zip((first, second), halves, strict=True):
            (folder / path.name.removesuffix(".zst")).write_text("\n".join(lines) + "\n")
    touches = recorded_touches(monkeypatch)
    one, lake = tmp_path / "one", tmp_path / "lake"
    assert ingest([raw], one).runs_added
    assert ingest([first], lake).runs_added and ingest([second], lake).runs_added
    # the second ingest kept other kernels' rows
    assert len(touches) == 1 and touches[0].labels
    assert not differences(layer_rows(lake), layer_rows(one))


def test_layers_computed_a_group_of_runs_at_a_time_equal_one_computation(
    liger_history_lake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every kernel of every environment computed alone (what bounds a large lake's memory), in
    a first ingest (a full build) and in ingests that touch some environments: the layers of
    one computation."""
    from kindex_olap.layers import build, groups, points

    seen: list[groups.Group] = []

    def recorded(*args: object, **kwargs: object) -> list[groups.Group]:
        found = groups.groups(*args, **kwargs)  # type: ignore[arg-type]
        seen.extend(found)
        return found

    monkeypatch.setattr(build, "GROUP_RUNS", 1)
    monkeypatch.setattr(build, "STEP_TEST_RUNS", 1)
    monkeypatch.setattr(points, "POINT_RUNS", 1)
    monkeypatch.setattr(build, "groups", recorded)
    monkeypatch.setattr(points, "groups", recorded)
    lake = tmp_path / "lake"
    for folder in by_environment(liger_history_lake.parent / "raw", tmp_path, 3):
        assert ingest([folder], lake).runs_added
    assert len(seen) > 100
    assert all(g.environments and len(g.environments) == 1 for g in seen)
    assert all(g.kernels and len(g.kernels) == 1 for g in seen)
    assert not differences(layer_rows(lake), layer_rows(liger_history_lake))


@pytest.mark.parametrize("most", [1, 500, 3000, 10**9])
@pytest.mark.parametrize("as_run_labels", [False, True])
def test_groups_hold_every_run_once(
    liger_history_lake: Path, most: int, as_run_labels: bool
) -> None:
    from kindex_olap.layers.groups import _LABEL, _OPERATION, EVERYTHING, groups

    with connect(liger_history_lake) as con:
        counts = {
            (e, k): n
            for e, k, n in con.execute(
                _LABEL if as_run_labels else _OPERATION, [None, None]
            ).fetchall()
        }
        found = groups(con, None, most, as_run_labels)
        some = sorted({e for e, _ in counts})[::2]
        assert {
            e for g in groups(con, some, most, as_run_labels) for e in g.environments or []
        } == set(some)
    assert EVERYTHING not in found
    held: list[tuple[str, str]] = []
    for group in found:
        assert group.environments is not None
        keys = [
            key
            for key in counts
            if key[0] in group.environments and (group.kernels is None or key[1] in group.kernels)
        ]
        held += keys
        runs = sum(counts[key] for key in keys)
        # at most `most` runs, or an environment's one kernel, or one whole small environment
        assert (
            runs <= most
            or len(keys) == 1
            or (group.kernels is None and len(group.environments) == 1)
        )
    assert sorted(held) == sorted(counts)  # every environment's every kernel, once
    assert (len(found) == 1) == (most == 10**9)


def test_views_over_layers_equal_the_views_computed_live(liger_history_lake: Path) -> None:
    assert Lake(liger_history_lake).snapshot().has_layers
    with connect(liger_history_lake) as stored, connect(liger_history_lake, live=True) as live:
        for view in VIEWS:
            sql = f"SELECT * FROM {view} ORDER BY ALL"
            assert stored.execute(sql).fetchall() == live.execute(sql).fetchall(), view
        for question in QUESTIONS:
            a = run_query(question, con=stored, options=Options())
            b = run_query(question, con=live, options=Options())
            assert a.rows, question
            assert (a.columns, rounded(a.rows)) == (b.columns, rounded(b.rows)), question


def rounded(rows: list[tuple[object, ...]]) -> list[tuple[object, ...]]:
    """Rows with floats to 12 significant digits: a geometric mean's sum is taken in whatever
    order DuckDB's threads finish (the last digit of summary's means differs run to run)."""
    return [tuple(float(f"{v:.12g}") if isinstance(v, float) else v for v in r) for r in rows]


def test_a_kill_between_the_layers_and_the_runs_commit(
    liger_history_lake: Path, tmp_path: Path
) -> None:
    first, second = batches(liger_history_lake.parent / "raw", tmp_path, 2)
    lake = tmp_path / "lake"
    ingest([first], lake)
    before = layer_rows(lake)
    killed = subprocess.run(
        [sys.executable, "-m", "kindex_olap", "ingest", str(second), "--lake", str(lake), "-q"],
        env={**os.environ, "KINDEX_CRASHPOINT": "commit:runs"},
        capture_output=True,
    )
    assert killed.returncode == -9  # killed after every layer committed, before runs
    assert all(Lake(lake).newest_log_version(t) == 2 for t in LAYERS)
    assert not differences(layer_rows(lake), before)  # readers still read lake commit 1's layers
    ingest([second], lake)  # restores the layers, then writes them again
    whole = tmp_path / "whole"
    ingest([first, second], whole)
    assert not differences(layer_rows(lake), layer_rows(whole))


def test_as_of_reads_the_layers_of_the_commit_it_names(
    liger_history_lake: Path, tmp_path: Path
) -> None:
    first, second = batches(liger_history_lake.parent / "raw", tmp_path, 2)
    lake, alone = tmp_path / "lake", tmp_path / "alone"
    ingest([first], lake)
    ingest([second], lake)
    ingest([first], alone)
    assert not differences(layer_rows(lake, as_of="1"), layer_rows(alone))
    assert differences(layer_rows(lake, as_of="2"), layer_rows(alone))


def test_a_lake_written_before_the_layers(
    liger_history_lake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = batches(liger_history_lake.parent / "raw", tmp_path, 2)
    lake = tmp_path / "lake"
    with monkeypatch.context() as patch:  # an older kindex: no layers written
        patch.setattr("kindex_olap.layers.build.needs_update", lambda tx: False)
        ingest([first, second], lake)
    assert not Lake(lake).snapshot().has_layers
    old = run_query("speedup jsd h100", lake)  # read live, and says so
    assert old.rows
    assert [c for c in old.caveats if "stored no verdicts" in c and "kindex migrate" in c]
    out = CliRunner().invoke(app, ["migrate", "--lake", str(lake)])
    assert out.exit_code == 0, out.output
    assert "layers built" in out.stderr
    assert Lake(lake).snapshot().has_layers and Lake(lake).snapshot().id == 2
    assert not differences(layer_rows(lake), layer_rows(liger_history_lake))
    new = run_query("speedup jsd h100", lake)
    assert (new.columns, new.rows) == (old.columns, old.rows)
    assert not new.caveats
    again = CliRunner().invoke(app, ["migrate", "--lake", str(lake)])
    assert again.exit_code == 0 and "up to date" in again.stderr


def test_the_next_ingest_gives_an_older_lake_its_layers(
    liger_history_lake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = batches(liger_history_lake.parent / "raw", tmp_path, 2)
    lake = tmp_path / "lake"
    with monkeypatch.context() as patch:
        patch.setattr("kindex_olap.layers.build.needs_update", lambda tx: False)
        ingest([first], lake)
    ingest([second], lake)
    assert not differences(layer_rows(lake), layer_rows(liger_history_lake))


def test_layers_computed_by_other_rules_are_read_live_until_rebuilt(
    liger_history_lake: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A newer kindex whose rules changed (schema.LAYER_RULES) reads an older lake commit's
    layers live, and `kindex migrate` or the next ingest computes them again, whole."""
    import crafted

    import kindex_olap.schema

    lake = tmp_path / "lake"
    shutil.copytree(liger_history_lake, lake)
    stored = layer_rows(lake)
    answer = run_query("speedup jsd h100", lake)
    assert Lake(lake).snapshot().layer_rules == kindex_olap.schema.LAYER_RULES
    newer = kindex_olap.schema.LAYER_RULES + 1
    monkeypatch.setattr(kindex_olap.schema, "LAYER_RULES", newer)
    assert not Lake(lake).snapshot().has_layers
    live = run_query("speedup jsd h100", lake)
    assert (live.columns, live.rows) == (answer.columns, answer.rows)
    assert not answer.caveats  # said only while the answer is computed live
    assert [c for c in live.caveats if f"older rules ({newer - 1}, not {newer})" in c]
    assert run_query("regressions jsd", lake).caveats == live.caveats
    with kindex_olap.Lake(lake) as session, pytest.warns(UserWarning, match="older rules"):
        assert not session.speedups("jsd h100").is_empty()
    for args in (["query", "regressions jsd"], ["check"]):  # printed, rows or none
        said = CliRunner().invoke(app, [*args, "--lake", str(lake)])
        assert "older rules" in said.stderr and "kindex migrate" in said.stderr, said.output
    copy = tmp_path / "copy"
    shutil.copytree(lake, copy)
    out = CliRunner().invoke(app, ["migrate", "--lake", str(lake)])
    assert out.exit_code == 0 and "layers built" in out.stderr, out.output
    snapshot = Lake(lake).snapshot()
    assert snapshot.has_layers and snapshot.layer_rules == newer
    assert not differences(layer_rows(lake), stored)
    # the next ingest rebuilds them whole, not only its own runs' environments
    import kindex_olap.layers.build as build

    reports: list[build.LayerReport] = []
    update = build.update
    monkeypatch.setattr(build, "update", lambda tx: reports.append(update(tx)) or reports[-1])
    crafted.ingest_bundles(tmp_path / "new", [crafted.run(observed="2030-01-01T00:00:00Z")], copy)
    assert [r.environments for r in reports] == [None]
    assert Lake(copy).snapshot().has_layers


def test_a_copy_keeps_its_layers(liger_history_lake: Path, tmp_path: Path) -> None:
    """The layers' partition folders (a ':' in each digest) survive a copy and a compaction."""
    lake = tmp_path / "lake"
    shutil.copytree(liger_history_lake, lake)
    before = layer_rows(lake)
    out = CliRunner().invoke(app, ["compact", "--lake", str(lake)])
    assert out.exit_code == 0, out.output
    assert not differences(layer_rows(lake), before)
    snapshot = Lake(lake).snapshot()
    for layer in LAYERS:  # the Delta log agrees with what kindex reads
        assert set(Lake(lake).delta_table(layer).file_uris()) == set(snapshot.files(layer))


def test_rows_that_describe_runs_update_their_layers(
    liger_history_lake: Path, tmp_path: Path
) -> None:
    """Dimension and provenance rows that arrive after their runs (no run added) recompute the
    environments of the runs they describe: names and shapes of the pairs, code of the runs."""
    raw = liger_history_lake.parent / "raw"
    runs_first, described_later = tmp_path / "runs", tmp_path / "described"
    runs_first.mkdir()
    described_later.mkdir()
    for path in sorted(p for p in raw.iterdir() if p.is_file()):
        os.link(path, (described_later if path.name.startswith("_") else runs_first) / path.name)
    lake = tmp_path / "lake"
    ingest([runs_first], lake)
    before = layer_rows(lake)
    report = ingest([described_later], lake)
    assert report.runs_added == 0
    assert differences(layer_rows(lake), before)
    assert not differences(layer_rows(lake), layer_rows(liger_history_lake))


def test_points_follow_a_version_order_that_moves(tmp_path: Path) -> None:
    """Labels that are not PEP 440 versions are ordered by their first appearance in the whole
    lake: runs of one GPU that show a label earlier than any seen reorder the points of every
    other GPU's series too, and the stored change points of the environments the ingest did
    not touch are recomputed (layers equal one ingest of everything)."""
    import csv

    from realdata import LIGER_HISTORY

    from kindex_olap.importers.liger.convert import import_liger

    with LIGER_HISTORY.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    # six builds of two kernels on the H100 (series of six points: change points are tested),
    # labels that are not PEP 440 versions, the last three 50 % slower
    h100 = [
        dict(r, liger_version=f"build-{n}", timestamp=f"2025-0{n}-01 00:00:00",
             y_value_50=str(float(r["y_value_50"]) * (1.5 if n > 3 else 1.0)))
        for n in range(1, 7) for r in rows
        if r["gpu_name"] == "NVIDIA H100 80GB HBM3" and r["kernel_name"] == "kto_loss"
    ]  # fmt: skip
    newest = "build-6"
    a100 = [dict(r, liger_version=newest, timestamp="2024-01-02 00:00:00") for r in rows
            if r["gpu_name"] == "NVIDIA A100-SXM4-80GB"][:200]  # fmt: skip
    raws = []
    for name, chosen in (("h100", h100), ("a100", a100)):
        path = tmp_path / f"{name}.csv"
        with path.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(chosen)
        import_liger(str(path), raw_dir=tmp_path / f"raw-{name}")
        raws.append(tmp_path / f"raw-{name}")
    lake, whole = tmp_path / "lake", tmp_path / "whole"
    ingest([raws[0]], lake)
    with connect(lake) as con:
        before = con.execute("SELECT count(*) FROM layer_points WHERE runs > 0").fetchall()
        tested = con.execute(
            "SELECT count(*) FROM layer_points WHERE quiet_latency_pvalue IS NOT NULL "
            "OR cp_latency_pvalue IS NOT NULL"
        ).fetchall()
    assert before[0][0] > 100 and tested[0][0] > 0  # series long enough to be tested
    ingest([raws[1]], lake)  # the A100's runs show the newest label first
    ingest(raws, whole)
    assert not differences(layer_rows(lake), layer_rows(whole))
    for question in ("changes", "history kto_loss"):
        a, b = run_query(question, lake), run_query(question, whole)
        assert a.rows and (a.columns, a.rows) == (b.columns, b.rows), question


def test_stored_steps_answer_every_rule_as_the_live_analysis(liger_history_lake: Path) -> None:
    """The step verbs read the lake commit's stored steps (layer_steps) and judge them at read
    time: under the default rules, a lower and a higher threshold, a per-kernel threshold and
    another q level, `changes`, `regressions` and `improvements` (whole lake and filtered) give
    the rows, q-values, verdicts and notes of the whole lake's live analysis."""
    from kindex_olap.query.gate import GateFile, rules_for
    from kindex_olap.query.history import HistoryOptions, answer

    with connect(liger_history_lake) as stored, connect(liger_history_lake, live=True) as live:
        assert stored.execute("SELECT count(*) FROM layer_steps").fetchall()[0][0] > 100
        per_kernel = GateFile(thresholds=(("jsd", 0.3), ("kto_loss", 0.01)))
        rules = [
            rules_for(None, None),
            rules_for(0.02, None),
            rules_for(0.2, 0.05),
            rules_for(None, None, per_kernel),
        ]
        shown = set()
        for rule in rules:
            for verb, clauses, params in (
                ("changes", [], []),
                ("regressions", [], []),
                ("improvements", ["kernel = ?"], ["jsd"]),
                ("changes", ["provider = ?", "pass = ?"], ["liger", "forward"]),
            ):
                options = HistoryOptions(rules=rule)
                a = answer(stored, verb, clauses, params, options)
                b = answer(live, verb, clauses, params, options)
                assert (a.columns, a.rows, a.notes) == (b.columns, b.rows, b.notes), (verb, rule)
                shown.add((verb, len(a.rows)))
        # the rules change what is shown: a test of every rule that shows nothing proves nothing
        assert len({n for _, n in shown}) >= 5 and max(n for _, n in shown) > 20, shown


def test_stored_tests_judge_a_few_series_as_the_whole_lake(liger_history_lake: Path) -> None:
    """A question about some series reads their points and the lake commit's stored tests
    (layer_step_tests) instead of testing every series, and the step verbs read its stored
    steps (layer_steps): for every kernel with a change and six others, `changes KERNEL`,
    `history KERNEL` and a check give the rows, q-values and verdicts the whole lake's live
    analysis gives."""
    from kindex_olap.query.run import run_check

    with connect(liger_history_lake) as stored, connect(liger_history_lake, live=True) as live:
        assert stored.execute("SELECT count(*) FROM layer_step_tests").fetchall()[0][0] > 100
        everything = run_query("changes", con=live, options=Options())
        kernels = run_query("kernels", con=live, options=Options())
        names = [r[kernels.columns.index("kernel")] for r in kernels.rows]
        # every kernel with a change, and six without (each kernel costs both paths' analysis)
        changed = {r[0] for r in everything.rows}
        names = [k for k in names if k in changed] + [k for k in names if k not in changed][:6]
        checked = 0
        for kernel in names:
            some = run_query(f"changes {kernel}", con=stored, options=Options())
            computed = run_query(f"changes {kernel}", con=live, options=Options())
            expected = [r for r in everything.rows if r[0] == kernel]
            assert rounded(some.rows) == rounded(computed.rows), kernel
            assert sorted(map(repr, rounded(some.rows))) == sorted(map(repr, rounded(expected)))
            assert some.diagnostics == computed.diagnostics, kernel
            # every point with the verdicts of the steps into it, flagged or not
            points = run_query(f"history {kernel}", con=stored, options=Options())
            assert rounded(points.rows) == rounded(
                run_query(f"history {kernel}", con=live, options=Options()).rows
            ), kernel
            checked += bool(expected) + bool(points.rows)
        assert len(changed) >= 3 and checked >= 2 * len(changed) + 4
        # every run new, then the runs observed after a date and of versions after one (the
        # stored steps are pruned by the new runs' kernels, environments and earliest date)
        for filters, since in (
            ("", "0"), ("jsd", "0"), ("h100", "0"), ("", "2025-03-01"), ("", "0.5.2"),
        ):  # fmt: skip
            a = run_check(filters, liger_history_lake, since=since, con=stored)
            b = run_check(filters, liger_history_lake, since=since, con=live)
            assert a.tested_steps > (20 if not filters else 0), (filters, since)
            assert rounded(a.steps) == rounded(b.steps), filters
            assert (a.regressions, a.improvements, a.insufficient, a.tested_series) == (
                b.regressions,
                b.improvements,
                b.insufficient,
                b.tested_series,
            ), filters
