"""The importer's output checked as ingest checks it: a row whose bundle, display line or
dimension document ingest would reject is skipped with its CSV file and line (reason
`invalid_bundle`), instead of written as a bundle that ingest keeps aside, far from the row.

A CSV cell can break the schema where a run's names are made from it: a 600-character
`kernel_operation_mode` makes a run title over 200 characters, a control character in
`liger_version` a label ingest refuses, a long `x_name` a WorkloadCase title over 200.
"""

from __future__ import annotations

from kindex_olap.importers.liger.jsontext import Doc
from kindex_olap.importers.liger.runs import Converted
from kindex_olap.ingestion.sources import has_control
from kindex_olap.model.validate import ValidationError, check_bundle, check_dimension, latency_ns

# The run's fields that name a dimension document (the converter's, by digest).
_DIMENSION_FIELDS = ("workloadDigest", "implementationDigest")


class OutputCheck:
    """Checks converted runs against the dimension documents the converter collects as it
    goes; each document is checked once."""

    def __init__(self, dimensions: dict[str, Doc]) -> None:
        self._dimensions = dimensions  # the converter's own dict, filled as it converts
        self._verdicts: dict[str, str | None] = {}

    def problem(self, run: Converted) -> str | None:
        """Why ingest would reject `run` or a document it names; None when it would not."""
        if has_control(run.display):
            return f"the display name {run.display[:60]!r} holds a control character"
        try:
            latency_ns(check_bundle(run.bundle))
        except ValidationError as e:
            return str(e)
        spec = run.bundle["run"]["spec"]
        for field in _DIMENSION_FIELDS:
            why = self._document(spec.get(field))
            if why is not None:
                return why
        return None

    def invalid(self) -> set[str]:
        """The digests of the dimension documents ingest would reject, those of skipped rows'
        too (a row skipped for another reason still added its documents)."""
        return {digest for digest in self._dimensions if self._document(digest) is not None}

    def _document(self, digest: object) -> str | None:
        if not isinstance(digest, str):
            return None  # the bundle's own check names a missing or malformed digest
        if digest not in self._verdicts:
            self._verdicts[digest] = None  # a document that names itself is not a loop
            doc = self._dimensions.get(digest)
            self._verdicts[digest] = None if doc is None else self._check(doc)
        return self._verdicts[digest]

    def _check(self, doc: Doc) -> str | None:
        try:
            check_dimension(doc)
        except ValidationError as e:
            return f"its {doc.get('kind', 'dimension')} document: {e}"
        spec = doc.get("spec")
        for key, value in spec.items() if isinstance(spec, dict) else ():
            if key.endswith("Digest"):  # an OperationSpec a WorkloadCase names, ...
                why = self._document(value)
                if why is not None:
                    return why
        return None
