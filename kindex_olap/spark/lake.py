"""Reading one lake commit into Spark, read-only: each table's data files as the lake commit
lists them (kindex_olap.lake.store, the Delta logs through delta-rs), typed with kindex's schema
(sql/schema/tables.sql), its columns in kindex's order, partition columns (source, year,
environment_digest) included; a table without files is an empty DataFrame of that schema.

Spark never reads the Delta log itself: no delta-spark jars are installable offline, and the file
lists of one lake commit are what kindex's own reader uses too (docs/scale-out.md).
"""

from __future__ import annotations

from sqlglot import exp

from kindex_olap.lake.store import Snapshot
from kindex_olap.schema import TABLES, column_types
from kindex_olap.spark.types import DataFrame, SparkSession


def spark_type(duckdb_type: str) -> str:
    """kindex's DuckDB column type as a Spark type: TIMESTAMP (no time zone, UTC by kindex's
    convention) is TIMESTAMP_NTZ, which a Spark TIMESTAMP would shift by the session's zone."""
    node = exp.DataType.build(duckdb_type, dialect="duckdb")

    def ntz(part: exp.Expr) -> exp.Expr:
        if isinstance(part, exp.DataType) and part.this == exp.DataType.Type.TIMESTAMP:
            return exp.DataType.build("TIMESTAMP_NTZ", dialect="spark")
        return part

    return node.transform(ntz).sql(dialect="spark")


def schema_ddl(table: str) -> str:
    """`table`'s Spark schema as DDL, its columns in kindex's order."""
    return ", ".join(f"`{name}` {spark_type(kind)}" for name, kind in column_types()[table])


def read_table(spark: SparkSession, snapshot: Snapshot, table: str) -> DataFrame:
    """`table` at `snapshot`'s lake commit, typed and ordered as kindex's schema."""
    schema = schema_ddl(table)
    files = snapshot.tables.get(table) or []
    if not files:
        return spark.createDataFrame([], schema)
    frame = (
        spark.read.schema(schema)
        .option("basePath", str(snapshot.lake / table))
        .parquet(*(_uri(f) for f in files))
    )
    return frame.select(*(f"`{name}`" for name, _ in column_types()[table]))


def _uri(path: str) -> str:
    """A data file's path as Spark reads it: local paths as file: URIs (a path with `:` or `?`
    is not read as a Hadoop path otherwise); object-store URIs as they are."""
    return path if "://" in path else "file://" + path


def read_tables(spark: SparkSession, snapshot: Snapshot) -> dict[str, DataFrame]:
    """Every table of the lake commit."""
    return {table: read_table(spark, snapshot, table) for table in TABLES}
