"""Forest Framework (Fletcher & Islam 2015; paper 004 §3).

Forest Framework perturbs every attribute of a table while keeping every record
in the same leaf of every tree of a decision forest built from the original data,
so all the forest's logic rules hold on the release:

1. build a decision forest (SysFor with the paper's settings, §7);
2. intersect the leaves of the trees (non-class attributes only);
3. find the intersection each record falls in;
4. add Gaussian noise ``ε ~ N(μ, σ²)`` to every numeric attribute, wrapped around
   inside the intersection's sub-domain of that attribute;
5. within every intersection, randomly re-assign the values of each categorical
   attribute and of the class, so the count ``N_i`` of every value is unchanged.

The paper gives no σ; ``sigma_frac`` (σ = sigma_frac × sub-domain width, default 1/6
so ±3σ spans the sub-domain) follows the spec (trees_and_perturbation.md §3).

Released values stay possible (docs/value_domains.md): the paper's wrap-around is kept.
A numeric value never leaves its sub-domain, whose ends are the leaves' thresholds or the
ends of the attribute's range in x (the spec's global domain). That range lies inside any
declared bounds (x is refused when it does not), so the release respects them; declared
bounds wider than x's range do not widen the sub-domains (no more noise, and the leaves'
rules are the same). Whole-number attributes wrap on the whole numbers (``integer_attrs``,
by default the schema's ``integer``).

Missing values: the default SysFor forest grows its trees with C4.5's fractional
weights for unknown values (J48's treatment); a record missing a tested value follows the
branch with the most training weight, so it still falls in exactly one intersection. A
missing cell stays missing: numeric noise is added to observed values only, and the
re-assignment of step 5 permutes the observed values of an attribute among the records
of the intersection that have one (counts of every value kept). The class must be known.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ppdm.anonymize._learners import paper_learner, resolve_trees
from ppdm.anonymize._noise import add_wrapped_noise
from ppdm.anonymize.base import Technique, check_column_names, check_fraction, check_whole
from ppdm.anonymize.registry import register
from ppdm.anonymize.search_space import Choice, Integer, Real, SearchSpace
from ppdm.data.schema import Schema
from ppdm.errors import ParameterError
from ppdm.trees.intersections import AttributeDomain, ForestIntersector, Intersections

DOMAIN_SOURCES = ("rules", "records")


@dataclass
class ForestFrameworkReport:
    """What one Forest Framework transform did.

    Attributes
    ----------
    n_records, n_trees:
        Records perturbed and trees in the forest.
    n_intersections:
        Observed leaf intersections (paper 004 §3 step 2).
    n_singletons:
        Intersections holding one record: their categorical values and class cannot
        change and are released as they were.
    records_in_singletons:
        Same number as ``n_singletons`` (kept for readability of reports).
    attributes:
        One row per attribute: ``kind`` (numeric/categorical/class), ``mean_abs_change``
        (mean |Δ| of numeric values), ``share_changed`` (fraction of records whose value
        changed), ``mean_sigma`` (mean σ used), ``share_tested`` (fraction of records
        whose intersection's leaves test the attribute).
    """

    n_records: int
    n_trees: int
    n_intersections: int
    n_singletons: int
    records_in_singletons: int
    attributes: pd.DataFrame


def permute_within_groups(labels: np.ndarray, rng: np.random.Generator, swap_prob: float = 1.0) -> np.ndarray:
    """Source row of every record after a random permutation inside each group.

    Paper 004 §3 step 5: the value of every record of an intersection is set to null,
    then ``N_i`` randomly chosen records receive value ``X_i`` — a uniformly random
    permutation of the values within the group. With ``swap_prob < 1`` only a random
    subset of records (each with that probability) takes part. Returns ``src`` such
    that ``new = old[src]``; counts within every group are unchanged.
    """
    from ppdm.anonymize._forest_kernels import group_orders

    n = len(labels)
    src = np.arange(n)
    part = np.flatnonzero(rng.random(n) < swap_prob) if swap_prob < 1.0 else src
    if part.size < 2:
        return src
    grp = np.asarray(labels)[part]
    if grp.dtype.kind not in "iu" or grp.min() < 0 or grp.max() > 2 * n:
        grp = np.unique(grp, return_inverse=True)[1].ravel()  # the same groups, labelled 0..g−1
    # slots grouped by label in record order; values grouped by label in random order
    slots, values = group_orders(grp.astype(np.int64), rng.random(part.size), int(grp.max()) + 1)
    src[part[slots]] = part[values]
    return src


def permute_observed(labels: np.ndarray, observed: np.ndarray, rng: np.random.Generator,
                     swap_prob: float = 1.0) -> np.ndarray:
    """:func:`permute_within_groups` among the records with an ``observed`` value only: a
    missing cell keeps its place, and no value moves onto it."""
    if observed.all():
        return permute_within_groups(labels, rng, swap_prob)
    idx = np.flatnonzero(observed)
    src = np.arange(len(labels))
    src[idx] = idx[permute_within_groups(labels[idx], rng, swap_prob)]
    return src


def integer_attributes(df: pd.DataFrame, schema: Schema, integer_attrs: list[str] | None) -> set[str]:
    """Numeric attributes perturbed on the whole numbers: the given list (default: the
    schema's whole-valued attributes) plus every integer-dtype column, which must stay whole."""
    given = check_column_names("integer_attrs", integer_attrs)
    chosen = set(schema.integer if given is None else given)
    unknown = sorted(chosen - set(schema.numeric))
    if unknown:
        raise ParameterError(f"integer_attrs names {unknown}, which are not numeric attributes")
    return chosen | {c for c in schema.numeric if pd.api.types.is_integer_dtype(df[c])}


def perturb_numeric(
    v: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    lo_closed: np.ndarray,
    hi_closed: np.ndarray,
    rng: np.random.Generator,
    *,
    noise_mean: float,
    sigma_frac: float,
    sigma: float | None,
    integer: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """``v + ε``, ``ε ~ N(noise_mean, σ²)``, wrapped into each record's sub-domain.

    σ is ``sigma`` when given, else ``sigma_frac`` × the sub-domain's width. Returns the
    perturbed values and the σ of every record.
    """
    width = np.where(np.isfinite(hi - lo), hi - lo, 0.0)
    sd = np.full(v.shape, float(sigma)) if sigma is not None else sigma_frac * width
    eps = noise_mean + sd * rng.standard_normal(v.shape[0])
    return add_wrapped_noise(v, eps, lo, hi, lo_closed, hi_closed, integer=integer), sd


def group_min_max(v: np.ndarray, labels: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Smallest and largest observed value of ``v`` in every (non-empty) group (+inf and
    −inf for a group without one)."""
    order = np.argsort(labels, kind="stable")
    sizes = np.bincount(labels, minlength=n_groups)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    sv = v[order]
    gone = np.isnan(sv)
    return (np.minimum.reduceat(np.where(gone, np.inf, sv), starts),
            np.maximum.reduceat(np.where(gone, -np.inf, sv), starts))


@register("forest-framework")
class ForestFramework(Technique):
    """Forest Framework: noise that keeps every record in its leaf of every tree of a forest (paper 004 §3).

    Parameters
    ----------
    forest:
        The decision forest whose rules are preserved. ``None`` (default) builds a SysFor
        forest on the table with the settings below (paper 004 §7). Also accepted: a fitted
        forest (with ``estimators_``), a fitted tree, a list of fitted trees, an unfitted
        estimator (cloned and fitted on the non-class attributes and the class), or a factory
        ``f(X, y)``. Trees must satisfy :class:`ppdm.trees.base.TreeModel`. Not settable
        from the command line.
    n_trees, min_leaf, goodness, separation, cf, min_gain_ratio:
        SysFor settings used when ``forest`` is None. Paper 004 §7: 3 trees, goodness 0.50,
        separation 0.30, confidence factor 0.25, minimum gain ratio 0.01; minimum leaf size per
        dataset (Wine 10, WBC 45, Credit 30, CMC 60, Abalone 180), default 10.
    noise_mean:
        μ of the Gaussian noise (paper: ``ε ~ N(μ, σ²)``); default 0.
    sigma_frac:
        σ as a fraction of the sub-domain's width (spec default 1/6: ±3σ spans the sub-domain).
    sigma:
        An absolute σ for every numeric attribute; overrides ``sigma_frac`` when given.
    swap_prob:
        Probability that a record takes part in the within-intersection permutation of a
        categorical attribute (spec default 1.0: the paper's full re-assignment).
    permute_class:
        Re-assign the class within intersections too (paper 004 §3 step 5); default True.
    domain_source:
        ``"rules"`` (default): a sub-domain is what the leaves' rules allow within the global
        domain; ``"records"``: the ``[min, max]`` of the intersection's records (less noise,
        but the release then reveals each intersection's observed range).
    integer_attrs:
        Numeric attributes perturbed on the whole numbers; default the schema's whole-valued
        attributes. Integer-dtype columns are always kept whole.

    Missing cells stay missing (see the module docstring); the class must be known.

    After ``transform`` the attribute ``report_`` (:class:`ForestFrameworkReport`) tells how
    many intersections there were and how much noise each attribute received.
    """

    needs_class = True
    handles_missing = True
    missing_policy = "kept"
    #: noise width, share of records whose categorical values are re-assigned, class re-assignment,
    #: and the forest (trees and their leaf size)
    search_space = SearchSpace(
        {"sigma_frac": Real(0.02, 0.5, log=True), "swap_prob": Real(0.1, 1.0), "permute_class": Choice((True, False)),
         "n_trees": Integer(1, 5), "min_leaf": Integer(5, 200, log=True)}, needs=("class",))
    #: wider noise on numeric attributes (the width as a share of the attribute's range)
    strength_param = ("sigma_frac", "increasing", 2.0)
    strength_acts_on = "numeric"
    #: the share of records whose categorical values are re-assigned within their intersection (1 by default)
    other_strength_params = (("swap_prob", "increasing", 1.0, "categorical"),)

    def __init__(
        self,
        class_column: str | None = None,
        schema: Schema | dict | None = None,
        random_state: Any = None,
        forest: Any = None,
        n_trees: int = 3,
        min_leaf: int = 10,
        goodness: float = 0.5,
        separation: float = 0.3,
        cf: float = 0.25,
        min_gain_ratio: float = 0.01,
        noise_mean: float = 0.0,
        sigma_frac: float = 1 / 6,
        sigma: float | None = None,
        swap_prob: float = 1.0,
        permute_class: bool = True,
        domain_source: str = "rules",
        integer_attrs: list[str] | None = None,
    ) -> None:
        super().__init__(class_column, schema, random_state)
        # scikit-learn's contract: __init__ stores each parameter as given (get_params, clone), so it is written out
        self.forest = forest
        self.n_trees = n_trees
        self.min_leaf = min_leaf
        self.goodness = goodness
        self.separation = separation
        self.cf = cf
        self.min_gain_ratio = min_gain_ratio
        self.noise_mean = noise_mean
        self.sigma_frac = sigma_frac
        self.sigma = sigma
        self.swap_prob = swap_prob
        self.permute_class = permute_class
        self.domain_source = domain_source
        self.integer_attrs = integer_attrs

    # ----------------------------------------------------------------- checks
    def _validate_params(self) -> None:
        check_whole("n_trees", self.n_trees)
        check_whole("min_leaf", self.min_leaf)
        check_fraction("goodness", self.goodness, high=np.inf)
        check_fraction("separation", self.separation, high=np.inf)
        check_fraction("cf", self.cf)
        check_fraction("min_gain_ratio", self.min_gain_ratio, high=np.inf)
        check_fraction("noise_mean", self.noise_mean, low=-np.inf, high=np.inf)
        check_fraction("sigma_frac", self.sigma_frac, high=np.inf)
        if self.sigma is not None:
            check_fraction("sigma", self.sigma, high=np.inf)
        check_fraction("swap_prob", self.swap_prob)
        if self.domain_source not in DOMAIN_SOURCES:
            raise ParameterError(f"domain_source must be one of {DOMAIN_SOURCES}, got {self.domain_source!r}")
        if not isinstance(self.permute_class, (bool, np.bool_)):
            raise ParameterError(f"permute_class must be True or False, got {self.permute_class!r}")

    # -------------------------------------------------------------------- fit
    def _default_forest(self, missing: bool = False) -> Any:
        extra = {"missing": "keep"} if missing else {}
        return paper_learner(
            "SysForClassifier",
            n_trees=self.n_trees, min_leaf=self.min_leaf, goodness=self.goodness,
            separation=self.separation, cf=self.cf, min_gain_ratio=self.min_gain_ratio, **extra,
        )

    def _fit(self, df: pd.DataFrame, schema: Schema, rng: np.random.Generator) -> None:
        cls = schema.require_class()
        X, y = df[schema.attributes], df[cls]
        self.integer_ = integer_attributes(df, schema, self.integer_attrs)
        # unknown values train the trees as in C4.5 (fractional weights) instead of being dropped
        gaps = bool(X.isna().to_numpy().any())
        self.trees_ = resolve_trees(self.forest, X, y, lambda: self._default_forest(gaps), "forest")
        self.domain_ = AttributeDomain.from_frame(df, schema.numeric, schema.categorical)
        self.intersector_ = ForestIntersector(self.trees_, self.domain_)

    # -------------------------------------------------------------- transform
    def intersections(self, X: pd.DataFrame) -> Intersections:
        """The observed intersections of the fitted forest on ``X`` (steps 2–3)."""
        return self.intersector_.find(X[self.schema_.attributes])

    def _transform(self, df: pd.DataFrame, schema: Schema, rng: np.random.Generator) -> pd.DataFrame:
        # trees see the non-class attributes only, as in fit
        inter = self.intersector_.find(df[schema.attributes])
        lab = inter.labels
        out = df.copy()
        rows: list[dict[str, Any]] = []
        tested_share = inter.tested[lab].mean(axis=0) if len(df) else np.zeros(len(inter.attributes))
        for j, a in enumerate(inter.numeric):
            v = df[a].to_numpy(dtype=float)
            lo, hi = inter.lower[lab, j], inter.upper[lab, j]
            lc, hc = inter.lower_closed[lab, j], inter.upper_closed[lab, j]
            if self.domain_source == "records":
                gmin, gmax = group_min_max(v, lab, inter.n_intersections)
                lo, hi = np.maximum(lo, gmin[lab]), np.minimum(hi, gmax[lab])
                lc, hc = np.ones_like(lc), np.ones_like(hc)
            new, sd = perturb_numeric(
                v, lo, hi, lc, hc, rng, noise_mean=self.noise_mean, sigma_frac=self.sigma_frac,
                sigma=self.sigma, integer=a in self.integer_,
            )
            out[a] = new
            d = np.abs(new - v)
            obs = ~np.isnan(v)
            rows.append(dict(attribute=a, kind="numeric", mean_abs_change=float(d[obs].mean()) if obs.any() else 0.0,
                             share_changed=float((d[obs] > 0).mean()) if obs.any() else 0.0,
                             mean_sigma=float(sd.mean()), share_tested=float(tested_share[j])))
        perm_cols = [(a, "categorical") for a in schema.categorical]
        if self.permute_class:
            perm_cols.append((schema.require_class(), "class"))
        for a, kind in perm_cols:
            col = df[a]
            # value codes (−1: missing) tell which records received another value
            codes = pd.factorize(col, use_na_sentinel=True)[0]
            observed = codes >= 0
            src = permute_observed(lab, observed, rng, float(self.swap_prob))
            out[a] = col.take(src).set_axis(df.index)
            changed = (codes != codes[src]) & observed
            share = float(tested_share[inter.attributes.index(a)]) if kind == "categorical" else float("nan")
            rows.append(dict(attribute=a, kind=kind, mean_abs_change=float("nan"),
                             share_changed=float(changed.mean()), mean_sigma=float("nan"), share_tested=share))
        self.report_ = ForestFrameworkReport(
            n_records=len(df),
            n_trees=len(self.trees_),
            n_intersections=inter.n_intersections,
            n_singletons=inter.n_singletons,
            records_in_singletons=inter.n_singletons,
            attributes=pd.DataFrame(rows, columns=["attribute", "kind", "mean_abs_change", "share_changed",
                                                   "mean_sigma", "share_tested"]),
        )
        return out
