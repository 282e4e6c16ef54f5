"""Closeness of the released records to the originals, without a record pairing.

An intruder who holds the original records x looks in the release z for records that are
the originals themselves, or almost. The measures here ask only whether a released record
lies (nearly) on top of *some* original: they need no pairing between z's rows and x's, so
they give honest numbers for a shuffled release, a synthetic release with its own number of
records, or any release evaluated without its private log — where the record-paired
measures (record linkage, intruder matching) can only count verbatim copies.

* :func:`unique_verbatim_copies` (registered as ``verbatim_copies``) — the share of released
  records that copy, on every shared attribute, an original that is unique in x. A copy of a
  unique original points at one person; a copy of a record x holds several times does not.
* :func:`nearest_record_distance` — the distance to the closest record (DCR) of released
  records against the originals' own nearest-neighbour distances: the share of released
  records nearer to an original than originals usually are to each other, beyond what a
  fresh draw from x's distribution would give.

Both compare records on every attribute the release shares with x (the class too), with the
Gower distance of :mod:`ppdm.metrics.linkage` averaged over the attributes: a categorical
attribute costs 1 when the values differ, a numeric one |a − b| / range_a (range_a over x,
each term capped at 1 so a released value outside x's range costs at most 1); a missing
value is at 0 from a missing one and at 1 from any value. A numeric attribute constant in x
compares as a categorical one (equal or not).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numba import njit

from ppdm.errors import MeasureNotApplicable, ParameterError, SchemaError
from ppdm.metrics._common import wilson_interval
from ppdm.metrics._kernels import groups_by_level, mismatch_counts, same_codes
from ppdm.metrics.base import EvaluationContext, MeasureResult, register_measure
from ppdm.metrics.keyvar import _opt, group_codes
from ppdm.parallel import chunks_for, run_chunks

#: released records (and originals, for the reference) whose nearest original is searched by default
DEFAULT_SAMPLE = 2000
#: the share q of originals' nearest-other-original distances below which a released record is near
DEFAULT_QUANTILE = 0.01


# ------------------------------------------------------------------ attributes and encoding
def _is_number(s: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)


def compared_attributes(x: pd.DataFrame, z: pd.DataFrame, numeric: list[str] | None = None,
                        categorical: list[str] | None = None, *, measure: str) -> tuple[list[str], list[str]]:
    """The attributes both tables hold, split into numeric and categorical ones.

    Without lists, every column the two tables share is compared: numeric (non-boolean) dtypes
    as numeric, the rest as categorical. A column named numeric whose values are not numbers
    in both tables (a release that generalised ages into labels) is compared as categorical:
    its released labels then never equal an original value.
    """
    if not isinstance(x, pd.DataFrame) or not isinstance(z, pd.DataFrame):
        raise SchemaError(f"{measure} compares two DataFrames (original and released)")
    if numeric is None and categorical is None:
        shared = [c for c in x.columns if c in z.columns]
        numeric = [c for c in shared if _is_number(x[c])]
        categorical = [c for c in shared if c not in numeric]
    numeric, categorical = list(numeric or []), list(categorical or [])
    for label, df in (("original", x), ("released", z)):
        absent = [c for c in numeric + categorical if c not in df.columns]
        if absent:
            raise SchemaError(f"{measure}: column(s) {', '.join(map(repr, absent))} not in the {label} table")
    if not numeric + categorical:
        raise MeasureNotApplicable(f"{measure} needs an attribute that the original and released tables share")
    as_cat = [c for c in numeric if not (_is_number(x[c]) and _is_number(z[c]))]
    return [c for c in numeric if c not in as_cat], categorical + as_cat


def _numbers(s: pd.Series, name: str) -> np.ndarray:
    v = s.to_numpy(dtype=float, na_value=np.nan)
    if np.isinf(v).any():
        raise SchemaError(f"numeric column {name!r} holds an infinite value")
    return v + 0.0  # −0.0 becomes 0.0, so equal values get equal codes


def _value_codes(x: pd.DataFrame, z: pd.DataFrame, numeric: list[str],
                 categorical: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per column, codes of the values over the union of both tables (−1 for missing): numeric
    values by number (an integer 3 equals a float 3.0), the rest by value."""
    nx, nz = len(x), len(z)
    codes = np.empty((nx + nz, len(numeric) + len(categorical)), dtype=np.int64)
    for a, c in enumerate(numeric):
        codes[:, a] = pd.factorize(np.concatenate([_numbers(x[c], c), _numbers(z[c], c)]))[0]
    for a, c in enumerate(categorical, start=len(numeric)):
        if x[c].dtype == z[c].dtype:
            both = pd.concat([x[c], z[c]], ignore_index=True)  # factorized in its own dtype: fast for strings
        else:
            both = pd.concat([x[c].astype(object), z[c].astype(object)], ignore_index=True)
            both = both.where(both.notna(), None)
        codes[:, a] = pd.factorize(both)[0]
    return codes[:nx], codes[nx:]


