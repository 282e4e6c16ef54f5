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
The trees and EDUDS's regions (:mod:`ppdm.metrics._structure_regions`) and EDUSC's split scores
(:mod:`ppdm.metrics._structure_splits`) live in private modules, re-exported here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from ppdm.data.schema import Schema
from ppdm.errors import ParameterError
from ppdm.metrics._common import pick_options
from ppdm.metrics._structure_regions import (  # noqa: F401  (re-exported: the public path stays this module)
    TreeFactory,
    _check_tables,
    _checked_schema,
    _fit,
    _forest_leaves,
    _leaf_boxes,
    _leaf_positions,
    _regions,
    _resolve_schema,
    _sds,
    default_tree_factory,
    trees_of,
)
from ppdm.metrics._structure_splits import (  # noqa: F401  (re-exported: the public path stays this module)
    GAIN_TIE,
    _CodedTable,
    _entropy_rows,
    _first_best,
    _gini_rows,
    _impurity,
    _node_links,
    _score_tree,
    _segment_scores,
    _segments,
    _split_info,
    _tree_nodes,
    split_score,
)
from ppdm.metrics.base import EvaluationContext, MeasureResult, register_measure
from ppdm.trees.base import TreeModel


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
    sch = _checked_schema(x, z, schema, class_column, "EDUDS")
    attrs = sch.attributes
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
    sch = _checked_schema(x, z, schema, class_column, "EDUSC")
    attrs = sch.attributes
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
