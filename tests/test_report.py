"""`kindex report` of the whole real lake (Liger's history plus both KernelIndex exports), opened
in headless Chromium (Debian's /usr/bin/chromium through playwright; .ci/run installs it): it
loads nothing from the network, jumps to sections whose charts render, logs no console error,
and a screenshot is not blank. Also: the report holds what the lake holds and stays small.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from conftest import CHROMIUM
from pictures import png_size_and_rows
from typer.testing import CliRunner

from kindex_olap.cli.app import app
from kindex_olap.query.run import run_query

pytestmark = pytest.mark.slow

CHROMIUM_ARGS = [
    "--no-sandbox",  # CI runs as root
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
MAX_BYTES = 25 * 1024 * 1024


@pytest.fixture(scope="module")
def report(real_lake: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report") / "report.html"
    result = CliRunner().invoke(app, ["report", "--lake", str(real_lake), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert re.search(r"report: \d+ kernel/GPU sections", result.stderr)
    return out


def test_report_holds_the_lake(report: Path, real_lake: Path) -> None:
    html = report.read_text(encoding="utf-8")
    assert report.stat().st_size <= MAX_BYTES
    for source in ("liger-kernel-bench", "gpumode-kernelbot", "flashinfer-bench", "sol-execbench"):
        assert f"<td>{source}</td>" in html
    # a section (with an index link) per kernel and GPU holding speedup or latency rows
    speed = run_query("speedup", real_lake)
    kernel, environment = speed.columns.index("kernel"), speed.columns.index("environment")
    cells = {(row[kernel], row[environment]) for row in speed.rows}
    sections = re.findall(r"<section id='(s\d+)'>", html)
    assert len(sections) >= len(cells)
    assert all(f"href='#{s}'" in html for s in sections)
    assert "The comparability rule" in html
    # each section titled by the GPU as the tables name it: "NVIDIA H100 PCIe", not with its
    # form factor joined a second time ("NVIDIA H100 PCIe PCIe")
    titles = re.findall(r"<section id='s\d+'><h3>[^<]* · ([^<]*) <small>", html)
    assert "NVIDIA H100 PCIe" in titles and "NVIDIA B300 SXM6 AC" in titles
    assert not [t for t in titles if re.search(r"(.+) \1$", t)]


@pytest.mark.browser
def test_report_opens_offline_in_chromium(report: Path) -> None:
    from playwright.sync_api import sync_playwright

    html = report.read_text(encoding="utf-8")
    jsd = re.search(r"<a href='#(s\d+)' title='liger-bench-nvidia-b200'>NVIDIA B200</a>", html)
    assert jsd, "the index links jsd on the B200"
    sections = re.findall(r"<section id='(s\d+)'>", html)
    targets = [jsd.group(1), sections[len(sections) // 2], sections[-1]]
    errors: list[str] = []
    requests: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("request", lambda r: requests.append(r.url))
            page.goto(report.as_uri(), wait_until="load", timeout=120_000)
            page.wait_for_selector("#summary-heatmap[data-rendered='1']", timeout=60_000)
            for target in targets:
                page.click(f"a[href='#{target}']")
                rendered = f"#{target} .chart[data-rendered='1']"
                page.wait_for_selector(rendered, state="attached", timeout=60_000)
                marks = page.locator(f"#{target} .chart svg .role-mark").count()
                assert marks > 0, target
            shot = page.screenshot()
            sorted_ok = _sorts_by_click(page, jsd.group(1))
        finally:
            browser.close()
    assert errors == []
    assert {url.split(":", 1)[0] for url in requests} <= {"file", "data", "blob"}, requests[:5]
    _, height, distinct_rows = png_size_and_rows(shot)
    assert distinct_rows > height // 10  # not blank
    assert sorted_ok


def _sorts_by_click(page: Any, section: str) -> bool:
    """Click the speedup header of a section's table: rows come back in ascending order."""
    table = f"#{section} table.rows"
    headers = page.locator(f"{table} th").all_inner_texts()
    column = headers.index("speedup")
    page.locator(f"{table} th").nth(column).click()
    cells = page.locator(f"{table} tbody tr td:nth-child({column + 1})").all_inner_texts()
    values = [float(v.removesuffix("×")) for v in cells]
    return values == sorted(values) and len(values) > 1


