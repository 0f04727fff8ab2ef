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

from kindex_olap.doors.records import axis_value
from kindex_olap.query.verbs import VerbColumns

SIDES = (
    ("candidate", "candidate_name"),
    ("baseline", "baseline_name"),
    ("provider", "implementation"),  # `latency`, `runs`: a run's own
    ("implementation", "implementation_name"),  # the history verbs': a series' provider
)
SIDE_NAMES = tuple(side for side, _ in SIDES)
NOT_CELL = ("observed_at",)  # a row key of `runs` that tells runs apart, not cells
# read here to tell a shape's workloads apart, and not a column of a verb's terminal table: a
# map of every axis, which the shape label says (CSV, JSON and Markdown carry it)
AXES = "axes"
_WORDS = re.compile(r"([_\-/ ]+)")  # an implementation name's words, separators kept
PART = " · "  # an implementation's display name joins its parts so: "causal_conv1d · submission 553187"


def told_apart(
    columns: Sequence[str], rows: Sequence[Sequence[Any]], spec: VerbColumns | None
) -> Sequence[Sequence[Any]]:
    """`rows`, where a provider stands for two implementations of one cell, with its name on
    each side that is one of them followed by what sets that implementation's name apart; and
    where a kernel's shape label stands for two workloads, with the axes that set each apart."""
    return _sides_apart(columns, _shapes_apart(columns, rows), spec)


def for_reading(
    columns: Sequence[str], rows: Sequence[Sequence[Any]], spec: VerbColumns | None
) -> tuple[list[str], Sequence[Sequence[Any]]]:
    """A verb's columns and rows as a terminal table reads them: told apart, the axes read."""
    rows = told_apart(columns, rows, spec)
    if spec is None or AXES not in columns:
        return list(columns), rows
    at = list(columns).index(AXES)
    return [c for c in columns if c != AXES], [[*r[:at], *r[at + 1 :]] for r in rows]


def _shapes_apart(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> Sequence[Sequence[Any]]:
    """A shape label is the export's (KernelIndex: the first tensor's shape), and one kernel
    can hold two workloads under it (`amd-fp8-mm`: four workloads of "[1024, 7168]", n and
    seed apart): their rows read as one case measured twice. Each such shape is followed by
    the axes whose values differ among its workloads: "[1024, 7168] (n=4608 seed=7531)"."""
    index = {name: i for i, name in enumerate(columns)}
    if "shape" not in index or AXES not in index:
        return rows
    at, axes_at = index["shape"], index[AXES]
    scope = [index[k] for k in ("kernel", "pass") if k in index]
    found: dict[tuple[Any, ...], dict[tuple[Any, ...], dict[str, Any]]] = {}
    for row in rows:
        axes = row[axes_at]
        if row[at] is not None and isinstance(axes, dict) and axes:
            label = (*(row[i] for i in scope), row[at])
            found.setdefault(label, {})[tuple(sorted(axes.items()))] = axes
    tags: dict[tuple[Any, ...], dict[tuple[Any, ...], str]] = {}
    for label, workloads in found.items():
        if len(workloads) > 1:
            tags[label] = _axes_tags(workloads)
    if not tags:
        return rows
    out = []
    for row in rows:
        axes = row[axes_at]
        label = (*(row[i] for i in scope), row[at])
        tag = None
        if label in tags and isinstance(axes, dict):
            tag = tags[label].get(tuple(sorted(axes.items())))
        out.append(row if not tag else [*row[:at], f"{row[at]} ({tag})", *row[at + 1 :]])
    return out


def _axes_tags(workloads: dict[tuple[Any, ...], dict[str, Any]]) -> dict[tuple[Any, ...], str]:
    """Each of `workloads` by the fewest axes that tell them all apart, the axis with the most
    values first (n, where n and a seed both differ: "n=4608", not "n=4608 seed=7531")."""
    every = list(workloads.values())
    names = {name for axes in every for name in axes}
    values = {n: len({repr(axes.get(n)) for axes in every}) for n in names}
    chosen: list[str] = []
    for name in sorted((n for n in names if values[n] > 1), key=lambda n: (-values[n], n)):
        chosen.append(name)
        if len({tuple(repr(axes.get(n)) for n in chosen) for axes in every}) == len(every):
            break
    return {
        key: " ".join(f"{n}={axis_value(axes[n])}" for n in chosen if n in axes)
        for key, axes in workloads.items()
    }


def _sides_apart(
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
