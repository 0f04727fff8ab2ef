"""Charts of query answers as Vega-Lite specifications, drawn from the rows `run_query` returns.

One query path: a chart's data are the very records `kindex query --format json` prints (plus
a few derived fields whose names start with `_`: the x value, the line, the panel), so a
picture never disagrees with the table. Specifications are plain dicts (no altair import on
the CLI path); `vl-convert` renders PNG and SVG offline, and `html_page` inlines the Vega
JavaScript so an HTML chart opens from disk with no network.

- speedup: speedup against the workload axis that varies (log2 when numeric), one line per
  pass (or pair), a p20/p80 band, a reference line at 1.0, a panel per GPU; log2 y.
- latency, memory: value against shape, one line per implementation (p20/p80 error bars for
  latency; memory rows carry one value per side); log y past a 20x spread.
- history: latency (median, p20/p80 bars) and speedup against version (or run date with
  --by run), one line per implementation and shape, flagged steps (regressions, improvements,
  which include change points) marked by their verdict.
- summary: a kernel x GPU heatmap of geometric-mean speedups per pass, one per metric and
  candidate/baseline pair, on a diverging log scale centred at 1.0, cells labelled.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kindex_olap.doors.records import records
from kindex_olap.errors import QueryError

PLOT_VERBS = ("speedup", "latency", "memory", "summary", "history")
MAX_PANELS = 24  # more kernels x GPUs than this in one picture is unreadable: filter first
MAX_HEATMAPS = 12  # candidate/baseline pairs drawn by `summary` (the ones with most cells)
LOG_Y_SPREAD = 20.0  # latency and memory axes go logarithmic past this max/min ratio
WIDTH, HEIGHT = 360, 220
# `name1024`, `B4`, `num_experts32`: a workload axis and its value in a shape label
_AXIS = re.compile(r"^([A-Za-z_]+?)_?(\d+(?:\.\d+)?)$")
_DTYPE = re.compile(r"^(fp|bf|int|uint|float|e4m3|e5m2)\d*$|^na$", re.IGNORECASE)


@dataclass
class Chart:
    """A chart specification and what was left out of it (said on stderr)."""

    spec: dict[str, Any]
    notes: list[str]


def chart_for(verb: str | None, columns: list[str], rows: list[tuple[Any, ...]]) -> Chart:
    """The chart of a query's rows; `verb` is QueryResult.verb."""
    if verb not in PLOT_VERBS:
        raise QueryError(
            f"no chart for {verb or 'SQL'!r} results",
            hint=f"plot one of: {', '.join(PLOT_VERBS)}",
        )
    data = records(columns, rows)
    if not data:
        raise QueryError("nothing to plot: the query returned no rows")
    charts = {
        "speedup": _speedup, "latency": _latency, "memory": _memory, "summary": _summary,
        "history": _history,
    }  # fmt: skip
    return charts[verb](data)


# -- shapes -----------------------------------------------------------------------------------


def shape_axes(label: str | None) -> dict[str, float | str]:
    """`tokens1024-vocab128256-fp32` -> {tokens: 1024, vocab: 128256, dtype: fp32};
    a tensor shape `[8, 5120]` -> {dim0: 8, dim1: 5120}."""
    axes: dict[str, float | str] = {}
    dims = (label or "").strip()
    if dims.startswith("[") and dims.endswith("]"):
        parts = [p.strip() for p in dims[1:-1].split(",")]
        if parts and all(p.isdigit() for p in parts):
            return {f"dim{i}": float(p) for i, p in enumerate(parts)}
    for part in (label or "").split("-"):
        match = _AXIS.match(part)
        if _DTYPE.match(part):
            axes["dtype"] = part
        elif match:
            axes[match.group(1)] = float(match.group(2))
        elif part:
            axes.setdefault("label", part)
    return axes


