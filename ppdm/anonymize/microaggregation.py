"""Microaggregation: partition records into groups of at least k and replace them by group means.

Paper 003 §3.1 builds rounding sets from three univariate microaggregation methods whose
group centroids become the rounding points:

* **MDAV** (maximum distance to average vector, fixed group size k): :func:`mdav_1d`, an
  O(n log n) univariate path, and :func:`mdav`, the general multivariate algorithm
  (O(n²·p/k) time, O(n·p) memory) behind the :class:`MDAV` technique.
* **V-MDAV** (variable group sizes k…2k−1, Solanas et al. 2006): :func:`vmdav_1d`.
* **Optimal univariate microaggregation** (Hansen & Mukherjee 2003, "OMA" in paper 003):
  :func:`optimal_1d`, the shortest path over the sorted values solved by dynamic programming
  in O(n·k) time and O(n) memory.

Every function returns one integer group label per record. Univariate labels number the
groups in ascending order of value, so groups are contiguous runs of the sorted values.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd
from numba import njit

from ppdm.anonymize.base import Technique, check_column_names
from ppdm.anonymize.registry import register
from ppdm.data.schema import Schema
from ppdm.errors import ParameterError
from ppdm.utils import finite_vector

Scaling = Literal["standard", "sdcmicro", "none"]


# ----------------------------------------------------------------------------- checks
def check_k(k: object, n: int, *, name: str = "k") -> int:
    """Return ``k`` as an int, or raise :class:`ParameterError` unless 1 ≤ k ≤ n."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise ParameterError(f"{name} must be a whole number, got {k!r}")
    if k < 1:
        raise ParameterError(f"{name} must be at least 1, got {k}")
    if k > n:
        raise ParameterError(f"{name}={k} exceeds the number of records ({n}); no group of {k} can be formed")
    return int(k)


def _as_1d(x: object) -> np.ndarray:
    return finite_vector(x, task="microaggregate")


def _labels_from_sorted(order: np.ndarray, sorted_labels: np.ndarray) -> np.ndarray:
    labels = np.empty(order.size, dtype=np.int64)
    labels[order] = sorted_labels
    return labels