# ------------------------------------------------------------------ verbatim copies of unique originals
@dataclass
class VerbatimCopiesResult(MeasureResult):
    """Share of released records that copy an original unique in x on every shared attribute,
    each unique original matched by one released record at most; lower is better."""

    copies: int = 0  # unique originals found verbatim in the release
    released: int = 0
    unique_originals: int = 0  # originals unique in x on the compared attributes
    originals: int = 0
    numeric: list[str] = field(default_factory=list)
    categorical: list[str] = field(default_factory=list)


def unique_verbatim_copies(x: pd.DataFrame, z: pd.DataFrame, numeric: list[str] | None = None,
                           categorical: list[str] | None = None) -> VerbatimCopiesResult:
    """The share of released records that are exact copies of an original record unique in x.

    Records are compared on the attributes ``numeric`` and ``categorical`` (default: every
    column both tables share; :func:`compared_attributes`), a missing value equal to a missing
    one. An original is *unique* when no other record of x equals it on those attributes: its
    copy in the release singles out one person for an intruder who holds x, without any
    pairing. Copies are counted as multisets — each unique original is used once, so two
    released copies of the same original count once — and divided by the number of released
    records. A release equal to x in any order gives 1 − (share of x's records that are not
    unique). Copies of records that x holds twice or more are not counted: they single out
    nobody (:func:`nearest_record_distance` sees them as near records).
    """
    numeric, categorical = compared_attributes(x, z, numeric, categorical, measure="verbatim_copies")
    if len(x) == 0 or len(z) == 0:
        raise SchemaError("verbatim_copies: the tables have no rows")
    cx, cz = _value_codes(x, z, numeric, categorical)
    g = group_codes(np.concatenate([cx, cz]))
    gx, gz = g[: len(x)], g[len(x):]
    size = int(g.max()) + 1
    in_x = np.bincount(gx, minlength=size)
    in_z = np.bincount(gz, minlength=size)
    unique = in_x == 1
    copies = int((unique & (in_z > 0)).sum())
    return VerbatimCopiesResult(value=copies / len(z), copies=copies, released=len(z),
                                unique_originals=int(unique.sum()), originals=len(x), numeric=numeric,
                                categorical=categorical)


# ------------------------------------------------------------------ distance to the closest record
def _closest(qn: np.ndarray, qc: np.ndarray, g_codes: np.ndarray, g_start: np.ndarray, xn: np.ndarray,
             x_idx: np.ndarray, skip: np.ndarray, n_chunks: int, q_order: np.ndarray) -> np.ndarray:
    """Per query row, the smallest summed Gower distance to an original other than original
    ``skip[i]`` (−1: none skipped).

    The originals are grouped by their categorical codes (``g_codes[a, g]``: code of attribute a
    in group g; the rows of group g are ``g_start[g]:g_start[g + 1]`` of ``xn``, originals
    ``x_idx``); numeric values are pre-scaled by 1/range. For each query the categorical part of
    the distance is counted once per group, and groups are visited level by level of it: a level
    at or above the best distance found ends the search. Within a group the numeric terms are
    added in column order and a candidate is dropped once its sum reaches the best. The queries
    are searched in the order ``q_order``, which puts equal categorical codes together: their
    counts and groups' order are made once."""
    out = np.empty(qn.shape[0])
    run_chunks(_closest_chunk, qn.shape[0], qn, qc, g_codes, g_start, xn, x_idx, skip, q_order, out, chunks=n_chunks)
    return out


