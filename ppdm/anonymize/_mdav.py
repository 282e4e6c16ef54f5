"""Numba kernels of multivariate MDAV: the exact accelerated search, blocking and the cell ordering.

MDAV (Domingo-Ferrer & Torra; paper 003 §3.1) repeats three searches over the records not yet
grouped: the record x_r farthest from their centroid, the record x_s farthest from x_r, and
the k nearest records of x_r (then of x_s). :func:`mdav_reference` does each search as a pass
over all remaining records: O(n²·p/k) time. :func:`mdav_fast` returns exactly the same labels
(same distances, bit for bit, and the same tie rules) with far fewer distance evaluations:

* **farthest from the centroid**: the remaining records are kept sorted by their distance
  to an anchor a (a recent centroid). By the triangle inequality no record y can be farther
  from the centroid c than d(y, a) + d(a, c), so the scan down that order stops at the
  first record whose bound is below the best distance found. Since the centroid moves
  little from round to round, a scan usually reads a handful of records; the order is
  rebuilt around the current centroid when scans grow long.
* **farthest from x_r, and the k nearest**: a kd-tree whose boxes shrink as records are
  grouped. A box's bound is computed with the very operations of the distance itself (same
  order, same roundings), and floating-point rounding is monotone, so the bound can never
  be below a distance computed for a record inside: pruning drops no candidate, not even
  an exact tie. Where the tree stops paying (many attributes of similar spread), a query
  falls back to a pass over the remaining records, chosen from the work the tree queries
  actually did.

The centroid itself is updated exactly as the reference does (running sums, re-summed in
index order at the same moments), so the two kernels agree on every input.

Blocking (:func:`kd_blocks`) cuts a table into compact blocks by recursive median splits
along the attribute of largest (weighted) variance; :class:`CellTree` is the same kind of
split learnt on a table, used to order the records of a table too large for memory.

The summaries both the in-memory technique and its Dask form use (:func:`labels_in_blocks`,
:func:`group_means`) live here too, so neither imports the other (both check k with
:func:`ppdm.utils.check_k`).
"""

from __future__ import annotations

import itertools

import numpy as np
from numba import njit

#: records per kd-tree leaf of the fast kernel (measured best at p = 5 among 8, 16, 32, 64)
LEAF_SIZE = 16
#: a tree query is replaced by a pass when its average work exceeds this share of the records left
#: (a unit of tree work costs a few times a record of a vectorized pass); a query is cut off at 1/2
TREE_WORK_LIMIT = 0.2
#: rounds after which a query type that fell back to passes tries the tree again (doubling, ≤ 4096)
TREE_RETRY_ROUNDS = 32
#: below this many records full passes are quicker than building the search structures
FAST_KERNEL_MIN_ROWS = 5_000
#: key layout of the out-of-core ordering: cell number above, row position below
POSITION_BITS = 40


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


# ============================================================ distances and bounds
# All three compute Σ_j w_j·u_j² with the same operations in the same order; only u_j differs
# (the record's difference, or the largest / smallest difference a box allows). They are written
# out each, not shared through a helper given u_j: they are the innermost loops of MDAV, numba
# cannot inline a function passed as an argument, and the f32 branch must round at exactly
# these points to reproduce sdcMicro's single-precision distances (the duplicates tool lists them).
@njit(cache=True)
def _dist(A: np.ndarray, q: int, c: np.ndarray, w: np.ndarray, f32: bool) -> float:
    p = A.shape[1]
    if f32:
        s = np.float32(0.0)
        for j in range(p):
            u = A[q, j] - c[j]
            s = np.float32(s + np.float32(u * u * w[j]))
        return np.float64(s)
    d = 0.0
    for j in range(p):
        u = A[q, j] - c[j]
        d += u * u * w[j]
    return d


@njit(cache=True)
def _dist_col(AT: np.ndarray, t: int, c: np.ndarray, w: np.ndarray, f32: bool) -> float:
    # _dist for a record stored as column t of a (p × n) array
    p = AT.shape[0]
    if f32:
        s = np.float32(0.0)
        for j in range(p):
            u = AT[j, t] - c[j]
            s = np.float32(s + np.float32(u * u * w[j]))
        return np.float64(s)
    d = 0.0
    for j in range(p):
        u = AT[j, t] - c[j]
        d += u * u * w[j]
    return d


