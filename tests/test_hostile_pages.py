"""Hostile names through every HTML page kindex writes (issue 26, defect 3).

A lake whose kernel, provider, GPU and version names are payloads (script and comment openers,
event handlers, template syntax, line separators, RTL overrides, very long names, ...) is
ingested; `kindex report` and `kindex plot` pages of it are opened in headless Chromium
(Debian's /usr/bin/chromium through playwright), where every chart must draw, no dialog open, no
script error occur and no element a payload would inject exist.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import crafted
import pytest
from conftest import CHROMIUM
from test_hostile import PAYLOADS
from test_report import CHROMIUM_ARGS
from typer.testing import CliRunner

from kindex_olap.cli.app import app
from kindex_olap.ingestion.pipeline import ingest
from kindex_olap.model.canonical import document_digest

pytestmark = pytest.mark.browser

# test_hostile's list, plus payloads that set a flag instead of opening a dialog, inject an
# element the page would keep, or are odd rather than active. Names holding a control
# character are rejects at ingest (the second list); the rest reach the pages.
PAGE_PAYLOADS = [
    # (`-->` is left out here: anywhere after `<!--<script>` on one page it ends the escape that
    # payload opens, and the page would hide the attack; test_hostile draws it on a page alone)
    *(p for p in PAYLOADS if p != "-->"),
    "<img src=x onerror=window.__pwned=1>",
    "<div id=injected>",
    "</div></section><div id=injected>x</div>",
    "<base href=https://example.invalid/>",
    "<meta http-equiv=refresh content=0>",
    "<a href=javascript:window.__pwned=1 id=injected>",
    "'-window.__pwned=1-'",
    '"-window.__pwned=1-"',
    '\\"});window.__pwned=1;//',
    "{{constructor.constructor('window.__pwned=1')()}}",
    "{{7*7}}",
    "#{7*7} %{7*7} <%= 7*7 %>",
    "\u202eevil\u202c",
    "\u2066isolate\u2069 \u200bzero\u200dwidth\ufeff",
    "\U0001f4a5 emoji \u0301",
    "\\",
    "'",
    '"',
    "&",
    "&amp;&quot;&#x27;",
    " leading and trailing ",
    "k" * 180,  # a benchmark name holds at most 200 characters
]
CONTROL_PAYLOADS = ["\x1b]0;pwned\x07", "tab\there", "line\nbreak", "del\x7f", "c1\x85nel"]
NAMES = [*PAGE_PAYLOADS, *CONTROL_PAYLOADS]
ALLOWED_TAGS = {
    "html", "head", "meta", "title", "style", "script", "body", "h1", "h2", "h3", "p",
    "small", "a", "b", "ul", "li", "table", "thead", "tbody", "tr", "th", "td", "section", "div",
}  # fmt: skip
INSPECT = """() => {
  const all = [...document.querySelectorAll('*')];
  const outside = all.filter(e => !e.closest('.chart, #chart'));
  // what vega-embed adds beside a chart's SVG: an empty form for bound inputs, nothing else
  const beside = all.filter(e => e.parentElement?.matches('.chart, #chart') && !(e.tagName ===
    'svg' || (e.tagName === 'FORM' && e.className === 'vega-bindings' && !e.childElementCount)));
  const handlers = [...document.querySelectorAll('*')].flatMap(e =>
    [...e.attributes].filter(a => a.name.startsWith('on')).map(a => e.tagName + ' ' + a.name));
  const links = [...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href'))
    .filter(h => !h.startsWith('#'));
  return {tags: [...new Set(outside.map(e => e.tagName.toLowerCase()))], handlers, links,
    beside: beside.map(e => e.outerHTML.slice(0, 200)),
    injected: document.querySelectorAll('#injected, base, iframe, img, textarea').length,
    scripts: document.scripts.length, titles: document.querySelectorAll('title').length,
    pwned: window.__pwned === undefined ? null : String(window.__pwned),
    svgOutside: [...document.querySelectorAll('svg')].filter(s => !s.closest('.chart, #chart'))
      .length};
}"""


def _documents() -> list[dict[str, Any]]:
    """Per name: a kernel of that name on a GPU of that name, its version also named so, liger
    against torch (one pair of many cells: the summary heatmap draws every name); and a
    JSD-on-B200 cell per name, on a workload whose shape label is the name, comparing an
    implementation of that name with torch."""
    documents = []
    for i, name in enumerate(NAMES):
        for provider, median in (("liger", 1e6), ("torch", 2e6)):
            run = crafted.run(
                provider, kernel=name, median=median, p20=median * 0.98, p80=median * 1.02,
                version=name,
            )  # fmt: skip
            documents.append(crafted.on_gpu(run, name, "sm_100", f"hostile-{i}"))
        if name in CONTROL_PAYLOADS:
            documents.append(crafted.run(name))
            continue
        workload = {
            "apiVersion": "kernelindex.dev/v1alpha1",
            "kind": "WorkloadCase",
            "metadata": {"name": f"hostile-{i}", "labels": {"shape": name}},
            "spec": {"case": i},
        }
        documents.append(workload)
        for provider, median in ((name, 1e6 + i * 1e4), ("torch", 2e6)):
            run = crafted.run(provider, median=median, version=name)
            run["run"]["spec"]["workloadDigest"] = document_digest(workload)
            documents.append(run)
    return documents


@pytest.fixture(scope="module")
def hostile_lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile-pages")
    ingest([_write(root / "in", _documents())], root / "lake")
    return root / "lake"


def _write(folder: Path, documents: list[dict[str, Any]]) -> Path:
    folder.mkdir()
    for i, document in enumerate(documents):
        (folder / f"d{i:03d}.json").write_text(json.dumps(document), encoding="utf-8")
    return folder


def test_names_with_control_characters_are_rejects(tmp_path: Path) -> None:
    documents = _documents()
    report = ingest([_write(tmp_path / "in", documents)], tmp_path / "lake")
    control = re.compile("[\x00-\x1f\x7f-\x9f]")
    runs = [d for d in documents if "run" in d]
    assert report.rejected == sum(bool(control.search(_names(d))) for d in runs) > 0
    assert report.runs_added == len(runs) - report.rejected


def _names(bundle: dict[str, Any]) -> str:
    native = bundle["run"]["spec"]["sourceNative"]
    return native["benchmark"] + native["externalId"]


def _inspect(path: Path, draw: str) -> dict[str, Any]:
    """Load `path` in Chromium, run `draw` (JavaScript that draws every chart and returns what
    it drew), then inspect the page. Dialogs, page errors and console errors are collected."""
    from playwright.sync_api import sync_playwright

    errors: list[str] = []
    dialogs: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.goto(path.as_uri(), wait_until="load", timeout=60_000)
            drawn = page.evaluate(draw)
            page.wait_for_timeout(500)  # a late onerror or timer would run by now
            found: dict[str, Any] = page.evaluate(INSPECT)
            found["title"] = page.title()
            found["headings"] = page.eval_on_selector_all(
                "h3", "els => els.map(e => e.textContent)"
            )
        finally:
            browser.close()
    found.update(drawn=drawn, errors=errors, dialogs=dialogs)
    return found


# Every chart element, scrolled into view one by one (the report draws charts as they come
# near the viewport), waited for until its SVG holds marks, 60 s for all of them (a page whose
# chart script never ran answers in a minute): [id, marks] per chart.
DRAW_REPORT = """async () => {
  const out = [], end = Date.now() + 60000;
  for (const el of document.querySelectorAll('.chart')) {
    el.scrollIntoView();
    while (Date.now() < end && el.dataset.rendered !== '1')
      await new Promise(r => setTimeout(r, 50));
    out.push([el.id, el.querySelectorAll('svg .role-mark > *').length]);
  }
  return out;
}"""
DRAW_PLOT = """async () => {
  const el = document.querySelector('#chart');
  for (let t = 0; t < 400 && !el.querySelector('svg .role-mark'); t++)
    await new Promise(r => setTimeout(r, 50));
  return [[el.id, el.querySelectorAll('svg .role-mark > *').length]];
}"""


def _assert_clean(found: dict[str, Any], charts: int) -> None:
    assert found["dialogs"] == [] and found["errors"] == [], (found["dialogs"], found["errors"])
    assert len(found["drawn"]) == charts
    assert [d for d in found["drawn"] if d[1] == 0] == [], "charts that drew nothing"
    assert set(found["tags"]) <= ALLOWED_TAGS, set(found["tags"]) - ALLOWED_TAGS
    assert found["handlers"] == [] and found["links"] == [], (found["handlers"], found["links"])
    assert found["beside"] == [] and found["injected"] == 0 and found["svgOutside"] == 0
    assert found["scripts"] == 2 and found["titles"] == 1
    assert found["pwned"] is None


def test_the_report_of_hostile_names_draws_every_chart(hostile_lake: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    result = CliRunner().invoke(app, ["report", "--lake", str(hostile_lake), "--out", str(out)])
    assert result.exit_code == 0, result.output
    charts = int(re.search(r"(\d+) charts", result.stderr).group(1))  # type: ignore[union-attr]
    assert charts > 2 * len(PAGE_PAYLOADS)
    found = _inspect(out, DRAW_REPORT)
    _assert_clean(found, charts)
    # every name reached the page as text, unchanged (a GPU's name heads its section)
    headings = "\n".join(found["headings"])
    missing = [name for name in PAGE_PAYLOADS if f"· {name} (" not in headings]
    assert missing == []
    assert not [name for name in CONTROL_PAYLOADS if name in headings]


@pytest.mark.parametrize(
    "query", ["speedup jsd b200", "latency jsd b200", "summary", "history jsd b200"]
)
def test_a_plot_page_of_hostile_names_draws(hostile_lake: Path, tmp_path: Path, query: str) -> None:
    out = tmp_path / f"{PAYLOADS[0]}{query.split()[0]}.html"  # the title is the file's stem
    result = CliRunner().invoke(
        app, ["plot", query, "--lake", str(hostile_lake), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    found = _inspect(out, DRAW_PLOT)
    _assert_clean(found, 1)
    assert found["title"] == out.stem
