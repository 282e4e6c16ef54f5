"""CART trees whose leaves are rules in the original attributes.

Papers 000/002 find Ψx with CART (minimum leaf size 0.02·|x|, maximum depth 12,
paper 000 §7). scikit-learn's tree needs numbers, so categorical attributes are
one-hot encoded for the search; every split is translated back, so a leaf's rule
reads ``workclass = Private`` or ``workclass != Private``, never an encoded column.
"""

from __future__ import annotations

import copy
import hashlib
import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.tree import DecisionTreeClassifier
from sklearn.utils.validation import check_is_fitted

from ppdm.data.schema import Schema
from ppdm.data.types import is_date_dtype, numeric_values
from ppdm.errors import ParameterError, SchemaError
from ppdm.rules.core import Condition, Rule, RuleSet, date_of, days_of, split_point, split_time
from ppdm.trees._encoding import check_class_labels
from ppdm.utils import check_n_features, check_table_input

#: scikit-learn's trees compare float32 copies; numeric attributes larger than this are scaled
_FLOAT32_SAFE = 2.0**100
_FLOAT32_MAX = float(np.finfo(np.float32).max)


class _Encoder:
    """One-hot encoding of categorical attributes that remembers what each column means.

    scikit-learn's tree casts its input to float32, where values beyond ±3.4e38 become
    infinite (and were refused with an internal error). A numeric attribute whose largest
    magnitude exceeds 2^100 is therefore multiplied by a power of two (exact in binary
    floating point, order kept) that brings it below 2^100; thresholds are divided back,
    so rules read in the attribute's own values. Values met later beyond the float32 range
    are clipped to it: they lie beyond every threshold learnt, on the same side.
    """

    def __init__(self, X: pd.DataFrame, categorical: Sequence[str]) -> None:
        self.columns = list(X.columns)
        self.categorical = [c for c in self.columns if c in set(categorical)]
        # feature i of the encoded matrix is (attribute, value) — value None for numeric
        self.features: list[tuple[str, object]] = []
        self.levels: dict[str, list] = {}
        self.scale: dict[str, float] = {}
        for c in self.columns:
            if c in self.categorical:
                lv = sorted(pd.unique(X[c].dropna()), key=lambda v: (type(v).__name__, v))
                self.levels[c] = lv
                self.features.extend((c, v) for v in lv)
            else:
                self.features.append((c, None))
                try:
                    v = np.abs(numeric_values(X[c]))
                except (TypeError, ValueError):
                    v = np.zeros(0)
                v = v[np.isfinite(v)]
                top = float(v.max()) if v.size else 0.0
                self.scale[c] = math.ldexp(1.0, 100 - math.frexp(top)[1]) if top > _FLOAT32_SAFE else 1.0

    def feature_scale(self) -> np.ndarray:
        """The factor each encoded feature was multiplied by (1 for indicators)."""
        return np.array([1.0 if v is not None else self.scale.get(a, 1.0) for a, v in self.features])

    def transform(self, X: pd.DataFrame) -> np.ndarray:
        missing = [c for c in self.columns if c not in X.columns]
        if missing:
            raise SchemaError(f"column(s) {missing} seen in fit are not in the table")
        blocks: list[np.ndarray] = []
        for c in self.columns:
            if c in self.levels:
                blocks.append(_one_hot(X[c].to_numpy(dtype=object), self.levels[c]))
            else:
                try:
                    # a date column on its time axis (days since 1970-01-01)
                    blocks.append(numeric_values(X[c]).astype(np.float64).reshape(-1, 1))
                except (TypeError, ValueError):
                    raise SchemaError(f"numeric attribute {c!r} holds non-numeric values") from None
                f = self.scale.get(c, 1.0)
                if f != 1.0:
                    blocks[-1] = blocks[-1] * f
                big = np.isfinite(blocks[-1]) & (np.abs(blocks[-1]) > _FLOAT32_MAX)
                if big.any():  # finite values only: NaN and inf are refused just below
                    blocks[-1] = np.where(big, np.sign(blocks[-1]) * _FLOAT32_MAX, blocks[-1])
                if not np.isfinite(blocks[-1]).all():
                    # scikit-learn's tree would route NaN silently; the leaf rules could not state it
                    raise SchemaError(f"numeric attribute {c!r} holds a missing (NaN) or infinite value")
        return np.hstack(blocks) if blocks else np.zeros((len(X), 0))


