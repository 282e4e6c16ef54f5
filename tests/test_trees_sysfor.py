"""SysFor forests: good attributes, forest construction, voting, rules."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from sklearn.base import clone

from ppdm.datasets import load
from ppdm.errors import ParameterError
from ppdm.trees import C45Classifier, SysForClassifier, TreeModel
from ppdm.trees._c45_tree import Data
from ppdm.trees.rules import from_forest
from ppdm.trees.sysfor import credal_vote, good_attributes


def _data(X: pd.DataFrame, y: np.ndarray) -> tuple[Data, np.ndarray]:
    Xf = X.to_numpy(dtype=float)
    ranges = Xf.max(axis=0) - Xf.min(axis=0)
    return Data(np.asfortranarray(Xf), y, np.zeros(X.shape[1], dtype=bool), np.zeros(X.shape[1], dtype=np.int64),
                int(y.max()) + 1), ranges


def test_good_attributes_by_hand() -> None:
    # x separates the classes perfectly at 3.5 (gain ratio 1); z is noise
    X = pd.DataFrame({"x": [1, 2, 3, 4, 5, 6], "z": [1, 2, 1, 2, 1, 2]})
    y = np.array([0, 0, 0, 1, 1, 1])
    data, ranges = _data(X, y)
    rows, w = np.arange(6), np.ones(6)
    good = good_attributes(data, rows, w, min_leaf=2, separation=0.3, goodness=0.3,
                           goodness_mode="relative", min_gain_ratio=0.0, ranges=ranges)
    assert good[0].attr == 0 and good[0].threshold == 3.5 and good[0].gain_ratio == pytest.approx(1.0)
    # cut 2.5: left 2 of class 0, right 1 vs 3 -> gain 0.459, split info 0.918, ratio 0.5;
    # it is |2.5-3.5|/5 = 0.2 <= 0.3 from the chosen point, so it is discarded
    assert all(g.threshold != 2.5 for g in good)
    # everything kept is within goodness of the best
    assert all(g.gain_ratio >= good[0].gain_ratio - 0.3 for g in good)
    loose = good_attributes(data, rows, w, min_leaf=2, separation=0.1, goodness=1.0,
                            goodness_mode="relative", min_gain_ratio=0.0, ranges=ranges)
    gr25 = [g for g in loose if g.attr == 0 and g.threshold == 2.5]
    assert len(gr25) == 1 and gr25[0].gain_ratio == pytest.approx(0.5, abs=1e-12)


def test_goodness_zero_separation_one_keeps_one_split_per_attribute() -> None:
    df, schema = load("wine")
    X = df[schema.numeric]
    y = pd.factorize(df[schema.class_column])[0]
    data, ranges = _data(X, y)
    good = good_attributes(data, np.arange(len(y)), np.ones(len(y)), min_leaf=10, separation=1.0, goodness=0.0,
                           goodness_mode="relative", min_gain_ratio=0.0, ranges=ranges)
    assert len(good) >= 1
    assert all(g.gain_ratio == pytest.approx(good[0].gain_ratio) for g in good)
    assert len({g.attr for g in good}) == len(good)


def test_paper_004_preset_and_forest_on_wine() -> None:
    df, schema = load("wine", missing="drop")
    X, y = df.drop(columns="class"), df["class"]
    forest = SysForClassifier.paper_004(min_leaf=10, schema=schema)
    p = forest.get_params()
    assert (p["min_gain_ratio"], p["confidence"], p["goodness"], p["separation"], p["n_trees"]) == (0.01, 0.25, 0.5, 0.3, 3)
    assert clone(forest).get_params() == p
    forest.fit(X, y)
    assert len(forest.estimators_) == 3
    roots = [r[0] for r in forest.roots_]
    assert len(set(roots)) == 3 and all(r in forest.good_attributes_ for r in roots)
    for est, g in zip(forest.estimators_, roots, strict=True):
        assert isinstance(est, TreeModel) and isinstance(est, C45Classifier)
        assert est.tree_.attr == g.attr and est.tree_.threshold == g.threshold
        leaves = est.apply(X)
        rules = est.leaf_rules()
        for leaf_id, rule in rules.items():
            np.testing.assert_array_equal(rule.mask(X), leaves == leaf_id)
    assert forest.apply(X).shape == (len(X), 3)
    rs = forest.rules()
    assert len(rs) == sum(e.n_leaves_ for e in forest.estimators_)
    assert len(from_forest(forest)) == len(rs)
    assert (forest.predict(X) == y.to_numpy()).mean() > 0.9
    forest.set_params(combiner="credal")
    assert (forest.predict(X) == y.to_numpy()).mean() > 0.9
    np.testing.assert_allclose(forest.predict_proba(X).sum(axis=1), 1.0)
    assert "Tree 3 of 3" in forest.export_text()


def test_level_two_trees_are_built_when_more_trees_are_wanted() -> None:
    df, schema = load("credit", missing="drop")
    X, y = df.drop(columns="a16"), df["a16"]
    forest = SysForClassifier(n_trees=8, min_leaf=30, schema=schema).fit(X, y)
    assert 1 <= len(forest.estimators_) <= 8
    level1 = [r for r in forest.roots_ if len(r) == 1]
    level2 = [r for r in forest.roots_ if len(r) == 2]
    assert len(level1) == min(8, len(forest.good_attributes_))
    assert len(level1) + len(level2) == len(forest.estimators_)
    assert level2, "credit has enough good attributes per partition for level-2 trees"
    level1_roots = [r[0] for r in level1]
    for (g, x), est in zip(level2, forest.estimators_[len(level1):], strict=True):
        assert g in level1_roots and x >= 0
        assert est.tree_.attr == g.attr


def test_credal_vote_by_hand() -> None:
    votes, lower = credal_vote(np.array([[10.0, 2.0], [3.0, 3.0], [5.0, 4.0], [0.0, 0.0]]), s=1.0)
    # 10/13 > 3/13: class 0 dominates; equal counts and a one-count lead do not dominate (s = 1)
    np.testing.assert_allclose(votes, [[1, 0], [0.5, 0.5], [0.5, 0.5], [0.5, 0.5]])
    np.testing.assert_allclose(lower[0], [10 / 13, 2 / 13])


def test_majority_vote_tie_goes_to_larger_confidence() -> None:
    X = pd.DataFrame({"a": [0, 0, 0, 0, 1, 1, 1, 1, 1, 1], "b": [0, 1, 0, 1, 0, 1, 0, 1, 0, 1]})
    y = pd.Series(["n", "n", "n", "n", "p", "p", "p", "p", "p", "n"])
    forest = SysForClassifier(n_trees=2, min_leaf=1, goodness=1.0).fit(X, y)
    assert set(forest.predict(X)) <= {"n", "p"}


def test_bad_parameters() -> None:
    X = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0]})
    for kw in ({"n_trees": 0}, {"combiner": "mean"}, {"goodness_mode": "x"}, {"separation": -1}, {"missing": "x"}):
        with pytest.raises(ParameterError):
            SysForClassifier(**kw).fit(X, [0, 0, 1, 1])


@st.composite
def tables(draw: st.DrawFn) -> tuple[pd.DataFrame, pd.Series]:
    n = draw(st.integers(8, 40))
    a = draw(st.lists(st.integers(0, 8).map(float), min_size=n, max_size=n))
    b = draw(st.lists(st.sampled_from(["p", "q", "r"]), min_size=n, max_size=n))
    y = draw(st.lists(st.sampled_from([0, 1, 2]), min_size=n, max_size=n))
    assume(len(set(y)) >= 2)
    return pd.DataFrame({"a": a, "b": b}), pd.Series(y)


@settings(max_examples=30)
@given(tables(), st.integers(1, 4), st.integers(1, 5))
def test_forest_invariants(t: tuple[pd.DataFrame, pd.Series], min_leaf: int, n_trees: int) -> None:
    X, y = t
    forest = SysForClassifier(n_trees=n_trees, min_leaf=min_leaf, goodness=1.0, separation=0.2).fit(X, y)
    assert 1 <= len(forest.estimators_) <= n_trees
    for g in forest.good_attributes_:
        if g.threshold is not None:
            col = X.iloc[:, g.attr]
            assert (col <= g.threshold).sum() >= min_leaf and (col > g.threshold).sum() >= min_leaf
    num = [g for g in forest.good_attributes_ if g.threshold is not None]
    rng = X["a"].max() - X["a"].min()
    for i, g1 in enumerate(num):
        for g2 in num[i + 1:]:
            assert abs(g1.threshold - g2.threshold) / rng > 0.2
    leaves = forest.apply(X)
    pred = forest.predict(X)
    assert pred.shape == (len(X),)
    for k, est in enumerate(forest.estimators_):
        rules = est.leaf_rules()
        assert ((leaves[:, k] >= 0) & (leaves[:, k] < est.n_leaves_)).all()
        assert sum(r.support for r in rules.values()) == pytest.approx(len(X))
        tp = est.predict(X)
        for leaf_id, rule in rules.items():
            sel = leaves[:, k] == leaf_id
            np.testing.assert_array_equal(rule.mask(X), sel)
            assert all(p == rule.prediction for p in tp[sel])