# ------------------------------------------------------------------ univariate MDAV
@njit(cache=True)
def _mdav_sorted(v: np.ndarray, first_idx: np.ndarray, k: int) -> np.ndarray:
    # v sorted ascending; first_idx[i] = original index of v[i] (stable sort, so ties keep
    # index order). Returns the group number of every sorted position.
    n = v.size
    out = np.empty(n, dtype=np.int64)
    csum = np.zeros(n + 1)
    for i in range(n):
        csum[i + 1] = csum[i] + v[i]
    lo = 0
    hi = n  # remaining slice is [lo, hi)
    low_groups = 0
    high_stack = np.empty(n // max(k, 1) + 2, dtype=np.int64)  # group starts peeled from the top
    n_high = 0
    while hi - lo >= 3 * k:
        # x_r and x_s are the two extremes; each takes its k-1 nearest (the k values at its end)
        for i in range(lo, lo + k):
            out[i] = low_groups
        low_groups += 1
        lo += k
        high_stack[n_high] = hi - k
        n_high += 1
        hi -= k
    if hi - lo >= 2 * k:
        mean = (csum[hi] - csum[lo]) / (hi - lo)
        d_lo = (v[lo] - mean) ** 2
        d_hi = (v[hi - 1] - mean) ** 2
        take_low = d_lo > d_hi
        if d_lo == d_hi:
            # the farthest record is the one with the lowest original index among the extremes
            j = hi - 1
            while j > lo and v[j - 1] == v[hi - 1]:
                j -= 1
            take_low = first_idx[lo] < first_idx[j]
        if take_low:
            for i in range(lo, lo + k):
                out[i] = low_groups
            low_groups += 1
            lo += k
        else:
            high_stack[n_high] = hi - k
            n_high += 1
            hi -= k
    if hi > lo:
        for i in range(lo, hi):
            out[i] = low_groups
        low_groups += 1
    g = low_groups
    for t in range(n_high - 1, -1, -1):
        start = high_stack[t]
        for i in range(start, start + k):
            out[i] = g
        g += 1
    return out


def mdav_1d(x: object, k: int) -> np.ndarray:
    """Univariate MDAV in O(n log n) (paper 003 §3.1, fixed group size k).

    In one dimension the record farthest from the centroid of the remaining records is an
    extreme, the record farthest from it is the opposite extreme, and the k−1 records nearest
    to an extreme are its neighbours in sorted order. So one stable sort and two pointers give
    the groups of the general algorithm: k-groups peeled from both ends while ≥ 3k records
    remain, then one k-group from the end farther from the remaining mean when 2k…3k−1 remain
    (a tie goes to the end holding the lowest original index), and the rest as the last group.
    """
    v = _as_1d(x)
    k = check_k(k, v.size)
    order = np.argsort(v, kind="stable")
    return _labels_from_sorted(order, _mdav_sorted(v[order], order.astype(np.int64), k))


# -------------------------------------------------------------------- univariate V-MDAV
@njit(cache=True)
def _vmdav_sorted(v: np.ndarray, k: int, gamma: float) -> np.ndarray:
    n = v.size
    grp = np.full(n, -1, dtype=np.int64)
    mean = v.mean()
    lo = 0
    hi = n - 1  # unassigned slice [lo, hi]
    g = 0
    while hi - lo + 1 >= k:
        # e = unassigned record farthest from the global centroid (tie -> low end)
        from_low = abs(v[lo] - mean) >= abs(v[hi] - mean)
        if from_low:
            for i in range(lo, lo + k):
                grp[i] = g
            lo += k
            size = k
            # extend while the next unassigned value is much nearer to the group than to the rest
            while size < 2 * k - 1 and hi - lo + 1 >= 2:
                d_in = v[lo] - v[lo - 1]
                d_out = v[lo + 1] - v[lo]
                if d_in < gamma * d_out:
                    grp[lo] = g
                    lo += 1
                    size += 1
                else:
                    break
        else:
            for i in range(hi - k + 1, hi + 1):
                grp[i] = g
            hi -= k
            size = k
            while size < 2 * k - 1 and hi - lo + 1 >= 2:
                d_in = v[hi + 1] - v[hi]
                d_out = v[hi] - v[hi - 1]
                if d_in < gamma * d_out:
                    grp[hi] = g
                    hi -= 1
                    size += 1
                else:
                    break
        g += 1
    return grp


def _relabel_sorted(grp: np.ndarray) -> np.ndarray:
    # groups of a sorted array are contiguous: number them from the left
    starts = np.r_[True, grp[1:] != grp[:-1]]
    return np.cumsum(starts) - 1


def _split_best(v: np.ndarray, k: int) -> int:
    """Cut position (k ≤ t ≤ len−k) splitting a sorted block into two groups with least SSE."""
    m = v.size
    c = v - v.mean()
    s1 = np.cumsum(c)
    s2 = np.cumsum(c * c)
    t = np.arange(k, m - k + 1)
    left = s2[t - 1] - s1[t - 1] ** 2 / t
    right = (s2[-1] - s2[t - 1]) - (s1[-1] - s1[t - 1]) ** 2 / (m - t)
    return int(t[np.argmin(left + right)])


def vmdav_1d(x: object, k: int, gamma: float = 0.2) -> np.ndarray:
    """Univariate V-MDAV (Solanas et al. 2006; paper 003 §3.1, Algorithm 2), groups of k…2k−1.

    Over the sorted values the unassigned records always form one contiguous slice. The
    record e farther from the global mean of its two ends starts a group with its k−1
    neighbours; the group then grows by the next unassigned value while its distance to the
    group (d_in) is below ``gamma`` times its distance to the next unassigned value (d_out),
    up to 2k−1 members. Fewer than k records left at the end join the group with the nearest
    centroid; a group pushed beyond 2k−1 members by them is split at its least-SSE cut into
    two groups of k…2k−1, so every group keeps the sizes the paper states.
    """
    v = _as_1d(x)
    k = check_k(k, v.size)
    if not np.isfinite(gamma) or gamma < 0:
        raise ParameterError(f"gamma must be a non-negative number, got {gamma!r}")
    order = np.argsort(v, kind="stable")
    s = v[order]
    grp = _vmdav_sorted(s, k, float(gamma))
    left = np.flatnonzero(grp < 0)
    if left.size:
        # the (< k) leftovers form one sorted slice between the groups built from the low end
        # and those from the high end; the nearest centroid is that of an adjacent group
        a, b = int(left[0]), int(left[-1])
        near = [g for g in (grp[a - 1] if a > 0 else -1, grp[b + 1] if b + 1 < s.size else -1) if g >= 0]
        cents = {g: s[grp == g].mean() for g in near}
        for i in left:  # equal distance -> the lower group, so runs stay contiguous
            grp[i] = min(near, key=lambda g: (abs(cents[g] - s[i]), cents[g]))
        # split any run pushed over 2k-1 members
        grp = _relabel_sorted(grp)
        out = grp.copy()
        bounds = np.flatnonzero(np.r_[True, grp[1:] != grp[:-1], True])
        nxt = 0
        for a, b in zip(bounds[:-1], bounds[1:], strict=True):
            if b - a > 2 * k - 1:
                t = _split_best(s[a:b], k)
                out[a : a + t] = nxt
                out[a + t : b] = nxt + 1
                nxt += 2
            else:
                out[a:b] = nxt
                nxt += 1
        grp = out
    else:
        grp = _relabel_sorted(grp)
    return _labels_from_sorted(order, grp)


# ------------------------------------------------------------- optimal univariate (OMA)
@njit(cache=True)
def _optimal_sorted(v: np.ndarray, k: int) -> np.ndarray:
    n = v.size
    cost = np.full(n + 1, np.inf)
    cost[0] = 0.0
    back = np.zeros(n + 1, dtype=np.int64)
    for j in range(k, n + 1):
        # grow the last group v[i..j-1] leftwards with Welford updates: exact SSE, no cancellation
        mean = 0.0
        m2 = 0.0
        cnt = 0
        best = np.inf
        bi = -1
        lo = j - 2 * k + 1
        if lo < 0:
            lo = 0
        for i in range(j - 1, lo - 1, -1):
            cnt += 1
            x = v[i]
            delta = x - mean
            mean += delta / cnt
            m2 += delta * (x - mean)
            if cnt >= k and cost[i] < np.inf:
                c = cost[i] + m2
                if c <= best:  # equal cost: keep the smaller i (the larger last group)
                    best = c
                    bi = i
        cost[j] = best
        back[j] = bi
    # walk the back-pointers from n to 0; groups come out right to left
    n_groups = 0
    j = n
    while j > 0:
        n_groups += 1
        j = back[j]
    out = np.empty(n, dtype=np.int64)
    g = n_groups - 1
    j = n
    while j > 0:
        i = back[j]
        for t in range(i, j):
            out[t] = g
        g -= 1
        j = i
    return out


def optimal_1d(x: object, k: int) -> np.ndarray:
    """Optimal univariate microaggregation (Hansen & Mukherjee 2003; OMA in paper 003 §3.1).

    The optimal k-partition of univariate data consists of groups that are contiguous in
    sorted order with k…2k−1 members; it is the shortest path from node 0 to node n of the
    graph whose arc (i, j), i+k ≤ j ≤ i+2k−1, costs the SSE of the sorted values i+1…j. The
    graph is acyclic in index order, so a forward recursion over j (each step trying the
    ≤ k admissible last groups) finds it in O(n·k) time with O(n) memory. Among equal-cost
    paths the one whose last group is largest wins.
    """
    v = _as_1d(x)
    k = check_k(k, v.size)
    order = np.argsort(v, kind="stable")
    return _labels_from_sorted(order, _optimal_sorted(v[order], k))


# ------------------------------------------------------------------ multivariate MDAV
@njit(cache=True)
def _dist_pass(Y: np.ndarray, m: int, c: np.ndarray, w: np.ndarray, f32: bool,
               d64: np.ndarray, d32: np.ndarray) -> None:
    # weighted squared distances of the first m columns of Y (p × n, one attribute per row,
    # so the inner loop runs over contiguous memory) to the point c, into d64[:m]
    p = Y.shape[0]
    if f32:
        # single-precision accumulation of double-precision terms, as sdcMicro's MDAV does
        for t in range(m):
            d32[t] = np.float32(0.0)
        for j in range(p):
            cj = c[j]
            wj = w[j]
            for t in range(m):
                u = Y[j, t] - cj
                d32[t] = np.float32(d32[t] + np.float32(u * u * wj))
        for t in range(m):
            d64[t] = d32[t]
    else:
        for t in range(m):
            d64[t] = 0.0
        for j in range(p):
            cj = c[j]
            wj = w[j]
            for t in range(m):
                u = Y[j, t] - cj
                d64[t] += u * u * wj


@njit(cache=True)
def _before(d1: float, i1: int, d2: float, i2: int, tie_high: bool) -> bool:
    if d1 < d2:
        return True
    if d1 > d2:
        return False
    return i1 > i2 if tie_high else i1 < i2


@njit(cache=True)
def _compact(Y: np.ndarray, idx: np.ndarray, taken: np.ndarray, m: int, sums: np.ndarray) -> int:
    # stable compaction of the remaining records; their column sums are re-accumulated in
    # ascending index order (the order in which sdcMicro sums the centroid)
    p = Y.shape[0]
    q = 0
    for t in range(m):
        if not taken[t]:
            idx[q] = idx[t]
            q += 1
    for j in range(p):
        q = 0
        acc = 0.0
        for t in range(m):
            if not taken[t]:
                v = Y[j, t]
                Y[j, q] = v
                acc += v
                q += 1
        sums[j] = acc
    for t in range(m):
        taken[t] = False
    return q


@njit(cache=True)
def _mdav_core(X: np.ndarray, w: np.ndarray, k: int, f32: bool, tie_high: bool) -> np.ndarray:
    n, p = X.shape
    Y = np.ascontiguousarray(X.T)  # remaining records (one attribute per row), index order
    idx = np.arange(n)
    labels = np.full(n, -1, dtype=np.int64)
    taken = np.zeros(n, dtype=np.bool_)
    d64 = np.empty(n)
    d32 = np.empty(n, dtype=np.float32)
    sums = np.zeros(p)
    m_arr = _compact(Y, idx, taken, n, sums)  # live prefix of Y (may hold taken records)
    m = n  # records not yet grouped
    center = np.empty(p)
    row = np.empty(p)
    sel_d = np.empty(k)
    sel_t = np.empty(k, dtype=np.int64)
    g = 0
    while m >= 2 * k:
        # compaction is lazy: grouped records are skipped until they are a quarter of the
        # array, which saves a read-write pass over the data in most rounds
        if 4 * (m_arr - m) >= m_arr:
            m_arr = _compact(Y, idx, taken, m_arr, sums)
        ngroups = 2 if m >= 3 * k else 1
        for j in range(p):
            center[j] = sums[j] / m
        _dist_pass(Y, m_arr, center, w, f32, d64, d32)
        r = 0
        best = -1.0
        for t in range(m_arr):
            if not taken[t] and d64[t] > best:  # first (lowest index) farthest record
                best = d64[t]
                r = t
        for _ in range(ngroups):
            for j in range(p):
                row[j] = Y[j, r]
            _dist_pass(Y, m_arr, row, w, f32, d64, d32)
            far = -1
            far_d = -1.0
            cnt = 0
            for t in range(m_arr):
                if taken[t]:
                    continue
                d = d64[t]
                if d > far_d:
                    far_d = d
                    far = t
                # keep the k nearest, sorted, in a small insertion buffer
                if cnt < k:
                    pos = cnt
                    cnt += 1
                elif _before(d, idx[t], sel_d[k - 1], idx[sel_t[k - 1]], tie_high):
                    pos = k - 1
                else:
                    continue
                while pos > 0 and _before(d, idx[t], sel_d[pos - 1], idx[sel_t[pos - 1]], tie_high):
                    sel_d[pos] = sel_d[pos - 1]
                    sel_t[pos] = sel_t[pos - 1]
                    pos -= 1
                sel_d[pos] = d
                sel_t[pos] = t
            for q in range(k):
                t = sel_t[q]
                taken[t] = True
                labels[idx[t]] = g
                for j in range(p):
                    sums[j] -= Y[j, t]
            g += 1
            m -= k
            r = far
    for t in range(m_arr):
        if not taken[t]:
            labels[idx[t]] = g
    return labels


def mdav_weights(X: np.ndarray, scaling: Scaling) -> np.ndarray:
    """Per-attribute weights of the squared distance.

    ``"standard"``: 1/sample variance (distances between z-scored records);
    ``"sdcmicro"``: 1/population variance computed as mean(x²) − mean(x)², sdcMicro's convention;
    ``"none"``: 1 (raw Euclidean distance). A constant attribute gets weight 1.
    """
    n, p = X.shape
    if scaling == "none":
        return np.ones(p)
    if scaling == "standard":
        var = X.var(axis=0, ddof=1) if n > 1 else np.zeros(p)
    elif scaling == "sdcmicro":
        avr = X.sum(axis=0) / n
        var = (X * X).sum(axis=0) / n - avr * avr
    else:
        raise ParameterError(f"scaling must be 'standard', 'sdcmicro' or 'none', got {scaling!r}")
    w = np.ones(p)
    nz = var != 0
    w[nz] = 1.0 / var[nz]
    return w


def mdav(X: object, k: int, scaling: Scaling = "standard") -> np.ndarray:
    """Multivariate MDAV microaggregation with fixed group size k (Domingo-Ferrer & Torra).

    While at least 3k records remain: x_r is the record farthest from the centroid of the
    remaining records, x_s the record farthest from x_r; x_r and its k−1 nearest records form
    a group, then x_s and its k−1 nearest among the rest. With 2k…3k−1 left, one group is
    formed around the record farthest from the centroid and the rest is the last group; fewer
    than 2k records form a single group. Distances are weighted squared Euclidean
    (:func:`mdav_weights`). Ties go to the lowest original index, except that with
    ``scaling="sdcmicro"`` distances are accumulated in single precision and, among equally
    near records, the highest index is taken first, as sdcMicro 5.8.1 does.

    O(n²·p/k) time; memory O(n·p) (no distance matrix).
    """
    A = np.ascontiguousarray(np.asarray(X, dtype=float))
    if A.ndim == 1:
        A = A[:, None]
    if A.ndim != 2 or A.shape[0] == 0 or A.shape[1] == 0:
        raise ParameterError("MDAV needs a non-empty 2-d table of numbers")
    if not np.all(np.isfinite(A)):
        raise ParameterError("MDAV cannot handle NaN or infinite values")
    k = check_k(k, A.shape[0])
    w = mdav_weights(A, scaling)
    return _mdav_core(A, w, k, scaling == "sdcmicro", scaling == "sdcmicro")


# ------------------------------------------------------------------------- summaries
def group_means(x: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Mean of ``x`` (1-d or 2-d) per group label 0…g−1."""
    labels = np.asarray(labels)
    g = int(labels.max()) + 1
    cnt = np.bincount(labels, minlength=g).astype(float)
    if x.ndim == 1:
        return np.bincount(labels, weights=x, minlength=g) / cnt
    return np.column_stack([np.bincount(labels, weights=x[:, j], minlength=g) / cnt for j in range(x.shape[1])])


def nan_group_means(x: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Mean of the observed (non-NaN) values of 2-d ``x`` per group label 0…g−1, column by
    column; NaN where a group has no observed value."""
    labels = np.asarray(labels)
    g = int(labels.max()) + 1
    cols = []
    for j in range(x.shape[1]):
        obs = ~np.isnan(x[:, j])
        cnt = np.bincount(labels[obs], minlength=g).astype(float)
        tot = np.bincount(labels[obs], weights=x[obs, j], minlength=g)
        with np.errstate(invalid="ignore", divide="ignore"):
            cols.append(np.where(cnt > 0, tot / np.where(cnt > 0, cnt, 1.0), np.nan))
    return np.column_stack(cols)


def sse(x: np.ndarray, labels: np.ndarray) -> float:
    """Within-group sum of squared errors Σ_i ‖x_i − centroid(group(i))‖²."""
    x = np.asarray(x, dtype=float)
    cent = group_means(x, labels)
    return float(((x - cent[labels]) ** 2).sum())


# ------------------------------------------------------------------------- technique
@register("mdav")
class MDAV(Technique):
    """Multivariate MDAV microaggregation: groups of k similar records share their centroid.

    Parameters
    ----------
    columns:
        Numeric attributes aggregated together (default: every numeric attribute; never the class).
    k:
        Minimum group size (every group has k members, the last one k…2k−1).
    scaling:
        ``"standard"`` (z-scores), ``"sdcmicro"`` (sdcMicro's variance weights and single-precision
        distances, for side-by-side comparison with ``sdcMicro::microaggregation(method="mdav")``)
        or ``"none"``.

    Missing values: a missing cell stays missing, as in sdcMicro's microaggregation. For
    forming the groups a missing cell counts as its column's mean (the centre of the
    standardised space, so it pulls the record neither way); a group's centroid is the mean
    of its members' observed values, and only observed cells receive it. Every group still has
    at least k records, but a record's missing cells set it apart from its group on those
    attributes.

    After ``transform`` the groups are in ``groups_`` (one label per row) and their centroids in
    ``centroids_`` (a DataFrame, one row per group).
    """

    handles_missing = True
    missing_policy = "kept"

    def __init__(
        self,
        class_column: str | None = None,
        schema: Schema | dict | None = None,
        random_state: object = None,
        columns: list[str] | None = None,
        k: int = 3,
        scaling: Scaling = "standard",
    ) -> None:
        self.class_column = class_column
        self.schema = schema
        self.random_state = random_state
        self.columns = columns
        self.k = k
        self.scaling = scaling

    def _validate_params(self) -> None:
        if isinstance(self.k, bool) or not isinstance(self.k, (int, np.integer)) or self.k < 1:
            raise ParameterError(f"k must be a whole number ≥ 1, got {self.k!r}")
        if self.scaling not in ("standard", "sdcmicro", "none"):
            raise ParameterError(f"scaling must be 'standard', 'sdcmicro' or 'none', got {self.scaling!r}")

    def _fit(self, df: pd.DataFrame, schema: Schema, rng: np.random.Generator) -> None:
        self.columns_ = resolve_columns(self.columns, schema, df)
        check_k(self.k, len(df))

    def _transform(self, df: pd.DataFrame, schema: Schema, rng: np.random.Generator) -> pd.DataFrame:
        X = df[self.columns_].to_numpy(dtype=float)
        miss = np.isnan(X)
        if miss.any():
            # a missing cell sits at its column's mean while the groups are formed
            cnt = (~miss).sum(axis=0)
            mu = np.where(cnt > 0, np.where(miss, 0.0, X).sum(axis=0) / np.maximum(cnt, 1), 0.0)
            labels = mdav(np.where(miss, mu, X), check_k(self.k, len(df)), self.scaling)
            cent = nan_group_means(X, labels)
        else:
            labels = mdav(X, check_k(self.k, len(df)), self.scaling)
            cent = group_means(X, labels)
        self.groups_ = labels
        self.centroids_ = pd.DataFrame(cent, columns=self.columns_)
        out = df.copy()
        for j, c in enumerate(self.columns_):
            out[c] = np.where(miss[:, j], np.nan, cent[labels, j])
        return out


def resolve_columns(columns: list[str] | str | None, schema: Schema, df: pd.DataFrame) -> list[str]:
    """The numeric attributes to mask: ``columns`` checked against the schema, or all numeric ones."""
    if columns is None:
        cols = list(schema.numeric)
    else:
        cols = check_column_names("columns", columns) or []
        for c in cols:
            if c == schema.class_column:
                raise ParameterError(f"column {c!r} is the class column; it is never masked")
            if c not in df.columns:
                raise ParameterError(f"column {c!r} named in columns= is not in the table")
            if c not in schema.numeric:
                raise ParameterError(f"column {c!r} is not a numeric attribute")
    if not cols:
        raise ParameterError("the table has no numeric attribute to mask")
    return cols