def _one_hot(col: np.ndarray, levels: list) -> np.ndarray:
    """Indicators ``col == v`` for every level ``v`` (float32, one column per level).

    Each distinct value of ``col`` is compared with the levels once (by hash look-up, or by
    ``==`` for a value the look-up does not find, such as an unseen one), and its row of
    indicators is then copied to every record holding it: the work grows with the distinct
    values, not with records × levels. A missing value matches no level."""
    if not levels:
        return np.zeros((len(col), 0), np.float32)
    codes, uniques = pd.factorize(col)  # missing values get code -1
    uniques = np.asarray(uniques, dtype=object)
    # both sides object: a plain array would be inferred to text first, which costs more than the look-up
    where = pd.Index(levels, dtype=object).get_indexer(pd.Index(uniques, dtype=object))
    rows = np.zeros((len(uniques) + 1, len(levels)), np.float32)  # the last row: missing
    found = np.flatnonzero(where >= 0)
    rows[found, where[found]] = 1.0
    for u in np.flatnonzero(where < 0):
        rows[u] = [uniques[u] == v for v in levels]
    return rows[codes]


#: the last two trees grown by :func:`_grown_tree`, each with a digest of what it was grown from (the
#: model measures grow Ψx's tree and z's in turn); a digest, not a copy, so no record of x is kept in
#: the module between fits
_LAST_TREE: list[tuple[dict, bytes, DecisionTreeClassifier]] = []


def _digest(Xe: np.ndarray, y: np.ndarray) -> bytes:
    """BLAKE2b of the encoded table and the labels, shapes and dtypes included (labels held as
    objects by their codes and the repr of their distinct values: the same labels, exactly)."""
    h = hashlib.blake2b(digest_size=32)
    for a in (np.ascontiguousarray(Xe), np.asarray(y)):
        h.update(repr((a.shape, str(a.dtype))).encode())
        if a.dtype != object:
            h.update(np.ascontiguousarray(a).data)  # read in place, not copied to bytes first
            continue
        codes, uniques = pd.factorize(a, use_na_sentinel=False)
        h.update(np.ascontiguousarray(codes, dtype=np.int64).tobytes())
        h.update(repr([(type(v).__name__, v) for v in uniques]).encode())
    return h.digest()


def _grown_tree(Xe: np.ndarray, y: np.ndarray, **params) -> DecisionTreeClassifier:
    """scikit-learn's tree grown on ``Xe``, ``y`` with ``params``.

    An evaluation grows the same tree twice: Ψx (:func:`rules_from_cart`) and the model
    trained on x of the model measures (:func:`ppdm.metrics.model.compare_models`) are one
    CART on the same records with the same settings and seed; only the rules' split points
    are stated differently, after growing. A seeded fit is deterministic, so the second
    time one of the last two trees grown is copied when its inputs have the same digest."""
    seed = params.get("random_state")
    seeded = isinstance(seed, (int, np.integer)) and not isinstance(seed, bool)
    # scikit-learn grows its trees on float32 (its DTYPE): converted here once, the digest reads
    # half the bytes and the fit no copy; the tree is the same as from the float64 table
    Xe = np.ascontiguousarray(Xe, dtype=np.float32)
    key = _digest(Xe, y) if seeded else b""
    for p, k, tree in _LAST_TREE:
        if seeded and p == params and k == key:
            return copy.deepcopy(tree)
    tree = DecisionTreeClassifier(**params).fit(Xe, y)
    if seeded:  # unseeded: a fresh draw each time
        _LAST_TREE[:] = [*_LAST_TREE[-1:], (dict(params), key, copy.deepcopy(tree))]
    return tree


