"""The reference MDAV kernel: each of its three searches a pass over the remaining records.

:func:`mdav_reference` is MDAV as Domingo-Ferrer & Torra state it (paper 003 §3.1),
O(n²·p/k) time; :func:`ppdm.anonymize._mdav.mdav_fast` must give its labels bit for bit, and
small tables use it directly. Split from :mod:`ppdm.anonymize._mdav`, which re-exports every
name here.
"""

from __future__ import annotations

import numpy as np
from numba import njit


# ============================================================ reference (one pass per search)
@njit(cache=True)
def _dist_pass(Y: np.ndarray, m: int, c: np.ndarray, w: np.ndarray, f32: bool,
               d64: np.ndarray, d32: np.ndarray) -> None:
    # weighted squared distances of the first m columns of Y (p × n, one attribute per row,
    # so the inner loop runs over contiguous memory) to the point c, into d64[:m]
    p = Y.shape[0]
    if f32:
        # single-precision accumulation of double-precision terms, as sdcMicro's MDAV does
        for t in range(m):
            d32[t] = np.float32(0.0)
        for j in range(p):
            cj = c[j]
            wj = w[j]
            for t in range(m):
                u = Y[j, t] - cj
                d32[t] = np.float32(d32[t] + np.float32(u * u * wj))
        for t in range(m):
            d64[t] = d32[t]
    else:
        for t in range(m):
            d64[t] = 0.0
        for j in range(p):
            cj = c[j]
            wj = w[j]
            for t in range(m):
                u = Y[j, t] - cj
                d64[t] += u * u * wj


@njit(cache=True)
def _before(d1: float, i1: int, d2: float, i2: int, tie_high: bool) -> bool:
    # nearer first; among equal distances the lower index (the higher one with tie_high)
    if d1 < d2:
        return True
    if d1 > d2:
        return False
    return i1 > i2 if tie_high else i1 < i2


@njit(cache=True)
def _compact(Y: np.ndarray, idx: np.ndarray, taken: np.ndarray, m: int, sums: np.ndarray) -> int:
    # stable compaction of the remaining records; their column sums are re-accumulated in
    # ascending index order (the order in which sdcMicro sums the centroid)
    p = Y.shape[0]
    q = 0
    for t in range(m):
        if not taken[t]:
            idx[q] = idx[t]
            q += 1
    for j in range(p):
        q = 0
        acc = 0.0
        for t in range(m):
            if not taken[t]:
                v = Y[j, t]
                Y[j, q] = v
                acc += v
                q += 1
        sums[j] = acc
    for t in range(m):
        taken[t] = False
    return q


@njit(cache=True, nogil=True)
def mdav_reference(X: np.ndarray, w: np.ndarray, k: int, f32: bool, tie_high: bool) -> np.ndarray:
    """MDAV by full passes: the definition :func:`mdav_fast` must reproduce label for label."""
    n, p = X.shape
    Y = np.ascontiguousarray(X.T)  # remaining records (one attribute per row), index order
    idx = np.arange(n)
    labels = np.full(n, -1, dtype=np.int64)
    taken = np.zeros(n, dtype=np.bool_)
    d64 = np.empty(n)
    d32 = np.empty(n, dtype=np.float32)
    sums = np.zeros(p)
    m_arr = _compact(Y, idx, taken, n, sums)  # live prefix of Y (may hold taken records)
    m = n  # records not yet grouped
    center = np.empty(p)
    row = np.empty(p)
    sel_d = np.empty(k)
    sel_t = np.empty(k, dtype=np.int64)
    g = 0
    while m >= 2 * k:
        # compaction is lazy: grouped records are skipped until they are a quarter of the
        # array, which saves a read-write pass over the data in most rounds
        if 4 * (m_arr - m) >= m_arr:
            m_arr = _compact(Y, idx, taken, m_arr, sums)
        ngroups = 2 if m >= 3 * k else 1
        for j in range(p):
            center[j] = sums[j] / m
        _dist_pass(Y, m_arr, center, w, f32, d64, d32)
        r = 0
        best = -1.0
        for t in range(m_arr):
            if not taken[t] and d64[t] > best:  # first (lowest index) farthest record
                best = d64[t]
                r = t
        for _ in range(ngroups):
            for j in range(p):
                row[j] = Y[j, r]
            _dist_pass(Y, m_arr, row, w, f32, d64, d32)
            far = -1
            far_d = -1.0
            cnt = 0
            for t in range(m_arr):
                if taken[t]:
                    continue
                d = d64[t]
                if d > far_d:
                    far_d = d
                    far = t
                # keep the k nearest, sorted, in a small insertion buffer
                if cnt < k:
                    pos = cnt
                    cnt += 1
                elif _before(d, idx[t], sel_d[k - 1], idx[sel_t[k - 1]], tie_high):
                    pos = k - 1
                else:
                    continue
                while pos > 0 and _before(d, idx[t], sel_d[pos - 1], idx[sel_t[pos - 1]], tie_high):
                    sel_d[pos] = sel_d[pos - 1]
                    sel_t[pos] = sel_t[pos - 1]
                    pos -= 1
                sel_d[pos] = d
                sel_t[pos] = t
            for q in range(k):
                t = sel_t[q]
                taken[t] = True
                labels[idx[t]] = g
                for j in range(p):
                    sums[j] -= Y[j, t]
            g += 1
            m -= k
            r = far
    for t in range(m_arr):
        if not taken[t]:
            labels[idx[t]] = g
    return labels
