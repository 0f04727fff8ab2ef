"""`kindex plot` over Liger's benchmark history: PNG, SVG and HTML for speedup, latency, memory
and summary; what was drawn (axis titles, one mark per line and per row), that a chart's data
are the rows `--format json` prints, that HTML loads nothing from the network, and the
notebook API.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from pictures import png_size_and_rows
from typer.testing import CliRunner

import kindex_olap
from kindex_olap.cli.app import app
from kindex_olap.doors.plot import query_chart
from kindex_olap.doors.render import vega_bundle

pytestmark = pytest.mark.slow

QUERIES = {
    "speedup": "speedup jsd b200",
    "latency": "latency jsd b200",
    "memory": "memory jsd",
    "summary": "summary jsd",
}
URL = re.compile(r"https?://[^\s\"'<>)]+")


def invoke(*args: str) -> Any:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return result


def json_rows(lake: Path, text: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads(
        invoke("query", text, "--lake", str(lake), "-f", "json").stdout
    )
    return rows


def chart_data(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """Every record inside a spec (top level, facets and concatenated charts)."""
    found = list(spec.get("data", {}).get("values", []))
    for part in spec.get("vconcat", []):
        found += chart_data(part)
    return found


def marks(svg: str, kind: str) -> int:
    """How many SVG elements the Vega marks of `kind` (symbol, line, rect, ...) drew."""
    groups = re.findall(rf'<g class="mark-{kind} role-mark[^"]*"[^>]*>(.*?)</g>', svg, re.S)
    return sum(len(re.findall(r"<(?:path|text|line)\b", g)) for g in groups)


@pytest.mark.parametrize("verb", sorted(QUERIES))
def test_chart_data_are_the_json_rows(liger_history_lake: Path, verb: str) -> None:
    rows = json_rows(liger_history_lake, QUERIES[verb])
    drawn = chart_data(query_chart(QUERIES[verb], liger_history_lake).spec)
    # the chart's records: the JSON rows' fields, plus derived fields named _x, _line, ...
    assert [{k: d[k] for k in rows[0]} for d in drawn] == rows
    assert all(k.startswith("_") for d in drawn for k in d.keys() - rows[0].keys())


def test_speedup_svg_draws_each_row_and_pass(liger_history_lake: Path, tmp_path: Path) -> None:
    rows = json_rows(liger_history_lake, QUERIES["speedup"])
    out = tmp_path / "speedup.svg"
    invoke("plot", QUERIES["speedup"], "--lake", str(liger_history_lake), "--out", str(out))
    svg = out.read_text()
    assert "speedup (baseline / candidate)" in svg and ">tokens<" in svg
    assert "jsd · NVIDIA B200 · liger vs torch · median latency" in svg
    assert marks(svg, "symbol") == len(rows)  # one point per row
    passes = {r["pass"] for r in rows}
    assert marks(svg, "line") == len(passes) == 3  # one line per pass
    assert marks(svg, "area") == len(passes)  # a p20/p80 band per line
    assert "log scale" in svg  # speedup and tokens on log2 scales (aria descriptions)


def test_latency_and_memory_svg(liger_history_lake: Path, tmp_path: Path) -> None:
    latency = json_rows(liger_history_lake, QUERIES["latency"])
    out = tmp_path / "latency.svg"
    invoke("plot", QUERIES["latency"], "--lake", str(liger_history_lake), "--out", str(out))
    svg = out.read_text()
    assert "latency, median (ms)" in svg
    assert marks(svg, "symbol") == len(latency)
    assert marks(svg, "rule") == len(latency)  # a p20-p80 error bar per row
    lines = {(r["pass"], r["provider"]) for r in latency}
    assert marks(svg, "line") == len(lines)
    memory = json_rows(liger_history_lake, QUERIES["memory"])
    out = tmp_path / "memory.svg"
    invoke("plot", QUERIES["memory"], "--lake", str(liger_history_lake), "--out", str(out))
    svg = out.read_text()
    assert "peak memory (MiB)" in svg
    assert marks(svg, "symbol") == 2 * len(memory)  # the candidate's and the baseline's value
    panels = {(r["pass"], r["gpu"], r["environment"]) for r in memory}
    assert marks(svg, "line") == 2 * len(panels)


def test_summary_heatmap_cells(liger_history_lake: Path, tmp_path: Path) -> None:
    rows = json_rows(liger_history_lake, QUERIES["summary"])
    out = tmp_path / "summary.svg"
    invoke("plot", QUERIES["summary"], "--lake", str(liger_history_lake), "--out", str(out))
    svg = out.read_text()
    assert marks(svg, "rect") == len(rows)  # one cell per kernel, GPU, pass and pair
    for row in rows:
        assert f"{row['geomean_speedup']:.2f}×" in svg


@pytest.mark.parametrize("verb", sorted(QUERIES))
def test_png_has_its_size_and_ink(liger_history_lake: Path, tmp_path: Path, verb: str) -> None:
    png, svg = tmp_path / f"{verb}.png", tmp_path / f"{verb}.svg"
    for out in (png, svg):
        invoke("plot", QUERIES[verb], "--lake", str(liger_history_lake), "--out", str(out))
    width, height = (
        float(v)
        for v in re.search(r'width="([\d.]+)" height="([\d.]+)"', svg.read_text()).groups()  # type: ignore[union-attr]
    )
    got_width, got_height, distinct_rows = png_size_and_rows(png.read_bytes())
    assert abs(got_width - 1.5 * width) <= 1 and abs(got_height - 1.5 * height) <= 1
    assert distinct_rows > got_height // 4  # a blank picture has one distinct row


def test_html_loads_nothing_from_the_network(liger_history_lake: Path, tmp_path: Path) -> None:
    out = tmp_path / "speedup.html"
    invoke("plot", QUERIES["speedup"], "--lake", str(liger_history_lake), "--out", str(out))
    html = out.read_text()
    bundle = vega_bundle()
    assert bundle in html  # Vega, Vega-Lite and vega-embed inlined
    # kindex itself writes no address; the bundle's strings are XML namespaces and message
    # links, never fetched (tests/test_report.py watches a browser's requests)
    assert not URL.findall(html.replace(bundle, ""))
    assert not re.search(r"""(src|href)\s*=\s*["']?https?:""", html)


