"""The natural order of labels: passes forward, backward, full; names by their text, then by
their numbers as numbers (vocab4096 < vocab131072). The verbs' ORDER BY does the same in SQL
(sql/views/views.sql kindex_pass_order, kindex_shape_order); history's tables and the charts
sort with these."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

PASSES = ("forward", "backward", "full")  # the natural order of passes; others after them
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")


# labels repeat (a kernel, a pass, a GPU on every row): sorting the 333k step rows of a whole-lake
# check at 1M runs called this 2M times, 16 s; remembered, the distinct labels are computed once
@lru_cache(maxsize=1 << 16)
def natural_key(label: str) -> tuple[tuple[Any, ...], ...]:
    """The natural order of a label (a line, a panel, a shape), part by ` · ` part: passes
    forward, backward, full, then the rest; other text with its numbers taken out, then by
    the numbers as numbers (vocab4096 < vocab131072), as the verbs' ORDER BY
    (kindex_pass_order, kindex_shape_order)."""
    key: list[tuple[Any, ...]] = []
    for part in label.split(" · "):
        if part in PASSES:
            key.append((0, PASSES.index(part)))
        else:
            numbers = tuple(float(n) for n in _NUMBER.findall(part))
            key.append((1, _NUMBER.sub("#", part), numbers, part))
    return tuple(key)
