"""The nearest-distance stage of record linkage: the exact Gower-distance search, compiled.

The k-d tree over the originals (:func:`build_mixed_tree`), the lower bound of the Gower
distance per node, the per-record search that asks whether any original is clearly nearer
than the record's own (:func:`mixed_block_search`), and :func:`link_against_blocks`, which
runs it over blocks of originals in two passes so that partitioned tables link exactly as
in-memory ones. The ties and the credit a link earns are read in :mod:`ppdm.metrics.linkage`,
which re-exports every name here.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from numba import njit

from ppdm.metrics._kernels import add_children, push_children, sort_range
from ppdm.parallel import chunks_for, run_chunks

TIE_REL_TOL = 1e-12


TIE_ABS_TOL = 1e-15


@njit(cache=True, inline="always")
def _gower(zn: np.ndarray, zc: np.ndarray, xn: np.ndarray, xc: np.ndarray, i: int, j: int, reach: float) -> float:
    """Gower distance of z_i and x_j, categorical terms first; returns a value > reach as soon
    as the partial sum passes ``reach`` (terms are added in one fixed order for every pair)."""
    d = 0.0
    for c in range(zc.shape[1]):
        if zc[i, c] != xc[j, c]:
            d += 1.0
            if d > reach:
                return d
    for a in range(zn.shape[1]):
        u = zn[i, a]
        v = xn[j, a]
        if u != u or v != v:  # missing: 0 against missing, 1 against a value
            t = 0.0 if (u != u and v != v) else 1.0
        else:
            t = abs(u - v)
        d += t
        if d > reach:
            return d
    return d


# ------------------------------------------------------------------ mixed k-d tree
#: points per leaf of the mixed k-d tree
LEAF_SIZE = 32


#: leaves one record may visit before its search is finished by a plain scan of the block
LEAF_BUDGET_FRACTION = 0.25


@njit(cache=True)
def build_mixed_tree(xn: np.ndarray, xc: np.ndarray, gx: np.ndarray, leaf_size: int) -> tuple:
    """k-d tree over originals with numeric (scaled, NaN for missing) and categorical attributes.

    ``gx`` numbers the originals' groups: equal categorical values and the same missing
    numeric attributes. Nodes holding several groups are split between groups first (at the
    group boundary nearest their middle), so a record's own group is reached in a few steps
    and every other group lies at distance 1 or more; a node of one group is split at the
    median of its widest numeric attribute. Each node keeps its range of groups, of the codes
    of every categorical attribute and of the present values of every numeric one, and
    whether some or all of its points miss a numeric attribute, and which categorical codes it
    holds (a bit per code below 63, one bit for the others): enough for a lower bound of the
    Gower distance (:func:`_mixed_bound`).
    Returns (perm, start, end, left, right, glo, ghi, nlo, nhi, nmiss, nall, clo, chi, cbit).
    """
    n, p = xn.shape
    q = xc.shape[1]
    cap = 4 * (n // max(1, leaf_size) + 1) + 1
    # node arrays as _ballsearch.build_tree's, allocated here again: numba takes no tree object, and
    # this tree keeps Gower bounds (groups, missing cells, categorical codes) besides the boxes
    start = np.empty(cap, dtype=np.int64)
    end = np.empty(cap, dtype=np.int64)
    left = np.full(cap, -1, dtype=np.int64)
    right = np.full(cap, -1, dtype=np.int64)
    glo = np.empty(cap, dtype=np.int64)
    ghi = np.empty(cap, dtype=np.int64)
    nlo = np.empty((cap, p))
    nhi = np.empty((cap, p))
    nmiss = np.zeros((cap, p), dtype=np.bool_)
    nall = np.zeros((cap, p), dtype=np.bool_)
    clo = np.empty((cap, q), dtype=np.int64)
    chi = np.empty((cap, q), dtype=np.int64)
    cbit = np.zeros((cap, q), dtype=np.uint64)
    # the originals sorted by group: a node's groups are then contiguous
    perm = np.argsort(gx, kind="mergesort").astype(np.int64)
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
        glo[k] = gx[perm[s]] if e > s else 0
        ghi[k] = gx[perm[e - 1]] if e > s else 0
        for a in range(q):
            mn = np.iinfo(np.int64).max
            mx = np.iinfo(np.int64).min
            bits = np.uint64(0)
            for t in range(s, e):
                v = xc[perm[t], a]
                mn = min(mn, v)
                mx = max(mx, v)
                bits |= np.uint64(1) << np.uint64(min(v, 63))
            clo[k, a] = mn
            chi[k, a] = mx
            cbit[k, a] = bits
        best = -1
        width = 0.0
        for a in range(p):
            fmin = np.inf
            fmax = -np.inf
            miss = 0
            for t in range(s, e):
                v = xn[perm[t], a]
                if v != v:
                    miss += 1
                else:
                    fmin = min(fmin, v)
                    fmax = max(fmax, v)
            nlo[k, a] = fmin
            nhi[k, a] = fmax
            nmiss[k, a] = miss > 0
            nall[k, a] = miss == e - s
            if miss < e - s and fmax - fmin > width:
                width = fmax - fmin
                best = a
        if e - s <= leaf_size:
            continue
        if ghi[k] > glo[k]:
            # split between groups, at the boundary nearest the middle
            mid = s + (e - s) // 2
            lo_b = mid
            while lo_b > s and gx[perm[lo_b - 1]] == gx[perm[lo_b]]:
                lo_b -= 1
            hi_b = mid
            while hi_b < e and gx[perm[hi_b - 1]] == gx[perm[hi_b]]:
                hi_b += 1
            mid = lo_b if (lo_b > s and (mid - lo_b <= hi_b - mid or hi_b >= e)) else hi_b
        else:
            if best < 0:
                continue  # one group of identical points: a leaf
            sort_range(perm, xn, s, e, best)
            mid = s + (e - s) // 2
        sp, n_nodes = add_children(k, s, mid, e, left, right, start, end, stack, sp, n_nodes)
    m = n_nodes
    return (perm, start[:m], end[:m], left[:m], right[:m], glo[:m], ghi[:m], nlo[:m], nhi[:m], nmiss[:m],
            nall[:m], clo[:m], chi[:m], cbit[:m])


@njit(cache=True, inline="always")
def _mixed_bound(zn: np.ndarray, zc: np.ndarray, gz: np.ndarray, i: int, k: int, glo: np.ndarray,
                 ghi: np.ndarray, nlo: np.ndarray, nhi: np.ndarray, nmiss: np.ndarray, nall: np.ndarray,
                 clo: np.ndarray, chi: np.ndarray, cbit: np.ndarray) -> float:
    """A lower bound of the Gower distance from z_i to any point of node k: the categorical
    codes outside the node's ranges plus the numeric distances to the node's box, and at least
    1 when the record's group is not among the node's."""
    d = 0.0
    for c in range(zc.shape[1]):
        v = zc[i, c]
        if v < clo[k, c] or v > chi[k, c] or (cbit[k, c] >> np.uint64(min(v, 63))) & np.uint64(1) == 0:
            d += 1.0
    for a in range(zn.shape[1]):
        u = zn[i, a]
        if u != u:
            if not nmiss[k, a]:
                d += 1.0  # every point has the value: each is at 1
        elif nall[k, a]:
            d += 1.0
        else:
            t = max(nlo[k, a] - u, 0.0) + max(u - nhi[k, a], 0.0)
            d += min(t, 1.0) if nmiss[k, a] else t
    g = gz[i]
    if d < 1.0 and (g < glo[k] or g > ghi[k]):
        d = 1.0  # another group: a categorical value or the missingness of a numeric one differs
    return d


@njit(cache=True, nogil=True)
def _mixed_search_one(
    zn: np.ndarray, zc: np.ndarray, gz: np.ndarray, i: int, d_own: float, own_j: int, mode: int, lim: float,
    xn: np.ndarray, xc: np.ndarray, tree: tuple, rel_tol: float, abs_tol: float, budget: int,
    st_node: np.ndarray, st_lb: np.ndarray, offset: int,
) -> tuple[int, float, int]:
    """One released record against one block of originals (its own original is ``own_j`` of
    the block, or −1 when it lies in another block).

    ``mode`` 1: is any original clearly nearer than d_own? Returns (0, ., .) when one is,
    (1, smallest candidate distance, .) when none is (candidates: originals other than the own
    within d_own·(1 + rel_tol) + abs_tol), and (−1, ., .) when the search passed ``budget``
    leaves. ``mode`` 2: how many originals other than the own lie within ``lim``, and the
    smallest of their indices (+ ``offset``): (count, ., min index) — count −1 over budget.
    """
    perm, start, end, left, right, glo, ghi, nlo, nhi, nmiss, nall, clo, chi, cbit = tree
    reach = d_own * (1.0 + rel_tol) + abs_tol if mode == 1 else lim
    prune = reach * (1.0 + 1e-9) + 1e-300  # bounds are lower bounds up to rounding
    st_node[0] = 0
    st_lb[0] = 0.0
    sp = 1
    leaves = 0
    best = np.inf
    count = 0
    first = np.iinfo(np.int64).max
    while sp > 0:
        sp -= 1
        k = st_node[sp]
        if st_lb[sp] > prune:
            continue
        if left[k] >= 0:
            dl = _mixed_bound(zn, zc, gz, i, left[k], glo, ghi, nlo, nhi, nmiss, nall, clo, chi, cbit)
            dr = _mixed_bound(zn, zc, gz, i, right[k], glo, ghi, nlo, nhi, nmiss, nall, clo, chi, cbit)
            sp = push_children(st_node, st_lb, sp, left[k], right[k], dl, dr, prune)
            continue
        leaves += 1
        if leaves > budget:
            return -1, best, 0
        for t in range(start[k], end[k]):
            j = perm[t]
            if j == own_j:
                continue
            d = _gower(zn, zc, xn, xc, i, j, reach)
            if d > reach:
                continue
            if mode == 1:
                if d_own > d * (1.0 + rel_tol) + abs_tol:
                    return 0, best, 0  # x_j is nearer than any tie of the own original could be
                best = min(best, d)
            else:
                count += 1
                first = min(first, j + offset)
    if mode == 1:
        return 1, best, 0
    return count, best, first


# The scan repeats the search's per-candidate test (distance, tie and first-index rules) rather than
# sharing a helper: it is the compiled inner loop of both, and the two must decide every record
# alike (the duplicates tool lists the pair).
@njit(cache=True, nogil=True)
def _mixed_scan_one(
    zn: np.ndarray, zc: np.ndarray, i: int, d_own: float, own_j: int, mode: int, lim: float,
    xn: np.ndarray, xc: np.ndarray, rel_tol: float, abs_tol: float, offset: int,
) -> tuple[int, float, int]:
    """:func:`_mixed_search_one` by a plain scan of the block (no budget).

    Its visit of a candidate repeats the search's leaf visit on purpose: it finishes searches
    that ran over their budget, and a compiled inline helper with the search's early return
    for mode 1 would cost the hot loop a status flag per candidate."""
    reach = d_own * (1.0 + rel_tol) + abs_tol if mode == 1 else lim
    best = np.inf
    count = 0
    first = np.iinfo(np.int64).max
    for j in range(xn.shape[0]):
        if j == own_j:
            continue
        d = _gower(zn, zc, xn, xc, i, j, reach)
        if d > reach:
            continue
        if mode == 1:
            if d_own > d * (1.0 + rel_tol) + abs_tol:
                return 0, best, 0
            best = min(best, d)
        else:
            count += 1
            first = min(first, j + offset)
    if mode == 1:
        return 1, best, 0
    return count, best, first


def mixed_block_search(
    zn: np.ndarray, zc: np.ndarray, gz: np.ndarray, rows: np.ndarray, d_own: np.ndarray, own_j: np.ndarray,
    mode: int,
    lim: np.ndarray, xn: np.ndarray, xc: np.ndarray, tree: tuple, rel_tol: float, abs_tol: float,
    budget: int, offset: int, n_chunks: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_mixed_search_one` for the released records ``rows`` against one block of originals
    (a search over budget is finished by a scan). Returns per row (status or count, smallest
    candidate distance, smallest index)."""
    nq = rows.shape[0]
    a = np.zeros(nq, dtype=np.int64)
    b = np.full(nq, np.inf)
    c = np.zeros(nq, dtype=np.int64)
    run_chunks(_mixed_block_search_chunk, nq, zn, zc, gz, rows, d_own, own_j, mode, lim, xn, xc, tree, rel_tol,
               abs_tol, budget, offset, a, b, c, chunks=n_chunks)
    return a, b, c


