"""Analyst-ready exports: denormalized, sorted, zstd Parquet (or CSV) plus a data dictionary.

`export(out)` writes `speedups.parquet` (every comparable pair: ratio, the runs' own and the
noise-widened interval, noise and its source, verdict, evidence and the runs behind each side)
and `runs.parquet` (every run with its central value, p20/p80 and sample count, failed runs
too): every column of the views `speedups` and `observed_values` as DuckDB describes them, the
workload axes map as one `axis_<name>` column per axis, and `README.md` describing every column
(types from DuckDB, meanings from COLUMNS, the one table of them) and the comparability rule. A
shorthand query (as in `kindex query`) narrows both files to what it selects.

Files are written with DuckDB relation methods (`write_parquet`, `write_csv`): no path is ever
formatted into SQL. Rows are sorted by kernel, then GPU, so that Parquet row-group statistics
let readers skip whole row groups when they filter on kernel or GPU.
"""

from __future__ import annotations

import dataclasses
import enum
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from kindex_olap.atomic import write_atomic
from kindex_olap.errors import ConfigError, from_duckdb
from kindex_olap.lake.spill import MEMORY_LIMIT
from kindex_olap.query.compile import Options, where_of
from kindex_olap.query.engine import VIEWS_FILE, connect, quote_identifier, snapshot_of
from kindex_olap.query.shorthand import Query, parse
from kindex_olap.query.vocabulary import load_vocabulary
from kindex_olap.sqlfiles import read_sql

# What the export's DuckDB holds before it spills, into a folder of the export's own (on the
# disk the user chose for the output, not a RAM-backed /tmp), removed when it ends: without a
# limit an export of a 1M-run lake peaked at 3.8 GB RSS (docs/performance.md).
SPILL_FOLDER = ".kindex-spill"
ROW_GROUP_SIZE = 8192  # rows; small enough that per-kernel statistics can skip row groups


class ExportFormat(enum.StrEnum):
    """File formats of `kindex export`."""

    parquet = "parquet"
    csv = "csv"


