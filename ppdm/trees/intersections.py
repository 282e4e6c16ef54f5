"""Leaf intersections of a decision forest (paper 004 §3, steps 2–3).

The leaves of one tree split a table into disjoint segments; the leaves of
several trees overlap. Forest Framework intersects them: a record's
*intersection* is the tuple of its leaves, one per tree, and the region of an
intersection is the conjunction of those leaves' logic rules. For every
non-class attribute that region gives a *sub-domain* (the paper's word):

* numeric attribute — an interval whose ends come from the leaves' ``<=``/``<``/
  ``>``/``>=`` conditions, e.g. ``A > 5`` and ``A <= 8`` give ``A ∈ (5, 8]``
  (the paper's ``A[R: 6, 8]`` for whole numbers). Where no leaf tests the attribute
  the sub-domain is its *global domain*, ``[min, max]`` over the training table,
  closed at both ends; rule bounds are always intersected with it.
* categorical attribute — the set of allowed values, from ``=``, ``!=``, ``in`` and
  ``not in`` conditions against the attribute's domain (the values seen in training).

Intersections are built from non-class attributes only (paper 004 §3 step 2). Only
intersections that some record falls in are materialized: each record's leaf ids
are combined into one key and grouped with ``np.unique``, so a record falls in
exactly one intersection (§3 step 3).

Any fitted tree satisfying :class:`ppdm.trees.base.TreeModel` works: ``apply``
gives leaf ids and ``leaf_rules`` each leaf's root-to-leaf conditions. Note on
scikit-learn-based trees (:class:`~ppdm.trees.CARTClassifier`): scikit-learn
compares float32-converted inputs with its thresholds, so a value within float32
rounding of a threshold may be routed differently from what the rule says.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ppdm.errors import PPDMError
from ppdm.rules.core import Condition, Rule
from ppdm.trees.base import TreeModel


# --------------------------------------------------------------------- domain
@dataclass
class AttributeDomain:
    """Global domain of every non-class attribute.

    Attributes
    ----------
    numeric:
        Numeric attribute → ``(min, max)`` over the training table (a closed interval).
    categorical:
        Categorical attribute → its values seen in training, in a fixed order.
    """

    numeric: dict[str, tuple[float, float]] = field(default_factory=dict)
    categorical: dict[str, list[Any]] = field(default_factory=dict)

    @classmethod
    def from_frame(cls, df: pd.DataFrame, numeric: Sequence[str], categorical: Sequence[str]) -> AttributeDomain:
        num: dict[str, tuple[float, float]] = {}
        for c in numeric:
            v = df[c].to_numpy(dtype=float, na_value=np.nan)
            v = v[np.isfinite(v)]
            if v.size == 0:
                raise PPDMError(f"numeric attribute {c!r} has no finite value to take its domain from")
            num[c] = (float(v.min()), float(v.max()))
        cat = {c: _levels(df[c]) for c in categorical}
        return cls(num, cat)

    @property
    def attributes(self) -> list[str]:
        return [*self.numeric, *self.categorical]

    def codes(self, column: str, values: pd.Series | np.ndarray) -> np.ndarray:
        """Index of each value in the attribute's domain (−1 for a value not in it)."""
        idx = pd.Index(self.categorical[column], dtype=object)
        vals = values.to_numpy(dtype=object) if isinstance(values, pd.Series) else np.asarray(values, dtype=object)
        return idx.get_indexer(vals)


def _levels(s: pd.Series) -> list[Any]:
    vals = [v.item() if isinstance(v, np.generic) else v for v in pd.unique(s.dropna())]
    return sorted(vals, key=lambda v: (type(v).__name__, v))


# ----------------------------------------------------------------- per tree
@dataclass
class SubDomains:
    """Sub-domains of the attributes, one row per leaf or intersection: numeric intervals
    (``lower``, ``upper``, whether each end is closed; columns in the domain's numeric order),
    the allowed values of each categorical attribute (boolean rows over its domain), and
    whether a rule tests each attribute (columns in the domain's attribute order)."""

    lower: np.ndarray
    upper: np.ndarray
    lower_closed: np.ndarray
    upper_closed: np.ndarray
    allowed: dict[str, np.ndarray]
    tested: np.ndarray

    @staticmethod
    def whole(domain: AttributeDomain, n: int) -> dict[str, Any]:
        """The fields of ``n`` rows that each hold the whole of ``domain``, nothing tested yet."""
        num = list(domain.numeric)
        return {
            "lower": np.tile(np.array([domain.numeric[a][0] for a in num], dtype=float), (n, 1)),
            "upper": np.tile(np.array([domain.numeric[a][1] for a in num], dtype=float), (n, 1)),
            "lower_closed": np.ones((n, len(num)), dtype=bool),
            "upper_closed": np.ones((n, len(num)), dtype=bool),
            "allowed": {a: np.ones((n, len(lv)), dtype=bool) for a, lv in domain.categorical.items()},
            "tested": np.zeros((n, len(domain.attributes)), dtype=bool),
        }


