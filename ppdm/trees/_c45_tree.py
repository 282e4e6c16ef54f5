"""Growing, collapsing and pessimistic pruning of a C4.5 tree (Quinlan 1993, ch. 2-4).

The algorithm is C4.5 release 8 as Weka's J48 (3.6) implements it; see
``docs/trees.md`` and the spec ``trees_and_perturbation.md`` §1. Rows are carried as
``(rows, w)`` pairs: indices into the training arrays and their weights. A row whose
value is unknown for a node's test is sent down every branch with its weight scaled by
the branch's share of the known weight, so weights stay fractional but always sum to
the node weight.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.stats import norm

from ppdm.trees._c45_kernels import route_estimate, select_split

SMALL = 1e-6


# ----------------------------------------------------------------------------- errors
def add_errs(n: float, e: float, cf: float) -> float:
    """Extra errors of C4.5's pessimistic estimate (Quinlan 1993 §4.2; J48 ``Stats.addErrs``).

    The upper limit of the binomial confidence interval at level ``cf`` for ``e`` errors in
    ``n`` cases, minus ``e``. Exact base case for ``e == 0``, linear interpolation for
    ``0 < e < 1`` and near ``e = n``, the normal approximation (with continuity correction)
    otherwise. ``cf`` is rounded to single precision, as J48 stores it.
    """
    cf = float(np.float32(cf))
    if cf > 0.5:
        return 0.0
    if e < 1:
        base = n * (1.0 - math.pow(cf, 1.0 / n))
        if e == 0:
            return base
        return base + e * (add_errs(n, 1.0, cf) - base)
    if e + 0.5 >= n:
        return max(n - e, 0.0)
    z = _z(cf)
    f = (e + 0.5) / n
    r = (f + (z * z) / (2 * n) + z * math.sqrt((f / n) - (f * f / n) + (z * z / (4 * n * n)))) / (1 + (z * z) / n)
    return (r * n) - e


_Z_CACHE: dict[float, float] = {}


def _z(cf: float) -> float:
    z = _Z_CACHE.get(cf)
    if z is None:
        z = _Z_CACHE[cf] = float(norm.ppf(1.0 - cf))
    return z


def max_class(dist: np.ndarray) -> int:
    """Index of the largest class weight; ties go to the lowest index (1e-6 tolerance)."""
    best, idx = 0.0, 0
    for i, v in enumerate(dist.tolist()):
        if v > best + SMALL:
            best, idx = v, i
    return idx


def _total_and_errors(dist: np.ndarray) -> tuple[float, float]:
    # plain-float loop: these arrays are tiny and this runs for every node many times
    best, total = 0.0, 0.0
    for v in dist.tolist():
        total += v
        if v > best + SMALL:
            best = v
    return total, total - best


def num_incorrect(dist: np.ndarray) -> float:
    return _total_and_errors(dist)[1]


def estimated_errors(dist: np.ndarray, cf: float) -> float:
    """Pessimistic error count of a leaf holding ``dist`` (0 for an empty leaf)."""
    total, e = _total_and_errors(dist)
    if abs(total) < SMALL:
        return 0.0
    return e + add_errs(total, e, cf)


def max_bag(bag_w: np.ndarray) -> int:
    """Heaviest branch; ties go to the last one (J48 ``Distribution.maxBag``)."""
    best, idx = 0.0, -1
    for i, v in enumerate(bag_w):
        if v > best - SMALL:
            best, idx = v, i
    return idx


# ----------------------------------------------------------------------------- nodes
@dataclass(eq=False)
class Node:
    """One node of a C4.5 tree.

    ``dist`` is the node's weighted class distribution; an internal node also has the
    tested attribute, its threshold (numeric) or none (categorical, one branch per
    declared value), and ``bag_dist`` (branch × class weights, unknowns spread in
    proportion), which classification uses for rows missing the tested value. An empty
    leaf answers with its parent's class unless ``empty_class`` names one (SysFor's
    forced splits, whose empty branches the reference gives the first class).
    """

    dist: np.ndarray
    attr: int = -1
    threshold: float = math.nan
    nominal: bool = False
    bag_dist: np.ndarray | None = None
    children: list[Node] = field(default_factory=list)
    is_empty: bool = False
    rows: np.ndarray | None = None
    w: np.ndarray | None = None
    leaf_id: int = -1
    nid: int = -1
    empty_class: int = -1
    forced: bool = False  # a SysFor test at a forced level: its split point is printed in full

    @property
    def is_leaf(self) -> bool:
        return not self.children

    def make_leaf(self) -> None:
        self.children = []
        self.attr = -1
        self.bag_dist = None
        self.threshold = math.nan
        self.nominal = False


@dataclass
class Data:
    """Training arrays shared by every node: X (n × m, float, NaN = unknown, categorical
    values as codes), class codes y, attribute kinds."""

    X: np.ndarray
    y: np.ndarray
    is_nom: np.ndarray
    nvals: np.ndarray
    n_classes: int
    _row_unknown: np.ndarray | None = field(default=None, repr=False)
    _order: np.ndarray | None = field(default=None, repr=False)
    _nom_codes: np.ndarray | None = field(default=None, repr=False)
    _xlogx: np.ndarray | None = field(default=None, repr=False)

    @property
    def XT(self) -> np.ndarray:
        """X as the compiled kernels take it: attributes × rows, C-contiguous for every shape
        (X is Fortran-ordered), so one compiled signature serves one attribute or many."""
        return np.ascontiguousarray(self.X.T)

    def class_dist(self, rows: np.ndarray, w: np.ndarray) -> np.ndarray:
        return np.bincount(self.y[rows], weights=w, minlength=self.n_classes).astype(float)

    def any_unknown(self, rows: np.ndarray) -> bool:
        """Whether some row of ``rows`` has an unknown attribute value."""
        if self._row_unknown is None:
            self._row_unknown = np.isnan(self.X).any(axis=1)
        return bool(self._row_unknown[rows].any())

    def sorted_rows(self, rows: np.ndarray) -> np.ndarray:
        """For every numeric attribute (in column order), ``rows`` sorted by its value (ties
        in row order). Each attribute is sorted once over the whole table; a subset of rows
        is a filter of that order (the many trees of a forest are grown on subsets)."""
        num = np.flatnonzero(~self.is_nom)
        if self._order is None:
            self._order = np.empty((num.size, self.X.shape[0]), dtype=np.int64)
            for q, a in enumerate(num):
                self._order[q] = np.argsort(self.X[:, a], kind="stable")
        if rows.size == self.X.shape[0]:
            return self._order.copy()
        member = np.zeros(self.X.shape[0], dtype=np.bool_)
        member[rows] = True
        out = np.empty((num.size, rows.size), dtype=np.int64)
        for q in range(num.size):
            out[q] = self._order[q][member[self._order[q]]]
        return out

    def warm(self) -> None:
        """Compute the cached row flags, sort orders, code matrix and table now (before
        threads share them)."""
        self.any_unknown(np.zeros(0, dtype=np.int64))
        self.sorted_rows(np.zeros(0, dtype=np.int64))
        self.nominal_codes()
        self.xlogx()

    def xlogx(self) -> np.ndarray:
        """c·log2(c) for c = 0..n (whole class counts of unit-weight rows)."""
        if self._xlogx is None:
            from ppdm.trees._c45_kernels import xlogx_table

            self._xlogx = xlogx_table(self.X.shape[0])
        return self._xlogx

    def nominal_codes(self) -> np.ndarray:
        """The categorical attributes' codes, row by row (rows × categorical attributes)."""
        if self._nom_codes is None:
            cols = self.X[:, self.is_nom]
            self._nom_codes = np.ascontiguousarray(np.nan_to_num(cols, nan=0.0).astype(np.int64))
        return self._nom_codes


