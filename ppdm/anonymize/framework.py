"""Framework (Islam & Brankovic 2011), the predecessor of Forest Framework (paper 004 §2).

Framework builds one decision tree from the original table and perturbs every
attribute so that each record still falls in the same leaf, which keeps the tree's
logic rules. For a leaf, its *influential* attributes are the ones its rule tests,
its *innocent* attributes all other non-class attributes.

* numeric influential attributes (LINFAPT): Gaussian noise wrapped around inside the
  leaf's sub-domain of the attribute;
* numeric innocent attributes (LINNAPT): the same noise wrapped inside the global
  domain (or, option, GADP within the leaf);
* categorical influential attributes: left alone — the leaf's test fixes them;
* categorical innocent attributes (DETECTIVE + CAPT): values are clustered by a tree
  that predicts the attribute from the others; with probability ``p_cat`` a value is
  changed to another value drawn from its cluster ("a value with high similarity");
* the class: shuffled among the records of each leaf, so every leaf keeps its class
  distribution.

Paper 004 describes Framework only in outline (§2). The full KBS 2011 text was not
available, so the choices the spec marks as assumed (trees_and_perturbation.md §4:
σ, ``p_cat``, the class mode, DETECTIVE's learner) are parameters with its defaults.

Released values stay possible (docs/value_domains.md): noise wraps around inside the
leaf's sub-domain or the attribute's range in x (inside any declared bounds), as in Forest
Framework; GADP draws for innocent attributes are clipped to the attribute's domain, as GADP
itself clips them, and whole-number attributes stay whole.

Missing values: the default C4.5 tree learns with fractional weights for unknown values
(as J48 does) and a record missing a tested value follows the branch with the most
training weight. A missing cell stays missing: noise goes to observed values only, a
DETECTIVE tree learns from the records whose value of its attribute is known and CAPT
changes known values only; GADP for innocent attributes uses the leaf's complete records.
The class must be known.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import clone

from ppdm import progress
from ppdm.anonymize._domain import DomainGuard, technique_name
from ppdm.anonymize._learners import paper_learner, resolve_trees
from ppdm.anonymize.base import Technique, check_fraction, check_whole
from ppdm.anonymize.forest_framework import integer_attributes, permute_within_groups, perturb_numeric
from ppdm.anonymize.gadp import gadp_values
from ppdm.anonymize.registry import register
from ppdm.anonymize.search_space import Choice, Integer, Real, SearchSpace
from ppdm.data.schema import Schema
from ppdm.errors import ParameterError
from ppdm.trees.intersections import AttributeDomain, ForestIntersector, tree_input
from ppdm.utils import check_choice

INNOCENT_METHODS = ("noise", "gadp")
CLASS_MODES = ("shuffle", "probabilistic", "none")


@dataclass
class FrameworkReport:
    """What one Framework transform did: leaves of the tree with records, and per
    attribute the mean |Δ| (numeric), the share of records changed and the share of
    records for which the attribute is influential (tested by their leaf)."""

    n_records: int
    n_leaves: int
    attributes: pd.DataFrame


def draw_from_rows(counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One index per row of ``counts`` drawn with probability proportional to the row
    (rows summing to zero give −1)."""
    total = counts.sum(axis=1)
    cum = np.cumsum(counts, axis=1)
    u = rng.random(len(counts)) * total
    idx = (cum <= u[:, None]).sum(axis=1)
    return np.where(total > 0, np.minimum(idx, counts.shape[1] - 1), -1)


