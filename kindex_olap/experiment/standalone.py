"""The experiment runner: stdlib only, so that kindex can write this very file out as the runner
of a GPU machine that cannot install kindex (`kindex bench liger --emit-runner DIR`).

An experiment is a folder: `plan.json` (variants, jobs, rounds, repeats, time limit),
`state.json` (the runs done so far: resumable across calls) and `runs/<run>/` (each run's own
folder: its CSVs, stdout.txt, stderr.txt and env.json, the environment captured when it ran).
The order is interleaved: per round, each job under every variant back to back (with `repeat`
k > 1, k times: A B, B A, A B, ...), the variants' order reversed every other round, so that a
drift of the machine (clocks, heat, other tenants) falls on both variants alike.

With `pin_cpu`, each run is pinned to the CPU that ran a fixed pure-Python probe fastest just
before it, and the probe is read again on that CPU after it: a benchmark whose timings are
bound by the host's speed (a Python call that launches a short GPU kernel) then runs on the
fastest CPU the machine offers at that moment, and the state file says how fast that was. On a
shared virtual machine a CPU's speed changes by up to 2x from minute to minute (docs/bench.md).

Emitted, it runs as `python kindex_bench_runner.py DIR [--dry-run] [--budget SECONDS]`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

PLAN_FILE = "plan.json"
STATE_FILE = "state.json"
PLAN_SCHEMA = "kindex.bench.plan/v1"


@dataclass(frozen=True)
class Step:
    """One run of the plan: a job under a variant in a round."""

    round: int
    variant: str
    job: str
    repeat: int = 1

    @property
    def name(self) -> str:
        """The run's folder name and its key in the state file (`-k` for the k-th repeat)."""
        tail = f"-{self.repeat}" if self.repeat > 1 else ""
        return f"r{self.round}-{self.variant}-{self.job}{tail}"

    @property
    def group(self) -> str:
        """The name shared by a round's repeats of one job under one variant."""
        return f"r{self.round}-{self.variant}-{self.job}"


def schedule(plan: dict[str, Any]) -> list[Step]:
    """Every run in order: per round, per job, each variant back to back, `repeat` times; the
    variants' order alternates by repeat and by round (A B B A in round 1, B A A B in round 2
    with two repeats; A B, then B A with one)."""
    names = list(plan["variants"])
    repeats = int(plan.get("repeat", 1))
    steps = []
    for r in range(1, int(plan["rounds"]) + 1):
        for job in plan["jobs"]:
            for k in range(1, repeats + 1):
                order = names if (r + k) % 2 == 0 else names[::-1]
                steps += [Step(r, v, job, k) for v in order]
    return steps


def read_json(path: Path) -> dict[str, Any]:
    """A JSON object from a file ({} when the file is absent)."""
    if not path.exists():
        return {}
    value = json.loads(path.read_text(encoding="utf-8"))
    return value if isinstance(value, dict) else {}


def write_json(path: Path, value: dict[str, Any]) -> None:
    """Write atomically (a crash leaves the old state file, never half of one)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(value, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def command_of(plan: dict[str, Any], step: Step, out: Path) -> list[str]:
    """The argv of a run: the variant's command for the job, placeholders filled in."""
    variant = plan["variants"][step.variant]
    argv = variant["jobs"].get(step.job) or variant["command"]
    values = {
        "out": str(out),
        "round": str(step.round),
        "variant": step.variant,
        "job": step.job,
        "python": sys.executable,
    }
    return [arg.format(**values) for arg in argv]


def run_env(plan: dict[str, Any], step: Step, out: Path) -> dict[str, str]:
    """The run's environment: the caller's, the variant's additions, and where to write."""
    env = dict(os.environ)
    for key, value in plan["variants"][step.variant].get("env", {}).items():
        env[key] = value.replace("{dir}", str(out.parents[1]))
    env |= {
        "KINDEX_BENCH_OUT": str(out),
        "KINDEX_BENCH_ROUND": str(step.round),
        "KINDEX_BENCH_VARIANT": step.variant,
        "KINDEX_BENCH_JOB": step.job,
    }
    return env


def _query(argv: list[str], env: dict[str, str] | None = None) -> str | None:
    """A command's stdout, stripped, or None when it is absent or fails."""
    if shutil.which(argv[0]) is None and not Path(argv[0]).exists():
        return None
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


