"""Shared fixtures: the real seed bundles, a factory of mutable bundles, a temporary lake, the
lakes built from the real data, and the golden-file check.

The real data comes from tests/data (small copies, see tests/realdata.py); only tests marked
`shared_data` read the full files in ../shared/data. Everything a test writes goes under its
tmp_path (or, for the session-wide lakes, under the session's base temp folder).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from realdata import (
    INVALID_EXAMPLES,
    KERNELINDEX_SLICES,
    LIGER_HISTORY,
    REPO,
    SEEDS,
    SHARED,
    SHARED_DATA,
)

from kindex_olap.lake.store import Lake
from kindex_olap.lake.tables import read_table

__all__ = ["INVALID_EXAMPLES", "LIGER_HISTORY", "SEEDS", "SHARED"]

# The checkout's data folders belong to the README's main job (`scripts/run`); tests never touch
# them (tests/guard.py fails a test that does).
CHECKOUT_DATA = (REPO / "data" / "raw", REPO / "data" / "parquet")

# The three seeds by what they measure (file names are KernelIndex's).
GRPO_SEED = "000_e8e39806e1001f41.txt"  # fused_linear_grpo_loss_token/backward, torch, A100
JSD_SEED = "001_62d94da41d44ef74.txt"  # jsd/backward, liger, B200
KL_SEED = "004_92f802be527ac63d.txt"  # kl_div/full, torch, H100

BundleFactory = Callable[..., dict[str, Any]]


def pytest_configure(config: pytest.Config) -> None:
    from guard import install

    install(config, CHECKOUT_DATA)
    # kindex's caches (the views' catalog, vocabularies, Liger's downloads: kindex_olap/cache.py)
    # go to a folder of the tests' own, kept between runs, never the user's ~/.cache/kindex
    # (each test lake's vocabulary would evict the user's); set before any CLI subprocess starts
    # so that they inherit it
    import tempfile

    cache = Path(tempfile.gettempdir()) / f"kindex-tests-cache-{os.getuid()}"
    os.environ["XDG_CACHE_HOME"] = str(cache)


CHROMIUM = Path("/usr/bin/chromium")
# Session fixtures built from the real data (~15-25 s once per session): their tests are slow.
REAL_LAKES = ("liger_history_lake", "real_lake")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that reads a lake built from the real data is `slow`, however quick its own body:
    `scripts/test --fast` then builds none of them. Tests that share a module- or
    session-scoped fixture of their own module join one xdist group (`--dist loadgroup` in
    scripts/test), so that fixture is built on one worker only; other tests spread freely."""
    for item in items:
        if any(name in getattr(item, "fixturenames", ()) for name in REAL_LAKES):
            item.add_marker(pytest.mark.slow)
        if item.get_closest_marker("spark") is not None:
            # one worker starts the JVM (10-30 s) and computes the history's points and tests
            # (minutes) for every Spark test of the run; each is slow (--fast leaves them out)
            _join_xdist_group(item, "spark")
            item.add_marker(pytest.mark.slow)
        elif _shares_a_module_fixture(item):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
    # the Spark tests first: xdist hands out groups in collection order, and the Spark group
    # (minutes on one worker) handed out last ran alone at the end of CI's run
    items.sort(key=_spark_order)


def _spark_order(item: pytest.Item) -> int:
    """The Spark tests first, those on a lake built from the real data last among them: that
    lake replaces spark_lake's tables in the session's views and its history's cache, which
    every Spark test on spark_lake would then compute again (minutes)."""
    if item.get_closest_marker("spark") is None:
        return 2
    return int(any(name in getattr(item, "fixturenames", ()) for name in REAL_LAKES))


def _join_xdist_group(item: pytest.Item, group: str) -> None:
    """Put `item` in an xdist group as xdist's worker does: loadgroup reads the group from the
    node id's `@group` suffix. xdist 3.8's worker writes it before this hook runs (a marker
    added here is never seen), and into `_nodeid`, which pytest 9.2 no longer reads (its ids
    are structured, in `_id`; pytest-xdist issue #1386): the Spark tests were handed out one by
    one, each worker starting its own JVM and computing the history's points again. Written
    here into whichever the node keeps, once."""
    item.add_marker(pytest.mark.xdist_group(group))
    if not getattr(item.config.option, "loadgroup", False) or item.nodeid.endswith(f"@{group}"):
        return
    suffixed = f"{item.nodeid}@{group}"
    if hasattr(item, "_id"):  # pytest 9.2+
        item._id = type(item._id).parse(suffixed)
    else:
        item._nodeid = suffixed


