"""The tables read from a comparison's results: measures per fold, correlations, best releases.

The measure frame (fold values, their mean and spread), the correlation matrix of the
measures over the releases with its p-values, and the releases that do best on each measure
(:func:`best_releases`). Split from :mod:`ppdm.experiments.compare`, which re-exports every
name here.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ppdm.errors import ParameterError, PPDMError
from ppdm.experiments.evaluation import (
    load_all_measures,
)
from ppdm.metrics.base import MEASURES

if TYPE_CHECKING:  # only in annotations: compare imports this module
    from ppdm.experiments.compare import ComparisonResult
from ppdm.experiments._compare_specs import (
    ORIGINAL,
)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# ------------------------------------------------------------------ correlations
def _measure_frame(
    result: ComparisonResult, *, difference: bool, include_original: bool, techniques: Sequence[str] | None
) -> pd.DataFrame:
    d = result.data
    wide = d.pivot_table(index=["label", "fold", "repeat"], columns="measure", values="value",
                         aggfunc="first", dropna=False, sort=False)
    wide = wide[[m for m in result.measures if m in wide.columns]]
    if difference:
        base = d[d["technique"] == ORIGINAL]
        if base.empty:
            raise PPDMError("difference=True needs the 'original' baseline rows in the result")
        ref = base.pivot_table(index="fold", columns="measure", values="value", aggfunc="mean")
        folds = wide.index.get_level_values("fold")
        wide = wide - ref.reindex(index=folds, columns=wide.columns).to_numpy()
    labels = wide.index.get_level_values("label")
    keep = np.ones(len(wide), dtype=bool)
    if not include_original:
        orig = {t["label"] for t in result.meta["techniques"] if t["technique"] == ORIGINAL}
        keep &= ~labels.isin(list(orig))
    if techniques is not None:
        tech_of = {t["label"]: t["technique"] for t in result.meta["techniques"]}
        chosen = set(techniques)
        keep &= np.array([lab in chosen or tech_of.get(lab) in chosen for lab in labels], dtype=bool)
    return wide.loc[keep]


def _correlation_frame(
    result: ComparisonResult,
    method: str,
    *,
    difference: bool,
    include_original: bool,
    techniques: Sequence[str] | None,
) -> pd.DataFrame:
    """The float measure frame that :func:`correlation_matrix` and :func:`correlation_pvalues`
    correlate, after checking ``method``."""
    if method not in ("pearson", "spearman"):
        raise ParameterError(f"method must be 'pearson' or 'spearman', got {method!r}")
    return _measure_frame(result, difference=difference, include_original=include_original,
                          techniques=techniques).astype(float)


def correlation_matrix(
    result: ComparisonResult,
    method: str = "pearson",
    *,
    difference: bool = False,
    include_original: bool = False,
    techniques: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Correlation of every pair of measures across technique × fold × repeat rows.

    Paper 000 §8.3 (Table 6) reports Pearson's r between its measures; ``method`` may
    be ``"pearson"`` or ``"spearman"``. ``difference=True`` first subtracts, fold by
    fold, the value each measure gives the original table (paper 000 §7.3: results are
    taken as the change from zero noise). The baseline rows themselves are left out
    unless ``include_original``; ``techniques`` keeps only the named techniques or
    labels (the paper correlates each noise type separately). Pairs are computed on
    rows where both measures are defined; a constant measure has no correlation (NaN).
    """
    wide = _correlation_frame(result, method, difference=difference, include_original=include_original,
                              techniques=techniques)
    out = wide.corr(method=method)  # type: ignore[arg-type]  # pandas-stubs wants a literal; pandas refuses an unknown name itself
    out.index.name = None
    out.columns.name = None
    return out


