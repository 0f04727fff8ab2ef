"""Why do runs of one liger-kernel version differ up to 4x in rms_norm's liger forward?

A diagnostic for the H200 (docs/bench.md, "H200: what varied"), not part of kindex. The parent
starts children alternately under two liger-kernel site folders (PYTHONPATH), some unpinned,
some pinned to one CPU (DIAG_PIN); each child measures, per size T, what Liger's benchmark
script measures (triton.testing.do_bench(rep=10), the median and p20/p80, three times in one
process) and beside it:

- host_us: the host's time per LigerRMSNorm forward call (300 calls, no synchronisation: the
  GPU's ~10 us kernel keeps up, so this is Python + launch time);
- iter_us: the host's time per do_bench iteration (clear the 256 MB cache, record an event, the
  call, record an event) and clear_us: the GPU's time for the cache clear alone;
- py_ms: a pure-Python loop (the CPU's speed as this process sees it), the CPU it ran on, and
  the host's steal time during the child.

Usage: python diag_rms_norm.py PARENT_OUT SITE_A SITE_B [children] [pin_cpu]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time


def _cpu() -> int:
    return int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[36])


def _steal() -> int:
    return int(open("/proc/stat").readline().split()[8])


def _py_ms() -> float:
    t = time.perf_counter()
    s = 0
    for i in range(300_000):
        s += i
    return (time.perf_counter() - t) * 1e3


def child() -> None:
    pin = os.environ.get("DIAG_PIN")
    if pin:
        os.sched_setaffinity(0, {int(pin)})
    steal0, began = _steal(), time.time()
    import torch
    import triton
    from liger_kernel.transformers.rms_norm import LigerRMSNorm

    out: dict[str, object] = {"cpu0": _cpu(), "py_ms0": round(_py_ms(), 2)}
    layer = LigerRMSNorm(hidden_size=4096, eps=1e-6).to("cuda")
    cache = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int, device="cuda")
    sizes = {}
    for t_len in (1024, 2048, 4096, 8192):
        x = torch.randn(t_len, 4096, device="cuda", dtype=torch.bfloat16, requires_grad=True)

        def fn(x: object = x) -> object:
            return layer(x)

        bench = [
            [round(v, 4) for v in triton.testing.do_bench(
                fn, grad_to_none=[x], rep=10, quantiles=[0.5, 0.2, 0.8])]
            for _ in range(3)
        ]  # fmt: skip
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(300):
            fn()
        host_us = (time.perf_counter() - t) / 300 * 1e6
        torch.cuda.synchronize()
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
        t = time.perf_counter()
        for _ in range(200):
            x.grad = None
            cache.zero_()
            ev[0].record()
            fn()
            ev[1].record()
        iter_us = (time.perf_counter() - t) / 200 * 1e6
        torch.cuda.synchronize()
        ev[0].record()
        for _ in range(20):
            cache.zero_()
        ev[1].record()
        torch.cuda.synchronize()
        clear_us = ev[0].elapsed_time(ev[1]) / 20 * 1e3
        sizes[str(t_len)] = {"bench": bench, "host_us": round(host_us, 1),
                             "iter_us": round(iter_us, 1), "clear_us": round(clear_us, 1)}  # fmt: skip
    out |= {"sizes": sizes, "cpu1": _cpu(), "py_ms1": round(_py_ms(), 2),
            "steal_ticks": _steal() - steal0, "seconds": round(time.time() - began, 1)}  # fmt: skip
    print(json.dumps(out))


def parent(out_dir: str, site_a: str, site_b: str, children: int, pin: str | None) -> None:
    with open(os.path.join(out_dir, "diag.jsonl"), "a") as log:
        for i in range(children):
            order = [site_a, site_b] if i % 2 == 0 else [site_b, site_a]
            for site in order:
                env = dict(os.environ, PYTHONPATH=site)
                if pin:
                    env["DIAG_PIN"] = pin
                done = subprocess.run([sys.executable, __file__, "child"], env=env,
                                      capture_output=True, text=True)  # fmt: skip
                line = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "{}"
                record = json.loads(line)
                record |= {"i": i, "site": os.path.basename(site), "pin": pin,
                           "rc": done.returncode, "err": done.stderr[-300:]}  # fmt: skip
                log.write(json.dumps(record) + "\n")
                log.flush()
                s = record.get("sizes", {})
                print(record["site"], "pin", pin, "cpu", record.get("cpu0"), record.get("cpu1"),
                      "py", record.get("py_ms0"), "steal", record.get("steal_ticks"),
                      " | ".join(f"{k}: {v['bench'][0][0]:.3f}/{v['bench'][1][0]:.3f}/"
                                 f"{v['bench'][2][0]:.3f} h{v['host_us']:.0f} "
                                 f"i{v['iter_us']:.0f} c{v['clear_us']:.0f}"
                                 for k, v in s.items()), flush=True)  # fmt: skip


if __name__ == "__main__":
    if sys.argv[1] == "child":
        child()
    else:
        parent(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]),
               sys.argv[5] if len(sys.argv) > 5 else None)  # fmt: skip