@dataclass
class LeafBounds(SubDomains):
    """Sub-domains of every leaf of one tree, one row per leaf (ids in ``leaf_ids``)."""

    leaf_ids: np.ndarray

    def dense(self, leaf_ids: np.ndarray) -> np.ndarray:
        """Row of each leaf id in this table; an id the rules do not know raises."""
        pos = np.searchsorted(self.leaf_ids, leaf_ids)
        pos = np.clip(pos, 0, len(self.leaf_ids) - 1)
        bad = self.leaf_ids[pos] != leaf_ids
        if bad.any():
            raise PPDMError(
                f"tree.apply returned leaf id {int(leaf_ids[bad.argmax()])}, which is not among the ids of leaf_rules()"
            )
        return pos


def leaf_bounds(tree: TreeModel, domain: AttributeDomain) -> LeafBounds:
    """Translate each leaf's rule into per-attribute sub-domains within ``domain``."""
    rules: dict[int, Rule] = tree.leaf_rules()
    if not rules:
        raise PPDMError("a tree has no leaves (leaf_rules() is empty)")
    ids = np.array(sorted(rules), dtype=np.int64)
    num = list(domain.numeric)
    cat = list(domain.categorical)
    attrs = num + cat
    pos = {a: i for i, a in enumerate(attrs)}
    out = LeafBounds(leaf_ids=ids, **SubDomains.whole(domain, len(ids)))
    lower, upper, lower_closed, upper_closed = out.lower, out.upper, out.lower_closed, out.upper_closed
    allowed, tested = out.allowed, out.tested
    level_series = {a: pd.Series(domain.categorical[a], dtype=object) for a in cat}
    for row, lid in enumerate(ids):
        for cond in rules[int(lid)].conditions:
            a = cond.attribute
            if a not in pos:
                raise PPDMError(
                    f"a leaf rule tests {a!r}, which is not a non-class attribute of the table "
                    f"(attributes: {', '.join(attrs)})"
                )
            tested[row, pos[a]] = True
            if a in domain.categorical:
                allowed[a][row] &= cond.mask(level_series[a])
                continue
            j = num.index(a)
            lo, lc, hi, hc = _numeric_bounds(cond)
            if lo > lower[row, j] or (lo == lower[row, j] and not lc):
                lower[row, j], lower_closed[row, j] = lo, lc
            if hi < upper[row, j] or (hi == upper[row, j] and not hc):
                upper[row, j], upper_closed[row, j] = hi, hc
    return out


def _numeric_bounds(cond: Condition) -> tuple[float, bool, float, bool]:
    """(lower, lower closed, upper, upper closed) that ``cond`` puts on a numeric attribute."""
    v = cond.number if cond.op in ("<=", "<", ">", ">=") else cond.value  # a date on its time axis
    if cond.op == "<=":
        return -np.inf, True, float(v), True
    if cond.op == "<":
        return -np.inf, True, float(v), False
    if cond.op == ">":
        return float(v), False, np.inf, True
    if cond.op == ">=":
        return float(v), True, np.inf, True
    if cond.op == "=" and isinstance(v, (int, float)):
        return float(v), True, float(v), True
    raise PPDMError(f"condition {cond} on numeric attribute {cond.attribute!r} is not an interval")


