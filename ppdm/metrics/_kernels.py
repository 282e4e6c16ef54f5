"""Numba kernels of the quadratic risk measures (SERS, brute-force record linkage).

Both walk every (original, masked) pair once without storing a pair matrix: each
thread keeps one buffer of length n (the distances from one record to all
records of the other file), so memory stays O(threads · n) however large n is.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange


@njit(cache=True, parallel=True, fastmath=True)
def sers_rows(
    on: np.ndarray,  # (r, N) numeric originals, each column divided by its domain size
    oc: np.ndarray,  # (r, C) categorical originals as int32 codes
    pn: np.ndarray,  # (N, nP) numeric perturbed, transposed, same scaling
    pc: np.ndarray,  # (C, nP) categorical perturbed codes, transposed
    inv_m: float,  # 1 / number of attributes
    clip: bool,  # clip negative similarities at 0
    n_chunks: int,
) -> np.ndarray:
    """Entropy H_i (bits) of each given original record's normalised similarity row.

    Compiled with fastmath so the sums vectorise (they are reassociated; the result
    agrees with a plain evaluation to ~1e-13). Uses H_i = log2 Z_i − (1/Z_i) Σ_k S_ik log2 S_ik with Z_i = Σ_k S_ik (paper 004
    eq. 7–8 rewritten so that one pass over k suffices); NaN when Z_i = 0.
    """
    r = on.shape[0]
    n_num = on.shape[1]
    n_cat = oc.shape[1]
    n_p = pn.shape[1] if n_num > 0 else pc.shape[1]
    out = np.empty(r)
    chunk = (r + n_chunks - 1) // n_chunks
    for c in prange(n_chunks):
        lo = c * chunk
        hi = min(r, lo + chunk)
        d = np.empty(n_p)
        for i in range(lo, hi):
            for k in range(n_p):
                d[k] = 0.0
            for j in range(n_num):
                v = on[i, j]
                row = pn[j]
                for k in range(n_p):
                    d[k] += abs(v - row[k])
            for j in range(n_cat):
                v = oc[i, j]
                row = pc[j]
                for k in range(n_p):
                    d[k] += 1.0 if row[k] != v else 0.0
            z = 0.0
            sl = 0.0
            for k in range(n_p):
                s = 1.0 - d[k] * inv_m
                if clip and s < 0.0:
                    s = 0.0
                z += s
                sl += s * math.log2(s) if s > 0.0 else 0.0
            if z > 0.0:
                out[i] = math.log2(z) - sl / z
            else:
                out[i] = np.nan
    return out


@njit(cache=True, parallel=True)
def nearest_ties_brute(
    xt: np.ndarray,  # (m, nx) originals, transposed and contiguous
    zs: np.ndarray,  # (n, m) masked
    rel_tol: float,
    abs_tol: float,
    n_chunks: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each masked record i: whether original i is among its nearest originals T_i,
    |T_i|, and min(T_i) (squared Euclidean distance; T_i within the tolerance of the minimum).

    Each thread fills one buffer with the distances from z_i to every original, attribute
    by attribute (a contiguous, vectorisable loop), then reads off the minimum and the ties.
    """
    n = zs.shape[0]
    m = zs.shape[1]
    nx = xt.shape[1]
    own = np.zeros(n, dtype=np.bool_)
    count = np.zeros(n, dtype=np.int64)
    first = np.zeros(n, dtype=np.int64)
    chunk = (n + n_chunks - 1) // n_chunks
    for c in prange(n_chunks):
        lo = c * chunk
        hi = min(n, lo + chunk)
        d = np.empty(nx)
        for i in range(lo, hi):
            for j in range(nx):
                d[j] = 0.0
            for a in range(m):
                v = zs[i, a]
                col = xt[a]
                for j in range(nx):
                    t = v - col[j]
                    d[j] += t * t
            best = np.inf
            arg = -1
            for j in range(nx):
                if d[j] < best:
                    best = d[j]
                    arg = j
            lim = best * (1.0 + rel_tol) + abs_tol
            cnt = 0
            for j in range(nx):
                cnt += 1 if d[j] <= lim else 0
            f = arg
            if cnt > 1:
                for j in range(nx):
                    if d[j] <= lim:
                        f = j
                        break
            own[i] = i < nx and d[i] <= lim
            count[i] = cnt
            first[i] = f
    return own, count, first


# --------------------------------------------------------------------- DDR via BLAS
# ``method="blas"`` of ddr: the masked-to-original squared distances come from matrix
# products (‖x‖² − 2 z·x) tile by tile; these kernels keep, per masked record, the running
# minimum of the product values and every original whose value is within a safe bound of
# it, and then re-check those candidates with the direct Σ (z − x)² of the brute force.