def x_axis(data: list[dict[str, Any]], panel: str | None = None) -> tuple[dict[str, Any], str]:
    """Set `_x` (and `_split`: the other varying axes, which split lines) on every record,
    per panel when there are panels; returns the x encoding and the constant axes."""
    groups: dict[Any, list[dict[str, Any]]] = {}
    for d in data:
        groups.setdefault(d.get(panel) if panel else None, []).append(d)
    chosen = [_panel_x(group) for group in groups.values()]
    if any(x is None for x, _, _ in chosen):  # some panel has no numeric axis: shapes as labels
        for d in data:
            d["_x"], d["_split"] = d.get("shape") or "", ""
        order = list(dict.fromkeys(d["_x"] for d in data))
        return {"field": "_x", "type": "ordinal", "title": "shape", "sort": order}, ""
    names = list(dict.fromkeys(str(x) for x, _, _ in chosen))
    xs = sorted({d["_x"] for d in data})
    scale = {"type": "log", "base": 2} if xs[-1] >= 8 * xs[0] > 0 else {"zero": False}
    axis = {"values": xs} if len(names) == 1 and len(xs) <= 12 else {}
    encoding = {"field": "_x", "type": "quantitative", "title": " / ".join(names)}
    constant = {c for _, c, _ in chosen}
    return {**encoding, "scale": scale, "axis": axis}, " | ".join(sorted(c for c in constant if c))


def _panel_x(data: list[dict[str, Any]]) -> tuple[str | None, str, list[str]]:
    parsed = [shape_axes(d.get("shape")) for d in data]
    names = sorted({k for p in parsed for k in p})
    values = {n: {p.get(n) for p in parsed} for n in names}
    varying = [n for n in names if len(values[n]) > 1]
    numeric = [n for n in varying if all(isinstance(p.get(n), float) for p in parsed)]
    constant = " · ".join(f"{n} {_num(next(iter(values[n])))}" for n in names if n not in varying)
    if not numeric:
        if varying:
            return None, "", []
        numeric = [n for n in names if all(isinstance(p.get(n), float) for p in parsed)][:1]
        if not numeric:
            return None, "", []
    x = max(numeric, key=lambda n: len(values[n]))
    split = [n for n in varying if n != x]
    for d, p in zip(data, parsed, strict=True):
        d["_x"] = p[x]
        d["_split"] = " ".join(f"{n} {_num(p.get(n))}" for n in split)
    return x, constant, split


