"""Attack-based risk after Giomi et al. 2023 (singling out, linkability, inference): rates and
risk by hand and against anonymeter's recorded numbers, the query counter and the
nearest-neighbour search against brute force, hand-made tables whose attacks must succeed
or fail, and bad input."""

from __future__ import annotations

import itertools
import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppdm.attacks._common import Encoded, knn_gower, make_result, nearest, residual, wilson
from ppdm.attacks.inference import inference
from ppdm.attacks.linkability import linkability
from ppdm.attacks.singling_out import (
    EQ,
    GE,
    GT,
    ISNULL,
    LE,
    LT,
    NE,
    NOTNULL,
    Indexed,
    _own_query_counts,
    _univariate_counts,
    control_at_size,
    expected_single_matches,
    query_text,
    singling_out,
)
from ppdm.data.schema import Schema
from ppdm.errors import MeasureNotApplicable, ParameterError, PPDMError
from ppdm.experiments.evaluation import load_all_measures
from ppdm.metrics import MEASURES, EvaluationContext

Z95 = 1.959963984540054


# ------------------------------------------------------------------ rates, risk
def test_wilson_by_hand():
    rate, err = wilson(50, 100, 0.95)
    assert rate == pytest.approx((50 + Z95**2 / 2) / (100 + Z95**2), rel=1e-12)
    assert err == pytest.approx(Z95 / (100 + Z95**2) * math.sqrt(50 * 50 / 100 + Z95**2 / 4), rel=1e-12)
    # no success at all: the estimate is not 0 but (z²/2)/(n + z²)
    assert wilson(0, 2000, 0.95)[0] == pytest.approx(1.92072941 / 2003.84145882, rel=1e-8)


def test_residual_risk_by_hand():
    v, e = residual((0.5, 0.1), (0.2, 0.05))
    assert v == pytest.approx(0.3 / 0.8)
    assert e == pytest.approx(math.sqrt((0.1 / 0.8) ** 2 + (0.05 * 0.5 / 0.64) ** 2))
    r = make_result("x", n_attacks=(10, 10, 10), n_success=0, n_baseline=0, n_control=10, confidence=0.95,
                    settings={})
    assert r.value == 0 and r.ci_low == 0 and 0 <= r.ci_high <= 1  # clipped at 0


@pytest.mark.parametrize("release", ["un10", "ff"])
def test_rates_and_risk_reproduce_anonymeters_numbers(shared_dir, release):
    """anonymeter's recorded rates are Wilson estimates of whole success counts: recovering the
    counts and recomputing gives its rates, errors, risk and interval to 1e-12."""
    ref = json.loads((shared_dir / "oracles" / "anonymeter" / f"adult_{release}_risks.json").read_text())
    z2 = Z95**2
    for name, block in ref.items():
        if not isinstance(block, dict) or "rates" not in block:
            continue
        n = block.get("n_attacks", ref["n_attacks"])
        k = {key: round(block["rates"][key] * (n + z2) - z2 / 2) for key in ("main", "baseline", "control")}
        r = make_result(name, n_attacks=(n, n, n), n_success=k["main"], n_baseline=k["baseline"],
                        n_control=k["control"], confidence=0.95, settings={})
        assert r.main_rate == pytest.approx(block["rates"]["main"], rel=1e-12), name
        assert r.main_error == pytest.approx(block["rates"]["main_err"], rel=1e-12), name
        assert r.control_error == pytest.approx(block["rates"]["control_err"], rel=1e-12), name
        assert r.value == pytest.approx(block["risk"]["value"], rel=1e-12, abs=1e-15), name
        assert (r.ci_low, r.ci_high) == pytest.approx(tuple(block["risk"]["ci"]), rel=1e-12, abs=1e-15), name


# ------------------------------------------------------------- query counting
OPS = [EQ, NE, LT, GT, LE, GE, ISNULL, NOTNULL]


def _brute_count(data: np.ndarray, col, op, val) -> int:
    ok = np.ones(len(data), dtype=bool)
    for a, o, w in zip(col, op, val, strict=True):
        v = data[:, a]
        present = ~np.isnan(v)
        with np.errstate(invalid="ignore"):
            cond = {EQ: v == w, NE: v != w, LT: v < w, GT: v > w, LE: v <= w, GE: v >= w}.get(int(o))
        if o == ISNULL:
            cond = ~present
        elif o == NOTNULL:
            cond = present
        else:
            cond = cond & present & (w == w)
        ok &= cond
    return int(ok.sum())


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 40), st.integers(1, 3))
def test_query_counts_equal_brute_force(seed, n, k):
    rng = np.random.default_rng(seed)
    data = rng.integers(0, 4, size=(n, 4)).astype(float)
    data[rng.random(data.shape) < 0.15] = np.nan
    nq = 30
    col = np.stack([rng.choice(4, size=k, replace=False) for _ in range(nq)])
    op = rng.choice(OPS, size=(nq, k))
    val = rng.integers(-1, 5, size=(nq, k)).astype(float)
    val[rng.random(val.shape) < 0.1] = np.nan
    want = np.array([_brute_count(data, col[i], op[i], val[i]) for i in range(nq)])
    tab = Indexed.of(data)
    np.testing.assert_array_equal(tab.count((col, op, val), None), want)
    np.testing.assert_array_equal(tab.count((col, op, val), 2), np.minimum(want, 2))
    if k == 1:
        np.testing.assert_array_equal(_univariate_counts(data, col[:, 0], op[:, 0], val[:, 0]), want)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 40), st.integers(1, 4))
