"""Every document's verdict, one line each, to compare two versions of ingest document by document.

    .venv/bin/python bench/verdicts.py after.tsv
    PYTHONPATH=<other checkout> .venv/bin/python bench/verdicts.py before.tsv
    diff before.tsv after.tsv            # empty: the same documents rejected for the same reasons

Each corpus (the seed bundles, both KernelIndex export slices and the Liger CSVs as their
importers convert them, the rejected documents kept in the tests/fixtures lake, and 3,000
synthetic bundles with their three defects, 2,000 damaged seed bundles; the KernelIndex invalid examples are YAML, recreated
as bundles by tests/test_ingest_inputs.py's hostile tests) is ingested into a
fresh lake with the library's `ingest`; the lake's runs (file, line, run id) and rejects (file,
line, reason) are written sorted, with paths relative to the corpus folder.
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import duckdb
from synthetic import write_jsonl

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"


def seeds(folder: Path) -> list[Path]:
    return [DATA / "seeds"]


def kernelindex(folder: Path) -> list[Path]:
    from kindex_olap.importers.kernelindex.convert import import_kernelindex

    for export in sorted((DATA / "kernelindex").glob("*.jsonl.zst")):
        import_kernelindex(str(export), raw_dir=folder / export.name, ingest=False)
    return [folder]


def liger(folder: Path) -> list[Path]:
    import zstandard

    from kindex_olap.importers.liger.convert import import_liger

    for packed in sorted((DATA / "liger").glob("*.csv.zst")):
        csv = folder / packed.name.removesuffix(".zst")
        csv.write_bytes(zstandard.ZstdDecompressor().decompress(packed.read_bytes()))
        import_liger(str(csv), raw_dir=folder / "raw" / csv.stem)
    return [folder / "raw"]


def fixture_rejects(folder: Path) -> list[Path]:
    con = duckdb.connect()
    texts = con.sql(
        "SELECT text FROM read_parquet(?) ORDER BY source_file, line",
        params=[str(REPO / "tests/fixtures/lake-v1/rejects/*.parquet")],
    ).fetchall()
    target = folder / "rejects.jsonl"
    target.write_text("".join(text.replace("\n", " ") + "\n" for (text,) in texts))
    return [target]


def mutants(folder: Path) -> list[Path]:
    """2,000 seed bundles with byte-level damage (deleted, repeated or moved spans, as in
    tests/test_stage_fast.py), compact and indented, one .json file each."""
    rng = random.Random(20261201)
    bases = []
    for seed in sorted((DATA / "seeds").glob("*.txt")):
        bundle = json.loads(seed.read_text(encoding="utf-8").partition("\n\n")[2])
        bases.append(json.dumps(bundle, separators=(",", ":"), ensure_ascii=False).encode())
        bases.append(json.dumps(bundle, indent=1, ensure_ascii=False).encode())
    for number in range(2000):
        text = bytearray(rng.choice(bases))
        for _ in range(rng.randint(1, 3)):
            i, j = sorted(rng.sample(range(len(text)), 2))
            j = min(j, i + rng.randint(1, 40))
            action = rng.randrange(3)
            if action == 0:
                del text[i:j]
            elif action == 1:
                text[i:i] = text[i:j]
            else:
                k = rng.randrange(len(text))
                text[k:k] = text[i:j]
        (folder / f"{number:04d}.json").write_bytes(bytes(text))
    return [folder]


def synthetic(folder: Path) -> list[Path]:
    return [write_jsonl(3000, folder / "synthetic.jsonl")]


CORPORA: dict[str, Callable[[Path], list[Path]]] = {
    "seeds": seeds,
    "kernelindex-exports": kernelindex,
    "liger": liger,
    "fixture-rejects": fixture_rejects,
    "synthetic": synthetic,
    "mutants": mutants,
}


def verdicts(name: str, make: Callable[[Path], list[Path]], scratch: Path) -> Iterator[str]:
    from kindex_olap.ingestion.pipeline import ingest
    from kindex_olap.ingestion.rejects import iter_rejects
    from kindex_olap.lake.store import Lake
    from kindex_olap.lake.tables import read_table

    folder = scratch / name
    folder.mkdir()
    inputs = make(folder)
    lake = scratch / f"{name}-lake"
    ingest(inputs, lake, verify_digests=name == "kernelindex-exports")

    def where(path: str) -> str:
        for root in (folder, DATA):
            if path.startswith(str(root)):
                return path[len(str(root)) + 1 :]
        return path

    for row in iter_rejects(lake):
        yield f"{name}\t{where(row['source_file'])}\t{row['line']}\treject\t{row['reason']}"
    con = duckdb.connect()
    runs = read_table(con, "runs", Lake(lake).snapshot().files("runs"))
    for path, line, run_id in runs.select("source_file, source_line, run_id").fetchall():
        yield f"{name}\t{where(path)}\t{line}\trun\t{run_id}"


def main() -> None:
    lines: list[str] = []
    with tempfile.TemporaryDirectory() as scratch:
        for name, make in CORPORA.items():
            lines.extend(verdicts(name, make, Path(scratch)))
    Path(sys.argv[1]).write_text("".join(f"{line}\n" for line in sorted(lines)))
    rejects = sum("\treject\t" in line for line in lines)
    print(
        f"{len(lines)} documents: {len(lines) - rejects} runs, {rejects} rejects -> {sys.argv[1]}"
    )


if __name__ == "__main__":
    main()
