"""C4.5 decision trees as Weka's J48 builds them (Quinlan 1993; Quinlan 1996).

Paper 004 (§1, §3, §7) builds its forests with SysFor, which grows C4.5 trees; this
module is that C4.5: gain ratio among the tests with at least average gain, binary
tests ``A <= t`` / ``A > t`` on numeric attributes with the release-8 MDL correction
and thresholds moved to a training value, multiway tests on categorical attributes,
a minimum weight per branch (J48 ``-M``), collapsing, then pessimistic (error-based)
pruning with subtree replacement and subtree raising at confidence 0.25, and
fractional weights for unknown values. Details and the J48 parity table: docs/trees.md.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from decimal import Decimal
from typing import Any

import numpy as np

from ppdm.data.schema import Schema
from ppdm.errors import ParameterError, PPDMError
from ppdm.rules.core import Condition, Rule
from ppdm.trees._c45_tree import (
    SMALL,
    Data,
    Node,
    Options,
    build_tree,
    finalize,
    max_class,
    num_incorrect,
)
from ppdm.trees._encoding import EncodedClassifier, Encoding, encode_labels, fit_encoding
from ppdm.utils import check_choice


class C45Classifier(EncodedClassifier):
    """C4.5 release 8 decision tree, built as Weka J48 3.6 builds it.

    Parameters
    ----------
    min_leaf:
        Minimum weight in at least two branches of a test (J48 ``-M``, C4.5 ``-m``).
    confidence:
        Pruning confidence factor CF (J48 ``-C``); above 0.5 no extra errors are added.
    unpruned:
        Grow the tree without pessimistic pruning (J48 ``-U``); collapsing still runs.
    subtree_raising:
        Let pruning replace a node by its heaviest branch (J48 ``-S`` turns it off).
    collapse:
        Replace subtrees that do not reduce training errors before pruning (J48 3.6 always does).
    use_mdl:
        Subtract ``log2(T)/W`` from a numeric attribute's gain, T its number of admissible
        cut points (Quinlan 1996).
    relocate_threshold:
        Move a numeric threshold to the largest training value at or below the cut, as J48
        prints it (otherwise the midpoint is kept).
    threshold_tolerance:
        How far above the cut a training value may lie and still count as "at or below" it
        when the threshold is moved: 1e-6 in J48 3.6 (Weka's ``smOrEq``), 0 in J48 3.8 and
        later. It decides the threshold when a value sits a rounding error above the
        midpoint of its neighbours (e.g. 0.1715 against (0.171 + 0.172)/2).
    categorical:
        Columns to treat as categorical (names, or positions for an array). Columns with a
        non-numeric or pandas categorical dtype are categorical anyway.
    schema:
        A :class:`~ppdm.data.schema.Schema` whose ``categorical``/``numeric`` lists fix the kinds.
    value_order:
        Code order of categorical values and classes when not a pandas categorical:
        ``"appearance"`` (first appearance, as Weka's CSV loader declares them; decides
        printing order and ties) or ``"sorted"``.

    Attributes
    ----------
    classes_:
        Class labels, in code order (``value_order``); ``predict_proba`` columns follow it.
    tree_:
        The root :class:`~ppdm.trees._c45_tree.Node`.
    n_leaves_, tree_size_:
        Number of leaves and of nodes, as J48 reports them.
    """

    def __init__(
        self,
        min_leaf: float = 2,
        confidence: float = 0.25,
        unpruned: bool = False,
        subtree_raising: bool = True,
        collapse: bool = True,
        use_mdl: bool = True,
        relocate_threshold: bool = True,
        threshold_tolerance: float = 1e-6,
        categorical: Sequence[Hashable] | None = None,
        schema: Schema | None = None,
        value_order: str = "appearance",
    ) -> None:
        super().__init__(categorical, schema, value_order)
        # scikit-learn's contract: __init__ stores each parameter as given (get_params, clone), so it is written out
        self.min_leaf = min_leaf
        self.confidence = confidence
        self.unpruned = unpruned
        self.subtree_raising = subtree_raising
        self.collapse = collapse
        self.use_mdl = use_mdl
        self.relocate_threshold = relocate_threshold
        self.threshold_tolerance = threshold_tolerance

    # ------------------------------------------------------------------ fitting
    def _validate_params(self) -> None:
        if not isinstance(self.min_leaf, (int, float, np.integer, np.floating)) or not self.min_leaf > 0:
            raise ParameterError(f"min_leaf must be a positive number, got {self.min_leaf!r}")
        if not isinstance(self.confidence, (int, float, np.floating)) or not 0 < self.confidence <= 1:
            raise ParameterError(f"confidence must be in (0, 1], got {self.confidence!r}")
        check_choice(self.value_order, ("appearance", "sorted"), "value_order")
        tol = self.threshold_tolerance
        if not isinstance(tol, (int, float, np.integer, np.floating)) or not 0 <= tol < 1:
            raise ParameterError(f"threshold_tolerance must be a number in [0, 1), got {tol!r}")
        if self.schema is not None and not isinstance(self.schema, Schema):
            raise ParameterError("schema must be a ppdm Schema")

    def _options(self) -> Options:
        return Options(
            min_obj=float(self.min_leaf),
            cf=float(self.confidence),
            prune=not self.unpruned,
            subtree_raising=bool(self.subtree_raising),
            collapse=bool(self.collapse),
            use_mdl=bool(self.use_mdl),
            relocate=bool(self.relocate_threshold),
            relocate_tol=float(self.threshold_tolerance),
        )

    def fit(self, X: Any, y: Any, sample_weight: Any = None) -> C45Classifier:
        """Grow, collapse and prune the tree on ``X`` (DataFrame or array) and class ``y``.

        Unknown attribute values (NaN/None) are allowed; unknown class values are not."""
        self._validate_params()
        enc, Xf, codes, classes = _prepare(X, y, self.categorical, self.schema, self.value_order)
        if len(classes) < 2:
            name = getattr(y, "name", None)
            which = f"class column {name!r}" if name is not None else "the class"
            raise PPDMError(f"{which} has a single value ({classes[0]!r}), one class only; a tree needs at least two")
        w = _weights(sample_weight, len(codes))
        data = Data(np.asfortranarray(Xf), codes, enc.is_nom, enc.nvals, len(classes))
        rows = np.arange(len(codes), dtype=np.int64)
        root = build_tree(data, self._options(), rows, w)
        self._set_fitted(enc, classes, root)
        return self

    def _set_fitted(self, enc: Encoding, classes: np.ndarray, root: Node) -> None:
        self.encoding_ = enc
        self.classes_ = classes
        self.n_classes_ = len(classes)
        self.feature_names_in_ = np.array(enc.columns, dtype=object)
        self.n_features_in_ = len(enc.columns)
        self.tree_ = root
        self.n_leaves_ = finalize(root)
        self.tree_size_ = _count_nodes(root)
        self._leaf_nodes = _leaves(root)
        pairs = self._leaf_parents()
        self._leaf_pred = np.array([_leaf_prediction(n, p) for n, p in pairs], dtype=np.int64)
        # class weights a leaf answers with: its own, or its parent's when it is empty
        self.leaf_class_weights_ = np.stack(
            [n.dist if abs(n.dist.sum()) >= SMALL or p is None or n.empty_class >= 0 else p.dist for n, p in pairs]
        ).astype(float)

    @classmethod
    def _from_tree(cls, params: dict[str, Any], enc: Encoding, classes: np.ndarray, root: Node) -> C45Classifier:
        """A fitted classifier around a tree grown elsewhere (SysFor's forced-root trees)."""
        est = cls(**params)
        est._set_fitted(enc, classes, root)
        return est

    def _leaf_parents(self) -> list[tuple[Node, Node | None]]:
        out: list[tuple[Node, Node | None]] = []
        stack: list[tuple[Node, Node | None]] = [(self.tree_, None)]
        while stack:
            node, parent = stack.pop()
            if node.is_leaf:
                out.append((node, parent))
            else:
                stack.extend((c, node) for c in reversed(node.children))
        out.sort(key=lambda t: t[0].leaf_id)
        return out

    # ------------------------------------------------------------------ prediction
    def _check_fitted(self) -> None:
        if not hasattr(self, "tree_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError("this C45Classifier is not fitted yet; call fit first")

    def _encode(self, X: Any) -> np.ndarray:
        self._check_fitted()
        return self.encoding_.transform(X)

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities as J48 computes them: the leaf's class frequencies; a row
        missing a tested value is spread over the branches by their training weight."""
        Xf = self._encode(X)
        out = np.zeros((Xf.shape[0], self.n_classes_))
        _probs(self.tree_, Xf, np.arange(Xf.shape[0]), np.ones(Xf.shape[0]), out)
        return out

    def predict(self, X: Any) -> np.ndarray:
        """Most probable class (ties to the first class in ``classes_``)."""
        p = self.predict_proba(X)
        return self.classes_[_argmax_tol(p)]

    def apply(self, X: Any) -> np.ndarray:
        """Leaf id of every row (ints 0..n_leaves_−1, left to right).

        A row missing a tested value follows the branch with the most training weight, so
        every row lands in exactly one leaf."""
        return self.apply_encoded(self._encode(X))

    def apply_encoded(self, Xf: np.ndarray) -> np.ndarray:
        """:meth:`apply` on an already encoded matrix (see ``encoding_``)."""
        out = np.full(Xf.shape[0], -1, dtype=np.int64)
        stack = [(self.tree_, np.arange(Xf.shape[0]))]
        while stack:
            node, idx = stack.pop()
            if idx.size == 0:
                continue
            if node.is_leaf:
                out[idx] = node.leaf_id
                continue
            br = _branch(node, Xf[idx, node.attr])
            assert node.bag_dist is not None
            br[br < 0] = int(np.argmax(node.bag_dist.sum(axis=1)))
            for j, child in enumerate(node.children):
                stack.append((child, idx[br == j]))
        return out

    # ------------------------------------------------------------------ rules and text
    def leaf_rules(self) -> dict[int, Rule]:
        """Every leaf as the rule "root-to-leaf tests → leaf class" with its training class
        weights (numeric tests ``<=``/``>``, categorical ``=``)."""
        self._check_fitted()
        rules: dict[int, Rule] = {}
        cols = self.encoding_.columns
        stack: list[tuple[Node, tuple[Condition, ...]]] = [(self.tree_, ())]
        while stack:
            node, conds = stack.pop()
            if node.is_leaf:
                counts = {_py(c): _num(v) for c, v in zip(self.classes_, node.dist, strict=True)}
                pred = self.classes_[self._leaf_pred[node.leaf_id]]
                rules[node.leaf_id] = Rule(conds, pred, counts)
                continue
            name = cols[node.attr]
            for j, child in enumerate(node.children):
                if node.nominal:
                    cond = Condition(name, "=", self.encoding_.categories[name][j])
                else:
                    cond = Condition(name, "<=" if j == 0 else ">", float(node.threshold))
                stack.append((child, (*conds, cond)))
        return dict(sorted(rules.items()))

    def export_text(self, header: bool = True) -> str:
        """The tree in J48's printed layout (``|   `` per level, ``class (weight/errors)``)."""
        self._check_fitted()
        body = _dump(self)
        if not header:
            return body
        title = "J48 unpruned tree" if self.unpruned else "J48 pruned tree"
        return (
            f"{title}\n------------------\n\n{body}\n\n"
            f"Number of Leaves  : \t{self.n_leaves_}\n\nSize of the tree : \t{self.tree_size_}\n"
        )

    def __sklearn_tags__(self) -> Any:  # sklearn's Tags (sklearn ships no types)
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        return tags


# ---------------------------------------------------------------------------- helpers
def _prepare(X: Any, y: Any, categorical: Any, schema: Schema | None, value_order: str
             ) -> tuple[Encoding, np.ndarray, np.ndarray, np.ndarray]:
    """``X`` and ``y`` encoded as C4.5 and SysFor read them: the attribute encoding, the encoded
    matrix, the class codes and the class labels in code order."""
    class_col = schema.class_column if schema is not None else None
    enc, Xf = fit_encoding(X, categorical=categorical, schema=schema, value_order=value_order,
                           class_column=class_col)
    codes, classes = encode_labels(y, value_order)
    if len(codes) != Xf.shape[0]:
        raise PPDMError(f"X has {Xf.shape[0]} rows but y has {len(codes)}")
    return enc, Xf, codes, classes


def _weights(sample_weight: Any, n: int) -> np.ndarray:
    if sample_weight is None:
        return np.ones(n)
    w = np.asarray(sample_weight, dtype=float).ravel()
    if w.shape[0] != n or not np.all(np.isfinite(w)) or (w < 0).any():
        raise PPDMError("sample_weight must hold one finite, non-negative weight per row")
    if not w.sum() > 0:
        raise PPDMError("every sample weight is zero; a tree needs some positive weight")
    return w


def _py(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


def _num(v: float) -> float | int:
    v = float(v)
    return int(v) if v.is_integer() else v


def _count_nodes(root: Node) -> int:
    n, stack = 0, [root]
    while stack:
        node = stack.pop()
        n += 1
        stack.extend(node.children)
    return n


def _leaves(root: Node) -> list[Node]:
    out, stack = [], [root]
    while stack:
        node = stack.pop()
        if node.is_leaf:
            out.append(node)
        else:
            stack.extend(reversed(node.children))
    return out


def _leaf_prediction(leaf: Node, parent: Node | None) -> int:
    """The class J48 prints and predicts at a leaf; an empty leaf takes its parent's class
    (or the class it was given, ``Node.empty_class``)."""
    if abs(leaf.dist.sum()) >= SMALL or parent is None:
        return max_class(leaf.dist)
    if leaf.empty_class >= 0:
        return leaf.empty_class
    return max_class(parent.dist)


def _branch(node: Node, v: np.ndarray) -> np.ndarray:
    out = np.full(v.shape[0], -1, dtype=np.int64)
    known = ~np.isnan(v)
    if node.nominal:
        out[known] = v[known].astype(np.int64)
    else:
        out[known] = (v[known] > node.threshold).astype(np.int64)
    return out


def _class_prob(dist: np.ndarray) -> np.ndarray:
    tot = dist.sum()
    return dist / tot if abs(tot) >= SMALL else np.zeros_like(dist)


def _probs(node: Node, Xf: np.ndarray, idx: np.ndarray, wt: np.ndarray, out: np.ndarray) -> None:
    # J48 ``ClassifierTree.getProbs``: empty branches answer with the parent's distribution
    if idx.size == 0:
        return
    if node.is_leaf:
        out[idx] += wt[:, None] * _class_prob(node.dist)[None, :]
        return
    assert node.bag_dist is not None
    br = _branch(node, Xf[idx, node.attr])
    bag_w = node.bag_dist.sum(axis=1)
    for j, child in enumerate(node.children):
        sel = br == j
        if not sel.any():
            continue
        if child.is_empty:
            if child.empty_class >= 0:
                p = np.zeros(out.shape[1])
                p[child.empty_class] = 1.0
            else:
                p = node.bag_dist[j] / bag_w[j] if bag_w[j] > SMALL else _class_prob(node.dist)
            out[idx[sel]] += wt[sel, None] * p[None, :]
        else:
            _probs(child, Xf, idx[sel], wt[sel], out)
    unk = br < 0
    if unk.any():
        share = bag_w / bag_w.sum()
        for j, child in enumerate(node.children):
            if not child.is_empty:
                _probs(child, Xf, idx[unk], wt[unk] * share[j], out)


def _argmax_tol(p: np.ndarray) -> np.ndarray:
    """Row-wise argmax where a later class must beat the best by more than 1e-6."""
    best = np.full(p.shape[0], -1.0)
    arg = np.zeros(p.shape[0], dtype=np.int64)
    for c in range(p.shape[1]):
        better = p[:, c] > best + SMALL
        arg[better] = c
        best[better] = p[better, c]
    return arg


# ---------------------------------------------------------------------------- printing
def weka_number(value: float, digits: int = 6) -> str:
    """A threshold as J48 prints it: rounded half up to ``digits`` decimals, trailing
    zeros (and a bare point) dropped."""
    scaled = value * 10.0**digits
    if not abs(scaled) < 9.2e18:
        return repr(value)
    q = int(abs(scaled) + 0.5)
    if q == 0:
        return "0"
    s = str(q).rjust(digits + 1, "0")
    text = (s[:-digits] + "." + s[-digits:]).rstrip("0").rstrip(".")
    return ("-" if scaled < 0 else "") + text


def java_double(value: float) -> str:
    """A number as Java's ``Double.toString`` prints it, which is how the SysFor package of its
    authors prints its own split points (in full, where J48 rounds to six decimals): the
    shortest digits that read back as the same double, ``3.5``, ``2.0``, ``1.7438500000000001``,
    and scientific notation outside [10⁻³, 10⁷) (``1.0E7``, ``2.5E-4``)."""
    v = float(value)
    if not math.isfinite(v):
        return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
    if v == 0:
        return "-0.0" if math.copysign(1.0, v) < 0 else "0.0"
    if 1e-3 <= abs(v) < 1e7:
        text = repr(v)
        return text if "." in text else text + ".0"
    # the shortest round-trip digits (Python's repr), laid out as Java does: d.dddE±n
    sign, digits, exp = Decimal(repr(v)).normalize().as_tuple()
    text = "".join(map(str, digits))
    return f"{'-' if sign else ''}{text[0]}.{text[1:] or '0'}E{int(exp) + len(text) - 1}"


def _weight_text(v: float) -> str:
    # J48 rounds leaf weights to 2 decimals (Math.rint) and prints them as Java doubles
    r = round(v * 100.0) / 100.0
    return repr(float(r))


def _label(tree: C45Classifier, leaf: Node, parent: Node | None) -> str:
    cls = tree.classes_[_leaf_prediction(leaf, parent)]
    tot = float(leaf.dist.sum())
    wrong = num_incorrect(leaf.dist) if abs(tot) >= SMALL else 0.0
    text = f"{_py(cls)} ({_weight_text(tot)}"
    if wrong > SMALL:
        text += f"/{_weight_text(wrong)}"
    return text + ")"


def _dump(tree: C45Classifier) -> str:
    root = tree.tree_
    if root.is_leaf:
        return ": " + _label(tree, root, None)
    cols = tree.encoding_.columns
    lines: list[str] = []

    def walk(node: Node, depth: int) -> None:
        name = cols[node.attr]
        for j, child in enumerate(node.children):
            if node.nominal:
                test = f"{name} = {_py(tree.encoding_.categories[name][j])}"
            else:
                # SysFor's forced split points in full, as its authors' program prints them; J48's at 6 decimals
                point = java_double(node.threshold) if node.forced else weka_number(node.threshold)
                test = f"{name} {'<=' if j == 0 else '>'} {point}"
            line = "|   " * depth + test
            if child.is_leaf:
                lines.append(line + ": " + _label(tree, child, node))
            else:
                lines.append(line)
                walk(child, depth + 1)

    walk(root, 0)
    return "\n".join(lines)


def j48_summary(tree: C45Classifier, X: Any, y: Any) -> dict[str, float]:
    """Leaves, size and training accuracy (%) in the form J48 reports them."""
    pred = tree.predict(X)
    yy = np.asarray(y)
    acc = float(np.mean([_same(a, b) for a, b in zip(pred, yy, strict=True)])) * 100.0
    return {"leaves": tree.n_leaves_, "size": tree.tree_size_, "train_accuracy_pct": acc}


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float, np.number)) and isinstance(b, (int, float, np.number)):
        return math.isclose(float(a), float(b))
    return bool(a == b)


__all__ = ["C45Classifier", "j48_summary", "java_double", "weka_number"]


