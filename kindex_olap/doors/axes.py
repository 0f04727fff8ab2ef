"""Axis inference and layout shared by the chart specs: workload axes read from shape labels,
lines and panels from the columns that vary, titles from the columns that do not."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from kindex_olap import labels
from kindex_olap.errors import QueryError
from kindex_olap.natural import natural_key

MAX_PANELS = 24  # more kernels x GPUs than this in one picture is unreadable: filter first
# `name1024`, `B4`, `num_experts32`: a workload axis and its value in a shape label
_AXIS = re.compile(r"^([A-Za-z_]+?)_?(\d+(?:\.\d+)?)$")
_DTYPE = re.compile(r"^(fp|bf|int|uint|float|e4m3|e5m2)\d*$|^na$", re.IGNORECASE)
# `p08889236`, `pab45baa3`: a letter and a digest of the configuration, a name, not a measure
_DIGEST = re.compile(r"^[a-z][0-9a-f]{8,}$")


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
        elif match and not _DIGEST.match(part):
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
        return ordinal_x(data, "shape"), ""
    names = list(dict.fromkeys(str(x) for x, _, _ in chosen))
    xs = sorted({d["_x"] for d in data})
    scale = {"type": "log", "base": 2} if xs[-1] >= 8 * xs[0] > 0 else {"zero": False}
    axis = {"values": xs} if len(names) == 1 and len(xs) <= 12 else {}
    encoding = {"field": "_x", "type": "quantitative", "title": " / ".join(names)}
    constant = {c for _, c, _ in chosen}
    return {**encoding, "scale": scale, "axis": axis}, " | ".join(sorted(c for c in constant if c))


def ordinal_x(data: list[dict[str, Any]], title: str) -> dict[str, Any]:
    """An ordinal x over `_x`, in the order the records first give it. The order travels as a
    number on each record (`_x_order`), never as a list of names: Vega-Lite compiles a sort
    list into an expression, and its parser refuses a name holding U+2028 or U+2029, so that
    chart would draw nothing (issue 26)."""
    order: dict[Any, int] = {}
    for d in data:
        d["_x_order"] = order.setdefault(d["_x"], len(order))
    sort = {"field": "_x_order", "op": "min"}
    return {"field": "_x", "type": "ordinal", "title": title, "sort": sort}


def natural_sort(data: list[dict[str, Any]], field: str) -> dict[str, Any]:
    """A Vega-Lite sort that puts `field`'s values (lines of a legend, panels, facet rows) in
    natural order. Like `ordinal_x`, the order travels as a number on each record
    (`_<field>_order`), never as a list of names."""
    values = sorted({str(d.get(field) or "") for d in data}, key=natural_key)
    rank = {v: i for i, v in enumerate(values)}
    order = f"_{field.lstrip('_')}_order"
    for d in data:
        d[order] = rank[str(d.get(field) or "")]
    return {"field": order, "op": "min"}


LEGEND_BESIDE = 40  # characters of the longest label that a legend beside the chart shows whole


def legend(data: list[dict[str, Any]], field: str) -> dict[str, Any]:
    """A legend beside the chart, or below it when a label is too long to show whole there
    (a shape's other axes: `batch 2 dilation 1 heads 8 hidden 512 ...`): below, it has the
    page's width and cuts no label short."""
    longest = max((len(str(d.get(field) or "")) for d in data), default=0)
    if longest <= LEGEND_BESIDE:
        return {}
    return {"orient": "bottom", "direction": "vertical", "labelLimit": 1200}


def _panel_x(data: list[dict[str, Any]]) -> tuple[str | None, str, list[str]]:
    parsed = [shape_axes(d.get("shape")) for d in data]
    names = sorted({k for p in parsed for k in p})
    values = {n: {p.get(n) for p in parsed} for n in names}
    varying = [n for n in names if len(values[n]) > 1]
    numeric = [n for n in varying if all(isinstance(p.get(n), float) for p in parsed)]
    constant = " · ".join(
        f"{n} {number_label(next(iter(values[n])))}" for n in names if n not in varying
    )
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
        d["_split"] = " ".join(f"{n} {number_label(p[n])}" for n in split if n in p)
    return x, constant, split


def number_label(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def line_label(d: dict[str, Any], parts: Iterable[str]) -> str:
    return " · ".join(str(d.get(p) or "") for p in parts if d.get(p))


def varying(data: list[dict[str, Any]], names: Iterable[str]) -> list[str]:
    return [n for n in names if len({d.get(n) for d in data}) > 1]


def constant_title(data: list[dict[str, Any]], groups: list[tuple[str, ...]]) -> str:
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


def panels(data: list[dict[str, Any]], by: tuple[str, ...]) -> str | None:
    """Set `_panel` (kernel and GPU where they vary); None when one panel holds everything."""
    names = varying(data, by)
    if not names:
        return None
    for d in data:
        d["_panel"] = line_label(d, names)
    count = len({d["_panel"] for d in data})
    if count > MAX_PANELS:
        raise QueryError(
            f"{count} kernel/GPU panels are too many for one chart",
            hint="name a kernel and a GPU (e.g. 'speedup jsd b200'), or plot 'summary'",
        )
    return "_panel"


def gpu_label(d: dict[str, Any]) -> str:
    """A row's GPU as people name it (kindex_olap.labels)."""
    return labels.gpu_label(d.get("gpu"), d.get("form_factor"))


def facet(spec: dict[str, Any], data: list[dict[str, Any]], panel: str | None) -> dict[str, Any]:
    """A top-level spec: the layers as they are, or repeated per panel (wrapped)."""
    if panel is None:
        return {"data": {"values": data}, **spec}
    layers = {k: v for k, v in spec.items() if k not in ("title",)}
    return {
        "data": {"values": data},
        "title": spec.get("title"),
        "facet": {
            "field": panel,
            "type": "nominal",
            "title": None,
            "sort": natural_sort(data, panel),
        },
        "columns": 2,
        "spec": layers,
        "resolve": {"scale": {"x": "independent"}},
    }


def titled(text: str, subtitle: str) -> dict[str, Any]:
    return {"text": text, "subtitle": subtitle} if subtitle else {"text": text}
