"""Record linkage over mixed attributes: can an intruder holding x find each record's own original?

DDR (:func:`ppdm.metrics.risk.ddr`) links on numeric attributes only. Here each released
record z_i is compared with every original record x_j on numeric *and* categorical
attributes with a Gower distance (Gower 1971; the distance-based record linkage of
Domingo-Ferrer & Torra 2001, applied to mixed data):

    d(z_i, x_j) = Σ_categorical [z_ic ≠ x_jc] + Σ_numeric |z_ia − x_ja| / range_a,

where range_a is the range of attribute a over x and z together, so every term lies in
[0, 1]. A missing value equals a missing value (distance 0) and differs from any other
(distance 1). The link of z_i is the set of originals at the smallest distance,
T_i = {j : d_ij ≤ min_j d_ij · (1 + 10⁻¹²) + 10⁻¹⁵}; it is correct when i ∈ T_i. As for
DDR, ties are credited 1/|T_i| (``"fractional"``, an intruder choosing among the tied
records at random), only when i is the lowest index in T_i (``"first"``) or only when
T_i = {i} (``"strict"``).

The search is exact. It never finds the nearest original as such: for each z_i it scans
the originals, abandoning a distance as soon as its partial sum exceeds d(z_i, x_i) and
stopping altogether at the first original clearly nearer than x_i (the link then fails).
Memory is one length-n candidate buffer per thread, O(block · n) with a block per thread.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd
from numba import njit, prange

from ppdm.errors import MeasureNotApplicable, ParameterError, SchemaError
from ppdm.metrics._ballsearch import tied_with_own
from ppdm.metrics._common import mixed_attributes
from ppdm.metrics._records import RecordDetailMixin, record_field
from ppdm.metrics.base import EvaluationContext, register_measure
from ppdm.metrics.risk import _threads

TIE_REL_TOL = 1e-12
TIE_ABS_TOL = 1e-15


@dataclass
class LinkageResult(RecordDetailMixin):
    """Share of released records whose own original is their nearest original (Gower distance on
    numeric and categorical attributes); lower is better."""

    linked: float = 0.0
    n: int = 0
    tied: int = 0  # records linked to their own original and to others at the same distance
    exact: int = 0  # records identical to their own original on every linking attribute
    numeric: list[str] = field(default_factory=list)
    categorical: list[str] = field(default_factory=list)
    ties: str = "fractional"
    credit: np.ndarray | None = record_field()
    tie_count: np.ndarray | None = record_field()


@njit(cache=True, inline="always")
def _gower(zn: np.ndarray, zc: np.ndarray, xn: np.ndarray, xc: np.ndarray, i: int, j: int, reach: float) -> float:
    """Gower distance of z_i and x_j, categorical terms first; returns a value > reach as soon
    as the partial sum passes ``reach`` (terms are added in one fixed order for every pair)."""
    d = 0.0
    for c in range(zc.shape[1]):
        if zc[i, c] != xc[j, c]:
            d += 1.0
            if d > reach:
                return d
    for a in range(zn.shape[1]):
        u = zn[i, a]
        v = xn[j, a]
        if u != u or v != v:  # missing: 0 against missing, 1 against a value
            t = 0.0 if (u != u and v != v) else 1.0
        else:
            t = abs(u - v)
        d += t
        if d > reach:
            return d
    return d


@njit(cache=True, parallel=True)
def own_links(
    xn: np.ndarray,  # (n, p) numeric originals divided by their range
    xc: np.ndarray,  # (n, q) categorical codes of the originals
    zn: np.ndarray,  # (n, p) released, same scaling
    zc: np.ndarray,  # (n, q) released codes (same coding as xc)
    rel_tol: float,
    abs_tol: float,
    n_chunks: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per released record i: whether x_i is in T_i, |T_i| and min T_i (the last two only when
    it is), and d(z_i, x_i)."""
    n = zn.shape[0]
    nx = xn.shape[0]
    own = np.zeros(n, dtype=np.bool_)
    count = np.zeros(n, dtype=np.int64)
    first = np.zeros(n, dtype=np.int64)
    own_d = np.zeros(n)
    chunk = (n + n_chunks - 1) // n_chunks
    for c in prange(n_chunks):
        cand_j = np.empty(nx, dtype=np.int64)
        cand_d = np.empty(nx)
        for i in range(c * chunk, min(n, (c + 1) * chunk)):
            d_own = _gower(zn, zc, xn, xc, i, i, np.inf)
            own_d[i] = d_own
            reach = d_own * (1.0 + rel_tol) + abs_tol  # no tie of x_i lies farther
            k = 0
            refuted = False
            for j in range(nx):
                if j == i:
                    continue
                d = _gower(zn, zc, xn, xc, i, j, reach)
                if d > reach:
                    continue
                if d_own > d * (1.0 + rel_tol) + abs_tol:
                    refuted = True  # x_j is nearer than any tie of x_i could be
                    break
                cand_j[k] = j
                cand_d[k] = d
                k += 1
            if refuted:
                continue
            cnt, f = tied_with_own(d_own, i, cand_d, cand_j, k, rel_tol, abs_tol)
            own[i] = True
            count[i] = cnt
            first[i] = f
    return own, count, first, own_d


