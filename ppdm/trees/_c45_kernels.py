"""Compiled inner loops of C4.5 (Quinlan 1993; release 8 numeric handling, Quinlan 1996).

The split search at a node is the hot spot of tree growing: for every attribute it
either tallies a (value × class) table (categorical attributes, multiway split) or sorts
the known values and scans every cut point with cumulative class weights (numeric
attributes, binary split). One call evaluates all attributes of one node and applies
C4.5's selection rule (gain ratio among the attributes whose gain is at least average),
so the Python side only partitions rows.

Arithmetic follows J48 (Weka 3.6) step for step, including its 1e-6 comparison
tolerances, so that trees agree with J48's on ties and near-ties:
``x log2 x`` terms below 1e-6 are zero, gains are computed from the unnormalised
entropy sums and normalised last.
"""

from __future__ import annotations

import numpy as np
from numba import njit

SMALL = 1e-6
LOG2 = np.log(2.0)


@njit(cache=True)
def _logf(x: float, tab: np.ndarray) -> float:
    # n·log2(n), with J48's cut-off for tiny weights; ``tab`` (see xlogx_table) holds the
    # values for whole counts, computed by this same expression (always an array, empty for
    # none: an optional argument would compile a version for each of omitted, None and array)
    if x < SMALL:
        return 0.0
    i = int(x)
    if i == x and i < tab.shape[0]:  # an empty table: none
        return tab[i]
    return x * np.log(x) / LOG2


@njit(cache=True)
def xlogx_table(n: int) -> np.ndarray:
    """c·log2(c) for the whole counts c = 0..n, bit for bit what :func:`_logf` computes."""
    out = np.zeros(n + 1)
    for c in range(1, n + 1):
        out[c] = _logf(float(c), out[:0])
    return out


@njit(cache=True)
def old_ent(class_w: np.ndarray, tab) -> float:
    """Unnormalised entropy of the known rows: logf(K) − Σ_c logf(n_c)."""
    s = 0.0
    tot = 0.0
    for c in range(class_w.shape[0]):
        s += _logf(class_w[c], tab)
        tot += class_w[c]
    return _logf(tot, tab) - s


@njit(cache=True)
def new_ent(bags: np.ndarray, tab) -> float:
    """Unnormalised weighted entropy after the split: Σ_b [logf(w_b) − Σ_c logf(n_bc)]."""
    s = 0.0
    for b in range(bags.shape[0]):
        tot = 0.0
        for c in range(bags.shape[1]):
            s += _logf(bags[b, c], tab)
            tot += bags[b, c]
        s -= _logf(tot, tab)
    return -s


@njit(cache=True)
def info_gain(bags: np.ndarray, total_w: float, oldent: float, tab) -> float:
    """C4.5 information gain of a split (known rows only, scaled by the known fraction).

    ``total_w`` is the node weight W including rows whose value is unknown."""
    known = bags.sum()
    if known <= 0.0:
        return 0.0
    unknown_rate = (total_w - known) / total_w
    num = (1.0 - unknown_rate) * (oldent - new_ent(bags, tab))
    if abs(num) < SMALL:
        return 0.0
    return num / known


@njit(cache=True)
def gain_ratio(bags: np.ndarray, total_w: float, gain: float, tab) -> float:
    """Gain ratio: gain / split information, the unknown rows counting as one more bag."""
    known = bags.sum()
    if known <= SMALL:
        return 0.0
    s = 0.0
    for b in range(bags.shape[0]):
        tot = 0.0
        for c in range(bags.shape[1]):
            tot += bags[b, c]
        s -= _logf(tot, tab)
    s -= _logf(total_w - known, tab)
    s += _logf(total_w, tab)
    if abs(s) < SMALL:
        return 0.0
    return gain / (s / total_w)


@njit(cache=True)
def _eval_nominal(col, y, rows, w, nval, n_classes, total_w, min_obj, tab):
    bags = np.zeros((nval, n_classes))
    for i in range(rows.shape[0]):
        v = col[rows[i]]
        if v == v:  # not NaN
            bags[int(v), y[rows[i]]] += w[i]
    return nominal_criteria(bags, total_w, min_obj, tab)


@njit(cache=True)
def nominal_criteria(bags, total_w, min_obj, tab):
    """(admissible, gain, gain ratio) of a multiway split with value × class weights ``bags``."""
    nval = bags.shape[0]
    # admissible only if at least two bags hold >= M weight (Distribution.check)
    big = 0
    for b in range(nval):
        if bags[b].sum() > min_obj - SMALL:
            big += 1
    if big < 2:
        return False, 0.0, 0.0
    class_w = bags.sum(axis=0)
    ig = info_gain(bags, total_w, old_ent(class_w, tab), tab)
    gr = gain_ratio(bags, total_w, ig, tab)
    return True, ig, gr


