"""Fetch the benchmark CSVs that ship inside liger-kernel's source distributions.

`pip download` cannot be used: for an sdist it always prepares metadata, i.e. runs the
package's build backend (and liger-kernel's fails without torch).  So kindex reads the same
indexes pip would (index-url and extra-index-url from `pip config` and PIP_* variables) via
the PEP 691 / PEP 503 simple API, downloads the `.tar.gz` sdist, checks its sha256 when the
index gives one, and extracts only `benchmark/data/all_benchmark_data*.csv`.  Extracted
files are cached under `$XDG_CACHE_HOME/kindex/liger/` (default `~/.cache/kindex/liger/`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import urllib.error
import urllib.parse
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

from kindex_olap.atomic import atomic_path, write_atomic
from kindex_olap.errors import SourceError
from kindex_olap.importers.download import fetch

PROJECT = "liger-kernel"
DEFAULT_INDEX = "https://pypi.org/simple"
CSV_MEMBER = re.compile(r"^[^/]+/benchmark/data/(all_benchmark_data[^/]*\.csv)$")
SDIST_NAME = re.compile(r"^liger[-_]kernel-(\d+(?:\.\d+)*)\.tar\.gz$", re.IGNORECASE)
HINT = (
    "pass a CSV_PATH instead, e.g. `kindex import liger path/to/all_benchmark_data.csv` "
    "(the file is benchmark/data/all_benchmark_data.csv in github.com/linkedin/Liger-Kernel)"
)


@dataclass(frozen=True)
class Sdist:
    """One release's source distribution on an index."""

    version: str
    url: str
    sha256: str | None


def cache_dir() -> Path:
    """kindex's Liger cache folder, honouring XDG_CACHE_HOME."""
    from kindex_olap.cache import cache_folder

    return cache_folder() / "liger"


def index_urls() -> list[str]:
    """The index URLs pip would use: index-url (or PyPI) first, then extra-index-urls."""
    config: dict[str, str] = {}
    try:
        out = subprocess.run(
            [sys.executable, "-m", "pip", "config", "list"],
            capture_output=True, text=True, timeout=30, check=False,
        ).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        out = ""
    for line in out.splitlines():
        key, _, value = line.partition("=")
        name = key.rsplit(".", 1)[-1]
        if name in ("index-url", "extra-index-url", "no-index"):
            config[name] = value.strip().strip("'\"")
    primary = os.environ.get("PIP_INDEX_URL") or config.get("index-url") or DEFAULT_INDEX
    extras = os.environ.get("PIP_EXTRA_INDEX_URL") or config.get("extra-index-url", "")
    return [primary, *extras.split()]


def version_key(version: str) -> tuple[int, ...]:
    """Numeric sort key of a plain release version like 0.8.5."""
    return tuple(int(part) for part in version.split("."))


