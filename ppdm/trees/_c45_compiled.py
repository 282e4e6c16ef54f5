"""C4.5 growing, collapsing and pruning in compiled code, for rows without unknown values.

The same algorithm as :mod:`ppdm.trees._c45_tree` (J48 3.6: C45ModelSelection, collapse,
error-based pruning with subtree raising), on a flat tree. Without unknown values every
row reaches exactly one child of a test, so the rows of a node are one contiguous range
of a permutation of the training rows, and a node's children's ranges are a stable
partition of its own range. Growing partitions ranges in place, and so does subtree
raising when it sends a node's rows through its new subtree; nothing is allocated per
node. Node ids are given in pre-order (a node before its subtree, children left to
right), so summing leaf estimates in id order is the recursive order of J48.

Rows with an unknown value of some attribute take the interpreted path, where a row can
reach several children with fractional weights.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ppdm.trees._c45_kernels import (
    SMALL,
    _add_errs,
    _scan_numeric,
    choose_test,
    node_class_weights,
    nominal_criteria,
    route_estimate,
    scan_numeric_unit,
)


@njit(cache=True)
def _errors(dist: np.ndarray) -> tuple[float, float]:
    # total weight and training errors (total − largest class, J48's 1e-6 tolerance)
    best = 0.0
    total = 0.0
    for c in range(dist.shape[0]):
        v = dist[c]
        total += v
        if v > best + SMALL:
            best = v
    return total, total - best


@njit(cache=True)
def _estimated(dist: np.ndarray, cf: float, z: float) -> float:
    total, e = _errors(dist)
    if abs(total) < SMALL:
        return 0.0
    return e + _add_errs(total, e, cf, z)


@njit(cache=True)
def _max_bag(bag: np.ndarray) -> int:
    # heaviest branch, ties to the last one (J48 Distribution.maxBag)
    best = 0.0
    idx = -1
    for j in range(bag.shape[0]):
        s = 0.0
        for c in range(bag.shape[1]):
            s += bag[j, c]
        if s > best - SMALL:
            best = s
            idx = j
    return idx


@njit(cache=True)
def _branch(XT, r, attr, thr, nominal) -> int:
    v = XT[attr, r]
    if nominal:
        return int(v)
    return 0 if v <= thr else 1


@njit(cache=True)
def _class_dist(y, perm, wperm, s, e, out):
    out[:] = 0.0
    for i in range(s, e):
        out[y[perm[i]]] += wperm[i]


@njit(cache=True)
def _split_range(XT, y, perm, wperm, s, e, attr, thr, nominal, nb, bag, starts, tmp_r, tmp_w, br):
    """Stable in-place partition of ``perm[s:e]`` by branch; fills ``bag`` (branch × class
    weights) and ``starts`` (nb + 1 range bounds). ``br`` (as long as ``perm``) receives each
    position's branch."""
    bag[:, :] = 0.0
    counts = np.zeros(nb, dtype=np.int64)
    for i in range(s, e):
        b = _branch(XT, perm[i], attr, thr, nominal)
        br[i] = b
        counts[b] += 1
        bag[b, y[perm[i]]] += wperm[i]
    starts[0] = s
    for j in range(nb):
        starts[j + 1] = starts[j] + counts[j]
    _partition_pair(perm, wperm, s, e, br, np.empty(nb, dtype=np.int64), starts[:nb + 1], tmp_r, tmp_w)


@njit(cache=True)
def _split_sorted(srt, sval, scls, sw, s, e, starts, brow, tmp_r, tmp_w, bq):
    """Stable partition of every attribute's sorted lists (rows, values, classes, weights)
    over ``[s, e)`` into the branches' ranges (``starts``; each row's branch in ``brow``);
    each stays sorted."""
    nb = starts.shape[0] - 1
    pos = np.empty(nb, dtype=np.int64)
    for q in range(srt.shape[0]):
        for i in range(s, e):
            bq[i] = brow[srt[q, i]]
        _partition_pair(srt[q], sval[q], s, e, bq, pos, starts, tmp_r, tmp_w)
        _partition_pair(scls[q], sw[q], s, e, bq, pos, starts, tmp_r, tmp_w)