# The data dictionary: (unit, meaning) of every column the exported views define, kept here
# and nowhere else. An export writes the view's columns as DuckDB describes them (names, types,
# order), less LEFT_OUT; a test fails when a view gains a column this table does not describe,
# or when an entry here names no exported column.
COLUMNS: dict[str, tuple[str, str]] = {
    # both files
    "kernel": ("", "Kernel (operation) name, e.g. jsd, cross_entropy"),
    "operation_family": ("", "Family of the operation (e.g. rmsnorm), when the spec names one"),
    "pass": ("", "Pass measured: forward, backward or full"),
    "gpu": ("", "GPU model: the product and its form factor, e.g. NVIDIA B200, NVIDIA H100 PCIe"),
    "form_factor": ("", "GPU form factor, e.g. SXM5, PCIe (empty when unknown)"),
    "gpu_arch": ("", "GPU architecture, e.g. sm_100"),
    "environment": ("", "Name of the benchmark environment (machine + software stack)"),
    "protocol_family": ("", "Comparability family of the measurement protocol"),
    "timer": ("", "Timer of the protocol, e.g. cuda_event"),
    "metric": ("", "Measured quantity: latency, memory, ..."),
    "statistic": ("", "Statistic of the primary value, e.g. median"),
    "unit": ("", "Unit of the run's values as published (value, p20, p80 in runs)"),
    "shape": ("", "Human label of the workload shape, e.g. tokens4096-vocab128256-fp32"),
    "dtype": ("", "Data type of the workload's tensors, e.g. fp32, bf16"),
    "workload_digest": ("", "sha256 of the workload spec (shape, dtypes, axes)"),
    "environment_digest": ("", "sha256 of the environment spec"),
    "protocol_digest": ("", "sha256 of the measurement protocol spec"),
    # speedups
    "pairing": ("", "'latest': newest run of each side; 'same_version': runs of one version"),
    "candidate": ("", "Provider of the candidate implementation, e.g. liger"),
    "baseline": ("", "Provider of the baseline implementation, e.g. torch"),
    "candidate_name": ("", "Display name of the candidate implementation"),
    "baseline_name": ("", "Display name of the baseline implementation"),
    "baseline_is_reference": ("", "True when the baseline is the cell's reference (torch, ...)"),
    "baseline_rule": (
        "",
        "Why the baseline is its cell's default: 'reference' (a reference implementation), "
        "'fastest' (no reference in the cell: its fastest implementation), empty: it is not",
    ),
    "candidate_version": ("", "Version label of the candidate run"),
    "baseline_version": ("", "Version label of the baseline run"),
    "candidate_observed_at": ("UTC", "When the candidate run was measured"),
    "baseline_observed_at": ("UTC", "When the baseline run was measured"),
    "latest_in_version": ("", "Both runs are the newest of their side within that version"),
    "candidate_runs": (
        "runs",
        "Runs behind the candidate side: its version's runs in its series when it is the "
        "series' newest run (replicates), else 1",
    ),
    "baseline_runs": ("runs", "Runs behind the baseline side, as candidate_runs"),
    "candidate_samples": ("calls", "Timed calls of the candidate run (empty when unpublished)"),
    "baseline_samples": ("calls", "Timed calls of the baseline run (empty when unpublished)"),
    "candidate_run_id": ("", "run_id of the candidate run (join to runs.run_id)"),
    "baseline_run_id": ("", "run_id of the baseline run (join to runs.run_id)"),
    "speedup": ("ratio", "baseline_ns / candidate_ns: > 1 means the candidate is faster"),
    "run_speedup_lo": ("ratio", "The runs' own low end: baseline p20 / candidate p80"),
    "run_speedup_hi": ("ratio", "The runs' own high end: baseline p80 / candidate p20"),
    "noise": (
        "fraction",
        "Run-to-run noise of the pair (both sides' noise combined; 0.05: 5 %) that widens "
        "run_speedup_lo/hi into speedup_lo/hi",
    ),
    "noise_source": (
        "",
        "Where each side's noise comes from: 'spread' (its replicates), else its GPU and "
        "latency class's floor ('replicates', 'same label', 'default', ...); 'a/b' when the "
        "sides differ",
    ),
    "speedup_lo": ("ratio", "Low end of the interval: run_speedup_lo / (1 + noise)"),
    "speedup_hi": ("ratio", "High end of the interval: run_speedup_hi * (1 + noise)"),
    "verdict": ("", "faster (speedup_lo > 1), slower (speedup_hi < 1), else within noise"),
    "evidence": (
        "",
        "What the interval stands on where it matters: 'single timing' (a side timed once), "
        "'replicates N vs M'; empty otherwise",
    ),
    "candidate_ns": ("ns", "Candidate's central value (time units converted to ns)"),
    "baseline_ns": ("ns", "Baseline's central value (time units converted to ns)"),
    # runs
    "run_id": ("", "sha256 of the canonical run document: the run's identity"),
    "provider": ("", "The run's own provider label, else its implementation's, e.g. liger, torch"),
    "implementation": ("", "Display name of the implementation"),
    "implementation_digest": ("", "sha256 of the implementation spec"),
    "run_provider": (
        "",
        "The run's own provider label as it came (empty where the run names none: provider is "
        "then its implementation's)",
    ),
    "version": ("", "Version label of the run (e.g. the Liger release)"),
    "observed_at": ("UTC", "When the run was measured"),
    "status": ("", "passed, or why the run failed; only passed runs are paired"),
    "source": ("", "Where the run came from, e.g. liger"),
    "samples": ("calls", "Timed calls behind the run's statistics (empty when unpublished)"),
    "value": ("see unit", "Central value of the primary statistic (median latency in ns, ...)"),
    "p20": ("see unit", "20th percentile (empty when not published)"),
    "p80": ("see unit", "80th percentile (empty when not published)"),
}
UNDESCRIBED = ("", "(not described yet)")
# Columns of the views that are not exported as they are, and why.
LEFT_OUT = {"axes": "a MAP: exported as one axis_<name> column per workload axis"}


@dataclass(frozen=True)
class _Spec:
    """One exported file: its view (its columns, and its rows unless `rows` names a query of
    sql/ that gives them), the shorthand verb its filters follow, order."""

    name: str
    view: str
    verb: str
    order: str
    description: str
    rows: str | None = None


_FILES = (
    _Spec(
        "speedups",
        "speedups",
        "speedup",
        "kernel, gpu, pass, environment, shape, candidate, baseline, pairing, "
        "candidate_observed_at, baseline_observed_at",
        "One row per ordered pair of comparable latency runs (candidate vs baseline).",
    ),
    _Spec(
        "runs",
        "observed_values",
        "runs",
        "kernel, gpu, pass, environment, shape, provider, metric, observed_at, run_id",
        "One row per run, whatever its metric and status.",
        rows="queries/export_runs.sql",
    ),
)


