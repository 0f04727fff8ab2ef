"""The chart specifications: one Vega-Lite dict builder per plotted verb, drawn from the records
`run_query` returns (plus derived fields whose names start with `_`: the x value, the line, the
panel). Plain dicts: no altair import on the CLI path (`doors.render` draws them).

- speedup: speedup against the workload axis that varies (log2 when numeric), one line per
  pass (or pair), a band of the interval (the runs' p20/p80 widened by run-to-run noise, as
  the table's `interval±noise`), a reference line at 1.0, a panel per GPU; log2 y.
- latency, memory: value against shape, one line per implementation (p20/p80 error bars for
  latency; memory rows carry one value per side); log y past a 20x spread.
- history: latency (median, p20/p80 bars) and speedup against the named baseline (log2)
  against version (or run date with --by run), one line per implementation and shape in a
  palette without verdict colours, flagged steps (regressions, improvements, environment
  shifts; change points included) filled by their verdict; one legend of each; change points
  (a `_change_point` field, set by doors.plot) drawn as diamonds under a dashed vertical rule.
- summary: a kernel x GPU heatmap of geometric-mean speedups per pass, one per metric and
  candidate/baseline pair (none of a single cell), coloured by verdict on a diverging log
  scale centred at 1.0 (within noise: neutral grey), cells labelled.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kindex_olap.doors.axes import (
    constant_title,
    facet,
    gpu_label,
    legend,
    line_label,
    natural_sort,
    ordinal_x,
    panels,
    titled,
    varying,
    x_axis,
)
from kindex_olap.errors import QueryError

MAX_HEATMAPS = 12  # candidate/baseline pairs drawn by `summary` (the ones with most cells)
LOG_Y_SPREAD = 20.0  # latency and memory axes go logarithmic past this max/min ratio
WIDTH, HEIGHT = 360, 220


@dataclass
class Chart:
    """A chart specification and what was left out of it (said on stderr)."""

    spec: dict[str, Any]
    notes: list[str]


# -- speedup ----------------------------------------------------------------------------------


def speedup(data: list[dict[str, Any]]) -> Chart:
    for d in data:
        d["_gpu"] = gpu_label(d)
    panel = panels(data, ("kernel", "_gpu", "environment"))
    x, constant_axes = x_axis(data, panel)
    line_parts = [*varying(data, ("pass",)), *varying(data, ("candidate", "baseline"))]
    line_parts += varying(data, ("metric", "statistic")) + varying(data, ("_split",))
    for d in data:
        d["_line"] = line_label(d, line_parts or ["pass"])
    line_title = " · ".join(p.replace("_split", "shape") for p in line_parts) or "pass"
    title = constant_title(
        data,
        [("kernel",), ("_gpu",), ("candidate", "baseline"), ("statistic", "metric")],
    )
    y = {
        "field": "speedup",
        "type": "quantitative",
        "title": "speedup (baseline / candidate)",
        "scale": {"type": "log", "base": 2},
    }
    color = {
        "field": "_line",
        "type": "nominal",
        "title": line_title,
        "sort": natural_sort(data, "_line"),
        "legend": legend(data, "_line"),
    }
    layers = _speedup_layers(x, y, color)
    spec = {
        "title": titled(
            "speedup" + (f" · {title}" if title else ""),
            "band: p20–p80 widened by run-to-run noise; above 1: the candidate is faster"
            + (f" · {constant_axes}" if constant_axes else ""),
        ),
        "width": WIDTH,
        "height": HEIGHT,
        "layer": layers,
    }
    return Chart(facet(spec, data, panel), [])


def _speedup_layers(
    x: dict[str, Any], y: dict[str, Any], color: dict[str, Any]
) -> list[dict[str, Any]]:
    """Lines, points, the interval's band, and the reference rule at 1.0."""
    tooltip = [
        {"field": f, "type": "nominal" if f in ("shape", "verdict", "pass") else "quantitative"}
        for f in ("shape", "pass", "speedup", "speedup_lo", "speedup_hi", "verdict")
    ]
    return [
        {
            "mark": {"type": "line", "point": False},
            "encoding": {"x": x, "y": y, "color": color},
        },
        {
            "mark": {"type": "point", "filled": True, "size": 40},
            "encoding": {"x": x, "y": y, "color": color, "tooltip": tooltip},
        },
        # after the line and points: the merged legend takes the first layer's symbols
        {
            "mark": {"type": "area", "opacity": 0.18},
            "encoding": {
                "x": x,
                "y": {**y, "field": "speedup_lo"},
                "y2": {"field": "speedup_hi"},
                "color": color,
            },
        },
        {
            "mark": {"type": "rule", "strokeDash": [4, 3], "color": "#555"},
            "encoding": {"y": {"datum": 1}},
        },
    ]


