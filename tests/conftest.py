"""Shared fixtures: the real seed bundles, a factory of mutable bundles, a temporary lake.

Shared data is read from ../shared beside the repository (never copied into it); everything a
test writes goes under its tmp_path.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest

from kindex_olap.lake.store import Lake
from kindex_olap.lake.tables import read_table

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
SEEDS = SHARED / "seeds"
# The checkout's data folders belong to the README's main job (`scripts/run`); tests never touch
# them (tests/guard.py fails a test that does).
CHECKOUT_DATA = (REPO / "data" / "raw", REPO / "data" / "parquet")
INVALID_EXAMPLES = SHARED / "data" / "kernelindex" / "examples" / "invalid"

# The three seeds by what they measure (file names are KernelIndex's).
GRPO_SEED = "000_e8e39806e1001f41.txt"  # fused_linear_grpo_loss_token/backward, torch, A100
JSD_SEED = "001_62d94da41d44ef74.txt"  # jsd/backward, liger, B200
KL_SEED = "004_92f802be527ac63d.txt"  # kl_div/full, torch, H100

BundleFactory = Callable[..., dict[str, Any]]


def pytest_configure(config: pytest.Config) -> None:
    from guard import install

    install(config, CHECKOUT_DATA)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test of the real data fails loudly when ../shared is missing: a skip would let a
    checkout without it pass while testing nothing."""
    if item.get_closest_marker("shared_data") is not None and not (SHARED / "data").is_dir():
        pytest.fail(f"{SHARED / 'data'} is missing: tests read the real data from ../shared/data")


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
def seed_inbox(tmp_path: Path) -> Path:
    """A folder under tmp_path holding a copy of the three seeds (a user's bundle folder)."""
    inbox = tmp_path / "seeds"
    shutil.copytree(SEEDS, inbox)
    return inbox


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
    """The rows of a lake table in its newest lake commit, read from Parquet with DuckDB."""
    files = Lake(lake).snapshot().files(table)
    con = duckdb.connect()
    try:
        relation = read_table(con, table, files).filter(where)
        return [dict(zip(relation.columns, row, strict=True)) for row in relation.fetchall()]
    finally:
        con.close()


def all_files(root: Path) -> set[Path]:
    """Every file (and link) under `root`, for before/after comparisons."""
    return {p for p in root.rglob("*") if p.is_file() or p.is_symlink()}
