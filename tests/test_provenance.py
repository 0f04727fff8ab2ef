"""Provenance beside the runs: the Liger history CSV's commit and main-branch flag become
RunProvenance documents; the run bundles (KernelIndex-identical) do not change."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from kindex_olap.importers.liger.convert import import_liger
from kindex_olap.importers.liger.provenance import PROVENANCE_FILE
from kindex_olap.importers.liger.read import COLUMNS
from kindex_olap.ingestion.pipeline import ingest
from kindex_olap.model.facts import run_identity
from tests.conftest import LIGER_HISTORY, read_seed, rows


def _slice(target: Path, columns: tuple[str, ...] | None, count: int = 400) -> None:
    with LIGER_HISTORY.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        names = columns or tuple(reader.fieldnames or ())
        with target.open("w", newline="", encoding="utf-8") as out:
            writer = csv.DictWriter(out, fieldnames=names, extrasaction="ignore")
            writer.writeheader()
            for i, row in enumerate(reader):
                if i == count:
                    break
                writer.writerow(row)


def test_provenance_sits_beside_unchanged_bundles(tmp_path: Path) -> None:
    _slice(tmp_path / "with.csv", None)
    _slice(tmp_path / "without.csv", COLUMNS)
    import_liger(str(tmp_path / "with.csv"), raw_dir=tmp_path / "a")
    import_liger(str(tmp_path / "without.csv"), raw_dir=tmp_path / "b")
    runs_a = {p.name: p.read_bytes() for p in (tmp_path / "a").glob("*.txt")}
    runs_b = {p.name: p.read_bytes() for p in (tmp_path / "b").glob("*.txt")}
    assert runs_a and runs_a == runs_b  # bundles byte-identical: same identities and digests
    assert not (tmp_path / "b" / PROVENANCE_FILE).exists()

    documents = [json.loads(line) for line in (tmp_path / "a" / PROVENANCE_FILE).open()]
    identities = {run_identity(read_seed(p)[1]["run"]) for p in (tmp_path / "a").glob("*.txt")}
    assert {d["spec"]["runId"] for d in documents} == identities

    lake = tmp_path / "lake"
    ingest([tmp_path / "a"], lake)
    kept = rows(lake, "run_provenance")
    assert len(kept) == len(identities)
    with (tmp_path / "with.csv").open(newline="", encoding="utf-8") as handle:
        source = list(csv.DictReader(handle))
    # rows by commit and branch, as the CSV has them (the rows the importer converted)
    by_commit = {(r["first_seen_commit"], r["on_main_history"] == "1") for r in source}
    assert {(r["git_commit"], r["on_main"]) for r in kept} <= by_commit
    assert {r["run_id"] for r in rows(lake, "runs")} == {r["run_id"] for r in kept}


def test_a_bad_provenance_document_is_rejected(tmp_path: Path) -> None:
    folder = tmp_path / "raw"
    folder.mkdir()
    bad = {
        "apiVersion": "kindex.dev/v1alpha1",
        "kind": "RunProvenance",
        "metadata": {"name": "p"},
        "spec": {"runId": "sha256:nothex", "source": "x"},
    }
    (folder / "p.jsonl").write_text(json.dumps(bad) + "\n")
    report = ingest([folder], tmp_path / "lake")
    assert report.rejected == 1
    assert "$.spec.runId" in report.rejects[0].reason
