"""Disclosure-risk measures: spec examples, brute-force references, extremes, properties."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppdm.errors import MeasureNotApplicable, ParameterError, SchemaError
from ppdm.metrics.info_loss import il1s, il_metrics
from ppdm.metrics.risk import ddr, idr, il_dr_combine, il_dr_score, sers

X = np.array([[1.0, 4], [2, 2], [3, 8], [4, 6]])
Z_PAIRS = np.array([[1.5, 3], [1.5, 3], [3.5, 7], [3.5, 7]])
Z_SHUFFLED = np.array([[2.2, 2.1], [1.1, 4.2], [3.4, 7.7], [3.9, 6.1]])


# ----------------------------------------------------------------------- DDR
def ddr_reference(x: np.ndarray, z: np.ndarray, standardize: str, ties: str) -> float:
    """Full-matrix record linkage, written straight from the definition."""
    def zs(a, m, s):
        return (a - m) / np.where(s > 0, s, 1.0)

    if standardize == "per_file":
        xs, zz = zs(x, x.mean(0), x.std(0, ddof=1)), zs(z, z.mean(0), z.std(0, ddof=1))
    elif standardize == "original":
        xs, zz = zs(x, x.mean(0), x.std(0, ddof=1)), zs(z, x.mean(0), x.std(0, ddof=1))
    else:
        xs, zz = x, z
    d = ((zz[:, None, :] - xs[None, :, :]) ** 2).sum(-1)
    credit = 0.0
    for i in range(len(z)):
        t = np.flatnonzero(d[i] <= d[i].min() * (1 + 1e-12) + 1e-15)
        if i in t:
            credit += {"fractional": 1 / len(t), "first": float(t[0] == i), "strict": float(len(t) == 1)}[ties]
    return credit / len(z)


def test_ddr_spec_examples():
    assert ddr(X, Z_SHUFFLED).value == 0.5
    for method in ("tree", "kdtree", "brute", "blas"):
        assert ddr(X, Z_PAIRS, ties="fractional", method=method).value == 0.5
        assert ddr(X, Z_PAIRS, ties="first", method=method).value == 0.5
        assert ddr(X, Z_PAIRS, ties="strict", method=method).value == 0.0
    r = ddr(X, Z_PAIRS)
    assert r.tied == 4 and r.linked == 2.0
    assert ddr(X, Z_SHUFFLED, percent=True).value == 50.0


def test_ddr_of_x_against_itself_is_one():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(200, 4))
    for method in ("tree", "kdtree", "brute", "blas"):
        assert ddr(x, x, method=method).value == 1.0
    # a copy with every record moved to another's place links nobody
    assert ddr(x, np.roll(x, 1, axis=0)).value == 0.0


@pytest.mark.parametrize("standardize", ["per_file", "original", "none"])
@pytest.mark.parametrize("ties", ["fractional", "first", "strict"])
def test_ddr_equals_brute_force_with_many_ties(standardize, ties):
    rng = np.random.default_rng(7)
    x = rng.integers(0, 4, size=(120, 3)).astype(float)  # duplicated originals → ties
    z = np.round(x + rng.normal(0, 0.7, size=x.shape))
    ref = ddr_reference(x, z, standardize, ties)
    for method in ("tree", "kdtree", "brute", "blas"):
        assert ddr(x, z, standardize=standardize, ties=ties, method=method).value == pytest.approx(ref, abs=1e-12)


@settings(max_examples=30)
@given(st.integers(0, 10_000), st.sampled_from(["fractional", "first", "strict"]))
def test_ddr_properties(seed, ties):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 3, size=(15, 2)).astype(float)
    z = x + rng.integers(-1, 2, size=x.shape)
    v = ddr(x, z, ties=ties).value
    assert 0.0 <= v <= 1.0
    assert v == pytest.approx(ddr_reference(x, z, "per_file", ties), abs=1e-12)
    # the strict count never exceeds the fractional credit
    assert ddr(x, z, ties="strict").value <= ddr(x, z, ties="fractional").value + 1e-12


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 40), st.integers(1, 4), st.sampled_from([0.0, 0.5, 1e6]),
       st.booleans())
def test_ddr_blas_links_are_the_brute_force_links(seed, n, m, offset, small_tiles):
    """Nearest originals, tie counts and first indices of the product search equal the
    brute force's exactly, with exact ties, duplicated records and a large offset (which
    the expansion ‖x‖² − 2 z·x would turn into rounding error without centring)."""
    import ppdm.metrics._risk_ddr_search as search  # where _link_blas reads its tile sizes

    with pytest.MonkeyPatch.context() as mp:
        if small_tiles:  # several tiles per row, and candidate lists that overflow
            mp.setattr(search, "BLAS_ROWS", 3)
            mp.setattr(search, "BLAS_COLS", 5)
            mp.setattr(search, "BLAS_CANDIDATES", 2)
        _check_blas_against_brute(seed, n, m, offset)


def _check_blas_against_brute(seed: int, n: int, m: int, offset: float) -> None:
    import ppdm.metrics.risk as risk

    rng = np.random.default_rng(seed)
    x = rng.integers(0, 3, size=(n, m)) * 0.1 + offset
    z = x + rng.integers(-1, 2, size=x.shape) * 0.1
    dup = rng.random(n) < 0.3
    z[dup] = x[rng.integers(0, n, size=int(dup.sum()))]  # copies of (other) originals
    x, z = np.ascontiguousarray(x), np.ascontiguousarray(z)
    got = risk._link_blas(x, z)
    want = risk._brute(x, z)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)
    for ties in ("fractional", "first", "strict"):
        assert ddr(x, z, ties=ties, method="blas").value == ddr(x, z, ties=ties, method="brute").value


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from([1e-9, 1e-3, 1.0]))
def test_ddr_blas_links_on_continuous_data(seed, sd):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(300, 5))
    z = x + rng.normal(0, sd, size=x.shape)
    import ppdm.metrics.risk as risk

    for g, w in zip(risk._link_blas(x, z), risk._brute(x, z), strict=True):
        np.testing.assert_array_equal(g, w)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 60), st.integers(1, 5), st.sampled_from([0.0, 1e6]),
       st.sampled_from(["ties", "continuous", "strong"]), st.booleans())
def test_ddr_tree_links_are_the_brute_force_links(seed, n, m, offset, kind, tiny_budget):
    """The own-ball kd-tree search decides every link, tie count and first index as the
    brute force does: duplicated records, exact ties, a large offset, strong masking, and
    a leaf budget so small that most records fall back to the product search."""
    import ppdm.metrics._risk_ddr_search as search  # where _link_tree reads its leaf budget
    import ppdm.metrics.risk as risk

    rng = np.random.default_rng(seed)
    if kind == "ties":
        x = rng.integers(0, 3, size=(n, m)) * 0.1 + offset
        z = x + rng.integers(-1, 2, size=x.shape) * 0.1
        dup = rng.random(n) < 0.3
        z[dup] = x[rng.integers(0, n, size=int(dup.sum()))]
    else:
        x = rng.normal(size=(n, m)) + offset
        z = x + rng.normal(0, 0.2 if kind == "continuous" else 2.0, size=x.shape)
    x, z = np.ascontiguousarray(x), np.ascontiguousarray(z)
    with pytest.MonkeyPatch.context() as mp:
        if tiny_budget:
            mp.setattr(search, "TREE_LEAF_BUDGET", 0.0)
        own, count, first = risk._link_tree(x, z)
    w_own, w_count, w_first = risk._brute(x, z)
    np.testing.assert_array_equal(own, w_own)
    np.testing.assert_array_equal(count[own], w_count[own])
    np.testing.assert_array_equal(first[own], w_first[own])


def test_ddr_tree_with_small_leaves_and_many_records():
    import ppdm.metrics.risk as risk
    from ppdm.metrics._ballsearch import build_tree, own_ball_search

    rng = np.random.default_rng(11)
    x = np.round(rng.normal(size=(3000, 4)), 1)  # many exact ties
    z = np.round(x + rng.normal(0, 0.1, size=x.shape), 1)
    for leaf in (1, 2, 7):
        st_, cnt, fst = own_ball_search(x, z, np.arange(len(x)), *build_tree(x, leaf), risk.TIE_REL_TOL,
                                       risk.TIE_ABS_TOL, 10**9, 3)
        w_own, w_count, w_first = risk._brute(x, z)
        np.testing.assert_array_equal(st_ == 1, w_own)
        np.testing.assert_array_equal(cnt[w_own], w_count[w_own])
        np.testing.assert_array_equal(fst[w_own], w_first[w_own])


def test_ddr_rejects_bad_parameters():
    with pytest.raises(ParameterError):
        ddr(X, Z_PAIRS, ties="random")
    with pytest.raises(ParameterError):
        ddr(X, Z_PAIRS, standardize="robust")
    with pytest.raises(ParameterError):
        ddr(X, Z_PAIRS, method="ball")


# ----------------------------------------------------------------------- IDR
def test_idr_spec_example():
    zm = np.array([[0.0, 0], [0, 0], [4, 4], [4, 4]])
    xo = np.array([[1.0, 3], [-1, 0.5], [4, 4], [6, 6]])
    r = idr(xo, zm, k=0.5)
    assert r.value == 0.5 and r.at_risk == 2
    assert idr(xo, zm, k=0.5, rule="legacy").value == 0.75
    assert idr(X, Z_PAIRS, k=0.05).value == 0.0
    assert idr(X, Z_PAIRS, k=0.05, rule="legacy").value == 0.0
    assert idr(X, Z_PAIRS, k=0.5).value == 1.0


def test_idr_bounds_are_inclusive_and_use_the_masked_sd():
    zm = np.array([[0.0], [2.0]])  # sd = sqrt(2)
    half = 0.5 * math.sqrt(2)
    xo = np.array([[half], [2.0 + half + 1e-9]])
    assert idr(xo, zm, k=0.5).at_risk == 1


def test_idr_self_and_legacy_single_column():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(30, 3))
    assert idr(x, x).value == 1.0
    # with one attribute the legacy rule always puts every record at risk
    assert idr(x[:, :1], x[:, :1] + 100, rule="legacy").value == 1.0
    with pytest.raises(ParameterError):
        idr(x, x, k=-1)


# --------------------------------------------------------------------- IL-DR
def test_il_dr_arithmetic_of_paper_table_1():
    # paper 003 Table 1, MDAV exponential k = 167: IL metrics 103.26, IL1s 542.51, IDR 0.05, DDR 0.00
    v = il_dr_combine(103.26, 542.51, 0.00, 0.05)
    assert v == pytest.approx(161.455, abs=1e-9)
    assert round(v, 2) == 161.45
    # the next row (k = 100): IL metrics 43.06, IL1s 179.47, IDR 0.24, DDR 0.03 → 55.70
    assert round(il_dr_combine(43.06, 179.47, 0.03, 0.24), 2) == 55.70
    assert il_dr_combine(1, 2, 0.5, 0.5, dr_scale=100) == pytest.approx(0.25 * 103)


def test_il_dr_score_from_tables():
    r = il_dr_score(X, Z_PAIRS)
    assert r.il_metrics == pytest.approx(il_metrics(X, Z_PAIRS).value)
    assert r.il1s == pytest.approx(il1s(X, Z_PAIRS).value)
    assert r.ddr == 0.5 and r.idr == 0.0
    assert r.value == pytest.approx(0.25 * (r.il_metrics + r.il1s + 0.5 + 0.0))


# ---------------------------------------------------------------------- SERS
def sers_reference(o: pd.DataFrame, p: pd.DataFrame, numeric, categorical, domain="union") -> float:
    """Paper 004 eq. 6–8 with the full n_O × n_P matrix."""
    m = len(numeric) + len(categorical)
    d = np.zeros((len(o), len(p)))
    for c in numeric:
        a, b = o[c].to_numpy(float), p[c].to_numpy(float)
        lo, hi = (min(a.min(), b.min()), max(a.max(), b.max())) if domain == "union" else (a.min(), a.max())
        if hi > lo:
            d += np.abs(a[:, None] - b[None, :]) / (hi - lo)
    for c in categorical:
        d += (o[c].to_numpy()[:, None] != p[c].to_numpy()[None, :]).astype(float)
    s = np.clip(1 - d / m, 0, None)
    h = []
    for row in s:
        if row.sum() == 0:
            continue
        q = row / row.sum()
        q = q[q > 0]
        h.append(-(q * np.log2(q)).sum())
    return float(np.mean(h))


def test_sers_spec_examples():
    assert sers(pd.DataFrame({"a": [0.0, 1]}), pd.DataFrame({"a": [0.0, 1]})).value == 0.0
    assert sers(pd.DataFrame({"a": [0.0, 1]}), pd.DataFrame({"a": [0.5, 0.5]})).value == pytest.approx(1.0)
    o = pd.DataFrame({"a": [0, 10], "b": ["a", "b"]})
    p = pd.DataFrame({"a": [0, 10], "b": ["b", "b"]})
    r = sers(o, p, ["a"], ["b"], return_records=True)
    assert r.record_entropy[0] == pytest.approx(0.0)
    assert r.record_entropy[1] == pytest.approx(0.918296, abs=1e-6)
    assert r.value == pytest.approx(0.459148, abs=1e-6)


def _mixed(n: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    o = pd.DataFrame({"u": rng.normal(size=n), "v": rng.integers(0, 50, n).astype(float),
                      "c": rng.choice(list("abc"), n), "d": rng.choice([1, 2], n)})
    p = o.copy()
    p["u"] = p["u"] + rng.normal(0, 0.3, n)
    p["c"] = rng.permutation(p["c"].to_numpy())
    return o, p


@pytest.mark.parametrize("domain", ["union", "original"])
def test_sers_equals_naive_reference(domain):
    o, p = _mixed(150, 1)
    exact = sers(o, p, ["u", "v"], ["c", "d"], domain=domain)
    assert exact.value == pytest.approx(sers_reference(o, p, ["u", "v"], ["c", "d"], domain), rel=1e-10)
    assert exact.exact and exact.undefined == 0


def test_sers_unequal_sizes_and_normalization():
    o, p = _mixed(60, 2)
    p = p.iloc[:45].reset_index(drop=True)
    r = sers(o, p, ["u", "v"], ["c", "d"])
    assert r.value == pytest.approx(sers_reference(o, p, ["u", "v"], ["c", "d"]), rel=1e-10)
    assert sers(o, p, ["u", "v"], ["c", "d"], normalized=True).value == pytest.approx(r.value / math.log2(45))


def test_sers_identical_records_are_most_exposed_among_copies():
    # x against itself: entropy is below that of a release with every record made alike
    o, _ = _mixed(80, 3)
    self_value = sers(o, o, ["u", "v"], ["c", "d"]).value
    flat = o.copy()
    flat["u"], flat["v"] = flat["u"].mean(), flat["v"].mean()
    flat["c"], flat["d"] = "a", 1
    uniform = sers(o, flat, ["u", "v"], ["c", "d"])
    assert uniform.value == pytest.approx(math.log2(80))  # every S_ik equal: the maximum
    assert self_value < uniform.value


def test_sers_sample_estimate_covers_exact():
    o, p = _mixed(400, 4)
    exact = sers(o, p, ["u", "v"], ["c", "d"]).value
    est = sers(o, p, ["u", "v"], ["c", "d"], sample=200, random_state=5)
    assert not est.exact and est.sample_size == 200
    assert est.ci_low <= exact <= est.ci_high
    assert est.value == sers(o, p, ["u", "v"], ["c", "d"], sample=200, random_state=5).value


def test_sers_errors():
    o, p = _mixed(10, 0)
    with pytest.raises(SchemaError, match="'zz'"):
        sers(o, p, ["zz"], [])
    with pytest.raises(MeasureNotApplicable):  # no attribute: the table does not allow SERS
        sers(o, p, [], [])
    with pytest.raises(ParameterError):
        sers(o, p, domain="both")


@settings(max_examples=25)
@given(st.integers(0, 10_000), st.integers(2, 12), st.integers(2, 12))
def test_sers_range(seed, n_o, n_p):
    rng = np.random.default_rng(seed)
    o = pd.DataFrame({"a": rng.normal(size=n_o), "k": rng.choice(["x", "y"], n_o)})
    p = pd.DataFrame({"a": rng.normal(size=n_p), "k": rng.choice(["x", "y"], n_p)})
    r = sers(o, p, ["a"], ["k"])
    # entropy of a distribution over n_P records lies in [0, log2 n_P]
    assert -1e-12 <= r.value <= math.log2(n_p) + 1e-12
    assert r.value == pytest.approx(sers_reference(o, p, ["a"], ["k"]), rel=1e-9, abs=1e-12)


@settings(max_examples=40)
@given(st.integers(0, 10_000), st.floats(0.0, 2.0), st.integers(1, 4))
def test_idr_properties(seed, k, m):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(12, m))
    z = x + rng.normal(0, 0.5, size=x.shape)
    a = idr(x, z, k).value
    leg = idr(x, z, k, rule="legacy").value
    assert 0.0 <= a <= leg <= 1.0
    # a wider interval never puts fewer records at risk
    assert idr(x, z, k + 0.5).value >= a


def test_ddr_auto_probe_on_a_large_input_gives_the_same_links():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(20_000, 2))
    z = x + rng.normal(0, 0.05, size=x.shape)
    auto = ddr(x, z)
    assert auto.method == "tree"
    assert auto.value == ddr(x, z, method="kdtree").value


def test_sers_records_without_similarity_are_counted_not_averaged():
    o = pd.DataFrame({"a": [0.0, 1.0]})
    p = pd.DataFrame({"a": [10.0, 0.0]})
    # original-only domain (width 1): record 0 matches P1 exactly (H = 0); record 1 has S = 0 everywhere
    r = sers(o, p, ["a"], [], domain="original", return_records=True)
    assert r.undefined == 1
    assert np.isnan(r.record_entropy[1])
    assert r.value == pytest.approx(0.0)
    with pytest.raises(MeasureNotApplicable, match="undefined"):
        sers(o, pd.DataFrame({"a": [10.0, 11.0]}), ["a"], [], domain="original")
