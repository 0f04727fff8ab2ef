"""Where the tests find the real data.

By default every data set comes from tests/data, small copies of the real files committed with
the tests (tests/data/README.md says where each comes from and how it was cut), so that the test
command needs nothing beside the clone. Tests that need a full file (exact counts of the full
KernelIndex exports) read it from ../shared/data and carry the `shared_data` marker; conftest.py
skips them with one line when ../shared/data is absent, and fails them when CI is set.

Compressed copies (.zst) that a reader cannot take as they are (the Liger CSVs) are decompressed
once into a content-addressed folder under the system temp folder, shared by every test process.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

import zstandard

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
SHARED = REPO.parent / "shared"
SHARED_DATA = SHARED / "data"

SEEDS = DATA / "seeds"
INVALID_EXAMPLES = DATA / "kernelindex" / "examples" / "invalid"

# The two KernelIndex catalog exports: a slice of each here, the full files in ../shared.
WITH_SERVING = "catalog-2026-08-16-0022af0b.jsonl.zst"  # kernel runs and MLPerf serving runs
KERNELS_ONLY = "catalog-2026-08-16-94af2ae7.jsonl.zst"  # the same kernel runs, no serving
KERNELINDEX_SLICES = (DATA / "kernelindex" / WITH_SERVING, DATA / "kernelindex" / KERNELS_ONLY)
KERNELINDEX_FULL = (
    SHARED_DATA / "kernelindex" / WITH_SERVING,
    SHARED_DATA / "kernelindex" / KERNELS_ONLY,
)


def decompressed(path: Path) -> Path:
    """A plain copy of the zstd file `path`, written once (atomically) and reused."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    folder = Path(tempfile.gettempdir()) / f"kindex-tests-{os.getuid()}" / digest
    target = folder / path.name.removesuffix(".zst")
    if not target.exists():
        folder.mkdir(parents=True, exist_ok=True)
        partial = folder / f".{target.name}.{os.getpid()}"
        with path.open("rb") as src, partial.open("wb") as out:
            zstandard.ZstdDecompressor().copy_stream(src, out)
        partial.replace(target)
    return target


def liger_csv(name: str) -> Path:
    """One of Liger's four benchmark CSVs (whole), as a plain CSV file."""
    return decompressed(DATA / "liger" / f"{name}.zst")


LIGER_HISTORY = liger_csv("all_benchmark_data_history.csv")


def export_rows(path: Path) -> dict[str, int]:
    """Rows per table of a KernelIndex catalog export, counted without the importer."""
    import json
    from collections import Counter

    with path.open("rb") as handle:
        text = zstandard.ZstdDecompressor().stream_reader(handle).read()
    return dict(Counter(json.loads(line)["table"] for line in text.splitlines()))


def export_runs_by_source(path: Path) -> dict[str, int]:
    """Benchmark runs per source slug of a KernelIndex catalog export, without the importer."""
    import json
    from collections import Counter

    with path.open("rb") as handle:
        text = zstandard.ZstdDecompressor().stream_reader(handle).read()
    items = [json.loads(line) for line in text.splitlines()]
    slugs = {i["row"]["id"]: i["row"]["slug"] for i in items if i["table"] == "sources"}
    runs = [i["row"] for i in items if i["table"] == "benchmark_runs"]
    return dict(Counter(slugs[run["sourceId"]] for run in runs))