# -- latency and memory -----------------------------------------------------------------------


def line_with_points(
    x: dict[str, Any], y: dict[str, Any], color: dict[str, Any], tooltip: list[dict[str, str]]
) -> list[dict[str, Any]]:
    """A line per colour and a filled point per row, the points carrying the tooltip."""
    return [
        {"mark": {"type": "line"}, "encoding": {"x": x, "y": y, "color": color}},
        {
            "mark": {"type": "point", "filled": True, "size": 40},
            "encoding": {"x": x, "y": y, "color": color, "tooltip": tooltip},
        },
    ]


def tooltip(nominal: tuple[str, ...], quantitative: tuple[str, ...]) -> list[dict[str, str]]:
    return [{"field": f, "type": "nominal"} for f in nominal] + [
        {"field": f, "type": "quantitative"} for f in quantitative
    ]


LATENCY_TOOLTIP = tooltip(("shape", "provider"), ("median_ms", "p20_ms", "p80_ms"))
MEMORY_TOOLTIP = tooltip(("shape", "implementation"), ("mib", "memory_ratio"))


def value_y(low: float, high: float, field: str, title: str) -> dict[str, Any]:
    log = low > 0 and high / low > LOG_Y_SPREAD
    scale = {"type": "log"} if log else {"zero": False}
    return {"field": field, "type": "quantitative", "title": title, "scale": scale}


def latency(data: list[dict[str, Any]]) -> Chart:
    for d in data:
        d["_gpu"] = gpu_label(d)
    panel = panels(data, ("kernel", "pass", "_gpu", "environment"))
    x, constant_axes = x_axis(data, panel)
    line_parts = ["provider", *varying(data, ("version", "_split"))]
    for d in data:
        d["_line"] = line_label(d, line_parts)
    values = [v for d in data for v in (d["p20_ms"], d["p80_ms"], d["median_ms"]) if v]
    y = value_y(min(values), max(values), "median_ms", "latency, median (ms)")
    color = {
        "field": "_line",
        "type": "nominal",
        "title": "implementation",
        "sort": natural_sort(data, "_line"),
        "legend": legend(data, "_line"),
    }
    title = constant_title(data, [("kernel",), ("pass",), ("_gpu",)])
    layers = [
        {
            "mark": {"type": "rule"},
            "encoding": {
                "x": x,
                "y": {**y, "field": "p20_ms"},
                "y2": {"field": "p80_ms"},
                "color": color,
            },
        },
        *line_with_points(x, y, color, LATENCY_TOOLTIP),
    ]
    spec = {
        "title": titled(
            "latency" + (f" · {title}" if title else ""),
            "median, p20–p80 error bars" + (f" · {constant_axes}" if constant_axes else ""),
        ),
        "width": WIDTH,
        "height": HEIGHT,
        "layer": layers,
    }
    return Chart(facet(spec, data, panel), [])


# verdicts have their own palette; implementations never use red, green or amber
_FLAG_COLORS = {"regression": "#d62728", "improvement": "#2ca02c", "environment shift": "#e6a700"}
_FLAGGED = tuple(_FLAG_COLORS)


