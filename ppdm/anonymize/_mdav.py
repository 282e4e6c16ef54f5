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

The two MDAV kernels live in :mod:`ppdm.anonymize._mdav_reference` and
:mod:`ppdm.anonymize._mdav_fast`; this module re-exports them and chooses between them.
"""

from __future__ import annotations

import itertools

import numpy as np
from numba import njit

from ppdm.anonymize._mdav_fast import (  # noqa: F401  (re-exported: the public path stays this module)
    LEAF_SIZE,
    TREE_RETRY_ROUNDS,
    TREE_WORK_LIMIT,
    _anchor,
    _box_far,
    _box_near,
    _dist,
    _dist_col,
    _insert,
    _kd_build,
    _leaf_box,
    _radial_compact,
    _scan,
    _tree_farthest,
    _tree_nearest,
    _tree_remove,
    mdav_fast,
    sort_along,
)
from ppdm.anonymize._mdav_reference import (  # noqa: F401  (re-exported: the public path stays this module)
    _before,
    _compact,
    _dist_pass,
    mdav_reference,
)

#: below this many records full passes are quicker than building the search structures
FAST_KERNEL_MIN_ROWS = 5_000
#: key layout of the out-of-core ordering: cell number above, row position below
POSITION_BITS = 40


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
        sort_along(X, perm, s, e, ax, vals)
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
# The stack walk of median splits repeats kd_blocks' (and the fast kernel's kd-tree build) in
# shape: each is a compiled loop that records different arrays per node (threshold cells here,
# blocks there), and numba cannot share a loop body across them (the duplicates tool lists them).
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
        sort_along(X, perm, s, e, ax, vals)
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
        # children numbered as _mdav_fast._kd_build's; written out: each compiled tree keeps other node arrays
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
