"""Singling out (Giomi et al. 2023, §4.1; Cohen & Nissim 2020): predicates learnt from the
release that isolate exactly one original record.

The attacker writes queries on the release z that match exactly one released record and
bets that each also matches exactly one person of the original data. Two query makers:

* **univariate**: one condition on one attribute — a value that occurs once in z
  (``age == 87``), the smallest or largest value of a numeric attribute (``fnlwgt <= 13769``,
  ``fnlwgt >= 1484705``), or ``is missing`` when one record of z lacks the attribute;
* **multivariate**: a random record of z and ``n_cols`` random attributes of it, each
  becoming a condition: equality for a categorical attribute, ``>= value`` for a numeric
  value above the attribute's median in z and ``<= value`` otherwise (extreme regions are
  where records are rare); only queries that match exactly one record of z are kept, up to
  ``n_attacks`` distinct ones.

The main attack succeeds on a query that matches exactly one original record; the control
attack runs the same queries on the control set. The baseline attacker writes random
queries (random attributes, values drawn from z, random comparison operators) and is
scored on the originals. Duplicate records are removed from every table first (two
identical records cannot be told apart), and the success rates are counted out of
``n_attacks`` even when fewer queries could be made (the attacker's failure to find queries
is part of the protection), both as in anonymeter 1.1.0.

When the control set (after removing duplicates) differs in size from the original data,
its successes are rescaled to the original's size: a query singles out more easily in a
smaller table. For a query matching c of the m control records, the expected number of
single matches in s records drawn from them is c·C(m − c, s − 1)/C(m, s); summed over the
queries this gives the expected successes E(s) at any s ≤ m. For a larger original (n > m),
E is extrapolated with Cohen & Nissim's model E(s) = A·∫₀^w P(u, s) du, P(u, s) = s·u(1 − u)^(s−1)
(query weights spread evenly up to w), fitted to E at ten sizes up to m.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
from numba import njit

from ppdm.attacks._common import (
    AttackResult,
    Encoded,
    attack_encoding,
    attack_tables,
    check_confidence,
    check_n_attacks,
    check_tables,
    context_encoding,
    make_result,
    measure_options,
    rng_of,
)
from ppdm.errors import ParameterError
from ppdm.metrics.base import EvaluationContext, register_measure
from ppdm.parallel import chunks_for, run_chunks
from ppdm.utils import RandomState

EQ, NE, LT, GT, LE, GE, ISNULL, NOTNULL = range(8)
#: queries of the registered multivariate singling-out measure (the library default stays 500)
EVALUATE_MULTIVARIATE_QUERIES = 4000
Queries = tuple[np.ndarray, np.ndarray, np.ndarray]  # columns, operators, values: (n_queries, conditions)
#: the multivariate search keeps a copy of the table's run positions in each column's order (m²
#: values a record, 4 bytes each) up to this many values, 64 MB: adult needs 3.4 million
BY_COLUMN_CELLS = 2**24
OP_TEXT = {EQ: "==", NE: "!=", LT: "<", GT: ">", LE: "<=", GE: ">=", ISNULL: "is missing", NOTNULL: "is not missing"}


@njit(cache=True, inline="always")
def _holds(v: float, op: int, w: float) -> bool:
    """Whether value v satisfies ``op w``; a missing value satisfies only ``is missing`` (as in
    SQL and polars: a comparison with a missing value is never true)."""
    if op < 0:
        return True
    if op == ISNULL:
        return v != v
    if op == NOTNULL:
        return v == v
    if v != v or w != w:
        return False
    if op == EQ:
        return v == w
    if op == NE:
        return v != w
    if op == LT:
        return v < w
    if op == GT:
        return v > w
    if op == LE:
        return v <= w
    return v >= w


@njit(cache=True, inline="always")
def _range(sv: np.ndarray, n_present: int, n: int, op: int, w: float) -> tuple[int, int, bool]:
    """Positions [lo, hi) in a column's sort order (values ascending, missing last) of the
    records satisfying ``op w``, and whether the condition is one such range."""
    if op == ISNULL:
        return n_present, n, True
    if op < 0 or op == NE or op == NOTNULL:
        return 0, n, False
    if w != w:
        return 0, 0, True
    left = int(np.searchsorted(sv[:n_present], w, side="left"))
    right = int(np.searchsorted(sv[:n_present], w, side="right"))
    if op == EQ:
        return left, right, True
    if op == LT:
        return 0, left, True
    if op == GT:
        return right, n_present, True
    if op == LE:
        return 0, right, True
    return left, n_present, True


def count_matches(
    data: np.ndarray,  # (n, m) encoded table (NaN = missing)
    sorted_vals: np.ndarray,  # (m, n) each column's values ascending, missing last
    order: np.ndarray,  # (m, n) the records in that order
    n_present: np.ndarray,  # (m,) non-missing values per column
    q_col: np.ndarray,  # (nq, K) column of each condition
    q_op: np.ndarray,  # (nq, K) operator of each condition, −1 = no condition
    q_val: np.ndarray,  # (nq, K) value compared with
    cap: int,  # stop counting a query at this many matches
) -> np.ndarray:
    """Number of records matching every condition of each query (at most ``cap``).

    The most selective condition that is a range of its column's sort order (found by
    binary search) supplies the candidate records, and only those are checked against the
    other conditions: a query that nearly singles somebody out costs a few comparisons."""
    out = np.zeros(q_col.shape[0], dtype=np.int64)
    run_chunks(_count_matches_chunk, q_col.shape[0], data, sorted_vals, order, n_present, q_col, q_op, q_val, cap, out)
    return out


@njit(cache=True, nogil=True)
def _count_matches_chunk(c, start, stop, data, sorted_vals, order, n_present, q_col, q_op, q_val, cap, out):
    """Queries ``start:stop`` of :func:`count_matches` (:func:`ppdm.parallel.run_chunks`)."""
    n = data.shape[0]
    kk = q_col.shape[1]
    for q in range(start, stop):
        # the narrowest condition that is a range of its column's order drives the scan
        best_lo, best_w, drive = 0, n + 1, -1
        for t in range(kk):
            a = q_col[q, t]
            lo, hi, ok = _range(sorted_vals[a], n_present[a], n, q_op[q, t], q_val[q, t])
            if ok and hi - lo < best_w:
                best_lo, best_w, drive = lo, hi - lo, t
        cnt = 0
        n_scan = best_w if drive >= 0 else n
        for p in range(n_scan):
            i = order[q_col[q, drive], best_lo + p] if drive >= 0 else p
            ok = True
            for t in range(kk):
                if t != drive and not _holds(data[i, q_col[q, t]], q_op[q, t], q_val[q, t]):
                    ok = False
                    break
            if ok:
                cnt += 1
                if cnt >= cap:
                    break
        out[q] = cnt


def _own_query_counts(
    rows: np.ndarray,  # (b,) the released record each candidate query is made from
    u: np.ndarray,  # (b, m) random numbers: a query's columns are those of its row's k smallest
    k: int,  # conditions per query
    data: np.ndarray,  # (n, m) encoded table (NaN = missing)
    is_num: np.ndarray,  # (m,) numeric columns
    medians: np.ndarray,  # (m,) median of each numeric column
    order: np.ndarray,  # (m, n) the records in each column's sort order (missing last)
    run_lo: np.ndarray,  # (n, m) first sort position of each record's value (missing: of the missing block)
    run_hi: np.ndarray,  # (n, m) one past its last sort position
    by_col: np.ndarray,  # (m, n, m) run_lo of the records in each column's order, or (1, n, m) run_lo itself
    n_present: np.ndarray,  # (m,) non-missing values per column
    cols: np.ndarray,  # (b, k) out: each query's columns, ascending
    n_chunks: int,
) -> np.ndarray:
    """:func:`count_matches` (capped at 2) of the multivariate queries made from records of the
    table itself, and their columns.

    A query made from record r holds, on column a, ``is missing`` (r misses a), ``== r[a]``
    (categorical), ``>= r[a]`` or ``<= r[a]`` (numeric, above the median or not): the records
    satisfying it are a run of sort positions that depends only on the cell (r, a) —
    [run_lo, run_hi), [run_lo, n_present) or [0, run_hi) — so no binary search is needed, and a
    record j satisfies it when the first position of its own value, ``run_lo[j, a]``, lies in
    that run. Record r matches its own query, so a narrowest condition of one position is a
    count of 1 without a scan. With ``by_col`` in each column's order, the scan of the narrowest
    condition's run reads memory in sequence rather than record by record."""
    b = rows.shape[0]
    out = np.empty(b, dtype=np.int64)
    run_chunks(_own_query_counts_chunk, b, rows, u, k, data, is_num, medians, order, run_lo, run_hi, by_col,
               n_present, cols, out, chunks=n_chunks)
    return out


