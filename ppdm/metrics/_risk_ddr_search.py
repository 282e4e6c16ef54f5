"""The exact nearest-original searches of DDR (paper 003 §3.3.2), all giving the same links.

:func:`_brute` compares every masked record with every original (Numba, O(n²·m));
:func:`_link_blas` finds the same nearest originals through tiled matrix products;
:func:`_link_tree` asks a Numba kd-tree only whether an original is nearer than the record's
own, handing the records whose search would cover much of the tree to the product search;
:func:`_link_kdtree` uses scipy's cKDTree. Each returns, per masked record, whether its own
original is among the nearest, how many originals tie there and the first of them, with
ties within ``TIE_REL_TOL``/``TIE_ABS_TOL`` of the smallest distance; :func:`_standardize`
z-scores both files first.
``BLAS_ROWS``, ``BLAS_COLS``, ``BLAS_CANDIDATES`` and ``TREE_LEAF_BUDGET``, which the tests
tune, sit beside the functions that read them. Split from :mod:`ppdm.metrics.risk`, whose
:func:`~ppdm.metrics.risk.ddr` chooses among them and which re-exports the names it uses.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ppdm.parallel import chunks_for, threads

TIE_REL_TOL = 1e-12
TIE_ABS_TOL = 1e-15


def _standardize(X: np.ndarray, Z: np.ndarray, how: str) -> tuple[np.ndarray, np.ndarray]:
    def z_of(A: np.ndarray, mean: np.ndarray, sd: np.ndarray) -> np.ndarray:
        # a constant column carries no linkage information in that file: centre it only
        return (A - mean) / np.where(sd > 0, sd, 1.0)

    if how == "none":
        return X, Z
    mx, sx = X.mean(axis=0), X.std(axis=0, ddof=1)
    if how == "original":
        return z_of(X, mx, sx), z_of(Z, mx, sx)
    return z_of(X, mx, sx), z_of(Z, Z.mean(axis=0), Z.std(axis=0, ddof=1))


def _brute(Xs: np.ndarray, Zs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    from ppdm.metrics._kernels import nearest_ties_brute

    return nearest_ties_brute(np.ascontiguousarray(Xs.T), np.ascontiguousarray(Zs), TIE_REL_TOL, TIE_ABS_TOL,
                              chunks_for(len(Zs)))


BLAS_ROWS = 512  # masked records per block of the product search
BLAS_COLS = 512  # originals per tile: a 512 × 512 tile (2 MB) per worker stays in the cache
BLAS_CANDIDATES = 64  # candidates kept per masked record before it falls back to a direct scan


def _link_blas(
    Xs: np.ndarray, Zs: np.ndarray, own_idx: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact nearest originals through matrix products (same links as :func:`_brute`).

    d(z, x)² = ‖z‖² + ‖x‖² − 2 z·x, so per masked record the nearest originals are those
    with the smallest ‖x‖² − 2 z·x: one BLAS product [−2z, 1]·[x, ‖x‖²]ᵀ per tile,
    never more than one tile of BLAS_ROWS × BLAS_COLS values in memory. Both files are
    first centred on the originals' mean so the expansion does not cancel catastrophically.
    The product has rounding error up to about (m+1)·u·(‖z‖² + 3 max ‖x‖²) (u = 2⁻⁵³,
    the standard bound for a dot product, plus the centring): every original within a
    bound of 16 (m+4) u times that of the row's smallest value — and all of them within
    the tie tolerance — is kept and re-checked with the direct Σ (z − x)² of the brute force,
    so the tie set is exactly the brute force's. ``own_idx`` names each masked record's own
    original (default: the record with the same index).
    """
    from ppdm.metrics._kernels import gemm_resolve_rows, gemm_scan_tile

    n, m = Zs.shape
    nx = len(Xs)
    own_idx = np.arange(n) if own_idx is None else np.ascontiguousarray(own_idx, dtype=np.int64)
    mu = Xs.mean(axis=0)
    Xc, Zc = Xs - mu, Zs - mu
    nxc = (Xc * Xc).sum(axis=1)
    nzc = (Zc * Zc).sum(axis=1)
    bmat = np.ascontiguousarray(np.hstack([Xc, nxc[:, None]]).T)  # (m+1, nx)
    amat = np.ascontiguousarray(np.hstack([-2.0 * Zc, np.ones((n, 1))]))  # ×(−2) is exact
    u = 2.0**-53
    kappa = 16.0 * (m + 4) * u / (1.0 - (m + 4) * u)
    kw_all = kappa * (nzc + float(nxc.max()))
    xt = np.ascontiguousarray(Xs.T)
    own = np.zeros(n, dtype=bool)
    count = np.zeros(n, dtype=np.int64)
    first = np.zeros(n, dtype=np.int64)

    def block(r0: int) -> None:
        r1 = min(n, r0 + BLAS_ROWS)
        b = r1 - r0
        a_blk = amat[r0:r1]
        nz, kw = nzc[r0:r1], kw_all[r0:r1]
        best = np.full(b, np.inf)
        thr = np.full(b, np.inf)
        cand_idx = np.empty((b, BLAS_CANDIDATES), dtype=np.int64)
        cand_val = np.empty((b, BLAS_CANDIDATES))
        ncand = np.zeros(b, dtype=np.int64)
        full = np.zeros(b, dtype=np.bool_)
        tile = np.empty(b * min(BLAS_COLS, nx))
        for c0 in range(0, nx, BLAS_COLS):
            c1 = min(nx, c0 + BLAS_COLS)
            t = tile[: b * (c1 - c0)].reshape(b, c1 - c0)
            np.matmul(a_blk, bmat[:, c0:c1], out=t)
            gemm_scan_tile(t, c0, nz, kw, kappa, TIE_REL_TOL, TIE_ABS_TOL, best, thr, cand_idx, cand_val, ncand, full)
        gemm_resolve_rows(xt, Zs, r0, thr, cand_idx, cand_val, ncand, full, TIE_REL_TOL, TIE_ABS_TOL,
                          own_idx, own, count, first)

    # One single-threaded product per block and worker: threaded BLAS alternating with
    # threaded kernels make the two thread pools spin against each other.
    from concurrent.futures import ThreadPoolExecutor

    from threadpoolctl import threadpool_limits

    with threadpool_limits(1, user_api="blas"), ThreadPoolExecutor(threads()) as pool:
        list(pool.map(block, range(0, n, BLAS_ROWS)))
    return own, count, first


