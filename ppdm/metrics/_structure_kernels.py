"""Numba kernels of EDUSC (paper 004 §5): splitting criteria of every attribute in every
node segment of a tree, in one call per tree and table.

A tree's segments are given in CSR form (``ptr``, ``recs``: the records reaching node s are
``recs[ptr[s]:ptr[s+1]]``). Each attribute is given as integer codes: for a numeric
attribute the dense rank of the value (so sorting codes sorts values), for a categorical
one any code per distinct value.

Categorical attributes get their final score here. For numeric attributes the best
threshold must be the same one :func:`ppdm.metrics.structure.split_score` picks (first
maximum of the gain), and the gain ratio then depends on that choice; NumPy's ``log2``
and the C library's differ in the last bit for some arguments, so the kernel only screens:
it reports every cut whose gain is within a small tolerance of the segment's best, and the
caller re-evaluates those few cuts with the reference NumPy arithmetic.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

# the growable buffers of the tree builder (one implementation for both compiled builders)
from ppdm.trees._c45_compiled import _grow_1d, _grow_2d


@njit(cache=True)
def _imp(counts: np.ndarray, tot: float, gini: bool) -> float:
    if tot <= 0:
        return 0.0
    h = 0.0
    if gini:
        for c in range(counts.shape[0]):
            p = counts[c] / tot
            h += p * p
        return 1.0 - h
    for c in range(counts.shape[0]):
        if counts[c] > 0:
            p = counts[c] / tot
            h -= p * math.log2(p)
    return h


@njit(cache=True)
def _weighted(left: np.ndarray, right: np.ndarray, nl: float, nr: float, gini: bool, xlogx: np.ndarray) -> float:
    """nl·I(left) + nr·I(right) of one cut (both sides non-empty, integer counts)."""
    if gini:
        sl = 0.0
        sr = 0.0
        for c in range(left.shape[0]):
            sl += left[c] * left[c]
            sr += right[c] * right[c]
        return (nl - sl / nl) + (nr - sr / nr)
    w = xlogx[int(nl)] + xlogx[int(nr)]
    for c in range(left.shape[0]):
        w -= xlogx[int(left[c])] + xlogx[int(right[c])]
    return w


@njit(cache=True, nogil=True)
def segment_scores(ptr, recs, y, n_classes, codes, n_codes, is_num, criterion, tol, xlogx):
    """Scores of every (segment, attribute).

    ``criterion``: 0 gain ratio, 1 information gain, 2 Gini gain. ``xlogx[c]`` = c·log2 c
    for the integer counts 0..n: with it the entropy screen of a cut needs no logarithm,
    since |S|·H(S) = |S| log2 |S| − Σ_c n_c log2 n_c.

    Only cuts at boundary points are screened. Inside a run of values whose records all
    belong to one class, the weighted impurity (entropy or Gini) of the cut is strictly
    concave in the cut's position unless the segment is pure (Fayyad & Irani 1992), so
    every cut inside the run is strictly worse than the better of the run's two end cuts
    (or than no split): it can be neither the best cut nor tied with it. Returns the score matrix
    (segments × attributes; numeric entries are left at 0 for the caller to fill), and the
    screened numeric cuts: their segment, attribute and left class counts.
    """
    n_seg = ptr.shape[0] - 1
    m = codes.shape[0]
    C = n_classes
    gini = criterion == 2
    score = np.zeros((n_seg, m))
    cand_seg = np.empty(1024, dtype=np.int64)
    cand_attr = np.empty(1024, dtype=np.int64)
    cand_left = np.empty((1024, C))
    n_cand = 0
    max_codes = 1
    for a in range(m):
        max_codes = max(max_codes, n_codes[a])
    bucket = np.zeros(max_codes * C)
    parent = np.zeros(C)
    left = np.zeros(C)
    right = np.zeros(C)
    grp = np.zeros(C)
    for s in range(n_seg):
        lo, hi = ptr[s], ptr[s + 1]
        k = hi - lo
        if k == 0:
            continue
        parent[:] = 0.0
        for i in range(lo, hi):
            parent[y[recs[i]]] += 1.0
        n_present = 0
        for c in range(C):
            if parent[c] > 0:
                n_present += 1
        base = _imp(parent, float(k), gini)
        gains = np.empty(k)
        cuts_left = np.empty((k, C))
        for a in range(m):
            D = n_codes[a]
            col = codes[a]
            if not is_num[a]:
                for i in range(lo, hi):
                    r = recs[i]
                    bucket[col[r] * C + y[r]] += 1.0
                groups = 0
                wsum = 0.0
                si = 0.0
                for v in range(D):
                    sz = 0.0
                    for c in range(C):
                        sz += bucket[v * C + c]
                    if sz > 0:
                        groups += 1
                        wsum += sz * _imp(bucket[v * C:(v + 1) * C], sz, gini)
                        p = sz / k
                        si -= p * math.log2(p)
                    for c in range(C):
                        bucket[v * C + c] = 0.0
                if groups < 2:
                    continue
                g = max(base - wsum / k, 0.0)
                if criterion == 0:
                    score[s, a] = g / si if si > 0 else 0.0
                else:
                    score[s, a] = g
                continue
            # numeric: class counts per distinct value in ascending order
            if n_present < 2:
                continue  # a pure segment: every gain is exactly 0, as is the score
            use_sort = float(k) * math.log2(k + 1.0) < D
            if use_sort:
                keys = np.empty(k, dtype=np.int64)
                for i in range(lo, hi):
                    r = recs[i]
                    keys[i - lo] = col[r] * C + y[r]
                keys.sort()
            else:
                for i in range(lo, hi):
                    r = recs[i]
                    bucket[col[r] * C + y[r]] += 1.0
            n_cuts = 0
            left[:] = 0.0
            best = -np.inf
            prev_pure = -2  # class of the previous value's records if they share one, −1 if mixed
            i = 0
            v = 0
            seen = 0.0
            while True:
                # the next value's class counts into grp
                grp[:] = 0.0
                if use_sort:
                    if i >= k:
                        break
                    val = keys[i] // C
                    while i < k and keys[i] // C == val:
                        grp[keys[i] % C] += 1.0
                        i += 1
                else:
                    found = False
                    while v < D and not found:
                        sz = 0.0
                        for c in range(C):
                            sz += bucket[v * C + c]
                        if sz > 0:
                            found = True
                            for c in range(C):
                                grp[c] = bucket[v * C + c]
                                bucket[v * C + c] = 0.0
                        v += 1
                    if not found:
                        break
                pure = -1
                for c in range(C):
                    if grp[c] > 0:
                        pure = c if pure == -1 else -3
                pure = -1 if pure == -3 else pure
                if prev_pure != -2 and (pure == -1 or pure != prev_pure):
                    # a boundary point between the previous value and this one
                    nl = 0.0
                    for c in range(C):
                        right[c] = parent[c] - left[c]
                        nl += left[c]
                    nr = k - nl
                    g = base - _weighted(left, right, nl, nr, gini, xlogx) / k
                    gains[n_cuts] = g
                    cuts_left[n_cuts] = left
                    n_cuts += 1
                    best = max(best, g)
                for c in range(C):
                    left[c] += grp[c]
                    seen += grp[c]
                prev_pure = pure
                if seen >= k:
                    break
            if n_cuts == 0:
                continue
            floor = best - tol * (1.0 + abs(best))
            for j in range(n_cuts):
                if gains[j] >= floor:
                    cand_seg = _grow_1d(cand_seg, n_cand + 1)
                    cand_attr = _grow_1d(cand_attr, n_cand + 1)
                    cand_left = _grow_2d(cand_left, n_cand + 1)
                    cand_seg[n_cand] = s
                    cand_attr[n_cand] = a
                    cand_left[n_cand] = cuts_left[j]
                    n_cand += 1
    return score, cand_seg[:n_cand], cand_attr[:n_cand], cand_left[:n_cand]