class CARTClassifier(ClassifierMixin, BaseEstimator):
    """CART (Gini) decision tree over mixed numeric/categorical tables.

    A scikit-learn classifier (``fit(X, y)``, ``predict``, ``predict_proba``, ``apply``)
    that satisfies :class:`ppdm.trees.base.TreeModel`: :meth:`leaf_rules` states every
    leaf as a :class:`~ppdm.rules.Rule` in the original attributes.

    Parameters
    ----------
    min_leaf_frac:
        Minimum leaf size as a fraction of the training records (paper 000 §7: 0.02).
    min_samples_leaf:
        Absolute minimum leaf size; overrides ``min_leaf_frac`` when given.
    max_depth:
        Maximum depth (paper 000 §7: 12).
    categorical:
        Attributes to treat as categorical; by default every non-numeric column but dates.
    data_units:
        State the split points of the leaf rules in the data's units, for people to read
        (Ψx, :func:`rules_from_cart`): the roundest number (or date) between the training
        values on either side (:func:`ppdm.rules.core.split_point`), so ``age <= 40`` rather
        than ``age <= 40.5`` and ``income <= 18404.46`` rather than
        ``income <= 18404.464999999997``; every training record lies on the same side as on
        the tree's own threshold. By default a split point is the midpoint between those
        values, where the tree itself sends an unseen value: the Forest Framework keeps
        perturbed values inside the leaves the rules state, and the structure measures
        compare split points, so they need the tree's own.
    dates:
        With ``data_units``, numeric attributes that are dates on their time axis (days
        since 1970-01-01, the working form of :func:`ppdm.data.types.working_frame`; a column
        with a datetime dtype is one anyway): their split points are stated as dates.
    """

    def __init__(
        self,
        min_leaf_frac: float = 0.02,
        min_samples_leaf: int | None = None,
        max_depth: int | None = 12,
        categorical: Sequence[str] | None = None,
        criterion: str = "gini",
        random_state: int | None = 0,
        data_units: bool = False,
        dates: Sequence[str] | None = None,
    ) -> None:
        self.min_leaf_frac = min_leaf_frac
        self.min_samples_leaf = min_samples_leaf
        self.max_depth = max_depth
        self.categorical = categorical
        self.criterion = criterion
        self.random_state = random_state
        self.data_units = data_units
        self.dates = dates

    def fit(self, X: pd.DataFrame, y) -> CARTClassifier:
        X = _frame(X)
        y = np.asarray(check_class_labels(y))
        if len(X) != len(y):
            raise SchemaError(f"X has {len(X)} rows but y has {len(y)}")
        if len(X) == 0:
            raise SchemaError("cannot grow a tree on an empty table")
        if not 0 < self.min_leaf_frac < 0.5:
            raise ParameterError(f"min_leaf_frac must lie in (0, 0.5), got {self.min_leaf_frac!r}")
        leaf = self.min_samples_leaf or max(1, math.ceil(self.min_leaf_frac * len(X)))
        cat = self.categorical
        if cat is None:
            cat = [c for c in X.columns if (not pd.api.types.is_numeric_dtype(X[c]) or pd.api.types.is_bool_dtype(X[c]))
                   and not is_date_dtype(X[c])]
        self.encoder_ = _Encoder(X, cat)
        self.dates_ = sorted({str(c) for c in X.columns if c not in cat and (is_date_dtype(X[c])
                                                                             or c in set(self.dates or ()))}
                             if self.data_units else ())
        Xe = self.encoder_.transform(X)
        self.tree_model_ = _grown_tree(Xe, y, criterion=self.criterion, min_samples_leaf=leaf,
                                       max_depth=self.max_depth, random_state=self.random_state)
        self.rule_thresholds_ = _data_thresholds(self.tree_model_, Xe, self.encoder_.features,
                                                 self.encoder_.feature_scale(), set(self.dates_),
                                                 data_units=bool(self.data_units))
        self.classes_ = self.tree_model_.classes_
        self.feature_names_in_ = np.asarray(X.columns, dtype=object)
        self.n_features_in_ = X.shape[1]
        return self

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        check_is_fitted(self, "tree_model_")
        return self.tree_model_.predict(self.encoder_.transform(_frame(X, self)))

    def predict_proba(self, X: pd.DataFrame) -> np.ndarray:
        check_is_fitted(self, "tree_model_")
        return self.tree_model_.predict_proba(self.encoder_.transform(_frame(X, self)))

    def apply(self, X: pd.DataFrame) -> np.ndarray:
        """Leaf id (node index of scikit-learn's tree) of every record."""
        check_is_fitted(self, "tree_model_")
        return self.tree_model_.apply(self.encoder_.transform(_frame(X, self)))

    def leaf_rules(self) -> dict[int, Rule]:
        """Every leaf as a rule in the original attributes, with training class counts."""
        check_is_fitted(self, "tree_model_")
        return tree_leaf_rules(self.tree_model_, self.encoder_.features, getattr(self, "rule_thresholds_", None),
                               dates=getattr(self, "dates_", ()))


