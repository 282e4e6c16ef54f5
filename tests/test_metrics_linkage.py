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
from ppdm.metrics.linkage import exact_join, record_linkage, verbatim_columns


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
    dist = record_linkage(x, z, ["a", "b"], ["c", "d"], ties=ties, exact_joins=False)
    assert dist.value == pytest.approx(want, abs=1e-12)
    # the exact joins only add links: each record's credit is the larger of the two stages
    both = record_linkage(x, z, ["a", "b"], ["c", "d"], ties=ties)
    assert np.all(both.credit >= dist.credit) and both.value >= want - 1e-12
    assert np.all((both.credit == dist.credit) | (both.credit == 1))


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


def test_registered_measure_links_on_every_shared_attribute_whatever_the_quasi_identifiers():
    load_all_measures()
    x = pd.DataFrame({"age": [20.0, 30.0, 40.0, 60.0], "sex": ["f", "m", "f", "m"], "y": list("abab")})
    z = pd.DataFrame({"age": [22.0, 30.0, 50.0, 60.0], "sex": ["f", "f", "f", "f"], "y": list("abab")})
    spec = MEASURES["record_linkage"]
    assert spec.kind == "risk" and spec.direction == "lower" and spec.value_range == (0.0, 1.0)
    # the intruder holding x knows age, sex and the class y (released too). Range of age 40.
    # Exact joins: only y looks verbatim (overlap 4/4; age and sex 2/4), and y leaves two originals
    # per record, so none is joined. Gower with y:
    # z0 (22,f,a): x0 2/40, x2 18/40 → own; z1 (30,f,b): x1 1 (sex), x0 and x2 10/40 + 1 (y) → own
    # z2 (50,f,a): x2 10/40 → own;         z3 (60,f,b): x3 1, x2 20/40 + 1 → own
    for qi in ([], ["age"], ["age", "sex"]):
        sch = Schema(numeric=["age"], categorical=["sex"], class_column="y", quasi_identifiers=qi)
        r = spec.fn(EvaluationContext(x=x, z=z, schema=sch))
        assert r.numeric == ["age"] and r.categorical == ["sex", "y"] and r.value == 1.0, qi
        assert r.exact_join_columns == ["y"] and r.exact_join_linked == 0 and r.lower_bound is None
    # narrowed explicitly to age: z2 (50) ties x2 and x3 (10/40 each), the others are own → 3.5/4
    for opts in ({"record_linkage.columns": "age"}, {"record_linkage": {"columns": ["age"]}}):
        r = spec.fn(EvaluationContext(x=x, z=z, schema=sch, options=opts))
        assert r.numeric == ["age"] and r.categorical == [] and r.value == 0.875
    for bad in ("age,weight", "", "age,age"):
        with pytest.raises(ParameterError, match="record_linkage.columns"):
            spec.fn(EvaluationContext(x=x, z=z, schema=sch, options={"record_linkage.columns": bad}))


def test_exact_join_by_hand():
    # k1 has 13 distinct values, k2 two; z keeps both (overlap 15/16 each) and moves n (overlap 0)
    x = pd.DataFrame({"n": np.arange(16.0), "k1": [1, 1, 2, 2, 3, 3, *range(4, 14)],
                      "k2": list("abaaab") + ["a"] * 10})
    z = x.iloc[[1, 0, 2, 3, 5, 4, *range(6, 16)]].reset_index(drop=True).assign(n=lambda d: d["n"] + 0.5)
    z.loc[6, "k2"] = "b"  # (4, b): matches x6 on k1 only, so it is joined on the prefix {k1}
    z.loc[7, "k1"] = 99  # matches nobody, even on k1
    j = exact_join(x, z, ["n", "k2", "k1"])
    assert j.columns == ["k1", "k2"]  # most distinct values first
    # (1,b) → x1, (1,a) → x0, (2,a) twice → x2 and x3 tie, (3,b) → x5, (3,a) → x4, then one each
    assert j.count.tolist() == [1, 1, 2, 2, 1, 1, 1, 0, *[1] * 8]
    assert j.target.tolist() == [1, 0, -1, -1, 5, 4, 6, -1, *range(8, 16)]
    assert verbatim_columns(x, z, ["n"])[0] == []


