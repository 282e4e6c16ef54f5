"""Sorted-order kernels of the univariate microaggregation methods of paper 003 §3.1.

Each works on the values sorted ascending and returns the group number of every sorted
position; :func:`_labels_from_sorted` puts them back in record order. The public functions
(:func:`~ppdm.anonymize.microaggregation.mdav_1d`, ``vmdav_1d``, ``optimal_1d``) check their
input, sort and call these. Split from :mod:`ppdm.anonymize.microaggregation`, which imports
every name here.
"""

from __future__ import annotations

import numpy as np
from numba import njit


def _labels_from_sorted(order: np.ndarray, sorted_labels: np.ndarray) -> np.ndarray:
    labels = np.empty(order.size, dtype=np.int64)
    labels[order] = sorted_labels
    return labels


# ------------------------------------------------------------------ univariate MDAV
@njit(cache=True)
def _mdav_sorted(v: np.ndarray, first_idx: np.ndarray, k: int) -> np.ndarray:
    # v sorted ascending; first_idx[i] = original index of v[i] (stable sort, so ties keep
    # index order). Returns the group number of every sorted position.
    n = v.size
    out = np.empty(n, dtype=np.int64)
    csum = np.zeros(n + 1)
    for i in range(n):
        csum[i + 1] = csum[i] + v[i]
    lo = 0
    hi = n  # remaining slice is [lo, hi)
    low_groups = 0
    high_stack = np.empty(n // max(k, 1) + 2, dtype=np.int64)  # group starts peeled from the top
    n_high = 0
    while hi - lo >= 3 * k:
        # x_r and x_s are the two extremes; each takes its k-1 nearest (the k values at its end)
        for i in range(lo, lo + k):
            out[i] = low_groups
        low_groups += 1
        lo += k
        high_stack[n_high] = hi - k
        n_high += 1
        hi -= k
    if hi - lo >= 2 * k:
        mean = (csum[hi] - csum[lo]) / (hi - lo)
        d_lo = (v[lo] - mean) ** 2
        d_hi = (v[hi - 1] - mean) ** 2
        take_low = d_lo > d_hi
        if d_lo == d_hi:
            # the farthest record is the one with the lowest original index among the extremes
            j = hi - 1
            while j > lo and v[j - 1] == v[hi - 1]:
                j -= 1
            take_low = first_idx[lo] < first_idx[j]
        if take_low:
            for i in range(lo, lo + k):
                out[i] = low_groups
            low_groups += 1
            lo += k
        else:
            high_stack[n_high] = hi - k
            n_high += 1
            hi -= k
    if hi > lo:
        for i in range(lo, hi):
            out[i] = low_groups
        low_groups += 1
    g = low_groups
    for t in range(n_high - 1, -1, -1):
        start = high_stack[t]
        for i in range(start, start + k):
            out[i] = g
        g += 1
    return out


# -------------------------------------------------------------------- univariate V-MDAV
@njit(cache=True)
def _vmdav_sorted(v: np.ndarray, k: int, gamma: float) -> np.ndarray:
    n = v.size
    grp = np.full(n, -1, dtype=np.int64)
    mean = v.mean()
    lo = 0
    hi = n - 1  # unassigned slice [lo, hi]
    g = 0
    while hi - lo + 1 >= k:
        # e = unassigned record farthest from the global centroid (tie -> low end)
        from_low = abs(v[lo] - mean) >= abs(v[hi] - mean)
        if from_low:
            for i in range(lo, lo + k):
                grp[i] = g
            lo += k
            size = k
            # extend while the next unassigned value is much nearer to the group than to the rest
            while size < 2 * k - 1 and hi - lo + 1 >= 2:
                d_in = v[lo] - v[lo - 1]
                d_out = v[lo + 1] - v[lo]
                if d_in < gamma * d_out:
                    grp[lo] = g
                    lo += 1
                    size += 1
                else:
                    break
        else:
            for i in range(hi - k + 1, hi + 1):
                grp[i] = g
            hi -= k
            size = k
            while size < 2 * k - 1 and hi - lo + 1 >= 2:
                d_in = v[hi + 1] - v[hi]
                d_out = v[hi] - v[hi - 1]
                if d_in < gamma * d_out:
                    grp[hi] = g
                    hi -= 1
                    size += 1
                else:
                    break
        g += 1
    return grp


def _relabel_sorted(grp: np.ndarray) -> np.ndarray:
    # groups of a sorted array are contiguous: number them from the left
    starts = np.r_[True, grp[1:] != grp[:-1]]
    return np.cumsum(starts) - 1


def _split_best(v: np.ndarray, k: int) -> int:
    """Cut position (k ≤ t ≤ len−k) splitting a sorted block into two groups with least SSE."""
    m = v.size
    c = v - v.mean()
    s1 = np.cumsum(c)
    s2 = np.cumsum(c * c)
    t = np.arange(k, m - k + 1)
    left = s2[t - 1] - s1[t - 1] ** 2 / t
    right = (s2[-1] - s2[t - 1]) - (s1[-1] - s1[t - 1]) ** 2 / (m - t)
    return int(t[np.argmin(left + right)])


# ------------------------------------------------------------- optimal univariate (OMA)
@njit(cache=True)
def _optimal_sorted(v: np.ndarray, k: int) -> np.ndarray:
    n = v.size
    cost = np.full(n + 1, np.inf)
    cost[0] = 0.0
    back = np.zeros(n + 1, dtype=np.int64)
    for j in range(k, n + 1):
        # grow the last group v[i..j-1] leftwards with Welford updates: exact SSE, no cancellation
        mean = 0.0
        m2 = 0.0
        cnt = 0
        best = np.inf
        bi = -1
        lo = j - 2 * k + 1
        if lo < 0:
            lo = 0
        for i in range(j - 1, lo - 1, -1):
            cnt += 1
            x = v[i]
            delta = x - mean
            mean += delta / cnt
            m2 += delta * (x - mean)
            if cnt >= k and cost[i] < np.inf:
                c = cost[i] + m2
                if c <= best:  # equal cost: keep the smaller i (the larger last group)
                    best = c
                    bi = i
        cost[j] = best
        back[j] = bi
    # walk the back-pointers from n to 0; groups come out right to left
    n_groups = 0
    j = n
    while j > 0:
        n_groups += 1
        j = back[j]
    out = np.empty(n, dtype=np.int64)
    g = n_groups - 1
    j = n
    while j > 0:
        i = back[j]
        for t in range(i, j):
            out[t] = g
        g -= 1
        j = i
    return out
