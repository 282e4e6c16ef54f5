"""Utility of a release judged by the decision trees it yields (paper 004 §4–§5).

* :func:`eduds` — "Evaluation of Data Utility using Domain Similarity" (EDUDS, paper 004
  §4, eq. 1–3): a forest is built on the original x and one on the perturbed z; every
  original record falls in one intersection of leaves of each forest, and the
  sub-domains of those two intersections are compared attribute by attribute.
* :func:`edusc` — "Evaluation of Data Utility using Splitting Criteria" (EDUSC, paper 004
  §5, eq. 4–5): every node of each tree built on x is imposed on z ("forced tree"), and
  the gain ratios of every attribute in the matching original and perturbed segments
  are compared.

Trees are anything satisfying :class:`ppdm.trees.base.TreeModel` (``apply``,
``leaf_rules``, ``classes_``). Pass fitted trees (a single tree, a list of trees, or a
forest object exposing them as ``trees_`` or ``estimators_``), or a factory
``make_tree()`` returning an unfitted scikit-learn-style classifier, fitted here on x
and on z with the same settings. Without either, SysFor (``ppdm.trees.SysForClassifier``)
is used when it is installed, as in the paper.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from ppdm.data.schema import Schema
from ppdm.errors import MeasureNotApplicable, ParameterError, SchemaError
from ppdm.metrics._common import pick_options
from ppdm.metrics._structure_kernels import segment_scores
from ppdm.metrics.base import EvaluationContext, MeasureResult, register_measure
from ppdm.rules.core import NUMERIC_OPS, Condition, compare_numeric
from ppdm.trees.base import TreeModel

TreeFactory = Callable[[], Any]


# ------------------------------------------------------------------------ trees
def default_tree_factory() -> TreeFactory:
    """The paper's learner: SysFor with the settings of paper 004 (3 trees, minimum gain
    ratio 0.01, confidence 0.25, goodness 0.5, separation 0.3, minimum leaf 10 — the
    settings Forest Framework builds its forest with), resolved when first needed."""
    try:
        from ppdm.trees import SysForClassifier
    except ImportError:
        raise ParameterError(
            "no tree learner is available: pass fitted trees or make_tree= (a callable returning an "
            "unfitted classifier that satisfies ppdm.trees.base.TreeModel)"
        ) from None
    return SysForClassifier.paper_004


def trees_of(model: Any) -> list[TreeModel]:
    """The individual trees of a tree, a list of trees, or a forest that keeps its fitted
    trees in ``trees_``, ``estimators_`` or ``forest_``."""
    if isinstance(model, (list, tuple)):
        out: list[TreeModel] = []
        for m in model:
            out.extend(trees_of(m))
        return out
    for attr in ("trees_", "estimators_", "forest_"):
        inner = getattr(model, attr, None)
        if isinstance(inner, (list, tuple)) and inner and all(isinstance(t, TreeModel) for t in inner):
            return list(inner)
    if isinstance(model, TreeModel):
        return [model]
    raise ParameterError(
        f"{type(model).__name__} is not a tree model: it needs apply(X), leaf_rules() and classes_ "
        "(ppdm.trees.base.TreeModel), or trees_/estimators_/forest_ holding such trees"
    )


def _fit(make_tree: TreeFactory, data: pd.DataFrame, attrs: list[str], cls: str) -> list[TreeModel]:
    model = make_tree()
    model.fit(data[attrs], data[cls])
    return trees_of(model)


def _resolve_schema(x: pd.DataFrame, schema: Schema | None, class_column: str | None, measure: str) -> Schema:
    if not isinstance(x, pd.DataFrame):
        raise SchemaError(f"{measure} works on DataFrames (original and perturbed)")
    sch = schema if schema is not None else Schema.infer(x, class_column)
    if class_column is not None and class_column != sch.class_column:
        sch = sch.with_class(class_column)
    if sch.class_column is None:
        raise SchemaError(f"{measure} builds decision trees and needs a class column; name it with class_column=... (CLI: --class)")
    return sch


def _check_tables(x: pd.DataFrame, z: pd.DataFrame, sch: Schema, measure: str) -> None:
    for label, df in (("original", x), ("perturbed", z)):
        if not isinstance(df, pd.DataFrame):
            raise SchemaError(f"{measure}: the {label} table must be a DataFrame")
        absent = [c for c in sch.columns if c not in df.columns]
        if absent:
            raise SchemaError(f"{measure}: column(s) {', '.join(map(repr, absent))} not in the {label} table")
        for c in sch.numeric:
            v = df[c].to_numpy(dtype=float, na_value=np.nan)
            if not np.isfinite(v).all():
                raise SchemaError(f"{measure}: numeric column {c!r} of the {label} table holds a missing or infinite value")
        if len(df) == 0:
            raise SchemaError(f"{measure}: the {label} table has no rows")


# ------------------------------------------------------------------------ EDUDS
@dataclass
class EDUDSResult(MeasureResult):
    """EDUDS sub-domain similarity SDS_{O,P} (paper 004 eq. 3), in [0, 1]; 1 = same regions.

    ``per_attribute``: for each attribute, the records on which it counted and their mean
    similarity 1 − Diff. ``per_tree``: the same measure for the t-th tree of each forest
    alone (when both forests have as many trees). ``skipped``: original records on which no
    attribute counted (tested by neither forest).
    """

    n_records: int = 0
    skipped: int = 0
    n_trees_original: int = 0
    n_trees_perturbed: int = 0
    domain: str = "original"
    per_attribute: pd.DataFrame = field(default_factory=pd.DataFrame)
    per_tree: pd.DataFrame = field(default_factory=pd.DataFrame)


def _leaf_positions(tree: TreeModel, data: pd.DataFrame, ids: Any = None) -> tuple[np.ndarray, list[Any]]:
    """Each record's leaf as a position in the tree's leaf list, and that list of rules
    (``ids``: the tree's ``apply`` of ``data`` when already known)."""
    ids = np.asarray(tree.apply(data) if ids is None else ids).ravel()
    rules = tree.leaf_rules()
    keys = list(rules)
    try:
        karr = np.asarray(keys, dtype=np.int64)
        ids_i = ids.astype(np.int64)
    except (TypeError, ValueError):
        karr = None
    if karr is not None and len(karr) and np.array_equal(ids_i, ids):
        sorter = np.argsort(karr)
        at = np.searchsorted(karr, ids_i, sorter=sorter)
        at = np.minimum(at, len(karr) - 1)
        idx = sorter[at]
        bad = karr[idx] != ids_i
        if bad.any():
            raise ParameterError(f"a tree's apply() returned leaf id {ids[bad.argmax()]!r}, "
                                 "which leaf_rules() does not list")
        return idx, [rules[k] for k in keys]
    pos = {k: i for i, k in enumerate(keys)}
    try:
        idx = np.fromiter((pos[i.item() if isinstance(i, np.generic) else i] for i in ids), dtype=np.int64,
                          count=len(ids))
    except KeyError as e:
        raise ParameterError(f"a tree's apply() returned leaf id {e.args[0]!r}, which leaf_rules() does not list") \
            from None
    return idx, [rules[k] for k in keys]


def _leaf_boxes(rules: list[Any], attrs: list[str], numeric: set[str], lo: np.ndarray, hi: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Lower and upper bounds and tested flags of every leaf's sub-domain (leaves × attributes)."""
    a = len(attrs)
    col = {c: j for j, c in enumerate(attrs)}
    L = np.broadcast_to(lo, (len(rules), a)).copy()
    H = np.broadcast_to(hi, (len(rules), a)).copy()
    T = np.zeros((len(rules), a), dtype=bool)
    for r, rule in enumerate(rules):
        for cond in rule.conditions:
            j = col.get(cond.attribute)
            if j is None:
                continue  # a test on something that is not an attribute here (never the class)
            T[r, j] = True
            if cond.attribute in numeric and cond.op in NUMERIC_OPS:
                if cond.op in ("<=", "<"):
                    H[r, j] = min(H[r, j], cond.number)
                else:
                    L[r, j] = max(L[r, j], cond.number)
    return L, H, T


def _forest_leaves(trees: list[TreeModel], data: pd.DataFrame, attrs: list[str], numeric: set[str],
                   lo: np.ndarray, hi: np.ndarray) -> list[tuple[np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]]]:
    """Per tree: each record's leaf position and the leaves' sub-domains.

    Trees sharing one fitted encoding (a SysFor forest's C4.5 trees) route the table
    encoded once, through ``apply_encoded``; other trees through ``apply``."""
    encoded: dict[int, np.ndarray] = {}
    out = []
    for tree in trees:
        enc = getattr(tree, "encoding_", None)
        if enc is not None and callable(getattr(tree, "apply_encoded", None)) and callable(getattr(enc, "transform",
                                                                                                  None)):
            if id(enc) not in encoded:
                encoded[id(enc)] = enc.transform(data)
            ids = tree.apply_encoded(encoded[id(enc)])  # type: ignore[attr-defined]  # checked above: not in TreeModel
        else:
            ids = tree.apply(data)
        idx, rules = _leaf_positions(tree, data, ids)
        out.append((idx, _leaf_boxes(rules, attrs, numeric, lo, hi)))
    return out


def _regions(
    leaves: list[tuple[np.ndarray, tuple[np.ndarray, np.ndarray, np.ndarray]]], n: int,
    lo: np.ndarray, hi: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per record: lower and upper bounds and tested flags of the intersection of its leaves."""
    a = len(lo)
    low = np.broadcast_to(lo, (n, a)).copy()
    up = np.broadcast_to(hi, (n, a)).copy()
    tested = np.zeros((n, a), dtype=bool)
    for idx, (L, H, T) in leaves:
        np.maximum(low, L[idx], out=low)
        np.minimum(up, H[idx], out=up)
        tested |= T[idx]
    # thresholds outside the domain (possible for a forest of the other table) are clipped
    np.clip(low, lo, hi, out=low)
    np.clip(up, lo, hi, out=up)
    return low, up, tested


def _sds(
    regions_o: tuple[np.ndarray, np.ndarray, np.ndarray],
    regions_p: tuple[np.ndarray, np.ndarray, np.ndarray],
    is_num: np.ndarray,
    dom: np.ndarray,
    domain: str,
    count_untested: bool,
    empty_records: str,
) -> tuple[float, int, np.ndarray, np.ndarray]:
    lo_o, hi_o, t_o = regions_o
    lo_p, hi_p, t_p = regions_p
    with np.errstate(invalid="ignore", divide="ignore"):
        width = (hi_o - lo_o) if domain == "segment" else np.broadcast_to(dom, lo_o.shape)
        num_diff = (np.abs(lo_o - lo_p) + np.abs(hi_o - hi_p)) / width
    num_diff = np.where(width > 0, num_diff, 0.0)
    num_diff = np.minimum(num_diff, 1.0)
    cat_diff = (t_o != t_p).astype(float)
    diff = np.where(is_num[None, :], num_diff, cat_diff)
    counted = (t_o | t_p) if not count_untested else np.ones_like(t_o)
    if count_untested:
        # an attribute neither forest tests keeps its whole domain in both: Diff = 0
        diff = np.where(t_o | t_p, diff, 0.0)
    k = counted.sum(axis=1)
    sim_sum = np.where(counted, 1.0 - diff, 0.0).sum(axis=1)
    has = k > 0
    per_record = np.full(len(k), np.nan)
    per_record[has] = sim_sum[has] / k[has]
    skipped = int((~has).sum())
    if empty_records == "one":
        per_record[~has] = 1.0
    ok = np.isfinite(per_record)
    value = float(per_record[ok].mean()) if ok.any() else float("nan")
    sim_attr = np.where(counted, 1.0 - diff, np.nan)
    return value, skipped, sim_attr, counted


def eduds(
    x: pd.DataFrame,
    z: pd.DataFrame,
    *,
    class_column: str | None = None,
    schema: Schema | None = None,
    trees_x: Any = None,
    trees_z: Any = None,
    make_tree: TreeFactory | None = None,
    domain: Literal["original", "union", "segment"] | Mapping[str, tuple[float, float]] = "original",
    count_untested: bool = False,
    empty_records: Literal["skip", "one"] = "skip",
) -> EDUDSResult:
    """EDUDS (paper 004 §4): SDS_{O,P} = (1/n) Σ_r (1/k) Σ_a (1 − Diff_a^r).

    Every original record r is routed through the forest of x and the forest of z; in each
    it lies in the intersection of one leaf per tree. For a numeric attribute a, that
    intersection's sub-domain is [LDom, HDom], starting from the attribute's domain and
    narrowed by every test on a along the record's paths; Diff_a^r =
    (|LDom_O − LDom_P| + |HDom_O − HDom_P|) / domain_a (eq. 1). A categorical attribute has
    Diff 1 when exactly one intersection tests it and 0 when both do (eq. 2). Attributes
    tested by neither are discounted, and k counts the rest.

    Parameters (defaults: the paper's literal reading):
    domain:
        ``"original"`` (default, §4: "the total domain size of the attribute"): domain_a =
        range of a over the original values, and every sub-domain starts from it (a
        threshold of the perturbed forest outside it is clipped to it); ``"union"``: the
        range over original ∪ perturbed values; ``"segment"``: the width of the record's
        original sub-domain (Table 1's wording); or a mapping attribute → (low, high).
        Diff is capped at 1 in every case.
    count_untested:
        ``False`` (paper): attributes tested by neither forest are left out of k;
        ``True``: they count with Diff 0.
    empty_records:
        records with no counted attribute are left out of the mean (``"skip"``, counted in
        ``skipped``) or count as similarity 1 (``"one"``).
    """
    if empty_records not in ("skip", "one"):
        raise ParameterError(f"EDUDS empty_records must be 'skip' or 'one', got {empty_records!r}")
    if not isinstance(domain, Mapping) and domain not in ("original", "union", "segment"):
        raise ParameterError(f"EDUDS domain must be 'original', 'union', 'segment' or a mapping, got {domain!r}")
    sch = _resolve_schema(x, schema, class_column, "EDUDS")
    _check_tables(x, z, sch, "EDUDS")
    attrs = sch.attributes
    if not attrs:
        raise MeasureNotApplicable("EDUDS needs at least one non-class attribute")
    numeric = set(sch.numeric)
    if trees_x is None or trees_z is None:
        factory = make_tree or default_tree_factory()
        tx = trees_of(trees_x) if trees_x is not None else _fit(factory, x, attrs, sch.require_class())
        tz = trees_of(trees_z) if trees_z is not None else _fit(factory, z, attrs, sch.require_class())
    else:
        tx, tz = trees_of(trees_x), trees_of(trees_z)
    is_num = np.array([a in numeric for a in attrs])
    lo = np.zeros(len(attrs))
    hi = np.zeros(len(attrs))
    for j, a in enumerate(attrs):
        if not is_num[j]:
            continue
        if isinstance(domain, Mapping):
            if a not in domain:
                raise ParameterError(f"EDUDS domain mapping has no range for numeric attribute {a!r}")
            lo[j], hi[j] = map(float, domain[a])
        else:
            vx = x[a].to_numpy(dtype=float)
            vals = np.concatenate([vx, z[a].to_numpy(dtype=float)]) if domain == "union" else vx
            lo[j], hi[j] = vals.min(), vals.max()
    dom = hi - lo
    mode = domain if isinstance(domain, str) else "given"
    data = x[attrs]
    n = len(data)
    # every tree routes the records once; the forest and per-tree regions reuse the routes
    leaves_o = _forest_leaves(tx, data, attrs, numeric, lo, hi)
    leaves_p = _forest_leaves(tz, data, attrs, numeric, lo, hi)
    reg_o = _regions(leaves_o, n, lo, hi)
    reg_p = _regions(leaves_p, n, lo, hi)
    value, skipped, sim_attr, counted = _sds(reg_o, reg_p, is_num, dom, mode, count_untested, empty_records)
    with np.errstate(invalid="ignore"):
        per_attr = pd.DataFrame({
            "attribute": attrs,
            "kind": ["numeric" if f else "categorical" for f in is_num],
            "records_counted": counted.sum(axis=0),
            "mean_similarity": [float(np.nanmean(sim_attr[:, j])) if counted[:, j].any() else float("nan")
                                for j in range(len(attrs))],
        })
    rows = []
    if len(tx) == len(tz) and len(tx) > 1:
        for t, (a_leaves, b_leaves) in enumerate(zip(leaves_o, leaves_p, strict=True)):
            v, s, _, _ = _sds(_regions([a_leaves], n, lo, hi), _regions([b_leaves], n, lo, hi),
                              is_num, dom, mode, count_untested, empty_records)
            rows.append({"tree": t, "similarity": v, "skipped": s})
    elif len(tx) == len(tz) == 1:
        rows.append({"tree": 0, "similarity": value, "skipped": skipped})
    return EDUDSResult(value=value, n_records=len(x), skipped=skipped, n_trees_original=len(tx),
                       n_trees_perturbed=len(tz), domain=mode if isinstance(domain, str) else "given",
                       per_attribute=per_attr, per_tree=pd.DataFrame(rows))


# ------------------------------------------------------------------------ EDUSC
def _entropy_rows(counts: np.ndarray) -> np.ndarray:
    """Entropy (bits) of each row of class counts."""
    tot = counts.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(tot > 0, counts / tot, 0.0)
        h = -np.where(p > 0, p * np.log2(np.where(p > 0, p, 1.0)), 0.0).sum(axis=-1)
    return h


def _gini_rows(counts: np.ndarray) -> np.ndarray:
    tot = counts.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.where(tot > 0, counts / tot, 0.0)
    return 1.0 - (p * p).sum(axis=-1)


def _impurity(counts: np.ndarray, criterion: str) -> np.ndarray:
    return _gini_rows(counts) if criterion == "gini" else _entropy_rows(counts)


def _split_info(sizes: np.ndarray) -> float:
    tot = sizes.sum()
    p = sizes[sizes > 0] / tot
    return float(-(p * np.log2(p)).sum())


# Gains within this relative distance of the best are ties. Cut points can tie exactly
# (4·H(3,1) + 3·H(1,2) = 6·H(3,3) = 6 bits), and then the last bit of log2, which differs
# between NumPy releases, must not decide which threshold (and so which gain ratio) wins.
GAIN_TIE = 1e-12


def _first_best(gain: np.ndarray) -> int:
    """Position of the first gain within :data:`GAIN_TIE` of the largest."""
    best = gain.max()
    return int(np.flatnonzero(gain >= best - GAIN_TIE * max(1.0, abs(best)))[0])


def split_score(values: np.ndarray, y: np.ndarray, n_classes: int, *, numeric: bool,
                criterion: str = "gain_ratio") -> float:
    """The normalised splitting criterion of one attribute on one data segment.

    Categorical: a multiway split on the values. Numeric: the binary threshold (midpoints
    of adjacent distinct values) with the highest information gain (Gini gain for
    ``"gini"``), ties to the smallest threshold (gains within a relative 1e-12 of each
    other are ties, so exact ties do not depend on rounding). ``"gain_ratio"`` = gain /
    split info (Quinlan 1993); ``"info_gain"`` the gain; ``"gini"`` the Gini gain. An empty
    segment, a constant attribute or zero split info gives 0.
    """
    n = len(values)
    if n == 0:
        return 0.0
    crit = "gini" if criterion == "gini" else "entropy"
    parent = np.bincount(y, minlength=n_classes)[None, :].astype(float)
    base = _impurity(parent, crit)[0]
    if numeric:
        order = np.argsort(values, kind="stable")
        v = values[order]
        ys = y[order]
        cum = np.empty((n, n_classes))
        for c in range(n_classes):
            np.cumsum(ys == c, out=cum[:, c])
        cut = np.flatnonzero(v[1:] != v[:-1])  # split after position cut
        if cut.size == 0:
            return 0.0
        left = cum[cut]
        right = parent - left
        nl = left.sum(axis=1)
        nr = n - nl
        gain = base - (nl * _impurity(left, crit) + nr * _impurity(right, crit)) / n
        b = _first_best(gain)  # first maximum = smallest threshold
        g = float(gain[b])
        if criterion != "gain_ratio":
            return max(g, 0.0)
        si = _split_info(np.array([nl[b], nr[b]]))
        return max(g, 0.0) / si if si > 0 else 0.0
    codes, uniq = pd.factorize(pd.Series(values), use_na_sentinel=False)
    if len(uniq) < 2:
        return 0.0
    table = np.zeros((len(uniq), n_classes))
    np.add.at(table, (codes, y), 1.0)
    sizes = table.sum(axis=1)
    g = float(base - (sizes * _impurity(table, crit)).sum() / n)
    if criterion != "gain_ratio":
        return max(g, 0.0)
    si = _split_info(sizes)
    return max(g, 0.0) / si if si > 0 else 0.0


@dataclass
class EDUSCResult(MeasureResult):
    """EDUSC similarity Sim (paper 004 eq. 5): mean over the trees of x of Sim^t (eq. 4).

    ``per_tree``: Sim^t, node counts. ``per_attribute``: over all nodes where the attribute
    counted, the mean |G_O − G_P| and how many nodes that was.
    """

    criterion: str = "gain_ratio"
    min_gain_ratio: float = 0.01
    n_trees: int = 0
    per_tree: pd.DataFrame = field(default_factory=pd.DataFrame)
    per_attribute: pd.DataFrame = field(default_factory=pd.DataFrame)


def _tree_nodes(tree: TreeModel) -> list[tuple[Condition, ...]]:
    """Every node of a tree as the tests on its path: the distinct prefixes of the leaf rules."""
    seen: dict[tuple[Condition, ...], None] = {(): None}
    for rule in tree.leaf_rules().values():
        conds = tuple(rule.conditions)
        for i in range(1, len(conds) + 1):
            seen.setdefault(conds[:i], None)
    return list(seen)


class _CodedTable:
    """One table as EDUSC's kernels read it: per attribute integer codes (the dense rank of
    the value for a numeric attribute, so sorting codes sorts values; a factorized code for
    a categorical one, missing values a code of their own, as in :func:`split_score`), plus
    what tree tests need (float values of numeric columns, codes of the rest)."""

    def __init__(self, data: pd.DataFrame, attrs: list[str], numeric: set[str]) -> None:
        self.data = data
        self.numeric = numeric
        self.floats: dict[str, np.ndarray] = {}
        self.factor: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # column -> (codes, first row of each code)
        codes = np.empty((len(attrs), len(data)), dtype=np.int64)
        n_codes = np.empty(len(attrs), dtype=np.int64)
        for j, a in enumerate(attrs):
            if a in numeric:
                uniq, inv = np.unique(self.float_values(a), return_inverse=True)
                codes[j], n_codes[j] = inv.ravel(), len(uniq)
            else:
                c, _ = self.factorized(a)
                codes[j], n_codes[j] = c, (int(c.max()) + 1 if len(c) else 0)
        self.codes, self.n_codes = codes, n_codes
        self._cond_cache: dict[Condition, np.ndarray] = {}

    def float_values(self, col: str) -> np.ndarray:
        if col not in self.floats:
            self.floats[col] = self.data[col].to_numpy(dtype=float, na_value=np.nan)
        return self.floats[col]

    def factorized(self, col: str) -> tuple[np.ndarray, np.ndarray]:
        if col not in self.factor:
            c, uniq = pd.factorize(self.data[col], use_na_sentinel=False)
            c = np.asarray(c, dtype=np.int64)
            first = np.unique(c, return_index=True)[1].astype(np.int64)  # a row holding each code
            self.factor[col] = (c, first)
        return self.factor[col]

    def satisfies(self, cond: Condition, rows: np.ndarray) -> np.ndarray:
        """``cond.mask`` of the rows ``rows`` of the table, without building a Series per node."""
        col = cond.attribute
        if col not in self.data.columns:
            raise ParameterError(f"EDUSC: a tree tests {col!r}, which the table does not have")
        if col in self.numeric and cond.op in NUMERIC_OPS:
            return compare_numeric(self.float_values(col)[rows], cond.op, cond.number)
        # any other test is a function of the value: evaluate it once on one row per
        # distinct value (with the column's own dtype) and look the answer up by code
        ok = self._cond_cache.get(cond)
        if ok is None:
            c, first = self.factorized(col)
            ok = np.asarray(cond.mask(self.data[col].iloc[first]), dtype=bool)
            self._cond_cache[cond] = ok
        return ok[self.factorized(col)[0][rows]]


def _node_links(nodes: list[tuple[Condition, ...]]) -> tuple[list[int], list[Condition | None]]:
    """Parent position and last test of every node (the root: −1 and None)."""
    pos = {node: i for i, node in enumerate(nodes)}
    parents = [pos[node[:-1]] if node else -1 for node in nodes]
    return parents, [node[-1] if node else None for node in nodes]


def _segments(tab: _CodedTable, parents: list[int], conds: list[Condition | None]) -> tuple[np.ndarray, np.ndarray]:
    """The records of every node (ascending), as CSR arrays: a node's records are its
    parent's records that pass the node's last test (parents come before children)."""
    n = len(tab.data)
    rows: list[np.ndarray] = []
    for p, cond in zip(parents, conds, strict=True):
        if p < 0:
            rows.append(np.arange(n, dtype=np.int64))
            continue
        assert cond is not None
        pr = rows[p]
        rows.append(pr[tab.satisfies(cond, pr)])
    ptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum([len(r) for r in rows], out=ptr[1:])
    return ptr, (np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64))


def _segment_scores(ptr: np.ndarray, recs: np.ndarray, y: np.ndarray, n_classes: int, tab: _CodedTable,
                    is_num: np.ndarray, crit_code: int, criterion: str) -> np.ndarray:
    """:func:`split_score` of every attribute in every node segment (nodes × attributes).

    The kernel scores categorical attributes and screens numeric cut points; the cuts
    within 1e-9 of a segment's best gain are re-evaluated here with exactly the arithmetic
    of :func:`split_score`, so the chosen threshold, and hence the score, are the same."""
    n = len(tab.data)
    cnt = np.arange(n + 1, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        xlogx = np.where(cnt > 0, cnt * np.log2(np.where(cnt > 0, cnt, 1.0)), 0.0)
    score, c_seg, c_attr, c_left = segment_scores(ptr, recs, y, n_classes, tab.codes, tab.n_codes, is_num,
                                                  crit_code, 1e-9, xlogx)
    if len(c_seg) == 0:
        return score
    crit = "gini" if criterion == "gini" else "entropy"
    n_seg = np.diff(ptr)[c_seg]
    # class counts of each candidate's segment (exact integers)
    seg_ids = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))
    parent_all = np.bincount(seg_ids * n_classes + y[recs], minlength=(len(ptr) - 1) * n_classes)
    parent = parent_all.reshape(-1, n_classes)[c_seg].astype(float)
    base = _impurity(parent, crit)
    left = c_left
    right = parent - left
    nl = left.sum(axis=1)
    nr = n_seg - nl
    gain = base - (nl * _impurity(left, crit) + nr * _impurity(right, crit)) / n_seg
    # first maximum (ties within GAIN_TIE) of each (segment, attribute) group; candidates
    # come in cut order
    key = c_seg * len(is_num) + c_attr
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    gmax = np.maximum.reduceat(gain, starts)
    group = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(key)]))
    top = gmax[group]
    hit = np.flatnonzero(gain >= top - GAIN_TIE * np.maximum(1.0, np.abs(top)))
    first = hit[np.r_[True, group[hit][1:] != group[hit][:-1]]]
    g = np.maximum(gain[first], 0.0)
    if criterion == "gain_ratio":
        sizes = np.stack([nl[first], nr[first]], axis=1)
        p = sizes / sizes.sum(axis=1, keepdims=True)
        si = -(p * np.log2(p)).sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            g = np.where(si > 0, g / si, 0.0)
    score[c_seg[first], c_attr[first]] = g
    return score


def _score_tree(tree: TreeModel, tab_x: _CodedTable, tab_z: _CodedTable, yx: np.ndarray, yz: np.ndarray,
                n_classes: int, is_num: np.ndarray, crit_code: int, criterion: str, pool: ThreadPoolExecutor
                ) -> tuple[list[tuple[Condition, ...]], np.ndarray, np.ndarray, np.ndarray]:
    """One tree's nodes, the original segment bounds and both tables' node × attribute scores."""
    nodes = _tree_nodes(tree)
    parents, conds = _node_links(nodes)
    ptr_z, recs_z = _segments(tab_z, parents, conds)
    fut = pool.submit(_segment_scores, ptr_z, recs_z, yz, n_classes, tab_z, is_num, crit_code, criterion)
    ptr_x, recs_x = _segments(tab_x, parents, conds)
    g_x = _segment_scores(ptr_x, recs_x, yx, n_classes, tab_x, is_num, crit_code, criterion)
    return nodes, ptr_x, g_x, fut.result()


def edusc(
    x: pd.DataFrame,
    z: pd.DataFrame,
    *,
    class_column: str | None = None,
    schema: Schema | None = None,
    trees_x: Any = None,
    make_tree: TreeFactory | None = None,
    criterion: Literal["gain_ratio", "info_gain", "gini"] = "gain_ratio",
    min_gain_ratio: float = 0.01,
    node_count: Literal["all", "counted"] = "all",
) -> EDUSCResult:
    """EDUSC (paper 004 §5, eq. 4–5).

    For each tree t of the forest of x and each of its nodes s (leaves included), D_O(s) are
    the original records reaching s and D_P(s) the perturbed records sent down the same
    tests (the "forced" tree). With G^a the splitting criterion of attribute a in a segment
    (see :func:`split_score`), A_s = {a : max(G^a_O, G^a_P) > min_gain_ratio}, k = |A_s|:

        node_s = (1 / (k·N)) Σ_{a∈A_s} |G^a_{O,s} − G^a_{P,s}| · |D_O(s)|,
        Sim^t = 1 − (1/S_t) Σ_s node_s,   Sim = mean_t Sim^t,

    N the number of original records.

    Parameters (defaults: the paper's literal reading):
    min_gain_ratio:
        the threshold an attribute's criterion must exceed in one of the two segments; the
        paper takes SysFor's minimum gain ratio, 0.01 in its experiments.
    node_count:
        S_t is "the total number of nodes/segments in the t-th tree" (Table 2): every node,
        leaves included (``"all"``, default), so a node where no attribute counts adds 0 to
        the sum and 1 to S_t; ``"counted"`` divides by the nodes where some attribute
        counted instead.
    criterion:
        ``"gain_ratio"`` (paper), ``"info_gain"`` or ``"gini"`` (both named by the paper).

    A node is identified by the tests on its path, so trees whose leaf rules list their
    tests in root-to-leaf order give exactly the tree's nodes.
    """
    if criterion not in ("gain_ratio", "info_gain", "gini"):
        raise ParameterError(f"EDUSC criterion must be 'gain_ratio', 'info_gain' or 'gini', got {criterion!r}")
    if node_count not in ("all", "counted"):
        raise ParameterError(f"EDUSC node_count must be 'all' or 'counted', got {node_count!r}")
    if not (isinstance(min_gain_ratio, (int, float)) and math.isfinite(min_gain_ratio)):
        raise ParameterError(f"EDUSC min_gain_ratio must be a number, got {min_gain_ratio!r}")
    sch = _resolve_schema(x, schema, class_column, "EDUSC")
    _check_tables(x, z, sch, "EDUSC")
    attrs = sch.attributes
    if not attrs:
        raise MeasureNotApplicable("EDUSC needs at least one non-class attribute")
    cls = sch.class_column
    assert cls is not None
    if trees_x is None:
        trees = _fit(make_tree or default_tree_factory(), x, attrs, cls)
    else:
        trees = trees_of(trees_x)
    classes = pd.Index(pd.unique(pd.concat([x[cls], z[cls]], ignore_index=True)))
    yx = classes.get_indexer(x[cls]).astype(np.int64)  # type: ignore[arg-type]  # pandas-stubs: get_indexer takes a Series at run time
    yz = classes.get_indexer(z[cls]).astype(np.int64)  # type: ignore[arg-type]  # pandas-stubs: get_indexer takes a Series at run time
    n_classes = len(classes)
    numeric = set(sch.numeric)
    is_num = np.array([a in numeric for a in attrs])
    crit_code = {"gain_ratio": 0, "info_gain": 1, "gini": 2}[criterion]
    tab_x, tab_z = _CodedTable(x, attrs, numeric), _CodedTable(z, attrs, numeric)
    n_total = len(x)
    diff_sum = dict.fromkeys(attrs, 0.0)
    diff_cnt = dict.fromkeys(attrs, 0)
    tree_rows = []
    # the kernel releases the GIL: the perturbed table's segments are scored in a second
    # thread while the original's are found and scored in this one
    pool = ThreadPoolExecutor(max_workers=1)
    try:
        per_tree = [_score_tree(tree, tab_x, tab_z, yx, yz, n_classes, is_num, crit_code, criterion, pool)
                    for tree in trees]
    finally:
        pool.shutdown()
    for t, (nodes, ptr_x, g_x, g_z) in enumerate(per_tree):
        sizes = np.diff(ptr_x).tolist()
        total = 0.0
        counted_nodes = 0
        # the sums run in the reference order (node by node, attribute by attribute)
        for s_i, (row_o, row_p) in enumerate(zip(g_x.tolist(), g_z.tolist(), strict=True)):
            k = 0
            s = 0.0
            for a, go, gp in zip(attrs, row_o, row_p, strict=True):
                if max(go, gp) > min_gain_ratio:
                    k += 1
                    s += abs(go - gp)
                    diff_sum[a] += abs(go - gp)
                    diff_cnt[a] += 1
            if k:
                counted_nodes += 1
                total += s * sizes[s_i] / (k * n_total)
        denom = counted_nodes if node_count == "counted" else len(nodes)
        sim = 1.0 - total / denom if denom else 1.0
        tree_rows.append({"tree": t, "similarity": sim, "nodes": len(nodes), "nodes_counted": counted_nodes})
    if not tree_rows:
        raise ParameterError("EDUSC got no trees")
    tree_table = pd.DataFrame(tree_rows)
    per_attr = pd.DataFrame({
        "attribute": attrs,
        "nodes_counted": [diff_cnt[a] for a in attrs],
        "mean_abs_difference": [diff_sum[a] / diff_cnt[a] if diff_cnt[a] else float("nan") for a in attrs],
    })
    return EDUSCResult(value=float(tree_table["similarity"].mean()), criterion=criterion,
                       min_gain_ratio=float(min_gain_ratio), n_trees=len(trees), per_tree=tree_table,
                       per_attribute=per_attr)


# --------------------------------------------------------------- CLI registrations
def _ctx_forest(ctx: EvaluationContext, which: str, factory: TreeFactory | None) -> list[TreeModel]:
    """The forest of x or z for an evaluation, fitted once and shared by EDUDS and EDUSC."""
    key = ("structure_forest", which, id(factory) if factory is not None else "default")
    if key not in ctx.cache:
        data = _complete(ctx, which)
        cls = ctx.schema.require_class()
        ctx.cache[key] = _fit(factory or default_tree_factory(), data, ctx.schema.attributes, cls)
    return ctx.cache[key]


def _complete(ctx: EvaluationContext, which: str) -> pd.DataFrame:
    """x or z without records missing a numeric attribute value: the forests and their
    regions are those of the complete records (docs/missing_values.md)."""
    from ppdm.metrics._common import complete_records

    return complete_records(ctx.x if which == "x" else ctx.z, ctx.schema.numeric)


def _structure_options(ctx: EvaluationContext, name: str, allowed: Sequence[str]) -> tuple[dict[str, Any], Any]:
    opts = pick_options(ctx.options, name, [*allowed, "make_tree"])
    factory = opts.pop("make_tree", None)
    if factory is not None and not callable(factory):
        raise ParameterError(f"{name}: make_tree must be a callable returning an unfitted classifier, got {factory!r}")
    ctx.schema.require_class()
    return opts, factory


_EDUDS_OPTIONS = ("domain", "count_untested", "empty_records")
_EDUSC_OPTIONS = ("criterion", "min_gain_ratio", "node_count")


@register_measure("eduds", kind="utility", needs_class=True, options=(*_EDUDS_OPTIONS, "make_tree"),
                  description="EDUDS forest sub-domain similarity (paper 004 §4); 1 = same tree regions",
                  direction="higher", value_range=(0.0, 1.0),
                  meaning="1 means forests grown on z split the attribute domains into the same regions as forests "
                  "grown on x; 0 means they share none.")
def _eduds_measure(ctx: EvaluationContext) -> EDUDSResult:
    opts, factory = _structure_options(ctx, "eduds", _EDUDS_OPTIONS)
    return eduds(_complete(ctx, "x"), _complete(ctx, "z"), schema=ctx.schema, trees_x=_ctx_forest(ctx, "x", factory),
                 trees_z=_ctx_forest(ctx, "z", factory), **opts)


@register_measure("edusc", kind="utility", needs_class=True, options=(*_EDUSC_OPTIONS, "make_tree"),
                  description="EDUSC gain-ratio similarity of forced trees (paper 004 §5); 1 = same splitting criteria",
                  direction="higher", value_range=(0.0, 1.0),
                  meaning="1 means the splits of the forests of x are as informative on z as on x; 0 means they "
                  "tell nothing about the class on z.")
def _edusc_measure(ctx: EvaluationContext) -> EDUSCResult:
    opts, factory = _structure_options(ctx, "edusc", _EDUSC_OPTIONS)
    return edusc(_complete(ctx, "x"), _complete(ctx, "z"), schema=ctx.schema, trees_x=_ctx_forest(ctx, "x", factory),
                 **opts)
