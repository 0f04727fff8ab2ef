"""Hostile input (issue 26): each probe an attacker or a careless user made, as a test.

Memory and time attacks run in a subprocess under RLIMIT_AS and a timeout, so a regression
fails the test instead of the machine.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import zstandard
from conftest import CHROMIUM, JSD_SEED
from typer.testing import CliRunner

from kindex_olap.cli.app import app
from kindex_olap.cli.output import Format, printable, write
from kindex_olap.doors.render import html_page, inline_json
from kindex_olap.importers import download
from kindex_olap.ingestion.pipeline import ingest
from kindex_olap.ingestion.rejects import iter_rejects
from kindex_olap.ingestion.sources import Document
from kindex_olap.ingestion.stage import stage_chunk

KINDEX = [sys.executable, "-m", "kindex_olap"]
ADDRESS_SPACE = 6 * 1024**3  # far above a sound ingest, far below 4M rejects kept as objects


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


# A launcher between the test and kindex: RUSAGE_CHILDREN of the test's own process is the
# largest of every child it ever reaped (other tests' ingests included under xdist), so the
# launcher reports the peak of this run's process tree alone.
_LAUNCHER = (
    "import resource, subprocess, sys; done = subprocess.run(sys.argv[2:]); "
    "open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)); "
    "sys.exit(done.returncode)"
)


def _run_limited(
    args: list[str], timeout: float, **env: str
) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run kindex under RLIMIT_AS and a timeout; (result, peak RSS of its process tree in MiB:
    the largest of kindex and its staging workers)."""
    with tempfile.TemporaryDirectory() as folder:
        peak_file = Path(folder) / "peak"
        result = subprocess.run(
            [sys.executable, "-c", _LAUNCHER, str(peak_file), *KINDEX, *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            preexec_fn=_limited,
            env={**os.environ, **env},
        )
        peak = int(peak_file.read_text()) if peak_file.exists() else 0
    return result, peak / 1024


def _zst(path: Path, piece: bytes, times: int) -> Path:
    with open(path, "wb") as out, zstandard.ZstdCompressor(level=19).stream_writer(out) as w:
        for _ in range(times):
            w.write(piece)
    return path


# -- 1. symlinks ------------------------------------------------------------------------------


def test_symlinks_out_of_the_input_folder_are_not_read(seed_inbox: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.json"
    secret.write_text('{"password": "hunter2"}\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "more.json").write_text('{"password": "hunter3"}\n')
    (seed_inbox / "x.json").symlink_to(secret)
    (seed_inbox / "folder").symlink_to(elsewhere)
    lake = tmp_path / "lake"
    report = ingest([seed_inbox], lake)
    assert report.rejected == 0 and report.runs_added == 3
    assert len(report.warnings) == 2
    assert all("symbolic link out of the input folder" in w for w in report.warnings)
    assert list(iter_rejects(lake)) == []
    followed = ingest([seed_inbox], tmp_path / "lake2", follow_symlinks=True)
    texts = [r["text"] for r in iter_rejects(tmp_path / "lake2")]
    assert followed.rejected == 2 and any("hunter2" in t for t in texts)


def test_links_to_nothing_and_unlistable_folders_skip_themselves_only(
    seed_inbox: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A link that loops (`loop -> loop`: asking whether it is a folder raises ELOOP, which
    stopped the whole ingest; not a bundle's name: passed over as any other such file), one to
    itself with a bundle's name, a dangling one, and a folder inside that cannot be listed: each
    is skipped, the last three with a warning naming it and why, and the seeds land; with
    --follow-symlinks too (the links are then tried as files)."""
    (seed_inbox / "loop").symlink_to("loop")
    (seed_inbox / "self.json").symlink_to("self.json")
    (seed_inbox / "gone.json").symlink_to(tmp_path / "missing.json")
    (seed_inbox / "closed").mkdir()
    (seed_inbox / "closed" / "more.json").write_text("{}")
    listing = os.scandir

    def scandir(path: str) -> Any:
        if str(path).endswith("closed"):
            raise PermissionError(13, "Permission denied", path)
        return listing(path)

    monkeypatch.setattr(os, "scandir", scandir)  # root lists any folder: refuse one here
    report = ingest([seed_inbox], tmp_path / "lake")
    assert report.runs_added == 3 and report.rejected == 0
    assert sorted(report.warnings) == [
        f"skipped {seed_inbox / 'closed'}: a folder that cannot be listed (Permission denied)",
        f"skipped {seed_inbox / 'gone.json'}: a symbolic link to nothing (dangling, or a loop)",
        f"skipped {seed_inbox / 'self.json'}: a symbolic link to nothing (dangling, or a loop)",
    ]
    followed = ingest([seed_inbox], tmp_path / "lake2", follow_symlinks=True)
    assert followed.runs_added == 3 and followed.rejected == 0
    assert sorted(followed.warnings) == [
        f"skipped {seed_inbox / 'closed'}: a folder that cannot be listed (Permission denied)",
        f"skipped {seed_inbox / 'gone.json'}: cannot be read (No such file or directory)",
        f"skipped {seed_inbox / 'self.json'}: cannot be read (Too many levels of symbolic links)",
    ]


def test_a_symlink_inside_the_input_folder_is_read(seed_inbox: Path, tmp_path: Path) -> None:
    inner = seed_inbox / "inner"
    inner.mkdir()
    seed = sorted(seed_inbox.glob("*.txt"))[0]
    seed.rename(inner / seed.name)
    (seed_inbox / "link.txt").symlink_to(inner / seed.name)
    report = ingest([seed_inbox], tmp_path / "lake")
    assert report.warnings == [] and report.runs_added == 3 and report.duplicates == 0


def test_a_fifo_in_the_input_folder_is_skipped_not_waited_on(
    seed_inbox: Path, tmp_path: Path
) -> None:
    """A FIFO named like a bundle (x.json) held the whole ingest: reading one waits for a
    writer, forever. Found in a folder it is skipped with a warning naming what it is, and the
    seeds land; a link to a folder inside the input folder says it is read where it is (it was
    called a link "out of the input folder")."""
    os.mkfifo(seed_inbox / "x.json")
    (seed_inbox / "here").symlink_to(seed_inbox)
    report = ingest([seed_inbox], tmp_path / "lake")
    assert report.runs_added == 3 and report.rejected == 0
    assert report.warnings == [
        f"skipped {seed_inbox / 'here'}: a symbolic link to a folder inside the input folder "
        "(read where it is)",
        f"skipped {seed_inbox / 'x.json'}: a FIFO, not a regular file",
    ]


def test_a_document_that_is_not_utf8_is_named_where_it_stops_being_so(
    tmp_path: Path, make_bundle: Any
) -> None:
    """orjson says "str is not valid UTF-8: surrogates not allowed: line 1 column 1 (char 0)"
    of a Latin-1 byte anywhere in a document; the reject names the byte and where it is."""
    inbox = tmp_path / "in"
    inbox.mkdir()
    text = json.dumps(make_bundle(JSD_SEED), indent=1).encode()
    at = text.index(b"Jensen")
    (inbox / "latin1.json").write_bytes(text[:at] + b"J\xe9nsen" + text[at + 6 :])
    report = ingest([inbox], tmp_path / "lake")
    line = text.count(b"\n", 0, at) + 1
    column = at - text.rfind(b"\n", 0, at) + 1
    assert [r.reason for r in report.rejects] == [
        f"not UTF-8: byte 0xe9 at line {line} column {column} (byte {at + 1}; a bundle is "
        "UTF-8 JSON)"
    ]


# -- 2. memory and time -----------------------------------------------------------------------


@pytest.mark.slow
def test_four_million_invalid_lines_stream_with_bounded_memory(tmp_path: Path) -> None:
    inbox = tmp_path / "in"
    inbox.mkdir()
    _zst(inbox / "b.jsonl.zst", b"{}\n" * 1_000_000, 4)
    lake = tmp_path / "lake"
    result, peak_mib = _run_limited(["ingest", str(inbox), "--lake", str(lake)], timeout=400)
    assert result.returncode == 1, result.stderr
    assert "4000000 rejected" in result.stderr
    assert peak_mib < 500, peak_mib
    count = CliRunner().invoke(
        app,
        [
            "sql",
            "SELECT count(*), count(DISTINCT line) FROM rejects",
            "--lake",
            str(lake),
            "--format",
            "csv",
        ],
    )
    assert count.stdout.splitlines()[1] == "4000000,4000000"


def test_a_small_file_of_newlines_is_set_aside_at_the_blank_line_budget(tmp_path: Path) -> None:
    inbox = tmp_path / "in"
    inbox.mkdir()
    _zst(inbox / "n.jsonl.zst", b"\n" * (1 << 24), 160)  # 82 KB: 2.5 GiB of newlines
    lake = tmp_path / "lake"
    started = time.monotonic()
    result, _ = _run_limited(["ingest", str(inbox), "--lake", str(lake)], timeout=60)
    assert time.monotonic() - started < 60
    assert result.returncode == 1
    assert "n.jsonl.zst:1000001: file set aside at this line: more than 1000000 blank lines" in (
        result.stderr
    )


@pytest.mark.parametrize(
    ("env", "reason"),
    [
        ({"KINDEX_MAX_FILE_BYTES": "3000"}, "more than 3000 bytes after decompression"),
        ({"KINDEX_MAX_SECONDS_WITHOUT_DOCUMENT": "0"}, "0 s of reading without a document"),
    ],
)
def test_the_per_file_budgets_set_a_file_aside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str], reason: str
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    inbox = tmp_path / "in"
    inbox.mkdir()
    _zst(inbox / "b.jsonl.zst", b"\n" * 10 + b"{}\n" * 2000, 1)
    ingest([inbox], tmp_path / "lake")
    reasons = [r["reason"] for r in iter_rejects(tmp_path / "lake")]
    assert sum(reason in r for r in reasons) == 1, reasons[-3:]
    assert len(reasons) < 2000  # the rest of the file was not read


def test_a_file_with_no_document_is_a_warning(tmp_path: Path) -> None:
    inbox = tmp_path / "in"
    inbox.mkdir()
    (inbox / "empty.jsonl").write_bytes(b"\n\n\n")
    result = CliRunner().invoke(app, ["ingest", str(inbox), "--lake", str(tmp_path / "lake")])
    assert result.exit_code == 0
    assert f"warning: {inbox / 'empty.jsonl'}: no document in this file" in result.stderr


# -- 3. HTML pages ----------------------------------------------------------------------------

PAYLOADS = [
    "<!--<script>",
    "<!--",
    "-->",
    "<script>",
    "</script>",
    "</script><script>alert(1)</script>",
    "<script>alert(1)//",
    '"onmouseover="alert(1)',
    "'onmouseover='alert(1)",
    "javascript:alert(1)",
    "<img src=x onerror=alert(1)>",
    "<svg onload=alert(1)>",
    "<iframe src=javascript:alert(1)>",
    "]]>",
    "<![CDATA[",
    "\u2028\u2029",
    "&lt;script&gt;",
    "&#60;script&#62;",
    "${alert(1)}",
    "`;alert(1);//",
    "\\u003cscript\\u003e",
    "</style><script>alert(1)</script>",
    "<textarea>",
    "</title><script>alert(1)</script>",
]


def test_inline_json_holds_no_character_that_html_reads() -> None:
    text = inline_json({"names": PAYLOADS})
    assert not set("<>&\u2028\u2029") & set(text)
    assert json.loads(text) == {"names": PAYLOADS}


@pytest.mark.browser
def test_payloads_cannot_break_a_chart_page(tmp_path: Path) -> None:
    """One page per payload (on one page, a later `-->` would end the script-data escape that
    `<!--<script>` opens, and hide it), its chart titled and drawn with it."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    errors: list[str] = []
    dialogs: list[str] = []
    drawn = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=["--no-sandbox", "--headless", "--disable-gpu"]
        )
        try:
            page = browser.new_page()
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            for number, payload in enumerate(PAYLOADS):
                out = tmp_path / f"page{number}.html"
                out.write_text(html_page(payload, [("chart", _bars(payload))]), encoding="utf-8")
                page.goto(out.as_uri(), wait_until="load", timeout=60_000)
                bars = "#chart .mark-rect.role-mark path"
                with contextlib.suppress(PlaywrightTimeout):  # the chart script never ran
                    page.wait_for_selector(bars, state="attached", timeout=10_000)
                injected = page.locator("body img, body iframe, body textarea, body > svg")
                scripts = page.locator("script").count()
                drawn.append(
                    (payload, page.locator(bars).count(), scripts, injected.count(), page.title())
                )
        finally:
            browser.close()
    assert errors == [] and dialogs == []
    assert drawn == [(payload, 3, 2, 0, payload) for payload in PAYLOADS]


def _bars(payload: str) -> dict[str, Any]:
    return {
        "title": payload,
        "data": {"values": [{"kernel": f"{payload}{i}", "speedup": i + 1} for i in range(3)]},
        "mark": "bar",
        "encoding": {
            "x": {"field": "kernel", "type": "nominal"},
            "y": {"field": "speedup", "type": "quantitative"},
        },
    }


# -- 4. terminal escapes ----------------------------------------------------------------------


def test_control_characters_in_names_are_rejected_at_ingest(
    tmp_path: Path, make_bundle: Any
) -> None:
    bundle = make_bundle()
    bundle["run"]["spec"]["sourceNative"]["benchmark"] = "jsd\x1b]0;pwned\x07/forward"
    inbox = tmp_path / "in"
    inbox.mkdir()
    (inbox / "b.json").write_text(json.dumps(bundle))
    report = ingest([inbox], tmp_path / "lake")
    assert report.rejected == 1 and report.runs_added == 0
    assert "sourceNative.benchmark" in report.rejects[0].reason


@pytest.mark.parametrize("fmt", [Format.table, Format.csv, Format.markdown])
def test_escapes_never_reach_the_terminal(fmt: Format) -> None:
    import io

    out = io.StringIO()
    write(["kernel"], [["jsd\x1b]0;pwned\x07\x9b2J"]], fmt, out)
    assert "\x1b" not in out.getvalue() and "\x07" not in out.getvalue()
    assert "jsd\\x1b]0;pwned\\x07\\x9b2J" in out.getvalue()
    assert printable("a\nb") == "a\\nb"


def test_rejects_print_a_file_name_with_a_newline_on_one_line(tmp_path: Path) -> None:
    inbox = tmp_path / "in"
    inbox.mkdir()
    (inbox / "a\nb.json").write_text("{}")
    lake = tmp_path / "lake"
    ingest([inbox], lake)
    result = CliRunner().invoke(app, ["rejects", "--lake", str(lake)])
    assert len(result.stdout.splitlines()) == 1
    assert "a\\nb.json" in result.stdout


# -- 5. and 6. imports ------------------------------------------------------------------------


def test_a_non_utf8_csv_is_one_line_and_exit_6(tmp_path: Path) -> None:
    csv_path = tmp_path / "all_benchmark_data.csv"
    csv_path.write_bytes(b"kernel_name,kernel_provider\n\xff\xfe,x\n")
    result = CliRunner().invoke(
        app, ["import", "liger", str(csv_path), "--no-ingest", "--raw", str(tmp_path / "raw")]
    )
    assert result.exit_code == 6
    assert result.stderr.startswith(f"error: {csv_path}: not UTF-8 text")
    assert "Traceback" not in result.output


class _Hostile(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        if self.path == "/short":
            self.send_header("Content-Length", "1000")
            self.end_headers()
            self.wfile.write(b"kernel_name\n")
            return
        self.send_header("Content-Length", "100")
        self.end_headers()
        for _ in range(100):  # one byte every 0.3 s: never a stall, never done in time
            self.wfile.write(b"x")
            self.wfile.flush()
            time.sleep(0.3)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def hostile_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hostile)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.mark.parametrize("importer", ["liger", "kernelindex"])
def test_a_short_body_is_a_source_error(hostile_server: str, tmp_path: Path, importer: str) -> None:
    """A body that ends before its Content-Length is a download error (exit 6, one line), never
    a traceback, nor a truncated file imported as if it were whole."""
    url = f"{hostile_server}/short"
    raw = tmp_path / "raw"
    result = CliRunner().invoke(app, ["import", importer, url, "--no-ingest", "--raw", str(raw)])
    assert result.exit_code == 6, result.output
    assert result.stderr.startswith(
        f"error: cannot download {url} (the answer broke off: 988 bytes short of its length)\n"
    ), result.stderr
    assert "Traceback" not in result.output and not list(raw.glob("*"))


def test_a_trickling_server_meets_the_deadline(hostile_server: str) -> None:
    started = time.monotonic()
    with download.deadline(2), pytest.raises(OSError, match="deadline"):
        download.fetch(f"{hostile_server}/trickle", pause_s=0.1)
    assert time.monotonic() - started < 5


# -- 7. export --------------------------------------------------------------------------------


def test_export_refuses_a_folder_with_files(
    seed_inbox: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lake = tmp_path / "lake"
    ingest([seed_inbox], lake)
    out = tmp_path / "out"
    out.mkdir()
    (out / "README.md").write_text("mine")
    runner = CliRunner()
    refused = runner.invoke(app, ["export", "--out", str(out), "--lake", str(lake)])
    assert refused.exit_code == 2 and "is not empty" in refused.stderr
    assert (out / "README.md").read_text() == "mine"
    # a device where the folder would be (it was "File exists", exit 3: a lake error)
    device = runner.invoke(app, ["export", "--out", "/dev/null", "--lake", str(lake)])
    assert device.exit_code == 2 and "/dev/null exists and is not a folder" in device.stderr
    monkeypatch.chdir(out)
    for target in ["", ".", "/"]:
        result = runner.invoke(app, ["export", "--out", target, "--lake", str(lake)])
        assert result.exit_code == 2 and "refusing to export into" in result.stderr, target
    monkeypatch.chdir(tmp_path)
    forced = runner.invoke(app, ["export", "--out", str(out), "--lake", str(lake), "--overwrite"])
    assert forced.exit_code == 0 and (out / "README.md").read_text() != "mine"


# -- 8. kindex sql ----------------------------------------------------------------------------


def test_sql_cannot_read_the_temp_directory(
    seed_inbox: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lake = tmp_path / "lake"
    ingest([seed_inbox], lake)
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".tmp").mkdir()
    (tmp_path / ".tmp" / "x.txt").write_text("secret")
    runner = CliRunner()
    read = runner.invoke(
        app, ["sql", "SELECT content FROM read_text('.tmp/x.txt')", "--lake", str(lake)]
    )
    assert read.exit_code == 5 and "secret" not in read.output
    install = runner.invoke(app, ["sql", "INSTALL httpfs", "--lake", str(lake)])
    assert "INSTALL statements are refused" in install.stderr
    many = runner.invoke(app, ["sql", "SELECT 1; SELECT 2", "--lake", str(lake)])
    assert many.exit_code == 5 and "runs one statement; 2 were given" in many.stderr


def test_liger_names_that_cannot_name_a_run_are_skipped(tmp_path: Path) -> None:
    """On rows of the real CSV: a kernel name with '/' is not split into kernel and pass, and a
    name over its limit is a skip the summary counts (before: bundles that ingest rejected while
    the importer said "skipped: none"); names at the limits, on the row with the longest
    workload, make bundles that ingest takes whole."""
    import csv
    import io

    from realdata import liger_csv

    text = liger_csv("all_benchmark_data.csv").read_text(encoding="utf-8")
    rows = list(csv.DictReader(io.StringIO(text)))
    longest = max(rows, key=lambda r: len(r["extra_benchmark_config_str"] + r["gpu_name"]))
    at_limits = [
        {**longest, "kernel_name": "k" * 80},
        {**longest, "kernel_name": "k" * 80, "kernel_provider": "p" * 60},
    ]
    bad = [
        {**longest, "kernel_name": "jsd/evil"},
        {**longest, "kernel_provider": "liger/evil"},
        {**longest, "kernel_name": "k" * 81},
        {**longest, "kernel_name": "k" * 300},
        {**longest, "kernel_provider": "p" * 61},
        {**longest, "kernel_provider": "liger\x1b[2J"},
    ]
    path = tmp_path / "all_benchmark_data.csv"
    with path.open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=list(longest))
        writer.writeheader()
        writer.writerows([longest, *at_limits, *bad])
    lake = tmp_path / "lake"
    result = CliRunner().invoke(
        app, ["import", "liger", str(path), "--raw", str(tmp_path / "raw"), "--lake", str(lake)]
    )
    assert result.exit_code == 0, result.output
    assert "skipped: bad_name 6" in result.stderr and "skipped: none" not in result.stderr
    assert "0 rejected" in result.stderr, result.stderr
    names = CliRunner().invoke(
        app, ["sql", "SELECT DISTINCT kernel, pass, provider FROM runs", "--lake", str(lake),
              "--format", "csv"],
    )  # fmt: skip
    kernels = {tuple(line.split(",")) for line in names.stdout.splitlines()[1:]}
    assert {k for k, _, _ in kernels} == {longest["kernel_name"], "k" * 80}
    assert {p for _, _, p in kernels} == {longest["kernel_provider"], "p" * 60}
    assert {p for _, p, _ in kernels} == {longest["kernel_operation_mode"]}


def test_kernelindex_rows_of_unexpected_types_are_findings(tmp_path: Path) -> None:
    """A catalog export whose rows hold fields of types its schema does not give them (a run's
    implementationId an object, a used workload's dtypes a number, a workload whose id is an
    object) imports the rest: each such row is a `malformed_row` finding, its run a
    `missing_implementation`, never a traceback (the first stopped the import with one)."""
    from realdata import KERNELINDEX_SLICES

    from kindex_olap.importers.kernelindex.convert import import_kernelindex

    with KERNELINDEX_SLICES[1].open("rb") as handle:
        text = zstandard.ZstdDecompressor().stream_reader(handle).read()
    items = [json.loads(line) for line in text.splitlines()]
    runs = [i["row"] for i in items if i["table"] == "benchmark_runs"]
    runs[0]["implementationId"] = {"id": runs[0]["implementationId"]}
    workloads = {i["row"]["id"]: i["row"] for i in items if i["table"] == "workloads"}
    workloads[runs[1]["workloadId"]]["dtypes"] = 5
    idless = next(w for w in workloads.values() if w["id"] != runs[1]["workloadId"])
    idless["id"] = {"not": "text"}
    export = tmp_path / "hostile.jsonl"
    export.write_text("".join(json.dumps(i) + "\n" for i in items))
    report = import_kernelindex(str(export), raw_dir=tmp_path / "raw", ingest=False)
    assert report.findings["malformed_row"] == 2
    assert report.findings["missing_implementation"] >= 1
    assert report.runs == len(runs) - report.findings["run_without_bundle"]
    kinds = {(e.kind, e.table) for e in report.examples}
    assert {("malformed_row", "workloads")} <= kinds


# -- negative durations -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("unit", "metric", "value", "rejected"),
    [
        ("ns", "latency", -5, True),
        ("ms", "score", -0.5, True),
        ("bytes", "memory", -1, True),
        ("ns", "latency", 0, False),
        ("tokens_per_s", "throughput", -1.5, False),  # not a duration or a size: any sign
    ],
)
def test_a_negative_duration_or_size_is_rejected(
    tmp_path: Path, make_bundle: Any, unit: str, metric: str, value: float, rejected: bool
) -> None:
    """A latency p20 of -5 ns gave `speedup` an interval of [0.45, -222.00] judged "slower" and
    `summary` a bootstrap of [0.45, nan]. A measurement in a unit of time or of bytes is a
    duration or a size, as timing's durations are (the schema admits no negative one there):
    a negative one is set aside with one line naming it, on the fast and the general path, and
    its neighbours land. No real run has one (Liger's CSVs, both KernelIndex exports)."""
    bundle = make_bundle(JSD_SEED)
    bundle["run"]["spec"]["measurements"][0].update(unit=unit, metric=metric, value=value)
    said = (
        f"$.run.spec.measurements[0].value: {value!r} {unit} is negative "
        f"(a measurement in {unit} is a {'size' if unit == 'bytes' else 'duration'}: "
        "expected >= 0)"
    )
    assert _set_aside(tmp_path, bundle, make_bundle()) == ([said] if rejected else [])


def _set_aside(tmp_path: Path, bundle: dict[str, Any], sound: dict[str, Any]) -> list[str]:
    """The reasons `bundle` is set aside for, ingested beside a `sound` one that lands; the
    fast and the general staging path give the same."""
    inbox = tmp_path / "in"
    inbox.mkdir()
    (inbox / "odd.json").write_text(json.dumps(bundle))
    (inbox / "sound.json").write_text(json.dumps(sound))
    report = ingest([inbox], tmp_path / "lake")
    assert report.runs_added == 2 - report.rejected
    reasons = [r.reason for r in report.rejects]
    document = Document(str(inbox / "odd.json"), None, (inbox / "odd.json").read_bytes())
    fast, general = stage_chunk([document], False, 0), stage_chunk([document], False, 0, fast=False)
    assert [r.reason for r in fast.rejects] == [r.reason for r in general.rejects] == reasons
    return reasons


# -- quantiles out of order -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("p20", "p80", "rejected"),
    [
        ((3_716_128, "ns"), (3_713_056, "ns"), True),  # the seed's two quantiles swapped
        ((3.9, "ms"), (3_716_128, "ns"), True),  # 3.9 ms is above 3.72 ms: compared in ns
        ((3.7, "ms"), (3_716_128, "ns"), False),
        ((3_716_128, "ns"), (3_716_128, "ns"), False),  # equal: a sample of one value
    ],
)
def test_a_p20_above_its_p80_is_rejected(
    tmp_path: Path,
    make_bundle: Any,
    p20: tuple[float, str],
    p80: tuple[float, str],
    rejected: bool,
) -> None:
    """Swapped quantiles (p20 1.2 ms, p80 0.8 ms) collapsed the run's spread onto its median
    (the views widen a spread to hold the central value): a run 20 % noisy either way was read
    as a point, its speedup's interval as narrow as the other side's alone. Quantiles of one
    sample are ordered: such a bundle is set aside with one line naming both measurements, on
    the fast and the general path. No real run has one (Liger's CSVs, both KernelIndex
    exports)."""
    bundle = make_bundle(JSD_SEED)
    low, high = bundle["run"]["spec"]["measurements"]
    assert (low["statistic"], high["statistic"]) == ("p20", "p80")
    low.update(value=p20[0], unit=p20[1])
    high.update(value=p80[0], unit=p80[1])
    said = (
        f"$.run.spec.measurements[0].value: the latency p20 {p20[0]!r} {p20[1]} is above its "
        f"p80 {p80[0]!r} {p80[1]} (measurements[1]; quantiles of one sample: expected p20 <= p80)"
    )
    assert _set_aside(tmp_path, bundle, make_bundle()) == ([said] if rejected else [])


# -- one statistic given twice ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (  # a second p20, another value: the views read one of the two, which was arbitrary
            {"metric": "latency", "statistic": "p20", "unit": "ns", "value": 9},
            "$.run.spec.measurements[2].value: a second latency p20, 9 ns, where "
            "measurements[0] gives 3713056 ns (expected one value a metric and statistic)",
        ),
        (  # the same p20 again, in ms: one value
            {"metric": "latency", "statistic": "p20", "unit": "ms", "value": 3.713056},
            None,
        ),
        (  # a latency median against the timing's: the pairing read the timing's, silently
            {"metric": "latency", "statistic": "median", "unit": "ns", "value": 5_000_000},
            "$.run.spec.measurements[2].value: the latency median 5000000 ns differs from the "
            "timing's 3714592 ns ($.run.spec.timing.latencyNs.median; expected one value)",
        ),
        ({"metric": "latency", "statistic": "median", "unit": "ns", "value": 3_714_592}, None),
        (  # another metric's median is its own
            {"metric": "memory", "statistic": "median", "unit": "bytes", "value": 5_000_000},
            None,
        ),
    ],
)
def test_a_statistic_given_twice_with_two_values_is_rejected(
    tmp_path: Path, make_bundle: Any, extra: dict[str, Any], said: str | None
) -> None:
    """A bundle whose measurements give a metric's statistic twice, or a latency statistic
    its timing gives too, with different values, says two things of one run: it is set aside
    naming both, on the fast and the general path. The same value twice (in any unit of time)
    is one value. No real run has either (Liger's CSVs, both KernelIndex exports)."""
    bundle = make_bundle(JSD_SEED)
    bundle["run"]["spec"]["measurements"].append(extra)
    assert _set_aside(tmp_path, bundle, make_bundle()) == ([said] if said else [])


def test_a_timing_given_as_text_is_named_in_ns_where_a_measurement_contradicts_it(
    tmp_path: Path, make_bundle: Any
) -> None:
    """The timing's median written "3.714592 ms" read "the timing's '3.714592 ms' ns"."""
    bundle = make_bundle(JSD_SEED)
    bundle["run"]["spec"]["timing"]["latencyNs"]["median"] = "3.714592 ms"
    bundle["run"]["spec"]["measurements"].append(
        {"metric": "latency", "statistic": "median", "unit": "ns", "value": 5_000_000}
    )
    assert _set_aside(tmp_path, bundle, make_bundle()) == [
        "$.run.spec.measurements[2].value: the latency median 5000000 ns differs from the "
        "timing's 3714592 ns ($.run.spec.timing.latencyNs.median; expected one value)"
    ]