def test_errors_are_one_line(liger_history_lake: Path, tmp_path: Path) -> None:
    lake = str(liger_history_lake)
    result = CliRunner().invoke(app, ["plot", "gpus", "--lake", lake, "--out", "x.png"])
    assert result.exit_code == 5 and "no chart for 'gpus'" in result.stderr
    result = CliRunner().invoke(
        app, ["plot", "speedup jsd", "--lake", lake, "--out", str(tmp_path / "x.pdf")]
    )
    assert result.exit_code == 2 and "name a .png, .svg or .html file" in result.stderr
    result = CliRunner().invoke(
        app, ["plot", "speedup jsd b200 liger vs huggingface", "--lake", lake, "--out", "x.png"]
    )
    assert result.exit_code == 5 and "nothing to plot: no comparable runs" in result.stderr
    assert "Traceback" not in result.output
    # an empty step verb: its explanation alone, not the history's notes after it
    result = CliRunner().invoke(
        app, ["plot", "regressions jsd a100", "--lake", lake, "--out", str(tmp_path / "x.png")]
    )
    assert result.exit_code == 5
    assert result.stderr.startswith("error: nothing to plot: no runs match: the filter gpu a100")
    assert "history:" not in result.stderr


def test_notebook_api_returns_the_same_chart(liger_history_lake: Path) -> None:
    chart = kindex_olap.plot("speedup jsd b200", lake=liger_history_lake)
    assert hasattr(chart, "_repr_mimebundle_")  # altair: a notebook shows it inline
    spec = chart.to_dict()
    (values,) = spec["datasets"].values()
    rows = json_rows(liger_history_lake, "speedup jsd b200")
    assert [{k: d[k] for k in rows[0]} for d in values] == rows


def svg_texts(svg: str, role: str) -> list[str]:
    """The texts of the marks of `role` (legend-label, title-text, ...), in drawing order."""
    groups = re.findall(rf'<g class="mark-text role-{role}[^"]*"[^>]*>(.*?)</g>', svg, re.S)
    return [t for g in groups for t in re.findall(r"<text[^>]*>([^<]*)</text>", g)]


