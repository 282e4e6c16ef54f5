"""SysFor forests: good attributes, forest construction, voting, rules."""

from __future__ import annotations

import math

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


def _tie_table() -> tuple[pd.DataFrame, pd.Series]:
    # cells (a, b): (p, n) records — (0,0): 5p 3n, (0,1): 1p 1n, (1,0): 3p 0n, (1,1): 1p 8n
    cells = {(0, 0): (5, 3), (0, 1): (1, 1), (1, 0): (3, 0), (1, 1): (1, 8)}
    rows: list[tuple[float, float, str]] = []
    for (a, b), (p, n) in cells.items():
        rows += [(float(a), float(b), "p")] * p + [(float(a), float(b), "n")] * n
    X = pd.DataFrame([r[:2] for r in rows], columns=["a", "b"])
    return X, pd.Series([r[2] for r in rows])


def test_majority_vote_tie_goes_to_larger_confidence() -> None:
    # With min_leaf 5 no partition can be split again, so the forest is two stumps:
    # b <= 0.5: p (8/11), b > 0.5: n (9/11); a <= 0.5: p (6/10), a > 0.5: n (8/12).
    X, y = _tie_table()
    forest = SysForClassifier(n_trees=2, min_leaf=5, goodness=1.0).fit(X, y)
    assert [(g.attr, g.threshold) for (g,) in forest.roots_] == [(1, 0.5), (0, 0.5)]
    assert list(forest.classes_) == ["p", "n"]  # first appearance: a first-class rule would say p
    q = pd.DataFrame({"a": [0.0, 1.0, 0.0, 1.0], "b": [1.0, 0.0, 0.0, 1.0]})
    # (0, 1): b-tree n with 9/11, a-tree p with 6/10 -> 1:1, n has the larger confidence
    # (1, 0): b-tree p with 8/11, a-tree n with 8/12 -> 1:1, p has the larger confidence
    # (0, 0) and (1, 1): both trees agree
    assert forest.predict(q).tolist() == ["n", "p", "p", "n"]
    np.testing.assert_allclose(forest.predict_proba(q), [[0.5, 0.5], [0.5, 0.5], [1, 0], [0, 1]])


def _level_two_table() -> tuple[pd.DataFrame, pd.Series]:
    y = list("BAABAA" "BBABBA")
    return pd.DataFrame({
        "g": ["u"] * 6 + ["v"] * 6,
        "b": [6.0, 1, 6, 5, 4, 2] + [2.0, 2, 4, 4, 6, 6],
        "c": [6.0, 2, 6, 3, 5, 4] + [4.0] * 6,
    }), pd.Series(y)


def _gain_ratio(left: list[str], right: list[str]) -> float:
    def h(*counts: int) -> float:
        n = sum(counts)
        return -sum(k / n * math.log2(k / n) for k in counts if k)

    both = left + right
    n = len(both)
    gain = h(*(both.count(c) for c in "AB")) - sum(
        len(s) / n * h(*(s.count(c) for c in "AB")) for s in (left, right))
    return gain / h(len(left), len(right))


def test_level_two_tree_forces_the_next_good_attribute_of_each_partition() -> None:
    """A hand-worked level-two tree (Islam & Giggins 2011, Algorithm 1; min_leaf 2, goodness 1,
    separation 1: every admissible attribute is good, one split point per numeric attribute)."""
    X, y = _level_two_table()
    forest = SysForClassifier(n_trees=4, min_leaf=2, goodness=1.0, separation=1.0).fit(X, y)
    # whole table: g splits u (4A 2B) from v (2A 4B): gain 1 - H(4,2) = 0.0817, split info 1 — the best
    assert forest.good_attributes_[0].attr == 0
    assert forest.good_attributes_[0].gain_ratio == pytest.approx(1 - 0.9182958340544896, abs=1e-12)
    # partition u: b at 4.5 (AAA | BBA) has gain ratio 0.4591; c at 3.5 (AB | AABA) 0.0480, tied
    # with 5.5 and taken as the lower point; g is constant. G_u = [b@4.5, c@3.5]
    u = y[:6].tolist()
    assert _gain_ratio(list("AAA"), list("BBA")) == pytest.approx(0.4591479, abs=1e-7)
    assert _gain_ratio(list("AB"), list("AABA")) == pytest.approx(0.0480351, abs=1e-7)
    assert sorted(u) == sorted("AAAABB")
    # partition v: c is constant; b at 3 (BB | ABBA) 0.2740 beats b at 5 (0.0480). G_v = [b@3]
    assert _gain_ratio(list("BB"), list("ABBA")) == pytest.approx(0.2740175, abs=1e-7)
    # level-2 trees of root g: floor((2·6 + 1·6) / 12) = 1 tree, x = 0: partition u forces
    # G_u[x + 1] = c@3.5 (it has a next good attribute), partition v forces G_v[0] = b@3
    assert [len(r) for r in forest.roots_] == [1, 1, 1, 2]
    assert forest.roots_[3] == (forest.good_attributes_[0], 0)
    root = forest.estimators_[3].tree_
    assert root.attr == 0 and root.nominal and len(root.children) == 2
    sub_u, sub_v = root.children
    assert (sub_u.attr, sub_u.threshold) == (2, 3.5)  # c, a midpoint (3 and 4 are the values)
    assert (sub_v.attr, sub_v.threshold) == (1, 3.0)  # b, the midpoint of 2 and 4: not relocated
    # below the forced sub-roots, C4.5 leaves on the sub-partitions (2 and 4 records each)
    assert [c.dist.sum() for c in sub_u.children] == [2.0, 4.0]
    assert [c.dist.sum() for c in sub_v.children] == [2.0, 4.0]
    assert all(c.is_leaf for c in (*sub_u.children, *sub_v.children))
    text = forest.estimators_[3].export_text(header=False)
    # forced split points in full, as Java prints them (3.0)
    assert text.splitlines() == ["g = u", "|   c <= 3.5: B (2.0/1.0)", "|   c > 3.5: A (4.0/1.0)",
                                 "g = v", "|   b <= 3.0: B (2.0)", "|   b > 3.0: B (4.0/2.0)"]


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


def test_threads_and_shared_subtrees_give_the_same_forest() -> None:
    # level-two trees repeat subtrees (G_j[0] or a plain C4.5 tree of a short partition);
    # each is grown once and copied, and threads change nothing
    df, schema = load("credit", missing="drop")
    X, y = df.drop(columns="a16"), df["a16"]
    one = SysForClassifier(n_trees=12, min_leaf=10, schema=schema).fit(X, y)
    two = SysForClassifier(n_trees=12, min_leaf=10, schema=schema, n_jobs=2).fit(X, y)
    assert one.export_text() == two.export_text()
    # every tree owns its nodes: leaf ids run 0..n_leaves-1 in each tree
    seen: set[int] = set()
    for est in two.estimators_:
        assert sorted(est.leaf_rules()) == list(range(est.n_leaves_))
        stack = [est.tree_]
        while stack:
            node = stack.pop()
            assert id(node) not in seen
            seen.add(id(node))
            stack.extend(node.children)
    with pytest.raises(ParameterError):
        SysForClassifier(n_jobs=0).fit(X, y)