def _prepare(
    x: pd.DataFrame, z: pd.DataFrame, numeric: list[str], categorical: list[str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    xn = np.empty((len(x), len(numeric)))
    zn = np.empty((len(z), len(numeric)))
    for a, c in enumerate(numeric):
        for label, df in (("original", x), ("released", z)):
            s = df[c]
            if not pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
                raise SchemaError(f"record linkage: numeric column {c!r} of the {label} table is not numeric "
                                  f"(dtype {s.dtype})")
        xv = x[c].to_numpy(dtype=float, na_value=np.nan)
        zv = z[c].to_numpy(dtype=float, na_value=np.nan)
        if np.isinf(xv).any() or np.isinf(zv).any():
            raise SchemaError(f"record linkage: numeric column {c!r} holds an infinite value")
        both = np.concatenate([xv, zv])
        both = both[~np.isnan(both)]
        rng = float(both.max() - both.min()) if both.size else 0.0
        scale = 1.0 / rng if rng > 0 else 0.0  # a constant attribute tells nothing apart
        xn[:, a] = xv * scale
        zn[:, a] = zv * scale
    xc = np.empty((len(x), len(categorical)), dtype=np.int64)
    zc = np.empty((len(z), len(categorical)), dtype=np.int64)
    for a, c in enumerate(categorical):
        codes, _ = pd.factorize(pd.concat([x[c], z[c]], ignore_index=True), use_na_sentinel=False)
        xc[:, a] = codes[: len(x)]
        zc[:, a] = codes[len(x):]
    return (np.ascontiguousarray(xn), np.ascontiguousarray(xc), np.ascontiguousarray(zn),
            np.ascontiguousarray(zc))


def record_linkage(
    x: pd.DataFrame,
    z: pd.DataFrame,
    numeric: list[str] | None = None,
    categorical: list[str] | None = None,
    *,
    ties: Literal["fractional", "first", "strict"] = "fractional",
) -> LinkageResult:
    """Distance-based record linkage of z to x over numeric and categorical attributes.

    ``value`` is the share of released records correctly linked to their own original
    (row i of z masks row i of x, as every ppdm technique keeps rows in order), with the
    Gower distance and the tie rules of the module docstring. ``numeric``/``categorical``
    name the linking attributes (default: numeric dtypes of x are numeric, the rest
    categorical). Assumes an intruder who holds the original records themselves — the
    strongest linkage scenario; per-record credit and tie counts stay on the result.
    """
    if ties not in ("fractional", "first", "strict"):
        raise ParameterError(f"record linkage ties must be 'fractional', 'first' or 'strict', got {ties!r}")
    numeric, categorical = mixed_attributes(x, z, numeric, categorical, measure="record linkage", z_label="released")
    if len(x) != len(z):
        # a synthetic release with its own number of records has no record pairs to link
        raise MeasureNotApplicable(f"record linkage compares records one to one, but the original has {len(x)} rows "
                          f"and the released table {len(z)}")
    if len(x) == 0:
        raise SchemaError("record linkage: the tables have no rows")
    xn, xc, zn, zc = _prepare(x, z, numeric, categorical)
    n = len(z)
    own, count, first, own_d = own_links(xn, xc, zn, zc, TIE_REL_TOL, TIE_ABS_TOL, max(1, min(n, 8 * _threads())))
    if ties == "fractional":
        credit = np.where(own, 1.0 / np.maximum(count, 1), 0.0)
    elif ties == "first":
        credit = (own & (first == np.arange(n))).astype(float)
    else:
        credit = (own & (count == 1)).astype(float)
    linked = float(credit.sum())
    return LinkageResult(value=linked / n, linked=linked, n=n, tied=int((own & (count > 1)).sum()),
                         exact=int((own_d == 0).sum()), numeric=numeric, categorical=categorical, ties=ties,
                         credit=credit, tie_count=np.where(own, count, 0))


@register_measure("record_linkage", paired=True, kind="risk", needs_class=False, default=True, direction="lower",
                  value_range=(0.0, 1.0),
                  threshold=0.05,
                  meaning="The share of released records an intruder who holds the originals links to the right person "
                  "by the nearest Gower distance on numeric and categorical attributes; 0 is best.",
                  description="distance-based record linkage over numeric and categorical attributes (Gower "
                              "distance): share of released records whose own original is nearest")
def _record_linkage_measure(ctx: EvaluationContext) -> LinkageResult:
    """Links on the declared quasi-identifiers, or on every attribute (not the class) when none
    are declared: an intruder who knows all of them is the strongest linkage scenario."""
    sch = ctx.schema
    cols = list(sch.quasi_identifiers) or [c for c in sch.attributes if c != sch.class_column]
    nested = ctx.options.get("record_linkage")
    ties = (nested.get("ties") if isinstance(nested, dict) and "ties" in nested
            else ctx.options.get("record_linkage.ties", ctx.options.get("ties", "fractional")))
    return record_linkage(ctx.x, ctx.z, [c for c in cols if c in sch.numeric],
                          [c for c in cols if c not in sch.numeric], ties=ties)


__all__ = ["LinkageResult", "record_linkage"]
