"""Information loss of a masked numeric release (paper 003 §3.3.1).

Paper 003 (Senavirathne & Torra, rounding-based discretization) measures the
information lost by masking with two numbers, "IL metrics" (Domingo-Ferrer & Torra
2001) and "IL1s" (Yancey, Winkler & Creecy 2002), and inspects SSE/SST, per-attribute
entropy and correlations. Each measure here takes the original table ``x`` and the
masked table ``z`` (DataFrames or 2-D arrays of the numeric attributes, records in
the same order) and returns a :class:`~ppdm.metrics.base.MeasureResult`.

Correspondence with sdcMicro (checked against its 5.8.1 outputs, see docs/measures.md):
``il1s(form="sum")`` is ``dUtility(method="IL1s")``; ``il1s(form="mean")`` is the
per-cell mean printed in paper 003 (sdcMicro's older ``IL1old``).

Every measure here also accepts a pair of Dask DataFrames partitioned alike and computes
the same value exactly, partition by partition (sums, then centred sums; pairwise
covariances from cross-products; entropies from value counts Dask spreads over partitions).

Missing cells (``docs/missing_values.md``): a cell missing in x or in z is left out of
every comparison of that cell. IL1s, SSE/SST and IL_X sum over the cells observed in both
tables; sds, means, variances and entropies are those of each table's observed cells;
covariances and correlations use the records observed on both attributes (pairwise).

The moments of the IL metrics live in :mod:`ppdm.metrics._info_loss_moments`, re-exported here.

The rest stays here (about 620 lines): six registered measures, each beside its function
(``tests/test_library_exports.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from ppdm.errors import MeasureNotApplicable, ParameterError
from ppdm.metrics import _dask
from ppdm.metrics._common import (
    column_names,
    context_numeric,
    is_dask,
    numeric_pair,
    observed_sd,
    pick_options,
    require_nonconstant,
    sd_from_sums,
)
from ppdm.metrics._info_loss_moments import (  # noqa: F401  (re-exported: the public path stays this module)
    _corr,
    _dask_moments,
    _dask_robust_il_x,
    _nanmean,
    _pairwise_cov,
    _rel_mean,
)
from ppdm.metrics.base import EvaluationContext, MeasureResult, register_measure
from ppdm.utils import check_choice

SQRT2 = math.sqrt(2.0)


# ---------------------------------------------------------------------------- IL1s
@dataclass
class IL1sResult(MeasureResult):
    """IL1s: standardised absolute distance between original and masked cells.

    ``value`` is the form asked for (``"sum"``: sdcMicro's ``dUtility(method="IL1s")``;
    ``"mean"``: the per-cell mean of paper 003 §3.3.1). Both forms are always given.
    """

    form: str = "sum"
    sum: float = 0.0
    mean: float = 0.0
    n: int = 0
    m: int = 0
    per_attribute: pd.DataFrame = field(default_factory=pd.DataFrame)
    cells: int = 0


def _il1s_from_sums(names: list[str], n: int, sd: np.ndarray, abs_sum: np.ndarray, form: str,
                    cells: np.ndarray | None = None) -> IL1sResult:
    require_nonconstant(names, sd, measure="IL1s")
    per_col = abs_sum / (SQRT2 * sd)
    total = float(per_col.sum())
    m = len(names)
    cells = np.full(m, n) if cells is None else np.asarray(cells)
    n_cells = int(cells.sum())
    mean = total / n_cells if n_cells else float("nan")
    per = pd.DataFrame({
        "attribute": names,
        "sd_original": sd,
        "il1s_sum": per_col,
        "il1s_mean": per_col / np.maximum(cells, 1),
        "cells": cells,
    })
    return IL1sResult(value=total if form == "sum" else mean, form=form, sum=total, mean=mean, n=n, m=m,
                      per_attribute=per, cells=n_cells)


def il1s(
    x: Any, z: Any, columns: list[str] | None = None, *, form: Literal["sum", "mean"] = "sum"
) -> IL1sResult:
    """IL1s = Σ_j Σ_i |x_ij − z_ij| / (√2·S_j), S_j the sample sd (ddof = 1) of original column j.

    Paper 003 §3.3.1 prints the per-cell mean (divided by n·m); the values in its tables
    (e.g. 542.51) are sdcMicro's sum form, which is the default here. A constant original
    column makes the measure undefined (ParameterError naming it). With missing cells the
    sum runs over the cells observed in x and z, S_j over the observed cells of x, and the
    mean divides by the number of cells compared.

    Row i of ``z`` must be the release of row i of ``x``: the function cannot tell. A release
    is shuffled (:func:`ppdm.experiments.release.release`), so ``il1s(x, rel.data)`` compares
    different people; evaluate it with :func:`ppdm.experiments.evaluate.evaluate`, which pairs
    the rows through the release's private log, or on ``rel.in_input_order()``.
    """
    if form not in ("sum", "mean"):
        raise ParameterError(f"IL1s form must be 'sum' or 'mean', got {form!r}")
    if is_dask(x) or is_dask(z):
        names = column_names(x, columns, measure="IL1s")
        n, cnt, mx = _dask.observed_means(x, z, names, side="original", measure="IL1s")
        if n < 2:
            raise MeasureNotApplicable("IL1s needs at least 2 records")

        def part(X: np.ndarray, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            both = ~np.isnan(X) & ~np.isnan(Z)
            obs = ~np.isnan(X)
            return (np.where(obs, (X - mx) ** 2, 0.0).sum(0), np.where(both, np.abs(X - Z), 0.0).sum(0),
                    both.sum(0))

        ss, sa, cells = _dask.add(_dask.reduce_pairs(x, z, names, part, measure="IL1s"))
        return _il1s_from_sums(names, int(n), sd_from_sums(ss, cnt), sa, form, cells)
    names, X, Z = numeric_pair(x, z, columns, measure="IL1s", allow_missing=True, rescale="column")
    if np.isnan(X).any() or np.isnan(Z).any():
        both = ~np.isnan(X) & ~np.isnan(Z)
        return _il1s_from_sums(names, X.shape[0], observed_sd(X), np.where(both, np.abs(X - Z), 0.0).sum(axis=0),
                               form, both.sum(axis=0))
    return _il1s_from_sums(names, X.shape[0], X.std(axis=0, ddof=1), np.abs(X - Z).sum(axis=0), form)


def il1s_mean(x: Any, z: Any, columns: list[str] | None = None) -> IL1sResult:
    """IL1s in its published per-cell mean form, (1/(n·m)) Σ_j Σ_i |x_ij − z_ij| / (√2·S_j);
    rows paired as for :func:`il1s`."""
    return il1s(x, z, columns, form="mean")


# ------------------------------------------------------------------------- SSE/SST
@dataclass
class SseSstResult(MeasureResult):
    """Microaggregation information loss 100·SSE/SST (percent).

    SSE = Σ_i ||x_i − z_i||², SST = Σ_i ||x_i − x̄||², over all attributes; with
    ``standardize="zscore"`` every column is first divided by the original's sd.
    """

    sse: float = 0.0
    sst: float = 0.0
    standardize: str = "none"
    per_attribute: pd.DataFrame = field(default_factory=pd.DataFrame)


def _sse_sst_from_sums(names: list[str], n: Any, ss: np.ndarray, se: np.ndarray, standardize: str) -> SseSstResult:
    if standardize == "zscore":
        with np.errstate(invalid="ignore", divide="ignore"):
            var = ss / (np.asarray(n) - 1)
        require_nonconstant(names, var, measure="SSE/SST with standardize='zscore'")
        ss, se = ss / var, se / var
    sst = float(ss.sum())
    sse = float(se.sum())
    if not (math.isfinite(sst) and math.isfinite(sse)):
        raise MeasureNotApplicable("SSE/SST cannot be computed: the sums of squares of these values overflow "
                                   "double precision")
    if not sst > 0:
        raise MeasureNotApplicable("SSE/SST is undefined: every original column is constant (SST = 0)")
    per = pd.DataFrame({"attribute": names, "sse": se, "sst": ss})
    return SseSstResult(value=100.0 * sse / sst, sse=sse, sst=sst, standardize=standardize, per_attribute=per)


def sse_sst(
    x: Any, z: Any, columns: list[str] | None = None, *, standardize: Literal["none", "zscore"] = "none"
) -> SseSstResult:
    """100·SSE/SST (paper 003 §4, Fig. 3 "SSE ratio"); ``standardize="zscore"`` divides each
    column by the original sample sd first (sdcMicro fixture fields ``zSSE``/``zSST``)."""
    standardize = check_choice(standardize, ("none", "zscore"), "SSE/SST standardize")
    if is_dask(x) or is_dask(z):
        names = column_names(x, columns, measure="SSE/SST")

        def both_of(X: np.ndarray, Z: np.ndarray) -> np.ndarray:
            return ~np.isnan(X) & ~np.isnan(Z)

        cnt, sx = _dask.add(_dask.reduce_pairs(
            x, z, names, lambda X, Z: _dask.observed_sums(X, both_of(X, Z)), measure="SSE/SST"))
        mx = sx / np.maximum(cnt, 1)

        def part(X: np.ndarray, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            b = both_of(X, Z)
            return np.where(b, (X - mx) ** 2, 0.0).sum(0), np.where(b, (X - Z) ** 2, 0.0).sum(0)

        ss, se = _dask.add(_dask.reduce_pairs(x, z, names, part, measure="SSE/SST"))
        return _sse_sst_from_sums(names, cnt, ss, se, standardize)
    # values near 1e200 square to infinity: compare them scaled by a power of two (exact, same ratio)
    names, X, Z = numeric_pair(x, z, columns, measure="SSE/SST", allow_missing=True,
                               rescale="column" if standardize == "zscore" else "common")
    if np.isnan(X).any() or np.isnan(Z).any():
        # the cells observed in both tables, SST about their own mean
        both = ~np.isnan(X) & ~np.isnan(Z)
        cnt = both.sum(axis=0)
        X0 = np.where(both, X, 0.0)
        mean = X0.sum(axis=0) / np.maximum(cnt, 1)
        ss = np.where(both, (X0 - mean) ** 2, 0.0).sum(axis=0)
        se = np.where(both, (X0 - np.where(both, Z, 0.0)) ** 2, 0.0).sum(axis=0)
        return _sse_sst_from_sums(names, cnt, ss, se, standardize)
    ss = ((X - X.mean(axis=0)) ** 2).sum(axis=0)
    se = ((X - Z) ** 2).sum(axis=0)
    return _sse_sst_from_sums(names, X.shape[0], ss, se, standardize)


# ---------------------------------------------------------------------- IL metrics
@dataclass
class ILMetricsResult(MeasureResult):
    """IL metrics (Domingo-Ferrer & Torra 2001, as paper 003 §3.3.1 uses them).

    ``value`` = scale · mean of the five components IL_X, IL_m, IL_V, IL_S, IL_R
    (percent with the default ``scale=100``), in the ``form`` asked for: ``"paper"`` divides
    each difference by the original value (``paper_value``; the components ``il_x`` …
    ``il_r``), ``"robust"`` by the original value or the attribute's spread, whichever is
    larger (``robust_value``; its components in ``robust_components``). Both values are
    always given. ``excluded`` counts the cells/entries left out of a paper component
    because their denominator was zero.
    """

    il_x: float = 0.0
    il_m: float = 0.0
    il_v: float = 0.0
    il_s: float = 0.0
    il_r: float = float("nan")
    scale: float = 100.0
    excluded: dict[str, int] = field(default_factory=dict)
    per_attribute: pd.DataFrame = field(default_factory=pd.DataFrame)
    form: str = "paper"
    paper_value: float = float("nan")
    robust_value: float = float("nan")
    robust_components: dict[str, float] = field(default_factory=dict)


def il_metrics(
    x: Any,
    z: Any,
    columns: list[str] | None = None,
    *,
    scale: float = 100.0,
    r_divisor: Literal["offdiag", "with_diag"] = "offdiag",
    r_term_p1: Literal["drop", "zero"] = "drop",
    form: Literal["paper", "robust"] = "paper",
) -> ILMetricsResult:
    """IL metrics = scale · (IL_X + IL_m + IL_V + IL_S + IL_R) / 5.

    * IL_X = mean_ij |x_ij − z_ij| / |x_ij| (cells with x_ij = 0 left out);
    * IL_m = mean_j |x̄_j − z̄_j| / |x̄_j|;
    * IL_V = mean over i ≤ j of |v_ij − v'_ij| / |v_ij| (covariances, ddof = 1);
    * IL_S = mean_j |v_jj − v'_jj| / v_jj (variances);
    * IL_R = Σ_{i<j} |r_ij − r'_ij| divided by p(p−1)/2 (``r_divisor="offdiag"``, the
      SDC Handbook) or p(p+1)/2 (``"with_diag"``).

    With one attribute IL_R does not exist: ``r_term_p1="drop"`` averages the other four,
    ``"zero"`` keeps five terms with IL_R = 0. A constant original column makes the
    correlation term undefined (ParameterError naming it).

    The paper's relative differences explode where a value, a mean or a covariance is near
    zero (74 320 % on shuttle, whose attributes are centred near 0). ``form="robust"``
    divides by the larger of that quantity and the attribute's spread: |x_ij| or s_j for
    IL_X, |x̄_j| or s_j for IL_m, |v_ij| or s_i·s_j for IL_V (s the original's sample sd);
    IL_S and IL_R are unchanged. Where the original quantity is at least the spread, both
    forms agree; a covariance of two attributes never is (|v_ij| ≤ s_i·s_j), so the robust
    IL_V measures covariance changes on the scale of correlations. ``value`` is the form
    asked for; the result holds both.
    """
    if r_divisor not in ("offdiag", "with_diag"):
        raise ParameterError(f"r_divisor must be 'offdiag' or 'with_diag', got {r_divisor!r}")
    if r_term_p1 not in ("drop", "zero"):
        raise ParameterError(f"r_term_p1 must be 'drop' or 'zero', got {r_term_p1!r}")
    form = check_choice(form, ("paper", "robust"), "IL metrics form")
    excluded: dict[str, int] = {}
    if is_dask(x) or is_dask(z):
        names = column_names(x, columns, measure="IL metrics")
        acc = _dask_moments(x, z, names, "IL metrics")
        p = len(names)
        il_x_col = acc["il_x_sum"] / np.maximum(acc["il_x_n"], 1)
        il_x_col = np.where(acc["il_x_n"] > 0, il_x_col, np.nan)
        tot = float(acc["il_x_n"].sum())
        il_x = float(acc["il_x_sum"].sum() / tot) if tot else float("nan")
        excluded["il_x"] = int(acc["il_x_zero"].sum())
        sd = np.sqrt(np.maximum(np.diag(acc["V"]), 0.0))
        rx_sum, rx_n = _dask_robust_il_x(x, z, names, sd)
        with np.errstate(invalid="ignore", divide="ignore"):
            rx_col = np.where(rx_n > 0, rx_sum / np.maximum(rx_n, 1), np.nan)
        rx = float(rx_sum.sum() / rx_n.sum()) if rx_n.sum() else float("nan")
        return _il_metrics_result(names, il_x, excluded, acc["mx"], acc["mz"], acc["V"], acc["Vz"], scale,
                                  r_divisor, r_term_p1, il_x_col, rx, rx_col, form)
    names, X, Z = numeric_pair(x, z, columns, measure="IL metrics", allow_missing=True, rescale="column")
    p = X.shape[1]
    gaps = bool(np.isnan(X).any() or np.isnan(Z).any())
    if gaps:
        # cells observed in both for IL_X; each table's observed cells for means; pairwise covariances
        both = ~np.isnan(X) & ~np.isnan(Z)
        il_x, excluded["il_x"] = _rel_mean((X - Z)[both], X[both])
        mx, mz = _nanmean(X), _nanmean(Z)
        V = pd.DataFrame(X).cov(ddof=1).to_numpy()
        Vz = pd.DataFrame(Z).cov(ddof=1).to_numpy()
    else:
        il_x, excluded["il_x"] = _rel_mean(X - Z, X)
        mx, mz = X.mean(axis=0), Z.mean(axis=0)
        V = np.atleast_2d(np.cov(X, rowvar=False, ddof=1))
        Vz = np.atleast_2d(np.cov(Z, rowvar=False, ddof=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        ok = ~np.isnan(X) & ~np.isnan(Z)
        il_x_col = np.array([_rel_mean(X[ok[:, j], j] - Z[ok[:, j], j], X[ok[:, j], j])[0] for j in range(p)])
        sd = np.sqrt(np.maximum(np.diag(V), 0.0))
        # robust IL_X: each cell's difference over max(|x_ij|, s_j), over the cells observed in both
        dens = np.maximum(np.abs(X), sd)
        use = ok & (dens != 0)
        rel = np.where(use, np.abs(X - Z) / np.where(use, dens, 1.0), 0.0)
        rx_n = use.sum(axis=0)
        rx_col = np.where(rx_n > 0, rel.sum(axis=0) / np.maximum(rx_n, 1), np.nan)
        rx = float(rel.sum() / rx_n.sum()) if rx_n.sum() else float("nan")
    return _il_metrics_result(names, il_x, excluded, mx, mz, V, Vz, scale, r_divisor, r_term_p1, il_x_col,
                              rx, rx_col, form)


def _il_metrics_result(names: list[str], il_x: float, excluded: dict[str, int], mx: np.ndarray, mz: np.ndarray,
                       V: np.ndarray, Vz: np.ndarray, scale: float, r_divisor: str, r_term_p1: str,
                       il_x_col: np.ndarray, robust_il_x: float, robust_il_x_col: np.ndarray,
                       form: str) -> ILMetricsResult:
    p = len(names)
    sd = np.sqrt(np.maximum(np.diag(V), 0.0))
    il_m, excluded["il_m"] = _rel_mean(mx - mz, mx)
    iu = np.triu_indices(p)
    il_v, excluded["il_v"] = _rel_mean(V[iu] - Vz[iu], V[iu])
    il_s, excluded["il_s"] = _rel_mean(np.diag(V) - np.diag(Vz), np.diag(V))
    # the robust form: denominators never below the attribute's spread (s_j; s_i·s_j for covariances)
    r_m, _ = _rel_mean(mx - mz, mx, sd)
    r_v, _ = _rel_mean(V[iu] - Vz[iu], V[iu], np.outer(sd, sd)[iu])
    terms = [il_x, il_m, il_v, il_s]
    robust_terms = [robust_il_x, r_m, r_v, il_s]
    if p >= 2:
        require_nonconstant(names, np.sqrt(np.diag(V)), measure="IL metrics (correlation term)")
        R, Rz = _corr(V), _corr(Vz)
        io = np.triu_indices(p, k=1)
        divisor = p * (p - 1) / 2 if r_divisor == "offdiag" else p * (p + 1) / 2
        il_r = float(np.abs(R[io] - Rz[io]).sum() / divisor)
        terms.append(il_r)
        robust_terms.append(il_r)
    elif r_term_p1 == "zero":
        il_r = 0.0
        terms.append(il_r)
        robust_terms.append(il_r)
    else:
        il_r = float("nan")
    finite = [t for t in terms if math.isfinite(t)]
    if not finite:
        raise MeasureNotApplicable("IL metrics is undefined: every component has a zero denominator")
    paper = scale * float(np.mean(finite))
    robust_finite = [t for t in robust_terms if math.isfinite(t)]
    robust = scale * float(np.mean(robust_finite)) if robust_finite else float("nan")
    with np.errstate(invalid="ignore", divide="ignore"):
        per = pd.DataFrame({
            "attribute": names,
            "il_x": il_x_col,
            "il_x_robust": robust_il_x_col,
            "mean_original": mx,
            "mean_masked": mz,
            "sd_original": sd,
            "var_original": np.diag(V),
            "var_masked": np.diag(Vz),
        })
    components = {"il_x": robust_il_x, "il_m": r_m, "il_v": r_v, "il_s": il_s, "il_r": il_r}
    return ILMetricsResult(value=paper if form == "paper" else robust, il_x=il_x, il_m=il_m, il_v=il_v, il_s=il_s,
                           il_r=il_r, scale=scale, excluded=excluded, per_attribute=per, form=form,
                           paper_value=paper, robust_value=robust, robust_components=components)


# ------------------------------------------------------------------------- entropy
@dataclass
class EntropyResult(MeasureResult):
    """Shannon entropy of each attribute of the masked table (and of the original).

    ``value`` is the mean entropy of the masked attributes; ``per_attribute`` gives
    both tables' entropies, their difference and the number of distinct values.
    """

    base: float = 2.0
    normalized: bool = False
    per_attribute: pd.DataFrame = field(default_factory=pd.DataFrame)


def shannon_entropy(values: np.ndarray | pd.Series, *, base: float = 2.0, normalized: bool = False) -> float:
    """H = −Σ_v p_v log p_v over the distinct values (bits by default); ``normalized``
    divides by log(#distinct) (0 for a single value)."""
    _, counts = np.unique(np.asarray(values), return_counts=True)
    p = counts / counts.sum()
    h = float(-(p * np.log(p)).sum() / math.log(base))
    h = max(h, 0.0)
    if normalized:
        return h / (math.log(len(counts)) / math.log(base)) if len(counts) > 1 else 0.0
    return h


def entropy(
    x: Any, z: Any, columns: list[str] | None = None, *, base: float = 2.0, normalized: bool = False
) -> EntropyResult:
    """Per-attribute Shannon entropy of the release (paper 003 §3.3.4 inspects it for
    rounded attributes): rounding to few points lowers it."""
    if not base > 1:
        raise ParameterError(f"entropy base must be > 1, got {base!r}")
    if is_dask(x) or is_dask(z):
        return _entropy_dask(x, z, column_names(x, columns, measure="entropy"), base, normalized)
    names, X, Z = numeric_pair(x, z, columns, measure="entropy", allow_missing=True)

    def seen(A: np.ndarray, j: int) -> np.ndarray:
        v = A[:, j]
        return v[~np.isnan(v)]  # entropy of the observed values

    hx = [shannon_entropy(seen(X, j), base=base, normalized=normalized) if seen(X, j).size else float("nan")
          for j in range(len(names))]
    hz = [shannon_entropy(seen(Z, j), base=base, normalized=normalized) if seen(Z, j).size else float("nan")
          for j in range(len(names))]
    per = pd.DataFrame({
        "attribute": names,
        "entropy_original": hx,
        "entropy_masked": hz,
        "difference": np.subtract(hx, hz),
        "distinct_original": [len(np.unique(seen(X, j))) for j in range(len(names))],
        "distinct_masked": [len(np.unique(seen(Z, j))) for j in range(len(names))],
    })
    return EntropyResult(value=float(np.nanmean(hz)) if np.isfinite(hz).any() else float("nan"), base=base,
                         normalized=normalized, per_attribute=per)


def _entropy_dask(x: Any, z: Any, names: list[str], base: float, normalized: bool) -> EntropyResult:
    """Entropies from value counts Dask computes across partitions (hash-partitioned, never
    in one place)."""
    import dask

    work = {"x": _dask.working_parts(x[names], names), "z": _dask.working_parts(z[names], names)}
    lazy = {}
    for side, df in work.items():
        for c in names:
            vc = df[c].dropna().value_counts(split_out=max(1, df.npartitions // 8))
            n = vc.sum()
            p = vc / n
            lazy[(side, c)] = (-(p * np.log(p)).sum(), vc.size)
    done = dask.compute(lazy)[0]

    def h(side: str, c: str) -> tuple[float, int]:
        raw, k = done[(side, c)]
        k = int(k)
        if k == 0:
            return float("nan"), 0
        v = max(float(raw) / math.log(base), 0.0)
        if normalized:
            v = v / (math.log(k) / math.log(base)) if k > 1 else 0.0
        return v, k

    hx = [h("x", c) for c in names]
    hz = [h("z", c) for c in names]
    per = pd.DataFrame({
        "attribute": names,
        "entropy_original": [a for a, _ in hx],
        "entropy_masked": [a for a, _ in hz],
        "difference": np.subtract([a for a, _ in hx], [a for a, _ in hz]),
        "distinct_original": [k for _, k in hx],
        "distinct_masked": [k for _, k in hz],
    })
    vals = np.array([a for a, _ in hz], dtype=float)
    return EntropyResult(value=float(np.nanmean(vals)) if np.isfinite(vals).any() else float("nan"), base=base,
                         normalized=normalized, per_attribute=per)


# ---------------------------------------------------------- correlation difference
@dataclass
class CorrelationResult(MeasureResult):
    """Mean absolute correlation measure, variant named in ``variant``.

    ``"difference"``: mean over attribute pairs i < j of |r_ij − r'_ij| (the IL_R term);
    ``"preservation"``: mean over attributes of |corr(x_j, z_j)|.
    """

    variant: str = "difference"
    per_pair: pd.DataFrame = field(default_factory=pd.DataFrame)


def correlation_difference(
    x: Any, z: Any, columns: list[str] | None = None, *, variant: Literal["difference", "preservation"] = "difference"
) -> CorrelationResult:
    """Mean absolute correlation difference (paper 003 §3.3.1, the R − R′ term).

    A constant original column makes correlations undefined (ParameterError naming it);
    a constant masked column counts as uncorrelated (r = 0).
    """
    if variant not in ("difference", "preservation"):
        raise ParameterError(f"correlation variant must be 'difference' or 'preservation', got {variant!r}")
    if is_dask(x) or is_dask(z):
        names = column_names(x, columns, measure="correlation difference")
        acc = _dask_moments(x, z, names, "correlation difference")
        return _correlation_result(names, acc["V"], acc["Vz"], acc["r_xz"], variant)
    names, X, Z = numeric_pair(x, z, columns, measure="correlation difference", allow_missing=True,
                               rescale="column")
    gaps = bool(np.isnan(X).any() or np.isnan(Z).any())
    require_nonconstant(names, observed_sd(X) if gaps else X.std(axis=0), measure="correlation difference")
    p = len(names)
    if variant == "preservation":
        r = np.zeros(p)
        for j in range(p):
            ok = ~np.isnan(X[:, j]) & ~np.isnan(Z[:, j])
            a, b = X[ok, j], Z[ok, j]
            if a.size > 1 and b.std() > 0 and a.std() > 0:
                r[j] = np.corrcoef(a, b)[0, 1]
        return _correlation_result(names, None, None, r, variant)
    if p < 2:
        raise MeasureNotApplicable("correlation difference needs at least 2 numeric attributes")
    if gaps:
        V, Vz = pd.DataFrame(X).cov(ddof=1).to_numpy(), pd.DataFrame(Z).cov(ddof=1).to_numpy()
    else:
        V, Vz = np.cov(X, rowvar=False, ddof=1), np.cov(Z, rowvar=False, ddof=1)
    return _correlation_result(names, V, Vz, None, variant)


def _correlation_result(names: list[str], V: Any, Vz: Any, r_xz: Any, variant: str) -> CorrelationResult:
    p = len(names)
    if variant == "preservation":
        r = np.asarray(r_xz, dtype=float)
        per = pd.DataFrame({"attribute": names, "abs_corr": np.abs(r)})
        return CorrelationResult(value=float(np.abs(r).mean()), variant=variant, per_pair=per)
    if p < 2:
        raise MeasureNotApplicable("correlation difference needs at least 2 numeric attributes")
    require_nonconstant(names, np.sqrt(np.clip(np.diag(np.atleast_2d(V)), 0, None)), measure="correlation difference")
    R = _corr(np.atleast_2d(V))
    Rz = _corr(np.atleast_2d(Vz))
    i, j = np.triu_indices(p, k=1)
    d = np.abs(R[i, j] - Rz[i, j])
    per = pd.DataFrame({"attribute_1": [names[a] for a in i], "attribute_2": [names[b] for b in j],
                        "r_original": R[i, j], "r_masked": Rz[i, j], "abs_difference": d})
    return CorrelationResult(value=float(d.mean()), variant=variant, per_pair=per)


# --------------------------------------------------------------- CLI registrations
_IL_METRICS_OPTIONS = ("scale", "r_divisor", "r_term_p1", "il_form")


def _num_ctx(ctx: EvaluationContext, name: str) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    cols = context_numeric(ctx, name)
    return ctx.x, ctx.z, cols


@register_measure("il_metrics", paired=True, kind="utility", needs_class=False, out_of_core=True,
                  options=_IL_METRICS_OPTIONS,
                  description="IL metrics of Domingo-Ferrer & Torra in percent (paper 003 §3.3.1), robust form "
                  "(relative to the attribute's spread where a value is near 0; the paper's form is in the details, "
                  "or with option il_form=paper); lower is better",
                  direction="lower", value_range=(0.0, None),
                  meaning="0 means the values, means, covariances and correlations of the numeric attributes are "
                  "unchanged; the value is a mean of relative differences in percent, so compare releases of one "
                  "table.")
def _il_metrics_measure(ctx: EvaluationContext) -> ILMetricsResult:
    x, z, cols = _num_ctx(ctx, "il_metrics")
    opts = pick_options(ctx.options, "il_metrics", _IL_METRICS_OPTIONS)
    # evaluate reports the robust form (a mean near 0 made the paper's form read 74 320 %); the option
    # is named il_form because il1s's "form" (sum/mean) is another parameter
    return il_metrics(x, z, cols, form=opts.pop("il_form", "robust"), **opts)


@register_measure("il1s", paired=True, kind="utility", needs_class=False, out_of_core=True, options=("form",),
                  description="IL1s, sdcMicro's sum form (paper 003 §3.3.1); lower is better",
                  direction="lower", value_range=(0.0, None),
                  meaning="0 means every numeric value is released unchanged; it grows with the distance between "
                  "original and released values in standard deviations, summed over attributes.")
def _il1s_measure(ctx: EvaluationContext) -> IL1sResult:
    x, z, cols = _num_ctx(ctx, "il1s")
    return il1s(x, z, cols, **pick_options(ctx.options, "il1s", ["form"]))


@register_measure("il1s_mean", paired=True, kind="utility", needs_class=False, out_of_core=True, options=(),
                  description="IL1s, per-cell mean form as printed in paper 003 §3.3.1; lower is better",
                  direction="lower", value_range=(0.0, None),
                  meaning="0 means every numeric value is released unchanged; the value is the mean distance of a "
                  "released value from its original, in standard deviations of the attribute.")
def _il1s_mean_measure(ctx: EvaluationContext) -> IL1sResult:
    x, z, cols = _num_ctx(ctx, "il1s_mean")
    return il1s_mean(x, z, cols)


@register_measure("sse_sst", paired=True, kind="utility", needs_class=False, out_of_core=True,
                  options=("standardize",),
                  description="100·SSE/SST of the numeric attributes (microaggregation loss); lower is better",
                  direction="lower", value_range=(0.0, None),
                  meaning="0 means the numeric values are unchanged; 100 means they lost as much as if every value "
                  "were replaced by its attribute's mean.")
def _sse_sst_measure(ctx: EvaluationContext) -> SseSstResult:
    x, z, cols = _num_ctx(ctx, "sse_sst")
    return sse_sst(x, z, cols, **pick_options(ctx.options, "sse_sst", ["standardize"]))


@register_measure("entropy", kind="utility", needs_class=False, out_of_core=True, options=("base", "normalized"),
                  description="mean Shannon entropy (bits) of the released numeric attributes",
                  direction=None, value_range=(0.0, None),
                  meaning="Neither higher nor lower is better in itself: compare it with the original's entropy "
                  "(per-attribute table); a release well below it no longer tells many values apart.")
def _entropy_measure(ctx: EvaluationContext) -> EntropyResult:
    x, z, cols = _num_ctx(ctx, "entropy")
    return entropy(x, z, cols, **pick_options(ctx.options, "entropy", ["base", "normalized"]))


@register_measure("correlation_difference", kind="utility", needs_class=False, out_of_core=True, options=("variant",),
                  description="mean |r_ij − r'_ij| over pairs of numeric attributes; lower is better",
                  direction="lower", value_range=(0.0, 2.0),
                  meaning="0 means every correlation between two numeric attributes is kept (with option "
                  "variant=preservation the value is a correlation instead, and 1 is best).")
def _correlation_measure(ctx: EvaluationContext) -> CorrelationResult:
    x, z, cols = _num_ctx(ctx, "correlation_difference")
    return correlation_difference(x, z, cols, **pick_options(ctx.options, "correlation_difference", ["variant"]))