@njit(cache=True)
def _eval_numeric(col, y, rows, w, n_classes, total_w, min_obj, use_mdl):
    """Best binary cut of one numeric attribute (C4.5 release 8).

    Returns (valid, gain, gain_ratio, threshold)."""
    n = rows.shape[0]
    vals = np.empty(n)
    cls = np.empty(n, dtype=np.int64)
    wts = np.empty(n)
    k = 0
    for i in range(n):
        v = col[rows[i]]
        if v == v:
            vals[k] = v
            cls[k] = y[rows[i]]
            wts[k] = w[i]
            k += 1
    vals = vals[:k]
    cls = cls[:k]
    wts = wts[:k]
    order = np.argsort(vals, kind="mergesort")
    return _scan_numeric(vals[order], cls[order], wts[order], n_classes, total_w, min_obj, use_mdl, np.zeros(0))


@njit(cache=True)
def _eval_numeric_sorted(col, y, srows, wrow, n_classes, total_w, min_obj, use_mdl, tab):
    """:func:`_eval_numeric` for rows already sorted by the attribute (no unknown values);
    ``wrow`` holds the weight of every row of the table."""
    k = srows.shape[0]
    vals = np.empty(k)
    cls = np.empty(k, dtype=np.int64)
    wts = np.empty(k)
    for i in range(k):
        r = srows[i]
        vals[i] = col[r]
        cls[i] = y[r]
        wts[i] = wrow[r]
    return _scan_numeric(vals, cls, wts, n_classes, total_w, min_obj, use_mdl, tab)


@njit(cache=True, inline="always")
def _min_split(known_w: float, n_classes: int, min_obj: float) -> float:
    """J48's least weight on each side of a numeric cut: a tenth of the known weight per class,
    between ``min_obj`` and 25 (shared by both numeric scans)."""
    min_split = 0.1 * known_w / n_classes
    if min_split <= min_obj + SMALL:
        min_split = min_obj
    elif min_split > 25.0 + SMALL:
        min_split = 25.0
    return min_split


@njit(cache=True, inline="always")
def _best_cut(vals, split_index, best_gain, tries, total_w, use_mdl):
    """The best cut of a numeric scan: whether there is one, its gain after the MDL correction
    for choosing among ``tries`` cut points, and its threshold (the midpoint of the values on
    either side, or the lower one when the midpoint rounds up to the upper; shared by both scans)."""
    if tries == 0:
        return False, 0.0, 0.0
    if use_mdl:
        best_gain = best_gain - np.log(tries) / LOG2 / total_w
    if best_gain <= SMALL or split_index < 0:
        return False, 0.0, 0.0
    thr = (vals[split_index + 1] + vals[split_index]) / 2.0
    if thr == vals[split_index + 1]:
        thr = vals[split_index]
    return True, best_gain, thr


@njit(cache=True, inline="always")
def node_class_weights(y, rows, w, n_classes, min_obj):
    """The class weights of a node's rows, their total, and whether the node is too small or
    pure to split (J48's stopping rule; shared by the interpreted and the compiled builders)."""
    class_w = np.zeros(n_classes)
    for i in range(rows.shape[0]):
        class_w[y[rows[i]]] += w[i]
    total_w = class_w.sum()
    best_c = 0.0
    for c in range(n_classes):
        if class_w[c] > best_c + SMALL:
            best_c = class_w[c]
    stop = total_w < 2.0 * min_obj - SMALL or abs(total_w - best_c) < SMALL
    return class_w, total_w, stop


@njit(cache=True, inline="always")
def choose_test(valid, gains, ratios, gain_sum, n_valid):
    """C4.5's selection rule: among the valid tests whose gain is at least the average gain of
    those counted in ``gain_sum``/``n_valid`` (J48's 1e-3 slack), the first of largest gain
    ratio; −1 when there is none (shared by the interpreted and the compiled builders)."""
    if n_valid == 0:
        return -1
    avg = gain_sum / n_valid
    best = -1
    best_gr = 0.0
    for a in range(valid.shape[0]):
        if valid[a] and gains[a] >= avg - 1e-3 and ratios[a] > best_gr + SMALL:
            best = a
            best_gr = ratios[a]
    if best < 0 or abs(best_gr) < SMALL:
        return -1
    return best


