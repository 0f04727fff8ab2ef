"""`kindex bench liger`: Liger-Kernel versions as the variants of an experiment.

The benchmark scripts come from the newest version's source distribution (benchmark/scripts/,
through the package-index path of importers/liger/pypi.py, or `--sdist FILE`); each version's
wheel (`--wheels DIR`, else `pip download --no-deps --only-binary`) is unpacked into its own
folder `site-<version>/` of the experiment (liger-kernel is pure Python: unpacking is what
installing does), which that version's runs get as PYTHONPATH. The user's environment is left
alone; torch and triton are the machine's own. A run is one script under one version in one
round, in a private copy of the scripts (they write their CSV to ../data beside themselves).
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Any

from kindex_olap.errors import ConfigError, SourceError, quoted
from kindex_olap.experiment.plan import new_plan

SCRIPTS = "scripts"
SCRIPT_MEMBER = re.compile(r"^[^/]+/benchmark/scripts/(.+)$")
WHEEL = re.compile(r"^liger_kernel-(\d+(?:\.\d+)*)-.*\.whl$")
# Liger's scripts time single Python calls that launch short kernels (rms_norm's forward: a 60 us
# call, a 10-40 us kernel): those timings follow the host's speed, which on the H200 machine
# here drops by up to 1.9x while a run keeps a CPU busy (docs/bench.md, "H200"). Liger runs are
# pinned to the fastest CPU at their start and the state file keeps the probe before and after
# each run; --repeat 2 (the fastest of two runs per round) was measured and did not settle
# rms_norm there, so the default stays one run per version and round.
REPEAT = 1


def parse_versions(text: str) -> list[str]:
    """`0.8.1,0.8.2` -> two distinct plain versions, oldest first."""
    versions = [v.strip() for v in text.split(",") if v.strip()]
    if (
        len(versions) < 2
        or len(set(versions)) != len(versions)
        or not all(re.fullmatch(r"\d+(\.\d+)*", v) for v in versions)
    ):
        raise ConfigError(f"--versions {quoted(text)}: give two or more releases, e.g. 0.8.1,0.8.2")
    return sorted(versions, key=lambda v: tuple(int(p) for p in v.split(".")))


def extract_scripts(sdist: Path, target: Path) -> list[str]:
    """Unpack benchmark/scripts/ of an sdist into target; the kernels it has scripts for."""
    try:
        with tarfile.open(sdist, "r:gz") as tar:
            for member in tar:
                match = SCRIPT_MEMBER.match(member.name)
                if match and member.isfile() and ".." not in match.group(1).split("/"):
                    source = tar.extractfile(member)
                    path = target / match.group(1)
                    path.parent.mkdir(parents=True, exist_ok=True)
                    if source is not None:
                        path.write_bytes(source.read())
    except (tarfile.TarError, OSError) as e:
        raise SourceError(f"{sdist}: not a readable sdist ({e})") from e
    kernels = sorted(p.stem.removeprefix("benchmark_") for p in target.glob("benchmark_*.py"))
    if not kernels:
        raise SourceError(f"{sdist}: no benchmark/scripts/benchmark_*.py in it")
    return kernels


def newest_sdist(version: str, into: Path) -> Path:
    """The sdist of `version` from the package index (pip's configuration), downloaded."""
    from kindex_olap.importers.download import fetch
    from kindex_olap.importers.liger import pypi

    sdists = pypi.list_sdists()
    if version not in sdists:
        raise SourceError(f"liger-kernel {version} has no sdist on the package index",
                          hint="pass --sdist FILE")  # fmt: skip
    body = fetch(sdists[version].url)
    path = into / f"liger_kernel-{version}.tar.gz"
    path.write_bytes(body)
    return path


def find_wheels(versions: list[str], wheels: Path | None, into: Path) -> dict[str, Path]:
    """Each version's wheel: from --wheels DIR, else downloaded by pip (no dependencies)."""
    if wheels is None:
        wheels = into / "wheels"
        for version in versions:
            pip = [sys.executable, "-m", "pip", "download", f"liger-kernel=={version}",
                   "--no-deps", "--only-binary", ":all:", "-d", str(wheels)]  # fmt: skip
            if subprocess.run(pip, capture_output=True, check=False).returncode:
                raise SourceError(f"pip could not download liger-kernel {version}'s wheel",
                                  hint="pass --wheels DIR with the wheels")  # fmt: skip
    found = {m.group(1): p for p in wheels.glob("*.whl") if (m := WHEEL.match(p.name))}
    missing = [v for v in versions if v not in found]
    if missing:
        raise SourceError(f"{wheels}: no liger_kernel wheel of {', '.join(missing)}",
                          hint="liger_kernel-VERSION-py3-none-any.whl, one per version")  # fmt: skip
    return {v: found[v] for v in versions}


def unpack_wheel(wheel: Path, target: Path) -> str:
    """Unpack a pure-Python wheel into its own folder; its sha256."""
    if target.exists():
        shutil.rmtree(target)
    try:
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(target)
    except (zipfile.BadZipFile, OSError) as e:
        raise SourceError(f"{wheel}: not a readable wheel ({e})") from e
    return hashlib.sha256(wheel.read_bytes()).hexdigest()


def liger_plan(
    folder: Path,
    versions: list[str],
    kernels: list[str],
    rounds: int,
    timeout_s: float,
    sdist: Path | None = None,
    wheels: Path | None = None,
    repeat: int = REPEAT,
    pin_cpu: bool = True,
) -> dict[str, Any]:
    """Prepare the experiment folder (scripts, one site folder per version) and its plan."""
    folder.mkdir(parents=True, exist_ok=True)
    scripts = folder / SCRIPTS / "benchmark" / "scripts"
    downloaded = None if sdist else newest_sdist(versions[-1], folder)
    try:
        available = extract_scripts(sdist or downloaded or Path(), scripts)
    finally:
        if downloaded is not None:
            downloaded.unlink(missing_ok=True)  # the folder travels: carry only the scripts
    unknown = [k for k in kernels if k not in available]
    if unknown:
        raise ConfigError(f"no benchmark script for {', '.join(unknown)}",
                          hint=f"scripts: {', '.join(available)}")  # fmt: skip
    variants = {}
    for version, wheel in find_wheels(versions, wheels, folder).items():
        digest = unpack_wheel(wheel, folder / f"site-{version}")
        variants[version] = {
            "command": [], "version": version, "wheel_sha256": digest,
            "jobs": {k: ["{python}", f"benchmark/scripts/benchmark_{k}.py"] for k in kernels},
            "env": {"PYTHONPATH": f"{{dir}}/site-{version}"},
        }  # fmt: skip
    plan = new_plan(folder, "liger", kernels, variants, rounds, timeout_s, repeat, pin_cpu)
    plan["copy_into_run"] = {f"{SCRIPTS}/benchmark/scripts": "benchmark/scripts"}
    return plan


def emit_runner(folder: Path) -> Path:
    """Write the stdlib runner beside the plan: `python kindex_bench_runner.py` runs it."""
    from kindex_olap.experiment import standalone

    target = folder / "kindex_bench_runner.py"
    shutil.copyfile(standalone.__file__, target)
    return target
