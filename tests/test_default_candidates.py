"""With no implementation named, every implementation of a cell is compared against the cell's
baseline (issue 23): on B200 Liger ships liger_triton, liger_cutedsl and liger_cutile, and a
provider such as liger-fused is paired with torch like any other (issue 26). A family name
(liger) selects every implementation of the family."""

from __future__ import annotations

import shutil
from pathlib import Path

import crafted as c
import pytest
from realdata import liger_csv

from kindex_olap.importers.liger.convert import import_liger
from kindex_olap.ingestion.pipeline import ingest
from kindex_olap.query.engine import connect
from kindex_olap.query.run import run_query

# the three CSVs that liger-kernel's source distribution ships (what `scripts/run` imports)
LIGER_CSVS = ("all_benchmark_data.csv", "all_benchmark_data_cutedsl.csv",
              "all_benchmark_data_cutile.csv")  # fmt: skip


@pytest.fixture(scope="module")
def liger_lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("liger-release")
    for name in LIGER_CSVS:
        folder = root / "csv" / name
        folder.mkdir(parents=True)
        shutil.copy(liger_csv(name), folder / name)
        import_liger(str(folder / name), raw_dir=root / "raw" / name)
    ingest([root / "raw"], root / "lake")
    return root / "lake"


def _pairs(result_columns: list[str], rows: list[tuple[object, ...]]) -> set[tuple[str, str]]:
    at = {name: i for i, name in enumerate(result_columns)}
    return {(str(r[at["candidate"]]), str(r[at["baseline"]])) for r in rows}


def test_every_b200_liger_implementation_is_compared_with_torch(liger_lake: Path) -> None:
    result = run_query("speedup cross_entropy b200", liger_lake)
    assert _pairs(result.columns, result.rows) == {
        ("liger_triton", "torch"),
        ("liger_cutedsl", "torch"),
        ("liger_cutile", "torch"),
    }
    # each implementation for each pass and shape: one row per candidate and case
    at = {name: i for i, name in enumerate(result.columns)}
    cases = {(r[at["pass"]], r[at["shape"]], r[at["candidate"]]) for r in result.rows}
    assert len(cases) == len(result.rows)


def test_a_family_name_selects_every_member(liger_lake: Path) -> None:
    family = run_query("speedup cross_entropy b200 liger vs torch", liger_lake)
    assert {cand for cand, _ in _pairs(family.columns, family.rows)} == {
        "liger_triton", "liger_cutedsl", "liger_cutile"
    }  # fmt: skip
    one = run_query("speedup cross_entropy b200 liger_cutile vs torch", liger_lake)
    assert {cand for cand, _ in _pairs(one.columns, one.rows)} == {"liger_cutile"}


def test_summary_covers_every_comparable_kernel_and_gpu(liger_lake: Path) -> None:
    with connect(liger_lake) as con:
        expected = con.execute(
            "SELECT count(*) FROM (SELECT DISTINCT kernel, environment_digest FROM speedups "
            "WHERE pairing = 'latest' AND baseline_rule IS NOT NULL)"
        ).fetchone()
    result = run_query("summary", liger_lake)
    at = {name: i for i, name in enumerate(result.columns)}
    gpu = "environment" if "environment" in at else "gpu"
    covered = {(r[at["kernel"]], r[at[gpu]]) for r in result.rows}
    assert expected is not None and expected[0] > 20
    assert len(covered) == expected[0]


def test_a_hyphenated_liger_provider_is_paired_with_torch(tmp_path: Path) -> None:
    bundles = [c.run("liger-fused", median=2e6), c.run("torch", median=4e6)]
    lake = c.ingest_bundles(tmp_path / "in", bundles, tmp_path / "lake")
    result = run_query("speedup jsd", lake)
    assert _pairs(result.columns, result.rows) == {("liger-fused", "torch")}
    family = run_query("speedup jsd liger", lake)
    assert _pairs(family.columns, family.rows) == {("liger-fused", "torch")}


def test_answers_come_in_natural_order(liger_lake: Path) -> None:
    """Passes forward, backward, full; shapes by their numbers (vocab4096 < vocab131072)."""
    import re

    passes = {"forward": 1, "backward": 2, "full": 3}
    for text in ("speedup kl_div", "latency jsd b200 liger"):
        result = run_query(text, liger_lake)
        at = {name: i for i, name in enumerate(result.columns)}
        assert len(result.rows) > 6, text
        groups: dict[tuple[object, ...], list[tuple[int, str]]] = {}
        for row in result.rows:
            key = (row[at["kernel"]], row[at["gpu"]], row[at["environment"]])
            groups.setdefault(key, []).append(
                (passes.get(str(row[at["pass"]]), 4), row[at["shape"]])
            )
        for seen in groups.values():
            assert [p for p, _ in seen] == sorted(p for p, _ in seen), text

            def natural(shape: str) -> tuple[str, list[float]]:
                return re.sub(r"[0-9]+", "#", shape), [
                    float(n) for n in re.findall(r"[0-9]+", shape)
                ]

            for number in {p for p, _ in seen}:
                shapes = [s for p, s in seen if p == number]
                assert shapes == sorted(shapes, key=natural), (text, shapes)
        numbers = [
            float(n)
            for s in (r[at["shape"]] for r in result.rows)
            for n in re.findall(r"vocab([0-9]+)", s)
        ]
        assert numbers  # the order is tested on shapes that differ in a number


def test_providers_that_share_a_digest_are_two_implementations(liger_history_lake: Path) -> None:
    """KernelIndex's curation digests a Liger provider's language and licence only: torch,
    megatron, megatron-fused and megatron-unfused are one implementation digest of
    megatron_cross_entropy, huggingface and deepspeed_tiled one of tiled_geglu. The pairs read
    each run as the implementation's provider: a cell's torch runs were megatron's, so torch,
    its reference, was missing ("liger vs megatron"), and a digest's newest run stood for all
    its providers. Each provider is now its own implementation, its newest run its own."""
    con = connect(liger_history_lake)
    newest = {
        (shape, provider): value
        for shape, provider, value in con.execute(
            "SELECT shape, provider, arg_max(value, (observed_at, run_id)) FROM observations "
            "WHERE kernel = 'megatron_cross_entropy' AND pass = 'forward' AND status = 'passed' "
            "AND gpu LIKE '%H100%HBM3%' AND metric = 'latency' GROUP BY ALL"
        ).fetchall()
    }
    result = run_query("speedup megatron_cross_entropy h100 forward", liger_history_lake)
    at = {name: i for i, name in enumerate(result.columns)}
    curated = [r for r in result.rows if str(r[at["shape"]]).startswith("batch4-")]
    assert curated and {r[at["baseline"]] for r in curated} == {"torch"}
    assert {r[at["candidate"]] for r in curated} == {
        "liger", "megatron", "megatron-fused", "megatron-unfused"
    }  # fmt: skip
    for r in curated:  # each side is its own provider's newest run, in ns
        shape = r[at["shape"]]
        assert r[at["candidate_ms"]] * 1e6 == pytest.approx(newest[shape, r[at["candidate"]]])
        assert r[at["baseline_ms"]] * 1e6 == pytest.approx(newest[shape, "torch"])
    tiled = run_query("speedup tiled_geglu", liger_history_lake)
    at = {name: i for i, name in enumerate(tiled.columns)}
    curated = [r for r in tiled.rows if str(r[at["shape"]]).startswith("batch")]
    assert curated and {r[at["baseline"]] for r in curated} == {"huggingface"}
    assert {r[at["candidate"]] for r in curated} == {"liger", "liger_tiled", "deepspeed_tiled"}
