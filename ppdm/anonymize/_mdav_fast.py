"""The accelerated MDAV kernel: the labels of :func:`ppdm.anonymize._mdav_reference.mdav_reference`
with far fewer distance evaluations.

The farthest record from the centroid is found down an order sorted by distance to an anchor
(a triangle-inequality bound stops the scan); the farthest from x_r and the k nearest come
from a kd-tree whose boxes shrink as records are grouped, its bounds computed with the very
operations of the distance so that pruning drops no candidate, not even an exact tie (see
:mod:`ppdm.anonymize._mdav`). Split from :mod:`ppdm.anonymize._mdav`, which re-exports every
name here.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ppdm.anonymize._mdav_reference import (
    _before,
)

#: records per kd-tree leaf of the fast kernel (measured best at p = 5 among 8, 16, 32, 64)
LEAF_SIZE = 16


#: a tree query is replaced by a pass when its average work exceeds this share of the records left
#: (a unit of tree work costs a few times a record of a vectorized pass); a query is cut off at 1/2
TREE_WORK_LIMIT = 0.2


#: rounds after which a query type that fell back to passes tries the tree again (doubling, ≤ 4096)
TREE_RETRY_ROUNDS = 32


@njit(cache=True, inline="always")
def sort_along(X: np.ndarray, perm: np.ndarray, s: int, e: int, ax: int, vals: np.ndarray) -> None:
    """Reorder ``perm[s:e]`` by the records' values on attribute ``ax``, stably (ties keep their
    order, so every kd-tree of MDAV splits the same way run after run); ``vals`` is scratch."""
    m = e - s
    for t in range(m):
        vals[t] = X[perm[s + t], ax]
    order = np.argsort(vals[:m], kind="mergesort")
    seg = perm[s:e].copy()
    for t in range(m):
        perm[s + t] = seg[order[t]]


# ============================================================ distances and bounds
# All three compute Σ_j w_j·u_j² with the same operations in the same order; only u_j differs
# (the record's difference, or the largest / smallest difference a box allows). The two box
# bounds are written out each, not shared through a helper given u_j: they are the innermost
# loops of MDAV, numba cannot inline a function passed as an argument, and the f32 branch must
# round at exactly these points to reproduce sdcMicro's single-precision distances (the
# duplicates tool lists them; a single loop testing f32 inside was no faster).
@njit(cache=True, inline="always")
def _dist_col(AT: np.ndarray, t: int, c: np.ndarray, w: np.ndarray, f32: bool) -> float:
    # the weighted squared distance from c of the record stored as column t of a (p × n) array
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


@njit(cache=True, inline="always")
def _dist(A: np.ndarray, q: int, c: np.ndarray, w: np.ndarray, f32: bool) -> float:
    # _dist_col for a record stored as row q of an (n × p) array: the transpose is a view, the
    # same elements read in the same order
    return _dist_col(A.T, q, c, w, f32)


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
        sort_along(X, perm, s, e, ax, vals)
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
