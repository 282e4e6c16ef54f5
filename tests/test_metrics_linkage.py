"""Record linkage over mixed attributes (Gower distance): hand-computed links and ties, and
equality with a full distance matrix on random tables with ties and missing values."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppdm.data.schema import Schema
from ppdm.errors import MeasureNotApplicable, ParameterError, SchemaError
from ppdm.experiments.evaluation import load_all_measures
from ppdm.metrics import MEASURES, EvaluationContext
from ppdm.metrics.linkage import record_linkage


def test_links_by_hand():
    x = pd.DataFrame({"age": [20.0, 30.0, 40.0, 60.0], "sex": ["f", "m", "f", "m"]})
    # ranges over x ∪ z: age 20..60 (40)
    z = pd.DataFrame({"age": [22.0, 30.0, 50.0, 60.0], "sex": ["f", "f", "f", "f"]})
    # z0: d(x0) = 2/40, d(x2) = 18/40 → own nearest
    # z1 (30, f): d(x0) = 10/40, d(x1) = 1 (sex), d(x2) = 10/40 → x0 and x2 tie, own (x1) farther
    # z2 (50, f): d(x2) = 10/40, d(x0) = 30/40 → own
    # z3 (60, f): d(x3) = 1 (sex), d(x2) = 20/40 → x2 nearer: fails
    r = record_linkage(x, z, ["age"], ["sex"])
    assert r.credit.tolist() == [1, 0, 1, 0]
    assert r.value == 0.5 and r.tied == 0 and r.exact == 0
    assert r.to_dict()["n"] == 4 and "credit" not in r.to_dict()


def test_ties_by_hand():
    x = pd.DataFrame({"c": ["a", "a", "b"], "v": [1.0, 1.0, 2.0]})
    z = x.copy()
    # records 0 and 1 are identical: each is tied with the other
    for ties, want in (("fractional", [0.5, 0.5, 1]), ("first", [1, 0, 1]), ("strict", [0, 0, 1])):
        r = record_linkage(x, z, ["v"], ["c"], ties=ties)
        assert r.credit.tolist() == want
    assert record_linkage(x, z, ["v"], ["c"]).tied == 2
    assert record_linkage(x, z, ["v"], ["c"]).exact == 3


def test_missing_values_match_missing_only():
    x = pd.DataFrame({"v": [1.0, np.nan, 3.0], "c": ["a", None, "b"]})
    z = pd.DataFrame({"v": [1.0, np.nan, 2.9], "c": ["a", None, "b"]})
    r = record_linkage(x, z, ["v"], ["c"])
    assert r.value == 1.0 and r.exact == 2


def _reference(x: pd.DataFrame, z: pd.DataFrame, num: list[str], cat: list[str], ties: str) -> float:
    n = len(x)
    d = np.zeros((n, n))
    for c in cat:
        a = z[c].to_numpy(object)[:, None]
        b = x[c].to_numpy(object)[None, :]
        same = (a == b) | (pd.isna(a) & pd.isna(b))
        d += ~same
    for c in num:
        both = np.concatenate([x[c], z[c]])
        both = both[~np.isnan(both)]
        rng = both.max() - both.min() if both.size else 0.0
        s = 1 / rng if rng > 0 else 0.0
        a = z[c].to_numpy(float)[:, None] * s
        b = x[c].to_numpy(float)[None, :] * s
        t = np.abs(a - b)
        t = np.where(np.isnan(a) | np.isnan(b), np.where(np.isnan(a) & np.isnan(b), 0.0, 1.0), t)
        d += t
    credit = 0.0
    for i in range(n):
        tset = np.flatnonzero(d[i] <= d[i].min() * (1 + 1e-12) + 1e-15)
        if i in tset:
            credit += {"fractional": 1 / len(tset), "first": float(tset[0] == i), "strict": float(len(tset) == 1)}[ties]
    return credit / n


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 40), st.sampled_from(["fractional", "first", "strict"]),
       st.booleans())
def test_equals_full_distance_matrix(seed, n, ties, with_missing):
    rng = np.random.default_rng(seed)
    x = pd.DataFrame({"a": rng.integers(0, 4, n) * 0.5, "b": rng.normal(size=n).round(1),
                      "c": rng.choice(["u", "v", "w"], n), "d": rng.choice(["p", "q"], n)})
    z = x.copy()
    z["a"] = z["a"] + rng.integers(-1, 2, n) * 0.5
    z["c"] = np.where(rng.random(n) < 0.3, rng.choice(["u", "v", "w"], n), z["c"])
    if with_missing:
        x.loc[rng.random(n) < 0.2, "b"] = np.nan
        z.loc[rng.random(n) < 0.2, "d"] = None
    want = _reference(x, z, ["a", "b"], ["c", "d"], ties)
    assert record_linkage(x, z, ["a", "b"], ["c", "d"], ties=ties).value == pytest.approx(want, abs=1e-12)


def test_bad_input():
    x = pd.DataFrame({"v": [1.0, 2.0]})
    with pytest.raises(MeasureNotApplicable, match="rows"):
        record_linkage(x, x.iloc[:1])
    with pytest.raises(SchemaError, match="'w'"):
        record_linkage(x, x, ["w"], [])
    with pytest.raises(ParameterError):
        record_linkage(x, x, ties="random")
    with pytest.raises(ParameterError):
        record_linkage(x, x, [], [])


def test_registered_measure_links_on_quasi_identifiers_or_every_attribute():
    load_all_measures()
    x = pd.DataFrame({"age": [20.0, 30.0, 40.0, 60.0], "sex": ["f", "m", "f", "m"], "y": list("abab")})
    z = pd.DataFrame({"age": [22.0, 30.0, 50.0, 60.0], "sex": ["f", "f", "f", "f"], "y": list("abab")})
    spec = MEASURES["record_linkage"]
    assert spec.kind == "risk" and spec.direction == "lower" and spec.value_range == (0.0, 1.0)
    sch = Schema(numeric=["age"], categorical=["sex"], class_column="y")
    assert spec.fn(EvaluationContext(x=x, z=z, schema=sch)).value == 0.5
    sch = Schema(numeric=["age"], categorical=["sex"], class_column="y", quasi_identifiers=["age"])
    r = spec.fn(EvaluationContext(x=x, z=z, schema=sch))
    assert r.numeric == ["age"] and r.categorical == [] and r.value == 0.875  # z2 (50) ties x2 and x3
