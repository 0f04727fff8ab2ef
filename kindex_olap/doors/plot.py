"""Charts of query answers, drawn from the rows `run_query` returns.

One query path: a chart's data are the very records `kindex query --format json` prints, so a
picture never disagrees with the table. `chart_for` picks the chart of a verb (the specs:
`doors.charts`; drawing them: `doors.render`); `query_chart` runs the query first; `plot`
returns it as an altair chart for notebooks.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from kindex_olap.doors import charts
from kindex_olap.doors.apart import told_apart
from kindex_olap.doors.charts import Chart
from kindex_olap.doors.columns import verb_columns
from kindex_olap.doors.records import records
from kindex_olap.doors.render import full_spec
from kindex_olap.errors import QueryError
from kindex_olap.query.verbs import PLOT_VERBS, REGISTRY


def chart_for(verb: str | None, columns: list[str], rows: list[tuple[Any, ...]]) -> Chart:
    """The chart of a query's rows; `verb` is QueryResult.verb."""
    if verb not in PLOT_VERBS:
        raise QueryError(
            f"no chart for {verb or 'SQL'!r} results",
            hint=f"plot one of: {', '.join(PLOT_VERBS)}",
        )
    # a provider's two implementations in one cell (a user's submissions) are two series
    data = records(columns, list(told_apart(columns, rows, verb_columns(verb))))
    if not data:
        raise QueryError("nothing to plot: the query returned no rows")
    build: Callable[[list[dict[str, Any]]], Chart] = getattr(charts, REGISTRY[verb].chart or "")
    return build(data)


def query_chart(
    text: str, lake: str | os.PathLike[str] | None = None, options: Any = None
) -> Chart:
    """Run shorthand `text` (as `kindex query`) and chart its rows."""
    from kindex_olap.query.compile import Options
    from kindex_olap.query.run import run_query

    result = run_query(text, lake, options or Options())
    if not result.rows:
        # the first note explains an empty answer (as `kindex query` prints it alone)
        why = result.diagnostics[0] if result.diagnostics else "no rows"
        raise QueryError(f"nothing to plot: {why}")
    columns, rows = result.columns, result.rows
    if result.verb == "history":
        cuts = change_points(text, lake, options or Options())
        at = [columns.index(k) for k in CHANGE_POINT_KEY]
        columns = [*columns, "_change_point"]
        rows = [(*row, tuple(row[i] for i in at) in cuts) for row in rows]
    chart = chart_for(result.verb, columns, rows)
    chart.notes = [*result.diagnostics, *chart.notes]
    return chart


# a history point is the point a step goes into: these columns of history and of `changes`
CHANGE_POINT_KEY = ("kernel", "pass", "gpu", "shape", "implementation", "version")


def change_points(text: str, lake: Any, options: Any) -> set[tuple[Any, ...]]:
    """The points of history `text` where a change point (E-Divisive) starts: the steps that
    `changes` (same filters) lists with a change-point rule."""
    from kindex_olap.query.run import run_query

    words = text.split(maxsplit=1)
    steps = run_query(" ".join(["changes", *words[1:]]), lake, options)
    index = {name: i for i, name in enumerate(steps.columns)}
    if "rule" not in index:
        return set()
    key = [index["to_version" if k == "version" else k] for k in CHANGE_POINT_KEY]
    return {
        tuple(row[i] for i in key)
        for row in steps.rows
        if str(row[index["rule"]]).startswith("change point")
    }


def plot(
    query: str,
    lake: str | os.PathLike[str] | None = None,
    *,
    version: str | None = None,
    all_pairs: bool = False,
) -> Any:
    """The chart of `kindex plot QUERY` as an altair chart (shown inline in a notebook):

    kindex_olap.plot("speedup jsd b200", lake="data/parquet").save("jsd.html")
    """
    import altair as alt

    from kindex_olap.query.compile import Options

    spec = full_spec(query_chart(query, lake, Options(version, all_pairs)).spec)
    kind = next((k for k in ("vconcat", "facet", "layer") if k in spec), None)
    cls: dict[str | None, Any] = {
        "vconcat": alt.VConcatChart,
        "facet": alt.FacetChart,
        "layer": alt.LayerChart,
    }
    return cls[kind].from_dict(spec, validate=False) if kind else alt.Chart.from_dict(spec)