def _frame(X, owner: CARTClassifier | None = None) -> pd.DataFrame:
    X = check_table_input(X)
    if not isinstance(X, pd.DataFrame):
        X = pd.DataFrame(X, columns=[f"x{i}" for i in range(X.shape[1])])
    if owner is not None:
        check_n_features(owner, X.shape[1])
    return X


def _data_thresholds(tree: DecisionTreeClassifier, X: np.ndarray, features: Sequence[tuple[str, object]],
                     scale: np.ndarray | None = None, dates: set[str] | frozenset[str] = frozenset(),
                     *, data_units: bool = False) -> np.ndarray:
    """Split points of the numeric tests restated in the training values they separate.

    scikit-learn compares float32 copies of the inputs, so its thresholds are midpoints of
    float32 values (``hue <= 0.9350000023841858``). For a rule in the original values each
    threshold is moved to the midpoint of the two float64 values of the node's training
    records on either side of it (``hue <= 0.935``), or with ``data_units`` to the number
    with the fewest digits between them (:func:`ppdm.rules.core.split_point`:
    ``hue <= 0.93``, ``age <= 40``) and for an attribute in ``dates`` to the roundest date
    (:func:`ppdm.rules.core.split_time`), so every training record falls on the same side
    as in the tree.
    """
    t = tree.tree_
    out = t.threshold.astype(float).copy()
    paths = tree.decision_path(X.astype(np.float32)).tocsc()
    for node in np.flatnonzero(t.children_left != -1):
        f = int(t.feature[node])
        if features[f][1] is not None:
            continue  # a one-hot indicator: the rule reads attr = value, no threshold
        rows = paths.indices[paths.indptr[node]:paths.indptr[node + 1]]
        v = X[rows, f]
        v = v[np.isfinite(v)]
        left = v.astype(np.float32) <= out[node]
        # a power of two: back to the attribute's own values, exactly
        unit = 1.0 if scale is None else float(scale[f])
        if left.any() and not left.all():
            lo, hi = float(v[left].max()) / unit, float(v[~left].min()) / unit
            if not data_units:
                out[node] = lo + (hi - lo) / 2
            elif features[f][0] in dates:
                out[node] = days_of(split_time(lo, hi))
            else:
                out[node] = split_point(lo, hi)
        else:
            out[node] /= unit
    return out



def tree_leaf_rules(
    tree: DecisionTreeClassifier,
    features: Sequence[tuple[str, object]] | Sequence[str],
    thresholds: np.ndarray | None = None,
    *,
    dates: Sequence[str] = (),
) -> dict[int, Rule]:
    """Rules of the leaves of a fitted scikit-learn tree.

    ``features`` names the tree's input columns: plain names for numeric inputs, or
    ``(attribute, value)`` pairs where an input is the one-hot indicator of ``attribute = value``
    (``value`` None for a numeric input). ``thresholds`` replaces the tree's split points
    (see :func:`_data_thresholds`). Bounds on one attribute are merged into the
    tightest ``>``/``<=`` pair, and ``!=`` tests implied by an ``=`` test are dropped.
    Bounds on the attributes named in ``dates`` (numbers on the time axis, days since
    1970-01-01) are stated as dates.
    """
    feats = [f if isinstance(f, tuple) else (f, None) for f in features]
    t = tree.tree_
    classes = tree.classes_
    out: dict[int, Rule] = {}
    # weighted_n_node_samples × value gives class counts in every sklearn version
    counts = t.value[:, 0, :]
    if np.all(counts <= 1.0 + 1e-12):
        counts = counts * t.weighted_n_node_samples[:, None]
    stack: list[tuple[int, list[tuple[str, object, str, float]]]] = [(0, [])]
    while stack:
        node, path = stack.pop()
        left, right = t.children_left[node], t.children_right[node]
        if left == -1:
            cc = {c: float(np.round(n, 9)) for c, n in zip(classes, counts[node], strict=True)}
            cc = {k: (int(v) if float(v).is_integer() else v) for k, v in cc.items()}
            pred = classes[int(np.argmax(counts[node]))]
            out[int(node)] = Rule(_simplify(path, set(dates)), pred, cc)
            continue
        attr, value = feats[t.feature[node]]
        thr = float(t.threshold[node] if thresholds is None else thresholds[node])
        stack.append((right, [*path, (attr, value, ">", thr)]))
        stack.append((left, [*path, (attr, value, "<=", thr)]))
    return out