def _shares_a_module_fixture(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    module = item.nodeid.split("::")[0]
    for defs in getattr(info, "name2fixturedefs", {}).values():
        fixture = defs[-1]
        if fixture.scope in ("module", "session") and fixture.baseid == module:
            return True
    return False


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test that needs what a bare clone lacks (the full data in ../shared/data, Debian's
    chromium) is skipped with one line saying what is missing; in CI (the CI variable set),
    where both are installed, the same absence fails the test instead."""
    missing = []
    shared = item.get_closest_marker("shared_data")
    if shared is not None and not SHARED_DATA.is_dir():
        needs = shared.args[0] if shared.args else "the full files in it"
        missing.append(f"../shared/data is absent: this test needs {needs}")
    if item.get_closest_marker("browser") is not None and not CHROMIUM.exists():
        missing.append(f"{CHROMIUM} is absent: this test opens a page in Debian's chromium")
    if item.get_closest_marker("spark") is not None and (absent := spark_absent()):
        missing.append(f"{absent}: this test runs Spark")
    if missing:
        if os.environ.get("CI"):
            pytest.fail("; ".join(missing) + " (CI installs it: see .ci/run)")
        pytest.skip("; ".join(missing))


def spark_absent() -> str | None:
    """What Spark needs that is missing here (pyspark, Java), else None."""
    import importlib.util

    if importlib.util.find_spec("pyspark") is None:
        return "pyspark is absent (pip install '.[spark]')"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "Java is absent (openjdk-17-jre-headless)"
    return None


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """One local SparkSession per test process (the JVM starts once; every Spark test is in one
    xdist group, so one worker starts it)."""
    from kindex_olap.spark.session import local_session

    session = local_session(cores=2)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def spark_lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small real lake for the Spark tests: Liger's history of five kernels (replicates,
    versions, GPUs, the reference rule) and the KernelIndex slice with serving runs
    (leaderboards: the fastest rule; memory), built once per session in ~5 s."""
    import csv

    from kindex_olap.importers.kernelindex.convert import import_kernelindex
    from kindex_olap.importers.liger.convert import import_liger
    from kindex_olap.ingestion.pipeline import ingest

    def build(root: Path) -> None:
        (root / "csv").mkdir()
        with (
            LIGER_HISTORY.open(newline="") as src,
            (root / "csv" / LIGER_HISTORY.name).open("w", newline="") as out,
        ):
            reader, writer = csv.reader(src), csv.writer(out)
            writer.writerow(next(reader))
            writer.writerows(row for row in reader if row[0] in SPARK_KERNELS)
        import_liger(str(root / "csv"), raw_dir=root / "raw")
        ingest([root / "raw"], root / "lake")
        import_kernelindex(str(KERNELINDEX_SLICES[0]), raw_dir=root / "ki", lake=root / "lake")

    return built_once(tmp_path_factory, "spark", build) / "lake"


@pytest.fixture(scope="session")
def spark_registered(spark: Any, spark_lake: Path) -> Path:
    """`spark` with every table and view of spark_lake registered (once: creating the views
    costs 15-40 s on 2 cores); the lake's path."""
    from kindex_olap.spark import register

    register(spark, spark_lake)
    return spark_lake


SPARK_KERNELS = ("jsd", "kl_div", "tvd", "fused_linear_grpo_loss_token", "dpo_loss")


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
    """Every test runs in UTC, without a lake chosen by the environment, and without a terminal
    width from it (xdist workers inherit COLUMNS; a test that wants a width sets it)."""
    monkeypatch.setenv("TZ", "UTC")
    monkeypatch.delenv("KINDEX_LAKE", raising=False)
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)
    import time

    if hasattr(time, "tzset"):
        time.tzset()


@pytest.fixture(scope="session")
def seed_paths() -> list[Path]:
    """The three real seed bundles (tests/data/seeds)."""
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


def built_once(factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]) -> Path:
    """A folder that `build` fills once per test session, shared by every xdist worker: the
    first worker to ask builds it under a lock in the session's base temp folder (the parent of
    the workers' own), the others wait and reuse it. Tests only read what it holds."""
    base = factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    folder, done = base / f"built-{name}", base / f"built-{name}.done"
    with (base / f"built-{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            build(folder)
            done.touch()
    return folder


@pytest.fixture(scope="session")
def liger_history_lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lake holding Liger's whole benchmark history (7898 runs), built once per session:
    tests only read it (one that changes it works on a copy). Its raw bundles lie beside it."""
    from kindex_olap.importers.liger.convert import import_liger
    from kindex_olap.ingestion.pipeline import ingest

    def build(root: Path) -> None:
        import_liger(str(LIGER_HISTORY), raw_dir=root / "raw")
        ingest([root / "raw"], root / "lake")

    return built_once(tmp_path_factory, "liger-history", build) / "lake"


@pytest.fixture(scope="session")
def real_lake(liger_history_lake: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real lake, built once per session: Liger's history (a copy of liger_history_lake)
    plus both KernelIndex catalog exports (their slices in tests/data). Tests only read it."""
    from kindex_olap.importers.kernelindex.convert import import_kernelindex

    def build(root: Path) -> None:
        shutil.copytree(liger_history_lake, root / "lake")
        for export in KERNELINDEX_SLICES:
            import_kernelindex(str(export), raw_dir=root / export.name, lake=root / "lake")

    return built_once(tmp_path_factory, "real", build) / "lake"


@pytest.fixture
def tmp_lake(tmp_path: Path) -> Path:
    """A lake folder (not yet created) under the test's tmp_path."""
    return tmp_path / "lake"


GOLDEN = REPO / "tests" / "golden"


def assert_golden(name: str, actual: str) -> None:
    """`actual` equals tests/golden/NAME. A missing golden file fails (a test that wrote it would
    pass against itself); KINDEX_UPDATE_GOLDEN=1 writes every golden file, missing or not:
    review the diff like code."""
    path = GOLDEN / name
    if os.environ.get("KINDEX_UPDATE_GOLDEN") == "1":
        path.write_text(actual, encoding="utf-8")
    if not path.exists():
        pytest.fail(f"golden file {path} is missing: write it with KINDEX_UPDATE_GOLDEN=1")
    assert actual == path.read_text(encoding="utf-8")


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