@njit(cache=True, nogil=True)
def _mixed_block_search_chunk(ch, start, stop, zn, zc, gz, rows, d_own, own_j, mode, lim, xn, xc, tree, rel_tol,
                              abs_tol, budget, offset, a, b, c):
    """Rows ``start:stop`` of :func:`mixed_block_search` (:func:`ppdm.parallel.run_chunks`)."""
    n_nodes = tree[1].shape[0]
    st_node = np.empty(n_nodes + 1, dtype=np.int64)
    st_lb = np.empty(n_nodes + 1)
    for r in range(start, stop):
        i = rows[r]
        s_, d_, f_ = _mixed_search_one(zn, zc, gz, i, d_own[r], own_j[r], mode, lim[r], xn, xc, tree,
                                       rel_tol, abs_tol, budget, st_node, st_lb, offset)
        if s_ < 0:
            s_, d_, f_ = _mixed_scan_one(zn, zc, i, d_own[r], own_j[r], mode, lim[r], xn, xc, rel_tol,
                                         abs_tol, offset)
        a[r] = s_
        b[r] = d_
        c[r] = f_


def own_distances(zn: np.ndarray, zc: np.ndarray, xn: np.ndarray, xc: np.ndarray) -> np.ndarray:
    """d(z_i, x_i) for paired rows, in the order of terms :func:`_gower` adds them."""
    return _own_distances(zn, zc, xn, xc)


