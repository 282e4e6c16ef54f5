"""Univariate discretization methods that build rounding sets (paper 003 §3.2, §5).

Unsupervised: equal width (EWD), equal frequency (EFD, ties kept together), k-means (KMD)
and re-sampling based discretization (RBD, introduced in paper 003 §3.2.4). Supervised
(need the class): MDLP (Fayyad & Irani 1993) and ChiMerge (Kerber 1992). The
Freedman–Diaconis rule (paper 003 §5) chooses the number of intervals per attribute.

Cell functions return one label per value, numbering the cells 0…c−1 in ascending order of
value (empty cells are dropped); :func:`kmeans_1d` and :func:`resampling` return their centres.
"""

from __future__ import annotations

import heapq
import math

import numpy as np
from scipy.stats import chi2 as chi2_dist

from ppdm.errors import ParameterError
from ppdm.utils import finite_vector


def _as_1d(x: object) -> np.ndarray:
    return finite_vector(x, task="discretize")


def check_c(c: object, *, name: str = "c") -> int:
    """Return ``c`` as an int or raise :class:`ParameterError` unless it is a whole number ≥ 2."""
    if isinstance(c, bool) or not isinstance(c, (int, np.integer)):
        raise ParameterError(f"{name} must be a whole number, got {c!r}")
    if c < 2:
        raise ParameterError(f"{name} must be at least 2 (one interval is no rounding set), got {c}")
    return int(c)


def _dense(labels: np.ndarray) -> np.ndarray:
    # renumber labels 0..c-1 keeping their order (drops empty cells)
    _, inv = np.unique(labels, return_inverse=True)
    return inv.astype(np.int64)


# ---------------------------------------------------------------------- Freedman–Diaconis
def freedman_diaconis_width(x: object) -> float:
    """Bin width h = 2·IQR(x)·n^(−1/3) (paper 003 §5); IQR from linearly interpolated quartiles."""
    v = _as_1d(x)
    q75, q25 = np.percentile(v, [75, 25])
    return float(2.0 * (q75 - q25) * v.size ** (-1.0 / 3.0))


def freedman_diaconis_bins(x: object) -> int:
    """Number of intervals c = ⌈range/h⌉ of the Freedman–Diaconis rule.

    When the IQR is 0 the rule gives no width; Sturges' c = ⌈log2 n⌉ + 1 is used instead.
    c is capped at the number of distinct values and is at least 1.
    """
    v = _as_1d(x)
    distinct = np.unique(v).size
    if distinct == 1:
        return 1
    h = freedman_diaconis_width(v)
    c = math.ceil((v.max() - v.min()) / h) if h > 0 else math.ceil(math.log2(v.size)) + 1
    return int(max(1, min(c, distinct)))


def k_from_c(n: int, c: int) -> int:
    """Group size matching c intervals, k = ⌈n/c⌉ (paper 003 §4.3)."""
    return max(1, math.ceil(n / c))


def c_from_k(n: int, k: int) -> int:
    """Number of intervals matching group size k, c = ⌈n/k⌉ (paper 003 §4.3)."""
    return max(1, math.ceil(n / k))


# ------------------------------------------------------------------------ equal width
def equal_width_edges(x: object, c: int) -> np.ndarray:
    """c + 1 equally spaced edges from min(x) to max(x) (paper 003 §3.2.1)."""
    v = _as_1d(x)
    return np.linspace(v.min(), v.max(), int(c) + 1)


def equal_width(x: object, c: int) -> np.ndarray:
    """EWD: cells [e_i, e_{i+1}) of equal width, the last one closed; empty cells dropped."""
    v = _as_1d(x)
    c = check_c(c)
    edges = equal_width_edges(v, c)
    return _dense(np.searchsorted(edges[1:-1], v, side="right"))