def _num(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


# -- lines and panels -------------------------------------------------------------------------


def _label(d: dict[str, Any], parts: Iterable[str]) -> str:
    return " · ".join(str(d.get(p) or "") for p in parts if d.get(p))


def _varying(data: list[dict[str, Any]], names: Iterable[str]) -> list[str]:
    return [n for n in names if len({d.get(n) for d in data}) > 1]


def _constant_title(data: list[dict[str, Any]], groups: list[tuple[str, ...]]) -> str:
    """Title words from the columns constant over the rows (`candidate`, `baseline`: `A vs B`)."""
    words = []
    first = data[0]
    for group in groups:
        if all(len({d.get(n) for d in data}) == 1 for n in group):
            joiner = " vs " if group == ("candidate", "baseline") else " "
            text = joiner.join(str(first.get(n)) for n in group if first.get(n))
            if text:
                words.append(text)
    return " · ".join(words)


def _panels(data: list[dict[str, Any]], by: tuple[str, ...]) -> str | None:
    """Set `_panel` (kernel and GPU where they vary); None when one panel holds everything."""
    varying = _varying(data, by)
    if not varying:
        return None
    for d in data:
        d["_panel"] = _label(d, varying)
    panels = len({d["_panel"] for d in data})
    if panels > MAX_PANELS:
        raise QueryError(
            f"{panels} kernel/GPU panels are too many for one chart",
            hint="name a kernel and a GPU (e.g. 'speedup jsd b200'), or plot 'summary'",
        )
    return "_panel"


def _gpu(d: dict[str, Any]) -> str:
    return " ".join(str(d[k]) for k in ("gpu", "form_factor") if d.get(k))


def _facet(spec: dict[str, Any], data: list[dict[str, Any]], panel: str | None) -> dict[str, Any]:
    """A top-level spec: the layers as they are, or repeated per panel (wrapped)."""
    if panel is None:
        return {"data": {"values": data}, **spec}
    layers = {k: v for k, v in spec.items() if k not in ("title",)}
    return {
        "data": {"values": data},
        "title": spec.get("title"),
        "facet": {"field": panel, "type": "nominal", "title": None},
        "columns": 2,
        "spec": layers,
        "resolve": {"scale": {"x": "independent"}},
    }


def _title(text: str, subtitle: str) -> dict[str, Any]:
    return {"text": text, "subtitle": subtitle} if subtitle else {"text": text}


# -- speedup ----------------------------------------------------------------------------------


def _speedup(data: list[dict[str, Any]]) -> Chart:
    for d in data:
        d["_gpu"] = _gpu(d)
    panel = _panels(data, ("kernel", "_gpu", "environment"))
    x, constant_axes = x_axis(data, panel)
    line_parts = [*_varying(data, ("pass",)), *_varying(data, ("candidate", "baseline"))]
    line_parts += _varying(data, ("metric", "statistic")) + _varying(data, ("_split",))
    for d in data:
        d["_line"] = _label(d, line_parts or ["pass"])
    line_title = " · ".join(p.replace("_split", "shape") for p in line_parts) or "pass"
    title = _constant_title(
        data,
        [("kernel",), ("_gpu",), ("candidate", "baseline"), ("statistic", "metric")],
    )
    y = {
        "field": "speedup",
        "type": "quantitative",
        "title": "speedup (baseline / candidate)",
        "scale": {"type": "log", "base": 2},
    }
    color = {"field": "_line", "type": "nominal", "title": line_title}
    tooltip = [
        {"field": f, "type": "nominal" if f in ("shape", "verdict", "pass") else "quantitative"}
        for f in ("shape", "pass", "speedup", "speedup_lo", "speedup_hi", "verdict")
    ]
    layers = [
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
    spec = {
        "title": _title(
            "speedup" + (f" · {title}" if title else ""),
            "p20–p80 band; above 1: the candidate is faster"
            + (f" · {constant_axes}" if constant_axes else ""),
        ),
        "width": WIDTH,
        "height": HEIGHT,
        "layer": layers,
    }
    return Chart(_facet(spec, data, panel), [])


# -- latency and memory -----------------------------------------------------------------------


def _value_y(low: float, high: float, field: str, title: str) -> dict[str, Any]:
    log = low > 0 and high / low > LOG_Y_SPREAD
    scale = {"type": "log"} if log else {"zero": False}
    return {"field": field, "type": "quantitative", "title": title, "scale": scale}


def _latency(data: list[dict[str, Any]]) -> Chart:
    for d in data:
        d["_gpu"] = _gpu(d)
    panel = _panels(data, ("kernel", "pass", "_gpu", "environment"))
    x, constant_axes = x_axis(data, panel)
    line_parts = ["provider", *_varying(data, ("version", "_split"))]
    for d in data:
        d["_line"] = _label(d, line_parts)
    values = [v for d in data for v in (d["p20_ms"], d["p80_ms"], d["median_ms"]) if v]
    y = _value_y(min(values), max(values), "median_ms", "latency, median (ms)")
    color = {"field": "_line", "type": "nominal", "title": "implementation"}
    title = _constant_title(data, [("kernel",), ("pass",), ("_gpu",)])
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
        {"mark": {"type": "line"}, "encoding": {"x": x, "y": y, "color": color}},
        {
            "mark": {"type": "point", "filled": True, "size": 40},
            "encoding": {
                "x": x,
                "y": y,
                "color": color,
                "tooltip": [
                    {"field": "shape", "type": "nominal"},
                    {"field": "provider", "type": "nominal"},
                    {"field": "median_ms", "type": "quantitative"},
                    {"field": "p20_ms", "type": "quantitative"},
                    {"field": "p80_ms", "type": "quantitative"},
                ],
            },
        },
    ]
    spec = {
        "title": _title(
            "latency" + (f" · {title}" if title else ""),
            "median, p20–p80 error bars" + (f" · {constant_axes}" if constant_axes else ""),
        ),
        "width": WIDTH,
        "height": HEIGHT,
        "layer": layers,
    }
    return Chart(_facet(spec, data, panel), [])


_FLAGGED = ("regression", "improvement")


def _history(data: list[dict[str, Any]]) -> Chart:
    """Two panels over the points' order (versions as given, or run dates): latency and the
    speedup against the baseline, flagged steps drawn larger and coloured by verdict."""
    if "median_ms" not in data[0]:
        raise QueryError(
            "no chart for a leaderboard's record staircase yet",
            hint="plot a history of cells with a reference implementation",
        )
    by_run = "observed_at" in data[0]
    order: list[str] = []
    for d in data:
        d["_gpu"] = _gpu(d)
        d["_line"] = " · ".join(str(d[k]) for k in ("implementation", "shape") if d.get(k))
        d["_x"] = d["observed_at"] if by_run else d["version"]
        d["_flag"] = next(
            (v for v in (d.get("verdict"), d.get("speedup_verdict")) if v in _FLAGGED), "none"
        )
        if not by_run and d["_x"] not in order:
            order.append(d["_x"])
    x = (
        {"field": "_x", "type": "temporal", "title": "observed"}
        if by_run
        else {"field": "_x", "type": "ordinal", "title": "version", "sort": order}
    )
    color = {"field": "_line", "type": "nominal", "title": "implementation · shape"}
    marks = {
        "field": "_flag", "type": "nominal", "title": "step",
        "scale": {"domain": ["regression", "improvement", "none"],
                  "range": ["#d62728", "#2ca02c", "#bbbbbb"]},
    }  # fmt: skip
    size = {"condition": {"test": "datum._flag !== 'none'", "value": 160}, "value": 30}

    def panel(field: str, title: str, band: tuple[str, str] | None) -> dict[str, Any]:
        values = [d[field] for d in data if d.get(field)]
        y = _value_y(min(values, default=1), max(values, default=1), field, title)
        layers: list[dict[str, Any]] = [
            {"mark": {"type": "line"}, "encoding": {"x": x, "y": y, "color": color}},
            {
                "mark": {"type": "point", "filled": True},
                "encoding": {
                    "x": x, "y": y, "fill": marks, "stroke": color, "size": size,
                    "tooltip": [{"field": k, "type": "nominal"} for k in
                                ("_line", "version", "verdict", "speedup_verdict")]
                    + [{"field": field, "type": "quantitative"}],
                },
            },
        ]  # fmt: skip
        if band:
            bars = {"x": x, "y": {**y, "field": band[0]}, "y2": {"field": band[1]}, "color": color}
            layers.insert(0, {"mark": {"type": "rule"}, "encoding": bars})
        return {"width": WIDTH, "height": HEIGHT, "layer": layers}

    title = _constant_title(data, [("kernel",), ("pass",), ("_gpu",)])
    spec = {
        "data": {"values": data},
        "title": _title("history" + (f" · {title}" if title else ""), "flagged steps marked"),
        "vconcat": [
            panel("median_ms", "latency, median (ms)", ("p20_ms", "p80_ms")),
            panel("speedup", "speedup vs baseline", None),
        ],
    }
    return Chart(spec, [])


def _memory(data: list[dict[str, Any]]) -> Chart:
    for d in data:
        d["_gpu"] = _gpu(d)
    panel = _panels(data, ("kernel", "pass", "_gpu", "environment"))
    x, constant_axes = x_axis(data, panel)
    values = [v for d in data for v in (d["candidate_mib"], d["baseline_mib"]) if v]
    y = _value_y(min(values), max(values), "mib", "peak memory (MiB)")
    # one line per implementation: the rows' two sides, folded in Vega-Lite (data unchanged)
    fold = [
        {"fold": ["candidate_mib", "baseline_mib"], "as": ["side", "mib"]},
        {
            "calculate": "datum.side === 'candidate_mib' ? datum.candidate : datum.baseline",
            "as": "implementation",
        },
    ]
    color = {"field": "implementation", "type": "nominal"}
    title = _constant_title(data, [("kernel",), ("pass",), ("_gpu",)])
    layers = [
        {"mark": {"type": "line"}, "encoding": {"x": x, "y": y, "color": color}},
        {
            "mark": {"type": "point", "filled": True, "size": 40},
            "encoding": {
                "x": x,
                "y": y,
                "color": color,
                "tooltip": [
                    {"field": "shape", "type": "nominal"},
                    {"field": "implementation", "type": "nominal"},
                    {"field": "mib", "type": "quantitative"},
                    {"field": "memory_ratio", "type": "quantitative"},
                ],
            },
        },
    ]
    spec = {
        "title": _title(
            "peak memory" + (f" · {title}" if title else ""),
            "one value per implementation and shape"
            + (f" · {constant_axes}" if constant_axes else ""),
        ),
        "transform": fold,
        "width": WIDTH,
        "height": HEIGHT,
        "layer": layers,
    }
    return Chart(_facet(spec, data, panel), [])


# -- summary ----------------------------------------------------------------------------------


def _summary(data: list[dict[str, Any]]) -> Chart:
    for d in data:
        d["_gpu"] = _gpu(d)
        d["_pair"] = f"{d['candidate']} vs {d['baseline']} · {d['statistic']} {d['metric']}"
        d["_cell"] = f"{d['geomean_speedup']:.2f}× ({d['cases']})"
    cells: dict[str, int] = {}
    for d in data:
        cells[d["_pair"]] = cells.get(d["_pair"], 0) + 1
    pairs = sorted(cells, key=lambda p: (-cells[p], p))
    notes = []
    if len(pairs) > MAX_HEATMAPS:
        notes.append(
            f"summary: drew the {MAX_HEATMAPS} of {len(pairs)} candidate/baseline pairs with "
            "the most cells; name a pair (`A vs B`) or a kernel for the others"
        )
        pairs = pairs[:MAX_HEATMAPS]
    low = min(d["geomean_speedup"] for d in data if d["geomean_speedup"])
    high = max(d["geomean_speedup"] for d in data)
    reach = max(high, 1 / low, 1.01)
    color = {
        "field": "geomean_speedup",
        "type": "quantitative",
        "title": "geomean speedup",
        "scale": {
            "type": "log",
            "scheme": "redblue",
            "domain": [1 / reach, reach],
            "domainMid": 1,
        },
    }
    heatmaps = []
    for pair in pairs:
        subset = [d for d in data if d["_pair"] == pair]
        layer = {
            "width": {"step": 70},
            "height": {"step": 18},
            "layer": [
                {
                    "mark": "rect",
                    "encoding": {
                        "x": {"field": "_gpu", "type": "nominal", "title": "GPU"},
                        "y": {"field": "kernel", "type": "nominal", "title": None},
                        "color": color,
                        "tooltip": [
                            {"field": "kernel", "type": "nominal"},
                            {"field": "_gpu", "type": "nominal", "title": "gpu"},
                            {"field": "environment", "type": "nominal"},
                            {"field": "geomean_speedup", "type": "quantitative"},
                            {"field": "cases", "type": "quantitative"},
                        ],
                    },
                },
                {
                    "mark": {"type": "text", "fontSize": 9},
                    "encoding": {
                        "x": {"field": "_gpu", "type": "nominal"},
                        "y": {"field": "kernel", "type": "nominal"},
                        "text": {"field": "_cell"},
                    },
                },
            ],
        }
        heatmaps.append(
            {
                "data": {"values": subset},
                "title": pair,
                "facet": {"column": {"field": "pass", "type": "nominal", "title": None}},
                "spec": layer,
            }
        )
    spec: dict[str, Any] = {
        "title": _title(
            "geometric-mean speedup per kernel and GPU",
            "label: geomean (cases); blue: the candidate is faster, red: slower",
        ),
        "vconcat": heatmaps,
        "resolve": {"scale": {"color": "shared"}},
    }
    return Chart(spec, notes)


# -- output -----------------------------------------------------------------------------------

FORMATS = (".png", ".svg", ".html")
_CONFIG = {"view": {"stroke": None}, "axis": {"labelLimit": 220}, "legend": {"labelLimit": 260}}


def full_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """The spec with kindex's config (and no $schema URL: the files hold no http address)."""
    return {"config": _CONFIG, **spec}


def write_chart(spec: dict[str, Any], path: Path) -> None:
    """Write PNG, SVG or a self-contained HTML page, by the file's suffix."""
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise QueryError(
            f"cannot write a chart to {path.name!r}", hint="name a .png, .svg or .html file"
        )
    import vl_convert as vlc

    spec = full_spec(spec)
    if suffix == ".png":
        path.write_bytes(vlc.vegalite_to_png(spec, scale=1.5))
    elif suffix == ".svg":
        path.write_text(vlc.vegalite_to_svg(spec), encoding="utf-8")
    else:
        path.write_text(html_page(path.stem, [("chart", spec)]), encoding="utf-8")


def html_page(title: str, charts: list[tuple[str, dict[str, Any]]]) -> str:
    """A page that draws `charts` (element id, spec) with the Vega bundle inlined."""
    from html import escape

    divs = "".join(f'<div id="{escape(i)}"></div>' for i, _ in charts)
    specs = json.dumps({i: full_spec(s) for i, s in charts}).replace("</", "<\\/")
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{escape(title)}</title>"
        f"<script>{vega_bundle()}</script></head><body>{divs}"
        f"<script>(()=>{{const SPECS={specs};for(const [id,s] of Object.entries(SPECS))"
        "vegaEmbed('#'+id,s,{actions:false,renderer:'svg'}).catch(e=>console.error(e));})()"
        "</script></body></html>"
    )


