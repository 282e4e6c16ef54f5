"""The risk–utility front: the releases no other release beats on both axes.

One implementation behind :func:`ppdm.experiments.recommend.pareto_front` (the trials of a
search) and :func:`ppdm.report.summary.pareto_front` (the techniques of a comparison).
Lower is better on both axes: risk, and utility loss.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Literal, TypeVar

T = TypeVar("T")


def pareto_front(items: Sequence[T], risk: Callable[[T], float | None], loss: Callable[[T], float | None], *,
                 ties: Literal["all", "first"] = "all") -> list[T]:
    """The items no other item beats on both ``risk`` and ``loss`` (lower is better on both,
    at least one strictly), ordered by increasing risk, then loss, then position in ``items``.

    Items whose risk or loss is ``None`` or NaN are left out. Items at exactly the same point
    are all on the front with ``ties="all"`` (none beats the other); with ``ties="first"`` only
    the first of them is (a repeat adds no choice). One sorted sweep: O(n log n).
    """
    if ties not in ("all", "first"):
        raise ValueError(f"ties must be 'all' or 'first', got {ties!r}")
    pts: list[tuple[float, float, int]] = []
    for i, item in enumerate(items):
        r, u = risk(item), loss(item)
        if r is None or u is None or math.isnan(float(r)) or math.isnan(float(u)):
            continue
        pts.append((float(r), float(u), i))
    pts.sort()
    front: list[int] = []
    best = math.inf
    last: tuple[float, float] | None = None
    for r, u, i in pts:
        # everything before has risk ≤ r: the item is beaten unless its loss is below all of theirs,
        # or it sits exactly on the last point kept
        if u < best or (ties == "all" and last == (r, u)):
            front.append(i)
            best, last = u, (r, u)
    return [items[i] for i in front]
