"""Synthetic bundles shaped like the seeds, for benchmarks and tests: many kernels, providers,
GPUs, shapes, versions. Needs the seed bundles of a source checkout (data/raw).

    python bench/synthetic.py 100000 out.jsonl          # one JSONL file
    python bench/synthetic.py 10000 out_dir --files     # one seed-text file per bundle

Every bundle is valid except about one in a thousand, which carries a defect ingest must reject.
Environment and protocol digests are real digests of the documents they name.
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from kindex_olap.model.canonical import document_digest

# the three real seed bundles, committed with the tests (tests/data/seeds; also in data/raw, which
# the tests must not read: tests/guard.py)
SEEDS = Path(__file__).resolve().parents[1] / "tests" / "data" / "seeds"
KERNELS = [f"kernel_{i:02d}" for i in range(36)] + ["jsd", "kl_div", "cross_entropy", "rms_norm"]
PROVIDERS = ["liger", "torch", "huggingface", "torchcompile", "triton", "cutedsl"]
GPUS = [
    ("NVIDIA B200", "sm_100", None),
    ("NVIDIA H100", "sm_90", "SXM5-80GB"),
    ("NVIDIA H100", "sm_90", "PCIe"),
    ("NVIDIA A100", "sm_80", "SXM4-80GB"),
    ("NVIDIA H200", "sm_90", None),
    ("NVIDIA GeForce RTX 4090", "sm_89", None),
    ("AMD Instinct MI300X", "gfx942", None),
    ("NVIDIA L4", "sm_89", None),
]
PASSES = ["forward", "backward", "full"]
VERSIONS = ["0.5.0", "0.6.1", "0.7.0", "0.8.0", "0.8.5"]


def load_seed_bundles() -> list[dict[str, Any]]:
    bundles = []
    for path in sorted(SEEDS.glob("*.txt")):
        bundles.append(json.loads(path.read_text().split("\n", 2)[2]))
    return bundles


def _environments(template: dict[str, Any]) -> list[tuple[dict[str, Any], str]]:
    out = []
    for product, arch, form in GPUS:
        env = copy.deepcopy(template)
        hardware = {"vendor": "amd" if arch.startswith("gfx") else "nvidia", "product": product}
        hardware["architecture"] = arch
        if form:
            hardware["formFactor"] = form
        env["spec"]["hardware"] = hardware
        env["metadata"]["name"] = (
            "bench-" + product.lower().replace(" ", "-") + (f"-{form}".lower() if form else "")
        )
        out.append((env, document_digest(env)))
    return out


def _protocols(template: dict[str, Any]) -> dict[str, tuple[dict[str, Any], str]]:
    out = {}
    for pass_ in PASSES:
        proto = copy.deepcopy(template)
        proto["metadata"]["name"] = f"liger-bench-do-bench-{pass_}"
        proto["spec"]["comparability"]["notes"] = f"Timed: the {pass_} pass."
        out[pass_] = (proto, document_digest(proto))
    return out


def bundles(n: int, seed: int = 7, start: int = 0) -> Iterator[dict[str, Any]]:
    """`n` bundles numbered from `start`; deterministic for a given seed."""
    template = load_seed_bundles()[1]
    envs = _environments(template["environment"])
    protos = _protocols(template["protocol"])
    for i in range(start, start + n):
        rng = random.Random(seed * 1_000_003 + i)  # bundle i is the same whatever `start` is
        kernel = KERNELS[i % len(KERNELS)]
        provider = PROVIDERS[(i // len(KERNELS)) % 3 if rng.random() < 0.9 else rng.randrange(6)]
        pass_ = PASSES[(i // 7) % 3]
        env, env_digest = envs[(i // 11) % len(envs)]
        proto, proto_digest = protos[pass_]
        shape = (i // 13) % 570
        median = rng.randrange(10_000, 200_000_000)
        run = copy.deepcopy(template["run"])
        spec = run["spec"]
        spec["timing"]["latencyNs"]["median"] = median
        spec["measurements"][0]["value"] = median * 0.99
        spec["measurements"][1]["value"] = median * 1.01
        spec["protocolDigest"] = proto_digest
        spec["environmentDigest"] = env_digest
        spec["workloadDigest"] = "sha256:" + hashlib.sha256(f"shape{shape}".encode()).hexdigest()
        spec["implementationDigest"] = (
            "sha256:" + hashlib.sha256(f"{kernel}/{provider}".encode()).hexdigest()
        )
        spec["observedAt"] = f"20{24 + i % 3}-0{1 + i % 9}-1{i % 10}T0{i % 10}:00:{i % 60:02d}.000Z"
        spec["sourceNative"]["benchmark"] = f"{kernel}/{pass_}"
        spec["sourceNative"]["externalId"] = (
            f"{kernel}/{pass_}/{provider}/gpu{i % 8}/shape{shape}/{i}"
        )
        spec["sourceNative"]["metrics"] = {"ms_50": median / 1e6}
        run["metadata"]["name"] = f"bench-{i}"
        run["metadata"]["labels"] = {"liger_version": VERSIONS[i % len(VERSIONS)]}
        bundle = {"run": run, "protocol": proto, "environment": env, "display": provider}
        if i % 1000 == 999:  # a defect ingest must keep aside
            spec["protocolDigest"] = "md5:" + "0" * 32
        yield bundle


def write_jsonl(n: int, path: Path, start: int = 0) -> Path:
    """Write bundles start..start+n-1 as JSON Lines."""
    with open(path, "wb") as handle:
        for bundle in bundles(n, start=start):
            handle.write(orjson.dumps(bundle) + b"\n")
    return path


def write_files(n: int, folder: Path) -> Path:
    """Write n bundles as seed-text files, 10,000 to a sub-folder."""
    folder.mkdir(parents=True, exist_ok=True)
    for i, bundle in enumerate(bundles(n)):
        display = bundle.pop("display")
        sub = folder / f"{i // 10000:03d}"
        if i % 10000 == 0:
            sub.mkdir(exist_ok=True)
        (sub / f"{i:07d}.txt").write_bytes(
            display.encode() + b"\n\n" + orjson.dumps(bundle, option=orjson.OPT_INDENT_2)
        )
    return folder


if __name__ == "__main__":
    count, target = int(sys.argv[1]), Path(sys.argv[2])
    if "--files" in sys.argv:
        write_files(count, target)
    else:
        write_jsonl(count, target)