@dataclass
class ExportedFile:
    """One written file: its path, row count, (name, type, unit, meaning) per column."""

    path: Path
    rows: int
    columns: list[tuple[str, str, str, str]]
    description: str


@dataclass
class ExportReport:
    """What `export` wrote."""

    out: Path
    files: list[ExportedFile] = field(default_factory=list)
    query: str | None = None

    def summary(self) -> str:
        parts = ", ".join(f"{f.path.name} ({f.rows} rows)" for f in self.files)
        return f"wrote {parts} and README.md to {self.out}"


def export(
    out: str | os.PathLike[str],
    query: str | None = None,
    lake: str | os.PathLike[str] | None = None,
    *,
    fmt: ExportFormat = ExportFormat.parquet,
    options: Options = Options(),
    as_of: str | None = None,
    overwrite: bool = False,
) -> ExportReport:
    """Write speedups and runs (all, or what shorthand `query` selects) and README.md to `out`,
    a new or empty folder (`overwrite` lets it replace what a folder holds).

    export("exports/jsd", "speedup jsd b200", "data/parquet")
    """
    folder = export_folder(out, overwrite)
    folder.mkdir(parents=True, exist_ok=True)
    report = ExportReport(folder, query=query)
    # read_only=False: the locked-down connection may not write outside the lake
    commit = snapshot_of(lake, as_of).id
    spill = folder / SPILL_FOLDER
    con = connect(lake, read_only=False, as_of=as_of, temp_directory=str(spill))
    try:
        con.execute("SET memory_limit = ?", [MEMORY_LIMIT]).fetchall()
        parsed = parse(query, load_vocabulary(con)) if query else None
        for spec in _FILES:
            report.files.append(_export_one(con, spec, parsed, options, folder, fmt))
    except duckdb.Error as e:
        raise from_duckdb(e, "export failed") from e
    finally:
        con.close()
        shutil.rmtree(spill, ignore_errors=True)
    write_atomic(folder / "README.md", readme(report, commit).encode("utf-8"))
    return report


def export_folder(out: str | os.PathLike[str], overwrite: bool) -> Path:
    """The folder an export may write: never `/` or the current folder (an empty --out is the
    current folder), and a folder that holds anything only with `overwrite`, since the export
    replaces README.md and its data files there."""
    if not os.fspath(out).strip():
        raise ConfigError("--out is empty", hint="name a new folder, e.g. --out export/")
    folder = Path(out).expanduser().resolve()
    if folder == Path(folder.anchor) or folder == Path.cwd().resolve():
        raise ConfigError(
            f"refusing to export into {folder}: it is the root or the current folder",
            hint="name a new folder, e.g. --out export/",
        )
    if folder.exists() and not folder.is_dir():  # a device: "File exists" (exit 3) from mkdir
        raise ConfigError(
            f"--out {folder} exists and is not a folder",
            hint="name a new or empty folder, e.g. --out export/",
        )
    if folder.is_dir() and not overwrite and any(folder.iterdir()):
        raise ConfigError(
            f"{folder} is not empty: an export writes README.md and its data files there",
            hint="name a new or empty folder, or pass --overwrite to replace its files",
        )
    return folder


def _export_one(
    con: duckdb.DuckDBPyConnection,
    spec: _Spec,
    query: Query | None,
    options: Options,
    folder: Path,
    fmt: ExportFormat,
) -> ExportedFile:
    selection, params = _selection(spec, query, options)
    axes = _axes(con, selection, params)
    names = [quote_identifier(c) for c in view_columns(con, spec.view)]
    names += [f"axes[?] AS {quote_identifier(column)}" for column, _ in axes]
    # the rows go from the view to the file as DuckDB computes them: held in a temporary table
    # first, they spilled past the memory limit and were read back (7.2 s against 1.7 s to
    # write 1.2M speedups at 1M runs)
    sql = f"SELECT {', '.join(names)} FROM ({selection}) ORDER BY {spec.order}"
    params = [axis for _, axis in axes] + params
    path = folder / f"{spec.name}.{fmt.value}"
    rows = _write(con, sql, params, path, fmt)
    columns = _dictionary(con.sql(sql, params=params), axes)  # bound, not run
    return ExportedFile(path, rows, columns, spec.description)


