"""What an import found and did: findings (what the export says about itself that does not
hold), counts, timings, and the --report file."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from kindex_olap.ingestion.pipeline import IngestReport

REPORT_LIMIT = 50


@dataclass
class Finding:
    """Something the export says about itself that does not hold, for one row."""

    kind: str
    table: str
    row_id: str
    source: str | None
    detail: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> bytes:
        """One line of the --report file."""
        body = {"kind": self.kind, "table": self.table, "id": self.row_id, "source": self.source}
        return orjson.dumps({**body, **self.detail})


@dataclass
class KernelIndexImport:
    """What one import did: counts, verification results, where the files went, timings."""

    export: str
    raw_dir: Path
    runs: int = 0
    runs_by_source: Counter[str] = field(default_factory=Counter)
    runs_by_gpu: Counter[str] = field(default_factory=Counter)
    serving_runs: int = 0
    serving_by_source: Counter[str] = field(default_factory=Counter)
    serving_by_gpu: Counter[str] = field(default_factory=Counter)
    dimensions: Counter[str] = field(default_factory=Counter)
    digests_checked: int = 0
    findings: Counter[str] = field(default_factory=Counter)
    examples: list[Finding] = field(default_factory=list)
    measurement_rows: int = 0
    files_written: int = 0
    files_unchanged: int = 0
    convert_seconds: float = 0.0
    ingest: IngestReport | None = None
    serving_added: int = 0
    seconds: float = 0.0

    def summary(self) -> str:
        """The lines the CLI prints (to stderr: diagnostics, not data)."""
        lines = [
            f"{self.export}: {self.runs} kernel runs, {self.serving_runs} serving runs, "
            f"{sum(self.dimensions.values())} dimension documents -> {self.raw_dir} "
            f"({self.files_written} files written, {self.files_unchanged} unchanged) "
            f"in {self.convert_seconds:.2f} s",
            f"runs per source: {_counts(self.runs_by_source + self.serving_by_source)}",
            f"runs per GPU: {_counts(self.runs_by_gpu)}",
            f"verified {self.digests_checked} digests and {self.measurement_rows} measurement "
            f"rows: {_counts(self.findings) or 'no problems'}",
        ]
        if self.ingest is not None:
            lines.append(self.ingest.summary())
            lines.append(f"{self.serving_added} serving runs added to the lake")
        lines.append(f"total {self.seconds:.2f} s")
        return "\n".join(lines)


def _counts(counts: Counter[str]) -> str:
    return ", ".join(f"{key} {n}" for key, n in sorted(counts.items(), key=lambda kv: -kv[1]))


def write_report(path: Path, findings: list[Finding]) -> None:
    """Every finding as one JSON line (the --report file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        for finding in findings:
            handle.write(finding.as_json() + b"\n")