PROBE = (
    "import json\n"
    "from importlib import metadata\n"
    "out = {}\n"
    "for name, dist in (('torch', 'torch'), ('triton', 'triton'), "
    "('liger_kernel', 'liger-kernel')):\n"
    "    try:\n"
    "        out[name] = metadata.version(dist)\n"
    "    except Exception:\n"
    "        out[name] = None\n"
    "try:\n"
    "    import torch\n"
    "    out['cuda'] = torch.version.cuda\n"
    "    out['torch_gpus'] = torch.cuda.device_count()\n"
    "except Exception:\n"
    "    pass\n"
    "print(json.dumps(out))\n"
)
SMI_FIELDS = "name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,power.draw"


def packages(folder: Path, variant: str, env: dict[str, str]) -> Any:
    """The versions of torch, triton and liger_kernel that a variant's runs import (probed once
    per variant and experiment folder: importing torch takes seconds)."""
    path = folder / f"packages-{variant}.json"
    if not path.exists():
        probe = _query([sys.executable, "-c", PROBE], env)
        write_json(path, json.loads(probe) if probe else {})
    return read_json(path)


def capture_environment(env: dict[str, str]) -> dict[str, Any]:
    """What the run ran on: host, Python, and every GPU nvidia-smi lists (name, driver, clocks,
    temperature, power) where it is readable."""
    found: dict[str, Any] = {
        "host": platform.node(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "captured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    smi = _query(["nvidia-smi", f"--query-gpu={SMI_FIELDS}", "--format=csv,noheader"])
    keys = SMI_FIELDS.split(",")
    gpus = [dict(zip(keys, (v.strip() for v in line.split(",")), strict=False))
            for line in (smi or "").splitlines() if line.strip()]  # fmt: skip
    found["gpus"] = gpus
    found["gpu_count"] = len(gpus)
    return found


PROBE_LOOPS = 100_000


def probe_ms() -> float:
    """A fixed pure-Python workload's time in ms: the host's speed as a Python thread sees it
    (about 3 ms on a 4 GHz core; twice that on a throttled one)."""
    began = time.perf_counter()
    total = 0
    for i in range(PROBE_LOOPS):
        total += i
    return (time.perf_counter() - began) * 1e3


def cpu_speeds() -> dict[int, float]:
    """Each CPU this process may run on: the better of two probes pinned to it (ms); {} where
    the platform cannot pin (no os.sched_setaffinity)."""
    if not hasattr(os, "sched_setaffinity"):
        return {}
    allowed = os.sched_getaffinity(0)
    speeds = {}
    try:
        for cpu in sorted(allowed):
            os.sched_setaffinity(0, {cpu})
            speeds[cpu] = round(min(probe_ms(), probe_ms()), 3)
    finally:
        os.sched_setaffinity(0, allowed)
    return speeds


def pinned_probe(cpu: int) -> float:
    """The probe (the better of two) on one CPU, as cpu_speeds reads it."""
    allowed = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, {cpu})
        return round(min(probe_ms(), probe_ms()), 3)
    finally:
        os.sched_setaffinity(0, allowed)


def _launch(argv: list[str], cwd: Path, env: dict[str, str], timeout: float, so: Any, se: Any,
            cpu: int | None) -> str:  # fmt: skip
    """Run argv (pinned to `cpu`: it inherits this process's affinity); its status."""
    allowed = os.sched_getaffinity(0) if cpu is not None else None
    try:
        if cpu is not None:
            os.sched_setaffinity(0, {cpu})
        done = subprocess.run(argv, cwd=cwd, env=env, stdout=so, stderr=se, timeout=timeout)
        return "passed" if done.returncode == 0 else f"failed (exit {done.returncode})"
    except subprocess.TimeoutExpired:
        return f"timed out after {timeout:g} s"
    except OSError as error:
        return f"could not start ({error.strerror})"
    finally:
        if allowed is not None:
            os.sched_setaffinity(0, allowed)


def run_step(plan: dict[str, Any], step: Step, folder: Path) -> dict[str, Any]:
    """Run one step in its own folder, within the plan's time limit; what happened."""
    out = folder / "runs" / step.name
    if out.exists():
        shutil.rmtree(out)  # an interrupted earlier attempt: start clean
    out.mkdir(parents=True)
    for source, target in plan.get("copy_into_run", {}).items():
        # a private copy per run: Liger's scripts write their CSV beside themselves (../data)
        shutil.copytree(folder / source, out / target)
    env = run_env(plan, step, out)
    captured = capture_environment(env)
    captured["packages"] = packages(folder, step.variant, env)
    speeds = cpu_speeds() if plan.get("pin_cpu") else {}
    cpu = min(speeds, key=lambda c: speeds[c]) if speeds else None
    captured["cpu_probe_ms"] = {str(c): ms for c, ms in speeds.items()}
    write_json(out / "env.json", captured)
    argv = command_of(plan, step, out)
    started = time.time()
    with (out / "stdout.txt").open("wb") as so, (out / "stderr.txt").open("wb") as se:
        status = _launch(argv, Path(plan.get("cwd") or out), env, float(plan["timeout_s"]), so,
                         se, cpu)  # fmt: skip
    record = {
        "status": status,
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "seconds": round(time.time() - started, 3),
        "invocation": f"{plan['name']}_{step.name}".replace("-", "_").lower(),
        "round": step.round,
        "repeat": step.repeat,
        "group": step.group,
        "variant": step.variant,
        "job": step.job,
        "argv": argv,
    }
    if cpu is not None:
        # the CPU the run had and the probe there before and after it (ms; lower is faster)
        record["cpu"] = {"cpu": cpu, "probe_ms_before": speeds[cpu],
                         "probe_ms_after": pinned_probe(cpu)}  # fmt: skip
    return record


def pending(plan: dict[str, Any], state: dict[str, Any]) -> list[Step]:
    """The plan's steps not yet done (a failed or timed-out run is done: it is not retried)."""
    done = state.get("runs", {})
    return [s for s in schedule(plan) if s.name not in done]


def execute(
    folder: Path, budget_s: float | None = None, progress: TextIO | None = None
) -> dict[str, Any]:
    """Run what is pending, saving the state after every run; stop starting runs once
    `budget_s` seconds have passed (the next call resumes). Returns the state."""
    folder = folder.resolve()  # the runs' own folders are their working folders
    plan = read_json(folder / PLAN_FILE)
    state = read_json(folder / STATE_FILE) or {"runs": {}}
    todo = pending(plan, state)
    total = len(schedule(plan))
    began = time.monotonic()
    for step in todo:
        if budget_s is not None and time.monotonic() - began >= budget_s:
            break
        done = total - len(pending(plan, state)) + 1
        _say(progress, f"[{done}/{total}] round {step.round} {step.variant} {step.job} ...")
        record = run_step(plan, step, folder)
        state["runs"][step.name] = record
        write_json(folder / STATE_FILE, state)
        elapsed = time.monotonic() - began
        _say(progress, f"    {record['status']} in {record['seconds']:.1f} s "
                       f"(elapsed {elapsed:.0f} s)")  # fmt: skip
    return state


def _say(stream: TextIO | None, line: str) -> None:
    if stream is not None:
        stream.write(line + "\n")
        stream.flush()


def describe(plan: dict[str, Any], state: dict[str, Any]) -> list[str]:
    """The plan in words, one line per run, with what is done (for --dry-run)."""
    done = state.get("runs", {})
    pin = ", each run pinned to the fastest CPU" if plan.get("pin_cpu") else ""
    lines = [f"experiment {plan['name']}: {plan['rounds']} round(s) x {plan.get('repeat', 1)} "
             f"repeat(s), time limit {plan['timeout_s']} s a run{pin}"]  # fmt: skip
    for name, variant in plan["variants"].items():
        where = f" (PYTHONPATH {variant['env']['PYTHONPATH']})" if "PYTHONPATH" in variant.get(
            "env", {}) else ""  # fmt: skip
        lines.append(f"variant {name}: version label {variant['version']}{where}")
    for step in schedule(plan):
        mark = done[step.name]["status"] if step.name in done else "pending"
        argv = " ".join(command_of(plan, step, Path("runs") / step.name))
        lines.append(f"  {step.name:<28} {mark:<12} {argv}")
    return lines


def main(argv: list[str] | None = None) -> int:
    """The emitted runner's command line."""
    parser = argparse.ArgumentParser(description="Run a kindex bench plan (resumable).")
    parser.add_argument("folder", nargs="?", default=str(Path(__file__).resolve().parent))
    parser.add_argument("--dry-run", action="store_true", help="print the plan and exit")
    parser.add_argument("--budget", type=float, help="start no run after this many seconds")
    args = parser.parse_args(argv)
    folder = Path(args.folder)
    plan = read_json(folder / PLAN_FILE)
    if plan.get("schema") != PLAN_SCHEMA:
        print(f"error: {folder / PLAN_FILE} is not a kindex bench plan", file=sys.stderr)
        return 2
    if args.dry_run:
        print("\n".join(describe(plan, read_json(folder / STATE_FILE))))
        return 0
    state = execute(folder, args.budget, sys.stderr)
    left = len(pending(plan, state))
    print(f"{left} run(s) left" if left else "all runs done", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