def _flag_fill(data: list[dict[str, Any]]) -> dict[str, Any]:
    """Fill by the step's verdict: the verdicts present, then unflagged points (white)."""
    present = [f for f in _FLAGGED if any(d["_flag"] == f for d in data)]
    return {
        "field": "_flag",
        "type": "nominal",
        "title": "step",
        "scale": {
            "domain": [*present, "none"],
            "range": [*(_FLAG_COLORS[f] for f in present), "#ffffff"],
        },
    }


_FLAG_SIZE = {"condition": {"test": "datum._flag !== 'none'", "value": 160}, "value": 30}
# change points (E-Divisive) are drawn as diamonds under a dashed vertical rule of this colour
CHANGE_POINT = "#6a3d9a"
_SHAPE = {"condition": {"test": "datum._change_point", "value": "diamond"}, "value": "circle"}
LINE_PALETTE = ["#1f77b4", "#ff7f0e", "#17becf", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"]


def history(data: list[dict[str, Any]]) -> Chart:
    """Two panels over the points' order (versions as given, or run dates): latency and the
    speedup against the named baseline (log axis), flagged steps (regressions,
    improvements, environment shifts, change points) drawn larger and filled by verdict;
    one legend for the lines, one for the steps."""
    if "median_ms" not in data[0]:
        raise QueryError(
            "no chart for a leaderboard's record staircase yet",
            hint="plot a history of cells with a reference implementation",
        )
    x = _history_x(data)
    color = {
        "field": "_line",
        "type": "nominal",
        "title": "implementation · shape",
        "scale": {"range": LINE_PALETTE},
        "sort": natural_sort(data, "_line"),
        "legend": legend(data, "_line"),
    }
    title = constant_title(data, [("kernel",), ("pass",), ("_gpu",)])
    baselines = sorted({str(d["baseline"]) for d in data if d.get("baseline")})
    against = " / ".join(baselines) or "the baseline"
    latency = ("median_ms", "latency, median (ms)", ("p20_ms", "p80_ms"))
    speed = ("speedup", f"speedup vs {against} (baseline / implementation)", None)
    spec = {
        "data": {"values": data},
        "title": titled(
            "history" + (f" · {title}" if title else ""),
            f"baseline: {against}; steps marked by verdict"
            + ("; dashed purple rule, diamond: change point" if _cuts(data) else ""),
        ),
        "vconcat": [
            _history_panel(data, x, color, *latency),
            _history_panel(data, x, color, *speed, log=True),
        ],
        "resolve": {"legend": {"color": "shared", "fill": "shared"}},
    }
    return Chart(spec, [])


def _cuts(data: list[dict[str, Any]]) -> bool:
    return any(d.get("_change_point") for d in data)


def _history_x(data: list[dict[str, Any]]) -> dict[str, Any]:
    """Set `_gpu`, `_line`, `_x` and `_flag` on every record; the x encoding (run dates with
    --by run, else versions in the order given)."""
    by_run = "observed_at" in data[0]
    for d in data:
        d["_gpu"] = gpu_label(d)
        d["_line"] = " · ".join(str(d[k]) for k in ("implementation", "shape") if d.get(k))
        d["_x"] = d["observed_at"] if by_run else d["version"]
        d["_flag"] = next(
            (v for v in (d.get("verdict"), d.get("speedup_verdict")) if v in _FLAGGED), "none"
        )
    if by_run:
        return {"field": "_x", "type": "temporal", "title": "observed"}
    return ordinal_x(data, "version")


def _history_panel(
    data: list[dict[str, Any]],
    x: dict[str, Any],
    color: dict[str, Any],
    field: str,
    title: str,
    band: tuple[str, str] | None,
    log: bool = False,
) -> dict[str, Any]:
    """One panel of a history: a line per implementation and shape, flagged points, and
    error bars when `band` names them; a ratio (`log`) on a log2 axis with a rule at 1."""
    values = [d[field] for d in data if d.get(field)]
    y = value_y(min(values, default=1), max(values, default=1), field, title)
    if log:
        y["scale"] = {"type": "log", "base": 2}
    layers: list[dict[str, Any]] = [
        {"mark": {"type": "line"}, "encoding": {"x": x, "y": y, "color": color}},
        {
            "mark": {"type": "point", "filled": True, "strokeWidth": 1.5},
            "encoding": {
                "x": x, "y": y, "fill": _flag_fill(data), "stroke": {**color, "legend": None},
                "size": _FLAG_SIZE, "shape": _SHAPE,
                "tooltip": [{"field": k, "type": "nominal"} for k in
                            ("_line", "version", "verdict", "speedup_verdict")]
                + [{"field": field, "type": "quantitative"}],
            },
        },
    ]  # fmt: skip
    if band:
        bars = {"x": x, "y": {**y, "field": band[0]}, "y2": {"field": band[1]}, "color": color}
        layers.insert(0, {"mark": {"type": "rule"}, "encoding": bars})
    if log:
        rule = {"mark": {"type": "rule", "strokeDash": [4, 3], "color": "#555"}}
        layers.append({**rule, "encoding": {"y": {"datum": 1}}})
    if _cuts(data):
        # a change point: a vertical rule across the panel, in no line's or verdict's colour
        cut = {"type": "rule", "strokeDash": [6, 3], "strokeWidth": 1.5, "color": CHANGE_POINT}
        layers.append(
            {
                "transform": [{"filter": "datum._change_point"}],
                "mark": cut,
                "encoding": {"x": x, "tooltip": [{"field": "_line", "type": "nominal"}]},
            }
        )
    return {"width": WIDTH, "height": HEIGHT, "layer": layers}


def memory(data: list[dict[str, Any]]) -> Chart:
    for d in data:
        d["_gpu"] = gpu_label(d)
    panel = panels(data, ("kernel", "pass", "_gpu", "environment"))
    x, constant_axes = x_axis(data, panel)
    values = [v for d in data for v in (d["candidate_mib"], d["baseline_mib"]) if v]
    y = value_y(min(values), max(values), "mib", "peak memory (MiB)")
    # one line per implementation: the rows' two sides, folded in Vega-Lite (data unchanged)
    fold = [
        {"fold": ["candidate_mib", "baseline_mib"], "as": ["side", "mib"]},
        {
            "calculate": "datum.side === 'candidate_mib' ? datum.candidate : datum.baseline",
            "as": "implementation",
        },
    ]
    color = {"field": "implementation", "type": "nominal"}
    title = constant_title(data, [("kernel",), ("pass",), ("_gpu",)])
    layers = line_with_points(x, y, color, MEMORY_TOOLTIP)
    spec = {
        "title": titled(
            "peak memory" + (f" · {title}" if title else ""),
            "one value per implementation and shape"
            + (f" · {constant_axes}" if constant_axes else ""),
        ),
        "transform": fold,
        "width": WIDTH,
        "height": HEIGHT,
        "layer": layers,
    }
    return Chart(facet(spec, data, panel), [])


# -- summary ----------------------------------------------------------------------------------


def summary(data: list[dict[str, Any]]) -> Chart:
    for d in data:
        d["_gpu"] = gpu_label(d)
        d["_pair"] = f"{d['candidate']} vs {d['baseline']} · {d['statistic']} {d['metric']}"
        d["_cell"] = f"{d['geomean_speedup']:.2f}×"
        # the colour says the verdict: within noise is neutral, whatever the geomean
        d["_shade"] = 1.0 if d.get("verdict") == "within noise" else d["geomean_speedup"]
    pairs, notes = _summary_pairs(data)
    color = _geomean_color(data)
    heatmaps = [_heatmap(pair, [d for d in data if d["_pair"] == pair], color) for pair in pairs]
    spec: dict[str, Any] = {
        "title": titled(
            "geometric-mean speedup per kernel and GPU",
            "label: geomean; blue: faster, red: slower, grey: within noise (the bootstrap "
            "interval holds 1)",
        ),
        "vconcat": heatmaps,
        "resolve": {"scale": {"color": "shared"}},
    }
    return Chart(spec, notes)


def _summary_pairs(data: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """The candidate/baseline pairs drawn (most cells first, at most MAX_HEATMAPS, none of a
    single cell: a table says that better), and the notes saying what was left out."""
    cells: dict[str, int] = {}
    for d in data:
        cells[d["_pair"]] = cells.get(d["_pair"], 0) + 1
    pairs = sorted(cells, key=lambda p: (-cells[p], p))
    notes = []
    single = [p for p in pairs if cells[p] == 1]
    if single and len(single) < len(pairs):
        notes.append(
            f"summary: {len(single)} candidate/baseline pair(s) with a single cell are not "
            "drawn; `kindex query summary` lists them"
        )
        pairs = [p for p in pairs if cells[p] > 1]
    if len(pairs) > MAX_HEATMAPS:
        notes.append(
            f"summary: drew the {MAX_HEATMAPS} of {len(pairs)} candidate/baseline pairs with "
            "the most cells; name a pair (`A vs B`) or a kernel for the others"
        )
        pairs = pairs[:MAX_HEATMAPS]
    return pairs, notes


SHADE_REACH = 8.0  # colours saturate at 8x faster or slower: the label gives the number


def _geomean_color(data: list[dict[str, Any]]) -> dict[str, Any]:
    """A diverging log colour scale centred at 1.0 (grey), symmetric, clamped at 8x."""
    high = max(max(d["_shade"], 1 / d["_shade"]) for d in data if d["_shade"])
    reach = min(max(high, 1.01), SHADE_REACH)
    return {
        "field": "_shade",
        "type": "quantitative",
        "title": "geomean ×",
        # the ends and the middle of the scale labelled (a log legend's own ticks are
        # powers of ten: only `1` inside an 8x reach)
        "legend": {
            "titleLimit": 200,
            "gradientLength": 120,
            "format": ".2~f",
            "values": [1 / reach, 1, reach],
        },
        "scale": {
            "type": "log",
            "range": ["#b2182b", "#eeeeee", "#2166ac"],
            "domain": [1 / reach, 1, reach],
            "clamp": True,
        },
    }


def _heatmap(pair: str, subset: list[dict[str, Any]], color: dict[str, Any]) -> dict[str, Any]:
    """One pair's kernel x GPU heatmap, a row per pass, cells labelled."""
    tooltip = [
        {"field": "kernel", "type": "nominal"},
        {"field": "_gpu", "type": "nominal", "title": "gpu"},
        {"field": "environment", "type": "nominal"},
        {"field": "geomean_speedup", "type": "quantitative"},
        {"field": "verdict", "type": "nominal"},
        {"field": "cases", "type": "quantitative"},
    ]
    x = {"field": "_gpu", "type": "nominal", "axis": {"labelAngle": -40, "labelLimit": 180}}
    y = {"field": "kernel", "type": "nominal"}
    cells = {"x": {**x, "title": "GPU"}, "y": {**y, "title": None}, "color": color}
    layer = {
        "width": {"step": 44},
        "height": {"step": 18},
        "layer": [
            {"mark": "rect", "encoding": {**cells, "tooltip": tooltip}},
            {
                "mark": {"type": "text", "fontSize": 9},
                "encoding": {"x": x, "y": y, "text": {"field": "_cell"}},
            },
        ],
    }
    return {
        "data": {"values": subset},
        "title": pair,
        # a row per pass: the width is the GPUs', so a report page of many GPUs stays narrow
        "facet": {
            "row": {
                "field": "pass",
                "type": "nominal",
                "title": None,
                "sort": natural_sort(subset, "pass"),
                # level: a rotated label is wider than a row of one kernel, and overlapped
                "header": {"labelAngle": 0, "labelAlign": "left"},
            }
        },
        "spec": layer,
        # each pass lists only the kernels it has cells for
        "resolve": {"scale": {"y": "independent"}},
    }
