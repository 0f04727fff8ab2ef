"""Shared fixtures: the real seed bundles, a factory of mutable bundles, a temporary lake.

Shared data is read from ../shared beside the repository (never copied into it); everything a
test writes goes under its tmp_path.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest

from kindex_olap.lake.store import Lake

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
SEEDS = SHARED / "seeds"
RAW = REPO / "data" / "raw"
INVALID_EXAMPLES = SHARED / "data" / "kernelindex" / "examples" / "invalid"

# The three seeds by what they measure (file names are KernelIndex's).
GRPO_SEED = "000_e8e39806e1001f41.txt"  # fused_linear_grpo_loss_token/backward, torch, A100
JSD_SEED = "001_62d94da41d44ef74.txt"  # jsd/backward, liger, B200
KL_SEED = "004_92f802be527ac63d.txt"  # kl_div/full, torch, H100

BundleFactory = Callable[..., dict[str, Any]]


def read_seed(path: Path) -> tuple[str, dict[str, Any]]:
    """(display name, bundle) of a file in the seed text format."""
    display, sep, body = path.read_text(encoding="utf-8").partition("\n\n")
    assert sep, f"{path} is not in the seed text format"
    return display.strip(), json.loads(body)


def seed_text(display: str, bundle: dict[str, Any]) -> str:
    """A bundle written in the seed text format."""
    return f"{display}\n\n{json.dumps(bundle, indent=2, ensure_ascii=False)}\n"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test runs in UTC and without a lake chosen by the environment."""
    monkeypatch.setenv("TZ", "UTC")
    monkeypatch.delenv("KINDEX_LAKE", raising=False)
    import time

    if hasattr(time, "tzset"):
        time.tzset()


@pytest.fixture(scope="session")
def seed_paths() -> list[Path]:
    """The three real seed bundles in ../shared/seeds."""
    paths = sorted(SEEDS.glob("*.txt"))
    assert len(paths) == 3, f"expected 3 seeds in {SEEDS}, found {paths}"
    return paths


@pytest.fixture
def make_bundle() -> BundleFactory:
    """A fresh, mutable copy of a seed bundle (the GRPO one unless `seed` names another).

    `make_bundle(variant=n)` changes the run's median latency (to 1000 + n ns) and name, so
    that it becomes a distinct run with its own identity.
    """

    def factory(seed: str = GRPO_SEED, *, variant: int | None = None) -> dict[str, Any]:
        _, bundle = read_seed(SEEDS / seed)
        if variant is not None:
            # A different median makes a different run spec, hence a different run identity.
            bundle["run"]["spec"]["timing"]["latencyNs"]["median"] = 1_000 + variant
            bundle["run"]["metadata"]["name"] = f"variant-{variant}"
        return bundle

    return factory


LIGER_HISTORY = SHARED / "data" / "liger" / "all_benchmark_data_history.csv"


@pytest.fixture(scope="session")
def liger_history_lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lake holding Liger's whole benchmark history (7898 runs), built once per session:
    tests only read it (one that changes it works on a copy)."""
    from kindex_olap.importers.liger.convert import import_liger
    from kindex_olap.ingestion.pipeline import ingest

    root = tmp_path_factory.mktemp("liger-history")
    import_liger(str(LIGER_HISTORY), raw_dir=root / "raw")
    ingest([root / "raw"], root / "lake")
    return root / "lake"


KERNELINDEX_EXPORTS = sorted((SHARED / "data" / "kernelindex").glob("catalog-*.jsonl.zst"))


@pytest.fixture(scope="session")
def real_lake(liger_history_lake: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The whole real lake, built once per session: Liger's history (a copy of
    liger_history_lake) plus both KernelIndex catalog exports. Tests only read it."""
    import shutil

    from kindex_olap.importers.kernelindex.convert import import_kernelindex

    root = tmp_path_factory.mktemp("real")
    shutil.copytree(liger_history_lake, root / "lake")
    assert len(KERNELINDEX_EXPORTS) == 2, KERNELINDEX_EXPORTS
    for export in KERNELINDEX_EXPORTS:
        import_kernelindex(str(export), raw_dir=root / export.name, lake=root / "lake")
    return root / "lake"


@pytest.fixture
def tmp_lake(tmp_path: Path) -> Path:
    """A lake folder (not yet created) under the test's tmp_path."""
    return tmp_path / "lake"


def rows(lake: Path, table: str, where: str = "true") -> list[dict[str, Any]]:
    """The rows of a lake table in its committed snapshot, read from Parquet with DuckDB."""
    files = Lake(lake).snapshot().files(table)
    con = duckdb.connect()
    try:
        cursor = con.execute(f"SELECT * FROM read_parquet(?) WHERE {where}", [files])
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    finally:
        con.close()


def all_files(root: Path) -> set[Path]:
    """Every file (and link) under `root`, for before/after comparisons."""
    return {p for p in root.rglob("*") if p.is_file() or p.is_symlink()}
