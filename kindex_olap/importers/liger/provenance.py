"""Where each Liger row came from: RunProvenance documents beside the run bundles.

The history CSV (a union of every version of Liger's benchmark file) says which git commit first
held each row (`first_seen_commit`, `first_seen_date`) and whether that commit is on the main
branch (`on_main_history`: 5,086 of its 8,026 rows were measured on pull-request branches under
the last release's label). The run bundles stay exactly what KernelIndex builds (their identity
and digests do not change); each run's provenance is a RunProvenance document (kindex's own
kind) naming the run by its identity, written to `_provenance.jsonl`, and ingest keeps it in the
lake's run_provenance table. CSVs without these columns (the release files) give none.
"""

from __future__ import annotations

import json
from typing import Any

from kindex_olap.model.facts import run_identity
from kindex_olap.model.validate import PROVENANCE_API_VERSION, PROVENANCE_KIND

# optional columns of the history CSV, read when the header has them
COLUMNS = ("first_seen_commit", "first_seen_date", "on_main_history")
PROVENANCE_FILE = "_provenance.jsonl"
SOURCE = "Liger-Kernel benchmark CSV history (first_seen_commit, on_main_history)"


def provenance(run: dict[str, Any], row: dict[str, str]) -> dict[str, Any] | None:
    """The RunProvenance document of `run` from its CSV row; None when the row says nothing."""
    commit = row.get("first_seen_commit", "").strip().lower()
    on_main = row.get("on_main_history", "").strip()
    if not commit and not on_main:
        return None
    run_id = run_identity(run)
    spec: dict[str, Any] = {"runId": run_id, "source": SOURCE}
    if commit:
        spec["commit"] = commit
    if on_main in ("0", "1"):
        spec["onMainHistory"] = on_main == "1"
    seen = row.get("first_seen_date", "").strip()
    if seen:
        spec["firstSeenAt"] = seen
    return {
        "apiVersion": PROVENANCE_API_VERSION,
        "kind": PROVENANCE_KIND,
        "metadata": {"name": f"liger-provenance-{run_id.removeprefix('sha256:')[:24]}"},
        "spec": spec,
    }


def provenance_text(documents: list[dict[str, Any]]) -> str:
    """`_provenance.jsonl`: one document a line, in run order (stable across imports)."""
    ordered = sorted(documents, key=lambda d: str(d["spec"]["runId"]))
    return "".join(json.dumps(d, sort_keys=True, ensure_ascii=False) + "\n" for d in ordered)