@njit(cache=True, nogil=True)
def _closest_chunk(ch, start, stop, qn, qc, g_codes, g_start, xn, x_idx, skip, q_order, out):
    """Queries ``q_order[start:stop]`` of :func:`_closest` (:func:`ppdm.parallel.run_chunks`)."""
    n_num = qn.shape[1]
    n_cat = g_codes.shape[0]
    n_groups = g_start.shape[0] - 1
    dc = np.empty(n_groups, dtype=np.int64)
    head = np.empty(n_cat + 2, dtype=np.int64)
    by_level = np.empty(n_groups, dtype=np.int64)
    prev = -1
    for pos in range(start, stop):
        i = q_order[pos]
        same = same_codes(qc, i, prev)
        prev = i
        if not same:
            mismatch_counts(dc, g_codes, qc[i])
            groups_by_level(dc, head, by_level)
        best = np.inf
        s = skip[i]
        for t in range(n_groups):
            g = by_level[t]
            base = float(dc[g])
            if base >= best:
                break  # this group and every later one are at least as far
            for j in range(g_start[g], g_start[g + 1]):
                if x_idx[j] == s:
                    continue
                d = base
                for a in range(n_num):
                    u = qn[i, a]
                    w = xn[j, a]
                    if u != u or w != w:  # missing: 0 against missing, 1 against a value
                        d += 0.0 if (u != u and w != w) else 1.0
                    else:
                        d += min(abs(u - w), 1.0)
                    if d >= best:
                        break
                if d < best:
                    best = d
        out[i] = best


