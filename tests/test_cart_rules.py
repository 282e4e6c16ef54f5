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


def _decimals(v: float) -> int:
    text = repr(float(v))
    return 0 if "e" in text or text.endswith(".0") else len(text.split(".")[1])


def test_thresholds_are_in_the_datas_units_and_match_the_tree():
    from ppdm.data.types import decimals_of
    from ppdm.trees.cart import CARTClassifier

    x, sch = load("wine")
    tree = CARTClassifier(min_leaf_frac=0.02, max_depth=12, data_units=True).fit(x[sch.attributes],
                                                                                x[sch.class_column])
    leaves = tree.leaf_rules()
    rs = RuleSet([leaves[k] for k in sorted(leaves)], sch.class_column)
    assert rs == rules_from_cart(x, sch)
    shorter = 0
    for rule in rs:
        for c in rule.conditions:
            vals = np.unique(x[c.attribute].to_numpy(float))
            # no more decimals than the column was written with (no float noise, no midpoint digit)
            assert _decimals(c.value) <= decimals_of(x[c.attribute]), (c, decimals_of(x[c.attribute]))
            lo, hi = vals[vals <= c.value], vals[vals > c.value]
            assert len(lo) and len(hi)
            shorter += _decimals(c.value) < decimals_of(x[c.attribute])
    assert shorter  # where no record lies between, fewer digits than the data's
    # and the rules route every training record to the leaf the tree routes it to
    cov = rs.coverage(x)
    assert (cov.sum(axis=0) == 1).all()
    assert (np.array(sorted(leaves))[cov.argmax(axis=0)] == tree.apply(x[sch.attributes])).all()


def test_split_points_of_a_survey_table_read_as_its_data():
    """Dates as dates, amounts with their two decimals at most, whole numbers whole; the rule
    file read back covers the same records of the typed table and of its working form."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parent))
    from survey_table import survey_table

    from ppdm.data.schema import Schema
    from ppdm.data.types import working_frame
    from ppdm.trees.cart import CARTClassifier

    raw = survey_table(600).drop(columns=["person_id"]).dropna()
    raw["birth_date"] = pd.to_datetime(raw["birth_date"])
    raw["age_group"] = (raw["birth_date"].dt.year // 10).astype(int)
    sch = Schema.infer(raw, "diagnosis")
    rs = rules_from_cart(raw, sch, min_leaf_frac=0.02)
    text = rs.to_text()
    assert "birth_date" in text and "income" in text
    for rule in rs:
        for c in rule.conditions:
            if c.attribute == "birth_date":
                assert isinstance(c.value, pd.Timestamp) and c.value == c.value.normalize()
            elif c.attribute == "income":
                assert _decimals(c.value) <= 2
            elif c.attribute in ("age_group",):
                assert isinstance(c.value, int)
    assert "-4" not in "".join(str(c) for r in rs for c in r.conditions if c.attribute == "birth_date")
    back = RuleSet.from_text(text)
    assert back == rs
    work = working_frame(raw, sch.numeric)
    assert (back.coverage(work) == rs.coverage(raw)).all()
    # the tree grown on the working form (dates as days, as evaluate gives it) states the same rules
    tree = CARTClassifier(min_leaf_frac=0.02, categorical=sch.categorical, dates=["birth_date"], data_units=True)
    tree.fit(work[sch.attributes], work["diagnosis"])
    leaves = tree.leaf_rules()
    assert RuleSet([leaves[k] for k in sorted(leaves)], "diagnosis") == rs
    cov = rs.coverage(work)
    assert (cov.sum(axis=0) == 1).all()
    assert (np.array(sorted(leaves))[cov.argmax(axis=0)] == tree.apply(work[sch.attributes])).all()


def test_a_tree_as_a_model_keeps_its_midpoints():
    """Without data_units a leaf rule splits where the tree sends an unseen value: halfway
    between the training values (the Forest Framework keeps perturbed values in those leaves,
    the structure measures compare those split points)."""
    from ppdm.trees.cart import CARTClassifier

    x, sch = load("wine")
    tree = CARTClassifier(min_leaf_frac=0.02, max_depth=12).fit(x[sch.attributes], x[sch.class_column])
    leaves = tree.leaf_rules()
    rs = RuleSet([leaves[k] for k in sorted(leaves)], sch.class_column)
    for rule in rs:
        for c in rule.conditions:
            vals = np.unique(x[c.attribute].to_numpy(float))
            lo, hi = vals[vals <= c.value], vals[vals > c.value]
            mids = lo[:, None] + (hi[None, :] - lo[:, None]) / 2
            assert (mids == c.value).any()
    cov = rs.coverage(x)
    assert (np.array(sorted(leaves))[cov.argmax(axis=0)] == tree.apply(x[sch.attributes])).all()


def test_same_seeded_tree_is_grown_once_and_equals_a_fresh_fit(monkeypatch):
    """Ψx and the model measures' tree on x are one CART: the second fit on equal inputs copies the
    first (sklearn's fit is not called again) and gives the same tree; other data grows anew."""
    import numpy as np
    import pandas as pd
    from sklearn.tree import DecisionTreeClassifier

    from ppdm.trees import cart

    x = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], "c": ["u", "v", "u", "v", "u", "w"]})
    y = np.array(["n", "n", "p", "p", "p", "n"], dtype=object)
    fits = []
    real_fit = DecisionTreeClassifier.fit
    monkeypatch.setattr(DecisionTreeClassifier, "fit", lambda self, *a, **k: fits.append(1) or real_fit(self, *a, **k))
    monkeypatch.setattr(cart, "_LAST_TREE", [])
    first = cart.CARTClassifier(min_samples_leaf=1, random_state=3).fit(x, y)
    again = cart.CARTClassifier(min_samples_leaf=1, random_state=3).fit(x, y)
    assert len(fits) == 1
    assert again.tree_model_ is not first.tree_model_
    np.testing.assert_array_equal(again.tree_model_.tree_.threshold, first.tree_model_.tree_.threshold)
    np.testing.assert_array_equal(again.predict(x), first.predict(x))
    cart.CARTClassifier(min_samples_leaf=1, random_state=3).fit(x, y[::-1].copy())
    assert len(fits) == 2