@njit(cache=True, nogil=True)
def _own_query_counts_chunk(ch, start, stop, rows, u, k, data, is_num, medians, order, run_lo, run_hi, by_col,
                            n_present, cols, out):
    """Queries ``start:stop`` of :func:`_own_query_counts` (:func:`ppdm.parallel.run_chunks`)."""
    m = u.shape[1]
    in_order = by_col.shape[0] == m
    best_u = np.empty(k)
    lo = np.empty(k, dtype=np.int64)
    hi = np.empty(k, dtype=np.int64)
    for q in range(start, stop):
        # the k columns of the smallest numbers, ascending: np.argpartition's choice (two equal
        # random numbers, chance about m²/2⁵³ a query, may let it take the other of the two)
        n_best = 0
        for a in range(m):
            v = u[q, a]
            if n_best == k and v >= best_u[k - 1]:
                continue
            t = min(n_best, k - 1)
            while t > 0 and best_u[t - 1] > v:
                best_u[t] = best_u[t - 1]
                cols[q, t] = cols[q, t - 1]
                t -= 1
            best_u[t] = v
            cols[q, t] = a
            n_best = min(n_best + 1, k)
        for t in range(1, k):  # by column
            a = cols[q, t]
            s = t
            while s > 0 and cols[q, s - 1] > a:
                cols[q, s] = cols[q, s - 1]
                s -= 1
            cols[q, s] = a
        r = rows[q]
        drive, width = 0, np.iinfo(np.int64).max
        for t in range(k):
            a = cols[q, t]
            w = data[r, a]
            if w != w or not is_num[a]:
                lo[t], hi[t] = run_lo[r, a], run_hi[r, a]
            elif w > medians[a]:
                lo[t], hi[t] = run_lo[r, a], n_present[a]
            else:
                lo[t], hi[t] = 0, run_hi[r, a]
            if hi[t] - lo[t] < width:
                drive, width = t, hi[t] - lo[t]
        if width <= 1:
            out[q] = 1
            continue
        cnt = 0
        dcol = cols[q, drive]
        for p in range(lo[drive], hi[drive]):
            ok = True
            for t in range(k):
                if t != drive:
                    x = by_col[dcol, p, cols[q, t]] if in_order else by_col[0, order[dcol, p], cols[q, t]]
                    if x < lo[t] or x >= hi[t]:
                        ok = False
                        break
            if ok:
                cnt += 1
                if cnt >= 2:
                    break
        out[q] = cnt


