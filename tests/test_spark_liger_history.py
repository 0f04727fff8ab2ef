"""The Spark engine answers as the DuckDB engine on the whole of Liger's benchmark history
(conftest's liger_history_lake: 7,898 runs, 51 kernels, 18 GPUs), not only on the fixture lake
of the other Spark tests (five of those kernels and a KernelIndex slice): every pair of the
lake against the whole lake's noise model and reference rules, that noise model, every
series' points and tests with the Benjamini-Hochberg correction over all of them, and the gate
over every run. The same rows (floats and q-values to 1e-9 relative; verdicts, rules and step
ids equal), notes and counts.

What CI's time allows (docs/scale-out.md): these cost the Spark tests' worker about 3 minutes
of the run's 2 cores (the history's points and tests of the whole lake, computed once by the
first history question, 30-60 s; the summary's bootstrap over every cell 30-40 s). Run after
the other Spark tests (conftest orders them so): this lake replaces the fixture lake's tables in
the session's views.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kindex_olap.spark.compare import close, same_rows

pytestmark = pytest.mark.spark

# each verb's question on the whole lake, and the fewest rows it must give here (the lake's
# answer has more: an empty or truncated answer would compare equal on both engines): the pair
# verb over every kernel and GPU (2,080 rows); the whole lake's noise model (72: every GPU and
# latency class); history over every series (1,919 points of 1,839 series, a verdict each);
# every step tested with its q-value and rule (changes 38, regressions 4, improvements 22); the
# runs (7,898), their latency (5,198) and memory (1,055) rows; the bootstrap over every cell of
# the summary (267)
QUESTIONS = {
    "speedup": 2000, "noise": 70, "history": 1900, "changes": 30, "regressions": 1,
    "improvements": 10, "latency": 5000, "memory": 1000, "runs": 7800, "gpus": 18,
    "kernels": 50, "summary": 250,
}  # fmt: skip


@pytest.fixture(scope="module")
def history_registered(spark: Any, liger_history_lake: Path) -> Path:
    """`spark` with liger_history_lake's tables in its views (register reuses the views the
    session holds: seconds, where creating them costs 30-50 s); the lake's path."""
    from kindex_olap.spark import register

    register(spark, liger_history_lake)
    return liger_history_lake


@pytest.mark.parametrize("text", QUESTIONS)
def test_the_whole_history_answers_as_duckdb(
    spark: Any, history_registered: Path, text: str
) -> None:
    from kindex_olap.query.run import run_query
    from kindex_olap.spark.run import run_query as run_on_spark

    duck = run_query(text, history_registered)
    found = run_on_spark(text, history_registered, spark=spark)
    assert found.columns == duck.columns
    assert len(duck.rows) >= QUESTIONS[text], f"{text}: {len(duck.rows)} rows, fewer than expected"
    assert same_rows(found.rows, duck.rows), text
    assert found.diagnostics == duck.diagnostics
    assert found.verb == duck.verb


def test_check_on_the_whole_history_is_duckdbs(spark: Any, history_registered: Path) -> None:
    """`kindex check` over the lake's one ingest (every run new): every step it tested with its
    verdict and q-value, the JSON document (regressions, counts) and the summary line. Through
    the library, in the session holding the lake (the CLI's door on Spark is tested on the
    fixture lake, test_spark_history.py; here it would create views again for its own
    session)."""
    from kindex_olap.query.run import run_check
    from kindex_olap.spark.run import run_check as run_on_spark

    duck = run_check("", history_registered)
    found = run_on_spark("", history_registered, spark=spark)
    assert len(duck.regressions) > 0, "no regression in Liger's history: nothing compared"
    assert len(duck.steps) > 50
    assert found.columns == duck.columns
    assert same_rows(found.steps, duck.steps)
    expected, document = duck.as_json(), found.as_json()
    regressions = [tuple(r.values()) for r in document.pop("regressions")]
    assert same_rows(regressions, [tuple(r.values()) for r in expected.pop("regressions")])
    assert close(document, expected)
    assert found.summary() == duck.summary()
