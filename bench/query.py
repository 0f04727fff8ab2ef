"""Query benchmark: a generated N-run lake (default 1M), warm and cold `kindex query` latency,
against the same SQL on DuckDB tables materialized in memory from the same data. Not run in CI.

    .venv/bin/python bench/query.py --runs 1000000 --work /tmp/kindex-bench

Bundles vary the real JSD seed: 40 kernels x 3 providers x 3 passes x 8 GPUs x 12 shapes x
repeated sweeps, written as JSONL files of CHUNK bundles, each ingested with kindex's
own ingest (one ingest of 1M bundles runs out of the writer's memory limit), then compacted
into one sorted file per partition. Sweeps are time-ordered versions (sweep s: version 1.s.0,
observed s days after 2025-01-01); each run is its cell's fixed level times lognormal noise
(sigma 5 %), and liger's PLANTED_KERNEL is 30 % slower from two thirds of the sweeps on (a
planted regression for the history verbs).

Per question it prints: warm `run_query` (vocabulary, parse, compile, run), the compiled SQL on
the Parquet views (table macros with bound filters), the same SQL on in-memory tables, and the
pre-macro form (filters in a WHERE over the plain view) on Parquet for comparison.
"""

from __future__ import annotations

import argparse
import copy
import datetime
import hashlib
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import duckdb
import orjson

REPO = Path(__file__).resolve().parents[1]
SEED = REPO / "tests" / "data" / "seeds" / "001_62d94da41d44ef74.txt"
KERNELS = [f"kernel{i:02d}" for i in range(39)] + ["jsd"]
PROVIDERS = ["liger", "torch", "huggingface"]
PASSES = ["forward", "backward", "full"]
GPUS = [("NVIDIA B200", "sm_100"), ("NVIDIA H100", "sm_90"), ("NVIDIA A100", "sm_80")] + [
    (f"NVIDIA GPU{i}", "sm_89") for i in range(5)
]
SHAPES = [f"tokens{2**i}-vocab128256-fp32" for i in range(10, 22)]
CHUNK = 250_000
PLANTED_KERNEL = "kernel05"
NOISE_SIGMA = 0.05


def digest(tag: str) -> str:
    return "sha256:" + hashlib.sha256(tag.encode()).hexdigest()


def template() -> dict[str, Any]:
    _, _, body = SEED.read_text(encoding="utf-8").partition("\n\n")
    bundle: dict[str, Any] = json.loads(body)
    return bundle