@njit(cache=True)
def _scan_numeric(vals, cls, wts, n_classes, total_w, min_obj, use_mdl, tab):
    """Scan the cut points of known values sorted ascending (C4.5 release 8, J48 C45Split)."""
    k = vals.shape[0]
    bags = np.zeros((2, n_classes))
    for i in range(k):
        bags[1, cls[i]] += wts[i]
    known_w = bags[1].sum()
    min_split = _min_split(known_w, n_classes, min_obj)
    # enough known rows? (J48 compares the row count, not the weight)
    if k < 2.0 * min_split - SMALL:
        return False, 0.0, 0.0, 0.0
    oldent = old_ent(bags[1], tab)
    best_gain = 0.0
    split_index = -1
    tries = 0
    last = 0
    left_w = 0.0
    right_w = known_w
    # scan_numeric_unit repeats this threshold loop over integer counts: a specialised inner loop
    for nxt in range(1, k):
        if vals[nxt - 1] + 1e-5 < vals[nxt]:
            for j in range(last, nxt):
                bags[0, cls[j]] += wts[j]
                bags[1, cls[j]] -= wts[j]
                left_w += wts[j]
                right_w -= wts[j]
            if left_w > min_split - SMALL and right_w > min_split - SMALL:
                g = info_gain(bags, total_w, oldent, tab)
                if g > best_gain + SMALL:
                    best_gain = g
                    split_index = nxt - 1
                tries += 1
            last = nxt
    ok, best_gain, thr = _best_cut(vals, split_index, best_gain, tries, total_w, use_mdl)
    if not ok:
        return False, 0.0, 0.0, 0.0
    bags[:, :] = 0.0
    for i in range(k):
        if i <= split_index:
            bags[0, cls[i]] += wts[i]
        else:
            bags[1, cls[i]] += wts[i]
    gr = gain_ratio(bags, total_w, best_gain, tab)
    return True, best_gain, gr, thr


@njit(cache=True)
def scan_numeric_unit(vals, cls, n_classes, total_w, min_obj, use_mdl, tab):
    """:func:`_scan_numeric` for rows of weight 1 (whole counts), ``tab`` =
    :func:`xlogx_table` of at least the row count. Every gain is the same sum of the same
    table values in the same order as there, so the results are bit for bit equal; only
    the per-value checks of :func:`_logf` are saved."""
    k = vals.shape[0]
    C = n_classes
    cnt = np.zeros((2, C), dtype=np.int64)
    for i in range(k):
        cnt[1, cls[i]] += 1
    known_w = float(k)
    min_split = _min_split(known_w, n_classes, min_obj)
    if k < 2.0 * min_split - SMALL:
        return False, 0.0, 0.0, 0.0
    s0 = 0.0
    t0 = 0
    for c in range(C):
        s0 += tab[cnt[1, c]]
        t0 += cnt[1, c]
    oldent = tab[t0] - s0
    unknown_rate = (total_w - known_w) / total_w
    best_gain = 0.0
    split_index = -1
    tries = 0
    last = 0
    left = 0
    # _scan_numeric's threshold loop over whole counts, kept apart: a specialised inner loop (numba)
    for nxt in range(1, k):
        if vals[nxt - 1] + 1e-5 < vals[nxt]:
            for j in range(last, nxt):
                cnt[0, cls[j]] += 1
                cnt[1, cls[j]] -= 1
            left += nxt - last
            if left > min_split - SMALL and k - left > min_split - SMALL:
                s = 0.0
                for b in range(2):
                    tot = 0
                    for c in range(C):
                        s += tab[cnt[b, c]]
                        tot += cnt[b, c]
                    s -= tab[tot]
                num = (1.0 - unknown_rate) * (oldent - (-s))
                g = 0.0 if abs(num) < SMALL else num / known_w
                if g > best_gain + SMALL:
                    best_gain = g
                    split_index = nxt - 1
                tries += 1
            last = nxt
    ok, best_gain, thr = _best_cut(vals, split_index, best_gain, tries, total_w, use_mdl)
    if not ok:
        return False, 0.0, 0.0, 0.0
    bags = np.zeros((2, C))
    for i in range(k):
        if i <= split_index:
            bags[0, cls[i]] += 1.0
        else:
            bags[1, cls[i]] += 1.0
    gr = gain_ratio(bags, total_w, best_gain, tab)
    return True, best_gain, gr, thr