def test_partitioned_exact_join_and_linkage_equal_in_memory():
    dd = pytest.importorskip("dask.dataframe")
    from ppdm.metrics.linkage import join_against_parts, join_columns_parts

    x = pd.DataFrame({"n": np.arange(16.0), "k1": [1, 1, 2, 2, 3, 3, *range(4, 14)],
                      "k2": list("abaaab") + ["a"] * 10})
    z = x.iloc[[1, 0, 2, 3, 5, 4, *range(6, 16)]].reset_index(drop=True).assign(n=lambda d: d["n"] + 0.5)
    z.loc[6, "k2"] = "b"
    z.loc[7, "k1"] = 99
    z["k1"] = z["k1"].astype(float)  # 1 and 1.0 are one value, as in memory
    want = exact_join(x, z, ["n", "k2", "k1"])
    X, Z = dd.from_pandas(x, npartitions=3), dd.from_pandas(z, npartitions=3)
    lengths = [len(p) for p in X.partitions]
    cols = join_columns_parts(X, Z, ["n", "k2", "k1"])
    got = [join_against_parts(X, Z.partitions[i].compute(), cols, np.cumsum([0, *lengths[:-1]])) for i in range(3)]
    assert cols == want.columns and np.concatenate([g[0] for g in got]).tolist() == want.count.tolist()
    assert np.concatenate([g[1] for g in got]).tolist() == want.target.tolist()
    # the measure on partitions: exact joins first, then distance, the in-memory value and counts
    sch = Schema(numeric=["n"], categorical=["k2"], class_column="k1")
    load_all_measures()
    mem = MEASURES["record_linkage"].fn(EvaluationContext(x=x, z=z, schema=sch))
    ooc = MEASURES["record_linkage"].fn(EvaluationContext(x=X, z=Z, schema=sch))
    assert ooc.value == pytest.approx(mem.value, abs=1e-12) and ooc.tied == mem.tied
    assert (ooc.exact_join_columns, ooc.exact_join_linked, ooc.exact_join_correct) == \
        (mem.exact_join_columns, mem.exact_join_linked, mem.exact_join_correct) == (["k1", "k2"], 13, 9)
    sampled = MEASURES["record_linkage"].fn(EvaluationContext(x=X, z=Z, schema=sch,
                                                              options={"record_linkage.sample": 8}))
    assert sampled.sample_size == 8 and sampled.exact_join_columns == ["k1", "k2"]
    assert sampled.exact_join_correct <= sampled.linked <= 8


def test_exact_joins_find_what_the_gower_distance_misses():
    # w is kept verbatim, the three categorical columns are rotated by one record: by Gower distance
    # z0 = (1, B, B, B) is 1/3 from x1 = (2, B, B, B) and 3 from x0, so every link fails; joined on
    # w (the longest prefix of [w, p, q, r] any original matches), every record finds its own
    x = pd.DataFrame({"w": [1.0, 2.0, 3.0, 4.0], "p": list("ABCD"), "q": list("ABCD"), "r": list("ABCD")})
    z = x.assign(**{c: np.roll(x[c].to_numpy(), -1) for c in "pqr"})
    assert record_linkage(x, z, exact_joins=False).value == 0.0
    r = record_linkage(x, z)
    assert r.value == 1.0 and r.exact_join_linked == r.exact_join_correct == 4
    assert r.exact_join_columns == ["w", "p", "q", "r"] and r.credit.tolist() == [1, 1, 1, 1]
    # rows 0 and 1 swapped: the join still ties each to one original, right for rows 2 and 3 only;
    # row 1 = (1, B, B, B) is now paired with x1 = (2, B, B, B), its nearest (1/3): linked by distance;
    # row 0 = (2, C, C, C) is 1/3 from x2 and 10/3 from its own x0: not linked. 3 of 4
    shuffled = z.iloc[[1, 0, 2, 3]].reset_index(drop=True)
    r = record_linkage(x, shuffled)
    assert r.exact_join_linked == 4 and r.exact_join_correct == 2 and r.credit.tolist() == [0, 1, 1, 1]
    assert "exact_join_columns" in r.to_dict() and "credit" not in r.to_dict()