@register("framework")
class Framework(Technique):
    """Framework (Islam & Brankovic 2011): noise on all attributes that keeps every record in its leaf of one tree.

    Parameters
    ----------
    tree:
        The decision tree whose rules are kept. ``None`` (default) grows a C4.5 tree
        (``ppdm.trees.C45Classifier`` with ``min_leaf`` and ``cf``). Also accepted: a fitted
        tree, an unfitted estimator or a factory ``f(X, y)``. Not settable from the command line.
    min_leaf, cf:
        C4.5 minimum records per leaf and pruning confidence for the default tree (and the
        default DETECTIVE trees).
    noise_mean, sigma_frac, sigma:
        Gaussian noise ``N(noise_mean, σ²)`` on numeric attributes, σ = ``sigma_frac`` × the
        width of the interval the value is wrapped in (spec default 1/6), or ``sigma`` if given.
    innocent_method:
        ``"noise"`` (default): innocent numeric attributes get the same noise wrapped in the
        global domain. ``"gadp"``: they are redrawn by GADP within each leaf, given the leaf's
        other numeric attributes (leaves too small for GADP get the noise).
    p_cat:
        Probability that a categorical innocent value is changed to another value of its
        DETECTIVE cluster (spec default 0.1); 0 leaves categorical attributes alone.
    detective_tree:
        Learner for the DETECTIVE clusters: an unfitted estimator (cloned for every
        categorical attribute) or a factory ``f(X, y)``; ``None`` uses C4.5 as above.
    class_mode:
        ``"shuffle"`` (default): permute the class within every leaf (leaf class counts kept).
        ``"probabilistic"``: with probability ``p_class`` redraw a record's class from its leaf's
        class distribution (counts kept in expectation). ``"none"``: class unchanged.
    p_class:
        Probability used by ``class_mode="probabilistic"``.
    integer_attrs:
        Numeric attributes kept whole; default the schema's whole-valued attributes.

    Missing cells stay missing (see the module docstring); the class must be known.
    """

    needs_class = True
    handles_missing = True
    missing_policy = "kept"
    #: noise width, categorical changes, how the class moves within a leaf, and the tree's leaf size
    search_space = SearchSpace(
        {"sigma_frac": Real(0.02, 0.5, log=True), "p_cat": Real(0.01, 0.5, log=True),
         "class_mode": Choice(("shuffle", "probabilistic", "none")), "p_class": Real(0.01, 0.5, log=True),
         "min_leaf": Integer(2, 100, log=True)},
        when={"p_class": {"class_mode": ("probabilistic",)}}, needs=("class",))
    #: wider noise on numeric attributes (the width as a share of the attribute's range)
    strength_param = ("sigma_frac", "increasing", 2.0)
    strength_acts_on = "numeric"
    #: categorical innocent values change with probability p_cat (1 at most)
    other_strength_params = (("p_cat", "increasing", 1.0, "categorical"),)

    def __init__(
        self,
        class_column: str | None = None,
        schema: Schema | dict | None = None,
        random_state: Any = None,
        tree: Any = None,
        min_leaf: int = 2,
        cf: float = 0.25,
        noise_mean: float = 0.0,
        sigma_frac: float = 1 / 6,
        sigma: float | None = None,
        innocent_method: str = "noise",
        p_cat: float = 0.1,
        detective_tree: Any = None,
        class_mode: str = "shuffle",
        p_class: float = 0.1,
        integer_attrs: list[str] | None = None,
    ) -> None:
        super().__init__(class_column, schema, random_state)
        # scikit-learn's contract: __init__ stores each parameter as given (get_params, clone), so it is written out
        self.tree = tree
        self.min_leaf = min_leaf
        self.cf = cf
        self.noise_mean = noise_mean
        self.sigma_frac = sigma_frac
        self.sigma = sigma
        self.innocent_method = innocent_method
        self.p_cat = p_cat
        self.detective_tree = detective_tree
        self.class_mode = class_mode
        self.p_class = p_class
        self.integer_attrs = integer_attrs

    def _validate_params(self) -> None:
        check_whole("min_leaf", self.min_leaf)
        check_fraction("cf", self.cf)
        check_fraction("noise_mean", self.noise_mean, low=-np.inf, high=np.inf)
        check_fraction("sigma_frac", self.sigma_frac, high=np.inf)
        if self.sigma is not None:
            check_fraction("sigma", self.sigma, high=np.inf)
        check_fraction("p_cat", self.p_cat)
        check_fraction("p_class", self.p_class)
        if self.innocent_method not in INNOCENT_METHODS:
            raise ParameterError(f"innocent_method must be one of {INNOCENT_METHODS}, got {self.innocent_method!r}")
        check_choice(self.class_mode, CLASS_MODES, "class_mode")
        det = self.detective_tree
        if det is not None and not hasattr(det, "fit") and not callable(det):
            raise ParameterError(
                f"detective_tree must be None, an unfitted tree estimator or a factory f(X, y), got {det!r}"
            )

    def _c45(self) -> Any:
        return paper_learner("C45Classifier", min_leaf=self.min_leaf, cf=self.cf)

    # -------------------------------------------------------------------- fit
    def _fit(self, df: pd.DataFrame, schema: Schema, rng: np.random.Generator) -> None:
        cls = schema.require_class()
        self.integer_ = integer_attributes(df, schema, self.integer_attrs)
        # the main tree, then one DETECTIVE tree per categorical attribute: the long part of fit
        n_detectives = len(schema.categorical) if self.p_cat > 0 else 0
        step = progress.steps(1 + n_detectives, "Framework: growing trees")
        trees = resolve_trees(self.tree, df[schema.attributes], df[cls], self._c45, "tree")
        step()
        if len(trees) != 1:
            raise ParameterError(f"Framework uses one tree; tree= gave {len(trees)} (use ForestFramework for a forest)")
        self.tree_ = trees[0]
        self.domain_ = AttributeDomain.from_frame(df, schema.numeric, schema.categorical)
        self.intersector_ = ForestIntersector([self.tree_], self.domain_)
        # DETECTIVE: one tree per categorical attribute, predicting it from all the others
        self.detectives_: dict[str, tuple[Any, np.ndarray, np.ndarray]] = {}
        if self.p_cat > 0:
            for a in schema.categorical:
                if len(self.domain_.categorical[a]) < 2:
                    step()
                    continue
                inputs = [c for c in schema.columns if c != a]
                # a DETECTIVE tree learns from the records whose value of a is known
                known = df[a].notna().to_numpy()
                dk = df if known.all() else df.loc[known]
                learner = self.detective_tree
                if learner is None:
                    det = self._c45().fit(dk[inputs], dk[a])
                elif hasattr(learner, "fit"):
                    det = clone(learner).fit(dk[inputs], dk[a])
                else:
                    det = learner(dk[inputs], dk[a])
                leaves = np.asarray(det.apply(tree_input(det, dk[inputs]))).astype(np.int64)
                ids, dense = np.unique(leaves, return_inverse=True)
                counts = np.zeros((len(ids), len(self.domain_.categorical[a])))
                np.add.at(counts, (dense, self.domain_.codes(a, dk[a])), 1.0)
                self.detectives_[a] = (det, ids, counts)
                step()
        step.close()

    # -------------------------------------------------------------- transform
    def _transform(self, df: pd.DataFrame, schema: Schema, rng: np.random.Generator) -> pd.DataFrame:
        inter = self.intersector_.find(df[schema.attributes])
        lab = inter.labels
        out = df.copy()
        rows: list[dict[str, Any]] = []
        tested = inter.tested[lab]
        attrs = inter.attributes
        for j, a in enumerate(inter.numeric):
            v = df[a].to_numpy(dtype=float)
            new, _ = perturb_numeric(
                v, inter.lower[lab, j], inter.upper[lab, j], inter.lower_closed[lab, j], inter.upper_closed[lab, j],
                rng, noise_mean=self.noise_mean, sigma_frac=self.sigma_frac, sigma=self.sigma,
                integer=a in self.integer_,
            )
            out[a] = new
        if self.innocent_method == "gadp":
            self._gadp_innocent(df, out, inter, rng)
        for j, a in enumerate(inter.numeric):
            d = np.abs(out[a].to_numpy(dtype=float) - df[a].to_numpy(dtype=float))
            d = d[~np.isnan(d)]
            rows.append(dict(attribute=a, kind="numeric", mean_abs_change=float(d.mean()) if d.size else 0.0,
                             share_changed=float((d > 0).mean()) if d.size else 0.0,
                             share_influential=float(tested[:, j].mean())))
        for a in inter.categorical:
            k = attrs.index(a)
            if a in self.detectives_:
                out[a] = self._capt(df, a, ~tested[:, k], rng)
            changed = (out[a].to_numpy(dtype=object) != df[a].to_numpy(dtype=object)) & df[a].notna().to_numpy()
            rows.append(dict(attribute=a, kind="categorical", mean_abs_change=float("nan"),
                             share_changed=float(changed.mean()), share_influential=float(tested[:, k].mean())))
        cls = schema.require_class()
        out[cls] = self._perturb_class(df[cls], lab, inter.n_intersections, rng)
        changed = out[cls].to_numpy(dtype=object) != df[cls].to_numpy(dtype=object)
        rows.append(dict(attribute=cls, kind="class", mean_abs_change=float("nan"),
                         share_changed=float(changed.mean()), share_influential=float("nan")))
        self.report_ = FrameworkReport(len(df), inter.n_intersections, pd.DataFrame(rows))
        return out

    def _gadp_innocent(self, df: pd.DataFrame, out: pd.DataFrame, inter: Any, rng: np.random.Generator) -> None:
        """Innocent numeric attributes redrawn by GADP within each leaf (spec §4 option).

        A draw outside the attribute's domain is clipped to it, as GADP itself does; the
        leaf's rule does not test an innocent attribute, so every value of the domain keeps
        the record in its leaf."""
        keep = DomainGuard(self.value_domains_, df, technique_name(self))
        num = inter.numeric
        lab = inter.labels
        order = np.argsort(lab, kind="stable")
        bounds = np.concatenate([[0], np.cumsum(inter.sizes)])
        for i in range(inter.n_intersections):
            rows = order[bounds[i]:bounds[i + 1]]
            innocent = [a for j, a in enumerate(num) if not inter.tested[i, j]]
            given = [a for j, a in enumerate(num) if inter.tested[i, j]]
            if innocent:
                # the leaf's records complete on its numeric attributes; the others keep their noise
                rows = rows[~np.isnan(df[innocent + given].to_numpy(dtype=float)[rows]).any(axis=1)]
            if not innocent or len(rows) < len(innocent) + len(given) + 2:
                continue
            X = df[innocent].to_numpy(dtype=float)[rows]
            S = df[given].to_numpy(dtype=float)[rows] if given else np.zeros((len(rows), 0))
            Y = gadp_values(X, S, rng, exact=False)
            for j, a in enumerate(innocent):
                col = out[a].to_numpy(dtype=float).copy()
                y = keep(a, Y[:, j], "clip", whole=a in self.integer_)
                col[rows] = np.rint(y) if a in self.integer_ else y
                out[a] = col
        keep.warn(stacklevel=4)

    def _capt(self, df: pd.DataFrame, a: str, innocent: np.ndarray, rng: np.random.Generator) -> pd.Series:
        """CAPT: with probability ``p_cat`` change an innocent value to another value
        drawn from the distribution of its DETECTIVE cluster (the current value excluded)."""
        det, ids, counts = self.detectives_[a]
        inputs = [c for c in self.schema_.columns if c != a]
        leaves = np.asarray(det.apply(tree_input(det, df[inputs]))).astype(np.int64)
        pos = np.clip(np.searchsorted(ids, leaves), 0, len(ids) - 1)
        known = ids[pos] == leaves
        codes = self.domain_.codes(a, df[a])
        pick = (rng.random(len(df)) < self.p_cat) & innocent & known & (codes >= 0)
        col = df[a].copy()
        sel = np.flatnonzero(pick)
        if sel.size == 0:
            return col
        c = counts[pos[sel]].copy()
        c[np.arange(sel.size), codes[sel]] = 0.0
        new = draw_from_rows(c, rng)
        ok = new >= 0
        if ok.any():
            levels = pd.Series(self.domain_.categorical[a], dtype=col.dtype).to_numpy()
            col.iloc[sel[ok]] = levels[new[ok]]
        return col

    def _perturb_class(self, y: pd.Series, lab: np.ndarray, n_leaves: int, rng: np.random.Generator) -> pd.Series:
        mode = check_choice(self.class_mode, CLASS_MODES, "class_mode")  # None reads as "none"
        if mode == "none":
            return y
        if mode == "shuffle":
            return y.take(permute_within_groups(lab, rng)).set_axis(y.index)
        levels, codes = np.unique(y.to_numpy(dtype=object).astype(str), return_inverse=True)
        first = pd.Series(y.to_numpy(), index=codes).groupby(level=0).first()
        counts = np.zeros((n_leaves, len(levels)))
        np.add.at(counts, (lab, codes), 1.0)
        pick = np.flatnonzero(rng.random(len(y)) < self.p_class)
        out = y.copy()
        if pick.size:
            new = draw_from_rows(counts[lab[pick]], rng)
            out.iloc[pick] = pd.Series(first.loc[new].to_numpy(), dtype=y.dtype).to_numpy()
        return out
