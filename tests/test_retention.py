"""Rule-retention measures of paper 000 §5: hand-computed examples, the §6 thought experiment, properties."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppdm.errors import ParameterError, PPDMError, SchemaError
from ppdm.experiments.evaluation import resolve_measures
from ppdm.metrics.base import EvaluationContext
from ppdm.metrics.retention import (
    chi2_histogram_distance,
    rule_accuracy,
    rule_label_distance,
    rule_retention,
    rule_support_distance,
)
from ppdm.rules import Condition, Rule, RuleSet


def two_rules() -> RuleSet:
    return RuleSet.from_text("v <= 5 -> A\nv > 5 -> B", "y")


def test_hand_example_all_three_measures():
    # ψ1: v ≤ 5 → A, ψ2: v > 5 → B; labels kept, values moved.
    x = pd.DataFrame({"v": [1, 2, 7, 8], "y": list("AABA")})
    z = pd.DataFrame({"v": [3, 6, 6, 8], "y": list("AABA")})
    rs = two_rules()
    ra = rule_accuracy(x, z, rs)
    # x: records 1,2 → A (right), 7 → B (right), 8 → B (wrong): α = 3/4;
    # z: 3 → A (right), 6,6,8 → B: right only for the B record: α = 2/4
    assert ra.accuracy_x == 0.75 and ra.accuracy_z == 0.5
    assert ra.value == pytest.approx(0.25)
    # supports (2, 1) and (2, 3): (1 + 1) / (2 rules · 4 records)
    assert rule_support_distance(x, z, rs).value == pytest.approx(2 / 8)
    # ψ1: (1, 0) vs (1, 0) → 0; ψ2: (1/2, 1/2) vs (2/3, 1/3):
    # ½[(1/6)²/(7/6) + (1/6)²/(5/6)] = 1/35
    rld = rule_label_distance(x, z, rs, min_support=1)
    assert rld.per_rule["chi2"].tolist() == pytest.approx([0.0, 1 / 35])
    assert rld.value == pytest.approx(1 / 70)
    # with the paper's threshold of 5 both rules (support 2) are discounted and reported
    rld5 = rule_label_distance(x, z, rs)
    assert math.isnan(rld5.value) and rld5.discounted == [0, 1] and rld5.n_used == 0


def test_per_rule_table_columns_and_flip():
    x = pd.DataFrame({"v": [1, 2, 7, 8], "y": list("AABA")})
    z = pd.DataFrame({"v": [3, 6, 6, 8], "y": list("AABA")})
    pr = rule_retention(x, z, two_rules(), min_support=1).per_rule
    assert pr["support_x"].tolist() == [2, 2] and pr["support_z"].tolist() == [1, 3]
    assert pr["support_diff"].tolist() == [-1, 1]
    assert pr["n_x[A]"].tolist() == [2, 1] and pr["n_x[B]"].tolist() == [0, 1]
    assert pr["n_z[A]"].tolist() == [1, 2] and pr["n_z[B]"].tolist() == [0, 1]
    # ψ2 ties 1:1 in x → its consequent B; in z A leads 2:1, so its prediction flipped
    assert pr["predicted_x"].tolist() == ["A", "B"] and pr["predicted_z"].tolist() == ["A", "A"]
    assert pr["flipped"].tolist() == [False, True]
    assert pr["rule"].tolist() == ["v <= 5", "v > 5"]


def test_zero_support_in_z_gets_distance_one_and_is_flagged():
    rs = RuleSet.from_text("v <= 5 -> A\nv > 5 -> B", "y")
    x = pd.DataFrame({"v": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], "y": list("AAAAABBBBB")})
    z = x.assign(v=[1, 2, 3, 4, 5, 1, 2, 3, 4, 5])  # nothing left above 5
    res = rule_label_distance(x, z, rs)
    assert res.per_rule["chi2"].tolist() == [pytest.approx(0.5 * ((0.5 ** 2) / 1.5 + 0.5 ** 2 / 0.5)), 1.0]
    assert res.zero_support_rules == [1]
    assert res.per_rule["zero_support_z"].tolist() == [False, True]
    # ψ0 ties 5:5 in z; a tie keeps the majority class of x, so only ψ1 flips
    assert res.per_rule["flipped"].tolist() == [False, True]
    assert res.per_rule["predicted_z"].tolist() == ["A", None]
    assert res.value == pytest.approx((1 / 3 + 1.0) / 2)
    skipped = rule_label_distance(x, z, rs, zero_support="skip")
    assert skipped.value == pytest.approx(1 / 3) and skipped.n_used == 1 and skipped.zero_support_rules == [1]
    # RSD: |5 − 10| + |5 − 0| over 2 rules · 10 records
    assert rule_support_distance(x, z, rs).value == pytest.approx(10 / 20)


def test_chi2_histogram_distance_formula():
    assert chi2_histogram_distance([1, 0], [0, 1]) == pytest.approx(1.0)
    assert chi2_histogram_distance([0.5, 0.5, 0], [0.5, 0.5, 0]) == 0.0
    # ½[(0.2)²/1.0 + (0.2)²/1.0] = 0.04
    assert chi2_histogram_distance([0.6, 0.4], [0.4, 0.6]) == pytest.approx(0.04)


def test_prediction_with_overlapping_and_uncovered_records():
    # ψ0 and ψ1 overlap on v = 3; v = 9 is covered by no rule
    rs = RuleSet.from_text("v <= 3 -> A\nv >= 3 AND v <= 5 -> B", "y")
    x = pd.DataFrame({"v": [1, 3, 4, 9], "y": list("AABB")})
    ra = rule_accuracy(x, x, rs)
    # decision list: v=3 takes ψ0 (A, right); 4 → B right; 9 uncovered → wrong: 3/4
    assert ra.accuracy_x == 0.75 and ra.n_uncovered_x == 1 and ra.n_overlapping_x == 1
    assert ra.value == 0.0
    assert rule_accuracy(x, x, rs, default_class="B").accuracy_x == 1.0
    # supports count every covered record, overlaps included
    assert rule_retention(x, x, rs).per_rule["support_x"].tolist() == [2, 2]


def thought_experiment() -> tuple[pd.DataFrame, pd.DataFrame, RuleSet]:
    """x and z of paper 000 §6 (its Figure 2), built to carry exactly Tables 2 and 3.

    x: Ψx = {a0 → c0 (2 c0 : 1 c1, support 3), a1 → c1 (1), a2 ∧ b0 → c0 (1), a2 ∧ b1 → c0 (1)}.
    z (labels unchanged, record by record): CART-style rules a0 ∧ b0 → c0 (1), a0 ∧ b1 → c0 (1),
    a1 → c0 (1), a2 → c1 (1 c0 : 2 c1, support 3).
    """
    x = pd.DataFrame({
        "A": ["a0", "a0", "a0", "a1", "a2", "a2"],
        "B": ["b0", "b1", "b0", "b0", "b0", "b1"],
        "C": ["c0", "c0", "c1", "c1", "c0", "c0"],
    })
    z = pd.DataFrame({
        "A": ["a0", "a0", "a2", "a2", "a1", "a2"],
        "B": ["b0", "b1", "b0", "b1", "b0", "b0"],
        "C": x["C"],
    })
    psi_x = RuleSet([
        Rule((Condition("A", "=", "a0"),), "c0"),
        Rule((Condition("A", "=", "a1"),), "c1"),
        Rule((Condition("A", "=", "a2"), Condition("B", "=", "b0")), "c0"),
        Rule((Condition("A", "=", "a2"), Condition("B", "=", "b1")), "c0"),
    ], "C")
    return x, z, psi_x


def test_thought_experiment_tables_2_and_3():
    x, z, psi_x = thought_experiment()
    rr = rule_retention(x, z, psi_x, min_support=0)
    # Table 2: supports 3, 1, 1, 1 and the class shares of ψ0 (0.66 / 0.34)
    assert rr.per_rule["support_x"].tolist() == [3, 1, 1, 1]
    assert rr.per_rule["n_x[c0]"].tolist() == [2, 0, 1, 1]
    psi_z = RuleSet([
        Rule((Condition("A", "=", "a0"), Condition("B", "=", "b0")), "c0"),
        Rule((Condition("A", "=", "a0"), Condition("B", "=", "b1")), "c0"),
        Rule((Condition("A", "=", "a1"),), "c0"),
        Rule((Condition("A", "=", "a2"),), "c1"),
    ], "C")
    # Table 3 holds in z: supports 1, 1, 1, 3, the last with 1 c0 : 2 c1
    zz = rule_retention(z, z, psi_z, min_support=0).per_rule
    assert zz["support_x"].tolist() == [1, 1, 1, 3]
    assert zz["n_x[c0]"].tolist() == [1, 1, 1, 1] and zz["n_x[c1]"].tolist() == [0, 0, 0, 2]


def test_thought_experiment_table_4():
    x, z, psi_x = thought_experiment()
    # Table 4, row x: every rule-retention measure is 0 when z = x
    for fn in (rule_accuracy, rule_support_distance):
        assert fn(x, x, psi_x).value == 0.0
    assert rule_label_distance(x, x, psi_x, min_support=0).value == 0.0
    # RSD = (|3−2| + |1−1| + |1−2| + |1−1|) / (4 rules · 6 records) = 2/24, Table 4's 0.08
    rsd = rule_support_distance(x, z, psi_x)
    assert rsd.value == pytest.approx(2 / 24) and round(rsd.value, 2) == 0.08
    ra = rule_accuracy(x, z, psi_x)
    # α(Ψx|z) = 3/6 = 0.50, the number Table 4 prints for z; Eq. (1) subtracts it from
    # α(Ψx|x) = 5/6, which Tables 2 and 3 fix, so Rule Accuracy itself is 1/3.
    assert ra.accuracy_z == pytest.approx(0.5)
    assert ra.accuracy_x == pytest.approx(5 / 6)
    assert ra.value == pytest.approx(1 / 3)
    # RLD depends on how z's three a2 records split over b0/b1, which Table 3 does not fix.
    # With the split above: ψ0 0.2, ψ1 1, ψ2 ½[(0.5)²/1.5 + (0.5)²/0.5] = 1/3, ψ3 1.
    rld = rule_label_distance(x, z, psi_x, min_support=0)
    assert rld.per_rule["chi2"].tolist() == pytest.approx([0.2, 1.0, 1 / 3, 1.0])
    assert rld.value == pytest.approx((0.2 + 1 + 1 / 3 + 1) / 4)
    # the paper's own threshold discounts every rule of this toy example (supports < 5)
    assert math.isnan(rule_label_distance(x, z, psi_x).value)


def test_bad_inputs_raise_clear_errors():
    x = pd.DataFrame({"v": [1, 2, 7, 8], "y": list("AABA")})
    with pytest.raises(ParameterError, match="empty"):
        rule_accuracy(x, x, RuleSet([], "y"))
    with pytest.raises(SchemaError, match="class column 'nope'"):
        rule_accuracy(x, x, two_rules(), "nope")
    with pytest.raises(PPDMError, match="does not have"):
        rule_accuracy(x, x, RuleSet.from_text("w <= 1 -> A", "y"))
    with pytest.raises(PPDMError, match="not numeric"):
        rule_accuracy(x, x, RuleSet.from_text("y <= 1 -> A", "y"))
    with pytest.raises(ParameterError, match="zero_support"):
        rule_label_distance(x, x, two_rules(), zero_support="drop")  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="min_support"):
        rule_label_distance(x, x, two_rules(), min_support=-1)


def test_registered_adapters_share_one_computation():
    x = pd.DataFrame({"v": list(range(20)), "y": ["A"] * 10 + ["B"] * 10})
    z = x.assign(v=x["v"][::-1].to_numpy())
    from ppdm.data.schema import Schema

    ctx = EvaluationContext(x, z, Schema.infer(x, "y"), rules=two_rules())
    specs = {s.name: s for s in resolve_measures("rule_accuracy,rule_support_distance,rule_label_distance")}
    vals = {n: s.fn(ctx).value for n, s in specs.items()}
    assert len([k for k in ctx.cache if k[0] == "rule_retention"]) == 1
    assert vals["rule_support_distance"] == pytest.approx(rule_support_distance(x, z, two_rules()).value)
    assert all(s.default for s in specs.values())


# ------------------------------------------------------------------------ properties
@st.composite
def tables_and_rules(draw):
    n = draw(st.integers(3, 30))
    v = draw(st.lists(st.integers(0, 9), min_size=n, max_size=n))
    g = draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=n, max_size=n))
    y = draw(st.lists(st.sampled_from(["P", "Q", "R"]), min_size=n, max_size=n))
    x = pd.DataFrame({"v": v, "g": g, "y": y})
    zv = draw(st.lists(st.integers(0, 9), min_size=n, max_size=n))
    zg = draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=n, max_size=n))
    z = pd.DataFrame({"v": zv, "g": zg, "y": y})
    cond = st.one_of(
        st.builds(Condition, st.just("v"), st.sampled_from(["<=", ">"]), st.integers(0, 9)),
        st.builds(Condition, st.just("g"), st.sampled_from(["=", "!="]), st.sampled_from(["a", "b", "c"])),
    )
    rules = draw(st.lists(st.builds(Rule, st.lists(cond, max_size=3).map(tuple), st.sampled_from(["P", "Q", "R"])),
                          min_size=1, max_size=6))
    return x, z, RuleSet(rules, "y")


@settings(max_examples=60)
@given(tables_and_rules())
def test_measures_are_zero_when_z_equals_x_and_bounded(data):
    x, z, rs = data
    assert rule_accuracy(x, x.copy(), rs).value == 0.0
    assert rule_support_distance(x, x.copy(), rs).value == 0.0
    assert rule_label_distance(x, x.copy(), rs, min_support=0).value == 0.0
    rsd = rule_support_distance(x, z, rs).value
    rld = rule_label_distance(x, z, rs, min_support=0).value
    ra = rule_accuracy(x, z, rs).value
    assert 0.0 <= rsd <= 1.0 and 0.0 <= rld <= 1.0 + 1e-12 and 0.0 <= ra <= 1.0
    # RSD against a direct count with RuleSet.coverage
    cx, cz = rs.coverage(x).sum(axis=1), rs.coverage(z).sum(axis=1)
    assert rsd == pytest.approx(np.abs(cx - cz).sum() / (len(rs) * len(x)))


@settings(max_examples=60)
@given(tables_and_rules())
def test_iter_masks_agree_with_rule_mask(data):
    x, z, rs = data
    x = x.copy()
    x.loc[0, "g"] = None  # missing values satisfy no condition
    x.loc[len(x) - 1, "v"] = np.nan
    for i, m in rs.iter_masks(x):
        assert m.tolist() == rs[i].mask(x).tolist()


def test_many_classes_counted_like_bincount():
    # more than 16 classes takes the bincount path of count_rules
    rng = np.random.default_rng(0)
    x = pd.DataFrame({"v": rng.integers(0, 10, 500), "y": rng.integers(0, 20, 500)})
    z = x.assign(v=rng.integers(0, 10, 500))
    rs = RuleSet.from_text("v <= 3 -> 1\nv > 3 AND v <= 6 -> 2\nv > 6 -> 19", "y")
    rr = rule_retention(x, z, rs)
    for d, counts in ((x, rr.x), (z, rr.z)):
        cov = rs.coverage(d)
        for i in range(len(rs)):
            assert (counts.class_counts[i] == np.bincount(d["y"][cov[i]], minlength=20)).all()
        assert counts.n_correct == sum(int(((d["y"] == r.prediction) & cov[i]).sum()) for i, r in enumerate(rs))
