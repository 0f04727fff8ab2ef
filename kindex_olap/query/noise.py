"""The noise model's Python side: its settings and the once-per-connection model table.

The model itself is SQL (sql/views/noise.sql, included into the views): replicate pairs, per
environment and latency class a floor (the 95th percentile of the run-to-run change of repeats of
the same code) with the number of pairs behind it and its source, and the rule that widens a
speedup's interval by both sides' noise. The settings are SQL macros there, the one set of
constants; `settings()` reads them so that Python code (history's step rules) uses the same.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import duckdb

from kindex_olap.query.engine import reads_layers
from kindex_olap.sqlfiles import statements

NOISE_FILE = "views/noise.sql"
# The temp tables behind the views once materialize ran (each filled from its table macro
# <view>_for(environments)), and the environments computed so far (ALL: every one).
MODEL_TABLE = "noise_model_table"
_TABLES = (
    (MODEL_TABLE, "noise_model_for"),
    ("noise_floors_table", "noise_floors_for"),
    ("replicate_spread_table", "replicate_spread_for"),
    ("run_noise_table", "run_noise_for"),
)
COVERED_TABLE = "noise_model_covered"
_BY_RUN = ("replicate_spread_for", "run_noise_for")
ALL = "*"


@dataclass(frozen=True)
class LatencyClass:
    """A latency class: central values in [lower_ns, upper_ns) and its documented default."""

    rank: int
    label: str
    lower_ns: float
    upper_ns: float | None
    default_floor: float


@dataclass(frozen=True)
class NoiseSettings:
    """The constants of sql/views/noise.sql."""

    quantile: float
    min_pairs: int
    min_floor: float
    bootstrap_resamples: int
    bootstrap_seed: int
    classes: tuple[LatencyClass, ...]

    def latency_class(self, ns: float) -> LatencyClass:
        """The class of a central value in ns."""
        for item in self.classes:
            if ns >= item.lower_ns and (item.upper_ns is None or ns < item.upper_ns):
                return item
        raise ValueError(f"no latency class holds {ns} ns")


_SETTING_MACROS = tuple(
    f"CREATE OR REPLACE MACRO {name}("
    for name in (
        "kindex_noise_quantile",
        "kindex_noise_min_pairs",
        "kindex_noise_min_floor",
        "kindex_bootstrap_resamples",
        "kindex_bootstrap_seed",
        "kindex_latency_classes",
    )
)


@cache
def settings() -> NoiseSettings:
    """The settings, read from sql/views/noise.sql's macros (a throwaway in-memory DuckDB)."""
    con = duckdb.connect(":memory:")
    try:
        for statement in statements(NOISE_FILE):
            if statement.startswith(_SETTING_MACROS):
                con.execute(statement).fetchall()
        row = con.execute(
            "SELECT kindex_noise_quantile(), kindex_noise_min_pairs(), kindex_noise_min_floor(), "
            "kindex_bootstrap_resamples(), kindex_bootstrap_seed()"
        ).fetchone()
        assert row is not None
        classes = con.execute(
            "SELECT class_rank, latency_class, lower_ns, upper_ns, default_floor "
            "FROM kindex_latency_classes() ORDER BY class_rank"
        ).fetchall()
    finally:
        con.close()
    return NoiseSettings(
        quantile=float(row[0]),
        min_pairs=int(row[1]),
        min_floor=float(row[2]),
        bootstrap_resamples=int(row[3]),
        bootstrap_seed=int(row[4]),
        classes=tuple(
            LatencyClass(int(r), str(label), float(lo), None if hi is None else float(hi), float(f))
            for r, label, lo, hi, f in classes
        ),
    )


def single_run_noise(floor: float) -> float:
    """One run's noise (log half-width) in a class with this floor (sql kindex_side_noise)."""
    return max(math.log1p(floor), math.log1p(settings().min_floor)) / math.sqrt(2)


def materialize(con: duckdb.DuckDBPyConnection, environments: list[str] | None = None) -> None:
    """Compute the model of `environments` (None: every one) once for this connection:
    noise_model, noise_floors, replicate_spread and run_noise then read temp tables that hold
    every environment computed so far.

    The live views pair every timed run of the lake (about 0.6 s at 300k runs); a query needs
    only its own environments, and a connection asks for each of them once. Where the views read
    the lake commit's layers (kindex_olap.layers), there is nothing to compute.
    """
    if reads_layers(con):
        return
    if not _has_table(con):
        for table, source in _TABLES:
            con.execute(
                f"CREATE TEMP TABLE {table} AS SELECT * FROM {source}(?) LIMIT 0", [[]]
            ).fetchall()  # names from this module's constants
        con.execute(f"CREATE TEMP TABLE {COVERED_TABLE} (environment_digest VARCHAR)").fetchall()
        for table, source in _TABLES:
            view = source.removesuffix("_for")
            con.execute(
                f"CREATE OR REPLACE TEMP VIEW {view} AS SELECT * FROM temp.{table}"
            ).fetchall()  # TEMP: found before the catalog's view (query/catalog.py)
    covered = {row[0] for row in con.execute(f"SELECT * FROM temp.{COVERED_TABLE}").fetchall()}
    if ALL in covered:
        return
    missing = None if environments is None else sorted(set(environments) - covered)
    if missing == []:
        return
    for table, source in _TABLES:  # in order: each reads the views of the ones before
        # sorted by environment: a pairing joins on (environment, run id), and DuckDB pushes the
        # range of the join keys into the scan, so a query about one GPU reads that GPU's rows
        order = " ORDER BY environment_digest, run_id" if source in _BY_RUN else ""
        con.execute(
            f"INSERT INTO temp.{table} SELECT * FROM {source}(?) "
            f"WHERE NOT list_contains(?, environment_digest){order}",
            [missing, sorted(covered)],
        ).fetchall()
    marks = [ALL] if missing is None else missing
    con.executemany(f"INSERT INTO temp.{COVERED_TABLE} VALUES (?)", [[m] for m in marks])


def _has_table(con: duckdb.DuckDBPyConnection) -> bool:
    row = con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE table_name = ? AND temporary",
        [MODEL_TABLE],
    ).fetchone()
    return bool(row and row[0])
