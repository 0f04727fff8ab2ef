"""Convert Liger-Kernel's benchmark CSV into KernelIndex bundles.

Each CSV row becomes one run bundle (`{run, protocol, environment}`) in the seed text format,
plus the WorkloadCase / ImplementationRevision / OperationSpec documents it points at
(written to `_dimensions.jsonl`).  Rows KernelIndex's public importer curates get exactly
the documents and digests KernelIndex builds; everything else Liger measured gets kindex's
generic binding, its own labels, and (for memory rows) a peak-memory protocol.

The parts: `read` (sources and rows), `runs` (rows -> bundles, through `documents` for
curated rows and `generic` for the rest; `js` and `jsontext` hold KernelIndex's JavaScript
semantics), `write` (the raw folder) and `report`. The conversion is pure; `import_liger` adds
the file I/O and the source resolution.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from kindex_olap.importers.liger.checked import OutputCheck
from kindex_olap.importers.liger.provenance import provenance
from kindex_olap.importers.liger.read import read_rows, resolve_sources
from kindex_olap.importers.liger.report import LigerImportReport, report_from, write_skip_report
from kindex_olap.importers.liger.runs import Conversion, Converter, Skip
from kindex_olap.importers.liger.write import write_conversion
from kindex_olap.model.canonical import MAX_SAFE_INTEGER, CanonicalizationError


def convert_csvs(paths: Iterable[Path], converter: Converter | None = None) -> Conversion:
    """Convert every row of the given CSVs; the first row of an externalId wins."""
    conv = converter or Converter()
    out = Conversion()
    checked = OutputCheck(conv.dimensions)
    for path in paths:
        for line, row, problem in read_rows(path):
            out.rows_read += 1
            if problem:
                out.skips.append(Skip(str(path), line, "ragged_row", problem, row))
                continue
            try:
                result = conv.convert(row)
            except CanonicalizationError:  # a config number past JSON's safe integers
                result = (
                    "bad_number",
                    f"a number beyond +-{MAX_SAFE_INTEGER} (JSON's exact integers)",
                )
            if not isinstance(result, tuple) and (why := checked.problem(result)) is not None:
                result = ("invalid_bundle", why)
            if isinstance(result, tuple):
                out.skips.append(Skip(str(path), line, result[0], result[1], row))
            elif result.external_id in out.runs:
                out.duplicates += 1
            else:
                result.provenance = provenance(result.bundle["run"], row)
                out.runs[result.external_id] = result
    invalid = checked.invalid()
    out.dimensions = {d: doc for d, doc in conv.dimensions.items() if d not in invalid}
    return out


def import_liger(
    source: str | None = None,
    *,
    release: str | None = None,
    all_releases: bool = False,
    raw_dir: Path = Path("data/raw/liger"),
    report_path: Path | None = None,
    on_phase: Callable[[str], None] | None = None,
) -> LigerImportReport:
    """Convert Liger's benchmark CSV(s) into bundles under raw_dir; does not ingest.

    source is a CSV path, a folder of CSVs, or an http(s) URL; None takes the CSVs shipped in
    the liger-kernel source distribution (`release`, every release, or the newest).
    `on_phase` hears each step begin (finding and downloading the CSVs, converting).
    """
    phase = on_phase or (lambda _: None)
    remote = source is None or source.startswith(("http://", "https://"))
    phase("downloading the CSVs" if remote else "reading the CSVs")
    paths = resolve_sources(source, release=release, all_releases=all_releases)
    phase("converting")
    conversion = convert_csvs(paths)
    rep = report_from(conversion, [str(p) for p in paths])
    rep.raw_dir = str(raw_dir)
    write_conversion(conversion, raw_dir, rep)
    if report_path is not None:
        write_skip_report(report_path, conversion.skips)
    return rep
