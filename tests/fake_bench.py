"""A fake GPU benchmark for `kindex bench` tests: writes Liger-format CSV rows, no GPU needed.

Two kernels, liger and torch each, two sizes, forward pass: `fake_planted` and its unchanged
twin `fake_twin`, with the same true latencies. Every timing is the true latency times
lognormal noise (sigma 5 %, drawn per run); `--slowdown F` multiplies fake_planted's liger
latency by F (the planted regression). The seed, the round and the variant (from the runner's
environment) choose the noise, so each run of an experiment draws its own.

    python tests/fake_bench.py --seed 3 --slowdown 1.2 [--tag _s3]
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import random
import zlib
from datetime import UTC, datetime, timedelta
from pathlib import Path

HEADER = [
    "kernel_name", "kernel_provider", "kernel_operation_mode", "metric_name", "metric_unit",
    "x_name", "x_label", "x_value", "y_value_50", "y_value_20", "y_value_80",
    "extra_benchmark_config_str", "gpu_name", "timestamp", "liger_version",
]  # fmt: skip
SIGMA = 0.05
SIZES = (1024, 4096)
BASE_MS = {"liger": 0.5, "torch": 0.8}  # at size 1024, linear in size


def _timestamp() -> str:
    """A made-up time a run wrote its rows: an hour per round, the variants a minute apart.
    The real clock would make verdicts depend on timing: the gate pairs each run with the
    baseline run nearest in time, and two fast fake runs can share a second (Liger's timestamps
    have whole seconds), so a candidate could be paired with the other variant's baseline."""
    round_ = int(os.environ.get("KINDEX_BENCH_ROUND", "1") or 1)
    minute = sorted(("A", "B", os.environ.get("KINDEX_BENCH_VARIANT", "A"))).index(
        os.environ.get("KINDEX_BENCH_VARIANT", "A")
    )
    moment = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(hours=round_, minutes=minute)
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def rows(seed: int, slowdown: float, tag: str = "") -> list[list[str]]:
    """One run's rows: every kernel, provider and size, each timing with its own noise."""
    salt = f"{seed}/{os.environ.get('KINDEX_BENCH_ROUND', '')}/"
    salt += os.environ.get("KINDEX_BENCH_VARIANT", "")
    rng = random.Random(zlib.crc32(salt.encode()))
    now = _timestamp()
    out = []
    for kernel in (f"fake_planted{tag}", f"fake_twin{tag}"):
        for provider, base in BASE_MS.items():
            for size in SIZES:
                ms = base * size / 1024 * math.exp(rng.gauss(0.0, SIGMA))
                if kernel.startswith("fake_planted") and provider == "liger":
                    ms *= slowdown
                config = json.dumps({"hidden": 512, "dtype": "torch.float32"})
                out.append([
                    kernel, provider, "forward", "speed", "ms", "T", "tokens", str(size),
                    f"{ms:.6f}", f"{ms * 0.99:.6f}", f"{ms * 1.01:.6f}", config,
                    "NVIDIA H200", now, "0.0.0",
                ])  # fmt: skip
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--slowdown", type=float, default=1.0)
    parser.add_argument("--tag", default="", help="appended to the kernel names")
    args = parser.parse_args()
    out = Path(os.environ.get("KINDEX_BENCH_OUT", "."))
    with (out / "all_benchmark_data.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(HEADER)
        writer.writerows(rows(args.seed, args.slowdown, args.tag))
    print(f"wrote {len(SIZES) * 4} rows")


if __name__ == "__main__":
    main()
