"""What an import did: runs by kind, skips by reason (and the skip report file)."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from kindex_olap.importers.liger.runs import Conversion, Skip


@dataclass
class LigerImportReport:
    """What one import did: rows, runs by kind, skips by reason, files written."""

    sources: list[str] = field(default_factory=list)
    rows_read: int = 0
    runs: int = 0
    latency_curated: int = 0
    latency_generic: int = 0
    memory_runs: int = 0
    further_gpu_runs: int = 0
    kernelindex_exact: int = 0
    generic_reasons: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    duplicates: int = 0
    files_written: int = 0
    files_unchanged: int = 0
    dimension_documents: int = 0
    raw_dir: str = ""

    def summary(self) -> str:
        """Human-readable lines for the CLI."""
        lines = [
            f"rows read: {self.rows_read} from {len(self.sources)} CSV file(s)",
            f"runs: {self.runs} (latency curated {self.latency_curated}, latency generic "
            f"{self.latency_generic}, memory {self.memory_runs}; on further GPUs "
            f"{self.further_gpu_runs}; KernelIndex-identical {self.kernelindex_exact})",
            f"files written: {self.files_written}, unchanged: {self.files_unchanged} "
            f"in {self.raw_dir}",
            f"duplicate rows (same externalId): {self.duplicates}",
        ]
        if self.generic_reasons:
            lines.append("generic binding because: " + _counts(self.generic_reasons))
        lines.append("skipped: " + (_counts(self.skipped) if self.skipped else "none"))
        return "\n".join(lines)


def _counts(counts: dict[str, int]) -> str:
    """'a 3, b 1' in descending count order."""
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def report_from(conversion: Conversion, sources: list[str]) -> LigerImportReport:
    """Count a conversion's runs by kind and its skips by reason."""
    rep = LigerImportReport(sources=sources, rows_read=conversion.rows_read)
    reasons: Counter[str] = Counter()
    for run in conversion.runs.values():
        rep.runs += 1
        rep.further_gpu_runs += run.further_gpu
        if run.metric == "memory":
            rep.memory_runs += 1
        elif run.curation == "kernelindex":
            rep.latency_curated += 1
            rep.kernelindex_exact += not run.further_gpu
        else:
            rep.latency_generic += 1
        if run.generic_reason:
            reasons[run.generic_reason] += 1
    rep.generic_reasons = dict(reasons)
    rep.skipped = dict(Counter(s.reason for s in conversion.skips))
    rep.duplicates = conversion.duplicates
    rep.dimension_documents = len(conversion.dimensions)
    return rep


def write_skip_report(path: Path, skips: list[Skip]) -> None:
    """One JSON line per skipped row: file, line, reason, detail and the row itself."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        for s in skips:
            entry = {"file": s.file, "line": s.line, "reason": s.reason, "detail": s.detail}
            out.write(json.dumps({**entry, "row": s.row}, ensure_ascii=False) + "\n")
