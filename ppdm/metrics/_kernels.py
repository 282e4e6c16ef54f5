"""Numba kernels of the quadratic risk measures (SERS, brute-force record linkage).

Both walk every (original, masked) pair once without storing a pair matrix: each
thread keeps one buffer of length n (the distances from one record to all
records of the other file; SERS a few blocks of them), so memory stays
O(threads · n) however large n is.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ppdm.parallel import run_chunks

# ------------------------------------------------------------------------------ SERS
# Most of SERS' time is the logarithm of every pair's similarity. Without Intel's SVML,
# LLVM calls the C library's log once per pair; the logarithm below is made of
# operations it vectorises: s = m·2^e with m in [√½, √2), and ln m = 2 atanh t,
# t = (m − 1)/(m + 1), |t| ≤ 0.172, summed to t²¹ (truncation below 3e-17 relative).
_MANT_BITS = 0xFFFFFFFFFFFFF
_SQRT2_MANT = 0x6A09E667F3BCD  # mantissa bits of √2
_LN2 = math.log(2.0)
_ATANH = tuple(2.0 / (2 * k + 1) for k in range(11))
#: originals compared together with each block of perturbed records (loads shared)
_SERS_ROWS = 4
#: perturbed records per block: the block's attributes and four distance rows stay in cache
_SERS_BLOCK = 512


@njit(cache=True, inline="always")
def _atanh_series(t2: float) -> float:
    c = _ATANH
    p = c[10]
    p = p * t2 + c[9]
    p = p * t2 + c[8]
    p = p * t2 + c[7]
    p = p * t2 + c[6]
    p = p * t2 + c[5]
    p = p * t2 + c[4]
    p = p * t2 + c[3]
    p = p * t2 + c[2]
    p = p * t2 + c[1]
    return p * t2 + c[0]


@njit(cache=True, fastmath=True, error_model="numpy", inline="always")
def _similarity_sums(d: np.ndarray, kb: int, inv_m: float, clip: bool) -> tuple[float, float]:
    """(Σ_k S_k, Σ_k S_k ln S_k) over S_k = 1 − d_k·inv_m, k < kb (S ln S = 0 for S ≤ 0)."""
    z = 0.0
    acc = 0.0
    for k in range(kb):
        s = 1.0 - d[k] * inv_m
        if clip:
            s = max(s, 0.0)
        z += s
        b = np.float64(s).view(np.int64)
        mant = b & _MANT_BITS
        big = mant > _SQRT2_MANT
        ex = np.float64(np.int32((b >> 52) + (1 if big else 0) - 1023))
        m = np.int64(mant | ((1022 if big else 1023) << 52)).view(np.float64)
        f = m - 1.0
        t = f / (2.0 + f)
        acc += max(s, 0.0) * (ex * _LN2 + t * _atanh_series(t * t))
    return z, acc


def sers_rows(
    on: np.ndarray,  # (r, N) numeric originals, each column divided by its domain size
    oc: np.ndarray,  # (r, C) categorical originals as small integer codes
    pn: np.ndarray,  # (N, nP) numeric perturbed, transposed, same scaling
    pc: np.ndarray,  # (C, nP) categorical perturbed codes, transposed, same dtype as oc
    inv_m: float,  # 1 / number of attributes
    clip: bool,  # clip negative similarities at 0
    n_chunks: int,
) -> np.ndarray:
    """Entropy H_i (bits) of each given original record's normalised similarity row.

    Uses H_i = log2 Z_i − (1/(Z_i ln 2)) Σ_k S_ik ln S_ik with Z_i = Σ_k S_ik (paper 004
    eq. 7–8 rewritten so that one pass over k suffices); NaN when Z_i = 0. The perturbed
    records are taken in blocks that stay in cache, four originals at a time (each value
    loaded once for the four); categorical mismatches are counted in the codes' own
    integer width, which must hold C. Compiled with fastmath so the sums vectorise (they
    are reassociated): H agrees with a plain evaluation with the C library's logarithm to
    ~1e-14.
    """
    out = np.empty(on.shape[0])
    # the ranges are of groups of _SERS_ROWS originals, which the kernel takes together
    run_chunks(_sers_rows_chunk, (on.shape[0] + _SERS_ROWS - 1) // _SERS_ROWS, on, oc, pn, pc, inv_m, clip, out,
               chunks=n_chunks)
    return out


@njit(cache=True, nogil=True, fastmath=True, error_model="numpy")
def _sers_rows_chunk(c, g_lo, g_hi, on, oc, pn, pc, inv_m, clip, out):
    """Groups of originals ``g_lo:g_hi`` of :func:`sers_rows` (:func:`ppdm.parallel.run_chunks`)."""
    R = _SERS_ROWS
    B = _SERS_BLOCK
    r_n = on.shape[0]
    n_num = on.shape[1]
    n_cat = oc.shape[1]
    n_p = pn.shape[1] if n_num > 0 else pc.shape[1]
    ng = g_hi - g_lo
    z_sum = np.zeros(ng * R)
    sl_sum = np.zeros(ng * R)
    d0 = np.empty(B)
    d1 = np.empty(B)
    d2 = np.empty(B)
    d3 = np.empty(B)
    c0 = np.empty(B, dtype=pc.dtype)
    c1 = np.empty(B, dtype=pc.dtype)
    c2 = np.empty(B, dtype=pc.dtype)
    c3 = np.empty(B, dtype=pc.dtype)
    for k0 in range(0, n_p, B):
        kb = min(B, n_p - k0)
        for g in range(ng):
            i0 = (g_lo + g) * R
            # past the last original, the group repeats it (those results are not kept)
            ia = min(i0, r_n - 1)
            ib = min(i0 + 1, r_n - 1)
            ic = min(i0 + 2, r_n - 1)
            id_ = min(i0 + 3, r_n - 1)
            for k in range(kb):
                c0[k] = 0
                c1[k] = 0
                c2[k] = 0
                c3[k] = 0
            # the categorical and numeric passes are written out alike: they accumulate different
            # types (mismatch counts in the codes' own integer width, float distances), and each
            # stays a plain loop that fastmath vectorises
            for j in range(n_cat):
                va = oc[ia, j]
                vb = oc[ib, j]
                vc = oc[ic, j]
                vd = oc[id_, j]
                row = pc[j, k0:k0 + kb]
                for k in range(kb):
                    p = row[k]
                    c0[k] += p != va
                    c1[k] += p != vb
                    c2[k] += p != vc
                    c3[k] += p != vd
            for k in range(kb):
                d0[k] = c0[k]
                d1[k] = c1[k]
                d2[k] = c2[k]
                d3[k] = c3[k]
            for j in range(n_num):
                va = on[ia, j]
                vb = on[ib, j]
                vc = on[ic, j]
                vd = on[id_, j]
                row = pn[j, k0:k0 + kb]
                for k in range(kb):
                    p = row[k]
                    d0[k] += abs(va - p)
                    d1[k] += abs(vb - p)
                    d2[k] += abs(vc - p)
                    d3[k] += abs(vd - p)
            for r in range(R):
                d = d0 if r == 0 else (d1 if r == 1 else (d2 if r == 2 else d3))
                z, sl = _similarity_sums(d, kb, inv_m, clip)
                z_sum[g * R + r] += z
                sl_sum[g * R + r] += sl
    for g in range(ng):
        for r in range(R):
            i = (g_lo + g) * R + r
            if i < r_n:
                z = z_sum[g * R + r]
                out[i] = math.log2(z) - sl_sum[g * R + r] / (z * _LN2) if z > 0.0 else np.nan


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
    own = np.zeros(n, dtype=np.bool_)
    count = np.zeros(n, dtype=np.int64)
    first = np.zeros(n, dtype=np.int64)
    run_chunks(_nearest_ties_brute_chunk, n, xt, zs, rel_tol, abs_tol, own, count, first, chunks=n_chunks)
    return own, count, first


@njit(cache=True, nogil=True)
def _nearest_ties_brute_chunk(c, lo, hi, xt, zs, rel_tol, abs_tol, own, count, first):
    """Masked records ``lo:hi`` of :func:`nearest_ties_brute` (:func:`ppdm.parallel.run_chunks`)."""
    m = zs.shape[1]
    nx = xt.shape[1]
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


@njit(cache=True, inline="always")
def push_children(st_node: np.ndarray, st_bound: np.ndarray, sp: int, left: int, right: int,
                  dl: float, dr: float, prune: float) -> int:
    """Push the children of a tree node that may hold a point within ``prune`` on a search
    stack, the nearer one last so it is visited first; returns the new stack size. One step
    of every depth-first tree search here (the ball search of SERS, mixed record linkage)."""
    if dl <= dr:
        if dr <= prune:
            st_node[sp] = right
            st_bound[sp] = dr
            sp += 1
        if dl <= prune:
            st_node[sp] = left
            st_bound[sp] = dl
            sp += 1
    else:
        if dl <= prune:
            st_node[sp] = left
            st_bound[sp] = dl
            sp += 1
        if dr <= prune:
            st_node[sp] = right
            st_bound[sp] = dr
            sp += 1
    return sp


@njit(cache=True, inline="always")
def sort_range(perm: np.ndarray, X: np.ndarray, s: int, e: int, col: int) -> None:
    """Reorder ``perm[s:e]`` by column ``col`` of ``X`` (stable), so a tree node can be cut at its
    middle; shared by the tree builders of the ball search and of mixed record linkage."""
    vals = np.empty(e - s)
    for t in range(s, e):
        vals[t - s] = X[perm[t], col]
    order = np.argsort(vals, kind="mergesort")
    sub = perm[s:e].copy()
    for t in range(e - s):
        perm[s + t] = sub[order[t]]


@njit(cache=True, inline="always")
def add_children(k: int, s: int, mid: int, e: int, left: np.ndarray, right: np.ndarray, start: np.ndarray,
                 end: np.ndarray, stack: np.ndarray, sp: int, n_nodes: int) -> tuple[int, int]:
    """Make rows ``s:mid`` and ``mid:e`` of node ``k`` its two children and push them on the
    build stack; returns the new stack size and node count."""
    left[k] = n_nodes
    right[k] = n_nodes + 1
    start[n_nodes], end[n_nodes] = s, mid
    start[n_nodes + 1], end[n_nodes + 1] = mid, e
    stack[sp] = n_nodes
    stack[sp + 1] = n_nodes + 1
    return sp + 2, n_nodes + 2


@njit(cache=True, inline="always")
def same_codes(codes: np.ndarray, i: int, prev: int) -> bool:
    """Whether row ``i`` of ``codes`` equals row ``prev`` (``prev`` < 0: no row before it), so
    a nearest-record search can reuse the counts it made for ``prev``."""
    if prev < 0:
        return False
    for a in range(codes.shape[1]):
        if codes[i, a] != codes[prev, a]:
            return False
    return True


@njit(cache=True, inline="always")
def groups_by_level(dc: np.ndarray, head: np.ndarray, by_level: np.ndarray) -> None:
    """``by_level``: the groups in order of their categorical distance ``dc`` (a counting sort,
    equal distances in group order); ``head`` (length: the largest distance + 2) is scratch.
    Shared by the attacks' and closeness's nearest-record searches."""
    for lv in range(head.shape[0]):
        head[lv] = 0
    for g in range(dc.shape[0]):
        head[dc[g] + 1] += 1
    for lv in range(1, head.shape[0]):
        head[lv] += head[lv - 1]
    for g in range(dc.shape[0]):
        by_level[head[dc[g]]] = g
        head[dc[g]] += 1


@njit(cache=True, inline="always")
def mismatch_counts(dc: np.ndarray, codes: np.ndarray, q: np.ndarray) -> None:
    """``dc[g]``: on how many categorical attributes group g (``codes[a, g]``) differs from the
    query's codes ``q[a]``; shared by the attacks' and closeness's nearest-record searches."""
    n_groups = dc.shape[0]
    for g in range(n_groups):
        dc[g] = 0
    for a in range(codes.shape[0]):
        v = q[a]
        row = codes[a]
        for g in range(n_groups):
            dc[g] += 1 if row[g] != v else 0