@njit(cache=True)
def select_split(XT, y, rows, w, is_nom, nvals, in_avg, n_classes, min_obj, use_mdl, allowed):
    """C4.5's choice of test at a node (J48 ``C45ModelSelection.selectModel``).

    Returns (attribute, threshold, gain, gain_ratio); attribute −1 means "make a leaf".
    ``allowed`` masks attributes that may be tested (all, for plain C4.5). ``XT`` is the
    encoded table transposed, attributes × rows: C-contiguous for one attribute or many, so
    one compiled signature serves both.
    """
    return _select(XT, y, rows, w, is_nom, nvals, in_avg, n_classes, min_obj, use_mdl, allowed,
                   np.zeros((0, 0), dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0), False, np.zeros(0))


@njit(cache=True)
def select_split_sorted(XT, y, rows, w, is_nom, nvals, in_avg, n_classes, min_obj, use_mdl, allowed, srt, num_pos,
                        wrow, tab):
    """:func:`select_split` for rows without unknown values whose order by every numeric
    attribute is given: ``srt[num_pos[a]]`` lists the node's rows sorted by attribute a,
    ``wrow`` the weight of every row of the table, ``tab`` the :func:`xlogx_table`."""
    return _select(XT, y, rows, w, is_nom, nvals, in_avg, n_classes, min_obj, use_mdl, allowed, srt, num_pos, wrow,
                   True, tab)


@njit(cache=True)
def _select(XT, y, rows, w, is_nom, nvals, in_avg, n_classes, min_obj, use_mdl, allowed, srt, num_pos, wrow,
            presorted, tab):
    m = XT.shape[0]
    class_w, total_w, stop = node_class_weights(y, rows, w, n_classes, min_obj)
    if stop:
        return -1, 0.0, 0.0, 0.0
    # select_split_fast (_c45_compiled) repeats this choice loop for its data layout: numba takes no closure
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
            ok, ig, gr = _eval_nominal(XT[a], y, rows, w, nvals[a], n_classes, total_w, min_obj, tab)
            t = 0.0
        elif presorted:
            ok, ig, gr, t = _eval_numeric_sorted(XT[a], y, srt[num_pos[a]], wrow, n_classes, total_w, min_obj,
                                                 use_mdl, tab)
        else:
            ok, ig, gr, t = _eval_numeric(XT[a], y, rows, w, n_classes, total_w, min_obj, use_mdl)
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
        return -1, 0.0, 0.0, 0.0
    return best, thrs[best], gains[best], ratios[best]


@njit(cache=True)
def _add_errs(n: float, e: float, cf: float, z: float) -> float:
    # same formula as _c45_tree.add_errs (kept in one place for the interpreted path)
    if cf > 0.5:
        return 0.0
    if e < 1.0:
        base = n * (1.0 - cf ** (1.0 / n))
        if e == 0.0:
            return base
        return base + e * (_add_errs(n, 1.0, cf, z) - base)
    if e + 0.5 >= n:
        return max(n - e, 0.0)
    f = (e + 0.5) / n
    r = (f + (z * z) / (2 * n) + z * np.sqrt((f / n) - (f * f / n) + (z * z / (4 * n * n)))) / (1 + (z * z) / n)
    return (r * n) - e


@njit(cache=True)
def route_estimate(XT, y, rows, w, start, attr, thr, nominal, is_leaf, kid_start, kids, acc, cf, z):
    """Pessimistic errors if ``rows`` (no unknown values on the way) were classified by the
    subtree rooted at node ``start`` of a flattened tree: each row follows its branch to a
    leaf, and the leaf estimates are summed in leaf (pre-)order. ``acc`` is a zeroed
    node × class scratch table, left zeroed on return."""
    touched = np.empty(rows.shape[0], dtype=np.int64)
    nt = 0
    for i in range(rows.shape[0]):
        r = rows[i]
        k = start
        while not is_leaf[k]:
            v = XT[attr[k], r]
            if nominal[k]:
                b = int(v)
            elif v <= thr[k]:
                b = 0
            else:
                b = 1
            k = kids[kid_start[k] + b]
        if acc[k].sum() == 0.0:
            touched[nt] = k
            nt += 1
        acc[k, y[r]] += w[i]
    leaves = np.sort(touched[:nt])
    total = 0.0
    for t in range(nt):
        k = leaves[t]
        tot = 0.0
        best = 0.0
        for c in range(acc.shape[1]):
            v = acc[k, c]
            tot += v
            if v > best + SMALL:
                best = v
        acc[k, :] = 0.0
        if abs(tot) < SMALL:
            continue
        e = tot - best
        total += e + _add_errs(tot, e, cf, z)
    return total
