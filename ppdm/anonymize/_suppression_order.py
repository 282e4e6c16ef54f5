"""Which key cells local suppression blanks first, and sdcMicro's own suppression pass.

The importance of each key attribute (given, from its class information, or sdcMicro's
default order: :func:`default_importance`, :func:`class_importance`), the order of the
cells it gives (:func:`suppression_order`), and sdcMicro's ``localSuppression`` criterion
(:func:`sdcmicro_suppress`, every key combination with :func:`sdcmicro_combs`). Split from
:mod:`ppdm.anonymize._suppression`, which re-exports every name here.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd
from numba import njit

from ppdm.data.blanks import (
    record_frequencies,
    row_ids,
)

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
