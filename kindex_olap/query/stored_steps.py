"""The step verbs and `kindex check` read from the lake commit's stored steps (layer_steps).

A stored step holds what its row shows and what its verdict reads (kindex_olap.layers.steps);
its q-value comes from the lake commit's correction (query/stored.py stored_correction, kept
per lake commit) and its verdict from the rules asked, by query/steps.py's own judge_steps, so
a stored answer is the whole lake's live analysis row for row (tests/test_layers.py). A step
verb shows only steps that moved by more than the threshold, so it reads only those (for a
kernel of the 1M-run bench lake, 18,575 of its 40,500 steps, where reading its series' 25k
points and testing them took 4x as long: docs/performance.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb
import numpy as np
from numpy.typing import NDArray

from kindex_olap.arrow_numpy import (
    flags,
    indices,
    integers,
    numbers,
    objects,
    strings,
    times,
)
from kindex_olap.errors import from_duckdb
from kindex_olap.lake.tables import partition_folder, scan_sql
from kindex_olap.natural import natural_key
from kindex_olap.query.correction import Correction
from kindex_olap.query.history_report import (
    STEP_COLUMNS,
    Selected,
    Table,
    notes,
    nums,
    shown_verdicts,
)
from kindex_olap.query.new_runs import NewRuns
from kindex_olap.query.steps import (
    IMPROVEMENT,
    REGRESSION,
    Columns,
    Rules,
    Steps,
    environment_shift,
    judge_steps,
)
from kindex_olap.query.stored import layer_files, stored_correction
from kindex_olap.query.variables import forget, variable

if TYPE_CHECKING:
    import pyarrow as pa

# a step row's columns as layer_steps names them (verdict and q_value are computed)
_STORED = {"implementation": "provider", "to_version": "version"}
_SHOWN = [_STORED.get(c, c) for c in STEP_COLUMNS if c not in ("verdict", "q_value")]
# what the verdict reads
_RULED = (
    "kernel", "series", "log_change", "se", "base_change", "is_baseline", "judged",
    "comparable", "changepoint", "cp_pvalue", "series_order", "point_index",
)  # fmt: skip
# the columns a step row is sorted by (history_report.sorted_rows)
SORTED = 6
_READ = ", ".join(dict.fromkeys([*_SHOWN, *_RULED]))
# what the step verbs' verdicts need besides a change beyond the threshold (fixed SQL text): a
# regression or an improvement is a comparable step both points' noise judged, in its direction
# (latency up is worse, speedup down)
_WORSE = "(series = 'latency') = (log_change > 0)"
_NEEDS: dict[tuple[str, ...], str] = {
    (REGRESSION,): f"judged AND comparable AND {_WORSE}",
    (IMPROVEMENT,): f"judged AND comparable AND NOT {_WORSE}",
}


# a regression or an improvement is significant: the q-value of its step's test or of its
# change point at most the q level, so its p-value at most that family's cutoff
# (Correction.cutoff): for the step's test, |log_change| / se at least the z-score of that
# p-value (query/steps.py two_sided). Only a bound: the verdicts are judged after the read, as
# for every step; a `regressions KERNEL` read the kernel's every step beyond the threshold
_SIGNIFICANT = "(abs(log_change) >= ? * se OR (changepoint AND cp_pvalue <= ?))"


def significance_bounds(correction: Correction, q_level: float) -> list[float]:
    """_SIGNIFICANT's parameters: the least |z| of a step test whose q-value can be at most
    `q_level` (infinite: none can), and the largest change-point p-value (-1: none), each
    loosened by a relative 1e-9 against rounding."""
    step, change_point = (
        correction.steps.cutoff(q_level),
        correction.change_points.cutoff(q_level),
    )
    z = math.inf
    if step is not None:
        low, high = 0.0, 40.0  # erfc(40 / sqrt(2)) underflows: every smaller p-value is 0
        for _ in range(80):  # bisection: two_sided's p-value falls as |z| rises
            middle = (low + high) / 2
            low, high = (middle, high) if math.erfc(middle / math.sqrt(2)) > step else (low, middle)
        z = high * (1 - 1e-9)
    return [z, -1.0 if change_point is None else change_point * (1 + 1e-9)]


@dataclass
class StoredSteps:
    """Steps read from layer_steps (as Arrow: a row's text becomes Python objects only for the
    rows shown, which cost 0.15 s of a 0.3 s `regressions kernel05` at 1M runs when every row
    read was converted) with their verdicts and q-values under the rules asked."""

    read: pa.Table  # in the order read
    order: NDArray[np.intp]  # the steps' order (step i is read's row order[i])
    columns: Columns  # what the verdicts read, as numpy, in the steps' order
    verdict: list[str]
    qvalue: NDArray[np.float64]

    def rows(self, shown: NDArray[np.intp]) -> list[tuple[Any, ...]]:
        """The steps `shown` as rows of STEP_COLUMNS, in row order."""
        head = self.read.select([_STORED.get(n, n) for n in STEP_COLUMNS[:SORTED]])
        shown = shown[_natural_order(head.take(indices(self.order[shown])))]
        taken = self.read.take(indices(self.order[shown]))
        out: dict[str, list[Any]] = {
            "verdict": [self.verdict[i] for i in shown.tolist()],
            "q_value": self.qvalue[shown].astype(float).tolist(),
        }
        for name in STEP_COLUMNS:
            if name not in out:
                out[name] = _pylist(taken.column(_STORED.get(name, name)))
        return list(zip(*(out[name] for name in STEP_COLUMNS), strict=True))


def _natural_order(head: pa.Table) -> NDArray[np.intp]:
    """The permutation that puts the rows of `head` (a step row's first SORTED columns) in
    history_report.sorted_rows' order (natural_key of each value, stable): each column's
    distinct values ranked once, then one integer sort (sorting 7,366 rows as Python tuples
    cost 15 ms, ranking each value in Python as much)."""
    ranks = []
    for column in head.columns:
        encoded = column.combine_chunks().dictionary_encode()
        labels = ["" if v is None else str(v) for v in encoded.dictionary.to_pylist()]
        labels.append("")  # where the value is NULL
        keyed = sorted((natural_key(label), i) for i, label in enumerate(labels))
        rank = np.empty(len(labels), dtype=np.int64)
        previous, at = None, -1
        for key, i in keyed:  # equal keys share a rank, as in a tuple sort
            if key != previous:
                previous, at = key, at + 1
            rank[i] = at
        codes = numbers(encoded.indices)  # NaN where the value is NULL
        ranks.append(rank[np.where(np.isnan(codes), len(labels) - 1, codes).astype(np.intp)])
    return np.lexsort(ranks[::-1]).astype(np.intp)  # stable; the last key leads


def _holding(read: pa.Table, runs: list[str]) -> pa.Table:
    """The rows of `read` whose run_ids hold one of `runs`, without run_ids: matched here, on
    the few steps read, where unnesting every step's runs in DuckDB cost 20 of a check's 35 ms
    at 1M runs."""
    import pyarrow.compute as pc

    run_ids = read.column("run_ids").combine_chunks()
    hit = flags(pc.is_in(pc.list_flatten(run_ids), value_set=strings(runs)))
    rows = np.unique(integers(pc.list_parent_indices(run_ids))[hit])
    return read.drop_columns(["run_ids"]).take(indices(rows))


def _ruled(column: pa.ChunkedArray) -> NDArray[Any]:
    """A column the verdicts read as numpy: text as objects, flags as booleans (NULL False),
    whole numbers as int64 where none is NULL, other numbers as floats (NULL NaN)."""
    import pyarrow as pa

    kind = column.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_dictionary(kind):
        return objects(column)
    if pa.types.is_boolean(kind):
        return flags(column)
    if pa.types.is_integer(kind) and column.null_count == 0:
        return integers(column)
    return numbers(column)


def _pylist(column: pa.ChunkedArray) -> list[Any]:
    """A column's values as Python objects: floats None where not finite, timestamps through
    numpy (pyarrow's to_pylist makes a datetime 20x slower: 35 ms of the 7,366 rows of
    `regressions kernel05` at 1M runs)."""
    import pyarrow as pa

    if pa.types.is_floating(column.type):
        return nums(numbers(column))
    if pa.types.is_timestamp(column.type) and column.type.tz is None and column.type.unit == "us":
        return times(column)
    listed: list[Any] = column.to_pylist()
    return listed


def step_answer(
    con: duckdb.DuckDBPyConnection,
    steps: tuple[str, ...],
    clauses: list[str],
    params: list[Any],
    rules: Rules,
) -> Table:
    """The stored steps whose verdict starts with one of `steps` (a step verb's) among those
    into a point `clauses` select, of an implementation measured against a baseline. A step
    the noise cannot judge shows only when it moved by more than the threshold, as every other
    verdict a step verb shows: the steps read are those."""
    correction, scope = stored_correction(con)
    smallest = min([rules.threshold, *(value for _, value in rules.thresholds)])
    needs, more = [_NEEDS.get(steps, "true")], []
    if steps in _NEEDS:
        needs.append(_SIGNIFICANT)
        more = significance_bounds(correction, rules.q_level)
    source = "layer_steps"
    if more and variable(con, "kindex_session") and _significant(con, more):
        source, needs, more = SIGNIFICANT, needs[:1], []  # those bounds are the kept rows'
    selected = " AND ".join([*clauses, *needs])
    found = _read(
        con,
        f"SELECT {_READ} FROM {source} WHERE {selected} AND NOT is_baseline "
        "AND abs(log_change) > ?",
        [*params, *more, math.log1p(smallest)],
        correction,
        rules,
    )  # fixed names and clauses; the values are parameters
    bound = np.log1p(rules.per_point(found.columns["kernel"]))
    shown = np.flatnonzero(shown_verdicts(found.verdict, found.columns["log_change"], bound, steps))
    table = Table(list(STEP_COLUMNS), found.rows(shown))
    table.notes.extend(notes(scope, rules, all_branches=False))
    if not table.rows:
        table.selected = _selected(con, clauses, params)
    return table


def _selected(con: duckdb.DuckDBPyConnection, clauses: list[str], params: list[Any]) -> Selected:
    """history_report.selected_steps over the stored steps `clauses` select."""
    row = con.execute(
        "SELECT count(*), count(*) FILTER (WHERE NOT is_baseline), "
        "list(DISTINCT provider ORDER BY provider) FILTER (WHERE is_baseline AND provider <> '') "
        f"FROM layer_steps WHERE {' AND '.join(clauses) or 'true'}",
        params,
    ).fetchall()[0]  # fixed clauses; the values are parameters
    return Selected(int(row[0]), int(row[1]), [str(v) for v in row[2] or []])


# A session (kindex_olap.Lake) keeps the lake commit's steps that can be a regression or an
# improvement under one significance bound (_SIGNIFICANT) in a temporary table, and its step
# verbs read them instead of the layer's files: at 1M runs with replicates, 962 of 804k
# steps, read in 2 ms where `regressions kernel05` read 17 row groups in 20-30 ms (registered
# as Arrow instead: 5 ms). Only in a session (finding them reads every step: 0.2-0.5 s at 1M
# runs, which a one-shot command would pay for one answer) and only while they are few; else
# the files are read as before. Which lake commit and bound the table holds is a variable of
# the connection (read with the others: query/variables.py).
SIGNIFICANT = "kindex_significant_steps"
SIGNIFICANT_ROWS = 100_000
_TOO_MANY = "too many"


def _significant(con: duckdb.DuckDBPyConnection, bounds: list[float]) -> bool:
    """Whether SIGNIFICANT holds, on `con`, the steps of the lake commit `con` reads that pass
    `bounds` (made here when it holds none or another's); False when they are too many to
    keep (SIGNIFICANT_ROWS)."""
    import hashlib

    key = hashlib.sha256(
        "\x1f".join([*layer_files(con, "layer_steps_files"), *map(repr, bounds)]).encode()
    ).hexdigest()
    held = variable(con, "kindex_significant")
    if held in (key, f"{key} {_TOO_MANY}"):
        return bool(held == key)
    # a regression's or an improvement's needs but the direction (_NEEDS)
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE {SIGNIFICANT} AS SELECT * EXCLUDE (run_ids) "
        f"FROM layer_steps WHERE judged AND comparable AND NOT is_baseline AND {_SIGNIFICANT}",
        bounds,
    ).fetchall()  # fixed names
    rows = int(con.execute(f"SELECT count(*) FROM {SIGNIFICANT}").fetchall()[0][0])
    if rows > SIGNIFICANT_ROWS:
        con.execute(f"DROP TABLE {SIGNIFICANT}").fetchall()
        key = f"{key} {_TOO_MANY}"
    con.execute("SET VARIABLE kindex_significant = ?", [key]).fetchall()
    forget(con)
    return rows <= SIGNIFICANT_ROWS


def new_steps(
    con: duckdb.DuckDBPyConnection,
    clauses: list[str],
    params: list[Any],
    new: NewRuns,
    rules: Rules,
) -> StoredSteps:
    """`kindex check`'s steps: every comparable step into a point `clauses` select that holds
    one of the `new` runs (query/new_runs.py), of an implementation measured against a
    baseline, with its verdict and q-value. Only what can hold one is read: the files of the
    new runs' environments, the points last observed and whose newest run was ingested since
    the earliest new run (a partition's newest ingest has a file of its own: SPLIT in
    kindex_olap.lake.tables), of their kernels. Each bound is a plain comparison where it
    applies, not `? IS NULL OR ...`: DuckDB skips files and row groups by their statistics only
    for the former (a check read every file's column, 6 of its 15 ms at 1M runs)."""
    correction, _ = stored_correction(con)
    where = [*clauses, "NOT is_baseline", "comparable"]
    values = list(params)
    for column, bound in (("to_observed", new.earliest), ("to_ingested", new.ingested)):
        if bound is not None:
            where.append(f"{column} >= ?::TIMESTAMP")  # names from this tuple
            values.append(bound)
    if new.kernels is not None:
        where.append("list_contains(?::VARCHAR[], kernel)")
        values.append(new.kernels)
    source, read = "layer_steps", []
    files = [] if None in new.environments else _partition_files(con, new.environments)
    if files:  # else the new runs' environments have no steps file: the view reads its empty one
        # the files as a parameter (a variable set for them cost a statement, 0.25 ms)
        source, read = f"({scan_sql('layer_steps', '?::VARCHAR[]')})", [files]
    holding = None if new.alone else new.run_ids
    return _read(
        con,
        f"SELECT {_READ}{'' if holding is None else ', run_ids'} FROM {source} "
        f"WHERE {' AND '.join(f'({c})' for c in where)}",
        [*read, *values],
        correction,
        rules,
        holding=holding,
    )  # fixed names and clauses; the values are parameters


def _partition_files(con: duckdb.DuckDBPyConnection, environments: list[str | None]) -> list[str]:
    """The layer_steps files of the lake commit `con` reads that hold `environments`' steps
    (their partition folders)."""
    folders = {f"environment_digest={partition_folder(e)}" for e in environments}
    files = variable(con, "layer_steps_files") or []
    return [f for f in files if Path(f).parent.name in folders]


def _read(
    con: duckdb.DuckDBPyConnection,
    sql: str,
    params: list[Any],
    correction: Correction,
    rules: Rules,
    holding: list[str] | None = None,
) -> StoredSteps:
    """The steps `sql` reads, judged under `rules` by kind as the live analysis judges them
    (query/steps.py); with `holding`, only those whose run_ids hold one of these runs."""
    try:
        read: pa.Table = con.sql(sql, params=params).to_arrow_table()
    except duckdb.Error as e:
        raise from_duckdb(e, "history query failed") from e
    if holding is not None:
        read = _holding(read, holding)
    # each series' steps in order (what a stable sort of the rows keeps): sorted here, as two
    # integer columns, where DuckDB's ORDER BY sorted every column read (2-3x the read's time)
    # (the numpy columns the verdicts read are put in that order; the rest of a row is taken
    # for the rows shown alone: taking every column of every row read cost 0.4 ms of a check)
    order = np.lexsort(
        (integers(read.column("point_index")), integers(read.column("series_order")))
    ).astype(np.intp)
    columns = {name: _ruled(read.column(name))[order] for name in _RULED}
    verdict: list[Any] = [None] * read.num_rows
    qvalue = np.ones(read.num_rows)
    for kind in ("latency", "speedup"):
        at = np.flatnonzero(columns["series"] == kind)
        log_change = columns["log_change"][at].astype(float)
        bound = np.log1p(rules.per_point(columns["kernel"][at]))
        shift = environment_shift(
            log_change, columns["base_change"][at].astype(float), columns["is_baseline"][at], bound
        )
        steps = Steps(
            kind, at, at, np.exp(log_change), log_change, columns["se"][at].astype(float),
            columns["judged"][at].astype(bool), shift, columns["comparable"][at].astype(bool),
        )  # fmt: skip
        steps.changepoint = columns["changepoint"][at].astype(bool)
        steps.cp_pvalue = columns["cp_pvalue"][at].astype(float)
        judge_steps(steps, columns["kernel"][at], correction, rules)
        for i, v in zip(at.tolist(), steps.verdict, strict=True):
            verdict[i] = v
        qvalue[at] = steps.qvalue
    return StoredSteps(read, order, columns, verdict, qvalue)