def test_own_query_counts_equal_brute_force(seed, n, k):
    # the multivariate search's counter: queries made from records of the table itself (== on a
    # categorical column, >= / <= on a numeric one above / not above its median, is missing);
    # its columns must be those of the k smallest random numbers, ascending, as np.argpartition
    # picks them, and its counts (capped at 2) those of a brute-force scan, in both layouts
    rng = np.random.default_rng(seed)
    m = 5
    data = rng.integers(0, 4, size=(n, m)).astype(float)
    data[:, 3:] += rng.random((n, 2)).round(1)  # two numeric columns, ties included
    data[rng.random(data.shape) < 0.15] = np.nan
    is_num = np.array([False, False, False, True, True])
    with warnings.catch_warnings():  # a column missing everywhere has no median
        warnings.simplefilter("ignore", RuntimeWarning)
        medians = np.where(is_num, np.nanmedian(data, axis=0), np.nan)
    rows = rng.integers(0, n, size=50)
    u = rng.random((50, m))
    want_cols = np.sort(np.argpartition(u, k - 1, axis=1)[:, :k], axis=1)
    vals = data[rows[:, None], want_cols]
    ops = np.where(np.isnan(vals), ISNULL, np.where(is_num[want_cols], np.where(vals > medians[want_cols], GE, LE), EQ))
    want = np.array([min(_brute_count(data, want_cols[i], ops[i], vals[i]), 2) for i in range(50)])
    tab = Indexed.of(data)
    run_lo, run_hi = tab.runs()
    order, _, n_present = tab._sort()
    for by_col in (np.take(run_lo, order, axis=0), run_lo[None]):
        cols = np.empty((50, k), dtype=np.int64)
        got = _own_query_counts(rows, u, k, tab.data, is_num, medians, order, run_lo, run_hi, by_col, n_present,
                                cols, 3)
        np.testing.assert_array_equal(cols, want_cols)
        np.testing.assert_array_equal(got, want)


def test_expected_single_matches_by_enumeration():
    counts = np.array([1, 2, 0, 4])
    m, s = 4, 2
    # enumerate the 6 pairs of records 0..3; query q matches records 0..counts[q]-1
    total = 0
    for pair in itertools.combinations(range(m), s):
        total += sum(sum(1 for r in pair if r < c) == 1 for c in counts)
    assert expected_single_matches(counts, m, s) == pytest.approx(total / 6)
    assert control_at_size(counts, m, m) == 1  # same size: the plain count of single matches
    assert control_at_size(counts, m, 2) == pytest.approx(total / 6)
    # a larger original makes single matches rarer for these queries
    assert control_at_size(np.array([1, 1, 3, 5, 8] * 50), 2000, 4000) <= 2 * 50


# ------------------------------------------------------------ nearest neighbours
def _brute_knn(q: np.ndarray, c: np.ndarray, is_num: np.ndarray, ranges: np.ndarray, k: int, prio: np.ndarray):
    out = []
    for row in q:
        d = np.zeros(len(c))
        for a in range(len(row)):
            u, v = row[a], c[:, a]
            miss = np.isnan(u) | np.isnan(v)
            both = np.isnan(u) & np.isnan(v)
            t = np.abs(u / ranges[a] - v / ranges[a]) if is_num[a] else (u != v).astype(float)
            d += np.where(miss, np.where(both, 0.0, 1.0), t)
        out.append(np.lexsort((prio, d))[:k])
    return np.array(out)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 30), st.integers(1, 4), st.integers(0, 3), st.integers(0, 2))
