"""Crafted bundles for the query tests: seed copies that differ in exactly one dimension.

Every helper starts from the real liger JSD backward B200 seed and returns a new bundle dict;
`ingest_bundles` writes them (seed text format) under a tmp folder and ingests them.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

from realdata import SEEDS

from kindex_olap.ingestion.pipeline import ingest

JSD_SEED = SEEDS / "001_62d94da41d44ef74.txt"  # jsd/backward, liger, B200, tokens4096

Bundle = dict[str, Any]


def read_seed(path: Path = JSD_SEED) -> Bundle:
    """The bundle of a seed file (display line, blank line, JSON)."""
    _, _, body = path.read_text(encoding="utf-8").partition("\n\n")
    bundle: Bundle = json.loads(body)
    return bundle


def digest(tag: str) -> str:
    """A syntactically valid sha256 digest made from `tag` (for crafted dimensions)."""
    import hashlib

    return "sha256:" + hashlib.sha256(tag.encode()).hexdigest()


def run(
    provider: str = "liger",
    *,
    median: float = 1_000_000,
    p20: float | None = None,
    p80: float | None = None,
    pass_: str = "backward",
    kernel: str = "jsd",
    shape: str = "tokens4096-vocab128256-fp32",
    observed: str = "2026-05-27T17:14:30.000Z",
    version: str = "0.8.0",
    status: str = "passed",
) -> Bundle:
    """A JSD-on-B200-like bundle with the given implementation, latencies and labels."""
    bundle = copy.deepcopy(read_seed())
    spec = bundle["run"]["spec"]
    spec["timing"]["latencyNs"] = {"median": int(median)}
    spec["measurements"] = [
        _latency("p20", p20 if p20 is not None else median),
        _latency("p80", p80 if p80 is not None else median),
    ]
    spec["status"] = status
    spec["observedAt"] = observed
    benchmark = f"{kernel}/{pass_}"
    spec["sourceNative"]["benchmark"] = benchmark
    spec["sourceNative"]["externalId"] = f"{benchmark}/{provider}/nvidia-b200/{shape}/{observed}"
    spec["implementationDigest"] = digest(f"impl-{kernel}-{provider}")
    if shape != "tokens4096-vocab128256-fp32":
        spec["workloadDigest"] = digest(f"workload-{shape}")
    bundle["run"]["metadata"]["labels"] = {"liger_version": version}
    name = f"crafted-{provider}-{pass_}-{shape}-{observed[:19]}".lower()
    bundle["run"]["metadata"]["name"] = re.sub(r"[^a-z0-9.-]", "-", name)[:90]
    return bundle


def _latency(statistic: str, value: float) -> dict[str, Any]:
    return {"unit": "ns", "value": int(value), "metric": "latency", "statistic": statistic}


def on_gpu(bundle: Bundle, product: str, arch: str, tag: str) -> Bundle:
    """The same bundle measured in another environment (GPU)."""
    bundle = copy.deepcopy(bundle)
    bundle["environment"]["spec"]["hardware"]["product"] = product
    bundle["environment"]["spec"]["hardware"]["architecture"] = arch
    bundle["environment"]["metadata"]["name"] = f"crafted-{tag}"
    bundle["run"]["spec"]["environmentDigest"] = digest(f"env-{tag}")
    bundle["run"]["metadata"]["name"] += f"-{tag}"
    return bundle


def with_protocol(bundle: Bundle, timer: str, tag: str) -> Bundle:
    """The same bundle measured under another protocol (another timer)."""
    bundle = copy.deepcopy(bundle)
    bundle["protocol"]["spec"]["measurement"]["timer"] = timer
    bundle["protocol"]["metadata"]["name"] = f"crafted-protocol-{tag}"
    bundle["run"]["spec"]["protocolDigest"] = digest(f"protocol-{tag}")
    bundle["run"]["metadata"]["name"] += f"-{tag}"
    return bundle


def memory_run(provider: str, median: float, p20: float, p80: float) -> Bundle:
    """A peak-memory run (bytes) of the JSD workload on B200, under a memory protocol."""
    bundle = run(provider, median=1)
    spec = bundle["run"]["spec"]
    del spec["timing"]
    spec["measurements"] = [
        {"unit": "bytes", "value": int(v), "metric": "memory", "statistic": s}
        for s, v in (("median", median), ("p20", p20), ("p80", p80))
    ]
    spec["protocolDigest"] = digest("protocol-memory")
    spec["sourceNative"]["externalId"] = spec["sourceNative"]["externalId"] + "/memory"
    bundle["protocol"]["spec"]["measurement"] = {
        "timer": "max_memory_allocated",
        "primaryStatistic": "median",
    }
    bundle["protocol"]["metadata"]["name"] = "crafted-memory"
    bundle["run"]["metadata"]["name"] += "-memory"
    return bundle


def ingest_bundles(folder: Path, bundles: list[Bundle], lake: Path) -> Path:
    """Write `bundles` under `folder` in the seed text format and ingest them into `lake`."""
    folder.mkdir(parents=True, exist_ok=True)
    for i, bundle in enumerate(bundles):
        text = f"crafted\n\n{json.dumps(bundle, indent=2)}\n"
        (folder / f"crafted_{i:04d}.txt").write_text(text, encoding="utf-8")
    report = ingest([folder], lake)
    assert report.rejected == 0, [r.reason for r in report.rejects]
    return lake