@njit(cache=True)
def _box_far(lo: np.ndarray, hi: np.ndarray, nd: int, c: np.ndarray, w: np.ndarray, f32: bool) -> float:
    # no record in the box is farther from c than this (fl(y - c) is monotone in y)
    p = lo.shape[1]
    if f32:
        s = np.float32(0.0)
        for j in range(p):
            a = abs(lo[nd, j] - c[j])
            b = abs(hi[nd, j] - c[j])
            u = a if a > b else b
            s = np.float32(s + np.float32(u * u * w[j]))
        return np.float64(s)
    d = 0.0
    for j in range(p):
        a = abs(lo[nd, j] - c[j])
        b = abs(hi[nd, j] - c[j])
        u = a if a > b else b
        d += u * u * w[j]
    return d


@njit(cache=True)
def _box_near(lo: np.ndarray, hi: np.ndarray, nd: int, c: np.ndarray, w: np.ndarray, f32: bool) -> float:
    # no record in the box is nearer to c than this
    p = lo.shape[1]
    if f32:
        s = np.float32(0.0)
        for j in range(p):
            if c[j] < lo[nd, j]:
                u = lo[nd, j] - c[j]
            elif c[j] > hi[nd, j]:
                u = c[j] - hi[nd, j]
            else:
                u = 0.0
            s = np.float32(s + np.float32(u * u * w[j]))
        return np.float64(s)
    d = 0.0
    for j in range(p):
        if c[j] < lo[nd, j]:
            u = lo[nd, j] - c[j]
        elif c[j] > hi[nd, j]:
            u = c[j] - hi[nd, j]
        else:
            u = 0.0
        d += u * u * w[j]
    return d


@njit(cache=True)
def _insert(d: float, i: int, cnt: int, k: int, sel_d: np.ndarray, sel_i: np.ndarray, tie_high: bool) -> int:
    # keep the k nearest (distance, index) pairs sorted; returns the new count
    if cnt < k:
        pos = cnt
        cnt += 1
    elif _before(d, i, sel_d[k - 1], sel_i[k - 1], tie_high):
        pos = k - 1
    else:
        return cnt
    while pos > 0 and _before(d, i, sel_d[pos - 1], sel_i[pos - 1], tie_high):
        sel_d[pos] = sel_d[pos - 1]
        sel_i[pos] = sel_i[pos - 1]
        pos -= 1
    sel_d[pos] = d
    sel_i[pos] = i
    return cnt