def test_nearest_neighbours_equal_brute_force(seed, n, k, n_cat, n_num):
    rng = np.random.default_rng(seed)
    m = n_cat + n_num
    if m == 0:
        return
    cols = [f"c{j}" for j in range(m)]
    is_num = np.array([j >= n_cat for j in range(m)])
    tabs = []
    for rows in (n, 7):
        t = np.where(is_num, rng.integers(0, 3, size=(rows, m)) * 0.5, rng.integers(0, 3, size=(rows, m)))
        t = t.astype(float)
        t[rng.random(t.shape) < 0.1] = np.nan
        tabs.append(t)
    ranges = np.array([float(np.nanmax(np.r_[tabs[0][:, a], tabs[1][:, a]]) - np.nanmin(np.r_[tabs[0][:, a], tabs[1][:, a]]))
                       if is_num[a] and not np.isnan(np.r_[tabs[0][:, a], tabs[1][:, a]]).all() else 1.0
                       for a in range(m)])
    ranges[ranges == 0] = 1.0
    enc = Encoded(columns=cols, is_numeric=is_num, tables=tabs, ranges=ranges)
    got = nearest(enc, 1, np.arange(7), 0, cols, k, np.random.default_rng(seed))
    prio = np.random.default_rng(seed).permutation(n)
    want = _brute_knn(tabs[1], tabs[0], is_num, ranges, min(k, n), prio)
    np.testing.assert_array_equal(got, want)


def test_knn_kernel_visits_groups_in_distance_order():
    # one categorical column, three groups; the query matches group "1": its member wins
    q_cat = np.array([[1]], dtype=np.int32)
    q_num = np.zeros((1, 0))
    g_codes = np.array([[0, 1, 2]], dtype=np.int32)
    g_start = np.array([0, 2, 3, 5])
    # grouped row j has priority j and original index 4 - j
    idx = knn_gower(q_cat, q_num, g_codes, g_start, g_start[1:], -1, np.zeros((5, 0)), np.arange(5),
                    np.array([4, 3, 2, 1, 0]), 2, 1, np.arange(1))
    assert idx[0, 0] == 2  # row 2, the only member of group 1
    assert idx[0, 1] == 4  # then row 0, the lowest priority among the rest (all at distance 1)


def test_knn_kernel_walks_out_from_the_query_on_the_pivot():
    # one group, sorted by the pivot (column 0): 0.0, 0.2, 0.3, 0.9, then a record missing it.
    # Query (0.25, 0.5): distances 0.25+0.5 = 0.75, 0.05+0.4 = 0.45, 0.05+0.0 = 0.05,
    # 0.65+0.5 = 1.15, and 1 (missing pivot) + 0.1 = 1.1 → nearest rows 2, then 1
    c_num = np.array([[0.0, 0.0], [0.2, 0.1], [0.3, 0.5], [0.9, 0.0], [np.nan, 0.4]])
    g_start = np.array([0, 5])
    g_present = np.array([4])
    idx = knn_gower(np.zeros((1, 0), np.int32), np.array([[0.25, 0.5]]), np.zeros((0, 1), np.int32), g_start,
                    g_present, 0, c_num, np.arange(5), np.arange(5), 2, 1, np.arange(1))
    assert idx[0].tolist() == [2, 1]
    # a query missing the pivot scans every record: the missing one is nearest (0 + 0.1)
    idx = knn_gower(np.zeros((1, 0), np.int32), np.array([[np.nan, 0.5]]), np.zeros((0, 1), np.int32), g_start,
                    g_present, 0, c_num, np.arange(5), np.arange(5), 1, 1, np.arange(1))
    assert idx[0].tolist() == [4]


# ------------------------------------------------------ attacks on made-up tables
def _people(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"age": rng.integers(18, 90, n), "zip": rng.integers(10000, 99999, n).astype(str),
                         "sex": rng.choice(["f", "m"], n), "income": rng.choice(["low", "high"], n),
                         "height": rng.normal(170, 10, n).round(2)})


def test_a_copy_of_the_originals_is_singled_out_and_the_control_is_not():
    ori, control = _people(400, 1), _people(400, 2)
    r = singling_out(ori, ori.copy(), control, mode="univariate", n_attacks=100, random_state=0)
    # every query singles out a record of the release; the release is the originals
    assert r.n_success == r.settings["n_queries"] == 100
    assert r.n_control_success < 10 and r.value > 0.8 and r.ci_low <= r.value <= r.ci_high
    assert " == " in query_text(r.detail, 0) or "<=" in query_text(r.detail, 0) or ">=" in query_text(r.detail, 0)
    m = singling_out(ori, ori.copy(), control, mode="multivariate", n_attacks=50, n_cols=2, random_state=0)
    assert m.n_success == 50 and m.value > 0.5
    # a release with no record of the originals' values singles nobody out
    other = _people(400, 3)
    assert singling_out(ori, other, control, mode="univariate", n_attacks=100, random_state=0).value < 0.2


