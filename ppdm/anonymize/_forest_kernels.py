"""Numba kernel of Forest Framework's re-assignment within intersections (paper 004 §3 step 5)."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def group_orders(groups: np.ndarray, keys: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Two orderings of the positions 0..n−1, both grouped by ``groups`` (labels 0..n_groups−1,
    groups in ascending label order): ``slots`` keeps the positions of a group in ascending
    order, ``values`` orders them by ``keys`` (ties by position).

    The same orderings as NumPy's stable ``argsort(groups)`` and ``lexsort((keys, groups))``.
    ``keys`` must lie in [0, 1) (uniform draws): the second ordering is a bucket sort, each
    group of s positions spread over s buckets by ⌊key·s⌋ and each bucket (one position on
    average) sorted by insertion, so the time is linear in n.
    """
    n = groups.shape[0]
    starts = np.zeros(n_groups + 1, dtype=np.int64)
    for i in range(n):
        starts[groups[i] + 1] += 1
    for g in range(n_groups):
        starts[g + 1] += starts[g]
    fill = starts[:-1].copy()
    slots = np.empty(n, dtype=np.int64)
    for i in range(n):
        g = groups[i]
        slots[fill[g]] = i
        fill[g] += 1
    # each group's keys, gathered in its positions' order, are bucket-sorted locally
    big = 0
    for g in range(n_groups):
        big = max(big, starts[g + 1] - starts[g])
    local = np.empty(big, dtype=np.float64)
    bucket = np.empty(big, dtype=np.int64)
    count = np.empty(big + 1, dtype=np.int64)
    order = np.empty(big, dtype=np.int64)
    values = slots.copy()
    for g in range(n_groups):
        lo = starts[g]
        size = starts[g + 1] - lo
        if size < 2:
            continue
        count[: size + 1] = 0
        for t in range(size):
            k = keys[slots[lo + t]]
            local[t] = k
            b = min(np.int64(k * size), size - 1)
            bucket[t] = b
            count[b + 1] += 1
        for b in range(size):
            count[b + 1] += count[b]
        for t in range(size):  # in position order: a bucket keeps its positions ascending
            b = bucket[t]
            order[count[b]] = t
            count[b] += 1
        # count[b] is now the end of bucket b: sort each bucket by key, ties keeping their order
        first = 0
        for b in range(size):
            end = count[b]
            for j in range(first + 1, end):
                t = order[j]
                k = local[t]
                q = j - 1
                while q >= first and local[order[q]] > k:
                    order[q + 1] = order[q]
                    q -= 1
                order[q + 1] = t
            first = end
        for j in range(size):
            values[lo + j] = slots[lo + order[j]]
    return slots, values
