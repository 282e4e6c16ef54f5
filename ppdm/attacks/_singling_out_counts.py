"""How many records of a table match singling-out queries: the counting engine of
:mod:`ppdm.attacks.singling_out` (Giomi et al. 2023, §4.1), split from it.

A query is a conjunction of conditions ``column operator value``; :func:`count_matches`
counts the records satisfying one from each column's sort order, :func:`_own_query_counts`
those of the multivariate queries made from a table's own records, and :class:`Indexed` keeps
a table with the sort orders they read. :mod:`ppdm.attacks.singling_out` re-exports every
name here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from ppdm.parallel import run_chunks

EQ, NE, LT, GT, LE, GE, ISNULL, NOTNULL = range(8)
Queries = tuple[np.ndarray, np.ndarray, np.ndarray]  # columns, operators, values: (n_queries, conditions)

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