def test_linkability_of_a_copy_and_of_noise():
    ori, control = _people(300, 1), _people(300, 2)
    # zip and height are (almost) unique: on a copy both halves find the target itself
    r = linkability(ori, ori.copy(), control, (["age", "zip"], ["height", "sex"]), n_attacks=200, random_state=0)
    assert r.n_success >= 190 and r.n_control_success < 10 and r.value > 0.9
    # the second half (sex, income) ties with a quarter of the table: a random pick rarely links
    weak = linkability(ori, ori.copy(), control, (["age", "zip"], ["sex", "income"]), n_attacks=200, random_state=0)
    assert weak.main_rate < 0.1
    wide = linkability(ori, ori.copy(), control, (["age", "zip"], ["sex", "income"]), n_attacks=200, n_neighbors=10,
                       random_state=0)
    assert wide.main_rate > weak.main_rate
    # a release of other people links nobody
    assert linkability(ori, _people(300, 3), control, (["age", "zip"], ["height", "sex"]), n_attacks=200,
                       random_state=0).value < 0.1


def test_inference_of_a_copy_and_of_a_shuffled_secret():
    ori, control = _people(300, 1), _people(300, 2)
    r = inference(ori, ori.copy(), control, "income", n_attacks=200, random_state=0)
    assert r.n_success == 200 and r.value > 0.5  # each target finds itself
    shuffled = ori.assign(income=np.random.default_rng(0).permutation(ori["income"].to_numpy()))
    r = inference(ori, shuffled, control, "income", n_attacks=200, random_state=0)
    assert r.value < 0.25 and r.ci_low == 0.0
    # a numeric secret within 5 %
    num = inference(ori, ori.assign(age=ori["age"] * 1.04), control, "age", n_attacks=200, random_state=0)
    assert num.settings["regression"] and num.n_success == 200


def test_same_seed_same_result():
    ori, control = _people(200, 1), _people(200, 2)
    for f in (lambda s: singling_out(ori, ori, control, mode="multivariate", n_attacks=20, n_cols=2, random_state=s),
              lambda s: linkability(ori, ori, control, (["age"], ["zip"]), n_attacks=50, random_state=s),
              lambda s: inference(ori, ori, control, "sex", n_attacks=50, random_state=s)):
        assert f(7).to_dict() == f(7).to_dict()
        f(None)  # OS entropy works


# ------------------------------------------------------------------- bad input
def test_bad_input_is_refused_in_one_sentence():
    ori, control = _people(50, 1), _people(50, 2)
    with pytest.raises(MeasureNotApplicable, match="control set"):
        singling_out(ori, ori, None, mode="univariate")
    with pytest.raises(PPDMError, match="control set's columns differ") as e:
        inference(ori, ori, control.drop(columns="zip"), "sex")
    assert "zip" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(PPDMError, match="extra"):
        linkability(ori, ori, control.assign(x=1), (["age"], ["zip"]))
    with pytest.raises(ParameterError, match="overlap"):
        linkability(ori, ori, control, (["age"], ["age"]))
    with pytest.raises(ParameterError):
        singling_out(ori, ori, control, mode="both")
    with pytest.raises(ParameterError):
        inference(ori, ori, control, "sex", n_attacks=0)
    with pytest.raises(ParameterError):
        singling_out(ori, ori, control, n_cols=9)


# --------------------------------------------------------- registered measures
def test_registered_attacks_use_the_control_set():
    load_all_measures()
    ori, control = _people(200, 1), _people(200, 2)
    sch = Schema(numeric=["age"], categorical=["zip", "sex"], class_column="income", sensitive=["sex"])
    names = ["singling_out_univariate", "singling_out_multivariate", "linkability", "inference"]
    for name in names:
        spec = MEASURES[name]
        assert spec.kind == "risk" and spec.direction == "lower" and spec.value_range == (0.0, 1.0)
        with pytest.raises(MeasureNotApplicable, match="control"):
            spec.fn(EvaluationContext(x=ori, z=ori.copy(), schema=sch))
        ctx = EvaluationContext(x=ori, z=ori.copy(), schema=sch, control=control, random_state=0,
                                options={"singling_out_multivariate.n_attacks": 20, "n_attacks": 999})
        r = spec.fn(ctx)
        assert 0.0 <= r.value <= 1.0
        d = r.to_dict()
        assert "detail" not in d and "results" not in d
        json.dumps(d)
    inf = MEASURES["inference"].fn(EvaluationContext(x=ori, z=ori.copy(), schema=sch, control=control,
                                                     random_state=0))
    assert inf.secrets == ["sex"] and list(inf.per_secret["secret"]) == ["sex"]
    link = MEASURES["linkability"].fn(EvaluationContext(x=ori, z=ori.copy(), schema=sch, control=control,
                                                        random_state=0, options={"linkability.aux_cols": "age|zip"}))
    assert link.settings["aux_cols"] == [["age"], ["zip"]]
    bad = EvaluationContext(x=ori, z=ori, schema=sch, control=control.drop(columns="zip"))
    with pytest.raises(PPDMError, match="differ"):
        MEASURES["linkability"].fn(bad)
