"""Progress of `kindex ingest` and `kindex import` on stderr: a live bar on a terminal, nothing
while running otherwise (the command then prints its one summary line, as it always does).

The bar shows the phase (downloading, converting, staging, writing, computing verdict layers),
the input bytes staged out of the total, and documents, bundles/s and rejects so far. It appears
only once a job has run for SHOW_AFTER_S, so quick ingests do not flash a bar, and it is
transient: when the job ends it is wiped, leaving the summary line alone on the screen.
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kindex_olap.ingestion.pipeline import IngestProgress

SHOW_AFTER_S = 0.5
MIB = 1024 * 1024


class ProgressBar:
    """A context manager; `ingest` is the `progress` callback of `ingestion.pipeline.ingest`,
    `phase` names a step with no measure of its own (a download, a conversion)."""

    def __init__(self, quiet: bool) -> None:
        self.enabled = not quiet and sys.stderr.isatty()
        self.started = time.monotonic()
        self.bar: Any = None
        self.task: Any = None
        self.label = ""
        self.rate_since = self.started

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()

    def phase(self, label: str) -> None:
        """A step without a size: the bar pulses, labelled, with the time spent so far. Shown
        at once: nothing else would call back while a download or a conversion runs."""
        self.label = label
        self.rate_since = time.monotonic()
        self.started -= SHOW_AFTER_S
        if self._shown():
            self.bar.update(self.task, total=None, completed=0, description=label, size="", rate="")

    def ingest(self, progress: IngestProgress) -> None:
        """One ingest update: bytes staged of the total, documents, bundles/s, rejects."""
        if not self._shown():
            return
        # "writing runs (deduplicated, sorted)" was cut short at 80 columns
        if progress.phase == "writing":
            description = "writing runs"
        elif progress.phase == "layers":
            description = "computing verdict layers"
        else:
            description = self.label or "ingesting"
        seconds = max(time.monotonic() - self.rate_since, 1e-6)
        size = f"{progress.bytes_done / MIB:,.1f}/{progress.bytes_total / MIB:,.1f} MiB"
        rate = (
            f"{progress.documents:,} documents, {progress.documents / seconds:,.0f}/s, "
            f"{progress.rejected:,} rejected"
        )
        self.bar.update(
            self.task,
            total=max(progress.bytes_total, 1),
            completed=progress.bytes_done,
            description=description,
            size=size,
            rate=rate,
        )

    def _shown(self) -> bool:
        """Start the bar once the job has run SHOW_AFTER_S (never when disabled)."""
        if self.bar is not None:
            return True
        if not self.enabled or time.monotonic() - self.started < SHOW_AFTER_S:
            return False
        self.bar = _make_bar()
        self.bar.start()
        self.task = self.bar.add_task(self.label or "ingesting", total=None, size="", rate="")
        return True


def _make_bar() -> Any:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[size]}"),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
        transient=True,
        console=Console(stderr=True),
        refresh_per_second=8,
    )
