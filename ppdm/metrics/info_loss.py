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

:func:`il1s` and :func:`sse_sst` also accept a pair of dask DataFrames and reduce them
partition by partition.

Missing cells (``docs/missing_values.md``): a cell missing in x or in z is left out of
every comparison of that cell. IL1s, SSE/SST and IL_X sum over the cells observed in both
tables; sds, means, variances and entropies are those of each table's observed cells;
covariances and correlations use the records observed on both attributes (pairwise).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from ppdm.errors import ParameterError
from ppdm.metrics import _dask
from ppdm.metrics._common import (
    column_names,
    context_numeric,
    is_dask,
    numeric_pair,
    observed_sd,
    pick_options,
    require_nonconstant,
)
from ppdm.metrics.base import EvaluationContext, MeasureResult, register_measure

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
    """
    if form not in ("sum", "mean"):
        raise ParameterError(f"IL1s form must be 'sum' or 'mean', got {form!r}")
    if is_dask(x) or is_dask(z):
        names = column_names(x, columns, measure="IL1s")
        n, sx = _dask.count_and_sums(x, z, names, measure="IL1s")
        mx = sx / n
        ss, sa = _dask.add(_dask.reduce_pairs(
            x, z, names, lambda X, Z: (((X - mx) ** 2).sum(0), np.abs(X - Z).sum(0)), measure="IL1s"))
        if n < 2:
            raise ParameterError("IL1s needs at least 2 records")
        return _il1s_from_sums(names, int(n), np.sqrt(ss / (n - 1)), sa, form)
    names, X, Z = numeric_pair(x, z, columns, measure="IL1s", allow_missing=True)
    if np.isnan(X).any() or np.isnan(Z).any():
        both = ~np.isnan(X) & ~np.isnan(Z)
        return _il1s_from_sums(names, X.shape[0], observed_sd(X), np.where(both, np.abs(X - Z), 0.0).sum(axis=0),
                               form, both.sum(axis=0))
    return _il1s_from_sums(names, X.shape[0], X.std(axis=0, ddof=1), np.abs(X - Z).sum(axis=0), form)


def il1s_mean(x: Any, z: Any, columns: list[str] | None = None) -> IL1sResult:
    """IL1s in its published per-cell mean form, (1/(n·m)) Σ_j Σ_i |x_ij − z_ij| / (√2·S_j)."""
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
    if not sst > 0:
        raise ParameterError("SSE/SST is undefined: every original column is constant (SST = 0)")
    per = pd.DataFrame({"attribute": names, "sse": se, "sst": ss})
    return SseSstResult(value=100.0 * sse / sst, sse=sse, sst=sst, standardize=standardize, per_attribute=per)


def sse_sst(
    x: Any, z: Any, columns: list[str] | None = None, *, standardize: Literal["none", "zscore"] = "none"
) -> SseSstResult:
    """100·SSE/SST (paper 003 §4, Fig. 3 "SSE ratio"); ``standardize="zscore"`` divides each
    column by the original sample sd first (sdcMicro fixture fields ``zSSE``/``zSST``)."""
    if standardize not in ("none", "zscore"):
        raise ParameterError(f"SSE/SST standardize must be 'none' or 'zscore', got {standardize!r}")
    if is_dask(x) or is_dask(z):
        names = column_names(x, columns, measure="SSE/SST")
        n, sx = _dask.count_and_sums(x, z, names, measure="SSE/SST")
        mx = sx / n
        ss, se = _dask.add(_dask.reduce_pairs(
            x, z, names, lambda X, Z: (((X - mx) ** 2).sum(0), ((X - Z) ** 2).sum(0)), measure="SSE/SST"))
        return _sse_sst_from_sums(names, int(n), ss, se, standardize)
    names, X, Z = numeric_pair(x, z, columns, measure="SSE/SST", allow_missing=True)
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
    (percent with the default ``scale=100``). ``excluded`` counts the cells/entries left
    out of a component because their denominator was zero.
    """

    il_x: float = 0.0
    il_m: float = 0.0
    il_v: float = 0.0
    il_s: float = 0.0
    il_r: float = float("nan")
    scale: float = 100.0
    excluded: dict[str, int] = field(default_factory=dict)
    per_attribute: pd.DataFrame = field(default_factory=pd.DataFrame)