# -------------------------------------------------------------------- equal frequency
def _efd_cuts(s: np.ndarray, c: int) -> np.ndarray:
    """Cut positions (right cell starts there) of EFD on sorted ``s``."""
    n = s.size
    new_run = np.r_[True, s[1:] != s[:-1]]
    starts = np.flatnonzero(new_run)
    d = starts.size
    if d <= c:
        return starts[1:]
    run_of = np.cumsum(new_run) - 1
    ends = np.r_[starts[1:], n]
    r = c
    while True:
        t = np.floor(np.arange(1, r) * n / r + 0.5).astype(np.int64)
        t = t[(t > 0) & (t < n)]
        inside = s[t - 1] == s[t]
        a = starts[run_of[t]]
        b = ends[run_of[t]]
        # a cut inside a run of equal values moves to the nearer run boundary (tie: upper)
        moved = np.where(t - a < b - t, a, b)
        t = np.where(inside, moved, t)
        t = np.unique(t[(t > 0) & (t < n)])
        if t.size + 1 >= c or r >= n:  # at r = n every run boundary is a cut
            return t
        r += 1


def equal_frequency(x: object, c: int) -> np.ndarray:
    """EFD: c cells of about n/c values each, equal values always in the same cell.

    Target cuts at ⌊j·n/r + ½⌋ (j = 1…r−1) in sorted order; a cut falling inside a run of equal
    values moves to the nearer end of the run. When ties leave fewer than c cells, r is raised
    until at least c cells result ("the next highest number of intervals", paper 003 §5.2),
    or every distinct value has its own cell.
    """
    v = _as_1d(x)
    c = check_c(c)
    order = np.argsort(v, kind="stable")
    cuts = _efd_cuts(v[order], c)
    lab_sorted = np.zeros(v.size, dtype=np.int64)
    lab_sorted[cuts] = 1
    labels = np.empty(v.size, dtype=np.int64)
    labels[order] = np.cumsum(lab_sorted)
    return labels


# ---------------------------------------------------------------------------- k-means
def kmeans_1d(x: object, c: int, *, max_iter: int = 300, tol: float = 1e-10) -> tuple[np.ndarray, np.ndarray]:
    """KMD: 1-D k-means (Lloyd) with c clusters, returning ``(centres, labels)`` (paper 003 §3.2.3).

    Initial centres are the midpoints of c equal-width bins, as scikit-learn's
    ``KBinsDiscretizer(strategy="kmeans")`` uses. On sorted data a cluster is the run of
    values between the midpoints of consecutive centres, so one iteration costs O(c log n)
    with prefix sums. Empty clusters are dropped; a value exactly between two centres joins
    the lower one.
    """
    v = _as_1d(x)
    c = check_c(c)
    s = np.sort(v)
    csum = np.r_[0.0, np.cumsum(s - s[0])]  # shifted sums limit cancellation
    if s[0] == s[-1]:
        return np.array([s[0]]), np.zeros(v.size, dtype=np.int64)
    edges = np.linspace(s[0], s[-1], c + 1)
    centres = (edges[1:] + edges[:-1]) / 2
    scale = s[-1] - s[0]
    relocations = 0
    for _ in range(max_iter):
        mids = (centres[1:] + centres[:-1]) / 2
        bounds = np.r_[0, np.searchsorted(s, mids, side="right"), s.size]
        cnt = np.diff(bounds)
        keep = cnt > 0
        sums = csum[bounds[1:]] - csum[bounds[:-1]]
        new = centres.copy()
        new[keep] = sums[keep] / cnt[keep] + s[0]
        n_empty = int((~keep).sum())
        if n_empty and relocations < max_iter and np.unique(s).size >= centres.size:
            # like scikit-learn, an empty cluster restarts at the value farthest from its centre
            relocations += 1
            lab = np.repeat(np.arange(centres.size), cnt)
            far = np.argsort(-np.abs(s - new[lab]), kind="stable")
            taken = set(new[keep].tolist())
            picked: list[float] = []
            for val in s[far].tolist():
                if val not in taken:
                    taken.add(val)
                    picked.append(val)
                    if len(picked) == n_empty:
                        break
            if len(picked) == n_empty:
                new[~keep] = picked
            new = np.sort(new)
            if np.unique(new).size == new.size:
                centres = new
                continue
            new = new[np.r_[True, np.diff(new) > 0]]
        elif n_empty:
            new = new[keep]
        if new.size == centres.size and np.max(np.abs(new - centres)) <= tol * scale:
            centres = new
            break
        centres = new
    # clusters of values closer than float resolution can end with equal centres: merge them
    centres = np.unique(centres)
    mids = (centres[1:] + centres[:-1]) / 2
    labels = np.searchsorted(mids, v, side="left")
    return centres, labels.astype(np.int64)