# -------------------------------------------------------------- intersections
@dataclass
class Intersections(SubDomains):
    """The observed intersections of a forest's leaves on one table.

    Attributes
    ----------
    labels:
        Intersection index of every record (rows of the arrays below).
    keys:
        Leaf id in every tree of each intersection, shape (n_intersections, n_trees).
    sizes:
        Number of records in each intersection.
    lower, upper, lower_closed, upper_closed:
        Numeric sub-domains, shape (n_intersections, n_numeric), columns in ``numeric`` order.
    allowed:
        Categorical attribute → boolean matrix (n_intersections, n_domain_values) of allowed values.
    tested:
        Whether any leaf of the intersection tests the attribute, shape
        (n_intersections, n_attributes), columns in ``attributes`` order.
    """

    domain: AttributeDomain
    labels: np.ndarray
    keys: np.ndarray
    sizes: np.ndarray

    @property
    def numeric(self) -> list[str]:
        return list(self.domain.numeric)

    @property
    def categorical(self) -> list[str]:
        return list(self.domain.categorical)

    @property
    def attributes(self) -> list[str]:
        return self.domain.attributes

    @property
    def n_intersections(self) -> int:
        return len(self.sizes)

    @property
    def n_singletons(self) -> int:
        return int((self.sizes == 1).sum())

    def sub_domain(self, i: int) -> dict[str, Any]:
        """Readable sub-domains of intersection ``i``: a numeric attribute maps to
        ``(lower, upper, lower_closed, upper_closed)``, a categorical one to its allowed values."""
        out: dict[str, Any] = {}
        for j, a in enumerate(self.numeric):
            out[a] = (float(self.lower[i, j]), float(self.upper[i, j]),
                      bool(self.lower_closed[i, j]), bool(self.upper_closed[i, j]))
        for a in self.categorical:
            lv = self.domain.categorical[a]
            out[a] = [lv[k] for k in np.flatnonzero(self.allowed[a][i])]
        return out

    def contains(self, df: pd.DataFrame, labels: np.ndarray | None = None) -> np.ndarray:
        """Whether every record of ``df`` lies inside the sub-domains of its intersection
        (``labels``, default the ones found) on every attribute."""
        lab = self.labels if labels is None else np.asarray(labels)
        ok = np.ones(len(df), dtype=bool)
        for j, a in enumerate(self.numeric):
            v = df[a].to_numpy(dtype=float)
            lo, hi = self.lower[lab, j], self.upper[lab, j]
            ok &= np.where(self.lower_closed[lab, j], v >= lo, v > lo)
            ok &= np.where(self.upper_closed[lab, j], v <= hi, v < hi)
        for a in self.categorical:
            code = self.domain.codes(a, df[a])
            known = code >= 0
            ok &= known
            ok[known] &= self.allowed[a][lab[known], code[known]]
        return ok

    def summary(self) -> pd.DataFrame:
        """One row per intersection: its leaf ids, size and the attributes its leaves test."""
        df = pd.DataFrame(self.keys, columns=[f"leaf_tree_{t}" for t in range(self.keys.shape[1])])
        df["size"] = self.sizes
        attrs = np.array(self.attributes, dtype=object)
        df["tested"] = [", ".join(attrs[row]) for row in self.tested]
        return df


def forest_trees(forest: Any) -> list[TreeModel]:
    """The trees of ``forest``: an object with ``estimators_``, a list of trees, or one tree."""
    if hasattr(forest, "estimators_"):
        trees = list(forest.estimators_)
    elif isinstance(forest, (list, tuple)):
        trees = list(forest)
    else:
        trees = [forest]
    if not trees:
        raise PPDMError("the forest has no trees")
    for t in trees:
        if not (callable(getattr(t, "apply", None)) and callable(getattr(t, "leaf_rules", None))):
            raise PPDMError(
                f"{type(t).__name__} is not a fitted tree with apply() and leaf_rules() (ppdm.trees.base.TreeModel)"
            )
    return trees


def tree_input(tree: Any, df: pd.DataFrame) -> pd.DataFrame:
    """The columns of ``df`` a tree was fitted on (all of them when it does not say)."""
    names = getattr(tree, "feature_names_in_", None)
    if names is None:
        return df
    cols = [str(c) for c in names]
    absent = [c for c in cols if c not in df.columns]
    if absent:
        raise PPDMError(f"a tree was fitted on column(s) {absent} that the table does not have")
    return df[cols]