def _own_distances(zn: np.ndarray, zc: np.ndarray, xn: np.ndarray, xc: np.ndarray) -> np.ndarray:
    out = np.empty(zn.shape[0])
    run_chunks(_own_distances_chunk, zn.shape[0], zn, zc, xn, xc, out)
    return out


@njit(cache=True, nogil=True)
def _own_distances_chunk(c, lo, hi, zn, zc, xn, xc, out):
    """Rows ``lo:hi`` of :func:`_own_distances` (:func:`ppdm.parallel.run_chunks`)."""
    for i in range(lo, hi):
        out[i] = _gower(zn, zc, xn, xc, i, i, np.inf)


def _group_columns(xn: np.ndarray, xc: np.ndarray) -> np.ndarray:
    """Per record: its categorical codes and which numeric attributes it misses."""
    return np.ascontiguousarray(np.concatenate([xc, np.isnan(xn).astype(np.int64)], axis=1))


def _unique_rows(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(a, axis=0, return_inverse=True)`` of an integer matrix: the distinct rows in
    lexicographic order and each row's number among them, by a lexsort of the columns (several
    times faster than the sort of whole rows np.unique does)."""
    order = np.lexsort(a.T[::-1])
    s = a[order]
    new = np.ones(len(a), dtype=bool)
    new[1:] = (s[1:] != s[:-1]).any(axis=1)
    inv = np.empty(len(a), dtype=np.int64)
    inv[order] = np.cumsum(new) - 1
    return s[new], inv


def _group_keys(xn: np.ndarray, xc: np.ndarray) -> pd.Series:
    """One hashable key per record: its categorical codes and which numeric attributes it misses."""
    return pd.Series([r.tobytes() for r in _group_columns(xn, xc)], dtype=object)


class _Block:
    """One block of originals with its k-d tree and the index of its groups."""

    def __init__(self, xn: np.ndarray, xc: np.ndarray, offset: int) -> None:
        self.xn, self.xc, self.offset = xn, xc, offset
        cols = _group_columns(xn, xc)
        if cols.shape[1] and len(cols):
            # groups numbered in lexicographic order of their values, the attribute with the most
            # values first: neighbouring groups share values, so a node's code sets stay small
            card = [len(np.unique(cols[:, j])) for j in range(cols.shape[1])]
            order = np.argsort(card, kind="stable")[::-1]
            uniq, gx = _unique_rows(cols[:, order])
            inv = np.empty_like(order)
            inv[order] = np.arange(len(order))
            uniq = np.ascontiguousarray(uniq[:, inv])
            self.groups = pd.Index([r.tobytes() for r in uniq], dtype=object)
            gx = np.asarray(gx, dtype=np.int64).ravel()
        else:
            gx = np.zeros(len(xn), np.int64)
            self.groups = pd.Index([np.zeros(0, np.int64).tobytes()], dtype=object)
        self.tree = build_mixed_tree(xn, xc, gx, LEAF_SIZE)
        self.budget = max(8, int(LEAF_BUDGET_FRACTION * len(xn) / LEAF_SIZE))

    def group_of(self, keys: pd.Series) -> np.ndarray:
        """The block's group number of released records (by their keys), −1 for a group it lacks."""
        return np.asarray(self.groups.get_indexer(keys), dtype=np.int64)