def vega_bundle() -> str:
    """The Vega, Vega-Lite and vega-embed JavaScript from vl-convert (no network), cached on
    disk: building it takes 4.4 s, reading it a millisecond."""
    import importlib.metadata

    import vl_convert as vlc

    version = importlib.metadata.version("vl-convert-python")
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kindex"
    path = cache / f"vega-bundle-{version}.js"
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        pass
    # the stub marks the optional snippet as required
    bundle = vlc.javascript_bundle()  # type: ignore[call-arg]
    bundle = bundle.replace("</script", "<\\/script")
    try:
        cache.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(bundle, encoding="utf-8")
        tmp.replace(path)
    except OSError:
        pass  # no writable cache: build it again next time
    return bundle


# -- from a query -----------------------------------------------------------------------------


def query_chart(
    text: str, lake: str | os.PathLike[str] | None = None, options: Any = None
) -> Chart:
    """Run shorthand `text` (as `kindex query`) and chart its rows."""
    from kindex_olap.query.compile import Options, run_query

    result = run_query(text, lake, options or Options())
    if not result.rows:
        why = "; ".join(result.diagnostics) or "no rows"
        raise QueryError(f"nothing to plot: {why}")
    chart = chart_for(result.verb, result.columns, result.rows)
    chart.notes = [*result.diagnostics, *chart.notes]
    return chart


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