class ForestIntersector:
    """A forest prepared for intersecting: leaf sub-domains are computed once,
    then :meth:`find` routes any table to its observed intersections."""

    def __init__(self, trees: Sequence[TreeModel], domain: AttributeDomain) -> None:
        self.trees = list(trees)
        self.domain = domain
        self.bounds = [leaf_bounds(t, domain) for t in self.trees]

    def leaf_ids(self, df: pd.DataFrame) -> np.ndarray:
        """Leaf id of every record in every tree, shape (n, n_trees).

        Trees sharing one fitted encoding (a SysFor forest's C4.5 trees) route the table
        encoded once, through ``apply_encoded``; other trees through ``apply``."""
        encoded: dict[int, np.ndarray] = {}
        cols = []
        for t in self.trees:
            enc = getattr(t, "encoding_", None)
            if enc is not None and callable(getattr(t, "apply_encoded", None)) \
                    and callable(getattr(enc, "transform", None)):
                if id(enc) not in encoded:
                    # column-major: a node reads one attribute of many records
                    encoded[id(enc)] = enc.transform(tree_input(t, df), order="F")
                ids = t.apply_encoded(encoded[id(enc)])  # type: ignore[attr-defined]  # checked above: not in TreeModel
            else:
                ids = t.apply(tree_input(t, df))
            cols.append(np.asarray(ids).astype(np.int64).ravel())
        for c in cols:
            if c.shape[0] != len(df):
                raise PPDMError("tree.apply returned a different number of leaf ids than records")
        return np.stack(cols, axis=1) if cols else np.zeros((len(df), 0), dtype=np.int64)

    def find(self, df: pd.DataFrame) -> Intersections:
        """Intersections observed in ``df`` with their sub-domains."""
        ids = self.leaf_ids(df)
        dense = np.stack([b.dense(ids[:, t]) for t, b in enumerate(self.bounds)], axis=1)
        uniq, labels = _unique_rows(dense, [len(b.leaf_ids) for b in self.bounds])
        n_int = len(uniq)
        sizes = np.bincount(labels, minlength=n_int)
        whole = SubDomains.whole(self.domain, n_int)
        lower, upper, lower_closed, upper_closed = whole["lower"], whole["upper"], whole["lower_closed"], whole["upper_closed"]
        allowed, tested = whole["allowed"], whole["tested"]
        keys = np.empty_like(uniq)
        for t, b in enumerate(self.bounds):
            rows = uniq[:, t]
            keys[:, t] = b.leaf_ids[rows]
            lower, lower_closed = _tighten(lower, lower_closed, b.lower[rows], b.lower_closed[rows], upper_end=False)
            upper, upper_closed = _tighten(upper, upper_closed, b.upper[rows], b.upper_closed[rows], upper_end=True)
            for a in allowed:
                allowed[a] &= b.allowed[a][rows]
            tested |= b.tested[rows]
        return Intersections(domain=self.domain, labels=labels, keys=keys, sizes=sizes, lower=lower, upper=upper,
                             lower_closed=lower_closed, upper_closed=upper_closed, allowed=allowed, tested=tested)


def _tighten(
    a: np.ndarray, a_closed: np.ndarray, b: np.ndarray, b_closed: np.ndarray, *, upper_end: bool
) -> tuple[np.ndarray, np.ndarray]:
    """The tighter of two interval ends; on a tie an open end wins (it excludes the point)."""
    better_b = b < a if upper_end else b > a
    tie = a == b
    val = np.where(better_b, b, a)
    closed = np.where(tie, a_closed & b_closed, np.where(better_b, b_closed, a_closed))
    return val, closed


def _unique_rows(dense: np.ndarray, radix: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Distinct rows of the leaf-index matrix and each record's row number.

    The per-tree leaf indices are packed into one int64 (mixed radix) when they fit,
    so one 1-d ``np.unique`` groups the records; otherwise rows are compared whole.
    """
    n, t = dense.shape
    if t == 0:
        return np.zeros((1 if n else 0, 0), dtype=np.int64), np.zeros(n, dtype=np.int64)
    cells = float(np.prod([float(r) for r in radix]))
    if cells < 2.0**62:
        mult = np.cumprod([1, *radix[:0:-1]])[::-1].astype(np.int64)
        key = dense.astype(np.int64) @ mult
        if cells <= 8 * n + (1 << 16):
            # few possible keys: a table of the keys present, numbered in ascending order
            # (what np.unique gives, without sorting)
            present = np.zeros(int(cells), dtype=bool)
            present[key] = True
            ukey = np.flatnonzero(present)
            labels = (np.cumsum(present) - 1)[key]
        else:
            ukey, labels = np.unique(key, return_inverse=True)
        uniq = np.empty((len(ukey), t), dtype=np.int64)
        rem = ukey.copy()
        for j in range(t):
            uniq[:, j], rem = np.divmod(rem, mult[j])
        return uniq, labels.ravel()
    uniq, labels = np.unique(dense, axis=0, return_inverse=True)
    return uniq.astype(np.int64), labels.ravel()


def find_intersections(
    forest: Any,
    df: pd.DataFrame,
    numeric: Sequence[str] | None = None,
    categorical: Sequence[str] | None = None,
    domain: AttributeDomain | None = None,
) -> Intersections:
    """Observed leaf intersections of ``forest`` on ``df`` (paper 004 §3 steps 2–3).

    Parameters
    ----------
    forest:
        Fitted trees (:class:`~ppdm.trees.base.TreeModel`): a list, one tree, or a forest
        with ``estimators_``.
    df:
        The records; must hold every non-class attribute the trees test.
    numeric, categorical:
        The non-class attributes whose sub-domains are wanted. By default every numeric
        dtype column is numeric and every other column categorical (pass them explicitly
        to leave the class column out).
    domain:
        Global domains; by default the min/max and values of ``df`` itself.
    """
    if domain is None:
        if numeric is None and categorical is None:
            numeric = [c for c in df.columns
                       if pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c])]
            categorical = [c for c in df.columns if c not in set(numeric)]
        domain = AttributeDomain.from_frame(df, list(numeric or []), list(categorical or []))
    return ForestIntersector(forest_trees(forest), domain).find(df)