@njit(cache=True, inline="always")
def _partition_pair(a, b, s, e, bq, pos, starts, tmp_a, tmp_b):
    """Stable partition of ``a[s:e]`` and ``b[s:e]`` alike over the branches' ranges (each
    row's branch in ``bq``), through the buffers ``tmp_a``/``tmp_b``."""
    nb = starts.shape[0] - 1
    pos[:] = starts[:nb]
    for i in range(s, e):
        br = bq[i]
        tmp_a[pos[br]] = a[i]
        tmp_b[pos[br]] = b[i]
        pos[br] += 1
    for i in range(s, e):
        a[i] = tmp_a[i]
        b[i] = tmp_b[i]


@njit(cache=True)
def select_split_fast(y, rows, w, is_nom, nvals, in_avg, n_classes, min_obj, use_mdl, allowed, nomc, nom_pos,
                      sval, scls, sw, num_pos, bags3, tab, unit):
    """C4.5's choice of test at a node (as :func:`ppdm.trees._c45_kernels.select_split`)
    from the compiled builder's layout: categorical codes row by row in ``nomc`` (tallied
    for every categorical attribute in one pass over the rows), each numeric attribute's
    values, classes and weights in sorted order (``sval[q]``, ``scls[q]``, ``sw[q]``)."""
    m = is_nom.shape[0]
    class_w, total_w, stop = node_class_weights(y, rows, w, n_classes, min_obj)
    if stop:
        return -1, 0.0
    n_nom = nomc.shape[1]
    bags3[:n_nom] = 0.0
    for i in range(rows.shape[0]):
        r = rows[i]
        c = y[r]
        wi = w[i]
        for j in range(n_nom):
            bags3[j, nomc[r, j], c] += wi
    # the choice loop of _c45_kernels._select, repeated for this layout: numba takes no closure
    valid = np.zeros(m, dtype=np.bool_)
    gains = np.zeros(m)
    ratios = np.zeros(m)
    thrs = np.zeros(m)
    avg = 0.0
    n_valid = 0
    for a in range(m):
        if not allowed[a]:
            continue
        if is_nom[a]:
            ok, ig, gr = nominal_criteria(bags3[nom_pos[a], :nvals[a]], total_w, min_obj, tab)
            t = 0.0
        else:
            q = num_pos[a]
            if unit:
                ok, ig, gr, t = scan_numeric_unit(sval[q], scls[q], n_classes, total_w, min_obj, use_mdl, tab)
            else:
                ok, ig, gr, t = _scan_numeric(sval[q], scls[q], sw[q], n_classes, total_w, min_obj, use_mdl, tab)
        if ok:
            valid[a] = True
            gains[a] = ig
            ratios[a] = gr
            thrs[a] = t
            if in_avg[a]:
                avg += ig
                n_valid += 1
    best = choose_test(valid, gains, ratios, avg, n_valid)
    if best < 0:
        return -1, 0.0
    return best, thrs[best]