def test_legends_and_panels_in_natural_order(liger_history_lake: Path, tmp_path: Path) -> None:
    """Legends, panels and heatmap rows read as the tables do: passes forward, backward,
    full; shapes by their numbers (vocab4096 < ... < vocab131072), never in text order."""
    lake = str(liger_history_lake)
    svgs = {}
    for name, text in {
        "history": "history jsd h100-pcie fwd liger",
        "speedup": "speedup jsd b200",
        "latency": "latency kl_div h100-pcie",
        "summary": "summary jsd",
    }.items():
        out = tmp_path / f"{name}.svg"
        invoke("plot", text, "--lake", lake, "--out", str(out))
        svgs[name] = out.read_text()
    vocabs = [
        int(m)
        for t in svg_texts(svgs["history"], "legend-label")
        for m in re.findall(r"vocab(\d+)", t)
    ]
    assert len(vocabs) == 6 and vocabs == sorted(vocabs), vocabs
    speedup_lines = svg_texts(svgs["speedup"], "legend-label")
    assert speedup_lines == ["forward", "backward", "full"], speedup_lines
    panels = svg_texts(svgs["latency"], "title-text")[:-1]  # the last is the chart's title
    assert panels == ["forward", "full"], panels
    rows = [
        t for t in svg_texts(svgs["summary"], "title-text") if t in ("forward", "backward", "full")
    ]
    assert rows == ["forward", "backward", "full"], rows


def test_long_legend_labels_are_shown_whole(liger_history_lake: Path, tmp_path: Path) -> None:
    """Lines told apart by a shape's other axes (batch, dilation, heads, hidden, kernel_size)
    have labels too long for a legend beside the chart: it goes below, whole (it was cut to
    `... kernel_s…`, hiding what tells two lines apart)."""
    out = tmp_path / "fna.svg"
    text = "speedup fused_neighborhood_attention h100"
    invoke("plot", text, "--lake", str(liger_history_lake), "--out", str(out))
    labels = svg_texts(out.read_text(), "legend-label")
    assert len(labels) == 12 and not [t for t in labels if t.endswith("…")], labels
    assert all(t.endswith(("kernel_size 7", "kernel_size 9")) for t in labels), labels


def test_a_configuration_digest_is_not_a_workload_axis() -> None:
    """Liger's newest shapes end in a digest of their configuration (`p08889236`, `pab45baa3`):
    a name, never an axis `p` of 8889236 (which drew a numeric `p` into every legend)."""
    from kindex_olap.doors.axes import shape_axes

    label = "T4096-hidden_size1024-label_stride1-selected_tokens4-temperature1-bf16-p08889236"
    axes = shape_axes(label)
    assert "p" not in axes and axes["label"] == "p08889236"
    assert axes["T"] == 4096 and axes["label_stride"] == 1
    assert shape_axes("T4096-vocab_size151936-bf16-pab45baa3")["label"] == "pab45baa3"


def test_change_points_are_drawn_apart(liger_history_lake: Path, tmp_path: Path) -> None:
    """A change point is a diamond under a dashed vertical rule of its own colour, in both
    panels; a history without one draws neither. (Liger's history holds no series long enough
    for E-Divisive, so one real point is marked as `doors.plot` marks a change point.)"""
    from kindex_olap.doors.charts import CHANGE_POINT, history
    from kindex_olap.doors.render import write_chart

    text = "history jsd h100-pcie fwd liger"
    plain = query_chart(text, liger_history_lake).spec
    rows = chart_data(plain)
    assert rows and not any(d["_change_point"] for d in rows)
    write_chart(plain, tmp_path / "plain.svg")
    assert CHANGE_POINT not in (tmp_path / "plain.svg").read_text()
    marked = [{**d, "_change_point": d["version"] == "0.3.1" and i < 2} for i, d in enumerate(rows)]
    assert sum(d["_change_point"] for d in marked) == 1
    write_chart(history(marked).spec, tmp_path / "cut.svg")
    svg = (tmp_path / "cut.svg").read_text()
    assert svg.count(f'stroke="{CHANGE_POINT}"') == 2  # one rule per panel
    assert "change point" in svg
