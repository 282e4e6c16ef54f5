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

The importance order and sdcMicro's pass (:mod:`ppdm.anonymize._suppression_order`) and the
greedy cover (:mod:`ppdm.anonymize._suppression_cover`) live in their own modules; the joint
passes and pruning stay here, and every name of the three is importable from here.
"""

from __future__ import annotations

import heapq

import numpy as np
from numba import njit

from ppdm.anonymize._suppression_cover import (  # noqa: F401  (re-exported: the public path stays this module)
    CELL_BUDGET,
    SUBSET_BUDGET,
    _Cover,
    _cover_loop,
    _csr,
    _greedy,
    _intruder_with_missing,
    _largest_subset_size,
    _project,
    _repair,
    _run,
    cover_suppress,
)
from ppdm.anonymize._suppression_order import (  # noqa: F401  (re-exported: the public path stays this module)
    CRITERIA,
    _entropy,
    _sdc_pass,
    class_importance,
    default_importance,
    rank_min,
    sdcmicro_combs,
    sdcmicro_suppress,
    suppression_order,
)
from ppdm.data.blanks import (
    distinct_patterns,
    intruder_frequencies,
    pattern_frequencies,
    record_frequencies,
)
from ppdm.data.blanks import key_codes as encode_keys

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

