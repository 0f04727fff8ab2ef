"""Telling apart two implementations that one name stands for, in a terminal table.

A row names its sides by their provider (`candidate`, `baseline`: "liger", "torch"), which is
what a reader compares. A KernelIndex leaderboard has one provider per user and one
implementation per submission, so a cell can hold two rows of one user, or a user against
their own other submission, that print alike ("kernelbot-user-7945279 0.72x", then
"... 0.80x"): 604 such groups in one export's `speedup`. Where a provider stands for two
implementations in one cell, each of its rows names which one, from the implementation's name:
"kernelbot-user-7945279 (submission 553187)". CSV, JSON and Markdown keep both columns as they
are.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from kindex_olap.query.verbs import VerbColumns

SIDES = (
    ("candidate", "candidate_name"),
    ("baseline", "baseline_name"),
    ("provider", "implementation"),  # `latency`, `runs`: a run's own
    ("implementation", "implementation_name"),  # the history verbs': a series' provider
)
SIDE_NAMES = tuple(side for side, _ in SIDES)
NOT_CELL = ("observed_at",)  # a row key of `runs` that tells runs apart, not cells
_WORDS = re.compile(r"([_\-/ ]+)")  # an implementation name's words, separators kept
PART = " · "  # an implementation's display name joins its parts so: "causal_conv1d · submission 553187"


def told_apart(
    columns: Sequence[str], rows: Sequence[Sequence[Any]], spec: VerbColumns | None
) -> Sequence[Sequence[Any]]:
    """`rows`, where a provider stands for two implementations of one cell, with its name on
    each side that is one of them followed by what sets that implementation's name apart."""
    index = {name: i for i, name in enumerate(columns)}
    sides = [(index[a], index[b]) for a, b in SIDES if a in index and b in index]
    if spec is None or not sides:
        return rows
    pairs = {(row[label], row[name]) for row in rows for label, name in sides}
    if len(pairs) == len({label for label, _ in pairs}):  # one implementation a name: as is
        return rows
    cell = [index[k] for k in spec.keys if k in index and k not in (*dict(SIDES), *NOT_CELL)]
    names: dict[tuple[Any, ...], set[str]] = {}
    for row in rows:
        key = tuple(row[i] for i in cell)
        for label, name in sides:
            if row[label] is not None and row[name] is not None:
                names.setdefault((*key, row[label]), set()).add(str(row[name]))
    tags = {where: _tags(found) for where, found in names.items() if len(found) > 1}
    if not tags:
        return rows
    out = []
    for row in rows:
        key = tuple(row[i] for i in cell)
        changed = list(row)
        for label, name in sides:
            tag = tags.get((*key, row[label]), {}).get(str(row[name]))
            if tag is not None:
                changed[label] = f"{row[label]} ({tag})"
        out.append(changed)
    return out


def _tags(names: set[str]) -> dict[str, str]:
    """Each name without the parts every one of `names` shares: the kernel part before ` · `,
    then the words they all end with (`_n2048_k2048` of "mm_fp4_nvfp4_cudnn_n2048_k2048" and
    "cublaslt_nvfp4_scaled_mm_n2048_k2048"; a first word stays: "submission 553187"); the
    whole name where that leaves nothing."""
    split = {name: name.split(PART) for name in names}
    shared = set.intersection(*(set(parts) for parts in split.values()))
    kept = {name: PART.join(p for p in parts if p not in shared) for name, parts in split.items()}
    if not all(kept.values()):
        return {name: name for name in names}
    words = {name: _WORDS.split(tag) for name, tag in kept.items()}  # words and separators
    behind = _shared_run([w[::-1] for w in words.values()])
    out = {name: "".join(w[: len(w) - behind]).rstrip("_-/ ") for name, w in words.items()}
    return out if all(out.values()) else kept


def _shared_run(lists: list[list[str]]) -> int:
    """How many leading items every list shares, short of the shortest list (each keeps a
    word of its own)."""
    n = 0
    while all(len(w) > n + 1 for w in lists) and len({w[n] for w in lists}) == 1:
        n += 1
    return n
