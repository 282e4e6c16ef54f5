"""C4.5 (J48-compatible) tree: hand-computed criteria, pruning estimates, invariants."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.datasets import load_iris

from ppdm.errors import ParameterError, PPDMError, SchemaError
from ppdm.rules import RuleSet
from ppdm.trees import C45Classifier, TreeModel
from ppdm.trees._c45_kernels import gain_ratio, info_gain, old_ent, select_split
from ppdm.trees._c45_tree import add_errs, estimated_errors
from ppdm.trees.c45 import j48_summary, weka_number
from ppdm.trees.rules import from_tree

# Quinlan (1993) ch. 2-3 "golf" data; row 6 has its outlook unknown in the book's ch. 3 example
GOLF = [
    ("sunny", 75, 70, "true", "Play"), ("sunny", 80, 90, "true", "Don't Play"),
    ("sunny", 85, 85, "false", "Don't Play"), ("sunny", 72, 95, "false", "Don't Play"),
    ("sunny", 69, 70, "false", "Play"), ("overcast", 72, 90, "true", "Play"),
    ("overcast", 83, 78, "false", "Play"), ("overcast", 64, 65, "true", "Play"),
    ("overcast", 81, 75, "false", "Play"), ("rain", 71, 80, "true", "Don't Play"),
    ("rain", 65, 70, "true", "Don't Play"), ("rain", 75, 80, "false", "Play"),
    ("rain", 68, 80, "false", "Play"), ("rain", 70, 96, "false", "Play"),
]


def golf(unknown: bool = False) -> tuple[pd.DataFrame, pd.Series]:
    df = pd.DataFrame(GOLF, columns=["outlook", "temperature", "humidity", "windy", "play"])
    if unknown:
        df.loc[5, "outlook"] = None
    return df.drop(columns="play"), df["play"]


def h(*p: float) -> float:
    return -sum(x * math.log2(x) for x in p if x > 0)


# ------------------------------------------------------------------ split criteria by hand
#: no table of c·log2(c): every logarithm computed
NO_TABLE = np.zeros(0)


def test_gain_and_gain_ratio_of_outlook_by_hand() -> None:
    # sunny 2 play/3 not, overcast 4/0, rain 3/2 (Quinlan 1993 §2.2: gain 0.246, split info 1.577)
    bags = np.array([[2.0, 3.0], [4.0, 0.0], [3.0, 2.0]])
    ig = info_gain(bags, 14.0, old_ent(bags.sum(axis=0), NO_TABLE), NO_TABLE)
    expected_gain = h(9 / 14, 5 / 14) - (5 / 14 * h(2 / 5, 3 / 5) + 4 / 14 * 0 + 5 / 14 * h(3 / 5, 2 / 5))
    assert ig == pytest.approx(expected_gain, abs=1e-12)
    assert ig == pytest.approx(0.2467, abs=1e-4)
    gr = gain_ratio(bags, 14.0, ig, NO_TABLE)
    assert gr == pytest.approx(expected_gain / h(5 / 14, 4 / 14, 5 / 14), abs=1e-12)
    assert gr == pytest.approx(0.156, abs=1e-3)


def test_gain_and_gain_ratio_with_an_unknown_value() -> None:
    # Quinlan 1993 §3.1: one outlook unknown -> gain = 13/14 (0.961 - 0.747) = 0.199,
    # split info counts the unknowns as a fourth bag: 1.809, gain ratio 0.110
    bags = np.array([[2.0, 3.0], [3.0, 0.0], [3.0, 2.0]])
    ig = info_gain(bags, 14.0, old_ent(bags.sum(axis=0), NO_TABLE), NO_TABLE)
    known = h(8 / 13, 5 / 13) - (5 / 13 * h(2 / 5, 3 / 5) + 5 / 13 * h(3 / 5, 2 / 5))
    assert ig == pytest.approx(13 / 14 * known, abs=1e-12)
    assert ig == pytest.approx(0.199, abs=1e-3)
    si = h(5 / 14, 3 / 14, 5 / 14, 1 / 14)
    assert si == pytest.approx(1.809, abs=1e-3)
    assert gain_ratio(bags, 14.0, ig, NO_TABLE) == pytest.approx(ig / si, abs=1e-12)


def test_numeric_split_uses_mdl_correction_and_relocates_threshold() -> None:
    X = np.array([[1.0], [2.0], [3.0], [4.0], [5.0], [6.0]])
    y = np.array([0, 0, 0, 1, 1, 1])
    attr, thr, gain, gr = select_split(
        np.ascontiguousarray(X.T), y, np.arange(6), np.ones(6), np.array([False]), np.array([0]),
        np.array([True]), 2, 1.0, True, np.array([True]),
    )
    # 5 admissible cuts; the best (3|4) has gain 1 bit; MDL subtracts log2(5)/6
    assert attr == 0 and thr == 3.5
    assert gain == pytest.approx(1.0 - math.log2(5) / 6, abs=1e-12)
    assert gr == pytest.approx(gain / 1.0, abs=1e-12)
    tree = C45Classifier(min_leaf=1).fit(pd.DataFrame(X, columns=["x"]), y)
    assert tree.export_text(header=False) == "x <= 3: 0 (3.0)\nx > 3: 1 (3.0)"
    assert tree.tree_.threshold == 3.0  # moved to the largest training value below the cut


def test_numeric_split_needs_enough_known_rows() -> None:
    # with M = 2 each side needs 2 rows: 3 rows can never be split
    X = pd.DataFrame({"x": [1.0, 2.0, 3.0]})
    tree = C45Classifier(min_leaf=2).fit(X, [0, 1, 1])
    assert tree.n_leaves_ == 1


# ------------------------------------------------------------------ pessimistic estimates
@pytest.mark.parametrize(
    ("n", "e", "extra"),
    [(6, 0, 1.2378), (9, 0, 1.2848), (1, 0, 0.75), (16, 1, 1.4757), (14, 5, 1.7611), (10, 0.5, 1.3535), (2, 1.6, 0.4)],
)
def test_add_errs_matches_j48_table(n: float, e: float, extra: float) -> None:
    assert add_errs(n, e, 0.25) == pytest.approx(extra, abs=1e-4)


def test_add_errs_edge_cases() -> None:
    assert add_errs(10, 2, 0.6) == 0.0  # CF above 0.5 adds nothing
    assert estimated_errors(np.array([0.0, 0.0]), 0.25) == 0.0
    assert estimated_errors(np.array([15.0, 1.0]), 0.25) == pytest.approx(1 + 1.4757, abs=1e-4)
    # C4.5's book interpolates U(1,16) = 0.157 from tables; J48 (and we) compute 0.1547
    assert (1 + add_errs(16, 1, 0.25)) / 16 == pytest.approx(0.1547, abs=1e-4)


# ------------------------------------------------------------------ known trees
def test_iris_tree_matches_j48() -> None:
    iris = load_iris(as_frame=True)
    X = iris.data.set_axis(["sepallength", "sepalwidth", "petallength", "petalwidth"], axis=1)
    y = pd.Series(np.array(["Iris-setosa", "Iris-versicolor", "Iris-virginica"])[iris.target])
    tree = C45Classifier().fit(X, y)
    assert tree.export_text(header=False) == (
        "petalwidth <= 0.6: Iris-setosa (50.0)\n"
        "petalwidth > 0.6\n"
        "|   petalwidth <= 1.7\n"
        "|   |   petallength <= 4.9: Iris-versicolor (48.0/1.0)\n"
        "|   |   petallength > 4.9\n"
        "|   |   |   petalwidth <= 1.5: Iris-virginica (3.0)\n"
        "|   |   |   petalwidth > 1.5: Iris-versicolor (3.0/1.0)\n"
        "|   petalwidth > 1.7: Iris-virginica (46.0/1.0)"
    )
    assert j48_summary(tree, X, y) == {"leaves": 5, "size": 9, "train_accuracy_pct": 98.0}
    t10 = C45Classifier(min_leaf=10).fit(X, y)
    assert (t10.n_leaves_, t10.tree_size_) == (3, 5)
    assert (t10.predict(X) == y.to_numpy()).sum() == 144


def test_golf_tree_with_unknown_value_has_fractional_leaves() -> None:
    # Quinlan 1993 §3.3 prints (3.4/0.4), (3.2), (2.4/0.4): 13-row shares of the unknown case
    X, y = golf(unknown=True)
    tree = C45Classifier().fit(X, y)
    assert tree.export_text(header=False) == (
        "outlook = sunny\n"
        "|   humidity <= 75: Play (2.0)\n"
        "|   humidity > 75: Don't Play (3.38/0.38)\n"
        "outlook = overcast: Play (3.23)\n"
        "outlook = rain\n"
        "|   windy = true: Don't Play (2.38/0.38)\n"
        "|   windy = false: Play (3.0)"
    )
    total = sum(r.support for r in tree.leaf_rules().values())
    assert total == pytest.approx(14.0)
    # a row with unknown outlook is spread over the branches by their training weight
    p = tree.predict_proba(X.iloc[[5]])
    assert p.sum() == pytest.approx(1.0)
    # sunny (5/13): humidity 90 > 75 -> Play 5/13 of 3+5/13; overcast (3/13): Play;
    # rain (5/13): windy -> Play 5/13 of 2+5/13
    play = 5 / 13 * (5 / 13) / (3 + 5 / 13) + 3 / 13 + 5 / 13 * (5 / 13) / (2 + 5 / 13)
    assert p[0, 0] == pytest.approx(play, abs=1e-12)
    assert tree.apply(X.iloc[[5]])[0] in range(tree.n_leaves_)


def test_weka_number_formatting() -> None:
    assert weka_number(720.0) == "720"
    assert weka_number(0.0870535) == "0.087054"
    assert weka_number(-0.023425) == "-0.023425"
    assert weka_number(1.57) == "1.57"
    assert weka_number(0.0) == "0"
    assert weka_number(-3.4605) == "-3.4605"


# ------------------------------------------------------------------ contract and errors
def test_sklearn_contract_and_categorical_codes() -> None:
    X, y = golf()
    tree = C45Classifier(min_leaf=1)
    assert clone(tree).get_params() == tree.get_params()
    tree.fit(X, y)
    assert isinstance(tree, TreeModel)
    assert list(tree.classes_) == ["Play", "Don't Play"]
    assert tree.predict_proba(X).shape == (14, 2)
    assert tree.score(X, y) == pytest.approx(1.0)
    # int-coded categorical column named in categorical=
    Xc = X.assign(outlook=X["outlook"].map({"sunny": 1, "overcast": 2, "rain": 3}))
    t2 = C45Classifier(min_leaf=1, categorical=["outlook", "windy"]).fit(Xc, y)
    assert t2.export_text(header=False).startswith("outlook = 1\n")
    rules = from_tree(t2, "play")
    assert isinstance(rules, RuleSet) and len(rules) == t2.n_leaves_
    assert RuleSet.from_text(rules.to_text()) == rules


def test_bad_input_raises_clear_errors() -> None:
    X, y = golf()
    with pytest.raises(PPDMError, match="single value"):
        C45Classifier().fit(X, ["Play"] * 14)
    with pytest.raises(SchemaError, match="infinite"):
        C45Classifier().fit(X.assign(humidity=np.inf), y)
    with pytest.raises(ParameterError, match="min_leaf"):
        C45Classifier(min_leaf=0).fit(X, y)
    with pytest.raises(ParameterError, match="confidence"):
        C45Classifier(confidence=1.5).fit(X, y)
    with pytest.raises(PPDMError, match="missing value"):
        C45Classifier().fit(X, y.where(y.index != 3))
    tree = C45Classifier().fit(X, y)
    with pytest.raises(SchemaError, match="humidity"):
        tree.predict(X.drop(columns="humidity"))
    # a categorical value never seen in training is treated as unknown
    assert tree.predict(X.assign(outlook="fog")).shape == (14,)


# ------------------------------------------------------------------ properties
@st.composite
def tables(draw: st.DrawFn) -> tuple[pd.DataFrame, pd.Series, int, bool]:
    n = draw(st.integers(6, 40))
    nums = st.one_of(st.integers(0, 6).map(float), st.just(math.nan))
    a = draw(st.lists(nums, min_size=n, max_size=n))
    b = draw(st.lists(st.integers(-3, 3).map(float), min_size=n, max_size=n))
    c = draw(st.lists(st.sampled_from(["p", "q", "r", None]), min_size=n, max_size=n))
    y = draw(st.lists(st.sampled_from(["u", "v", "w"]), min_size=n, max_size=n))
    assume(len(set(y)) >= 2)
    X = pd.DataFrame({"a": a, "b": b, "c": pd.Series(c, dtype=object)})
    return X, pd.Series(y), draw(st.integers(1, 3)), draw(st.booleans())


@settings(max_examples=60)
@given(tables())
def test_every_record_in_one_leaf_and_rules_agree(t: tuple[pd.DataFrame, pd.Series, int, bool]) -> None:
    X, y, m, unpruned = t
    tree = C45Classifier(min_leaf=m, unpruned=unpruned).fit(X, y)
    leaves = tree.apply(X)
    assert ((leaves >= 0) & (leaves < tree.n_leaves_)).all()
    rules = tree.leaf_rules()
    assert sorted(rules) == list(range(tree.n_leaves_))
    # fractional weights are conserved: leaf weights sum to the number of rows
    assert sum(r.support for r in rules.values()) == pytest.approx(len(X))
    complete = X.notna().all(axis=1).to_numpy()
    pred = tree.predict(X)
    for leaf_id, rule in rules.items():
        covered = rule.mask(X)
        # routing agrees with the rule for records without unknown values
        np.testing.assert_array_equal(covered[complete], (leaves == leaf_id)[complete])
        # prediction is the leaf's majority class
        sel = complete & (leaves == leaf_id)
        assert all(p == rule.prediction for p in pred[sel])
    # thresholds are training values
    for rule in rules.values():
        for cond in rule.conditions:
            if cond.op in ("<=", ">"):
                assert cond.value in set(X[cond.attribute].dropna())


@settings(max_examples=40)
@given(tables())
def test_pruning_never_adds_leaves(t: tuple[pd.DataFrame, pd.Series, int, bool]) -> None:
    X, y, m, _ = t
    pruned = C45Classifier(min_leaf=m).fit(X, y)
    grown = C45Classifier(min_leaf=m, unpruned=True).fit(X, y)
    assert pruned.n_leaves_ <= grown.n_leaves_
    p = pruned.predict_proba(X)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)


# ------------------------------------------------------------- compiled builder
def _same_nodes(a, b) -> None:
    assert (a.attr, a.nominal, a.is_empty, len(a.children)) == (b.attr, b.nominal, b.is_empty, len(b.children))
    assert (math.isnan(a.threshold) and math.isnan(b.threshold)) or a.threshold == b.threshold
    np.testing.assert_allclose(a.dist, b.dist, rtol=0, atol=1e-12)
    if a.bag_dist is None or b.bag_dist is None:
        assert a.bag_dist is None and b.bag_dist is None
    else:
        np.testing.assert_allclose(a.bag_dist, b.bag_dist, rtol=0, atol=1e-12)
    for ca, cb in zip(a.children, b.children, strict=True):
        _same_nodes(ca, cb)


@st.composite
def complete_tables(draw: st.DrawFn) -> tuple[pd.DataFrame, pd.Series, dict]:
    n = draw(st.integers(6, 80))
    a = draw(st.lists(st.integers(0, 9).map(float), min_size=n, max_size=n))
    b = draw(st.lists(st.floats(-3, 3, allow_nan=False).map(lambda v: round(v, 2)), min_size=n, max_size=n))
    c = draw(st.lists(st.sampled_from(["p", "q", "r", "s"]), min_size=n, max_size=n))
    y = draw(st.lists(st.sampled_from(["u", "v", "w"]), min_size=n, max_size=n))
    assume(len(set(y)) >= 2)
    opts = dict(min_leaf=draw(st.integers(1, 4)), unpruned=draw(st.booleans()),
                subtree_raising=draw(st.booleans()), collapse=draw(st.booleans()),
                confidence=draw(st.sampled_from([0.1, 0.25, 0.5, 0.75])),
                threshold_tolerance=draw(st.sampled_from([0.0, 1e-6])))
    return pd.DataFrame({"a": a, "b": b, "c": c}), pd.Series(y), opts


@settings(max_examples=150)
@given(complete_tables(), st.booleans())
def test_compiled_builder_grows_the_interpreted_tree(t: tuple[pd.DataFrame, pd.Series, dict], weighted: bool) -> None:
    """The compiled builder (rows without unknown values) and the Python one give the same
    tree: tests, thresholds, distributions, branch distributions, empty leaves."""
    from ppdm.trees import _c45_tree as T
    from ppdm.trees.c45 import _prepare

    X, y, opts = t
    tree = C45Classifier(**opts)
    enc, Xf, codes, classes = _prepare(X, y, None, None, "appearance")
    data = T.Data(np.asfortranarray(Xf), codes, enc.is_nom, enc.nvals, len(classes))
    rows = np.arange(len(codes))
    w = np.where(np.arange(len(codes)) % 3 == 0, 2.0, 1.0) if weighted else np.ones(len(codes))
    assert not data.any_unknown(rows)
    _same_nodes(T.build_tree_compiled(data, tree._options(), rows, w),
                T.build_tree_interpreted(data, tree._options(), rows, w))


def test_rows_with_unknown_values_take_the_interpreted_builder(monkeypatch: pytest.MonkeyPatch) -> None:
    from ppdm.trees import _c45_tree as T

    calls: list[str] = []
    real_c, real_i = T.build_tree_compiled, T.build_tree_interpreted
    monkeypatch.setattr(T, "build_tree_compiled", lambda *a, **k: calls.append("compiled") or real_c(*a, **k))
    monkeypatch.setattr(T, "build_tree_interpreted", lambda *a, **k: calls.append("interpreted") or real_i(*a, **k))
    C45Classifier().fit(*golf(unknown=True))
    C45Classifier().fit(*golf())
    assert calls == ["interpreted", "compiled"]
