"""The moments behind the IL metrics of Domingo-Ferrer & Torra (2001), in memory and partitioned.

Relative means, NaN-aware means, pairwise covariances and correlations of x and z, and their
exact computation over Dask partitions (:func:`_dask_moments`), which the IL metrics of
:mod:`ppdm.metrics.info_loss` read. Split from that module, which re-exports every name here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ppdm.metrics import _dask


def _rel_mean(num: np.ndarray, den: np.ndarray, floor: np.ndarray | None = None) -> tuple[float, int]:
    """mean(|num| / |den|) over entries with den ≠ 0, and how many entries were left out;
    with ``floor``, the denominator is max(|den|, floor) (the robust form)."""
    d = np.abs(den) if floor is None else np.maximum(np.abs(den), floor)
    ok = d != 0
    if not ok.any():
        return float("nan"), int(np.size(den))
    return float(np.mean(np.abs(num[ok]) / d[ok])), int((~ok).sum())


def _nanmean(A: np.ndarray) -> np.ndarray:
    obs = ~np.isnan(A)
    cnt = obs.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(cnt > 0, np.where(obs, A, 0.0).sum(axis=0) / np.maximum(cnt, 1), np.nan)


def _pairwise_cov(P: np.ndarray, S: np.ndarray, N: np.ndarray) -> np.ndarray:
    """Pairwise-complete sample covariances from Σ a_j a_k (P), Σ a_j over the rows where k
    is observed (S) and the number of rows where both are (N)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return (P - S * S.T / N) / (N - 1)


def _dask_moments(x: Any, z: Any, names: list[str], measure: str) -> dict[str, Any]:
    """Two passes over aligned partitions: observed means of x and z, IL_X sums, and the
    pairwise-complete covariances of x and z (centred on the means for accuracy) and of
    each x_j with z_j."""
    def first(X: np.ndarray, Z: np.ndarray) -> tuple[Any, ...]:
        both = ~np.isnan(X) & ~np.isnan(Z)
        nz = both & (X != 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            rel = np.where(nz, np.abs(X - Z) / np.abs(np.where(nz, X, 1.0)), 0.0)
        return (*_dask.observed_sums(X), *_dask.observed_sums(Z), rel.sum(0), nz.sum(0), (both & (X == 0)).sum(0))

    nx, sx, nz_, sz, rel, rel_n, zero = _dask.add(_dask.reduce_pairs(x, z, names, first, measure=measure))
    with np.errstate(invalid="ignore", divide="ignore"):
        mx = np.where(nx > 0, sx / np.maximum(nx, 1), np.nan)
        mz = np.where(nz_ > 0, sz / np.maximum(nz_, 1), np.nan)

    def second(X: np.ndarray, Z: np.ndarray) -> tuple[Any, ...]:
        out = []
        for A, m in ((X, mx), (Z, mz)):
            obs = ~np.isnan(A)
            A0 = np.where(obs, A - m, 0.0)
            seen = obs.astype(float)
            out += [A0.T @ A0, A0.T @ seen, seen.T @ seen]
        b = ~np.isnan(X) & ~np.isnan(Z)
        xc, zc = np.where(b, X - mx, 0.0), np.where(b, Z - mz, 0.0)
        out += [b.sum(0), xc.sum(0), zc.sum(0), (xc * xc).sum(0), (zc * zc).sum(0), (xc * zc).sum(0)]
        return tuple(out)

    (Px, Sx, Nx, Pz, Sz, Nz, nb, bx, bz, bxx, bzz, bxz) = _dask.add(
        _dask.reduce_pairs(x, z, names, second, measure=measure))
    with np.errstate(invalid="ignore", divide="ignore"):
        cxz = (bxz - bx * bz / nb)
        vx = (bxx - bx * bx / nb)
        vz = (bzz - bz * bz / nb)
        r_xz = np.where((vx > 0) & (vz > 0) & (nb > 1), cxz / np.sqrt(vx * vz), 0.0)
    return {"mx": mx, "mz": mz, "V": _pairwise_cov(Px, Sx, Nx), "Vz": _pairwise_cov(Pz, Sz, Nz),
            "il_x_sum": rel, "il_x_n": rel_n, "il_x_zero": zero, "r_xz": r_xz}


def _corr(V: np.ndarray) -> np.ndarray:
    d = np.sqrt(np.diag(V))
    with np.errstate(invalid="ignore", divide="ignore"):
        R = V / np.outer(d, d)
    # a constant masked column has no linear association with anything: r = 0
    R[~np.isfinite(R)] = 0.0
    np.fill_diagonal(R, 1.0)
    return R


def _dask_robust_il_x(x: Any, z: Any, names: list[str], sd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per column: Σ |x_ij − z_ij| / max(|x_ij|, s_j) and the number of cells, over the cells
    observed in both tables (a third pass: the spreads come from the second)."""
    def part(X: np.ndarray, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        dens = np.maximum(np.abs(X), sd)
        use = ~np.isnan(X) & ~np.isnan(Z) & (dens != 0)
        with np.errstate(invalid="ignore", divide="ignore"):
            rel = np.where(use, np.abs(X - Z) / np.where(use, dens, 1.0), 0.0)
        return rel.sum(0), use.sum(0)

    return _dask.add(_dask.reduce_pairs(x, z, names, part, measure="IL metrics"))