@pytest.mark.browser
def test_plot_html_renders_offline(liger_history_lake: Path, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    out = tmp_path / "latency.html"
    result = CliRunner().invoke(
        app, ["plot", "latency jsd b200", "--lake", str(liger_history_lake), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    rows = run_query("latency jsd b200", liger_history_lake).rows
    errors: list[str] = []
    requests: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("request", lambda r: requests.append(r.url))
            page.goto(out.as_uri(), wait_until="load", timeout=60_000)
            page.wait_for_selector("#chart svg", timeout=60_000)
            points = page.locator("#chart .mark-symbol.role-mark path").count()
        finally:
            browser.close()
    assert errors == []
    assert {url.split(":", 1)[0] for url in requests} <= {"file", "data", "blob"}, requests[:5]
    assert points == len(rows)  # one point per row, drawn by the inlined Vega in the browser


@pytest.mark.browser
def test_report_fits_1400_px(report: Path) -> None:
    """At 1400 px: no horizontal scroll (heatmap, sections, tables) and no legend cut short."""
    from playwright.sync_api import sync_playwright

    html = report.read_text(encoding="utf-8")
    assert "snapshot" not in html.split("<h2", 1)[0]  # the CLI's words: lake commit
    assert "lake commit" in html
    sections = re.findall(r"<section id='(s\d+)'>", html)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(report.as_uri(), wait_until="load", timeout=120_000)
            page.wait_for_selector("#summary-heatmap[data-rendered='1']", timeout=60_000)
            for target in sections[:: max(len(sections) // 6, 1)]:
                page.click(f"a[href='#{target}']")
                rendered = f"#{target} .chart[data-rendered='1']"
                page.wait_for_selector(rendered, state="attached", timeout=60_000)
            scroll = page.evaluate("document.documentElement.scrollWidth")
            broken = page.evaluate(_BROKEN_CELLS)
            legends = page.eval_on_selector_all(
                ".chart svg .role-legend text", "els => els.map(e => e.textContent)"
            )
        finally:
            browser.close()
    assert scroll <= 1400, scroll
    assert broken == [], broken[:5]
    assert legends and not [t for t in legends if t.endswith("…")], legends


# headers and numbers that take more than one line (the page broke `runs` into `run`/`s` and
# 4362 into 436/2 to squeeze a table)
_BROKEN_CELLS = """[...document.querySelectorAll('th, td.n')].filter(c => {
  const r = document.createRange(); r.selectNodeContents(c);
  const tops = new Set([...r.getClientRects()].map(x => Math.round(x.top)));
  return tops.size > 1;
}).map(c => c.textContent)"""


def test_section_tables_use_the_terminal_tables_words(report: Path) -> None:
    """A section's table reads as `kindex query` prints it: `interval±noise` as one column
    (not speedup_lo and speedup_hi), ratios as `0.39×`, `cand ms`; passes in their order."""
    html = report.read_text(encoding="utf-8")
    start = html.index("<h3>jsd · NVIDIA B200 ")
    table = html[start : html.index("</table>", start)]
    headers = re.findall(r"<th>([^<]*)</th>", table)
    assert {"speedup", "interval±noise", "verdict", "cand ms", "base ms"} <= set(headers)
    assert not {"speedup_lo", "speedup_hi", "candidate_ms"} & set(headers), headers
    rows = re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>", 1)[1])
    cells = [re.findall(r"<td[^>]*>([^<]*)</td>", row) for row in rows]
    speedup, interval = headers.index("speedup"), headers.index("interval±noise")
    assert all(re.fullmatch(r"\d+\.\d\d×", c[speedup]) for c in cells), cells[0]
    assert all(re.fullmatch(r"\[\d+\.\d\d, \d+\.\d\d\]", c[interval]) for c in cells)
    passes = [c[headers.index("pass")] for c in cells]
    order = ["forward", "backward", "full"]
    assert passes == sorted(passes, key=order.index), passes
