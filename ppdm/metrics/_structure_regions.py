"""The trees whose structure EDUDS and EDUSC compare, and EDUDS's regions.

The tree learner (:func:`default_tree_factory`, :func:`trees_of`), the checks of the two
tables, and the leaf regions of a tree or a forest (boxes over the numeric attributes, sets
over the categorical ones) from which EDUDS measures how much of the data space keeps its
class (:func:`_sds`). Split from :mod:`ppdm.metrics.structure`, which keeps the registered
measures and re-exports every name here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from ppdm.data.schema import Schema
from ppdm.errors import MeasureNotApplicable, ParameterError, SchemaError
from ppdm.rules.core import NUMERIC_OPS
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


def _checked_schema(x: pd.DataFrame, z: pd.DataFrame, schema: Schema | None, class_column: str | None,
                    measure: str) -> Schema:
    """The schema a tree-structure measure compares ``x`` and ``z`` under (:func:`_resolve_schema`),
    once both tables are checked against it and it has an attribute to build trees on."""
    sch = _resolve_schema(x, schema, class_column, measure)
    _check_tables(x, z, sch, measure)
    if not sch.attributes:
        raise MeasureNotApplicable(f"{measure} needs at least one non-class attribute")
    return sch


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