@dataclass
class Options:
    min_obj: float = 2.0
    cf: float = 0.25
    prune: bool = True
    subtree_raising: bool = True
    collapse: bool = True
    use_mdl: bool = True
    relocate: bool = True
    relocate_tol: float = SMALL


# ----------------------------------------------------------------------------- splitting
def branch_of(data: Data, node: Node, rows: np.ndarray) -> np.ndarray:
    """Branch index of each row at ``node`` (−1 where the tested value is unknown)."""
    v = data.X[rows, node.attr]
    known = ~np.isnan(v)
    out = np.full(rows.shape[0], -1, dtype=np.int64)
    if node.nominal:
        out[known] = v[known].astype(np.int64)
    else:
        out[known] = (v[known] > node.threshold).astype(np.int64)
    return out


def n_branches(data: Data, node: Node) -> int:
    return int(data.nvals[node.attr]) if node.nominal else 2


def split_distribution(data: Data, node: Node, rows: np.ndarray, w: np.ndarray,
                       br: np.ndarray) -> np.ndarray:
    """Branch × class weights of ``rows`` at ``node``, unknown rows spread over the
    branches in proportion to the known weight (J48 ``addInstWithUnknown``)."""
    nb, nc = n_branches(data, node), data.n_classes
    known = br >= 0
    bags = np.bincount(br[known] * nc + data.y[rows[known]], weights=w[known],
                       minlength=nb * nc).reshape(nb, nc).astype(float)
    if not known.all():
        per_bag = bags.sum(axis=1)
        tot = per_bag.sum()
        probs = per_bag / tot if abs(tot) >= SMALL else np.full(nb, 1.0 / nb)
        unk = data.class_dist(rows[~known], w[~known])
        bags += probs[:, None] * unk[None, :]
    return bags


