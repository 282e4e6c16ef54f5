from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ppdm.errors import PPDMError
from ppdm.rules import Condition, Rule, RuleSet


def test_text_format_example_round_trips():
    text = 'age > 40.5 AND capital_gain <= 4737 AND workclass = Private -> "<=50K" [counts "<=50K": 120, ">50K": 34]'
    rs = RuleSet.from_text(text)
    assert rs[0].conditions == (
        Condition("age", ">", 40.5),
        Condition("capital_gain", "<=", 4737),
        Condition("workclass", "=", "Private"),
    )
    assert rs[0].prediction == "<=50K"
    assert rs[0].class_counts == {"<=50K": 120, ">50K": 34}
    assert rs[0].support == 154
    assert rs[0].to_text() == text


def test_coverage_masks():
    df = pd.DataFrame({"age": [50, 30, 41], "job": ["a", "b", None]})
    rs = RuleSet([
        Rule((Condition("age", ">", 40.5),), 1),
        Rule((Condition("job", "in", {"a", "b"}),), 0),
        Rule((Condition("job", "!=", "a"),), 0),
        Rule((), 1),
    ])
    cov = rs.coverage(df)
    assert cov.tolist() == [[True, False, True], [True, True, False], [False, True, False], [True, True, True]]


def test_parse_errors_name_the_line():
    with pytest.raises(PPDMError, match="rule line 2"):
        RuleSet.from_text("a > 1 -> x\na >> 1 -> y")
    with pytest.raises(PPDMError, match="needs a number"):
        Condition("a", "<=", "abc")


values = st.one_of(
    st.integers(-10**6, 10**6),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(min_size=1, max_size=8),
)
names = st.text(min_size=1, max_size=10).filter(lambda s: s.strip() == s and len(f"x{s}x".splitlines()) == 1)


@st.composite
def conditions(draw):
    attr = draw(names)
    op = draw(st.sampled_from(["<=", ">", "<", ">=", "=", "!=", "in", "not in"]))
    if op in ("<=", ">", "<", ">="):
        v = draw(st.one_of(st.integers(-1000, 1000), st.floats(allow_nan=False, allow_infinity=False)))
    elif op in ("in", "not in"):
        v = frozenset(draw(st.lists(values, min_size=1, max_size=4)))
    else:
        v = draw(values)
    return Condition(attr, op, v)


@given(st.lists(st.lists(conditions(), max_size=4), min_size=1, max_size=5), values)
def test_rule_text_round_trips_exactly(conds, pred):
    rs = RuleSet([Rule(tuple(c), pred, {pred: 3}) for c in conds], "cls")
    back = RuleSet.from_text(rs.to_text())
    assert back == rs
    assert [r.class_counts for r in back] == [r.class_counts for r in rs]