def _simplify(path: list[tuple[str, object, str, float]], dates: set[str] | None = None) -> tuple[Condition, ...]:
    lo: dict[str, float] = {}
    hi: dict[str, float] = {}
    eq: dict[str, object] = {}
    ne: dict[str, list] = {}
    order: list[str] = []
    for attr, value, op, thr in path:
        if attr not in order:
            order.append(attr)
        if value is None:
            if op == "<=":
                hi[attr] = min(hi.get(attr, np.inf), thr)
            else:
                lo[attr] = max(lo.get(attr, -np.inf), thr)
        elif op == ">":  # indicator > 0.5: attr = value
            eq[attr] = value
        else:
            ne.setdefault(attr, []).append(value)
    conds: list[Condition] = []

    def bound(a: str, v: float) -> object:
        if a in (dates or ()):
            return date_of(v)
        return int(v) if float(v).is_integer() and abs(v) < 2**53 else v

    for a in order:
        if a in lo:
            conds.append(Condition(a, ">", bound(a, lo[a])))
        if a in hi:
            conds.append(Condition(a, "<=", bound(a, hi[a])))
        if a in eq:
            conds.append(Condition(a, "=", eq[a]))
        elif a in ne:
            vals = ne[a]
            conds.append(Condition(a, "!=", vals[0]) if len(vals) == 1 else Condition(a, "not in", frozenset(vals)))
    return tuple(conds)


def rules_from_cart(
    x: pd.DataFrame,
    schema: Schema,
    min_leaf_frac: float = 0.02,
    max_depth: int | None = 12,
    random_state: int | None = 0,
) -> RuleSet:
    """Ψx as the papers find it (paper 000 §7): the leaves of a CART tree grown on ``x``
    with minimum leaf size ``min_leaf_frac``·|x| and maximum depth ``max_depth``.

    Records with a missing attribute value are left out of the tree: a CART rule cannot
    say where a missing value goes. (Counted against the rules later, a missing value
    satisfies no condition.) The rules are stated in the data's units (``data_units`` of
    :class:`CARTClassifier`): split points with no more digits than the data, dates (the
    schema's ``dates``, or datetime columns) as dates."""
    cls = schema.require_class()
    if isinstance(min_leaf_frac, bool) or not isinstance(min_leaf_frac, (int, float)) or not 0 < min_leaf_frac < 0.5:
        raise ParameterError(f"min_leaf_frac must be a number in (0, 0.5), got {min_leaf_frac!r}")
    if max_depth is not None and (isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 1):
        raise ParameterError(f"max_depth must be a whole number ≥ 1 or None, got {max_depth!r}")
    x, _ = schema.validate(x, missing="drop", min_classes=2)
    tree = CARTClassifier(
        min_leaf_frac=min_leaf_frac, max_depth=max_depth, categorical=schema.categorical, random_state=random_state,
        data_units=True, dates=[c for c in schema.dates if c in schema.attributes],
    ).fit(x[schema.attributes], x[cls])
    rules = tree.leaf_rules()
    return RuleSet([rules[k] for k in sorted(rules)], cls)


def rules_from_sklearn(tree: DecisionTreeClassifier, feature_names: Sequence[str] | None = None, class_column: str | None = None) -> RuleSet:
    """Rules of any fitted scikit-learn ``DecisionTreeClassifier`` on numeric inputs."""
    check_is_fitted(tree, "tree_")
    names = list(feature_names) if feature_names is not None else list(getattr(tree, "feature_names_in_", []))
    if len(names) != tree.n_features_in_:
        raise ParameterError(f"the tree has {tree.n_features_in_} inputs; give that many feature names")
    rules = tree_leaf_rules(tree, names)
    return RuleSet([rules[k] for k in sorted(rules)], class_column)