# ============================================================ kd-tree with shrinking boxes
@njit(cache=True)
def _kd_build(X: np.ndarray, w: np.ndarray, leaf: int):
    # median splits along the attribute of largest weighted range until leaves hold ≤ leaf
    # records (identical records stay in one leaf). Children get larger ids than parents.
    n, p = X.shape
    perm = np.arange(n)
    cap = 2 * (n // max(leaf // 2, 1) + 1) + 1
    start = np.empty(cap, np.int64)
    end = np.empty(cap, np.int64)
    left = np.full(cap, -1, np.int64)
    right = np.full(cap, -1, np.int64)
    parent = np.full(cap, -1, np.int64)
    start[0] = 0
    end[0] = n
    nn = 1
    stack = np.empty(128, np.int64)
    sp = 1
    stack[0] = 0
    vals = np.empty(n)
    while sp > 0:
        sp -= 1
        nd = stack[sp]
        s = start[nd]
        e = end[nd]
        if e - s <= leaf:
            continue
        best = 0.0
        ax = -1
        # the weighted squared spread of each attribute (the ball search's kd-tree measures plain
        # widths and keeps every node's box: another rule, so a loop of its own)
        for j in range(p):
            lo = np.inf
            hi = -np.inf
            for t in range(s, e):
                v = X[perm[t], j]
                lo = min(lo, v)
                hi = max(hi, v)
            spread = (hi - lo) * (hi - lo) * w[j]
            if spread > best:
                best = spread
                ax = j
        if ax < 0:
            continue
        m = e - s
        for t in range(m):
            vals[t] = X[perm[s + t], ax]
        order = np.argsort(vals[:m], kind="mergesort")
        seg = perm[s:e].copy()
        for t in range(m):
            perm[s + t] = seg[order[t]]
        mid = s + m // 2
        a = nn
        b = nn + 1
        nn += 2
        start[a] = s
        end[a] = mid
        start[b] = mid
        end[b] = e
        left[nd] = a
        right[nd] = b
        parent[a] = nd
        parent[b] = nd
        stack[sp] = b
        stack[sp + 1] = a
        sp += 2
    return perm, start[:nn].copy(), end[:nn].copy(), left[:nn].copy(), right[:nn].copy(), parent[:nn].copy()


@njit(cache=True)
def _leaf_box(Xt: np.ndarray, alive: np.ndarray, start: np.ndarray, end: np.ndarray,
              lo: np.ndarray, hi: np.ndarray, nd: int) -> None:
    p = Xt.shape[1]
    for j in range(p):
        lo[nd, j] = np.inf
        hi[nd, j] = -np.inf
    for q in range(start[nd], end[nd]):
        if alive[q]:
            for j in range(p):
                v = Xt[q, j]
                lo[nd, j] = min(lo[nd, j], v)
                hi[nd, j] = max(hi[nd, j], v)


@njit(cache=True)
def _tree_remove(q: int, Xt, alive, leaf_of, start, end, left, right, parent, cnt, lo, hi) -> None:
    # take record q (tree position) out and shrink the boxes on its path to the root
    p = Xt.shape[1]
    alive[q] = False
    nd = leaf_of[q]
    cnt[nd] -= 1
    _leaf_box(Xt, alive, start, end, lo, hi, nd)
    nd = parent[nd]
    while nd >= 0:
        cnt[nd] -= 1
        a = left[nd]
        b = right[nd]
        for j in range(p):
            la = lo[a, j] if cnt[a] > 0 else np.inf
            lb = lo[b, j] if cnt[b] > 0 else np.inf
            ha = hi[a, j] if cnt[a] > 0 else -np.inf
            hb = hi[b, j] if cnt[b] > 0 else -np.inf
            lo[nd, j] = min(la, lb)
            hi[nd, j] = max(ha, hb)
        nd = parent[nd]


@njit(cache=True)
def _tree_farthest(Xt, perm, alive, start, end, left, right, cnt, lo, hi, c, w, f32, stack, budget):
    # the remaining record farthest from c (lowest index among equals); returns (index, work),
    # or (-1, work) when the work exceeded the budget
    best = -1.0
    bi = -1
    work = 0
    sp = 1
    stack[0] = 0
    while sp > 0:
        if work > budget:
            return -1, work
        sp -= 1
        nd = stack[sp]
        work += 1
        if cnt[nd] == 0 or _box_far(lo, hi, nd, c, w, f32) < best:
            continue
        a = left[nd]
        if a < 0:
            for q in range(start[nd], end[nd]):
                if alive[q]:
                    work += 1
                    d = _dist(Xt, q, c, w, f32)
                    i = perm[q]
                    if d > best or (d == best and i < bi):
                        best = d
                        bi = i
        else:
            b = right[nd]
            fa = _box_far(lo, hi, a, c, w, f32) if cnt[a] > 0 else -2.0
            fb = _box_far(lo, hi, b, c, w, f32) if cnt[b] > 0 else -2.0
            if fa > fb:  # the more promising child is visited first (pushed last)
                stack[sp] = b
                stack[sp + 1] = a
            else:
                stack[sp] = a
                stack[sp + 1] = b
            sp += 2
    return bi, work


@njit(cache=True)
def _tree_nearest(Xt, perm, alive, start, end, left, right, cnt, lo, hi, c, w, f32, tie_high, k,
                  sel_d, sel_i, stack, budget):
    # the k remaining records nearest to c, sorted, into sel_d / sel_i; returns the work done,
    # or -1 when it exceeded the budget
    got = 0
    work = 0
    sp = 1
    stack[0] = 0
    while sp > 0:
        if work > budget:
            return -1
        sp -= 1
        nd = stack[sp]
        work += 1
        if cnt[nd] == 0:
            continue
        if got == k and _box_near(lo, hi, nd, c, w, f32) > sel_d[k - 1]:
            continue
        a = left[nd]
        if a < 0:
            for q in range(start[nd], end[nd]):
                if alive[q]:
                    work += 1
                    d = _dist(Xt, q, c, w, f32)
                    if got < k or d <= sel_d[k - 1]:
                        got = _insert(d, perm[q], got, k, sel_d, sel_i, tie_high)
        else:
            b = right[nd]
            na = _box_near(lo, hi, a, c, w, f32) if cnt[a] > 0 else np.inf
            nb = _box_near(lo, hi, b, c, w, f32) if cnt[b] > 0 else np.inf
            if na < nb:
                stack[sp] = b
                stack[sp + 1] = a
            else:
                stack[sp] = a
                stack[sp + 1] = b
            sp += 2
    return work


# ============================================================ radial order around an anchor
@njit(cache=True)
def _anchor(X, w, alive_o, c0, AT, ridx, rad, rpos) -> int:
    # the remaining records, by decreasing distance to c0, copied into the columns of AT
    # (p × n, so that passes run over contiguous memory); returns their number
    n, p = X.shape
    m = 0
    for i in range(n):
        if alive_o[i]:
            ridx[m] = i
            m += 1
    neg = np.empty(m)
    for t in range(m):
        i = ridx[t]
        s = 0.0
        for j in range(p):
            u = X[i, j] - c0[j]
            s += u * u * w[j]
        neg[t] = -np.sqrt(s)
    order = np.argsort(neg)
    tmp = ridx[:m].copy()
    for t in range(m):
        i = tmp[order[t]]
        ridx[t] = i
        rad[t] = -neg[order[t]]
        rpos[i] = t
        for j in range(p):
            AT[j, t] = X[i, j]
    return m


@njit(cache=True)
def _radial_compact(AT, ridx, rad, rpos, ralive, head, stop) -> int:
    # drop grouped records from the radial order (kept stable); returns the new length
    p = AT.shape[0]
    q = 0
    for t in range(head, stop):
        if ralive[t]:
            i = ridx[t]
            ridx[q] = i
            rad[q] = rad[t]
            rpos[i] = q
            for j in range(p):
                AT[j, q] = AT[j, t]
            q += 1
    ralive[:q] = True
    ralive[q:stop] = False
    return q


@njit(cache=True)
def _scan(AT, ridx, ralive, head, stop, c, w, f32, tie_high, k, need_far, sel_d, sel_i, d64, d32):
    # one pass over the remaining records: the k nearest to c and, if asked, the farthest.
    # Distances are computed attribute by attribute over contiguous rows, as the reference
    # does (so the loop over records vectorizes); the arithmetic per record is that of _dist.
    p = AT.shape[0]
    m = stop - head
    if f32:
        acc32 = d32[:m]
        acc32[:] = np.float32(0.0)
        for j in range(p):
            cj = c[j]
            wj = w[j]
            row = AT[j, head:stop]
            for t in range(m):
                u = row[t] - cj
                acc32[t] = np.float32(acc32[t] + np.float32(u * u * wj))
        for t in range(m):
            d64[t] = acc32[t]
    else:
        acc = d64[:m]
        acc[:] = 0.0
        for j in range(p):
            cj = c[j]
            wj = w[j]
            row = AT[j, head:stop]
            for t in range(m):
                u = row[t] - cj
                acc[t] += u * u * wj
    far_d = -1.0
    far_i = -1
    got = 0
    for t in range(m):
        if not ralive[head + t]:
            continue
        d = d64[t]
        i = ridx[head + t]
        if need_far and (d > far_d or (d == far_d and i < far_i)):
            far_d = d
            far_i = i
        if got < k or d <= sel_d[k - 1]:  # cheap rejection first: most records are far
            got = _insert(d, i, got, k, sel_d, sel_i, tie_high)
    return far_i, m


# ============================================================ the fast exact kernel
@njit(cache=True, nogil=True)
def mdav_fast(X: np.ndarray, w: np.ndarray, k: int, f32: bool, tie_high: bool) -> np.ndarray:
    """MDAV labels equal to :func:`mdav_reference`'s, found with bounded searches (module docstring)."""
    n, p = X.shape
    eps = 2.0**-24 if f32 else 2.0**-52
    # the radial bound is a real-number inequality: inflate it well beyond the rounding error
    # of a p-term distance (a few p·eps) so that it also holds for computed distances
    inflate = 1.0 + 8.0 * (p + 4) * eps
    tiny = 1e-300

    # ---- kd-tree (tree positions q; Xt is X in tree order)
    perm, start, end, left, right, parent = _kd_build(X, w, LEAF_SIZE)
    n_nodes = start.size
    Xt = np.empty((n, p))
    tpos = np.empty(n, np.int64)
    for q in range(n):
        tpos[perm[q]] = q
        for j in range(p):
            Xt[q, j] = X[perm[q], j]
    talive = np.ones(n, np.bool_)
    leaf_of = np.empty(n, np.int64)
    cnt = np.zeros(n_nodes, np.int64)
    lo = np.empty((n_nodes, p))
    hi = np.empty((n_nodes, p))
    for nd in range(n_nodes - 1, -1, -1):
        cnt[nd] = end[nd] - start[nd]
        if left[nd] < 0:
            for q in range(start[nd], end[nd]):
                leaf_of[q] = nd
            _leaf_box(Xt, talive, start, end, lo, hi, nd)
        else:
            for j in range(p):
                lo[nd, j] = min(lo[left[nd], j], lo[right[nd], j])
                hi[nd, j] = max(hi[left[nd], j], hi[right[nd], j])
    stack = np.empty(256, np.int64)

    # ---- centroid exactly as the reference keeps it
    alive_o = np.ones(n, np.bool_)
    sums = np.zeros(p)
    for j in range(p):
        acc = 0.0
        for i in range(n):
            acc += X[i, j]
        sums[j] = acc

    # ---- radial order (radial positions t)
    AT = np.empty((p, n))
    ridx = np.empty(n, np.int64)
    rad = np.empty(n)
    rpos = np.empty(n, np.int64)
    ralive = np.zeros(n, np.bool_)
    c0 = np.empty(p)
    for j in range(p):
        c0[j] = sums[j] / n
    n_rad = _anchor(X, w, alive_o, c0, AT, ridx, rad, rpos)
    ralive[:n_rad] = True
    head = 0
    scan_work = 0

    labels = np.full(n, -1, np.int64)
    center = np.empty(p)
    row = np.empty(p)
    cdiff = np.empty((1, p))
    sel_d = np.empty(k)
    sel_i = np.empty(k, np.int64)
    buf64 = np.empty(n)
    buf32 = np.empty(n, np.float32)
    # tree or pass, per query type (0: farthest from x_r, 1: nearest): the tree's work as a
    # share of the records left (moving average); rounds to wait before trying the tree again,
    # doubled each time it fails again
    share = np.zeros(2)
    wait = np.zeros(2, np.int64)
    backoff = np.full(2, TREE_RETRY_ROUNDS, np.int64)
    m = n
    m_arr = n
    g = 0
    while m >= 2 * k:
        if 4 * (m_arr - m) >= m_arr:  # the reference's compaction: re-sum in index order
            for j in range(p):
                acc = 0.0
                for i in range(n):
                    if alive_o[i]:
                        acc += X[i, j]
                sums[j] = acc
            m_arr = m
        ngroups = 2 if m >= 3 * k else 1
        for j in range(p):
            center[j] = sums[j] / m
        if scan_work > 2 * m + 1024:  # the centroid drifted: re-anchor (O(m log m))
            for j in range(p):
                c0[j] = center[j]
            n_rad = _anchor(X, w, alive_o, c0, AT, ridx, rad, rpos)
            ralive[:n_rad] = True
            head = 0
            scan_work = 0
        elif 4 * (n_rad - head - m) >= n_rad - head:  # a quarter is grouped: compact, as the reference does
            n_rad = _radial_compact(AT, ridx, rad, rpos, ralive, head, n_rad)
            head = 0
        while not ralive[head]:
            head += 1
        for j in range(p):
            cdiff[0, j] = center[j]
        delta = np.sqrt(_dist(cdiff, 0, c0, w, False)) * (1.0 + 1e-12)

        # x_r: farthest from the centroid, lowest index among equals
        best = -1.0
        r = -1
        t = head
        while t < n_rad:
            if (rad[t] + delta) ** 2 * inflate + tiny < best:
                break
            if ralive[t]:
                scan_work += 1
                d = _dist_col(AT, t, center, w, f32)
                i = ridx[t]
                if d > best or (d == best and i < r):
                    best = d
                    r = i
            t += 1

        for gi in range(ngroups):
            for j in range(p):
                row[j] = X[r, j]
            far = -1
            budget = m // 2
            have_near = False
            if gi == 0:
                if wait[0] == 0:
                    far, work = _tree_farthest(Xt, perm, talive, start, end, left, right, cnt, lo, hi,
                                               row, w, f32, stack, budget)
                    share[0] = work / m if share[0] == 0.0 else 0.8 * share[0] + 0.2 * work / m
                    if far < 0 or share[0] > TREE_WORK_LIMIT:
                        wait[0] = backoff[0]
                        backoff[0] = min(2 * backoff[0], 4096)
                    else:
                        backoff[0] = TREE_RETRY_ROUNDS
                if far < 0:  # one pass gives the farthest and the nearest together
                    far, work = _scan(AT, ridx, ralive, head, n_rad, row, w, f32, tie_high, k, True,
                                      sel_d, sel_i, buf64, buf32)
                    have_near = True
            if not have_near and wait[1] == 0:
                work = _tree_nearest(Xt, perm, talive, start, end, left, right, cnt, lo, hi,
                                     row, w, f32, tie_high, k, sel_d, sel_i, stack, budget)
                share[1] = work / m if share[1] == 0.0 else 0.8 * share[1] + 0.2 * work / m
                if work < 0 or share[1] > TREE_WORK_LIMIT:
                    wait[1] = backoff[1]
                    backoff[1] = min(2 * backoff[1], 4096)
                else:
                    backoff[1] = TREE_RETRY_ROUNDS
                have_near = work >= 0
            if not have_near:
                _scan(AT, ridx, ralive, head, n_rad, row, w, f32, tie_high, k, False, sel_d, sel_i, buf64, buf32)
            for s in range(k):
                i = sel_i[s]
                labels[i] = g
                alive_o[i] = False
                ralive[rpos[i]] = False
                for j in range(p):
                    sums[j] -= X[i, j]
                _tree_remove(tpos[i], Xt, talive, leaf_of, start, end, left, right, parent, cnt, lo, hi)
            g += 1
            m -= k
            r = far
        for s in range(2):
            if wait[s] > 0:
                wait[s] -= 1
                if wait[s] == 0:
                    share[s] = 0.0  # try the tree again and measure afresh
        while head < n_rad and not ralive[head]:
            head += 1
    for i in range(n):
        if alive_o[i]:
            labels[i] = g
    return labels


def mdav_labels(X: np.ndarray, w: np.ndarray, k: int, f32: bool, tie_high: bool) -> np.ndarray:
    """MDAV labels by whichever kernel is quicker for this size (both give the same labels)."""
    if X.shape[0] < FAST_KERNEL_MIN_ROWS:
        return mdav_reference(X, w, k, f32, tie_high)
    return mdav_fast(X, w, k, f32, tie_high)


# ============================================================ blocks
@njit(cache=True)
def _widest(X: np.ndarray, w: np.ndarray, perm: np.ndarray, s: int, e: int) -> int:
    # attribute of largest weighted variance among records perm[s:e] (first one on ties)
    p = X.shape[1]
    m = e - s
    best = -1.0
    ax = 0
    for j in range(p):
        mean = 0.0
        for t in range(s, e):
            mean += X[perm[t], j]
        mean /= m
        ss = 0.0
        for t in range(s, e):
            u = X[perm[t], j] - mean
            ss += u * u
        v = ss * w[j]
        if v > best:
            best = v
            ax = j
    return ax


@njit(cache=True, nogil=True)
def kd_blocks(X: np.ndarray, w: np.ndarray, block_size: int) -> np.ndarray:
    """Block number of every record: ⌈n/block_size⌉ blocks by recursive median splits.

    A node holding m records and b blocks is sorted (stably) along its attribute of largest
    weighted variance and cut at rank ⌊m·⌊b/2⌋/b⌋; so every block holds at least
    ⌊n/⌈n/block_size⌉⌋ records (more than block_size/2 when there are two blocks or more).
    Blocks are numbered in the order of the splits, so neighbouring numbers are neighbours.
    """
    n = X.shape[0]
    nb = max(1, -(-n // block_size))
    out = np.empty(n, np.int64)
    perm = np.arange(n)
    vals = np.empty(n)
    st_s = np.empty(128, np.int64)
    st_e = np.empty(128, np.int64)
    st_b = np.empty(128, np.int64)
    st_first = np.empty(128, np.int64)
    sp = 1
    st_s[0] = 0
    st_e[0] = n
    st_b[0] = nb
    st_first[0] = 0
    while sp > 0:
        sp -= 1
        s = st_s[sp]
        e = st_e[sp]
        b = st_b[sp]
        first = st_first[sp]
        if b == 1:
            for t in range(s, e):
                out[perm[t]] = first
            continue
        ax = _widest(X, w, perm, s, e)
        m = e - s
        for t in range(m):
            vals[t] = X[perm[s + t], ax]
        order = np.argsort(vals[:m], kind="mergesort")
        seg = perm[s:e].copy()
        for t in range(m):
            perm[s + t] = seg[order[t]]
        bl = b // 2
        cut = s + (m * bl) // b
        st_s[sp] = cut
        st_e[sp] = e
        st_b[sp] = b - bl
        st_first[sp] = first + bl
        st_s[sp + 1] = s
        st_e[sp + 1] = cut
        st_b[sp + 1] = bl
        st_first[sp + 1] = first
        sp += 2
    return out


# ============================================================ cells: an ordering learnt on a table
@njit(cache=True, nogil=True)
def _cell_build(X: np.ndarray, w: np.ndarray, max_leaves: int, min_leaf: int):
    # threshold splits (x ≤ thr goes left) at the lower median of the widest attribute
    n = X.shape[0]
    cap = 2 * max_leaves + 1
    axis = np.full(cap, -1, np.int64)
    thr = np.zeros(cap)
    left = np.full(cap, -1, np.int64)
    right = np.full(cap, -1, np.int64)
    leaf_no = np.full(cap, -1, np.int64)
    perm = np.arange(n)
    vals = np.empty(n)
    st_nd = np.empty(cap, np.int64)
    st_s = np.empty(cap, np.int64)
    st_e = np.empty(cap, np.int64)
    # breadth-first, so the leaf budget is spent evenly over the table
    head = 0
    tail = 1
    st_nd[0] = 0
    st_s[0] = 0
    st_e[0] = n
    nn = 1
    leaves = 1
    while head < tail:
        nd = st_nd[head]
        s = st_s[head]
        e = st_e[head]
        head += 1
        m = e - s
        if m < 2 * min_leaf or leaves >= max_leaves:
            continue
        ax = _widest(X, w, perm, s, e)
        for t in range(m):
            vals[t] = X[perm[s + t], ax]
        order = np.argsort(vals[:m], kind="mergesort")
        seg = perm[s:e].copy()
        for t in range(m):
            perm[s + t] = seg[order[t]]
        if X[perm[s], ax] == X[perm[e - 1], ax]:
            continue  # all equal along the widest attribute: nothing to split
        cut = s + m // 2
        tv = X[perm[cut - 1], ax]
        while cut < e and X[perm[cut], ax] <= tv:  # equal values stay on one side
            cut += 1
        if cut == e:
            # the upper half is one value: split just below it instead
            cut = s + m // 2
            while X[perm[cut - 1], ax] == tv:
                cut -= 1
            tv = X[perm[cut - 1], ax]
        a = nn
        b = nn + 1
        nn += 2
        leaves += 1
        axis[nd] = ax
        thr[nd] = tv
        left[nd] = a
        right[nd] = b
        st_nd[tail] = a
        st_s[tail] = s
        st_e[tail] = cut
        st_nd[tail + 1] = b
        st_s[tail + 1] = cut
        st_e[tail + 1] = e
        tail += 2
    # number the leaves left to right (depth first), so that neighbouring numbers are neighbours
    count = 0
    stack = np.empty(cap, np.int64)
    sp = 1
    stack[0] = 0
    while sp > 0:
        sp -= 1
        nd = stack[sp]
        if left[nd] < 0:
            leaf_no[nd] = count
            count += 1
        else:
            stack[sp] = right[nd]
            stack[sp + 1] = left[nd]
            sp += 2
    return axis[:nn].copy(), thr[:nn].copy(), left[:nn].copy(), right[:nn].copy(), leaf_no[:nn].copy(), count


@njit(cache=True, nogil=True)
def _cell_of(X: np.ndarray, axis: np.ndarray, thr: np.ndarray, left: np.ndarray, right: np.ndarray,
             leaf_no: np.ndarray) -> np.ndarray:
    n = X.shape[0]
    out = np.empty(n, np.int64)
    for i in range(n):
        nd = 0
        while axis[nd] >= 0:
            nd = left[nd] if X[i, axis[nd]] <= thr[nd] else right[nd]
        out[i] = leaf_no[nd]
    return out


class CellTree:
    """A coarse ordering of the attribute space learnt on a table (median splits, ≤ ``max_leaves`` cells).

    ``cell(X)`` numbers every record's cell; consecutive numbers are adjacent boxes, so
    sorting records by cell puts neighbours next to each other wherever they sit in a
    table too large for memory.
    """

    def __init__(self, X: np.ndarray, w: np.ndarray, max_leaves: int = 4096, min_leaf: int = 8) -> None:
        X = np.ascontiguousarray(X, dtype=float)
        self.axis, self.thr, self.left, self.right, self.leaf_no, self.n_cells = _cell_build(
            X, np.asarray(w, dtype=float), int(max_leaves), int(min_leaf)
        )

    def cell(self, X: np.ndarray) -> np.ndarray:
        X = np.ascontiguousarray(X, dtype=float)
        return _cell_of(X, self.axis, self.thr, self.left, self.right, self.leaf_no)


# ============================================================ shared by in-memory and Dask MDAV
def labels_in_blocks(A: np.ndarray, w: np.ndarray, k: int, f32: bool, blocks: np.ndarray) -> np.ndarray:
    """MDAV labels of every record, MDAV run within each block (numbered 0…b−1); each block's
    records keep their index order (the tie rules' order). ``f32``: sdcMicro's single precision
    and tie rule."""
    order = np.argsort(blocks, kind="stable")
    bounds = np.r_[0, np.cumsum(np.bincount(blocks))]
    labels = np.empty(A.shape[0], dtype=np.int64)
    g = 0
    for a, b in itertools.pairwise(bounds):
        idx = order[a:b]
        lab = mdav_labels(np.ascontiguousarray(A[idx]), w, k, f32, f32)
        labels[idx] = lab + g
        g += int(lab.max()) + 1
    return labels


def group_means(x: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Mean of ``x`` (1-d or 2-d) per group label 0…g−1."""
    labels = np.asarray(labels)
    g = int(labels.max()) + 1
    cnt = np.bincount(labels, minlength=g).astype(float)
    if x.ndim == 1:
        return np.bincount(labels, weights=x, minlength=g) / cnt
    return np.column_stack([np.bincount(labels, weights=x[:, j], minlength=g) / cnt for j in range(x.shape[1])])