def _gower_inputs(x: pd.DataFrame, z: pd.DataFrame, numeric: list[str],
                  categorical: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """(xn, xc, zn, zc, attributes): numeric values divided by their range over x, categorical
    codes over the union (missing: a code of its own), columns in the order the search reads them."""
    num, cat = [], list(categorical)
    scales = []
    for c in numeric:
        v = _numbers(x[c], c)
        v = v[~np.isnan(v)]
        rng = float(v.max() - v.min()) if v.size else 0.0
        if rng > 0:
            num.append(c)
            scales.append(1.0 / rng)
        else:
            cat.append(c)  # constant in x: only equal or not tells anything
    xn = np.column_stack([_numbers(x[c], c) * s for c, s in zip(num, scales, strict=True)]) if num else \
        np.zeros((len(x), 0))
    zn = np.column_stack([_numbers(z[c], c) * s for c, s in zip(num, scales, strict=True)]) if num else \
        np.zeros((len(z), 0))
    cn = [c for c in cat if c in numeric]
    cx, cz = _value_codes(x, z, cn, [c for c in cat if c not in numeric])
    return (np.ascontiguousarray(xn), np.ascontiguousarray(cx), np.ascontiguousarray(zn),
            np.ascontiguousarray(cz), len(numeric) + len(categorical))


class OriginalIndex:
    """The originals as :func:`closest_distances` searches them: grouped by their categorical
    codes, each group's numeric rows contiguous. Built once, searched by any number of queries."""

    def __init__(self, xn: np.ndarray, xc: np.ndarray) -> None:
        n = len(xn)
        gid = group_codes(xc) if xc.shape[1] else np.zeros(n, dtype=np.int64)
        order = np.argsort(gid, kind="stable")
        n_groups = int(gid.max()) + 1 if n else 0
        self.g_start = np.concatenate([[0], np.cumsum(np.bincount(gid, minlength=n_groups))]).astype(np.int64)
        first = order[self.g_start[:-1]]
        self.g_codes = np.ascontiguousarray(xc[first].T, dtype=np.int64)
        self.xn = np.ascontiguousarray(xn[order], dtype=np.float64)
        self.x_idx = order.astype(np.int64)


def closest_distances(qn: np.ndarray, qc: np.ndarray, index: OriginalIndex,
                      skip: np.ndarray | None = None) -> np.ndarray:
    """Summed Gower distance from each query row (numeric values scaled as the originals',
    categorical codes shared with them) to its closest original, excluding original ``skip[i]``
    for query i (inf when none is left); exact, memory linear in the records, never n × n."""
    nq = len(qn)
    if nq == 0:
        return np.zeros(0)
    skip = np.full(nq, -1, dtype=np.int64) if skip is None else np.ascontiguousarray(skip, dtype=np.int64)
    qc = np.ascontiguousarray(qc, dtype=np.int64)
    q_order = np.argsort(group_codes(qc), kind="stable") if qc.shape[1] else np.arange(nq)
    return _closest(np.ascontiguousarray(qn, dtype=np.float64), qc, index.g_codes, index.g_start, index.xn,
                    index.x_idx, skip, chunks_for(nq), q_order.astype(np.int64))


@dataclass
class NearestRecordResult(MeasureResult):
    """Excess share of released records that lie nearer to an original than originals lie to
    each other (distance to the closest record, DCR); lower is better."""

    near: float = 0.0  # share of (sampled) released records within the reference distance or copied
    baseline: float = 0.0  # the share a fresh draw from x's distribution would give: p0 + (1 − p0)·q
    quantile: float = DEFAULT_QUANTILE  # q
    reference_distance: float = 0.0  # q-quantile of the originals' positive nearest-other-original distances
    reference_exact: float = 0.0  # p0: share of originals with an identical other original
    exact_copies: float = 0.0  # share of (sampled) released records at distance 0 from an original
    median_dcr: float = float("nan")  # median distance of released records to their closest original
    median_nn: float = float("nan")  # median distance of originals to their nearest other original
    median_ratio: float = float("nan")  # median_dcr / median_nn: below 1, the release sits closer than x itself
    view: str = "values"  # the view that gave ``value``: "values", or "ranks" (each numeric column's own ranks)
    rank_near: float = float("nan")  # ``near`` in the rank view
    rank_exact_copies: float = float("nan")  # share at distance 0 in the rank view: x up to a monotone recoding
    n: int = 0  # released records searched
    n_reference: int = 0  # originals searched for the reference
    population: int = 0  # released records in all
    sample_size: int | None = None  # n when the released records were sampled
    confidence: float = 0.95
    ci_low: float = float("nan")  # Wilson interval of ``near`` less the baseline, when sampled
    ci_high: float = float("nan")
    numeric: list[str] = field(default_factory=list)
    categorical: list[str] = field(default_factory=list)


def _check_quantile(q: Any) -> float:
    try:
        q = float(q)
    except (TypeError, ValueError):
        raise ParameterError(f"nearest_record_distance quantile must be a number in (0, 1), got {q!r}") from None
    if not (0.0 < q < 1.0):
        raise ParameterError(f"nearest_record_distance quantile must be in (0, 1), got {q!r}")
    return q


def _check_sample(m: Any) -> int:
    try:
        k = int(m)
    except (TypeError, ValueError):
        raise ParameterError(f"nearest_record_distance sample must be a whole number ≥ 1, got {m!r}") from None
    if k < 1 or k != float(m):
        raise ParameterError(f"nearest_record_distance sample must be a whole number ≥ 1, got {m!r}")
    return k


def nearest_record_distance(
    x: pd.DataFrame,
    z: pd.DataFrame,
    numeric: list[str] | None = None,
    categorical: list[str] | None = None,
    *,
    quantile: float = DEFAULT_QUANTILE,
    sample: int = DEFAULT_SAMPLE,
    random_state: int | None = 0,
    confidence: float = 0.95,
) -> NearestRecordResult:
    """Excess of released records near an original over what a fresh draw from x would give.

    The distance to the closest record (DCR) of a released record is its Gower distance (module
    docstring) to the nearest original. Park et al. (2018, "Data synthesis based on generative
    adversarial networks", PVLDB 11(10), in their privacy evaluation) judge a synthetic table by
    it: a release whose records sit at DCR 0, or far closer to originals than originals sit to
    one another, reproduces people rather than their distribution. The nearest-neighbour
    distance ratio (NNDR: nearest over second-nearest original, used beside DCR by e.g. Zhao et
    al. 2021, CTAB-GAN) is a variant of the same idea. Here the reference is the originals' own
    nearest-other-original distances (NN), taken as the distances a record drawn afresh from x's
    distribution would have.

    Let Q be the ``quantile`` q of the originals' positive NN distances and p0 the share of
    originals with an identical other original (NN = 0; 0 for most tables). A released record
    is *near* when its DCR is 0 (an exact copy) or below Q. A fresh draw from x's distribution
    is near with probability about p0 + (1 − p0)·q — the *baseline* (exactly q when x has no
    duplicates) — so ``value`` = max(0, share of released records near − baseline): 0 for a
    release that is no closer to x than x's own records are to each other, up to 1 − baseline
    for a release of copies or of originals moved by tiny noise. The result also reports the
    median DCR, the median NN and their ratio (below 1: released records sit closer to the
    originals than the originals to each other).

    Cost: a uniform random sample of ``sample`` released records (all when fewer) is searched
    against **all** originals, and a sample of ``sample`` originals against all others for the
    reference, with a pruned exact scan (memory linear in the records, never n × n). When the
    released records are sampled, ``ci_low``/``ci_high`` give the Wilson ``confidence``
    interval of the near share less the baseline (the baseline itself is taken as known).
    Seeded by ``random_state``.
    """
    q = _check_quantile(quantile)
    m = _check_sample(sample)
    numeric, categorical = compared_attributes(x, z, numeric, categorical, measure="nearest_record_distance")
    if len(z) == 0:
        raise SchemaError("nearest_record_distance: the released table has no rows")
    if len(x) < 2:
        raise MeasureNotApplicable("nearest_record_distance needs at least 2 original records (its reference is "
                                   "their distances to one another)")
    rng = np.random.default_rng([int(random_state or 0), 29])
    rows_z = np.sort(rng.choice(len(z), m, replace=False)) if m < len(z) else np.arange(len(z))
    rows_x = np.sort(rng.choice(len(x), m, replace=False)) if m < len(x) else np.arange(len(x))
    plain = _near_records(x, z, numeric, categorical, q, rows_z, rows_x)
    # ranks on one numeric attribute alone say nothing: a table of n records takes the same n rank
    # values as x whoever is in it, so only a coincidence on two or more ranks points at a record
    ranked = _near_records(_ranks(x, numeric), _ranks(z, numeric), numeric, categorical, q, rows_z, rows_x) \
        if len(numeric) >= 2 else plain
    # the worse view decides: an intruder who holds x matches on ranks as easily as on values
    worst = ranked if ranked.near - ranked.baseline > plain.near - plain.baseline else plain
    n = len(rows_z)
    med_dcr, med_nn = float(np.median(plain.dcr)), float(np.median(plain.nn))
    res = NearestRecordResult(
        value=max(0.0, worst.near - worst.baseline), near=plain.near, baseline=plain.baseline, quantile=q,
        reference_distance=plain.reference, reference_exact=plain.p0, exact_copies=float((plain.dcr == 0).mean()),
        median_dcr=med_dcr, median_nn=med_nn,
        median_ratio=med_dcr / med_nn if med_nn > 0 else (math.nan if med_dcr == 0 else math.inf),
        view="ranks" if worst is not plain else "values", rank_near=ranked.near,
        rank_exact_copies=float((ranked.dcr == 0).mean()),
        n=n, n_reference=len(rows_x), population=len(z), confidence=confidence, numeric=numeric,
        categorical=categorical)
    if n < len(z):
        lo, hi = wilson_interval(int(round(worst.near * n)), n, confidence)
        res.sample_size = n
        res.ci_low, res.ci_high = max(0.0, lo - worst.baseline), max(0.0, hi - worst.baseline)
    return res


@dataclass
class _NearRecords:
    """One view's distances: released records' DCR, the originals' NN, and what they give."""

    dcr: np.ndarray
    nn: np.ndarray
    p0: float  # share of searched originals with an identical other original
    reference: float  # q-quantile of the positive NN distances
    baseline: float  # p0 + (1 − p0)·q
    near: float  # share of searched released records at DCR 0 or below the reference


def _near_records(x: pd.DataFrame, z: pd.DataFrame, numeric: list[str], categorical: list[str], q: float,
                  rows_z: np.ndarray, rows_x: np.ndarray) -> _NearRecords:
    xn, xc, zn, zc, p = _gower_inputs(x, z, numeric, categorical)
    index = OriginalIndex(xn, xc)
    dcr = closest_distances(zn[rows_z], zc[rows_z], index) / p
    nn = closest_distances(xn[rows_x], xc[rows_x], index, skip=rows_x) / p
    p0 = float((nn == 0).mean())
    pos = nn[nn > 0]
    ref = float(np.quantile(pos, q)) if pos.size else 0.0
    near = float(((dcr == 0) | (dcr < ref)).mean()) if len(dcr) else 0.0
    return _NearRecords(dcr=dcr, nn=nn, p0=p0, reference=ref, baseline=p0 + (1.0 - p0) * q, near=near)


def _ranks(df: pd.DataFrame, numeric: list[str]) -> pd.DataFrame:
    """``df`` with each numeric column replaced by its mid-rank share within ``df`` itself (the
    empirical distribution function at each value; a missing value stays missing).

    A release whose every number is a strictly increasing function of the original (a rescaling
    a·v + b, a logarithm, a rank transform) sits far from x in values but on top of it in ranks:
    an intruder who holds x sorts both tables and reads the pairing off. Comparing the two tables
    in their own ranks makes such a release a set of copies.
    """
    out = df.copy()
    for c in numeric:
        out[c] = pd.to_numeric(df[c], errors="coerce").astype(float).rank(method="average", pct=True)
    return out


# ------------------------------------------------------------------ registrations
def context_attributes(ctx: EvaluationContext, measure: str) -> tuple[list[str], list[str]]:
    """The attributes a release shares with x, as the schema declares them: every attribute and
    the class (released too), not identifiers or the weight; numeric when the schema says so."""
    sch = ctx.schema
    cols = [c for c in sch.columns if c not in sch.identifiers and c in ctx.x.columns and c in ctx.z.columns]
    if not cols:
        raise MeasureNotApplicable(f"{measure}: the released table shares no attribute of the schema with x")
    numeric = [c for c in cols if c in sch.numeric]
    return numeric, [c for c in cols if c not in numeric]


@register_measure("verbatim_copies", kind="risk", needs_class=False, default=True, direction="lower",
                  value_range=(0.0, 1.0), threshold=0.05, scenario="originals", options=(),
                  meaning="The share of released records that are exact copies of an original record unique in x, "
                          "which an intruder holding x finds without any pairing; 0 is best.",
                  description="verbatim copies of originals unique in x (on every shared attribute), counted one "
                              "released record per original, without a record pairing")
def _verbatim_copies_measure(ctx: EvaluationContext) -> VerbatimCopiesResult:
    numeric, categorical = context_attributes(ctx, "verbatim_copies")
    return unique_verbatim_copies(ctx.x, ctx.z, numeric, categorical)


@register_measure("nearest_record_distance", kind="risk", needs_class=False, default=True, direction="lower",
                  value_range=(0.0, 1.0), threshold=0.05, scenario="originals", options=("quantile", "sample"),
                  meaning="The share of released records closer to an original than originals are to each other "
                          "(distance to the closest record), beyond what a fresh draw from x gives; 0 is best.",
                  description="distance to the closest original (DCR, Gower distance) against the originals' "
                              "nearest-neighbour distances: excess share of near records, without a record pairing")
def _nearest_record_distance_measure(ctx: EvaluationContext) -> NearestRecordResult:
    """Options ``nearest_record_distance.quantile`` (q, default 0.01) and ``.sample`` (records
    searched, default 2000)."""
    numeric, categorical = context_attributes(ctx, "nearest_record_distance")
    name = "nearest_record_distance"
    return nearest_record_distance(ctx.x, ctx.z, numeric, categorical,
                                   quantile=_opt(ctx, name, "quantile", DEFAULT_QUANTILE),
                                   sample=_opt(ctx, name, "sample", DEFAULT_SAMPLE),
                                   random_state=ctx.random_state)


__all__ = ["DEFAULT_QUANTILE", "DEFAULT_SAMPLE", "NearestRecordResult", "OriginalIndex", "VerbatimCopiesResult",
           "closest_distances", "compared_attributes", "context_attributes", "nearest_record_distance",
           "unique_verbatim_copies"]
