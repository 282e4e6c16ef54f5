from __future__ import annotations

import datetime as dt
import math

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ppdm.errors import PPDMError
from ppdm.rules import Condition, Rule, RuleSet
from ppdm.rules.core import days_of, split_point, split_time


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


dates = st.datetimes(min_value=dt.datetime(1700, 1, 1), max_value=dt.datetime(2200, 1, 1)).map(pd.Timestamp)
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
        v = draw(st.one_of(st.integers(-1000, 1000), st.floats(allow_nan=False, allow_infinity=False), dates))
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


@pytest.mark.parametrize("lo,hi,t", [
    (40, 41, 40),                      # whole numbers: the value itself, not 40.5
    (2407, 2444, 2430),                # the roundest number between, nearest the midpoint
    (18404.46, 18404.47, 18404.46),    # two decimals in the data, two in the rule
    (18403.2, 18404.8, 18404),         # no record between: fewer digits
    (15000, 35000, 20000),
    (-5, 3, 0),
    (-0.5, -0.25, -0.4),
    (0.1, 0.1000000001, 0.1),
    (1e200, 1.5e200, 1e200),
])
def test_split_point_is_the_roundest_number_between(lo, hi, t):
    got = split_point(lo, hi)
    assert got == t and lo <= got < hi
    assert repr(got) == repr(t)  # an int prints as one (age <= 40)


@given(st.floats(-1e300, 1e300, allow_nan=False), st.floats(-1e300, 1e300, allow_nan=False))
def test_split_point_keeps_every_value_on_its_side_with_no_more_digits(a, b):
    lo, hi = min(a, b), max(a, b)
    if lo == hi:
        return
    t = split_point(lo, hi)
    assert lo <= t < hi

    def digits(v: float) -> int:
        mant = repr(float(v)).lstrip("-").split("e")[0].replace(".", "").strip("0")
        return len(mant)

    assert digits(t) <= digits(lo)


def test_split_time_is_a_date_between_two_dates():
    d = days_of(pd.Timestamp("1958-01-01"))
    assert split_time(d, d + 1) == pd.Timestamp("1958-01-01")
    t = split_time(d, d + 40)
    assert t == t.normalize() and d <= days_of(t) < d + 40
    # with times of day, the coarsest unit that fits: a whole hour between 06:10 and 06:50 is not there,
    # so a whole minute near the midpoint
    lo, hi = d + (6 * 60 + 10) / 1440, d + (6 * 60 + 50) / 1440
    t = split_time(lo, hi)
    assert t == pd.Timestamp("1958-01-01 06:30") and lo <= days_of(t) < hi


def test_date_conditions_read_and_hold_on_dates_and_on_their_time_axis():
    from ppdm.data.types import working_frame

    rs = RuleSet.from_text('birth_date <= 1958-01-01 AND seen > "2020-01-01 12:30:00" -> a')
    c1, c2 = rs[0].conditions
    assert c1.value == pd.Timestamp("1958-01-01") and math.isclose(c1.number, -4383.0)
    assert c2.value == pd.Timestamp("2020-01-01 12:30")
    df = pd.DataFrame({"birth_date": pd.to_datetime(["1957-12-31", "1958-01-01", "1958-01-02"]),
                       "seen": pd.to_datetime(["2020-01-02", "2020-01-02", "2020-01-02"])})
    assert rs.coverage(df).tolist() == [[True, True, False]]
    assert rs.coverage(working_frame(df, ["birth_date", "seen"])).tolist() == [[True, True, False]]
    assert rs.to_text() == 'birth_date <= 1958-01-01 AND seen > "2020-01-01 12:30:00" -> a\n'
    with pytest.raises(PPDMError, match="needs a number or a date"):
        Condition("a", "<=", "1958-13-45x")