@dataclass
class Indexed:
    """An encoded table and, made on first use, each column's sort order (:func:`count_matches`)
    and each record's run of equal values in it (:func:`_own_query_counts`)."""

    data: np.ndarray
    sorted_vals: np.ndarray | None = None
    order: np.ndarray | None = None
    n_present: np.ndarray | None = None
    run_lo: np.ndarray | None = None
    run_hi: np.ndarray | None = None

    @classmethod
    def of(cls, data: np.ndarray) -> Indexed:
        return cls(np.ascontiguousarray(data))

    def _sort(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self.order is None or self.sorted_vals is None or self.n_present is None:
            order = np.argsort(self.data, axis=0)  # NaN sorts last
            self.order = np.ascontiguousarray(order.T)
            self.sorted_vals = np.ascontiguousarray(np.take_along_axis(self.data, order, axis=0).T)
            self.n_present = (~np.isnan(self.data)).sum(axis=0).astype(np.int64)
        return self.order, self.sorted_vals, self.n_present

    def runs(self) -> tuple[np.ndarray, np.ndarray]:
        """(run_lo, run_hi), each (n, m): the sort positions [run_lo, run_hi) of the values equal
        to each record's value in each column (the missing values are one run, last)."""
        if self.run_lo is None or self.run_hi is None:
            order, sv, n_present = self._sort()
            m, n = sv.shape
            p = np.arange(n)
            present = p < n_present[:, None]
            new = np.ones((m, n), dtype=bool)
            new[:, 1:] = sv[:, 1:] != sv[:, :-1]  # equal values (−0.0 and 0.0 too) continue a run
            new &= present | (p == n_present[:, None])  # the missing values: one run
            start = np.maximum.accumulate(np.where(new, p, 0), axis=1)
            nxt = np.where(new, p, n)
            end = np.full((m, n), n)
            end[:, :-1] = np.minimum.accumulate(nxt[:, :0:-1], axis=1)[:, ::-1]
            lo = np.empty((m, n), dtype=np.int32)  # n < 2³¹: half the memory of positions, faster reads
            hi = np.empty((m, n), dtype=np.int32)
            np.put_along_axis(lo, order, start.astype(np.int32), axis=1)
            np.put_along_axis(hi, order, end.astype(np.int32), axis=1)
            self.run_lo, self.run_hi = np.ascontiguousarray(lo.T), np.ascontiguousarray(hi.T)
        return self.run_lo, self.run_hi

    def count(self, q: tuple[np.ndarray, np.ndarray, np.ndarray], cap: int | None) -> np.ndarray:
        col, op, val = q
        if len(col) == 0:
            return np.zeros(0, dtype=np.int64)
        order, sv, n_present = self._sort()
        return count_matches(self.data, sv, order, n_present, col, op, val,
                             np.iinfo(np.int64).max if cap is None else cap)


def _without_duplicates(t: np.ndarray) -> np.ndarray:
    """The rows of an encoded table without repeats, first occurrences in order: duplicate
    records are one record to a query (missing values compare equal here)."""
    from ppdm.metrics.keyvar import group_codes

    if len(t) == 0:
        return t
    codes = np.column_stack([pd.factorize(t[:, a], use_na_sentinel=False)[0] for a in range(t.shape[1])])
    _, first = np.unique(group_codes(codes.astype(np.int64)), return_index=True)
    return t[np.sort(first)]


def _univariate_counts(data: np.ndarray, col: np.ndarray, op: np.ndarray, val: np.ndarray) -> np.ndarray:
    """Exact counts of one-condition queries, column by column with sorted values (no scan)."""
    out = np.zeros(len(col), dtype=np.int64)
    for a in np.unique(col):
        sel = np.flatnonzero(col == a)
        v = data[:, a]
        present = np.sort(v[~np.isnan(v)])
        n_present = len(present)
        n_missing = len(v) - n_present
        w = val[sel]
        left = np.searchsorted(present, w, side="left")
        right = np.searchsorted(present, w, side="right")
        o = op[sel]
        res = np.select(
            [o == EQ, o == NE, o == LT, o == GT, o == LE, o == GE, o == ISNULL, o == NOTNULL],
            [right - left, n_present - (right - left), left, n_present - right, right, n_present - left,
             np.full(len(sel), n_missing), np.full(len(sel), n_present)], default=0)
        nanval = np.isnan(w) & (o <= GE)  # a comparison with a missing value matches nothing
        out[sel] = np.where(nanval, 0, res)
    return out


def _counts(tab: Indexed, q: Queries, cap: int | None) -> np.ndarray:
    col, op, val = q
    if col.shape[1] == 1:
        c = _univariate_counts(tab.data, col[:, 0], op[:, 0], val[:, 0])
        return c if cap is None else np.minimum(c, cap)
    return tab.count(q, cap)


# --------------------------------------------------------------- query makers
def _univariate_queries(tab: Indexed, enc: Encoded, rng: np.random.Generator, n_queries: int) -> Queries:
    syn = tab.data
    cols, ops, vals = [], [], []
    for a in range(syn.shape[1]):
        v = syn[:, a]
        miss = np.isnan(v)
        if miss.sum() == 1:
            cols.append(a)
            ops.append(ISNULL)
            vals.append(np.nan)
        present = v[~miss]
        if enc.is_numeric[a] and present.size:
            cols += [a, a]
            ops += [LE, GE]
            vals += [present.min(), present.max()]
        uniq, cnt = np.unique(present, return_counts=True)
        rare = uniq[cnt == 1]
        cols += [a] * len(rare)
        ops += [EQ] * len(rare)
        vals += rare.tolist()
    col = np.array(cols, dtype=np.int64)[:, None]
    op = np.array(ops, dtype=np.int64)[:, None]
    val = np.array(vals, dtype=float)[:, None]
    order = _common_order(col[:, 0], op[:, 0], val[:, 0], rng)
    col, op, val = col[order], op[order], val[order]
    keep = np.flatnonzero(_counts(tab, (col, op, val), 2) == 1)[:n_queries]
    return col[keep], op[keep], val[keep]


def _mix64(v: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: a well-spread 64-bit hash of each value."""
    with np.errstate(over="ignore"):
        v = (v ^ (v >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        v = (v ^ (v >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return v ^ (v >> np.uint64(31))


def _common_order(col: np.ndarray, op: np.ndarray, val: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A random order of the candidate queries in which each query's place depends only on the
    query and the seed, not on the other candidates: two releases measured with the same seed
    draw the same queries wherever they offer the same ones (common random numbers), so their
    difference in risk is the difference of what they release, not of the draw. One number is
    taken from ``rng`` whatever the number of candidates."""
    salt = np.uint64(int(rng.integers(0, 2**63 - 1)))
    bits = np.ascontiguousarray(np.where(np.isnan(val), np.nan, val + 0.0), dtype=np.float64).view(np.uint64)
    key = _mix64(bits ^ _mix64(col.astype(np.uint64) * np.uint64(16) + op.astype(np.uint64) + salt))
    return np.argsort(key, kind="stable")


def _multivariate_queries(
    tab: Indexed, enc: Encoded, rng: np.random.Generator, n_queries: int, n_cols: int, max_attempts: int | None,
    batch: int = 1000,
) -> Queries:
    syn = tab.data
    n, m = syn.shape
    medians = np.array([np.nanmedian(syn[:, a]) if enc.is_numeric[a] and not np.isnan(syn[:, a]).all() else np.nan
                        for a in range(m)])
    order, _, n_present = tab._sort()
    run_lo, run_hi = tab.runs()
    # run_lo copied into each column's order (m² values a record) while that stays small: the
    # scans of the search then read memory in sequence
    by_col = np.take(run_lo, order, axis=0) if n * m * m <= BY_COLUMN_CELLS else run_lo[None]
    is_num = np.ascontiguousarray(enc.is_numeric, dtype=np.bool_)
    seen: set[bytes] = set()
    out_c: list[Any] = []
    out_o: list[Any] = []
    out_v: list[Any] = []
    attempts = 0
    # a candidate is fixed by its row and its set of columns: N = n·C(m, n_cols) of them. After
    # N·(ln N + 10) draws every one has been seen except with probability below e^-10, so on a
    # small table the search stops there instead of running to max_attempts for queries that
    # do not exist
    n_cand = n * math.comb(m, n_cols)
    cover = int(math.ceil(n_cand * (math.log(max(n_cand, 1)) + 10)))
    max_attempts = cover if max_attempts is None else min(max_attempts, cover)
    while len(out_c) < n_queries and attempts < max_attempts:
        if out_c:  # size the next batch on the share found so far: few large calls, not many small
            batch = int(min(50_000, max(1000, 1.2 * (n_queries - len(out_c)) * attempts / len(out_c))))
        b = min(batch, max_attempts - attempts)
        rows = rng.integers(0, n, size=b)
        u = rng.random((b, m))
        cols = np.empty((b, n_cols), dtype=np.int64)
        counts = _own_query_counts(rows, u, n_cols, syn, is_num, medians, order, run_lo, run_hi, by_col, n_present,
                                   cols, chunks_for(b))
        attempts += b
        singles = np.flatnonzero(counts == 1)
        cols = cols[singles]
        vals = syn[rows[singles, None], cols]
        ops = np.where(np.isnan(vals), ISNULL,
                       np.where(enc.is_numeric[cols], np.where(vals > medians[cols], GE, LE), EQ))
        keyvals = np.nan_to_num(vals, nan=np.inf)  # once per batch, not per query
        for i, kv in enumerate(keyvals):
            key = cols[i].tobytes() + ops[i].tobytes() + kv.tobytes()
            if key in seen:
                continue
            seen.add(key)
            out_c.append(cols[i])
            out_o.append(ops[i])
            out_v.append(vals[i])
            if len(out_c) >= n_queries:
                break
    if not out_c:
        return (np.zeros((0, n_cols), np.int64), np.zeros((0, n_cols), np.int64), np.zeros((0, n_cols)))
    return np.array(out_c), np.array(out_o), np.array(out_v)


def _random_queries(syn: np.ndarray, enc: Encoded, rng: np.random.Generator, n_queries: int, n_cols: int) -> Queries:
    """The baseline attacker's queries: random attributes, a random value of z (missing
    included) and a random operator (== or != for categorical attributes, any comparison
    for numeric ones; a missing value gives ``is missing`` or ``is not missing``)."""
    n, m = syn.shape
    cols = np.sort(np.argpartition(rng.random((n_queries, m)), n_cols - 1, axis=1)[:, :n_cols], axis=1)
    ops = np.empty_like(cols)
    vals = np.empty(cols.shape)
    u_val = rng.random(cols.shape)
    u_op = rng.random(cols.shape)
    for a in np.unique(cols):
        at = cols == a
        v = syn[:, a]
        values = np.unique(v[~np.isnan(v)])
        if np.isnan(v).any():
            values = np.append(values, np.nan)
        picked = values[np.minimum((u_val[at] * len(values)).astype(np.int64), len(values) - 1)]
        n_ops = 6 if enc.is_numeric[a] else 2
        op = np.minimum((u_op[at] * n_ops).astype(np.int64), n_ops - 1)
        op = np.where(np.isnan(picked), np.where(op == EQ, ISNULL, NOTNULL), op)
        vals[at] = picked
        ops[at] = op
    return cols, ops, vals


# -------------------------------------------------------------- size correction
def _log_comb(a: np.ndarray | float, b: np.ndarray | float) -> np.ndarray:
    from scipy.special import gammaln

    return gammaln(a + 1) - gammaln(b + 1) - gammaln(a - b + 1)


def expected_single_matches(counts: np.ndarray, m: int, s: int) -> float:
    """Expected number of queries matching exactly one of s records drawn without replacement
    from m, for queries matching ``counts`` of the m records: Σ c·C(m − c, s − 1)/C(m, s)."""
    c = counts[(counts > 0) & (m - counts >= s - 1)].astype(float)
    if c.size == 0 or s < 1:
        return 0.0
    return float(np.sum(c * np.exp(_log_comb(m - c, np.full_like(c, s - 1)) - _log_comb(np.float64(m), np.float64(s)))))


def _model(n: np.ndarray | float, w: float, a: float) -> np.ndarray | float:
    """Cohen & Nissim: A·∫₀^w s·u(1 − u)^(s−1) du = A·(1 − (s·w + 1)(1 − w)^s)/(s + 1)."""
    n = np.asarray(n, dtype=float)
    return a * (1.0 - (n * w + 1.0) * (1.0 - w) ** n) / (n + 1.0)


def control_at_size(counts: np.ndarray, m: int, n: int) -> float:
    """Successes of the control attack rescaled from m control records to n originals."""
    if n == m:
        return float(np.sum(counts == 1))
    if n < m:
        return expected_single_matches(counts, m, n)
    from scipy.optimize import OptimizeWarning, curve_fit

    sizes = np.unique(np.linspace(min(1000, m), m, 10).astype(int))
    succ = np.array([expected_single_matches(counts, m, int(s)) for s in sizes])
    if not succ.any():
        return 0.0
    w0 = 1.0 / sizes.max()
    a0 = succ.max() / max(float(_model(sizes.max(), w0, 1.0)), 1e-300)
    try:
        with warnings.catch_warnings():  # only the fitted curve is used, never its covariance
            warnings.simplefilter("ignore", OptimizeWarning)
            (w, a), _ = curve_fit(_model, sizes, succ, p0=(w0, a0), bounds=((0.0, 0.0), (1.0, np.inf)),
                                  maxfev=20000)
    except (RuntimeError, ValueError):  # the fit failed: keep the measured successes
        return float(succ[-1])
    at_m = float(_model(m, w, a))
    return float(succ[-1]) * float(_model(n, w, a)) / at_m if at_m > 0 else float(succ[-1])


# --------------------------------------------------------------------- attack
def singling_out(
    ori: pd.DataFrame,
    syn: pd.DataFrame,
    control: pd.DataFrame | None,
    *,
    mode: Literal["univariate", "multivariate"] = "multivariate",
    n_attacks: int | None = None,
    n_cols: int = 3,
    max_attempts: int | None = 10_000_000,
    confidence: float = 0.95,
    numeric: list[str] | None = None,
    random_state: RandomState = None,
    encoded: Encoded | None = None,
) -> AttackResult:
    """Singling-out risk of the release ``syn`` for the records of ``ori`` (see the module
    docstring), with ``control`` records not used to make ``syn``.

    ``n_attacks`` queries (default 2000 univariate, 500 multivariate); ``n_cols`` conditions
    per multivariate query; ``max_attempts`` caps the candidate queries tried (``None``: no
    cap beyond the coverage bound: after N·(ln N + 10) candidates, N = rows × C(attributes,
    n_cols), every distinct candidate has almost surely been tried, and the search ends). ``numeric`` names the numeric attributes (default: numeric dtypes). The result's
    ``detail`` holds the queries and which of them succeeded (never printed). ``encoded``: these tables already encoded on all their columns (:func:`~ppdm.attacks._common.context_encoding`), shared by the attacks of one evaluation.
    """
    attack = f"singling out ({mode})"
    if mode not in ("univariate", "multivariate"):
        raise ParameterError(f"singling-out mode must be 'univariate' or 'multivariate', got {mode!r}")
    n_attacks = check_n_attacks(n_attacks if n_attacks is not None else (2000 if mode == "univariate" else 500))
    if mode == "multivariate":
        n_cols = check_n_attacks(n_cols, "n_cols")
    if max_attempts is not None:
        max_attempts = check_n_attacks(max_attempts, "max_attempts")
    confidence = check_confidence(confidence)
    ori, syn, control = check_tables(ori, syn, control, attack)
    cols = list(ori.columns)
    if mode == "multivariate" and n_cols > len(cols):
        raise ParameterError(f"singling out: n_cols = {n_cols} but the table has {len(cols)} attributes")
    rng = rng_of(random_state)
    enc = attack_encoding(encoded, [ori, syn, control], cols, numeric)
    if "without_duplicates" not in enc.memo:  # the same for both modes
        enc.memo["without_duplicates"] = tuple(Indexed.of(_without_duplicates(t)) for t in enc.tables)
    o, s, c = enc.memo["without_duplicates"]
    k = 1 if mode == "univariate" else n_cols
    if mode == "univariate":
        queries = _univariate_queries(s, enc, rng, n_attacks)
    else:
        queries = _multivariate_queries(s, enc, rng, n_attacks, n_cols, max_attempts)
    main_ok = _counts(o, queries, 2) == 1
    same_size = len(c.data) == len(o.data)
    ctl_counts = _counts(c, queries, 2 if same_size else None)
    n_control = control_at_size(ctl_counts, len(c.data), len(o.data))
    base = _random_queries(s.data, enc, rng, n_attacks, k)
    n_baseline = int(np.sum(_counts(o, base, 2) == 1))
    detail = {"columns": cols, "query_columns": queries[0], "query_operators": queries[1],
              "query_values": queries[2], "main_success": main_ok, "control_success": ctl_counts == 1}
    settings = {"mode": mode, "n_cols": k, "n_queries": int(len(queries[0])), "max_attempts": max_attempts,
                "control_rescaled": not same_size,
                "rows_without_duplicates": [len(o.data), len(s.data), len(c.data)]}
    return make_result(attack, n_attacks=(n_attacks, n_attacks, n_attacks), n_success=int(main_ok.sum()),
                       n_baseline=n_baseline, n_control=n_control, confidence=confidence, settings=settings,
                       detail=detail)


def query_text(detail: dict, i: int) -> str:
    """Query i of a singling-out result's ``detail`` as text (it holds released values: for the
    data owner's eyes, never for a report)."""
    parts = []
    for a, o, v in zip(detail["query_columns"][i], detail["query_operators"][i], detail["query_values"][i],
                       strict=True):
        parts.append(f"{detail['columns'][a]} {OP_TEXT[int(o)]}" + ("" if o in (ISNULL, NOTNULL) else f" {v!r}"))
    return " and ".join(parts)


# ------------------------------------------------------------ registrations
_UNIVARIATE_OPTIONS = ("n_attacks", "confidence")
_MULTIVARIATE_OPTIONS = ("n_attacks", "n_cols", "max_attempts", "confidence")


@register_measure("singling_out_univariate", kind="risk", needs_class=False, default=True, options=_UNIVARIATE_OPTIONS,
                  direction="lower", value_range=(0.0, 1.0), threshold=0.05,
                  meaning="How much more often one-attribute predicates learnt from the release isolate a single "
                  "original record than a control record, as a share; 0 is best.",
                  description="singling-out risk, one-attribute queries (Giomi et al. 2023, anonymeter)")
def _so_uni_measure(ctx: EvaluationContext) -> AttackResult:
    x, z, control, num = attack_tables(ctx)
    opts = measure_options(ctx, "singling_out_univariate", _UNIVARIATE_OPTIONS)
    return singling_out(x, z, control, mode="univariate", numeric=num, random_state=ctx.random_state,
                        encoded=context_encoding(ctx, x, z, control, num), **opts)


@register_measure("singling_out_multivariate", kind="risk", needs_class=False, default=True,
                  options=_MULTIVARIATE_OPTIONS,
                  direction="lower", value_range=(0.0, 1.0), threshold=0.05,
                  meaning="How much more often three-attribute predicates learnt from the release isolate a single "
                  "original record than a control record, as a share; 0 is best.",
                  description="singling-out risk, queries on 3 attributes of a released record (Giomi et al. "
                              "2023, anonymeter)")
def _so_multi_measure(ctx: EvaluationContext) -> AttackResult:
    x, z, control, num = attack_tables(ctx)
    opts = measure_options(ctx, "singling_out_multivariate", _MULTIVARIATE_OPTIONS)
    # more queries than anonymeter's 500: their random choice otherwise moves the interval across
    # the verdict's threshold from one measurement seed to the next
    opts.setdefault("n_attacks", EVALUATE_MULTIVARIATE_QUERIES)
    return singling_out(x, z, control, mode="multivariate", numeric=num, random_state=ctx.random_state,
                        encoded=context_encoding(ctx, x, z, control, num), **opts)


__all__ = ["control_at_size", "count_matches", "expected_single_matches", "query_text", "singling_out"]