def bundles(count: int, seed: int = 7, replicates: int = 1) -> Any:
    """Yield `count` bundle dicts varying kernel, provider, pass, GPU, shape and sweep. Each
    sweep measures a new version, or with `replicates` > 1 each version is measured by that
    many consecutive sweeps of the same code (as a CI fleet repeats a commit: the noise model's
    replicate pairs; with one, every step is judged against the default floors)."""
    rng = random.Random(seed)
    base = template()
    cells = [
        (k, p, g, s) for k in KERNELS for p in PASSES for g in range(len(GPUS)) for s in SHAPES
    ]
    planted_sweep = max(2, count // (len(cells) * len(PROVIDERS)) * 2 // 3)
    planted_sweep -= planted_sweep % replicates  # the step falls between two versions
    i = 0
    sweep = 0
    while i < count:
        for kernel, pass_, gpu, shape in cells:
            for provider in PROVIDERS:
                if i >= count:
                    return
                bundle = _bundle(
                    base, kernel, pass_, gpu, shape, provider, sweep, rng, planted_sweep
                )
                if replicates > 1:
                    version = sweep // replicates
                    labels = bundle["run"]["metadata"]["labels"]
                    labels.update(liger_version=f"1.{version}.0", kindex_code=f"code-{version}")
                yield bundle
                i += 1
        sweep += 1


def _bundle(
    base: dict[str, Any],
    kernel: str,
    pass_: str,
    gpu: int,
    shape: str,
    provider: str,
    sweep: int,
    rng: random.Random,
    planted_sweep: int,
) -> dict[str, Any]:
    bundle = copy.deepcopy(base)
    spec = bundle["run"]["spec"]
    # the cell's level (fixed across sweeps) times run-to-run noise, and the planted step
    level = random.Random(f"{kernel}/{pass_}/{gpu}/{shape}/{provider}").uniform(1e5, 1e8)
    planted = kernel == PLANTED_KERNEL and provider == "liger" and sweep >= planted_sweep
    median = level * rng.lognormvariate(0, NOISE_SIGMA) * (1.3 if planted else 1.0)
    spec["timing"]["latencyNs"] = {"median": int(median)}
    spec["measurements"] = [
        {"unit": "ns", "value": int(median * 0.98), "metric": "latency", "statistic": "p20"},
        {"unit": "ns", "value": int(median * 1.02), "metric": "latency", "statistic": "p80"},
    ]
    product, arch = GPUS[gpu]
    day = datetime.date(2025, 1, 1) + datetime.timedelta(days=sweep)
    observed = f"{day.isoformat()}T00:00:{PROVIDERS.index(provider):02d}.000Z"
    spec["observedAt"] = observed
    benchmark = f"{kernel}/{pass_}"
    spec["sourceNative"] = {
        "source": "bench",
        "benchmark": benchmark,
        "externalId": f"{benchmark}/{provider}/gpu{gpu}/{shape}/{sweep}",
    }
    spec["workloadDigest"] = digest(f"w-{kernel}-{shape}")
    spec["implementationDigest"] = digest(f"i-{kernel}-{provider}")
    spec["environmentDigest"] = digest(f"e-{gpu}")
    spec["protocolDigest"] = digest(f"p-{pass_}")
    bundle["environment"]["spec"]["hardware"].update(product=product, architecture=arch)
    bundle["environment"]["metadata"]["name"] = f"bench-gpu{gpu}"
    bundle["run"]["metadata"]["name"] = f"bench-{kernel}-{provider}-{sweep}".replace("_", "-")
    bundle["run"]["metadata"]["labels"] = {"liger_version": f"1.{sweep}.0"}
    return bundle


def build_lake(work: Path, count: int, replicates: int = 1) -> Path:
    lake = work / "lake"
    if (lake / "kindex-lake.json").exists():
        return lake
    started = time.perf_counter()
    chunks: list[Path] = []
    handle = None
    for i, bundle in enumerate(bundles(count, replicates=replicates)):
        if i % CHUNK == 0:
            if handle:
                handle.close()
            chunks.append(work / f"bundles-{len(chunks):03d}.jsonl")
            handle = open(chunks[-1], "wb")  # noqa: SIM115
        assert handle is not None
        handle.write(orjson.dumps(bundle) + b"\n")
    if handle:
        handle.close()
    print(f"generated {count} bundles in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    from kindex_olap.ingestion.pipeline import ingest
    from kindex_olap.lake.compact import compact

    started = time.perf_counter()
    added = 0
    for chunk in chunks:
        added += ingest([chunk], lake).runs_added
    print(f"ingested: {added} runs in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    print(compact(lake), file=sys.stderr)
    return lake


def median_ms(fn: Any, repeat: int = 7) -> float:
    fn()
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def materialized(lake: Path) -> duckdb.DuckDBPyConnection:
    """In-memory DuckDB tables with the lake's data, and the derived views over them."""
    from kindex_olap.lake.store import TABLES
    from kindex_olap.lake.tables import scan_sql
    from kindex_olap.query.engine import VIEWS_FILE, snapshot_of
    from kindex_olap.sqlfiles import statements

    snapshot = snapshot_of(lake)
    con = duckdb.connect()
    for table in TABLES:  # identifiers from kindex's fixed table list
        con.execute(f"CREATE TABLE {table} AS {scan_sql(table, '?')}", [snapshot.files(table)])
    for statement in statements(VIEWS_FILE):
        con.execute(statement).fetchall()
    return con


def snapshot_files(lake: Path) -> list[str]:
    from kindex_olap.query.engine import snapshot_of

    return snapshot_of(lake).files("runs")


def comparable(rows: list[tuple[Any, ...]]) -> list[str]:
    """Rows as sorted text, floats to 12 digits (a geomean's last bits follow the row order)."""
    return sorted(
        repr(tuple(f"{v:.12g}" if isinstance(v, float) else v for v in row)) for row in rows
    )


def pre_macro_sql(text: str, vocab: Any) -> Any:
    """The query as compiled before the table macros: every filter in a WHERE over the view."""
    from kindex_olap.query.compile import Compiled, Options, assemble, where_of
    from kindex_olap.query.shorthand import parse
    from kindex_olap.query.verbs import REGISTRY

    query = parse(text, vocab)
    spec = REGISTRY[query.verb].sql
    assert spec is not None
    where = where_of(query, Options())
    # the plain view with every filter in WHERE (summary's template wraps it the same way)
    return Compiled(assemble(spec, spec.view, where.clauses), tuple(where.params))


def history(con: duckdb.DuckDBPyConnection, lake: Path) -> None:
    """The history verbs against their baselines, warm, on the same connection: `regressions`
    on one kernel against `speedup` on that kernel (target <= 3x), a whole-lake `kindex check`
    (every series judged, the steps into the newest lake commit tested) against `summary`
    (target <= 5x)."""
    from kindex_olap.query.compile import Options
    from kindex_olap.query.run import run_check, run_query

    text = f"regressions {PLANTED_KERNEL}"
    found = run_query(text, con=con).rows
    speedup = median_ms(lambda: run_query(f"speedup {PLANTED_KERNEL}", con=con), 5)
    regressions = median_ms(lambda: run_query(text, con=con), 5)
    # rows: kernel, pass, gpu, shape, implementation, series, from_version, to_version, ...
    steps = {(r[4], r[5], r[7]) for r in found}
    planted = [r for r in found if r[4] == "liger" and r[5] == "latency"]
    at_step = (
        max((sum(1 for r in planted if r[7] == v), v) for _, _, v in steps) if steps else (0, "")
    )
    print(
        f"{text!r}: {len(found)} rows; liger latency steps flagged into {at_step[1]} (the planted "
        f"step): {at_step[0]} of the 288 cells, elsewhere: {len(planted) - at_step[0]}; warm "
        f"{regressions:.0f} ms vs 'speedup {PLANTED_KERNEL}' {speedup:.0f} ms "
        f"(ratio {regressions / speedup:.2f}, target <= 3)"
    )
    summary = median_ms(lambda: run_query("summary", con=con), 3)
    check = median_ms(lambda: run_check("", lake, con=con, options=Options()), 3)
    flagged = run_check("", lake, con=con).regressions
    print(
        f"whole-lake check: {len(flagged)} regressions into the newest lake commit; warm "
        f"{check:.0f} ms vs 'summary' {summary:.0f} ms (ratio {check / summary:.2f}, "
        "target <= 5)"
    )


def git_show(rev: str, path: str) -> str:
    return subprocess.run(
        ["git", "-C", str(REPO), "show", f"{rev}:{path}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def views_at(rev: str) -> str:
    """The views file at git revision `rev`: sql/views/views.sql, or sql/views.sql before the
    SQL files moved into folders by role."""
    try:
        return git_show(rev, "sql/views/views.sql")
    except subprocess.CalledProcessError:
        return git_show(rev, "sql/views.sql")


def before_connection(lake: Path, rev: str) -> tuple[duckdb.DuckDBPyConnection, Any]:
    """A connection with the views of git revision `rev` over the same lake, and that revision's
    compile module (loaded from its source), to time the queries before a change in this run."""
    import importlib.util
    import tempfile

    from kindex_olap.lake.store import TABLES
    from kindex_olap.lake.tables import file_variable
    from kindex_olap.query.engine import snapshot_of

    snapshot = snapshot_of(lake)
    con = duckdb.connect()
    con.execute("SET parquet_metadata_cache = true").fetchall()
    for table in TABLES:
        con.execute(f"SET VARIABLE {file_variable(table)} = ?", [snapshot.files(table)]).fetchall()
    text = "\n".join(line for line in views_at(rev).splitlines() if not line.startswith("--"))
    for statement in (part.strip() for part in text.split(";\n")):
        if statement.strip(";"):
            con.execute(statement).fetchall()
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as handle:
        handle.write(git_show(rev, "kindex_olap/query/compile.py"))
    spec = importlib.util.spec_from_file_location("compile_before", handle.name)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["compile_before"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return con, module


def before_and_after(lake: Path, rev: str, vocab: Any) -> None:
    """speedup and summary: this checkout's SQL against revision `rev`'s, same lake, same run."""
    from kindex_olap.query import noise
    from kindex_olap.query.compile import compile_query
    from kindex_olap.query.engine import connect
    from kindex_olap.query.shorthand import parse

    old_con, old = before_connection(lake, rev)
    con = connect(lake)
    started = time.perf_counter()
    noise.materialize(con)
    model = (time.perf_counter() - started) * 1000
    print(f"noise model, once per connection: {model:.0f} ms")
    for text in ("speedup jsd b200", "summary"):
        new_sql = compile_query(parse(text, vocab))
        old_sql = old.compile_query(parse(text, vocab))
        after, before = [], []
        for _ in range(7):  # interleaved, so that the machine's load hits both alike
            before.append(
                median_ms(lambda c=old_sql: old_con.execute(c.sql, list(c.params)).fetchall(), 1)
            )
            after.append(
                median_ms(lambda c=new_sql: con.execute(c.sql, list(c.params)).fetchall(), 1)
            )
        print(
            f"{text!r}: before ({rev}) min {min(before):.0f} / median "
            f"{statistics.median(before):.0f} ms, after min {min(after):.0f} / median "
            f"{statistics.median(after):.0f} ms: ratio of minima {min(after) / min(before):.2f}, "
            f"of medians {statistics.median(after) / statistics.median(before):.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=1_000_000)
    parser.add_argument("--work", type=Path, default=Path("/tmp/kindex-bench"))
    parser.add_argument(
        "--before", default="", help="a git revision: time speedup and summary against its SQL"
    )
    parser.add_argument("--only-before", action="store_true", help="only the --before comparison")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    lake = build_lake(args.work, args.runs)

    from kindex_olap.query.compile import compile_query
    from kindex_olap.query.engine import connect
    from kindex_olap.query.run import run_query
    from kindex_olap.query.shorthand import parse
    from kindex_olap.query.vocabulary import load_vocabulary

    con = connect(lake)
    runs = con.execute("SELECT count(*) FROM runs").fetchall()[0][0]
    files = len(snapshot_files(lake))
    print(f"lake: {runs} runs in {files} runs file(s); duckdb {duckdb.__version__}")
    vocab = load_vocabulary(con)
    if args.before:
        before_and_after(lake, args.before, vocab)
        if args.only_before:
            return
    started = time.perf_counter()
    mat = materialized(lake)
    print(f"materialized in-memory tables in {time.perf_counter() - started:.1f} s")
    vocabulary = median_ms(lambda: load_vocabulary(con))
    print(f"load_vocabulary: {vocabulary:.0f} ms")
    for text in ("speedup jsd b200", "summary"):
        compiled = compile_query(parse(text, vocab))
        before = pre_macro_sql(text, vocab)
        views = median_ms(lambda t=text: run_query(t, con=con))
        sql_only = median_ms(lambda c=compiled: con.execute(c.sql, list(c.params)).fetchall())
        tables = median_ms(lambda c=compiled: mat.execute(c.sql, list(c.params)).fetchall())
        old = median_ms(lambda c=before: con.execute(c.sql, list(c.params)).fetchall(), 3)
        rows = con.execute(compiled.sql, list(compiled.params)).fetchall()
        assert comparable(rows) == comparable(
            con.execute(before.sql, list(before.params)).fetchall()
        ), "the macro form and the view form disagree"
        print(
            f"{text!r}: {len(rows)} rows; warm run_query {views:.0f} ms, its SQL on Parquet "
            f"views {sql_only:.0f} ms, same SQL on in-memory tables {tables:.0f} ms "
            f"(ratio {sql_only / tables:.2f}); pre-macro SQL on Parquet views {old:.0f} ms"
        )
    history(con, lake)
    cold = []
    for _ in range(3):
        started = time.perf_counter()
        subprocess.run(
            [
                str(REPO / ".venv/bin/kindex"),
                "query",
                "speedup jsd b200",
                "--lake",
                str(lake),
                "-f",
                "csv",
            ],
            check=True,
            capture_output=True,
        )
        cold.append(time.perf_counter() - started)
    print(
        f"cold `kindex query 'speedup jsd b200' -f csv` process: median "
        f"{statistics.median(cold):.2f} s (of {', '.join(f'{t:.2f}' for t in cold)})"
    )


if __name__ == "__main__":
    main()