def link_against_blocks(
    zn: np.ndarray, zc: np.ndarray, rows: np.ndarray, d_own: np.ndarray, own_block: np.ndarray,
    own_j: np.ndarray, blocks: list[_Block] | Any, n_blocks: int, *, rel_tol: float = TIE_REL_TOL,
    abs_tol: float = TIE_ABS_TOL,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Links of the released records ``rows`` (own distance ``d_own``; own original ``own_j`` of
    block ``own_block``) against every block of originals. ``blocks`` is a list, or a function
    of a block number returning it (so a block can be read when needed, twice).

    Returns per row: whether the own original is among the nearest, |T| and min T (global
    indices) — the same links as a search of all originals at once, whatever the blocks.
    """
    get = blocks.__getitem__ if isinstance(blocks, list) else blocks
    n = len(rows)
    chunks = chunks_for(n)
    keys = _group_keys(zn[rows], zc[rows])
    alive = np.ones(n, dtype=bool)
    best = d_own.copy()
    for b in range(n_blocks):
        sel = np.flatnonzero(alive)
        if sel.size == 0:
            break
        blk = get(b)
        if len(blk.xn) == 0:
            continue
        gz = np.full(len(zn), -1, dtype=np.int64)
        gz[rows[sel]] = blk.group_of(keys.iloc[sel])
        oj = np.where(own_block[sel] == b, own_j[sel], -1)
        st, bd, _ = mixed_block_search(zn, zc, gz, rows[sel], d_own[sel], oj, 1, d_own[sel], blk.xn, blk.xc,
                                       blk.tree, rel_tol, abs_tol, blk.budget, blk.offset, chunks)
        alive[sel[st == 0]] = False
        ok = st == 1
        best[sel[ok]] = np.minimum(best[sel[ok]], bd[ok])
    count = np.zeros(n, dtype=np.int64)
    first = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    sel = np.flatnonzero(alive)
    if sel.size:
        lim = best[sel] * (1.0 + rel_tol) + abs_tol
        for b in range(n_blocks):
            blk = get(b)
            if len(blk.xn) == 0:
                continue
            gz = np.full(len(zn), -1, dtype=np.int64)
            gz[rows[sel]] = blk.group_of(keys.iloc[sel])
            oj = np.where(own_block[sel] == b, own_j[sel], -1)
            cnt, _, f = mixed_block_search(zn, zc, gz, rows[sel], d_own[sel], oj, 2, lim, blk.xn, blk.xc,
                                           blk.tree, rel_tol, abs_tol, blk.budget, blk.offset, chunks)
            count[sel] += cnt
            first[sel] = np.minimum(first[sel], f)
    return alive, count, first
