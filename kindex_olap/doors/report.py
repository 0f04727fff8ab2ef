"""`kindex report`: one self-contained HTML file of what the lake holds and what it answers.

Order: what the lake holds (sources, GPUs, kernels, versions, runs, lake commit), the summary
heatmap, an index, then a section per kernel and GPU with its speedup and latency charts and a
sortable table of its speedup rows, and the comparability rule. Every chart is drawn from rows
of `run_query` (the `speedup`, `latency` and `summary` verbs with the report's filters), the
Vega JavaScript is inlined (no network), and charts render when their section comes into view,
so a report of thousands of cells opens at once.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import Any

from kindex_olap.doors import columns as cols
from kindex_olap.doors.apart import told_apart
from kindex_olap.doors.columns import INTERVALS, RATIOS, header, interval_text
from kindex_olap.doors.plot import chart_for
from kindex_olap.doors.records import records
from kindex_olap.doors.render import full_spec, inline_json, vega_bundle
from kindex_olap.errors import QueryError
from kindex_olap.labels import gpu_label
from kindex_olap.query.engine import connect, snapshot_of
from kindex_olap.query.run import QueryResult, run_query
from kindex_olap.query.shorthand import VERBS
from kindex_olap.query.verbs import REPORT_VERBS, VERB_COLUMNS
from kindex_olap.sqlfiles import read_sql

# columns of a section's table: the speedup verb's, less those the section heading names
_SECTION_KEYS = ("kernel", "gpu", "form_factor", "environment")
RULE = (
    "A speedup is baseline latency / candidate latency of two runs that share kernel, timed "
    "pass, workload digest, environment digest, protocol (digest and family, hence timer and "
    "statistic), metric and unit. Its interval is the runs' own [baseline p20 / candidate p80, "
    "baseline p80 / candidate p20] (run_speedup_lo/hi) widened by both sides' run-to-run "
    "noise, learned per GPU and latency class from the lake's repeats (speedup_lo/hi); the "
    "verdict is within noise when that interval contains 1, and evidence says where a side "
    "was timed once. Aggregates are geometric means with a bootstrap interval, per kernel, "
    "pass, GPU, metric, statistic and pair, never pooled across them. Memory is compared only "
    "with memory."
)


def filters_of(text: str | None) -> str:
    """The filter words of `text` (a leading verb, e.g. `speedup jsd`, is dropped)."""
    words = (text or "").split()
    if words and words[0].lower() in VERBS:
        words = words[1:]
    return " ".join(words)


def write_report(
    out: str | os.PathLike[str], text: str | None = None, lake: str | os.PathLike[str] | None = None
) -> str:
    """Write the report of the rows `text` selects (everything when None); returns a summary."""
    filters = filters_of(text)
    con = connect(lake)
    try:
        answers = {verb: run_query(f"{verb} {filters}".strip(), con=con) for verb in REPORT_VERBS}
        sources = con.execute(read_sql("queries/report_sources.sql"))
        source_columns = [d[0] for d in sources.description or []]
        source_rows = sources.fetchall()
    finally:
        con.close()
    snapshot = snapshot_of(lake)
    page = _Page(f"kindex report{': ' + filters if filters else ''}")
    page.columns = {verb: answers[verb].columns for verb in ("speedup", "latency")}
    page.add(f"<h1>{escape(page.title)}</h1>")
    page.add(
        f"<p>lake {escape(str(snapshot.lake))}, lake commit {snapshot.id}"
        f"{', committed ' + escape(snapshot.created_at) if snapshot.created_at else ''}</p>"
    )
    page.add("<h2 id='lake'>What the lake holds</h2>")
    page.add(html_table(source_columns, records(source_columns, source_rows), "sources"))
    _summary_section(page, answers["summary"])
    sections = _sections(answers["speedup"], answers["latency"])
    page.add("<h2 id='index'>Index: kernel and GPU</h2>")
    page.add(_index(sections))
    for number, (key, speed, latency) in enumerate(sections):
        _kernel_section(page, f"s{number}", key, speed, latency)
    page.add(f"<h2 id='rule'>The comparability rule</h2><p>{escape(RULE)}</p>")
    path = Path(out)
    path.write_text(page.html(), encoding="utf-8")
    size = path.stat().st_size / 1e6
    kernels = len({k[0] for k, _, _ in sections})
    return (
        f"report: {len(sections)} kernel/GPU sections ({kernels} kernels), "
        f"{len(page.charts)} charts, {size:.1f} MB -> {path}"
    )


# -- sections ---------------------------------------------------------------------------------

_Key = tuple[str, str, str]  # kernel, gpu label, environment


def _sections(
    speed: QueryResult, latency: QueryResult
) -> list[tuple[_Key, list[tuple[Any, ...]], list[tuple[Any, ...]]]]:
    """Rows of both verbs grouped by kernel and environment, sorted by kernel then GPU."""
    groups: dict[_Key, tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]] = {}
    for slot, result in enumerate((speed, latency)):
        index = [result.columns.index(c) for c in _SECTION_KEYS]
        for row in result.rows:
            kernel, gpu, form, environment = (row[i] for i in index)
            # the views' gpu names the model already ("NVIDIA H100 PCIe"): joining its form
            # factor again titled the section "NVIDIA H100 PCIe PCIe"
            key = (kernel, gpu_label(gpu, form), environment)
            groups.setdefault(key, ([], []))[slot].append(row)
    return [(key, *groups[key]) for key in sorted(groups)]


def _summary_section(page: _Page, summary: QueryResult) -> None:
    page.add("<h2 id='summary'>Geometric-mean speedups</h2>")
    if not summary.rows:
        page.add(f"<p>{escape('; '.join(summary.diagnostics) or 'no comparable pairs')}</p>")
        return
    chart = chart_for("summary", summary.columns, summary.rows)
    for note in chart.notes:
        page.add(f"<p class='note'>{escape(note)}</p>")
    page.chart("summary-heatmap", chart.spec)


def _index(sections: list[tuple[_Key, Any, Any]]) -> str:
    by_kernel: dict[str, list[str]] = {}
    for number, ((kernel, gpu, environment), _, _) in enumerate(sections):
        link = f"<a href='#s{number}' title='{escape(environment)}'>{escape(gpu)}</a>"
        by_kernel.setdefault(kernel, []).append(link)
    items = "".join(
        f"<li><b>{escape(kernel)}</b>: {' · '.join(links)}</li>"
        for kernel, links in by_kernel.items()
    )
    return f"<ul class='index'>{items}</ul>"


def _kernel_section(
    page: _Page,
    anchor: str,
    key: _Key,
    speed: list[tuple[Any, ...]],
    latency: list[tuple[Any, ...]],
) -> None:
    kernel, gpu, environment = key
    page.add(
        f"<section id='{anchor}'><h3>{escape(kernel)} · {escape(gpu)} "
        f"<small>({escape(environment)})</small> <a href='#index'>index</a></h3>"
    )
    for verb, rows, result_columns in (
        ("speedup", speed, page.columns["speedup"]),
        ("latency", latency, page.columns["latency"]),
    ):
        if not rows:
            page.add(f"<p class='note'>no {verb} rows for this kernel and GPU</p>")
            continue
        try:
            chart = chart_for(verb, result_columns, rows)
        except QueryError as e:  # a chart the rows cannot make: say so in place
            page.add(f"<p class='note'>no {verb} chart: {escape(str(e))}</p>")
            continue
        page.chart(f"{anchor}-{verb}", chart.spec)
    if speed:
        page.add(_speedup_table(page.columns["speedup"], speed))
    page.add("</section>")


def _speedup_table(columns: list[str], rows: list[tuple[Any, ...]]) -> str:
    """The section's speedup rows in the terminal table's words: the verb's columns less the
    heading's, ratios as `0.39×`, the interval as one `interval±noise` column; a column with
    one value on every row is said once above the table (the page stays 1400 px wide)."""
    present = set(columns)
    shown = [
        name
        for name in VERB_COLUMNS["speedup"].show
        if name not in _SECTION_KEYS and present.issuperset(INTERVALS.get(name, (name,)))
    ]
    data = records(columns, told_apart(columns, rows, VERB_COLUMNS["speedup"]))
    shown = [c for c in shown if any(_text(c, d) for d in data)]  # no column of blanks
    answer = {"speedup", "speedup_interval", "verdict"}
    same = [c for c in shown if c not in answer and len({_text(c, d) for d in data}) == 1]
    if len(data) < 2:
        same = []
    shared = " · ".join(f"{header(c)} {_text(c, data[0])}" for c in same if _text(c, data[0]))
    caption = f"<p class='note'>every row: {escape(shared)}</p>" if shared else ""
    kept = [c for c in shown if c not in same]
    head = "".join(f"<th>{escape(header(c))}</th>" for c in kept)
    body = "".join("<tr>" + "".join(_display_cell(c, d) for c in kept) + "</tr>" for d in data)
    return (
        f"{caption}<table class='rows sortable'><thead><tr>{head}</tr></thead>"
        f"<tbody>{body}</tbody></table>"
    )


def _text(name: str, d: dict[str, Any]) -> str:
    """A cell as the terminal table writes it: `0.39×`, `[0.35, 0.44]`, `5.784`."""
    if name in INTERVALS:
        lo, hi = INTERVALS[name]
        return interval_text(d.get(lo), d.get(hi))
    value = d.get(name)
    if isinstance(value, float):
        return f"{cols.number(value)}×" if name in RATIOS else f"{value:.4g}"
    return "" if value is None else str(value)


def _display_cell(name: str, d: dict[str, Any]) -> str:
    """A cell with its sort value (a ratio by value, an interval by its low end)."""
    key = d.get(INTERVALS[name][0]) if name in INTERVALS else d.get(name)
    if isinstance(key, int | float) and not isinstance(key, bool):
        return f"<td class='n' data-v='{key!r}'>{escape(_text(name, d))}</td>"
    return f"<td>{escape(_text(name, d))}</td>"


def html_table(columns: Sequence[str], data: list[dict[str, Any]], css: str) -> str:
    """A sortable table (click a header); numbers sort by value (data-v)."""
    head = "".join(f"<th>{escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(_cell(d.get(c)) for c in columns) + "</tr>" for d in data)
    return (
        f"<table class='{css} sortable'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    )


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"<td class='n' data-v='{value!r}'>{value:.4g}</td>"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"<td class='n'>{value}</td>"
    return f"<td>{escape('' if value is None else str(value))}</td>"


# -- the page ---------------------------------------------------------------------------------

_CSS = """body{font:14px/1.4 system-ui,sans-serif;margin:2em;max-width:1400px}
table{border-collapse:collapse;margin:.5em 0;max-width:100%}
th,td{padding:2px 8px;border-bottom:1px solid #ddd;overflow-wrap:break-word}
th,td.n{white-space:nowrap}
.chart{max-width:100%}
th{cursor:pointer;text-align:left;background:#f4f4f4}td.n{text-align:right}
.index li{margin:.2em 0}.note{color:#666}section{border-top:2px solid #ccc;margin-top:2em}
.chart{min-height:60px}"""
# Charts render when their element comes near the viewport (thousands would stall the page);
# data-rendered marks a finished chart. Headers sort their table's rows. (Wrapped in a function
# when written: the Vega bundle's globals include names such as `io`.)
_SCRIPT = """const done=new Set();
function draw(el){if(done.has(el.id))return;done.add(el.id);
vegaEmbed(el,SPECS[el.id],{actions:false,renderer:'svg'})
.then(()=>{el.dataset.rendered='1'}).catch(e=>console.error(e));}
const io=new IntersectionObserver(es=>{for(const e of es)if(e.isIntersecting){
io.unobserve(e.target);draw(e.target);}},{rootMargin:'600px'});
document.querySelectorAll('.chart').forEach(el=>io.observe(el));
document.addEventListener('click',ev=>{const th=ev.target.closest('th');if(!th)return;
const table=th.closest('table'),i=[...th.parentNode.children].indexOf(th),
asc=th.dataset.dir!=='asc';th.dataset.dir=asc?'asc':'desc';
const key=r=>{const c=r.cells[i];const v=c.dataset.v??c.textContent;const n=parseFloat(v);
return c.classList.contains('n')&&!isNaN(n)?n:v;};
const rows=[...table.tBodies[0].rows].sort((a,b)=>{const x=key(a),y=key(b);
return (x<y?-1:x>y?1:0)*(asc?1:-1);});table.tBodies[0].append(...rows);});"""


class _Page:
    def __init__(self, title: str) -> None:
        self.title = title
        self.parts: list[str] = []
        self.charts: dict[str, dict[str, Any]] = {}
        self.columns: dict[str, list[str]] = {}

    def add(self, html: str) -> None:
        self.parts.append(html)

    def chart(self, element_id: str, spec: dict[str, Any]) -> None:
        self.charts[element_id] = full_spec(spec)
        self.add(f"<div class='chart' id='{escape(element_id)}'></div>")

    def html(self) -> str:
        specs = inline_json(self.charts)
        return (
            "<!doctype html><html><head><meta charset='utf-8'>"
            f"<title>{escape(self.title)}</title><style>{_CSS}</style>"
            f"<script>{vega_bundle()}</script></head><body>{''.join(self.parts)}"
            f"<script>(()=>{{const SPECS={specs};{_SCRIPT}}})()</script></body></html>"
        )