@njit(cache=True, inline="always")
def _gemm_threshold(mt: float, nz: float, kw: float, kappa: float, rel_tol: float, abs_tol: float) -> float:
    """Largest product value ‖x‖² − 2 z·x an original in the tie set can have, given the
    smallest product value ``mt`` of the row (``nz`` = ‖z‖², ``kw`` = κ (‖z‖² + max ‖x‖²)).

    An upper bound on the nearest direct distance is carried through the tie rule
    d² ≤ best·(1 + rel) + abs and back, widening by the rounding error of the expansion at
    each step; it is monotone in ``mt``, so a running minimum gives a looser threshold.
    """
    p = mt + nz
    if p < 0.0:
        p = 0.0
    upper = (p + kw) * (1.0 + kappa)
    lim = (upper * (1.0 + rel_tol) + abs_tol) * (1.0 + kappa)
    return lim * (1.0 + kappa) + kw - nz


@njit(cache=True, fastmath=True)
def _row_min(row: np.ndarray) -> float:
    mn = np.inf
    for j in range(row.shape[0]):
        v = row[j]
        mn = v if v < mn else mn
    return mn


@njit(cache=True, nogil=True)
def gemm_scan_tile(
    tile: np.ndarray,  # (b, c) product values ‖x_j‖² − 2 z_i·x_j of a row block × column block
    col0: int,  # index of the tile's first original
    nz: np.ndarray,  # (b,) ‖z_i‖²
    kw: np.ndarray,  # (b,) κ (‖z_i‖² + max ‖x‖²)
    kappa: float,
    rel_tol: float,
    abs_tol: float,
    best: np.ndarray,  # (b,) running minimum of the product values (updated)
    thr: np.ndarray,  # (b,) current threshold (updated)
    cand_idx: np.ndarray,  # (b, K) candidate originals (updated)
    cand_val: np.ndarray,  # (b, K) their product values
    ncand: np.ndarray,  # (b,) number of candidates
    full: np.ndarray,  # (b,) candidate list overflowed: the row is searched directly later
) -> None:
    b, c = tile.shape
    cap = cand_idx.shape[1]
    for r in range(b):
        if full[r]:
            continue
        row = tile[r]
        mn = _row_min(row)
        if mn > thr[r]:
            continue  # nothing in this tile can be near the row's nearest original
        if mn < best[r]:
            best[r] = mn
            thr[r] = _gemm_threshold(mn, nz[r], kw[r], kappa, rel_tol, abs_tol)
        th = thr[r]
        k = ncand[r]
        for j in range(c):
            if row[j] <= th:
                if k == cap:  # drop candidates the lower minimum has ruled out
                    kk = 0
                    for q in range(k):
                        if cand_val[r, q] <= th:
                            cand_idx[r, kk] = cand_idx[r, q]
                            cand_val[r, kk] = cand_val[r, q]
                            kk += 1
                    k = kk
                    if k == cap:
                        full[r] = True
                        break
                cand_idx[r, k] = col0 + j
                cand_val[r, k] = row[j]
                k += 1
        ncand[r] = k


@njit(cache=True)
def _direct_d2(xt: np.ndarray, zs: np.ndarray, i: int, j: int) -> float:
    # the same operations in the same order as nearest_ties_brute, so the values are identical
    d = 0.0
    for a in range(zs.shape[1]):
        t = zs[i, a] - xt[a, j]
        d += t * t
    return d


@njit(cache=True, nogil=True)
def gemm_resolve_rows(
    xt: np.ndarray,  # (m, nx) originals (as used by the direct distance), transposed
    zs: np.ndarray,  # (n, m) masked
    row0: int,  # index of the block's first masked record
    thr: np.ndarray,
    cand_idx: np.ndarray,
    cand_val: np.ndarray,
    ncand: np.ndarray,
    full: np.ndarray,
    rel_tol: float,
    abs_tol: float,
    own_idx: np.ndarray,  # (n,) index of each masked record's own original
    own: np.ndarray,  # (n,) outputs, filled for the block's rows
    count: np.ndarray,
    first: np.ndarray,
) -> None:
    """Nearest originals of each masked record of a block from its candidates, with the
    direct distance; a row whose candidate list overflowed is searched over all originals."""
    b = thr.shape[0]
    nx = xt.shape[1]
    for r in range(b):
        i = row0 + r
        oi = own_idx[i]
        if full[r]:
            best = np.inf
            for j in range(nx):
                d = _direct_d2(xt, zs, i, j)
                if d < best:
                    best = d
            lim = best * (1.0 + rel_tol) + abs_tol
            cnt = 0
            f = -1
            for j in range(nx):
                if _direct_d2(xt, zs, i, j) <= lim:
                    cnt += 1
                    if f < 0:
                        f = j
            own[i] = oi < nx and _direct_d2(xt, zs, i, oi) <= lim
            count[i] = cnt
            first[i] = f
            continue
        th = thr[r]
        best = np.inf
        for q in range(ncand[r]):
            if cand_val[r, q] <= th:
                d = _direct_d2(xt, zs, i, cand_idx[r, q])
                if d < best:
                    best = d
        lim = best * (1.0 + rel_tol) + abs_tol
        cnt = 0
        f = nx
        is_own = False
        for q in range(ncand[r]):
            if cand_val[r, q] <= th:
                j = cand_idx[r, q]
                if _direct_d2(xt, zs, i, j) <= lim:
                    cnt += 1
                    f = min(f, j)
                    if j == oi:
                        is_own = True
        own[i] = is_own
        count[i] = cnt
        first[i] = f
