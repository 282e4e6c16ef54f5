"""Algorithms of local suppression on key variables (quasi-identifiers).

Everything here works on a code matrix: one row per record, one column per key, each
value an integer code (values compared by equality) and ``-1`` for a missing or
suppressed cell.

**Frequencies.** fk of a record is the number of records that could carry the same key
values, with sdcMicro's missing-value rule (``freqCalc`` with alpha = 1, Templ, Kowarik &
Meindl 2015 §3): two records match when they agree on every key both have; a record whose
keys are all missing gets fk = n; with several keys a complete record does not count the
records whose keys are all missing. The counting (:func:`pattern_frequencies`, per distinct
pattern, and :func:`intruder_frequencies`, the intruder's view) lives in
:mod:`ppdm.data.blanks`, which the measures of ``ppdm evaluate`` use too: one implementation.

Suppression never lowers a count under this rule, except that a record made entirely
missing stops counting for complete records: every algorithm here keeps at least one key
of a record unless nothing else can help.

**sdcMicro's localSuppression** (:func:`sdcmicro_suppress`, sdcMicro 5.8.1): set aside, in
every group of identical key patterns larger than k, the records after the first k; then,
until every fk ≥ k on the reduced table, one pass over the records with fk < k (fewest
first, then in table order) that blanks, in each, the first key in the suppression order
where it differs from one of its nearest records (smallest positive number of differing
keys present in both). The set-aside records come back unchanged.

**Cover** (:func:`cover_suppress`): a weighted greedy cover. Under the rule above a
suppressed record stays compatible with every record it matched, and becomes compatible
with every record that agrees with it on its remaining keys: blanking key set S in one
record raises fk by one for every record of its *projection group* (the records equal to it
outside S). A record with fk < k is therefore protected either by blanking its own cells
(its new fk is the size of its projection group, so only groups of at least k records
qualify) or by other records blanked in its projection groups. The greedy repeatedly takes
the blanking with the largest reduction of the total shortfall Σ max(0, k − fk) per unit of
cost, where each record may only lose the fewest cells that make it safe on its own (so no
record is stripped of most of its keys to inflate the counts of others). Two criteria:

* ``"sdcmicro"`` — fk ≥ k for every released record under sdcMicro's rule (what sdcMicro's
  own localSuppression guarantees and what ``k_anonymity`` measures). Only records with
  fk < k are blanked.
* ``"intruder"`` — for every record, at least k released records are compatible with its
  *original* key values: an intruder who knows a person's keys (including the blanked ones)
  finds at least k candidates. This implies the first criterion. A blanked record no longer
  protects itself (the intruder knows the blanked value), so records of large groups may be
  blanked to lend cover.
"""

from __future__ import annotations

import heapq
import math
from itertools import combinations

import numpy as np
import pandas as pd
from numba import njit

from ppdm.data.blanks import (
    distinct_patterns,
    intruder_frequencies,
    pattern_frequencies,
    record_frequencies,
    row_ids,
)
from ppdm.data.blanks import key_codes as encode_keys
from ppdm.errors import ParameterError

CRITERIA = ("sdcmicro", "intruder")


# ------------------------------------------------------------------- importance
def default_importance(codes: np.ndarray) -> np.ndarray:
    """sdcMicro's default importance: the rank of each key's number of distinct values,
    fewest first (1 = most important, blanked last), ties by key order."""
    m = codes.shape[1]
    ncat = np.array([np.unique(codes[codes[:, j] >= 0, j]).size for j in range(m)])
    imp = np.empty(m, dtype=np.int64)
    imp[np.argsort(ncat, kind="stable")] = np.arange(1, m + 1)
    return imp


def _entropy(counts: np.ndarray) -> float:
    p = counts[counts > 0] / counts.sum()
    return float(-(p * np.log(p)).sum())