#: a record whose own-ball search visits more than this share of the kd-tree's leaves is
#: finished by the product search (large balls in many independent dimensions)
TREE_LEAF_BUDGET = 1 / 8


def _link_tree(Xs: np.ndarray, Zs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Exact own-record links through a Numba kd-tree (same links and ties as :func:`_brute`).

    DDR only asks whether a record's own original is among its nearest, so the search
    stops at the first original clearly nearer than the own one, and otherwise only
    explores the ball of radius d(z_i, x_i) (``ppdm.metrics._ballsearch``). Records whose
    search would cover more than :data:`TREE_LEAF_BUDGET` of the leaves are handed to the
    product search. ``count``/``first`` are filled for records linked to their own original
    (the only ones whose credit uses them).
    """
    from ppdm.metrics._ballsearch import LEAF_SIZE, build_tree, own_ball_search

    n = len(Zs)
    tree = build_tree(Xs, LEAF_SIZE)
    n_leaves = int((tree[4] < 0).sum())
    budget = max(32, int(n_leaves * TREE_LEAF_BUDGET))
    status, count, first = own_ball_search(Xs, Zs, np.arange(n), *tree, TIE_REL_TOL, TIE_ABS_TOL, budget,  # type: ignore[call-arg]  # numba's Dispatcher type does not count *tree
                                           chunks_for(n))
    own = status == 1
    undecided = np.flatnonzero(status < 0)
    if undecided.size:
        o, c, f = _link_blas(Xs, np.ascontiguousarray(Zs[undecided]), undecided)
        own[undecided], count[undecided], first[undecided] = o, c, f
    return own, count, first


def _link_kdtree(
    Xs: np.ndarray, Zs: np.ndarray, need_first: bool, tree: Any = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    from scipy.spatial import cKDTree

    if tree is None:
        tree = cKDTree(Xs)
    n = len(Zs)
    own2 = ((Zs - Xs) ** 2).sum(axis=1)
    d1 = np.empty(n)
    d2 = np.full(n, np.inf)
    k = 2 if len(Xs) > 1 else 1
    # Only originals at most as far as the own record matter: search for the two nearest
    # within that radius. Records are grouped by their own distance so that each group's
    # (scalar) search bound is tight; an unbounded 2-NN search is far slower in many
    # dimensions, where the second neighbour is usually distant.
    order = np.argsort(own2, kind="stable")
    n_groups = max(1, min(64, n // 512))
    for g in np.array_split(order, n_groups):
        if g.size == 0:
            continue
        bound = math.sqrt(float(own2[g].max()) * (1.0 + 1e-9)) * (1.0 + 1e-9) + 1e-150
        d, _ = tree.query(Zs[g], k=k, distance_upper_bound=bound, workers=threads())
        d = d.reshape(g.size, k)
        d1[g] = d[:, 0]
        if k == 2:
            d2[g] = d[:, 1]
    d1 = np.minimum(d1, np.sqrt(own2))  # the own record is always within the bound
    lim2 = d1 * d1 * (1.0 + TIE_REL_TOL) + TIE_ABS_TOL
    own = own2 <= lim2
    count = np.ones(n, dtype=np.int64)
    first = np.arange(n)
    idx = np.flatnonzero(own & (d2 * d2 <= lim2))  # a second record as near: count the tie
    if idx.size:
        r = np.sqrt(lim2[idx])
        cnt = np.asarray(tree.query_ball_point(Zs[idx], r, return_length=True, workers=threads()))
        count[idx] = np.maximum(cnt, 2)
        if need_first:
            lists = tree.query_ball_point(Zs[idx], r, workers=threads())
            first[idx] = [min(min(lst), i) if lst else i for lst, i in zip(lists, idx, strict=True)]
    return own, count, first