def correlation_pvalues(
    result: ComparisonResult,
    method: str = "pearson",
    *,
    difference: bool = False,
    include_original: bool = False,
    techniques: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Two-sided p values of :func:`correlation_matrix` (the bracketed numbers of paper 000 Table 6)."""
    from scipy import stats

    wide = _correlation_frame(result, method, difference=difference, include_original=include_original,
                              techniques=techniques)
    cols = list(wide.columns)
    out = pd.DataFrame(np.nan, index=cols, columns=cols)
    test = stats.pearsonr if method == "pearson" else stats.spearmanr
    for i, a in enumerate(cols):
        for b in cols[i:]:
            ok = wide[a].notna() & wide[b].notna()
            va, vb = wide.loc[ok, a].to_numpy(), wide.loc[ok, b].to_numpy()
            if len(va) < 3 or np.ptp(va) == 0 or np.ptp(vb) == 0:
                continue
            p = 0.0 if a == b else float(test(va, vb)[1])
            out.loc[a, b] = out.loc[b, a] = p
    return out


# ------------------------------------------------------------------- best release
def measure_info(result: ComparisonResult, name: str) -> dict[str, Any]:
    """Kind, direction, range, threshold, description and meaning of measure ``name``: as
    stored in the result, completed from the registry for results saved by older versions."""
    stored = dict((result.meta.get("measure_info") or {}).get(name) or {})
    spec = MEASURES.get(name) or load_all_measures().get(name)
    known = spec.info() if spec is not None else {}
    out: dict[str, Any] = {"kind": None, "direction": None, "range": [None, None], "threshold": None,
                           "description": "", "meaning": ""}
    for key in out:
        if stored.get(key) not in (None, "", [None, None]):
            out[key] = stored[key]
        elif known.get(key) not in (None, "", [None, None]):
            out[key] = known[key]
    return out


@dataclass(frozen=True)
class BestMark:
    """The verdict on one measure of a comparison: the best release, or why none is marked."""

    measure: str
    label: str | None
    note: str
    candidates: tuple[str, ...] = ()


def _fold_means(result: ComparisonResult, label: str, measure: str) -> pd.Series:
    d = result.data
    sub = d[(d["label"] == label) & (d["measure"] == measure)]
    return sub.groupby("fold")["value"].mean()


def best_releases(result: ComparisonResult, confidence: float = 0.95) -> dict[str, BestMark]:
    """Per measure, the release that is best beyond the noise, if any.

    Only releases that change the data compete (the ``original`` baseline and any
    technique whose release equalled x in every run, e.g. noise of level 0, are left out:
    they protect nobody). The candidate with the best mean (in the measure's direction) is
    marked only when, against every other candidate, the paired difference of the fold
    means (techniques of a fold share their training table and seeds) has a Student-t
    confidence interval that excludes 0. Folds share training records, so the interval is
    the optimistic cross-validation one: a guide, not a test.
    """
    from scipy import stats

    if not 0 < confidence < 1:
        raise ParameterError(f"confidence must lie in (0, 1), got {confidence!r}")
    techniques = result.meta["techniques"]
    cands = [t["label"] for t in techniques if t["technique"] != ORIGINAL and t.get("changes_data", True)]
    out: dict[str, BestMark] = {}
    for m in result.measures:
        direction = measure_info(result, m)["direction"]
        if direction not in ("higher", "lower"):
            out[m] = BestMark(m, None, "no direction: neither higher nor lower is better", tuple(cands))
            continue
        means = {lab: _fold_means(result, lab, m) for lab in cands}
        finite = {lab: s[np.isfinite(s)] for lab, s in means.items()}
        finite = {lab: s for lab, s in finite.items() if len(s)}
        if len(finite) < 2:
            out[m] = BestMark(m, None, "fewer than two releases that change the data have a value", tuple(finite))
            continue
        overall = {lab: float(s.mean()) for lab, s in finite.items()}
        best = (max if direction == "higher" else min)(overall, key=lambda lab: overall[lab])
        decisive = True
        for other in finite:
            if other == best:
                continue
            both = pd.concat([finite[best], finite[other]], axis=1, join="inner").to_numpy(dtype=float)
            diff = both[:, 0] - both[:, 1]
            n = len(diff)
            if n < 2:
                decisive = False
                break
            sd = float(diff.std(ddof=1))
            half = float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * sd / math.sqrt(n)
            lo, hi = float(diff.mean()) - half, float(diff.mean()) + half
            if lo <= 0 <= hi:
                decisive = False
                break
        if decisive:
            out[m] = BestMark(m, best, f"better than every other release beyond the {confidence:.0%} interval",
                              tuple(finite))
        else:
            out[m] = BestMark(m, None, f"no release is better than all others beyond the {confidence:.0%} "
                              "interval of the paired fold differences", tuple(finite))
    return out