def view_columns(con: duckdb.DuckDBPyConnection, view: str) -> list[str]:
    """The exported columns of `view`: those DuckDB describes, in its order, less LEFT_OUT."""
    described = con.execute(f"DESCRIBE {quote_identifier(view)}").fetchall()
    return [row[0] for row in described if row[0] not in LEFT_OUT]


def _selection(spec: _Spec, query: Query | None, options: Options) -> tuple[str, list[Any]]:
    """The SELECT of the spec's rows that `query` selects, and its parameters."""
    source = spec.view if spec.rows is None else f"(\n{read_sql(spec.rows)}\n) AS rows"
    sql = f"SELECT * FROM {source}"
    if query is not None:
        # the same WHERE clauses as `kindex query`, with this file's verb
        where = where_of(dataclasses.replace(query, verb=spec.verb), options)
        if where.clauses:
            return sql + " WHERE " + " AND ".join(where.clauses), list(where.params)
    return sql, []


def _axes(
    con: duckdb.DuckDBPyConnection, selection: str, params: list[Any]
) -> list[tuple[str, str]]:
    """(column name, axis) per workload axis of the selection; names unique ignoring case."""
    rows = con.execute(
        f"SELECT DISTINCT unnest(map_keys(axes)) AS a FROM ({selection}) ORDER BY a", params
    ).fetchall()
    taken: set[str] = set()
    result = []
    for (axis,) in rows:
        column, n = f"axis_{axis}", 1
        while column.lower() in taken:  # DuckDB names are case-insensitive: axis_K vs axis_k
            n += 1
            column = f"axis_{axis}_{n}"
        taken.add(column.lower())
        result.append((column, str(axis)))
    return result


# COPY's options per format (fixed text)
_COPY_OPTIONS = {
    "parquet": f"FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE {ROW_GROUP_SIZE}",
    "csv": "FORMAT csv, HEADER true",
}


def _write(
    con: duckdb.DuckDBPyConnection, sql: str, params: list[Any], path: Path, fmt: ExportFormat
) -> int:
    """Write the rows of `sql` to `path`; returns how many (COPY counts them as it writes)."""
    copy = f"COPY ({sql}) TO ? ({_COPY_OPTIONS[fmt.value]})"
    row = con.execute(copy, [*params, str(path)]).fetchone()
    return int(row[0]) if row else 0


def _dictionary(
    relation: duckdb.DuckDBPyRelation, axes: list[tuple[str, str]]
) -> list[tuple[str, str, str, str]]:
    """(name, DuckDB type, unit, meaning) per written column: the types as DuckDB wrote them,
    the meanings from COLUMNS (a column it lacks is said to be undescribed; a test fails then)."""
    meanings = dict(COLUMNS)
    for column, axis in axes:
        meanings[column] = ("", f"Workload axis {axis!r} (empty when the workload has none)")
    return [
        (name, str(kind), *meanings.get(name, UNDESCRIBED))
        for name, kind in zip(relation.columns, relation.types, strict=True)
    ]


# -- README -----------------------------------------------------------------------------------


def comparability_rule() -> str:
    """The comparability paragraphs of sql/views/views.sql's header comment (the one source)."""
    lines = []
    for line in read_sql(VIEWS_FILE).splitlines():
        if not line.startswith("--"):
            break
        lines.append(line[2:].strip())
    text = "\n".join(lines)
    start = text.find("Comparability:")
    return text[start:].strip() if start >= 0 else text


def readme(report: ExportReport, snapshot: int) -> str:
    """README.md of an export: what was exported, the comparability rule, the dictionary."""
    selection = f'`kindex query "{report.query}"`' if report.query else "everything"
    parts = [
        "# kindex export\n",
        f"Lake commit {snapshot}; selection: {selection}.\n",
        "## Comparability rule\n",
        comparability_rule() + "\n",
    ]
    for exported in report.files:
        parts.append(f"## {exported.path.name} ({exported.rows} rows)\n")
        parts.append(exported.description + "\n")
        parts.append("| column | type | unit | meaning |\n|---|---|---|---|")
        parts.extend(f"| {n} | {t} | {u} | {m} |" for n, t, u, m in exported.columns)
        parts.append("")
    return "\n".join(parts)
