"""kindex: an analytical query engine for GPU-kernel benchmark results.

Library first: `ingest` builds the Parquet lake, `connect` opens DuckDB over its views. The CLI
(`kindex`) is a thin layer over these functions. Heavy modules load only when used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["IngestReport", "Lake", "connect", "ingest", "plot", "runs", "speedups", "summary"]

if TYPE_CHECKING:
    from kindex_olap.doors.plot import plot
    from kindex_olap.ingestion.pipeline import IngestReport, ingest
    from kindex_olap.query.api import runs, speedups, summary
    from kindex_olap.query.session import Lake


def __getattr__(name: str) -> Any:
    # Lazy exports keep `import kindex_olap` (and so `kindex --help`) fast.
    if name in {"ingest", "IngestReport"}:
        from kindex_olap.ingestion import pipeline

        return getattr(pipeline, name)
    if name == "connect":
        from kindex_olap.query import engine

        return engine.connect
    if name in {"speedups", "runs", "summary"}:
        from kindex_olap.query import api

        return getattr(api, name)
    if name == "Lake":
        from kindex_olap.query import session

        return session.Lake
    if name == "plot":
        from kindex_olap.doors import plot

        return plot.plot
    raise AttributeError(f"module 'kindex_olap' has no attribute {name!r}")
