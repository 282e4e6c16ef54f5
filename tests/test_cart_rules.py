"""Ψx from CART (paper 000 §7): partition, counts, original attributes, scikit-learn parity."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.tree import DecisionTreeClassifier

from ppdm.datasets import load
from ppdm.errors import ParameterError
from ppdm.rules import RuleSet
from ppdm.trees.cart import rules_from_cart, rules_from_sklearn


@pytest.fixture(scope="module")
def adult():
    return load("adult", missing="drop")


@pytest.fixture(scope="module")
def adult_rules(adult):
    x, sch = adult
    return rules_from_cart(x, sch)


def test_adult_rule_count_as_in_the_paper(adult, adult_rules):
    x, _ = adult
    assert len(x) == 30162
    # paper 000 §7: 11 to 37 rules per dataset with these CART settings (minimum leaf 0.02·|x|, depth 12)
    assert 11 <= len(adult_rules) <= 40


def test_cart_rules_partition_x_and_carry_its_class_counts(adult, adult_rules):
    x, sch = adult
    cov = adult_rules.coverage(x)
    assert (cov.sum(axis=0) == 1).all()  # every record covered by exactly one rule
    y = x[sch.class_column].to_numpy()
    for rule, m in zip(adult_rules, cov, strict=True):
        counted = pd.Series(y[m]).value_counts().to_dict()
        assert {k: v for k, v in rule.class_counts.items() if v} == counted
        # the consequent is the majority class of the leaf
        assert rule.prediction == max(counted, key=counted.get)
        assert m.sum() >= np.ceil(0.02 * len(x))  # minimum leaf size


def test_rules_use_original_attributes_and_values(adult, adult_rules):
    x, sch = adult
    levels = {c: set(x[c].unique()) for c in sch.categorical}
    for rule in adult_rules:
        for c in rule.conditions:
            assert c.attribute in sch.attributes
            if c.attribute in sch.categorical:
                assert c.op in ("=", "!=", "in", "not in")
                vals = c.value if isinstance(c.value, frozenset) else {c.value}
                assert vals <= levels[c.attribute]
            else:
                assert c.op in ("<=", ">")


def test_integer_coded_categories_are_stated_as_the_original_codes():
    x, sch = load("cmc")
    rs = rules_from_cart(x, sch, min_leaf_frac=0.05)
    cats = [c for r in rs for c in r.conditions if c.attribute in sch.categorical]
    assert cats
    for c in cats:
        vals = c.value if isinstance(c.value, frozenset) else {c.value}
        assert vals <= set(x[c.attribute])


def test_rule_file_round_trip_gives_the_same_coverage(adult, adult_rules, tmp_path):
    x, _ = adult
    p = tmp_path / "rules.txt"
    adult_rules.save(p)
    back = RuleSet.load(p)
    assert back == adult_rules and back.class_column == "income"
    assert (back.coverage(x) == adult_rules.coverage(x)).all()


def test_rules_from_sklearn_reproduce_apply_and_predict():
    df, sch = load("banknote")
    X, y = df[sch.attributes], df[sch.class_column]
    tree = DecisionTreeClassifier(min_samples_leaf=20, max_depth=6, random_state=0).fit(X, y)
    rs = rules_from_sklearn(tree, class_column=sch.class_column)
    leaves = np.unique(tree.apply(X))
    assert len(rs) == len(leaves)
    cov = rs.coverage(df)
    assert (cov.sum(axis=0) == 1).all()
    # rule i is the leaf with the i-th smallest node id
    rule_of_record = cov.argmax(axis=0)
    assert (leaves[rule_of_record] == tree.apply(X)).all()
    pred = np.array([rs[i].prediction for i in rule_of_record])
    assert (pred == tree.predict(X)).all()


def test_bad_cart_parameters():
    x, sch = load("wine")
    with pytest.raises(ParameterError, match="min_leaf_frac"):
        rules_from_cart(x, sch, min_leaf_frac="big")  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="max_depth"):
        rules_from_cart(x, sch, max_depth=0)


def test_thresholds_are_midpoints_of_data_values_and_match_the_tree():
    from ppdm.trees.cart import CARTClassifier

    x, sch = load("wine")
    tree = CARTClassifier(min_leaf_frac=0.02, max_depth=12).fit(x[sch.attributes], x[sch.class_column])
    leaves = tree.leaf_rules()
    rs = RuleSet([leaves[k] for k in sorted(leaves)], sch.class_column)
    # each threshold lies halfway between two values of its attribute (no float32 artefacts)
    for rule in rs:
        for c in rule.conditions:
            vals = np.unique(x[c.attribute].to_numpy(float))
            lo, hi = vals[vals <= c.value], vals[vals > c.value]
            mids = lo[:, None] + (hi[None, :] - lo[:, None]) / 2
            assert (mids == c.value).any()
    # and the rules route every training record to the leaf the tree routes it to
    cov = rs.coverage(x)
    assert (cov.sum(axis=0) == 1).all()
    assert (np.array(sorted(leaves))[cov.argmax(axis=0)] == tree.apply(x[sch.attributes])).all()