def partition(data: Data, node: Node, rows: np.ndarray, w: np.ndarray,
              bags: np.ndarray | None = None, br: np.ndarray | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
    """Rows and weights reaching each branch of ``node`` (unknowns go everywhere, reweighted)."""
    if br is None:
        br = branch_of(data, node, rows)
    nb = n_branches(data, node)
    known = br >= 0
    if known.all():
        if nb == 2:
            left = br == 0
            return [(rows[left], w[left]), (rows[~left], w[~left])]
        order = np.argsort(br, kind="stable")
        bounds = np.searchsorted(br[order], np.arange(nb + 1))
        return [(rows[order[bounds[j]:bounds[j + 1]]], w[order[bounds[j]:bounds[j + 1]]]) for j in range(nb)]
    if bags is None:
        bags = split_distribution(data, node, rows, w, br)
    per_bag = bags.sum(axis=1)
    tot = per_bag.sum()
    probs = per_bag / tot if abs(tot) >= SMALL else np.full(nb, 1.0 / nb)
    unk_rows, unk_w = rows[~known], w[~known]
    out = []
    for j in range(nb):
        sel = br == j
        if probs[j] > SMALL:
            out.append((np.concatenate([rows[sel], unk_rows]), np.concatenate([w[sel], unk_w * probs[j]])))
        else:
            out.append((rows[sel], w[sel]))
    return out


# ----------------------------------------------------------------------------- growing
def _selection_masks(data: Data, all_rows: np.ndarray, allowed: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Which attributes enter the average gain (categorical ones with values for ≥ 30 % of
    all data do not, unless every attribute is such) and which may be tested."""
    m = data.X.shape[1]
    many = data.is_nom & (data.nvals >= 0.3 * all_rows.shape[0])
    multi_val = bool(m > 0 and many.all())
    in_avg = ~many | multi_val
    return in_avg, (np.ones(m, dtype=np.bool_) if allowed is None else allowed)


class Grower:
    """Grows a C4.5 tree over a set of rows (J48 ``C45ModelSelection`` + ``ClassifierTree``).

    ``all_rows`` is the data J48 calls "all data": thresholds are moved to the largest of
    its values at or below the cut, and categorical attributes with very many values
    (≥ 30 % of its size) are left out of the average gain.
    """

    def __init__(self, data: Data, opts: Options, all_rows: np.ndarray,
                 allowed: np.ndarray | None = None) -> None:
        self.data, self.opts = data, opts
        self.in_avg, self.allowed = _selection_masks(data, all_rows, allowed)
        self._sorted_all: dict[int, np.ndarray] = {}
        self._all_rows = all_rows

    def relocate(self, attr: int, t: float) -> float:
        """Largest value of ``attr`` in all data that is ≤ t (J48 ``setSplitPoint``).

        J48 3.6 accepts values up to 1e-6 above t (``relocate_tol``); J48 3.8 and later
        compare exactly (``relocate_tol=0``), which matters when a training value lies a
        rounding error above the midpoint of its neighbours."""
        vals = self._sorted_all.get(attr)
        if vals is None:
            v = self.data.X[self._all_rows, attr]
            vals = self._sorted_all[attr] = np.unique(v[~np.isnan(v)])
        i = int(np.searchsorted(vals, t + self.opts.relocate_tol, side="right")) - 1
        return float(vals[i]) if i >= 0 else t

    def choose(self, rows: np.ndarray, w: np.ndarray) -> tuple[int, float]:
        d = self.data
        attr, thr, _, _ = select_split(d.XT, d.y, rows, w, d.is_nom, d.nvals, self.in_avg, d.n_classes,
                                       float(self.opts.min_obj), self.opts.use_mdl, self.allowed)
        return int(attr), float(thr)

    def grow(self, rows: np.ndarray, w: np.ndarray, keep: bool) -> Node:
        """Grow the full (unpruned) tree over ``rows`` without recursion."""
        d = self.data
        root = Node(d.class_dist(rows, w))
        stack = [(root, rows, w)]
        while stack:
            node, r, ww = stack.pop()
            if keep:
                node.rows, node.w = r, ww
            if r.shape[0] == 0 or abs(node.dist.sum()) < SMALL:
                node.is_empty = abs(node.dist.sum()) < SMALL
                continue
            attr, thr = self.choose(r, ww)
            if attr < 0:
                continue
            node.attr = attr
            node.nominal = bool(d.is_nom[attr])
            if not node.nominal:
                node.threshold = self.relocate(attr, thr) if self.opts.relocate else thr
            self._expand(node, r, ww)
            for child, (cr, cw) in zip(node.children, self._parts, strict=True):
                stack.append((child, cr, cw))
        return root

    def _expand(self, node: Node, rows: np.ndarray, w: np.ndarray) -> None:
        br = branch_of(self.data, node, rows)
        node.bag_dist = split_distribution(self.data, node, rows, w, br)
        self._parts = partition(self.data, node, rows, w, node.bag_dist, br)
        if (br >= 0).all():
            # every row went to one branch: the branch rows' class weights are the bag rows
            node.children = [Node(node.bag_dist[j].copy()) for j in range(len(self._parts))]
        else:
            node.children = [Node(self.data.class_dist(cr, cw)) for cr, cw in self._parts]


# ----------------------------------------------------------------------------- pruning
def collapse(root: Node) -> None:
    """Replace a subtree by a leaf when it does not reduce training errors (J48 ``collapse``).

    Decisions are taken top-down on the grown tree, so every subtree's training errors
    can be summed once, bottom-up, before any node is collapsed."""
    errs: dict[int, float] = {}
    order: list[Node] = []
    stack = [root]
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(node.children)
    for node in reversed(order):
        errs[id(node)] = num_incorrect(node.dist) if node.is_leaf else sum(errs[id(c)] for c in node.children)
    stack = [root]
    while stack:
        node = stack.pop()
        if node.is_leaf:
            continue
        if errs[id(node)] >= num_incorrect(node.dist) - 1e-3:
            node.make_leaf()
        else:
            stack.extend(node.children)


class Pruner:
    """C4.5's error-based pruning with subtree replacement and subtree raising
    (Quinlan 1993 §4.2; J48 ``C45PruneableClassifierTree.prune``)."""

    def __init__(self, data: Data, opts: Options, root: Node) -> None:
        self.data, self.cf, self.raising = data, opts.cf, opts.subtree_raising
        # without unknown values, branch estimates route rows through a flat copy of the tree
        self.fast = self.raising and not np.isnan(data.X).any()
        if self.fast:
            self._flatten(root)

    def _flatten(self, root: Node) -> None:
        nodes: list[Node] = []
        stack = [root]
        while stack:  # pre-order, so node ids list leaves left to right
            node = stack.pop()
            node.nid = len(nodes)
            nodes.append(node)
            stack.extend(reversed(node.children))
        n = len(nodes)
        self.attr = np.array([max(nd.attr, 0) for nd in nodes], dtype=np.int64)
        self.thr = np.array([nd.threshold for nd in nodes], dtype=float)
        self.nominal = np.array([nd.nominal for nd in nodes], dtype=np.bool_)
        self.is_leaf = np.array([nd.is_leaf for nd in nodes], dtype=np.bool_)
        self.kid_start = np.zeros(n, dtype=np.int64)
        kids: list[int] = []
        for nd in nodes:
            self.kid_start[nd.nid] = len(kids)
            kids.extend(c.nid for c in nd.children)
        self.kids = np.array(kids, dtype=np.int64)
        self.acc = np.zeros((n, self.data.n_classes))
        self.cf32 = float(np.float32(self.cf))
        self.z = _z(self.cf32) if self.cf32 <= 0.5 else 0.0

    def _mark_leaf(self, node: Node) -> None:
        if self.fast:
            self.is_leaf[node.nid] = True

    def _mark_raised(self, node: Node, child: Node) -> None:
        # the node takes over its child's test and children (and their slot in ``kids``)
        if self.fast:
            k, c = node.nid, child.nid
            self.attr[k], self.thr[k], self.nominal[k] = self.attr[c], self.thr[c], self.nominal[c]
            self.kid_start[k], self.is_leaf[k] = self.kid_start[c], self.is_leaf[c]

    def branch_estimate(self, node: Node, rows: np.ndarray, w: np.ndarray) -> float:
        """Estimated errors if ``rows`` were classified by the subtree at ``node``."""
        if self.fast:
            d = self.data
            return float(route_estimate(d.XT, d.y, rows, w, node.nid, self.attr, self.thr, self.nominal,
                                        self.is_leaf, self.kid_start, self.kids, self.acc, self.cf32, self.z))
        if node.is_leaf:
            return estimated_errors(self.data.class_dist(rows, w), self.cf)
        parts = partition(self.data, node, rows, w)
        return sum(self.branch_estimate(c, cr, cw) for c, (cr, cw) in zip(node.children, parts, strict=True))

    def redistribute(self, node: Node, rows: np.ndarray, w: np.ndarray) -> None:
        """Send ``rows`` through the subtree and recompute its distributions (J48 ``newDistribution``)."""
        node.rows, node.w = rows, w
        node.dist = self.data.class_dist(rows, w)
        if node.is_leaf:
            if abs(node.dist.sum()) >= SMALL:
                node.is_empty = False
            return
        br = branch_of(self.data, node, rows)
        node.bag_dist = split_distribution(self.data, node, rows, w, br)
        parts = partition(self.data, node, rows, w, node.bag_dist, br)
        for c, (cr, cw) in zip(node.children, parts, strict=True):
            self.redistribute(c, cr, cw)

    def prune(self, node: Node) -> float:
        """Prune the subtree at ``node``; return its estimated errors afterwards."""
        if node.is_leaf:
            return estimated_errors(node.dist, self.cf)
        while True:
            e_tree = sum([self.prune(c) for c in node.children])
            assert node.bag_dist is not None
            largest = max_bag(node.bag_dist.sum(axis=1))
            if self.raising:
                assert node.rows is not None and node.w is not None
                e_branch = self.branch_estimate(node.children[largest], node.rows, node.w)
            else:
                e_branch = math.inf
            e_leaf = estimated_errors(node.dist, self.cf)
            if e_leaf <= e_tree + 0.1 + SMALL and e_leaf <= e_branch + 0.1 + SMALL:
                node.make_leaf()
                self._mark_leaf(node)
                return e_leaf
            if e_branch <= e_tree + 0.1 + SMALL:
                child = node.children[largest]
                self._mark_raised(node, child)
                node.attr, node.threshold, node.nominal = child.attr, child.threshold, child.nominal
                node.children = child.children
                if node.is_leaf:
                    node.bag_dist = None
                assert node.rows is not None and node.w is not None
                self.redistribute(node, node.rows, node.w)
                if node.is_leaf:
                    return estimated_errors(node.dist, self.cf)
                continue  # prune this node again with its new subtree
            return e_tree


def build_tree(data: Data, opts: Options, rows: np.ndarray, w: np.ndarray,
               all_rows: np.ndarray | None = None) -> Node:
    """Grow, collapse and prune one C4.5 tree over ``rows`` (J48's ``buildClassifier``).

    Rows without unknown values are built by the compiled builder
    (:mod:`ppdm.trees._c45_compiled`); otherwise a row may reach several children with
    fractional weights and the tree is grown here."""
    if not data.any_unknown(rows):
        return build_tree_compiled(data, opts, rows, w, all_rows)
    return build_tree_interpreted(data, opts, rows, w, all_rows)


def build_tree_compiled(data: Data, opts: Options, rows: np.ndarray, w: np.ndarray,
                        all_rows: np.ndarray | None = None) -> Node:
    """:func:`build_tree` in compiled code, for rows without unknown values."""
    return nodes_from_flat(build_flat(data, opts, rows, w, all_rows))


def build_flat(data: Data, opts: Options, rows: np.ndarray, w: np.ndarray,
               all_rows: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
    """The grown, collapsed and pruned tree of rows without unknown values as flat arrays
    (see :func:`ppdm.trees._c45_compiled.grow`); :func:`nodes_from_flat` makes the nodes.
    The compiled kernels release the GIL, so several trees can be built in threads."""
    from ppdm.trees import _c45_compiled as cc

    all_rows = rows if all_rows is None else all_rows
    in_avg, allowed = _selection_masks(data, all_rows, None)
    perm = np.array(rows, dtype=np.int64)
    wperm = np.array(w, dtype=float)
    # every numeric attribute's rows in sorted order; growing partitions them with the rows
    num = np.flatnonzero(~data.is_nom)
    num_pos = np.full(data.X.shape[1], -1, dtype=np.int64)
    num_pos[num] = np.arange(num.size)
    nom_pos = np.full(data.X.shape[1], -1, dtype=np.int64)
    nom_pos[data.is_nom] = np.arange(int(data.is_nom.sum()))
    (attr, thr, nominal, kid_start, n_kids, kids, dist, bag_off, bags, empty, rs, re) = cc.grow(
        data.XT, data.y, perm, wperm, data.is_nom, data.nvals, in_avg, data.n_classes, float(opts.min_obj),
        bool(opts.use_mdl), allowed, np.asarray(all_rows, dtype=np.int64), bool(opts.relocate),
        float(opts.relocate_tol), data.sorted_rows(perm), num_pos, data.nominal_codes(), nom_pos,
        data.xlogx(), all_rows is rows)
    if opts.collapse:
        cc.collapse(attr, kid_start, n_kids, kids, dist)
    if opts.prune:
        cf32 = float(np.float32(opts.cf))
        z = _z(cf32) if cf32 <= 0.5 else 0.0
        n = perm.shape[0]
        width = max(2, int(data.nvals.max()) if data.nvals.size else 2)
        cc.prune(data.XT, data.y, perm, wperm, 0, attr, thr, nominal, kid_start, n_kids, kids, dist, bag_off, bags,
                 empty, rs, re, bool(opts.subtree_raising), cf32, z, np.zeros((attr.shape[0], data.n_classes)),
                 np.empty((width, data.n_classes)), np.empty(width + 1, dtype=np.int64), np.empty(n, dtype=np.int64),
                 np.empty(n), np.empty(n, dtype=np.int64), n_kids == 0)
    return attr, thr, nominal, kid_start, n_kids, kids, dist, bag_off, bags, empty


def nodes_from_flat(flat: tuple[np.ndarray, ...]) -> Node:
    """A fresh :class:`Node` tree of a flat tree made by :func:`build_flat`."""
    return _nodes_from_flat(0, *flat)


def _nodes_from_flat(root: int, attr: np.ndarray, thr: np.ndarray, nominal: np.ndarray, kid_start: np.ndarray,
                     n_kids: np.ndarray, kids: np.ndarray, dist: np.ndarray, bag_off: np.ndarray, bags: np.ndarray,
                     empty: np.ndarray) -> Node:
    """The :class:`Node` tree of a flat tree (only the nodes still reachable from ``root``)."""
    def make(i: int) -> Node:
        if n_kids[i] == 0:
            return Node(dist[i].copy(), is_empty=bool(empty[i]))
        nk, off, ks = int(n_kids[i]), int(bag_off[i]), int(kid_start[i])
        return Node(dist[i].copy(), attr=int(attr[i]), threshold=math.nan if nominal[i] else float(thr[i]),
                    nominal=bool(nominal[i]), bag_dist=bags[off:off + nk].copy(), is_empty=bool(empty[i]),
                    children=[make(int(kids[ks + j])) for j in range(nk)])

    return make(root)


def build_tree_interpreted(data: Data, opts: Options, rows: np.ndarray, w: np.ndarray,
                           all_rows: np.ndarray | None = None) -> Node:
    """:func:`build_tree` in Python, for any rows (unknown values spread with fractional weights)."""
    grower = Grower(data, opts, rows if all_rows is None else all_rows)
    root = grower.grow(rows, w, keep=opts.prune and opts.subtree_raising)
    if opts.collapse:
        collapse(root)
    if opts.prune:
        Pruner(data, opts, root).prune(root)
    return root


def finalize(root: Node) -> int:
    """Drop training row lists and number the leaves depth-first, left to right."""
    n = 0
    stack = [root]
    while stack:
        node = stack.pop()
        node.rows = node.w = None
        if node.is_leaf:
            node.leaf_id = n
            n += 1
        else:
            stack.extend(reversed(node.children))
    return n
