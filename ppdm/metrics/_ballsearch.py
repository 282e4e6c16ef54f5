"""Numba kd-tree for DDR's own-record question: is any original nearer than the record's own?

DDR credits a masked record z_i only when its own original x_i is among its nearest
originals. So the search never needs the nearest original itself: it looks for any x_j
that is clearly nearer than x_i (then the link fails and the search stops at once) and,
when there is none, collects the originals at most as far as x_i to count the ties. The
kd-tree is walked nearest cell first with the cell's lower-bound distance kept
incrementally (Arya & Mount 1993), so a failing record usually ends in its first leaf and
a record whose own original is nearest only explores the ball of radius d(z_i, x_i), which
is small when masking is mild. A point's distance is accumulated attribute by attribute in
the brute force's order and abandoned once it exceeds that radius (partial distance
search), which cannot change any decision.

Distances are therefore the brute force's to the last bit (``_kernels.nearest_ties_brute``)
and every tie decision is the same. A record whose search visits more than ``budget``
leaves is left undecided (status −1) for an exhaustive method to finish: large balls in
many independent dimensions, where no tree prunes.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ppdm.metrics._kernels import add_children, push_children, sort_range
from ppdm.parallel import run_chunks

LEAF_SIZE = 32


@njit(cache=True)
def build_tree(x: np.ndarray, leaf_size: int) -> tuple:
    """kd-tree over the rows of ``x``, split at the median of the widest dimension.

    Returns (xp, perm, start, end, left, right, lo, hi): ``xp`` holds the rows in leaf order
    (xp[t] = x[perm[t]]), so a leaf is one contiguous block; node k owns rows
    start[k]:end[k] and its points lie in the box [lo[k], hi[k]]; left/right are −1 for a leaf.
    """
    n, m = x.shape
    cap = 4 * (n // max(1, leaf_size) + 1) + 1  # leaves hold at least leaf_size / 2 rows
    # the node arrays, explicit stack and box loop repeat the other compiled kd-trees (_linkage_search,
    # _mdav_fast) on purpose: numba takes no tree object or closure, and each tree keeps other bounds
    start = np.empty(cap, dtype=np.int64)
    end = np.empty(cap, dtype=np.int64)
    left = np.full(cap, -1, dtype=np.int64)
    right = np.full(cap, -1, dtype=np.int64)
    lo = np.empty((cap, m))
    hi = np.empty((cap, m))
    perm = np.arange(n)
    stack = np.empty(cap, dtype=np.int64)
    n_nodes = 1
    start[0] = 0
    end[0] = n
    stack[0] = 0
    sp = 1
    while sp > 0:
        sp -= 1
        k = stack[sp]
        s, e = start[k], end[k]
        best_d = 0
        width = -1.0
        for a in range(m):
            mn = np.inf
            mx = -np.inf
            for t in range(s, e):
                v = x[perm[t], a]
                mn = min(mn, v)
                mx = max(mx, v)
            lo[k, a] = mn
            hi[k, a] = mx
            if mx - mn > width:
                width = mx - mn
                best_d = a
        if e - s <= leaf_size or width <= 0.0:
            continue  # a leaf (identical rows always stay together)
        sort_range(perm, x, s, e, best_d)
        mid = s + (e - s) // 2
        sp, n_nodes = add_children(k, s, mid, e, left, right, start, end, stack, sp, n_nodes)
    xp = np.empty((n, m))
    for t in range(n):
        for a in range(m):
            xp[t, a] = x[perm[t], a]
    return xp, perm, start[:n_nodes], end[:n_nodes], left[:n_nodes], right[:n_nodes], lo[:n_nodes], hi[:n_nodes]


@njit(cache=True, inline="always", fastmath=True)
def _box_d2(z: np.ndarray, lo: np.ndarray, hi: np.ndarray, k: int) -> float:
    """Squared distance from z to node k's box: a lower bound of the distance to its points
    (branch-free so it vectorises; reassociated sums only move it by rounding, which the
    search's pruning margin covers)."""
    d = 0.0
    for a in range(z.shape[0]):
        v = z[a]
        t = max(lo[k, a] - v, 0.0) + max(v - hi[k, a], 0.0)
        d += t * t
    return d


#: attributes summed for every point before the reach is checked (then after each attribute)
SCREEN_DIMS = 6


@njit(cache=True, inline="always")
def tied_with_own(
    own_d: float, own_i: int, cand_d: np.ndarray, cand_j: np.ndarray, n_cand: int, rel_tol: float, abs_tol: float
) -> tuple[int, int]:
    """Among the own original (distance ``own_d``, index ``own_i``) and ``n_cand`` candidates
    none of which is clearly nearer: how many tie for the nearest, and the smallest index among them."""
    best = own_d
    for r in range(n_cand):
        best = min(best, cand_d[r])
    lim = best * (1.0 + rel_tol) + abs_tol
    cnt = 1
    f = own_i
    for r in range(n_cand):
        if cand_d[r] <= lim:
            cnt += 1
            f = min(f, cand_j[r])
    return cnt, f


@njit(cache=True, nogil=True)
def _search_one(
    zi: np.ndarray,
    oi: int,
    x: np.ndarray,
    xp: np.ndarray,
    perm: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    left: np.ndarray,
    right: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    rel_tol: float,
    abs_tol: float,
    budget: int,
    st_node: np.ndarray,
    st_rd: np.ndarray,
    cand_j: np.ndarray,
    cand_d: np.ndarray,
) -> tuple[int, int, int]:
    """One masked record: (status, |T|, min T); see :func:`own_ball_search`."""
    m = zi.shape[0]
    screen = min(m, SCREEN_DIMS)
    own2 = 0.0
    for a in range(m):
        t = zi[a] - x[oi, a]
        own2 += t * t
    reach = own2 * (1.0 + rel_tol) + abs_tol  # no tie of the own original lies farther
    prune = reach * (1.0 + 1e-9) + 1e-300  # box distances are lower bounds up to rounding
    st_node[0] = 0
    st_rd[0] = 0.0
    sp = 1
    n_cand = 0
    leaves = 0
    while sp > 0:
        sp -= 1
        k = st_node[sp]
        if st_rd[sp] > prune:
            continue
        if left[k] >= 0:
            dl = _box_d2(zi, lo, hi, left[k])
            dr = _box_d2(zi, lo, hi, right[k])
            sp = push_children(st_node, st_rd, sp, left[k], right[k], dl, dr, prune)
            continue
        leaves += 1
        if leaves > budget:
            return -1, 0, 0
        s0 = start[k]
        ln = end[k] - s0
        # partial distance search: a point's sum is abandoned once it passes the reach; the
        # attributes are added in the brute force's order, so a completed sum is its value
        for t in range(s0, s0 + ln):
            dj = 0.0
            for a in range(screen):
                u = zi[a] - xp[t, a]
                dj += u * u
            if dj > reach:
                continue
            j = perm[t]
            if j == oi:
                continue
            for a in range(screen, m):
                u = zi[a] - xp[t, a]
                dj += u * u
                if dj > reach:
                    break
            if dj > reach:
                continue
            if own2 > dj * (1.0 + rel_tol) + abs_tol:
                return 0, 0, 0  # x_j is nearer than any tie of the own original could be
            cand_j[n_cand] = j
            cand_d[n_cand] = dj
            n_cand += 1
    cnt, f = tied_with_own(own2, oi, cand_d, cand_j, n_cand, rel_tol, abs_tol)
    return 1, cnt, f


# the tree travels as its arrays (a compiled kernel takes no tree object), so this signature repeats
# _search_one's
def own_ball_search(
    x: np.ndarray,  # (n, m) originals in their own order
    z: np.ndarray,  # (nq, m) masked records
    own_idx: np.ndarray,  # (nq,) index in x of each masked record's own original
    xp: np.ndarray,
    perm: np.ndarray,
    start: np.ndarray,
    end: np.ndarray,
    left: np.ndarray,
    right: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    rel_tol: float,
    abs_tol: float,
    budget: int,
    n_chunks: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each masked record: ``status`` 1 when its own original is among its nearest
    originals, 0 when it is not, −1 when undecided within ``budget`` leaves; for status 1
    also |T| and min T (T = originals within d²_min · (1 + rel_tol) + abs_tol).

    Memory: one stack and one length-n candidate buffer per chunk."""
    nq = z.shape[0]
    status = np.zeros(nq, dtype=np.int64)
    count = np.zeros(nq, dtype=np.int64)
    first = np.zeros(nq, dtype=np.int64)
    # visit the records in the leaf order of their own originals: neighbouring records explore
    # the same cells, which then stay in the cache (each record's result does not depend on it)
    where = np.empty(x.shape[0], dtype=np.int64)
    where[perm] = np.arange(x.shape[0])
    order = np.argsort(where[own_idx], kind="stable")
    run_chunks(_own_ball_search_chunk, nq, x, z, own_idx, xp, perm, start, end, left, right, lo, hi, rel_tol, abs_tol,
               budget, order, status, count, first, chunks=n_chunks)
    return status, count, first


@njit(cache=True, nogil=True)
def _own_ball_search_chunk(c, p_lo, p_hi, x, z, own_idx, xp, perm, start, end, left, right, lo, hi, rel_tol, abs_tol,
                           budget, order, status, count, first):
    """Records ``order[p_lo:p_hi]`` of :func:`own_ball_search` (:func:`ppdm.parallel.run_chunks`)."""
    n_nodes = start.shape[0]
    n = x.shape[0]
    st_node = np.empty(n_nodes, dtype=np.int64)
    st_rd = np.empty(n_nodes)
    cand_j = np.empty(n, dtype=np.int64)
    cand_d = np.empty(n)
    for p in range(p_lo, p_hi):
        q = order[p]
        s_, c_, f_ = _search_one(z[q], own_idx[q], x, xp, perm, start, end, left, right, lo, hi, rel_tol,
                                 abs_tol, budget, st_node, st_rd, cand_j, cand_d)
        status[q] = s_
        count[q] = c_
        first[q] = f_