@njit(cache=True)
def _grow_1d(a, need):
    if need <= a.shape[0]:
        return a
    out = np.empty(max(need, 2 * a.shape[0]), dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


@njit(cache=True)
def _grow_2d(a, need):
    if need <= a.shape[0]:
        return a
    out = np.empty((max(need, 2 * a.shape[0]), a.shape[1]), dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


@njit(cache=True)
def _relocate(XT, all_rows, attr, t, tol, uniq, uniq_ptr, done):
    """Largest value of ``attr`` over ``all_rows`` that is ≤ t + tol (J48 setSplitPoint);
    the sorted distinct values are computed once per attribute."""
    if not done[attr]:
        v = np.empty(all_rows.shape[0])
        k = 0
        for i in range(all_rows.shape[0]):
            x = XT[attr, all_rows[i]]
            if x == x:
                v[k] = x
                k += 1
        u = np.unique(v[:k])
        uniq[attr, : u.shape[0]] = u
        uniq_ptr[attr] = u.shape[0]
        done[attr] = True
    n = uniq_ptr[attr]
    i = np.searchsorted(uniq[attr, :n], t + tol, side="right") - 1
    if i >= 0:
        return uniq[attr, i]
    return t


@njit(cache=True, nogil=True)
def grow(XT, y, perm, wperm, is_nom, nvals, in_avg, n_classes, min_obj, use_mdl, allowed, all_rows,
         relocate, relocate_tol, srt, num_pos, nomc, nom_pos, tab_all, all_is_rows):
    """Grow the full tree over the rows ``perm`` (weights ``wperm``, both reordered in place).
    ``XT`` is the encoded table transposed, attributes × rows (:attr:`Data.XT`).

    ``srt[num_pos[a]]`` lists the rows of ``perm`` sorted by numeric attribute a; with their
    values, classes and weights these lists are partitioned along with the rows, so no node
    sorts anything. ``nomc`` holds the codes of the categorical attributes row by row
    (``nomc[r, nom_pos[a]]``). ``tab_all`` is an :func:`xlogx_table` of at least as many
    rows (used with unit weights); ``all_is_rows`` says that J48's "all data", where
    thresholds are moved to, is ``perm`` itself, whose sorted values are then at hand.

    Returns the flat tree: per node (pre-order ids) the tested attribute (−1 for a leaf),
    threshold, whether the test is categorical, the slice of ``kids`` holding its children,
    its class distribution, the row of ``bags`` where its branch × class weights start,
    whether it is empty, and its range of ``perm``."""
    C = n_classes
    n = perm.shape[0]
    m = XT.shape[0]
    cap = 64
    attr = np.full(cap, -1, dtype=np.int64)
    thr = np.full(cap, np.nan)
    nominal = np.zeros(cap, dtype=np.bool_)
    kid_start = np.zeros(cap, dtype=np.int64)
    n_kids = np.zeros(cap, dtype=np.int64)
    dist = np.zeros((cap, C))
    bag_off = np.full(cap, -1, dtype=np.int64)
    empty = np.zeros(cap, dtype=np.bool_)
    rs = np.zeros(cap, dtype=np.int64)
    re = np.zeros(cap, dtype=np.int64)
    kids = np.empty(64, dtype=np.int64)
    n_kid_slots = 0
    bags = np.empty((64, C))
    n_bag_rows = 0
    tmp_r = np.empty(n, dtype=np.int64)
    tmp_w = np.empty(n)
    br = np.empty(n, dtype=np.int64)
    brow = np.empty(XT.shape[1], dtype=np.int64)
    # with whole weights every class count is a whole number: c·log2(c) from a table
    whole = True
    for i in range(n):
        if wperm[i] != 1.0:
            whole = False
            break
    tab = tab_all if whole else tab_all[:0]
    # the sorted lists' values, classes and weights, read in order by the split search
    wrow = np.zeros(XT.shape[1])
    for i in range(n):
        wrow[perm[i]] = wperm[i]
    n_num = srt.shape[0]
    sval = np.empty((n_num, n))
    scls = np.empty((n_num, n), dtype=np.int64)
    sw = np.empty((n_num, n))
    for a in range(m):
        q = num_pos[a]
        if q < 0:
            continue
        for i in range(n):
            r = srt[q, i]
            sval[q, i] = XT[a, r]
            scls[q, i] = y[r]
            sw[q, i] = wrow[r]
    bq = np.empty(n, dtype=np.int64)
    max_vals = 1
    for a in range(m):
        if is_nom[a] and nvals[a] > max_vals:
            max_vals = nvals[a]
    starts = np.empty(max(max_vals, 2) + 1, dtype=np.int64)
    bags3 = np.zeros((max(nomc.shape[1], 1), max_vals, C))
    uniq = np.empty((m, all_rows.shape[0]))
    uniq_ptr = np.zeros(m, dtype=np.int64)
    done = np.zeros(m, dtype=np.bool_)
    if all_is_rows:
        # the distinct values J48 moves thresholds to, read off the sorted lists before
        # growing reorders them
        for a in range(m):
            q = num_pos[a]
            if q < 0:
                continue
            k = 0
            for i in range(n):
                v = sval[q, i]
                if k == 0 or v != uniq[a, k - 1]:
                    uniq[a, k] = v
                    k += 1
            uniq_ptr[a] = k
            done[a] = True
    # pending nodes: (parent kid slot, range start, range end, dist row in pend_dist)
    p_slot = np.empty(64, dtype=np.int64)
    p_s = np.empty(64, dtype=np.int64)
    p_e = np.empty(64, dtype=np.int64)
    p_dist = np.empty((64, C))
    top = 0
    p_slot[0] = -1
    p_s[0] = 0
    p_e[0] = n
    _class_dist(y, perm, wperm, 0, n, p_dist[0])
    top = 1
    n_nodes = 0
    bag = np.empty((max(max_vals, 2), C))
    while top > 0:
        top -= 1
        node = n_nodes
        n_nodes += 1
        if node >= attr.shape[0]:
            need = node + 1
            attr = _grow_1d(attr, need)
            thr = _grow_1d(thr, need)
            nominal = _grow_1d(nominal, need)
            kid_start = _grow_1d(kid_start, need)
            n_kids = _grow_1d(n_kids, need)
            dist = _grow_2d(dist, need)
            bag_off = _grow_1d(bag_off, need)
            empty = _grow_1d(empty, need)
            rs = _grow_1d(rs, need)
            re = _grow_1d(re, need)
        attr[node] = -1
        thr[node] = np.nan
        nominal[node] = False
        n_kids[node] = 0
        kid_start[node] = 0
        bag_off[node] = -1
        empty[node] = False
        s = p_s[top]
        e = p_e[top]
        rs[node] = s
        re[node] = e
        dist[node] = p_dist[top]
        if p_slot[top] >= 0:
            kids[p_slot[top]] = node
        total = 0.0
        for c in range(C):
            total += dist[node, c]
        if e == s or abs(total) < SMALL:
            empty[node] = abs(total) < SMALL
            continue
        a, t = select_split_fast(y, perm[s:e], wperm[s:e], is_nom, nvals, in_avg, C, min_obj, use_mdl, allowed,
                                 nomc, nom_pos, sval[:, s:e], scls[:, s:e], sw[:, s:e], num_pos, bags3, tab, whole)
        if a < 0:
            continue
        attr[node] = a
        nominal[node] = is_nom[a]
        if not is_nom[a]:
            thr[node] = _relocate(XT, all_rows, a, t, relocate_tol, uniq, uniq_ptr, done) if relocate else t
        nb = nvals[a] if is_nom[a] else 2
        _split_range(XT, y, perm, wperm, s, e, a, thr[node], is_nom[a], nb, bag, starts, tmp_r, tmp_w, br)
        for j in range(nb):  # each row's branch, read off the children's ranges
            for i in range(starts[j], starts[j + 1]):
                brow[perm[i]] = j
        _split_sorted(srt, sval, scls, sw, s, e, starts[:nb + 1], brow, tmp_r, tmp_w, bq)
        bags = _grow_2d(bags, n_bag_rows + nb)
        bags[n_bag_rows:n_bag_rows + nb] = bag[:nb]
        bag_off[node] = n_bag_rows
        n_bag_rows += nb
        kids = _grow_1d(kids, n_kid_slots + nb)
        kid_start[node] = n_kid_slots
        n_kids[node] = nb
        # children are pushed last-first so that the first child is taken next (pre-order)
        need = top + nb
        if need > p_slot.shape[0]:
            p_slot = _grow_1d(p_slot, need)
            p_s = _grow_1d(p_s, need)
            p_e = _grow_1d(p_e, need)
            p_dist = _grow_2d(p_dist, need)
        for j in range(nb - 1, -1, -1):
            p_slot[top] = n_kid_slots + j
            p_s[top] = starts[j]
            p_e[top] = starts[j + 1]
            p_dist[top] = bag[j]
            top += 1
        n_kid_slots += nb
    return (attr[:n_nodes], thr[:n_nodes], nominal[:n_nodes], kid_start[:n_nodes], n_kids[:n_nodes],
            kids[:n_kid_slots], dist[:n_nodes], bag_off[:n_nodes], bags[:n_bag_rows], empty[:n_nodes],
            rs[:n_nodes], re[:n_nodes])


@njit(cache=True, nogil=True)
def collapse(attr, kid_start, n_kids, kids, dist):
    """Make a leaf of every subtree whose leaves make no fewer training errors than the
    node itself (J48 ``collapse``), deciding top-down on the grown tree."""
    n = attr.shape[0]
    errs = np.zeros(n)
    for i in range(n - 1, -1, -1):  # children have larger (pre-order) ids than their parent
        if n_kids[i] == 0:
            errs[i] = _errors(dist[i])[1]
        else:
            s = 0.0
            for k in range(n_kids[i]):
                s += errs[kids[kid_start[i] + k]]
            errs[i] = s
    stack = np.empty(n, dtype=np.int64)
    stack[0] = 0
    top = 1
    while top > 0:
        top -= 1
        i = stack[top]
        if n_kids[i] == 0:
            continue
        if errs[i] >= _errors(dist[i])[1] - 1e-3:
            n_kids[i] = 0
            attr[i] = -1
        else:
            for k in range(n_kids[i]):
                stack[top] = kids[kid_start[i] + k]
                top += 1


@njit(cache=True)
def _redistribute(XT, y, perm, wperm, node, attr, thr, nominal, kid_start, n_kids, kids, dist, bag_off, bags,
                  empty, rs, re, bag, starts, tmp_r, tmp_w, br):
    """Send the rows of ``node``'s range through its subtree, re-partitioning the range and
    recomputing distributions (J48 ``newDistribution``)."""
    _class_dist(y, perm, wperm, rs[node], re[node], dist[node])
    if n_kids[node] == 0:
        total = 0.0
        for c in range(dist.shape[1]):
            total += dist[node, c]
        if abs(total) >= SMALL:
            empty[node] = False
        return
    nb = n_kids[node]
    _split_range(XT, y, perm, wperm, rs[node], re[node], attr[node], thr[node], nominal[node], nb, bag, starts,
                 tmp_r, tmp_w, br)
    off = bag_off[node]
    bags[off:off + nb] = bag[:nb]
    bounds = starts[:nb + 1].copy()
    for j in range(nb):
        k = kids[kid_start[node] + j]
        rs[k] = bounds[j]
        re[k] = bounds[j + 1]
        _redistribute(XT, y, perm, wperm, k, attr, thr, nominal, kid_start, n_kids, kids, dist, bag_off, bags,
                      empty, rs, re, bag, starts, tmp_r, tmp_w, br)


@njit(cache=True, nogil=True)
def prune(XT, y, perm, wperm, node, attr, thr, nominal, kid_start, n_kids, kids, dist, bag_off, bags, empty, rs, re,
          raising, cf, z, acc, bag, starts, tmp_r, tmp_w, br, is_leaf):
    """Prune the subtree at ``node`` (J48 ``C45PruneableClassifierTree.prune``); return its
    estimated errors. ``is_leaf`` mirrors ``n_kids == 0`` for :func:`route_estimate`."""
    if n_kids[node] == 0:
        return _estimated(dist[node], cf, z)
    while True:
        e_tree = 0.0
        for k in range(n_kids[node]):
            e_tree += prune(XT, y, perm, wperm, kids[kid_start[node] + k], attr, thr, nominal, kid_start, n_kids,
                            kids, dist, bag_off, bags, empty, rs, re, raising, cf, z, acc, bag, starts, tmp_r,
                            tmp_w, br, is_leaf)
        off = bag_off[node]
        largest = _max_bag(bags[off:off + n_kids[node]])
        child = kids[kid_start[node] + largest]
        if raising:
            e_branch = route_estimate(XT, y, perm[rs[node]:re[node]], wperm[rs[node]:re[node]], child, attr, thr,
                                      nominal, is_leaf, kid_start, kids, acc, cf, z)
        else:
            e_branch = np.inf
        e_leaf = _estimated(dist[node], cf, z)
        if e_leaf <= e_tree + 0.1 + SMALL and e_leaf <= e_branch + 0.1 + SMALL:
            n_kids[node] = 0
            attr[node] = -1
            is_leaf[node] = True
            return e_leaf
        if e_branch <= e_tree + 0.1 + SMALL:
            # the node takes over its heaviest child's test and children
            attr[node] = attr[child]
            thr[node] = thr[child]
            nominal[node] = nominal[child]
            kid_start[node] = kid_start[child]
            n_kids[node] = n_kids[child]
            bag_off[node] = bag_off[child]
            is_leaf[node] = is_leaf[child]
            _redistribute(XT, y, perm, wperm, node, attr, thr, nominal, kid_start, n_kids, kids, dist, bag_off, bags,
                          empty, rs, re, bag, starts, tmp_r, tmp_w, br)
            if n_kids[node] == 0:
                return _estimated(dist[node], cf, z)
            continue
        return e_tree
