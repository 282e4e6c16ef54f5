"""Split scores of EDUSC: how well each split of a tree learnt on x still separates the classes on z.

Impurities and their gains (entropy, Gini, gain ratio: :func:`split_score`), the coded
table the tree's nodes are evaluated on, and the score of every node and segment of a tree
(:func:`_score_tree`). Split from :mod:`ppdm.metrics.structure`, which keeps the registered
measures and re-exports every name here.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd

from ppdm.errors import ParameterError
from ppdm.metrics._structure_kernels import segment_scores
from ppdm.rules.core import NUMERIC_OPS, Condition, compare_numeric
from ppdm.trees.base import TreeModel


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