def class_importance(codes: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Importance by what each key says about the class: the rank of its symmetrical
    uncertainty with the class codes ``y``, 2·I(key; class) / (H(key) + H(class)) over the
    records where both are known (Witten, Frank & Hall, *Data Mining*, 3rd ed., §7.1), largest
    first (1 = most important, blanked last), ties by key order. The normalisation keeps a key
    with many values from looking informative by its number of values alone."""
    m = codes.shape[1]
    su = np.zeros(m)
    for j in range(m):
        ok = (codes[:, j] >= 0) & (y >= 0)
        if not ok.any():
            continue
        _, a = np.unique(codes[ok, j], return_inverse=True)
        _, b = np.unique(y[ok], return_inverse=True)
        joint = np.bincount(a * (b.max() + 1) + b, minlength=(a.max() + 1) * (b.max() + 1)).astype(float)
        ha, hb = _entropy(np.bincount(a).astype(float)), _entropy(np.bincount(b).astype(float))
        mi = ha + hb - _entropy(joint)
        su[j] = 2.0 * mi / (ha + hb) if ha + hb > 0 else 0.0
    imp = np.empty(m, dtype=np.int64)
    imp[np.lexsort((np.arange(m), -np.round(su, 12)))] = np.arange(1, m + 1)
    return imp


def suppression_order(importance: np.ndarray) -> np.ndarray:
    """Keys in the order they are tried: decreasing importance number, ties by key order."""
    imp = np.asarray(importance, dtype=float)
    return np.lexsort((np.arange(imp.size), -imp)).astype(np.int64)


def rank_min(values: np.ndarray) -> np.ndarray:
    """R's ``rank(x, ties.method = "min", na.last = TRUE)``: NaN get the ranks after every
    number, in order of appearance."""
    v = np.asarray(values, dtype=float)
    out = np.empty(v.size)
    ok = ~np.isnan(v)
    vals = v[ok]
    out[ok] = [1 + int((vals < x).sum()) for x in vals]
    out[~ok] = np.arange(ok.sum() + 1, v.size + 1)
    return out


# ---------------------------------------------------------------- sdcMicro's algorithm
@njit(cache=True)
def _sdc_pass(sub: np.ndarray, problem: np.ndarray, order: np.ndarray) -> None:  # pragma: no cover - numba
    n, m = sub.shape
    d = np.empty(n, dtype=np.int64)
    r = np.empty(m, dtype=np.int64)
    for t in range(problem.size):
        p = problem[t]
        for j in range(m):
            r[j] = sub[p, j]
        best = m + 1
        for i in range(n):
            c = 0
            for j in range(m):
                a = sub[i, j]
                b = r[j]
                if a >= 0 and b >= 0 and a != b:
                    c += 1
            d[i] = c
            if 0 < c < best:
                best = c
        if best == m + 1:
            # nothing differs from r on a shared key: blank its first present key in order
            for jj in range(order.size):
                j = order[jj]
                if r[j] >= 0:
                    sub[p, j] = -1
                    break
            continue
        for jj in range(order.size):
            j = order[jj]
            v = r[j]
            if v < 0:
                continue
            hit = False
            for i in range(n):
                if d[i] == best:
                    a = sub[i, j]
                    if a >= 0 and a != v:
                        hit = True
                        break
            if hit:
                sub[p, j] = -1
                break


def sdcmicro_suppress(codes: np.ndarray, k: int, order: np.ndarray) -> np.ndarray:
    """sdcMicro's ``localSuppression`` (no strata, no combs) on a code matrix; returns the
    new codes (−1 = suppressed). ``order`` lists the key columns in suppression order."""
    codes = np.array(codes, dtype=np.int64, copy=True)
    n = len(codes)
    if n == 0 or codes.shape[1] == 0:
        return codes
    ids = row_ids(codes)
    within = pd.Series(ids).groupby(ids).cumcount().to_numpy()
    reduced = np.flatnonzero(within < k)
    sub = np.ascontiguousarray(codes[reduced])
    order = np.ascontiguousarray(order, dtype=np.int64)
    while True:
        fk = record_frequencies(sub)
        problem = np.flatnonzero(fk < k)
        if problem.size == 0:
            break
        problem = problem[np.argsort(fk[problem], kind="stable")]
        _sdc_pass(sub, problem.astype(np.int64), order)
    codes[reduced] = sub
    return codes


def sdcmicro_combs(codes: np.ndarray, k: int, importance: np.ndarray, combs: list[int],
                   positions: np.ndarray | None = None) -> np.ndarray:
    """sdcMicro's ``combs``: for each size c in ``combs`` and each subset of c keys (in
    ``combn`` order) run :func:`sdcmicro_suppress` on that subset of the current table.

    The importance of a subset is ``rank(importance[...], ties.method="min")``. sdcMicro indexes
    the importance vector with the keys' *column positions in its data frame*; pass them as
    ``positions`` (1-based) to reproduce that, or leave ``None`` to index by the keys' order
    among the keys, as its documentation describes.
    """
    cur = np.array(codes, dtype=np.int64, copy=True)
    m = cur.shape[1]
    imp = np.asarray(importance, dtype=float)
    for c in combs:
        for sub in combinations(range(m), int(c)):
            cols = list(sub)
            if positions is None:
                vals = imp[cols]
            else:
                pos = np.asarray(positions, dtype=np.int64)[cols] - 1
                vals = np.array([imp[p] if 0 <= p < imp.size else np.nan for p in pos])
            local = suppression_order(rank_min(vals))
            cur[:, cols] = sdcmicro_suppress(cur[:, cols], k, local)
    return cur


# ------------------------------------------------------------------------ the cover
def _project(patterns: np.ndarray, keep: np.ndarray) -> np.ndarray:
    return row_ids(patterns[:, keep]) if keep.size else np.zeros(len(patterns), dtype=np.int64)


def _csr(keys: np.ndarray, values: np.ndarray, n_keys: int) -> tuple[np.ndarray, np.ndarray]:
    """``values`` grouped by ``keys`` (0..n_keys−1): ``(starts, flat)``, group g being
    ``flat[starts[g]:starts[g + 1]]`` (stable: in the order given)."""
    order = np.argsort(keys, kind="stable")
    starts = np.searchsorted(keys[order], np.arange(n_keys + 1))
    return starts, values[order]


class _Cover:
    """State of the greedy cover of the complete key combinations of one table.

    ``C`` holds the distinct complete combinations, ``count`` how many records carry each,
    ``deficit`` max(0, k − fk) under sdcMicro's rule (records with missing keys included),
    ``G[c, t]`` the id of combination c's projection group for subset t of the keys, and
    ``size[g]`` the number of complete records in group g.
    """

    def __init__(self, codes: np.ndarray, k: int) -> None:
        n, m = codes.shape
        self.m = m
        self.k = k
        complete = (codes >= 0).all(axis=1)
        pats, cnt, inv = distinct_patterns(codes)
        fk = pattern_frequencies(pats, cnt)
        combos = np.flatnonzero((pats >= 0).all(axis=1))
        self.C = pats[combos]
        self.count = cnt[combos].astype(np.int64)
        self.deficit = np.maximum(0, k - fk[combos]).astype(np.int64)
        local = np.full(len(pats), -1, dtype=np.int64)
        local[combos] = np.arange(len(combos))
        rec = np.flatnonzero(complete)
        # each combination's records in table order; the last ones are blanked first
        starts, self.rec_flat = _csr(local[inv[rec]], rec, len(combos))
        self.rec_start = starts[:-1].copy()
        self.rec_end = starts[1:].copy()
        self.rem = self.count.copy()
        self.subsets: list[tuple[int, ...]] = []
        self.group_cols: list[np.ndarray] = []
        self.size = np.zeros(0, dtype=np.int64)

    def add_subsets(self, s: int) -> None:
        """Project every combination on the keys outside each subset of ``s`` keys."""
        base = self.size.size
        sizes = [self.size]
        for S in combinations(range(self.m), s):
            keep = np.array([j for j in range(self.m) if j not in S], dtype=np.int64)
            g = _project(self.C, keep)
            self.subsets.append(S)
            self.group_cols.append(g + base)
            sz = np.bincount(g, weights=self.count).astype(np.int64)
            sizes.append(sz)
            base += sz.size
        self.size = np.concatenate(sizes)


def cover_suppress(codes: np.ndarray, k: int, cost: np.ndarray, *, criterion: str = "sdcmicro",
                   tie: np.ndarray | None = None) -> np.ndarray:
    """The greedy cover (module docstring) on a code matrix; returns the new codes.

    ``cost[j]`` is the cost of blanking one cell of key j (> 0); ``tie`` is a suppression
    order (:func:`suppression_order`): among blankings of equal merit, keys early in it are
    blanked. Records with missing keys on input are handled by the rule's repair step
    (criterion ``"sdcmicro"``); under criterion ``"intruder"`` (:func:`_intruder_with_missing`)
    a missing cell counts as a value no other record has.
    """
    if criterion not in CRITERIA:
        raise ParameterError(f"criterion must be one of {', '.join(CRITERIA)}, got {criterion!r}")
    codes = np.array(codes, dtype=np.int64, copy=True)
    n, m = codes.shape
    if n == 0 or m == 0 or k <= 1:
        return codes
    if criterion == "intruder" and (codes < 0).any():
        return _intruder_with_missing(codes, k, cost, tie)
    rank = np.zeros(m) if tie is None else np.argsort(np.asarray(tie)).astype(float)
    # blanking a key early in the order costs a hair less, so it wins ties
    unit = np.asarray(cost, dtype=float) * (1.0 + 1e-6 * rank)
    out = codes.copy()
    if m > 1:
        _greedy(out, codes, k, unit, criterion == "intruder")
    elif criterion == "intruder" and (record_frequencies(codes) < k).any():
        raise ParameterError("criterion='intruder' (local suppression's default) cannot protect records on a single key: only records blanked "
                             "altogether could match a rare value; use criterion='sdcmicro' or recode the key first")
    if criterion == "sdcmicro":
        _repair(out, k, unit)
    return out


def _intruder_with_missing(codes: np.ndarray, k: int, cost: np.ndarray, tie: np.ndarray | None) -> np.ndarray:
    """The intruder criterion on keys with missing cells. The intruder does not know a value that
    is missing in the original, so any released record agreeing on the others is a candidate;
    the cover is run as if each missing cell held a value no other record has, and records whose
    keys are all missing (anyone's candidates) are left out. Both only undercount candidates —
    a released missing cell is counted as matching nobody else — so k candidates in this count
    are at least k in the intruder's view."""
    out = codes.copy()
    known = ~(codes < 0).all(axis=1)
    work = codes[known].copy()
    r, c = np.nonzero(work < 0)
    work[r, c] = work.max(axis=0)[c] + 1 + np.arange(r.size)
    new = cover_suppress(work, k, cost, criterion="intruder", tie=tie)
    out[known] = np.where(new < 0, -1, codes[known])
    return out


def _greedy(out: np.ndarray, codes: np.ndarray, k: int, unit: np.ndarray, intruder: bool) -> None:
    st = _Cover(codes, k)
    viol = np.flatnonzero(st.deficit > 0)
    if viol.size == 0:
        return
    # subsets of growing size until every combination in deficit has a group of ≥ k records:
    # need[c] is the fewest cells that make a record of c safe on its own
    need = np.full(len(st.C), -1, dtype=np.int64)
    s = 0
    top = _largest_subset_size(st.m, len(st.C))
    while (need[viol] < 0).any() and s < top:
        s += 1
        first = len(st.subsets)
        st.add_subsets(s)
        for t in range(first, len(st.subsets)):
            ok = st.size[st.group_cols[t]] >= k
            need[ok & (need < 0)] = s
    if intruder and (need[viol] < 0).any():
        lost = int(st.count[viol[need[viol] < 0]].sum())
        raise ParameterError(
            f"criterion='intruder' (local suppression's default) cannot protect {lost} record(s): each of their key values is shared by fewer "
            f"than k={k} records, so no blanking of other records can match them; recode the keys first or use "
            "criterion='sdcmicro'")
    for extra in range(st.m):
        if extra:
            # the intruder criterion may exhaust a group's records: widen to one more cell
            left = np.flatnonzero(st.deficit > 0)
            if left.size == 0:
                break
            want = int(need[left].max()) + extra
            if want > st.m - 1:
                break
            while len(st.subsets) and len(st.subsets[-1]) < want:
                st.add_subsets(len(st.subsets[-1]) + 1)
        _run(st, out, k, unit, intruder, need, extra)
        if not intruder:
            break
    if intruder and (st.deficit > 0).any():
        lost = int(st.count[st.deficit > 0].sum())
        raise ParameterError(
            f"criterion='intruder' (local suppression's default) cannot protect {lost} record(s) with the records available to lend cover; "
            "recode the keys first or use criterion='sdcmicro'")


#: subsets of keys the cover projects on (combinations × subsets group ids are kept in memory)
SUBSET_BUDGET = 4096
CELL_BUDGET = 40_000_000


def _largest_subset_size(m: int, n_combos: int) -> int:
    """The largest number of cells blanked together in one record by the cover: subsets of up
    to this size keep the projections within :data:`SUBSET_BUDGET` and :data:`CELL_BUDGET`
    (records needing more are left to the repair step)."""
    total, s = 0, 0
    while s < m - 1:
        nxt = math.comb(m, s + 1)
        if total + nxt > SUBSET_BUDGET or (total + nxt) * max(n_combos, 1) > CELL_BUDGET:
            break
        total += nxt
        s += 1
    return max(s, 1) if m > 1 else 0


def _run(st: _Cover, out: np.ndarray, k: int, unit: np.ndarray, intruder: bool, need: np.ndarray,
         extra: int) -> None:
    """One greedy round over the blankings of ``need + extra`` cells (module docstring)."""
    viol = np.flatnonzero(st.deficit > 0)
    if viol.size == 0:
        return
    G = np.column_stack(st.group_cols)  # (combinations, subsets)
    n_groups = st.size.size
    sizes_of = np.array([len(S) for S in st.subsets])
    S_cost = np.array([unit[list(S)].sum() for S in st.subsets])
    deficit, rem = st.deficit, st.rem
    vmask = deficit > 0
    active = np.bincount(G[vmask].ravel(), minlength=n_groups).astype(np.int64)
    m_start, m_flat = _csr(G[viol].ravel(), np.repeat(viol, G.shape[1]), n_groups)
    # candidate blankings: (combination in deficit, subset of its fewest cells with a group ≥ k)
    vv, tt = np.nonzero((sizes_of[None, :] == (need[viol] + extra)[:, None]) & (st.size[G[viol]] >= k))
    cand_v, cand_t = viol[vv], tt
    if intruder:
        safe = np.bincount(G[~vmask].ravel(), weights=np.repeat(rem[~vmask], G.shape[1]),
                           minlength=n_groups).astype(np.int64)
        left = np.bincount(G.ravel(), weights=np.repeat(rem, G.shape[1]), minlength=n_groups).astype(np.int64)
        a_start, a_flat = _csr(G.ravel(), np.repeat(np.arange(len(st.C)), G.shape[1]), n_groups)
        groups, first = np.unique(G[cand_v, cand_t], return_index=True)
        cand_a, cand_t = groups, cand_t[first]
        gains = np.where(safe[cand_a] > 0, active[cand_a], active[cand_a] - 1).astype(float)
    else:
        cand_a = cand_v
        gains = deficit[cand_v] / rem[cand_v] + active[G[cand_v, cand_t]] - 1.0
    ratios = -gains / S_cost[cand_t]
    keep = ratios < 0
    cells = np.full((len(st.subsets), st.m), -1, dtype=np.int64)
    for t, S in enumerate(st.subsets):
        cells[t, : len(S)] = S
    if not intruder:
        a_start = a_flat = safe = left = np.zeros(1, dtype=np.int64)
    _cover_loop(out, ratios[keep], cand_a[keep].astype(np.int64), cand_t[keep].astype(np.int64), S_cost, cells,
                G, deficit, rem, active, m_start, m_flat, st.rec_flat, st.rec_end, intruder, a_start, a_flat,
                safe, left)


@njit(cache=True)
def _cover_loop(out, ratios, cand_a, cand_t, S_cost, cells, G, deficit, rem, active, m_start, m_flat,
                rec_flat, rec_end, intruder, a_start, a_flat, safe, left):  # pragma: no cover - numba
    # the lazy greedy of _run: pop the best blanking, recompute its merit, apply it or push it back
    heap = [(ratios[i], i, cand_a[i], cand_t[i]) for i in range(ratios.size)]
    heapq.heapify(heap)
    n_sub = G.shape[1]
    while len(heap) > 0:
        neg, i, a, t = heapq.heappop(heap)
        if intruder:
            if left[a] == 0:
                gain = 0.0
            elif safe[a] > 0:
                gain = float(active[a])
            else:
                gain = float(active[a] - 1)
        elif deficit[a] > 0 and rem[a] > 0:
            gain = deficit[a] / rem[a] + float(active[G[a, t]] - 1)
        else:
            gain = 0.0
        if gain <= 0:
            continue
        ratio = -gain / S_cost[t]
        if ratio > neg + 1e-12:
            heapq.heappush(heap, (ratio, i, a, t))
            continue
        if intruder:
            # the group's combination lending a record: most records left among those not in
            # deficit, else among those in deficit
            donor = -1
            donor_def = -1
            best = 0
            best_def = 0
            for q in range(a_start[a], a_start[a + 1]):
                c = a_flat[q]
                r = rem[c]
                if r <= 0:
                    continue
                if deficit[c] <= 0:
                    if r > best:
                        best = r
                        donor = c
                elif r > best_def:
                    best_def = r
                    donor_def = c
            if donor < 0:
                donor = donor_def
            g = a
            for tt in range(n_sub):
                left[G[donor, tt]] -= 1
                if deficit[donor] <= 0:
                    safe[G[donor, tt]] -= 1
        else:
            donor = a
            g = G[a, t]
        rec_end[donor] -= 1
        rem[donor] -= 1
        rec = rec_flat[rec_end[donor]]
        for jj in range(cells.shape[1]):
            j = cells[t, jj]
            if j < 0:
                break
            out[rec, j] = -1
        for q in range(m_start[g], m_start[g + 1]):
            u = m_flat[q]
            if u != donor and deficit[u] > 0:
                deficit[u] -= 1
                if deficit[u] == 0:
                    for tt in range(n_sub):
                        active[G[u, tt]] -= 1
                        if intruder:
                            safe[G[u, tt]] += rem[u]
        if not intruder and rem[donor] == 0 and deficit[donor] > 0:
            deficit[donor] = 0  # every record of the combination now stands in a group of ≥ k
            for tt in range(n_sub):
                active[G[donor, tt]] -= 1
        heapq.heappush(heap, (neg, i, a, t))  # its merit is recomputed when it comes up again


def _repair(out: np.ndarray, k: int, unit: np.ndarray) -> None:
    """Until every record has fk ≥ k under sdcMicro's rule: in every pattern with fk < k, blank
    one more key in all its records — the cheapest key that brings fk to k, else the key that
    raises fk most per unit of cost; the last present key only when nothing else raises fk
    (an all-missing record has fk = n). Each round is one frequency count of all candidates."""
    m = out.shape[1]
    for _ in range(m + 1):
        pats, cnt, inv = distinct_patterns(out)
        fk = pattern_frequencies(pats, cnt)
        bad = np.flatnonzero(fk < k)
        if bad.size == 0:
            return
        # candidates: each bad pattern with one more of its present keys blanked
        bp, bj = np.nonzero(pats[bad] >= 0)
        q = pats[bad][bp].copy()
        q[np.arange(bp.size), bj] = -1
        f = pattern_frequencies(pats, cnt, queries=q)
        last = (q >= 0).sum(axis=1) == 0
        choice = np.full(bad.size, -1, dtype=np.int64)
        best = np.full(bad.size, -np.inf)
        for i in range(bp.size):
            b, j = bp[i], bj[i]
            reach = f[i] >= k
            gain = f[i] - fk[bad[b]]
            # reaching k first (cheapest), then the largest gain per cost; the last key comes last
            score = (2e12 - unit[j]) if reach and not last[i] else gain / unit[j] - (1e12 if last[i] else 0.0)
            if score > best[b]:
                best[b], choice[b] = score, j
        for b, j in enumerate(choice):
            out[np.ix_(np.flatnonzero(inv == bad[b]), [j])] = -1
    raise AssertionError("local suppression did not reach fk ≥ k")  # pragma: no cover


# ------------------------------------------------------------- several key subsets
#: the joint greedy scans the whole table per candidate: used while n × subsets stays below this
JOINT_BUDGET = 2_000_000
#: cells are given back (pruning) while n × blanked cells × subsets stays below this
PRUNE_BUDGET = 200_000_000


@njit(cache=True, inline="always")
def _matches(out: np.ndarray, i: int, r: int, j: int, Ks: np.ndarray,
             s: int) -> tuple[bool, bool]:  # pragma: no cover - numba
    """Whether records i and r are compatible on the keys ``Ks[s]`` once r's key j is blanked, and
    whether they are already (wildcard rule: a blank matches any value). Shared by
    :func:`_joint_gain` and :func:`_joint_apply`."""
    cq = True
    cp = True
    for a in range(Ks.shape[1]):
        kk = Ks[s, a]
        x = out[i, kk]
        y = out[r, kk]
        if x < 0 or y < 0 or x == y:
            continue
        cp = False
        if kk != j:
            cq = False
            break
    return cq, cp


@njit(cache=True)
def _joint_gain(out: np.ndarray, r: int, j: int, Ks: np.ndarray, has: np.ndarray, fk: np.ndarray,
                k: int) -> float:  # pragma: no cover - numba
    # shortfall removed by blanking cell (r, j), over every subset holding key j: each record's
    # reduction as a share of its own shortfall (covering a record counts 1 however short it was)
    n = out.shape[0]
    c = Ks.shape[1]
    if out[r, j] < 0:
        return -1.0
    tot = 0.0
    for s in range(Ks.shape[0]):
        if not has[s, j]:
            continue
        left = 0
        for a in range(c):
            if out[r, Ks[s, a]] >= 0 and Ks[s, a] != j:
                left += 1
        if left == 0 and c > 1:
            return -1.0  # an all-missing record would stop counting for complete ones
        fq = 1
        oth = 0.0
        for i in range(n):
            if i == r:
                continue
            cq, cp = _matches(out, i, r, j, Ks, s)
            if cq:
                fq += 1
                if not cp and fk[s, i] < k:
                    oth += 1.0 / (k - fk[s, i])
        short = k - fk[s, r]
        if short > 0:
            tot += (short - max(0, k - fq)) / short
        tot += oth
    return tot


@njit(cache=True)
def _joint_apply(out: np.ndarray, r: int, j: int, Ks: np.ndarray, has: np.ndarray,
                 fk: np.ndarray) -> None:  # pragma: no cover - numba
    # the same walk over the records as _joint_gain (its match test is _matches), kept as its own
    # compiled loop: the gain only reads the counts, this updates them, and it runs once per
    # chosen cell where the gain runs once per candidate
    n = out.shape[0]
    for s in range(Ks.shape[0]):
        if not has[s, j]:
            continue
        fq = 1
        for i in range(n):
            if i == r:
                continue
            cq, cp = _matches(out, i, r, j, Ks, s)
            if cq:
                fq += 1
                if not cp:
                    fk[s, i] += 1
        fk[s, r] = fq
    out[r, j] = -1


def _subset_arrays(subsets: list[tuple[int, ...]], m: int) -> tuple[np.ndarray, np.ndarray]:
    Ks = np.array(subsets, dtype=np.int64)
    has = np.zeros((len(subsets), m), dtype=np.bool_)
    for s, K in enumerate(subsets):
        has[s, list(K)] = True
    return Ks, has


def _subset_frequencies(out: np.ndarray, subsets: list[tuple[int, ...]]) -> np.ndarray:
    return np.array([record_frequencies(out[:, list(K)]) for K in subsets]).astype(np.int64)


def joint_suppress(codes: np.ndarray, k: int, cost: np.ndarray, subsets: list[tuple[int, ...]],
                   tie: np.ndarray | None = None) -> np.ndarray:
    """fk ≥ k on every key subset in ``subsets`` at once (sdcMicro's ``combs``), blanking one
    cell at a time: the cell whose blanking covers most shortfall over all subsets per unit of
    cost (lazy greedy), a record's cell only while the record itself is short on a subset
    holding that key. What the greedy leaves is finished subset by subset with
    :func:`cover_suppress`. Each candidate costs a scan of the table, so this is for tables with
    n × subsets up to :data:`JOINT_BUDGET`."""
    out = np.array(codes, dtype=np.int64, copy=True)
    n, m = out.shape
    if n == 0 or m == 0 or k <= 1:
        return out
    Ks, has = _subset_arrays(subsets, m)
    fk = _subset_frequencies(out, subsets)
    rank = np.zeros(m) if tie is None else np.argsort(np.asarray(tie)).astype(float)
    unit = np.asarray(cost, dtype=float) * (1.0 + 1e-6 * rank)
    short = (fk < k).any(axis=0)
    heap: list[tuple[float, int, int]] = []
    for r in np.flatnonzero(short).tolist():
        for j in range(m):
            g = _joint_gain(out, int(r), j, Ks, has, fk, k)
            if g > 0:
                heap.append((-g / unit[j], int(r), j))
    heapq.heapify(heap)
    while heap:
        neg, r, j = heapq.heappop(heap)
        if not (fk[has[:, j], r] < k).any():
            continue
        g = _joint_gain(out, r, j, Ks, has, fk, k)
        if g <= 0:
            continue
        if -g / unit[j] > neg + 1e-12:
            heapq.heappush(heap, (-g / unit[j], r, j))
            continue
        _joint_apply(out, r, j, Ks, has, fk)
    for K in subsets:
        cols = list(K)
        if (record_frequencies(out[:, cols]) < k).any():
            out[:, cols] = cover_suppress(out[:, cols], k, np.asarray(cost)[cols],
                                          tie=None if tie is None else suppression_order(rank[cols]))
    return out


@njit(cache=True)
def _prune_kernel(out: np.ndarray, orig: np.ndarray, rows: np.ndarray, cols: np.ndarray, Ks: np.ndarray,
                  has: np.ndarray, fk: np.ndarray, k: int) -> int:  # pragma: no cover - numba
    n = out.shape[0]
    c = Ks.shape[1]
    ns = Ks.shape[0]
    new_fk = np.zeros(ns, dtype=np.int64)
    lose = np.zeros((ns, n), dtype=np.bool_)
    given = 0
    for t in range(rows.size):
        r = rows[t]
        j = cols[t]
        v = orig[r, j]
        ok = True
        for s in range(ns):
            if not has[s, j]:
                continue
            left = 0
            for a in range(c):
                if out[r, Ks[s, a]] >= 0:
                    left += 1
            if left == 0 and c > 1:
                ok = False  # the record is all-missing on this subset: leave it
                break
            complete_new = left == c - 1
            f = 1
            for i in range(n):
                lose[s, i] = False
                if i == r:
                    continue
                c_old = True
                c_new = True
                all_miss = True
                for a in range(c):
                    kk = Ks[s, a]
                    x = out[i, kk]
                    if x >= 0:
                        all_miss = False
                    y = v if kk == j else out[r, kk]
                    yo = out[r, kk]
                    if x >= 0 and yo >= 0 and x != yo:
                        c_old = False
                    if x >= 0 and y >= 0 and x != y:
                        c_new = False
                if c_new and not (complete_new and all_miss and c > 1):
                    f += 1
                if c_old and not c_new:
                    if fk[s, i] - 1 < k:
                        ok = False
                        break
                    lose[s, i] = True
            if not ok:
                break
            if f < k:
                ok = False
                break
            new_fk[s] = f
        if not ok:
            continue
        for s in range(ns):
            if not has[s, j]:
                continue
            for i in range(n):
                if lose[s, i]:
                    fk[s, i] -= 1
            fk[s, r] = new_fk[s]
        out[r, j] = v
        given += 1
    return given


def prune(out: np.ndarray, orig: np.ndarray, k: int, subsets: list[tuple[int, ...]], cost: np.ndarray) -> int:
    """Give back every blanked cell whose original value can return without breaking fk ≥ k on
    any subset (the most costly cells first), in place; returns how many came back."""
    m = out.shape[1]
    rows, cols = np.nonzero((out < 0) & (orig >= 0))
    if rows.size == 0:
        return 0
    first = np.lexsort((rows, -np.asarray(cost, dtype=float)[cols]))
    Ks, has = _subset_arrays(subsets, m)
    fk = _subset_frequencies(out, subsets)
    return int(_prune_kernel(out, np.ascontiguousarray(orig, dtype=np.int64), rows[first].astype(np.int64),
                             cols[first].astype(np.int64), Ks, has, fk, int(k)))


def entropy_costs(codes: np.ndarray) -> np.ndarray:
    """The Shannon entropy (bits) of each key's observed values, scaled to mean 1: blanking a
    cell of an informative key costs more."""
    h = []
    for j in range(codes.shape[1]):
        v = codes[codes[:, j] >= 0, j]
        if v.size == 0:
            h.append(0.0)
            continue
        p = np.bincount(v) / v.size
        p = p[p > 0]
        h.append(float(-(p * np.log2(p)).sum()))
    arr = np.array(h)
    mean = arr.mean() if arr.size else 0.0
    # a constant key carries no information; it still costs a little so nothing is free
    return np.maximum(arr / mean, 1e-3) if mean > 0 else np.ones_like(arr)


__all__ = ["CRITERIA", "cover_suppress", "default_importance", "distinct_patterns", "encode_keys",
           "entropy_costs", "intruder_frequencies", "pattern_frequencies", "rank_min", "record_frequencies",
           "sdcmicro_combs", "sdcmicro_suppress", "suppression_order"]