class _Links(HTMLParser):
    """Collects the anchors of a PEP 503 project page."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str]] = []
        self._href: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._href = dict(attrs).get("href")

    def handle_data(self, data: str) -> None:
        if self._href is not None:
            self.links.append((data.strip(), self._href))
            self._href = None


def _project_files(index: str) -> list[tuple[str, str, str | None]]:
    """(filename, absolute url, sha256) of every file the index lists for liger-kernel."""
    page = index.rstrip("/") + f"/{PROJECT}/"
    accept = "application/vnd.pypi.simple.v1+json, text/html;q=0.1"
    body = fetch(page, accept=accept)
    try:
        data = json.loads(body)
        return [
            (f["filename"], urllib.parse.urljoin(page, f["url"]), f.get("hashes", {}).get("sha256"))
            for f in data.get("files", [])
        ]
    except (ValueError, AttributeError):
        parser = _Links()
        parser.feed(body.decode("utf-8", "replace"))
        out = []
        for text, href in parser.links:
            url, _, frag = urllib.parse.urljoin(page, href).partition("#")
            sha = frag.split("=", 1)[1] if frag.startswith("sha256=") else None
            out.append((text or url.rsplit("/", 1)[-1], url, sha))
        return out


def list_sdists() -> dict[str, Sdist]:
    """Every plain release with an sdist, across the configured indexes (first index wins)."""
    found: dict[str, Sdist] = {}
    errors: list[str] = []
    for index in index_urls():
        try:
            files = _project_files(index)
        except (urllib.error.URLError, OSError, ValueError) as exc:
            errors.append(f"{index} ({getattr(exc, 'reason', exc)})")
            continue
        for filename, url, sha in files:
            match = SDIST_NAME.match(filename)
            if match and match.group(1) not in found:
                found[match.group(1)] = Sdist(match.group(1), url, sha)
    if not found:
        where = "; ".join(errors) if errors else ", ".join(index_urls())
        raise SourceError(f"no {PROJECT} source distribution found on the package index: {where}",
                          hint=HINT)  # fmt: skip
    return found


def _extract_csvs(archive: Path, target: Path) -> list[Path]:
    """Extract benchmark/data/all_benchmark_data*.csv members of an sdist into target."""
    target.mkdir(parents=True, exist_ok=True)
    written = []
    with tarfile.open(archive, "r:gz") as tar:
        for member in tar:
            match = CSV_MEMBER.match(member.name)
            if not match or not member.isfile():
                continue
            source = tar.extractfile(member)
            if source is None:
                continue
            path = target / match.group(1)
            with source, atomic_path(path) as tmp, tmp.open("wb") as out:
                shutil.copyfileobj(source, out)
            written.append(path)
    return sorted(written)


def _download(sdist: Sdist, path: Path) -> None:
    """Download an sdist, verifying the index's sha256 when there is one."""
    try:
        body = fetch(sdist.url)
    except (urllib.error.URLError, OSError) as exc:
        raise SourceError(f"cannot download {sdist.url} ({getattr(exc, 'reason', exc)})",
                          hint=HINT) from exc  # fmt: skip
    if sdist.sha256 and hashlib.sha256(body).hexdigest() != sdist.sha256:
        raise SourceError(f"{sdist.url}: sha256 does not match the index's", hint=HINT)
    write_atomic(path, body)


def fetch_release(sdist: Sdist) -> list[Path]:
    """The release's benchmark CSVs, from the cache or its downloaded sdist ([] if none)."""
    folder = cache_dir() / sdist.version
    marker = folder / ".done"
    if not marker.exists():
        folder.mkdir(parents=True, exist_ok=True)
        archive = folder / f"liger_kernel-{sdist.version}.tar.gz"
        _download(sdist, archive)
        try:
            _extract_csvs(archive, folder)
        except (tarfile.TarError, OSError) as exc:
            raise SourceError(f"{archive}: not a readable sdist ({exc})", hint=HINT) from exc
        finally:
            archive.unlink(missing_ok=True)
        marker.write_text(sdist.url + "\n")
    return sorted(folder.glob("all_benchmark_data*.csv"))


def release_csvs(version: str | None) -> list[Path]:
    """CSVs of one release (None = the newest); a SourceError if it ships none."""
    sdists = list_sdists()
    if version is None:
        version = max(sdists, key=version_key)
    if version not in sdists:
        raise SourceError(f"{PROJECT} {version} has no source distribution on the package index",
                          hint=HINT)  # fmt: skip
    paths = fetch_release(sdists[version])
    if not paths:
        raise SourceError(
            f"{PROJECT} {version}'s source distribution carries no "
            "benchmark/data/all_benchmark_data.csv",
            hint=HINT,
        )
    return paths


def all_release_csvs() -> list[Path]:
    """CSVs of every release that ships them, oldest release first."""
    sdists = list_sdists()
    paths = [p for v in sorted(sdists, key=version_key) for p in fetch_release(sdists[v])]
    if not paths:
        raise SourceError(f"no {PROJECT} release carries benchmark CSVs", hint=HINT)
    return paths


def fetch_url(url: str) -> Path:
    """Download a CSV from an http(s) URL into the cache (refreshed on every call)."""
    name = hashlib.sha256(url.encode()).hexdigest()[:16]
    path = cache_dir() / "url" / f"{name}.csv"
    try:
        body = fetch(url)
    except (urllib.error.URLError, OSError) as exc:
        raise SourceError(
            f"cannot download {url} ({getattr(exc, 'reason', exc)})",
            hint="download it yourself and pass the file as CSV_PATH",
        ) from exc
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, body)
    return path