def _rel_mean(num: np.ndarray, den: np.ndarray) -> tuple[float, int]:
    """mean(|num| / |den|) over entries with den ≠ 0, and how many entries were left out."""
    ok = den != 0
    if not ok.any():
        return float("nan"), int(den.size)
    return float(np.mean(np.abs(num[ok]) / np.abs(den[ok]))), int((~ok).sum())


def _nanmean(A: np.ndarray) -> np.ndarray:
    obs = ~np.isnan(A)
    cnt = obs.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(cnt > 0, np.where(obs, A, 0.0).sum(axis=0) / np.maximum(cnt, 1), np.nan)


def _corr(V: np.ndarray) -> np.ndarray:
    d = np.sqrt(np.diag(V))
    with np.errstate(invalid="ignore", divide="ignore"):
        R = V / np.outer(d, d)
    # a constant masked column has no linear association with anything: r = 0
    R[~np.isfinite(R)] = 0.0
    np.fill_diagonal(R, 1.0)
    return R


def il_metrics(
    x: Any,
    z: Any,
    columns: list[str] | None = None,
    *,
    scale: float = 100.0,
    r_divisor: Literal["offdiag", "with_diag"] = "offdiag",
    r_term_p1: Literal["drop", "zero"] = "drop",
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
    """
    if r_divisor not in ("offdiag", "with_diag"):
        raise ParameterError(f"r_divisor must be 'offdiag' or 'with_diag', got {r_divisor!r}")
    if r_term_p1 not in ("drop", "zero"):
        raise ParameterError(f"r_term_p1 must be 'drop' or 'zero', got {r_term_p1!r}")
    names, X, Z = numeric_pair(x, z, columns, measure="IL metrics", allow_missing=True)
    p = X.shape[1]
    excluded: dict[str, int] = {}
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
    il_m, excluded["il_m"] = _rel_mean(mx - mz, mx)
    iu = np.triu_indices(p)
    il_v, excluded["il_v"] = _rel_mean(V[iu] - Vz[iu], V[iu])
    il_s, excluded["il_s"] = _rel_mean(np.diag(V) - np.diag(Vz), np.diag(V))
    terms = [il_x, il_m, il_v, il_s]
    if p >= 2:
        require_nonconstant(names, np.sqrt(np.diag(V)), measure="IL metrics (correlation term)")
        R, Rz = _corr(V), _corr(Vz)
        io = np.triu_indices(p, k=1)
        divisor = p * (p - 1) / 2 if r_divisor == "offdiag" else p * (p + 1) / 2
        il_r = float(np.abs(R[io] - Rz[io]).sum() / divisor)
        terms.append(il_r)
    elif r_term_p1 == "zero":
        il_r = 0.0
        terms.append(il_r)
    else:
        il_r = float("nan")
    finite = [t for t in terms if math.isfinite(t)]
    if not finite:
        raise ParameterError("IL metrics is undefined: every component has a zero denominator")
    value = scale * float(np.mean(finite))
    with np.errstate(invalid="ignore", divide="ignore"):
        ok = ~np.isnan(X) & ~np.isnan(Z)
        per = pd.DataFrame({
            "attribute": names,
            "il_x": [_rel_mean(X[ok[:, j], j] - Z[ok[:, j], j], X[ok[:, j], j])[0] for j in range(p)],
            "mean_original": mx,
            "mean_masked": mz,
            "var_original": np.diag(V),
            "var_masked": np.diag(Vz),
        })
    return ILMetricsResult(value=value, il_x=il_x, il_m=il_m, il_v=il_v, il_s=il_s, il_r=il_r, scale=scale,
                           excluded=excluded, per_attribute=per)


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
    names, X, Z = numeric_pair(x, z, columns, measure="correlation difference", allow_missing=True)
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
        per = pd.DataFrame({"attribute": names, "abs_corr": np.abs(r)})
        return CorrelationResult(value=float(np.abs(r).mean()), variant=variant, per_pair=per)
    if p < 2:
        raise ParameterError("correlation difference needs at least 2 numeric attributes")
    if gaps:
        R = _corr(pd.DataFrame(X).cov(ddof=1).to_numpy())
        Rz = _corr(pd.DataFrame(Z).cov(ddof=1).to_numpy())
    else:
        R = _corr(np.cov(X, rowvar=False, ddof=1))
        Rz = _corr(np.cov(Z, rowvar=False, ddof=1))
    i, j = np.triu_indices(p, k=1)
    d = np.abs(R[i, j] - Rz[i, j])
    per = pd.DataFrame({"attribute_1": [names[a] for a in i], "attribute_2": [names[b] for b in j],
                        "r_original": R[i, j], "r_masked": Rz[i, j], "abs_difference": d})
    return CorrelationResult(value=float(d.mean()), variant=variant, per_pair=per)


# --------------------------------------------------------------- CLI registrations
def _num_ctx(ctx: EvaluationContext, name: str) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    cols = context_numeric(ctx, name)
    return ctx.x, ctx.z, cols


@register_measure("il_metrics", kind="utility", needs_class=False,
                  description="IL metrics of Domingo-Ferrer & Torra in percent (paper 003 §3.3.1); lower is better")
def _il_metrics_measure(ctx: EvaluationContext) -> ILMetricsResult:
    x, z, cols = _num_ctx(ctx, "il_metrics")
    return il_metrics(x, z, cols, **pick_options(ctx.options, "il_metrics", ["scale", "r_divisor", "r_term_p1"]))


@register_measure("il1s", kind="utility", needs_class=False,
                  description="IL1s, sdcMicro's sum form (paper 003 §3.3.1); lower is better")
def _il1s_measure(ctx: EvaluationContext) -> IL1sResult:
    x, z, cols = _num_ctx(ctx, "il1s")
    return il1s(x, z, cols, **pick_options(ctx.options, "il1s", ["form"]))


@register_measure("il1s_mean", kind="utility", needs_class=False,
                  description="IL1s, per-cell mean form as printed in paper 003 §3.3.1; lower is better")
def _il1s_mean_measure(ctx: EvaluationContext) -> IL1sResult:
    x, z, cols = _num_ctx(ctx, "il1s_mean")
    return il1s_mean(x, z, cols)


@register_measure("sse_sst", kind="utility", needs_class=False,
                  description="100·SSE/SST of the numeric attributes (microaggregation loss); lower is better")
def _sse_sst_measure(ctx: EvaluationContext) -> SseSstResult:
    x, z, cols = _num_ctx(ctx, "sse_sst")
    return sse_sst(x, z, cols, **pick_options(ctx.options, "sse_sst", ["standardize"]))


@register_measure("entropy", kind="utility", needs_class=False,
                  description="mean Shannon entropy (bits) of the released numeric attributes")
def _entropy_measure(ctx: EvaluationContext) -> EntropyResult:
    x, z, cols = _num_ctx(ctx, "entropy")
    return entropy(x, z, cols, **pick_options(ctx.options, "entropy", ["base", "normalized"]))


@register_measure("correlation_difference", kind="utility", needs_class=False,
                  description="mean |r_ij − r'_ij| over pairs of numeric attributes; lower is better")
def _correlation_measure(ctx: EvaluationContext) -> CorrelationResult:
    x, z, cols = _num_ctx(ctx, "correlation_difference")
    return correlation_difference(x, z, cols, **pick_options(ctx.options, "correlation_difference", ["variant"]))