# ------------------------------------------------------------------------- resampling
def resampling(
    x: object,
    c: int,
    rng: np.random.Generator,
    *,
    n_quantiles: int = 10,
    n_bootstrap: int | None = None,
) -> np.ndarray:
    """RBD, re-sampling based discretization (paper 003 §3.2.4, Algorithm 1); returns the centres.

    The sorted values are split into ``n_quantiles`` equal-frequency strata (ties together).
    From each stratum Q_i, ``n_bootstrap`` bootstrap samples of size |Q_i| are drawn (the
    paper draws |Q_i| of them, the default) and each sample's mean is kept; the pooled means
    form the re-sampled data set, which 1-D k-means partitions into c clusters whose centres
    are the rounding points.
    """
    v = _as_1d(x)
    c = check_c(c)
    if n_quantiles < 1:
        raise ParameterError(f"n_quantiles must be at least 1, got {n_quantiles}")
    if v.min() == v.max():
        return v[:1].copy()  # bootstrap means of a constant could drift by rounding
    strata = equal_frequency(v, n_quantiles) if n_quantiles >= 2 else np.zeros(v.size, dtype=np.int64)
    pooled: list[np.ndarray] = []
    for g in range(int(strata.max()) + 1):
        q = v[strata == g]
        m = q.size
        b = m if n_bootstrap is None else int(n_bootstrap)
        means = np.empty(b)
        rows = max(1, (1 << 22) // m)  # draw in blocks: memory O(2^22), not O(b·m)
        for start in range(0, b, rows):
            stop = min(b, start + rows)
            means[start:stop] = q[rng.integers(0, m, size=(stop - start, m))].mean(axis=1)
        pooled.append(means)
    pool = np.concatenate(pooled)
    centres, _ = kmeans_1d(pool, c)
    return centres


# ------------------------------------------------------------------------------ MDLP
def _entropy_rows(counts: np.ndarray) -> np.ndarray:
    tot = counts.sum(axis=-1, keepdims=True)
    p = np.divide(counts, tot, out=np.zeros_like(counts, dtype=float), where=tot > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, -p * np.log2(np.where(p > 0, p, 1.0)), 0.0)
    return terms.sum(axis=-1)


def _codes(y: object, n: int) -> tuple[np.ndarray, int]:
    yy = np.asarray(y).ravel()
    if yy.size != n:
        raise ParameterError(f"the class has {yy.size} values but the attribute has {n}")
    _, codes = np.unique(yy, return_inverse=True)
    return codes.astype(np.int64), int(codes.max()) + 1


def mdlp_cuts(x: object, y: object) -> np.ndarray:
    """MDLP cut points (Fayyad & Irani 1993), the supervised discretization of paper 003 §5.3.

    Recursively, among the cuts between consecutive distinct values of a set S (N records),
    take the one minimising the class-information entropy E = |S1|/N·Ent(S1) + |S2|/N·Ent(S2)
    (leftmost on ties) and keep it iff Gain = Ent(S) − E > (log2(N−1) + Δ)/N, with
    Δ = log2(3^k − 2) − [k·Ent(S) − k1·Ent(S1) − k2·Ent(S2)] (k, k1, k2 the numbers of classes
    present). Entropies in bits. Cut points are midpoints between the adjacent values.
    """
    v = _as_1d(x)
    codes, n_cls = _codes(y, v.size)
    order = np.argsort(v, kind="stable")
    s = v[order]
    onehot = np.zeros((v.size, n_cls))
    onehot[np.arange(v.size), codes[order]] = 1.0
    cum = np.vstack([np.zeros(n_cls), np.cumsum(onehot, axis=0)])
    cuts: list[float] = []
    stack = [(0, v.size)]
    while stack:
        a, b = stack.pop()
        n = b - a
        if n < 2:
            continue
        t = np.arange(a + 1, b)
        t = t[s[t - 1] < s[t]]
        if t.size == 0:
            continue
        total = cum[b] - cum[a]
        left = cum[t] - cum[a]
        right = total - left
        nl = (t - a).astype(float)
        e_left = _entropy_rows(left)
        e_right = _entropy_rows(right)
        e = (nl * e_left + (n - nl) * e_right) / n
        i = int(np.argmin(e))
        ent = float(_entropy_rows(total))
        gain = ent - e[i]
        k, k1, k2 = (int((q > 0).sum()) for q in (total, left[i], right[i]))
        delta = math.log2(3.0**k - 2) - (k * ent - k1 * e_left[i] - k2 * e_right[i])
        if gain > (math.log2(n - 1) + delta) / n:
            ti = int(t[i])
            cuts.append((s[ti - 1] + s[ti]) / 2)
            stack.append((a, ti))
            stack.append((ti, b))
    return np.sort(np.array(cuts, dtype=float))


# --------------------------------------------------------------------------- ChiMerge
def _chi2_pair(a: np.ndarray, b: np.ndarray) -> float:
    obs = np.vstack([a, b])
    n = obs.sum()
    exp = obs.sum(axis=1, keepdims=True) * obs.sum(axis=0, keepdims=True) / n
    exp = np.where(exp == 0, 0.1, exp)  # Kerber: an expected count of 0 becomes 0.1
    return float(((obs - exp) ** 2 / exp).sum())


def chimerge_cuts(x: object, y: object, *, alpha: float = 0.10, max_intervals: int | None = None) -> np.ndarray:
    """ChiMerge cut points (Kerber 1992), the second supervised method of paper 003 §5.3.

    Start with one interval per distinct value; repeatedly merge the adjacent pair with the
    smallest χ² (leftmost on ties) while it is below χ²_{1−alpha, K−1} (K classes), or while
    more than ``max_intervals`` intervals remain. A heap with stale-entry checks makes it
    O(d log d) for d distinct values.
    """
    v = _as_1d(x)
    if not 0 < alpha < 1:
        raise ParameterError(f"alpha must lie in (0, 1), got {alpha!r}")
    if max_intervals is not None and max_intervals < 1:
        raise ParameterError(f"max_intervals must be at least 1, got {max_intervals}")
    codes, n_cls = _codes(y, v.size)
    vals, inv = np.unique(v, return_inverse=True)
    d = vals.size
    counts = np.zeros((d, n_cls))
    np.add.at(counts, (inv, codes), 1.0)
    if d == 1:
        return np.array([], dtype=float)
    threshold = chi2_dist.ppf(1 - alpha, n_cls - 1) if n_cls > 1 else np.inf
    nxt = list(range(1, d)) + [-1]
    prv = [-1] + list(range(d - 1))
    ver = [0] * d
    alive = [True] * d
    heap = [(_chi2_pair(counts[i], counts[i + 1]), i, i + 1, 0, 0) for i in range(d - 1)]
    heapq.heapify(heap)
    n_int = d
    while heap:
        chi, i, j, vi, vj = heap[0]
        if not (alive[i] and alive[j] and nxt[i] == j and ver[i] == vi and ver[j] == vj):
            heapq.heappop(heap)
            continue
        if chi >= threshold and (max_intervals is None or n_int <= max_intervals):
            break
        heapq.heappop(heap)
        counts[i] += counts[j]
        alive[j] = False
        ver[i] += 1
        nxt[i] = nxt[j]
        if nxt[j] >= 0:
            prv[nxt[j]] = i
        n_int -= 1
        if prv[i] >= 0:
            p = prv[i]
            heapq.heappush(heap, (_chi2_pair(counts[p], counts[i]), p, i, ver[p], ver[i]))
        if nxt[i] >= 0:
            q = nxt[i]
            heapq.heappush(heap, (_chi2_pair(counts[i], counts[q]), i, q, ver[i], ver[q]))
    starts = [i for i in range(1, d) if alive[i]]
    return np.array([(vals[i - 1] + vals[i]) / 2 for i in starts], dtype=float)


def cells_from_cuts(x: object, cuts: np.ndarray) -> np.ndarray:
    """Cell labels of ``x`` for sorted cut points: x < cut goes left, x ≥ cut right; empty cells dropped."""
    v = _as_1d(x)
    return _dense(np.searchsorted(np.asarray(cuts, dtype=float), v, side="right"))
