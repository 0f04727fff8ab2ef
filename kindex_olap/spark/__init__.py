"""kindex on Apache Spark: the same answers, generated from the one SQL source in sql/.

`register(spark, lake, as_of=None)` gives a SparkSession every table and view of one lake
commit; `kindex query --engine spark` and `kindex spark-sql` run on a local session. Importing
this package loads neither pyspark nor sqlglot (the CLI's start-up); docs/scale-out.md.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from kindex_olap.spark.types import SparkSession

if TYPE_CHECKING:
    from kindex_olap.lake.store import Snapshot

__all__ = ["register"]


def register(
    spark: SparkSession, lake: str | os.PathLike[str] | None = None, as_of: str | None = None
) -> Snapshot:
    """Register every table and view of one lake commit in `spark` (kindex_olap.spark.session)."""
    from kindex_olap.spark.session import register as _register

    return _register(spark, lake, as_of)