def test_unpaired_linkage_is_a_lower_bound_that_reports_exact_joins_without_crediting_them():
    # no released record is a copy (c is replaced), but each is the only original with its w: the join
    # ties all ten to one original each, yet without the pairing it cannot tell a right join from a
    # column shuffled on its own, so only copies are credited (none here) and the value is a lower bound
    x = pd.DataFrame({"w": np.arange(10.0), "c": list("aaaaabbbbb")})
    z = x.iloc[::-1].reset_index(drop=True).assign(c="z")
    r = record_linkage(x, z, ["w"], ["c"], paired=False)
    assert r.value == 0.0 and r.exact == 0 and r.exact_join_linked == 10 and r.exact_join_columns == ["w"]
    assert r.lower_bound and "--private" in r.lower_bound and not r.paired
    # copies are credited: the first three released records copied verbatim, 3 of 10
    z2 = z.copy()
    z2.iloc[:3] = x.iloc[::-1].iloc[:3].to_numpy()
    assert record_linkage(x, z2, ["w"], ["c"], paired=False).value == pytest.approx(0.3)
    assert record_linkage(x, x, ["w"], ["c"]).lower_bound is None


def _adult_measure(z_of, qi: list[str] | None = None) -> tuple[float, int]:
    from dataclasses import replace

    from ppdm.datasets import load

    load_all_measures()
    x, sch = load("adult", missing="drop")
    rng = np.random.default_rng(0)
    z = z_of(x, rng)
    if qi is not None:
        sch = replace(sch, quasi_identifiers=qi)
    r = MEASURES["record_linkage"].fn(EvaluationContext(x=x, z=z, schema=sch))
    return r.value, r.exact_join_linked


def test_adult_with_age_redrawn_is_linked_on_the_other_attributes():
    # only age is redrawn; the declared keys age, sex, race once narrowed the intruder to a random
    # age and two coarse categories (0.0002); who holds x links on the 14 verbatim columns
    value, _ = _adult_measure(lambda x, rng: x.assign(age=rng.integers(17, 91, len(x))), ["age", "sex", "race"])
    assert value > 0.98


def test_adult_with_all_but_fnlwgt_and_income_permuted_is_linked_by_exact_joins():
    # every column but fnlwgt and income shuffled on its own: the Gower distance links 0.0001,
    # a join on fnlwgt (20 263 values) finds the only original for about half the records
    keep = ("fnlwgt", "income")
    value, joined = _adult_measure(lambda x, rng: x.assign(**{c: rng.permutation(x[c].to_numpy())
                                                              for c in x.columns if c not in keep}))
    assert value >= 0.5 and joined > 15_000


def test_wilson_interval_by_hand():
    from ppdm.metrics._common import wilson_interval, wilson_score

    # z = 1.959964 (95 %), z² = 3.841459. k = 5 of n = 10: centre (5 + 1.920729)/13.841459 = 0.5,
    # half-width 1.959964/13.841459 · √(5·5/10 + 0.960365) = 0.141601 · 1.860206 = 0.263407
    assert wilson_interval(5, 10) == pytest.approx((0.236593, 0.763407), abs=1e-6)
    # k = 0: centre = half-width = 1.920729/13.841459 = 0.138766, so the interval starts at 0
    lo, hi = wilson_interval(0, 10)
    assert lo == pytest.approx(0.0, abs=1e-12) and hi == pytest.approx(0.277533, abs=1e-6)
    # fractional credit k = 2.5 of n = 4: centre 4.420729/7.841459 = 0.563764,
    # half 1.959964/7.841459 · √(2.5·1.5/4 + 0.960365) = 0.249949 · 1.377630 = 0.344337
    assert wilson_score(2.5, 4) == pytest.approx((0.563764, 0.344337), abs=1e-6)
    assert wilson_interval(2.5, 4) == pytest.approx((0.219427, 0.908101), abs=1e-6)


def test_unique_rows_as_numpy_unique():
    # the linkage index numbers its groups as np.unique(axis=0) would: rows in lexicographic
    # order (signed values), each row's number among them
    from ppdm.metrics._linkage_search import _unique_rows

    a = np.array([[1, 0], [0, 2], [1, 0], [-1, 5], [0, 2], [0, 1]])
    uniq, inv = _unique_rows(a)
    assert uniq.tolist() == [[-1, 5], [0, 1], [0, 2], [1, 0]]
    assert inv.tolist() == [3, 2, 3, 0, 2, 1]
    b = np.random.default_rng(0).integers(-2, 3, size=(200, 3))
    want_u, want_i = np.unique(b, axis=0, return_inverse=True)
    got_u, got_i = _unique_rows(b)
    np.testing.assert_array_equal(got_u, want_u)
    np.testing.assert_array_equal(got_i, want_i.ravel())
