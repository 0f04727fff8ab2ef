"""The error of Spark SQL generation: kindex's SQL holds a construct the generator has no rule
for. It is raised when the SQL is generated, never left for Spark to run differently."""

from __future__ import annotations

from kindex_olap.errors import QueryError


class GenerationError(QueryError):
    """kindex's DuckDB SQL cannot be turned into Spark SQL with the same answers."""

    def __init__(self, message: str, sql: str) -> None:
        snippet = " ".join(sql.split())[:160]
        super().__init__(
            f"{message} (in: {snippet})",
            hint="write it portably in sql/, or give kindex_olap/spark/rules.py a rule for it "
            "(docs/scale-out.md)",
        )
