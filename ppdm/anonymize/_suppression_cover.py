"""Local suppression against the intruder criterion: the greedy cover of the risky key patterns.

Every record whose key pattern fewer than k released records could match must lose key cells
until none does; :func:`cover_suppress` chooses the cells greedily (the compiled
:func:`_cover_loop`, with subsets of keys enumerated within a budget) and repairs what the
greedy pass left. Split from :mod:`ppdm.anonymize._suppression`, which re-exports every name
here.
"""

from __future__ import annotations

import heapq
import math
from itertools import combinations

import numpy as np
from numba import njit

from ppdm.anonymize._suppression_order import (
    CRITERIA,
)
from ppdm.data.blanks import (
    distinct_patterns,
    pattern_frequencies,
    record_frequencies,
    row_ids,
)
from ppdm.errors import ParameterError


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
