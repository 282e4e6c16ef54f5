"""Disclosure risk of a release: record linkage, interval disclosure, record-similarity
entropy, and the IL-DR trade-off score.

* :func:`ddr` — distance-based record linkage (paper 003 §3.3.2 "DDR"): the share of
  masked records whose nearest original record is their own.
* :func:`idr` — interval disclosure (paper 003 §3.3.2 "IDR"), sdcMicro's ``dRisk``.
* :func:`il_dr_score` — paper 003 §3.3.3: 0.25·(IL metrics + IL1s + DDR + IDR).
* :func:`sers` — Security Evaluation using Record Similarity (paper 004 §6, eq. 6–8):
  mean entropy of each original record's normalised similarity to every perturbed record.

DDR and SERS compare every record with every record of the other file; neither ever
holds an n × n matrix (a KD-tree, or Numba kernels with one length-n buffer per thread).

Missing cells (``docs/missing_values.md``): DDR links the records complete on the compared
attributes in both tables (among themselves); IDR judges each record on the attributes
observed in both tables, with each sd over the observed cells of z; SERS compares the
records complete on the numeric attributes (a missing categorical value equals only
another missing one).

DDR, IDR, IL–DR and SERS are registered measures, each beside its function
(``tests/test_library_exports.py``). DDR's exact searches, with the constants the tests tune
(``BLAS_ROWS``, ``TREE_LEAF_BUDGET``) beside the functions that read them, live in
:mod:`ppdm.metrics._risk_ddr_search`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd

from ppdm.errors import MeasureNotApplicable, ParameterError, SchemaError
from ppdm.metrics import _dask
from ppdm.metrics._common import (
    column_names,
    complete_rows,
    context_numeric,
    is_dask,
    mixed_attributes,
    numeric_pair,
    observed_sd,
    pick_options,
    sd_from_sums,
)
from ppdm.metrics._risk_ddr_search import (  # ddr's searches; the tests reach them through this module too
    TIE_ABS_TOL,
    TIE_REL_TOL,
    _brute,
    _link_blas,
    _link_kdtree,
    _link_tree,
    _standardize,
)
from ppdm.metrics.base import EvaluationContext, MeasureResult, register_measure
from ppdm.parallel import chunks_for
from ppdm.utils import RandomState, check_choice, check_random_state


# ----------------------------------------------------------------------------- DDR
@dataclass
class DDRResult(MeasureResult):
    """Distance-based record linkage: ``value`` = correctly linked share of masked records
    (a fraction in [0, 1]; ×100 when ``percent``). ``linked`` is the credit summed over
    records; ``tied`` counts the records whose own original shares the smallest distance
    with other originals."""

    linked: float = 0.0
    n: int = 0
    tied: int = 0
    standardize: str = "per_file"
    ties: str = "fractional"
    method: str = "kdtree"
    percent: bool = False
    incomplete: int = 0


def ddr(
    x: Any,
    z: Any,
    columns: list[str] | None = None,
    *,
    standardize: Literal["per_file", "original", "none"] = "per_file",
    ties: Literal["fractional", "first", "strict"] = "fractional",
    method: Literal["auto", "tree", "kdtree", "brute", "blas"] = "auto",
    percent: bool = False,
) -> DDRResult:
    """Distance-based record linkage (paper 003 §3.3.2; Domingo-Ferrer & Torra 2001).

    Each masked record z_i is linked to the original records at the smallest Euclidean
    distance, T_i = {j : d(z_i, x_j)² ≤ min_j d² · (1 + 1e-12) + 1e-15}; the link is correct
    when i ∈ T_i. ``ties`` says how a tie counts: ``"fractional"`` credits 1/|T_i| (the
    expected rate when the intruder picks among the tied records at random — rounding
    creates many exact ties), ``"first"`` credits iff i is the lowest index in T_i (a
    plain argmin), ``"strict"`` iff T_i = {i}.

    ``standardize``: ``"per_file"`` z-scores each file with its own column means and
    sds (sd 0 → only centred), ``"original"`` uses the original's for both, ``"none"``
    uses raw values. ``method``: ``"tree"`` (a Numba kd-tree asked only whether an original
    is nearer than the record's own: it stops at the first one found and otherwise explores
    the ball of radius d(z_i, x_i); records whose ball covers much of the tree go to the
    product search), ``"kdtree"`` (scipy cKDTree nearest-neighbour queries),
    ``"brute"`` (Numba, O(n²·m) time, O(n) memory), ``"blas"`` (tiled matrix
    products ‖x‖² − 2 z·x through BLAS, one tile per thread, O(n²·m) time, O(n) memory, with an exact
    re-check of every original within a rounding-error bound of the nearest), ``"auto"``:
    the product search above 16 attributes, the tree otherwise. Every method gives the
    same links and ties.

    Records with a missing cell (in x or in z) are left out, of the targets and of the
    candidates alike; ``n`` counts the records linked and ``incomplete`` those left out.

    A pair of Dask DataFrames partitioned alike is linked block by block
    (:func:`ppdm.metrics._dask.blocked_linkage`): the same links, exactly, with two
    partitions in memory per task (``method`` is then ``"blocked-kdtree"``).
    """
    standardize = check_choice(standardize, ("per_file", "original", "none"), "DDR standardize")
    if ties not in ("fractional", "first", "strict"):
        raise ParameterError(f"DDR ties must be 'fractional', 'first' or 'strict', got {ties!r}")
    if method not in ("auto", "tree", "kdtree", "brute", "blas"):
        raise ParameterError(f"DDR method must be 'auto', 'tree', 'kdtree', 'brute' or 'blas', got {method!r}")
    if is_dask(x) or is_dask(z):
        # the blocked search over partitions: the same links, for tables of any size
        names = column_names(x, columns, measure="DDR")
        linked, tied, n, left = _dask.blocked_linkage(x, z, names, standardize=standardize, rel_tol=TIE_REL_TOL,
                                                      abs_tol=TIE_ABS_TOL, ties=ties)
        frac = linked / n
        return DDRResult(value=100.0 * frac if percent else frac, linked=linked, n=n, tied=tied,
                         standardize=standardize, ties=ties, method="blocked-kdtree", percent=percent,
                         incomplete=left)
    names, X, Z = numeric_pair(x, z, columns, measure="DDR", allow_missing=True,
                               rescale="common" if standardize == "none" else "column")
    keep = complete_rows(X, Z)
    incomplete = int((~keep).sum())
    if incomplete:
        X, Z = X[keep], Z[keep]
        if len(X) < 2:
            raise SchemaError("DDR needs at least 2 records complete on the compared attributes in x and z")
    Xs, Zs = _standardize(X, Z, standardize)
    Xs, Zs = np.ascontiguousarray(Xs), np.ascontiguousarray(Zs)
    use = method
    if method == "auto":
        use = "tree" if X.shape[1] <= 16 else "blas"
    if use == "tree":
        own, count, first = _link_tree(Xs, Zs)
    elif use == "kdtree":
        own, count, first = _link_kdtree(Xs, Zs, ties == "first")
    elif use == "blas":
        own, count, first = _link_blas(Xs, Zs)
    else:
        own, count, first = _brute(Xs, Zs)
    n = len(Z)
    if ties == "fractional":
        credit = np.where(own, 1.0 / np.maximum(count, 1), 0.0)
    elif ties == "first":
        credit = (own & (first == np.arange(n))).astype(float)
    else:
        credit = (own & (count == 1)).astype(float)
    linked = float(credit.sum())
    frac = linked / n
    return DDRResult(value=100.0 * frac if percent else frac, linked=linked, n=n, tied=int((own & (count > 1)).sum()),
                     standardize=standardize, ties=ties, method=use, percent=percent, incomplete=incomplete)


# ----------------------------------------------------------------------------- IDR
@dataclass
class IDRResult(MeasureResult):
    """Interval disclosure: ``value`` = share of records at risk (sdcMicro ``dRisk``)."""

    at_risk: int = 0
    n: int = 0
    k: float = 0.05
    rule: str = "all"
    per_attribute: pd.DataFrame = field(default_factory=pd.DataFrame)


def _idr_counts(X: np.ndarray, Z: np.ndarray, sd: np.ndarray, k: float, rule: str) -> tuple[int, np.ndarray]:
    half = k * sd
    # inclusive bounds, compared exactly as x < z − k·s or x > z + k·s; a cell missing in x or
    # z is neither inside nor outside, and a record with no cell observed in both is not at risk
    both = ~np.isnan(X) & ~np.isnan(Z)
    with np.errstate(invalid="ignore"):
        outside = ((X < Z - half) | (X > Z + half)) & both
    n_out = outside.sum(axis=1)
    risky = (n_out == 0 if rule == "all" else n_out <= 1) & both.any(axis=1)
    return int(risky.sum()), (both & ~outside).sum(axis=0)


def idr(
    x: Any,
    z: Any,
    k: float = 0.05,
    columns: list[str] | None = None,
    *,
    rule: Literal["all", "legacy"] = "all",
) -> IDRResult:
    """Interval disclosure risk with sdcMicro ``dRisk`` semantics (paper 003 §3.3.2).

    Around each masked value the interval [z_ij − k·s_j, z_ij + k·s_j] is drawn, s_j the
    sample sd (ddof = 1) of the *masked* column j, bounds inclusive. ``rule="all"``
    (sdcMicro ≥ 5.6): a record is at risk when its original value lies inside the interval
    for every attribute. ``rule="legacy"`` (sdcMicro before the 2020 fix): at risk when at
    most one attribute lies outside. ``value`` is the share of records at risk.
    ``per_attribute`` gives the share of cells inside their interval, column by column.
    Accepts a pair of dask DataFrames too.
    """
    if not (isinstance(k, (int, float)) and math.isfinite(k) and k >= 0):
        raise ParameterError(f"IDR k must be a finite number ≥ 0, got {k!r}")
    if rule not in ("all", "legacy"):
        raise ParameterError(f"IDR rule must be 'all' or 'legacy', got {rule!r}")
    if is_dask(x) or is_dask(z):
        names = column_names(x, columns, measure="IDR")
        n, cnt, mz = _dask.observed_means(x, z, names, side="masked", measure="IDR")
        if n < 2:
            raise SchemaError("IDR needs at least 2 records")
        (ss,) = _dask.add(_dask.reduce_pairs(
            x, z, names, lambda X, Z: (np.where(np.isnan(Z), 0.0, (Z - mz) ** 2).sum(0),), measure="IDR"))
        sd = sd_from_sums(ss, cnt)
        risky, inside = _dask.add(_dask.reduce_pairs(
            x, z, names, lambda X, Z: _idr_counts(X, Z, sd, k, rule), measure="IDR"))
        n = int(n)
    else:
        names, X, Z = numeric_pair(x, z, columns, measure="IDR", allow_missing=True, rescale="column")
        n = X.shape[0]
        sd = observed_sd(Z) if np.isnan(Z).any() else Z.std(axis=0, ddof=1)
        risky, inside = _idr_counts(X, Z, sd, k, rule)
    per = pd.DataFrame({"attribute": names, "sd_masked": sd, "share_inside": np.asarray(inside) / n})
    return IDRResult(value=int(risky) / n, at_risk=int(risky), n=n, k=float(k), rule=rule, per_attribute=per)


# ------------------------------------------------------------------------- IL-DR
@dataclass
class ILDRResult(MeasureResult):
    """Paper 003 §3.3.3 IL-DR score: 0.25·(IL metrics + IL1s + DDR + IDR); lower is better."""

    il_metrics: float = 0.0
    il1s: float = 0.0
    ddr: float = 0.0
    idr: float = 0.0
    dr_scale: float = 1.0


def il_dr_combine(il_metrics_value: float, il1s_value: float, ddr_value: float, idr_value: float,
                  dr_scale: float = 1.0) -> float:
    """0.25·(ILmetrics + IL1s + dr_scale·DDR + dr_scale·IDR).

    With ``dr_scale=1`` (the paper's numbers: IL metrics in percent, IL1s as sdcMicro's
    sum, DDR and IDR as fractions) this reproduces paper 003's tables, e.g. Table 1's
    MDAV row k = 167: (103.26 + 542.51 + 0.00 + 0.05)/4 = 161.455 → printed 161.45.
    ``dr_scale=100`` puts the risks in percent too (not the paper's score).
    """
    return 0.25 * (il_metrics_value + il1s_value + dr_scale * ddr_value + dr_scale * idr_value)


def il_dr_score(
    x: Any,
    z: Any,
    columns: list[str] | None = None,
    *,
    dr_scale: float = 1.0,
    il1s_form: Literal["sum", "mean"] = "sum",
    idr_k: float = 0.05,
    idr_rule: Literal["all", "legacy"] = "all",
    ddr_standardize: Literal["per_file", "original", "none"] = "per_file",
    ddr_ties: Literal["fractional", "first", "strict"] = "fractional",
) -> ILDRResult:
    """IL-DR score of paper 003 §3.3.3 computed from x and z with the measures of this package."""
    from ppdm.metrics.info_loss import il1s, il_metrics

    ilm = il_metrics(x, z, columns).value
    il1 = il1s(x, z, columns, form=il1s_form).value
    dd = ddr(x, z, columns, standardize=ddr_standardize, ties=ddr_ties).value
    ii = idr(x, z, idr_k, columns, rule=idr_rule).value
    return ILDRResult(value=il_dr_combine(ilm, il1, dd, ii, dr_scale), il_metrics=ilm, il1s=il1, ddr=dd, idr=ii,
                      dr_scale=dr_scale)


# ---------------------------------------------------------------------------- SERS
@dataclass
class SERSResult(MeasureResult):
    """SERS (paper 004 §6): mean entropy (bits) of the original records' normalised
    similarity rows; higher means more uncertainty for an intruder, i.e. more security.

    ``ceiling`` is the largest value SERS can take, log2 n_P (1 when ``normalized``): an
    original record equally similar to every perturbed record. On real tables every
    release lands within a few thousandths of it, so read SERS against the ceiling, and
    not as a re-identification risk (see docs/measures.md).
    """

    n_original: int = 0
    n_perturbed: int = 0
    undefined: int = 0
    normalized: bool = False
    domain: str = "union"
    exact: bool = True
    sample_size: int = 0
    ci_low: float = float("nan")
    ci_high: float = float("nan")
    confidence: float = 0.95
    ceiling: float = float("nan")
    attributes: list[str] = field(default_factory=list)
    record_entropy: np.ndarray | None = None

    record_level: ClassVar[tuple[str, ...]] = ("record_entropy",)  # one value per record: never in a report


def sers_attributes(schema: Any, *, include_class: bool = True) -> tuple[list[str], list[str]]:
    """The numeric and categorical attributes SERS compares for a table with ``schema``.

    ppdm's one class policy for SERS: the class is compared as one more categorical
    attribute (``include_class=True``), as paper 004 treats it when perturbing (§3 step 5:
    "all categorical attributes (including the class attribute)") and as a released
    record carries it. Identifiers and the weight column are not attributes and never count.
    """
    numeric = list(schema.numeric)
    categorical = list(schema.categorical)
    cls = getattr(schema, "class_column", None)
    if include_class and cls is not None and cls not in categorical:
        categorical.append(cls)
    return numeric, categorical


def _sers_prepare(
    x: pd.DataFrame, z: pd.DataFrame, numeric: list[str], categorical: list[str], domain: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    on = np.empty((len(x), len(numeric)))
    pn = np.empty((len(numeric), len(z)))
    for j, c in enumerate(numeric):
        for label, df in (("original", x), ("perturbed", z)):
            s = df[c]
            if not pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
                raise SchemaError(f"SERS: numeric column {c!r} of the {label} table is not numeric (dtype {s.dtype})")
        a = x[c].to_numpy(dtype=float, na_value=np.nan)
        b = z[c].to_numpy(dtype=float, na_value=np.nan)
        for label, v in (("original", a), ("perturbed", b)):
            if not np.isfinite(v).all():
                raise SchemaError(f"SERS: numeric column {c!r} of the {label} table holds a missing or infinite value")
        lo, hi = (min(a.min(), b.min()), max(a.max(), b.max())) if domain == "union" else (a.min(), a.max())
        dom = hi - lo
        # a zero-width domain makes the attribute's term 0 for every pair
        scale = 1.0 / dom if dom > 0 else 0.0
        on[:, j] = a * scale
        pn[j, :] = b * scale
    codes = []
    for c in categorical:
        both = pd.concat([x[c], z[c]], ignore_index=True)
        codes.append(pd.factorize(both, use_na_sentinel=False)[0])  # NaN == NaN counts as equal
    # the narrowest integers that hold every code and the count of mismatches: the kernel
    # compares and counts in that width (more values per vector instruction)
    top = max([len(categorical), *(int(k.max()) for k in codes if len(k))])
    width = np.int8 if top < 2**7 else np.int16 if top < 2**15 else np.int32
    oc = np.empty((len(x), len(categorical)), dtype=width)
    pc = np.empty((len(categorical), len(z)), dtype=width)
    for j, k in enumerate(codes):
        oc[:, j] = k[: len(x)]
        pc[j, :] = k[len(x):]
    return on, oc, np.ascontiguousarray(pn), np.ascontiguousarray(pc)


def sers(
    x: pd.DataFrame,
    z: pd.DataFrame,
    numeric: list[str] | None = None,
    categorical: list[str] | None = None,
    *,
    domain: Literal["union", "original"] = "union",
    normalized: bool = False,
    sample: int | None = None,
    confidence: float = 0.95,
    random_state: RandomState = 0,
    return_records: bool = False,
) -> SERSResult:
    """Security Evaluation using Record Similarity (paper 004 §6, eq. 6–8).

    d_ik = (Σ_num |O_ij − P_kj| / dom_j + Σ_cat [O_ij ≠ P_kj]) / m, S_ik = 1 − d_ik,
    S̃_ik = S_ik / Σ_l S_il, H_i = −Σ_k S̃_ik log2 S̃_ik, SERS = mean_i H_i.

    ``numeric``/``categorical`` name the attributes (default: numeric dtypes of ``x`` are
    numeric, the rest categorical, so a class column in ``x`` counts as categorical; with a
    schema use :func:`sers_attributes`, ppdm's class policy). ``domain``: dom_j is the range over original ∪
    perturbed values (``"union"``, keeps 0 ≤ S ≤ 1) or over the original only
    (``"original"``; negative similarities are then clipped at 0). Records with Σ_k S_ik = 0
    have no entropy; they are left out and counted in ``undefined``. ``normalized`` divides
    by log2 n_P (so 1 = uniform over all perturbed records).

    Exact computation costs O(n_O·n_P·m) time and O(threads·n_P) memory. ``sample=s``
    computes H_i exactly for s original records drawn without replacement and returns
    their mean with a ``confidence`` interval (t-interval with finite-population correction).
    """
    if domain not in ("union", "original"):
        raise ParameterError(f"SERS domain must be 'union' or 'original', got {domain!r}")
    numeric, categorical = mixed_attributes(x, z, numeric, categorical, measure="SERS", z_label="perturbed",
                                            none_error=MeasureNotApplicable)
    cols = numeric + categorical
    if numeric:
        # records with a missing numeric cell are left out (a missing categorical value is a value)
        from ppdm.data.types import working_frame

        x, z = working_frame(x, numeric), working_frame(z, numeric)
        x = x.loc[x[numeric].notna().all(axis=1).to_numpy()] if x[numeric].isna().to_numpy().any() else x
        z = z.loc[z[numeric].notna().all(axis=1).to_numpy()] if z[numeric].isna().to_numpy().any() else z
    if len(x) == 0 or len(z) == 0:
        raise SchemaError("SERS needs at least one original and one perturbed record (complete on the numeric attributes)")
    if not 0 < confidence < 1:
        raise ParameterError(f"SERS confidence must be in (0, 1), got {confidence!r}")
    n_o, n_p = len(x), len(z)
    on, oc, pn, pc = _sers_prepare(x, z, numeric, categorical, domain)
    exact = sample is None or sample >= n_o
    if exact:
        rows = np.arange(n_o)
    else:
        if not isinstance(sample, (int, np.integer)) or sample < 2:
            raise ParameterError(f"SERS sample must be an integer ≥ 2, got {sample!r}")
        rows = np.sort(check_random_state(random_state).choice(n_o, size=int(sample), replace=False))
    from ppdm.metrics._kernels import sers_rows

    h = sers_rows(np.ascontiguousarray(on[rows]), np.ascontiguousarray(oc[rows]), pn, pc, 1.0 / len(cols),
                  domain == "original", chunks_for(len(rows)))
    if normalized:
        h = h / math.log2(n_p) if n_p > 1 else np.zeros_like(h)
    ok = np.isfinite(h)
    undefined = int((~ok).sum())
    if not ok.any():
        raise MeasureNotApplicable("SERS is undefined: every original record has zero similarity to every perturbed record")
    value = float(h[ok].mean())
    lo = hi = value
    if not exact:
        from scipy import stats

        s = int(ok.sum())
        sd = float(h[ok].std(ddof=1)) if s > 1 else 0.0
        fpc = math.sqrt(max(0.0, (n_o - len(rows)) / (n_o - 1)))
        half = float(stats.t.ppf(0.5 + confidence / 2, df=max(s - 1, 1))) * sd / math.sqrt(s) * fpc
        lo, hi = value - half, value + half
    ceiling = 1.0 if normalized else math.log2(n_p)
    return SERSResult(value=value, n_original=n_o, n_perturbed=n_p, undefined=undefined, normalized=normalized,
                      domain=domain, exact=exact, sample_size=len(rows), ci_low=lo, ci_high=hi,
                      confidence=confidence, ceiling=ceiling, attributes=cols,
                      record_entropy=h if return_records else None)


# --------------------------------------------------------------- CLI registrations
_DDR_OPTIONS = ("standardize", "ties", "method", "percent")
_IDR_OPTIONS = ("k", "rule")
_IL_DR_OPTIONS = ("dr_scale", "il1s_form", "idr_k", "idr_rule", "ddr_standardize", "ddr_ties")
_SERS_OPTIONS = ("domain", "normalized", "sample", "confidence", "include_class")


@register_measure("ddr", paired=True, kind="risk", needs_class=False, out_of_core=True, options=_DDR_OPTIONS,
                  description="distance-based record linkage: share of masked records linked to their own original",
                  direction="lower", value_range=(0.0, 1.0), threshold=0.05,
                  meaning="The share of released records an intruder who holds the original numeric values links "
                  "to the right person by nearest distance; 0 is best, 0.05 means one record in twenty.")
def _ddr_measure(ctx: EvaluationContext) -> DDRResult:
    cols = context_numeric(ctx, "ddr")
    return ddr(ctx.x, ctx.z, cols, **pick_options(ctx.options, "ddr", _DDR_OPTIONS))


@register_measure("idr", paired=True, kind="risk", needs_class=False, out_of_core=True, options=_IDR_OPTIONS,
                  description="interval disclosure (sdcMicro dRisk, k = 0.05): share of records at risk",
                  direction="lower", value_range=(0.0, 1.0), threshold=0.10,
                  meaning="The share of records whose every original numeric value lies within 5 % of a standard "
                  "deviation of its released value, so the release discloses it closely; 0 is best.")
def _idr_measure(ctx: EvaluationContext) -> IDRResult:
    cols = context_numeric(ctx, "idr")
    opts = pick_options(ctx.options, "idr", _IDR_OPTIONS)
    return idr(ctx.x, ctx.z, opts.pop("k", 0.05), cols, **opts)


@register_measure("il_dr_score", paired=True, kind="combined", needs_class=False, out_of_core=True,
                  options=_IL_DR_OPTIONS,
                  description="IL-DR score 0.25·(IL metrics + IL1s + DDR + IDR) of paper 003 §3.3.3; lower is better",
                  direction="lower", value_range=(0.0, None),
                  meaning="A trade-off score: lower means less information lost and less disclosure together; "
                  "its terms have different scales, so compare releases of one table only.")
def _il_dr_measure(ctx: EvaluationContext) -> ILDRResult:
    cols = context_numeric(ctx, "il_dr_score")
    opts = pick_options(ctx.options, "il_dr_score", _IL_DR_OPTIONS)
    return il_dr_score(ctx.x, ctx.z, cols, **opts)


@register_measure("sers", kind="risk", needs_class=False, options=_SERS_OPTIONS,
                  description="SERS record-similarity entropy in bits (paper 004 §6), beside its ceiling log2 n; "
                              "higher is more uncertain for an intruder, not a re-identification risk",
                  direction="higher", value_range=(0.0, None),
                  meaning="Higher means each original record resembles many released records alike, up to the "
                  "ceiling log2 n; it is an intruder's uncertainty, not a probability of re-identification.")
def _sers_measure(ctx: EvaluationContext) -> SERSResult:
    opts = pick_options(ctx.options, "sers", _SERS_OPTIONS)
    include_class = bool(opts.pop("include_class", True))
    numeric, categorical = sers_attributes(ctx.schema, include_class=include_class)
    categorical = [c for c in categorical if c != ctx.schema.class_column or c in ctx.z.columns]
    return sers(ctx.x, ctx.z, numeric, categorical, random_state=ctx.random_state, **opts)
