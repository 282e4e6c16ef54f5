"""Compiled gain ratios of SysFor's good-attribute search (Islam & Giggins 2011, Algorithm 2).

SysFor scores every candidate split with the plain gain ratio of Quinlan (1993): no MDL
correction and no unknown-value factor, from class proportions. The arithmetic is done in
the order of the reference Weka implementation (class terms summed one by one, each
proportion's ``log2`` taken as ``ln p / ln 2`` and zero below 1e-6, entropies weighted
after they are summed), so that split points and attributes whose gain ratios tie in exact
arithmetic are ordered as the reference orders them.
"""

from __future__ import annotations

import numpy as np
from numba import njit

LN2 = np.log(2.0)


@njit(cache=True)
def _log2p(p: float) -> float:
    # log2 of a proportion; proportions below 1e-6 count as zero terms
    if p < 1e-6:
        return 0.0
    return np.log(p) / LN2


@njit(cache=True)
def _info(counts: np.ndarray, total: float) -> float:
    """Entropy −Σ_c (n_c/N) log2(n_c/N) of one weight vector with total N."""
    s = 0.0
    for c in range(counts.shape[0]):
        p = counts[c] / total
        s += p * _log2p(p)
    return -s


@njit(cache=True)
def numeric_candidates(v, cls, wt, n_classes, min_leaf):
    """Every SysFor split point of one numeric attribute, with its gain ratio.

    ``v`` holds the known values sorted ascending, ``cls``/``wt`` their class codes and
    weights. A candidate is the midpoint of two adjacent distinct values whose sides
    (values ≤ midpoint, values above) each weigh at least ``min_leaf``. Returns the
    midpoints (ascending) and their gain ratios."""
    n = v.shape[0]
    mids = np.empty(max(n - 1, 0))
    grs = np.empty(max(n - 1, 0))
    if n < 2:
        return mids[:0], grs[:0]
    total = np.zeros(n_classes)
    for i in range(n):
        total[cls[i]] += wt[i]
    tot_w = 0.0
    for c in range(n_classes):
        tot_w += total[c]
    before = _info(total, tot_w)
    left = np.zeros(n_classes)
    right = total.copy()
    k = 0
    pos = 0  # rows [0, pos) are on the left
    for i in range(n - 1):
        if v[i] == v[i + 1]:
            continue
        mid = (v[i] + v[i + 1]) / 2.0
        while pos < n and v[pos] <= mid:
            left[cls[pos]] += wt[pos]
            right[cls[pos]] -= wt[pos]
            pos += 1
        lw = 0.0
        rw = 0.0
        for c in range(n_classes):
            rw += right[c]
            lw += left[c]
        if lw < min_leaf or rw < min_leaf:
            continue
        nw = rw + lw
        after = _info(right, rw) * (rw / nw) + _info(left, lw) * (lw / nw)
        gain = before - after
        si = -((lw / nw) * _log2p(lw / nw) + (rw / nw) * _log2p(rw / nw))
        mids[k] = mid
        grs[k] = gain / si
        k += 1
    return mids[:k], grs[:k]


@njit(cache=True)
def nominal_gain_ratio(bags, min_leaf, empty_value_gain_is_entropy):
    """Gain ratio of the multiway split of one categorical attribute (value × class weights).

    Admissible when at least two values weigh ``min_leaf`` or more; returns (admissible,
    gain ratio). With ``empty_value_gain_is_entropy`` a value with no rows makes the
    entropy after the split zero, so the gain is the whole class entropy H(D) (the
    reference implementation); otherwise empty values simply contribute nothing."""
    nb = bags.shape[0]
    nc = bags.shape[1]
    per_bag = np.zeros(nb)
    big = 0
    for b in range(nb):
        s = 0.0
        for c in range(nc):
            s += bags[b, c]
        per_bag[b] = s
        if s >= min_leaf:
            big += 1
    if big < 2:
        return False, 0.0
    total = 0.0
    cls_tot = np.zeros(nc)
    any_empty = False
    for b in range(nb):
        total += per_bag[b]
        if per_bag[b] == 0.0:
            any_empty = True
        for c in range(nc):
            cls_tot[c] += bags[b, c]
    before = _info(cls_tot, total)
    after = 0.0
    if not (any_empty and empty_value_gain_is_entropy):
        for b in range(nb):
            if per_bag[b] > 0.0:
                after += _info(bags[b], per_bag[b]) * (per_bag[b] / total)
    si = 0.0
    for b in range(nb):
        p = per_bag[b] / total
        si += p * _log2p(p)
    si = -si
    return True, (before - after) / si


@njit(cache=True)
def separated_points(mids, grs, rng, separation):
    """Greedy choice of well separated split points (Algorithm 2): repeatedly take the
    available point with the highest gain ratio (the lowest point on ties) and drop every
    available point within ``separation × rng`` of it. Returns the chosen indices in the
    order chosen."""
    k = mids.shape[0]
    avail = np.ones(k, dtype=np.bool_)
    out = np.empty(k, dtype=np.int64)
    m = 0
    left = k
    while left > 0:
        best = -1
        best_gr = -np.inf
        for i in range(k):
            if avail[i] and grs[i] > best_gr:
                best = i
                best_gr = grs[i]
        if best < 0:
            break
        out[m] = best
        m += 1
        avail[best] = False
        left -= 1
        for i in range(k):
            if avail[i] and abs(mids[i] - mids[best]) / rng <= separation:
                avail[i] = False
                left -= 1
    return out[:m]
