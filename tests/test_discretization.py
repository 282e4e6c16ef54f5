"""Discretizations: the spec's worked examples, scikit-learn agreement, a reference MDLP, invariants."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.preprocessing import KBinsDiscretizer

from ppdm.anonymize.discretization import (
    chimerge_cuts,
    equal_frequency,
    equal_width,
    freedman_diaconis_bins,
    k_from_c,
    kmeans_1d,
    mdlp_cuts,
    resampling,
)
from ppdm.errors import ParameterError


def cells(x, labels) -> list[list[float]]:
    x = np.asarray(x, float)
    return [sorted(x[labels == g].tolist()) for g in range(labels.max() + 1)]


# ------------------------------------------------------------------- worked examples
def test_spec_examples() -> None:
    assert cells([0, 1, 2, 3, 4, 10], equal_width([0, 1, 2, 3, 4, 10], 2)) == [[0, 1, 2, 3, 4], [10]]
    x = [1, 2, 2, 2, 2, 3, 4, 5]
    assert cells(x, equal_frequency(x, 2)) == [[1, 2, 2, 2, 2], [3, 4, 5]]
    x = [1, 1, 1, 1, 1, 1, 2, 3, 4]
    assert cells(x, equal_frequency(x, 3)) == [[1] * 6, [2], [3, 4]]
    centres, lab = kmeans_1d([1, 2, 3, 10, 11, 12], 2)
    assert centres.tolist() == [2, 11] and lab.tolist() == [0, 0, 0, 1, 1, 1]
    assert mdlp_cuts(np.arange(1, 9), list("AAAABBBB")).tolist() == [4.5]
    assert mdlp_cuts([1, 2, 3, 4], list("ABAB")).size == 0
    assert chimerge_cuts(np.arange(1, 7), list("AAABBB")).tolist() == [3.5]
    assert freedman_diaconis_bins(np.arange(1, 9)) == 2 and k_from_c(8, 2) == 4
    assert freedman_diaconis_bins([0, 1, 2, 3, 4, 10]) == 4
    assert freedman_diaconis_bins([5, 5, 5, 5, 5, 5, 5, 9]) == 2  # IQR 0: Sturges (capped at 2 distinct)
    assert k_from_c(500, 3) == 167 and k_from_c(500, 15) == 34


def test_resampling_by_hand_on_a_tiny_seeded_input() -> None:
    # RBD (paper 003 Algorithm 1) with 2 strata and 3 bootstrap samples per stratum.
    x = np.array([1.0, 2, 3, 4, 11, 12, 13, 14])
    # strata Q1 = {1, 2, 3, 4}, Q2 = {11, 12, 13, 14}; the generator seeded with 7 draws, per
    # stratum in order, a 3 × 4 block of positions:
    rng = np.random.default_rng(7)
    assert rng.integers(0, 4, size=(3, 4)).tolist() == [[3, 2, 2, 3], [2, 3, 3, 0], [0, 1, 1, 3]]
    assert rng.integers(0, 4, size=(3, 4)).tolist() == [[3, 0, 1, 3], [0, 3, 0, 1], [3, 1, 1, 1]]
    # Q1 samples (4,3,3,4), (3,4,4,1), (1,2,2,4): means 3.5, 3, 2.25
    # Q2 samples (14,11,12,14), (11,14,11,12), (14,12,12,12): means 12.75, 12, 12.5
    # k-means with c = 2 on the six means: {2.25, 3, 3.5} and {12, 12.5, 12.75}
    two = resampling(x, 2, np.random.default_rng(7), n_quantiles=2, n_bootstrap=3)
    assert two == pytest.approx([8.75 / 3, 37.25 / 3], abs=1e-12)
    # c = 3: {2.25}, {3, 3.5}, {12, 12.5, 12.75} (SSE 0.4167 against 0.8229 for splitting Q2)
    three = resampling(x, 3, np.random.default_rng(7), n_quantiles=2, n_bootstrap=3)
    assert three == pytest.approx([2.25, 3.25, 37.25 / 3], abs=1e-12)
    # plain k-means on x would give 2.5 and 12.5: the bootstrap step matters
    assert kmeans_1d(x, 2)[0].tolist() == [2.5, 12.5]


def test_chimerge_second_worked_example() -> None:
    # value: classes   1: AAA  2: AAA  3: BBB  4: BBA  5: AAA   (K = 2, alpha 0.10: chi2 < 2.7055 merges)
    x = [1.0] * 3 + [2.0] * 3 + [3.0] * 3 + [4.0] * 3 + [5.0] * 3
    y = list("AAA" "AAA" "BBB" "BBA" "AAA")
    # initial pairs: (1,2) 0.2 (an expected 0 counts as 0.1), (2,3) 6.0, (3,4) 1.2, (4,5) 3.0
    # merge (1,2): ([1-2],3) = 9.0; merge (3,4): ([1-2],[3-4]) = 8.571, ([3-4],5) = 5.625: stop
    assert chimerge_cuts(x, y).tolist() == [2.5, 4.5]
    # with at most 2 intervals the smaller of 8.571 and 5.625 is merged too
    assert chimerge_cuts(x, y, max_intervals=2).tolist() == [2.5]
    # (cutting wherever the class changes would also cut at 3.5; MDLP accepts no cut here)
    assert mdlp_cuts(x, y).size == 0


def test_bad_c() -> None:
    with pytest.raises(ParameterError):
        equal_width([1.0, 2.0], 1)
    with pytest.raises(ParameterError):
        equal_frequency([1.0, 2.0], 1.5)
    with pytest.raises(ParameterError):
        mdlp_cuts([1.0, 2.0], ["a"])


# ------------------------------------------------------------ scikit-learn agreement
def _kbins(strategy: str, c: int, x: np.ndarray, **kw) -> KBinsDiscretizer:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return KBinsDiscretizer(n_bins=c, encode="ordinal", strategy=strategy, **kw).fit(x[:, None])


@settings(max_examples=100)
@given(st.integers(0, 10_000), st.integers(2, 12), st.integers(20, 200))
def test_equal_width_agrees_with_sklearn(seed: int, c: int, n: int) -> None:
    x = np.random.default_rng(seed).normal(size=n)
    ours = equal_width(x, c)
    theirs = _kbins("uniform", c, x).transform(x[:, None]).ravel().astype(int)
    # ours drops empty cells; sklearn keeps their numbers: compare after renumbering
    assert np.array_equal(ours, np.unique(theirs, return_inverse=True)[1])


@settings(max_examples=100)
@given(st.integers(0, 10_000), st.integers(2, 10), st.integers(2, 30))
def test_equal_frequency_agrees_with_sklearn_quantiles(seed: int, c: int, m: int) -> None:
    # definitions coincide for tie-free data whose size is a multiple of c
    x = np.random.default_rng(seed).permutation(np.arange(c * m)) / 3.0
    ours = equal_frequency(x, c)
    theirs = _kbins("quantile", c, x, quantile_method="linear").transform(x[:, None]).ravel().astype(int)
    assert np.array_equal(ours, theirs)
    assert np.all(np.bincount(ours) == m)


@pytest.mark.parametrize("seed", range(8))
def test_kmeans_agrees_with_sklearn(seed: int) -> None:
    rng = np.random.default_rng(seed)
    c = int(rng.integers(2, 6))
    x = np.concatenate([rng.normal(10 * i, 1, 60) for i in range(c)])
    centres, lab = kmeans_1d(x, c)
    kb = _kbins("kmeans", c, x)
    edges = kb.bin_edges_[0][1:-1]
    assert np.allclose((centres[1:] + centres[:-1]) / 2, edges, rtol=1e-6)
    assert np.array_equal(lab, kb.transform(x[:, None]).ravel().astype(int))


# ---------------------------------------------------------------- reference MDLP
def _ent(labels: list) -> float:
    n = len(labels)
    return -sum((labels.count(c) / n) * math.log2(labels.count(c) / n) for c in set(labels))


def reference_mdlp(x: list[float], y: list) -> list[float]:
    """Fayyad & Irani's recursion written straight from the definitions, with plain loops."""
    pairs = sorted(zip(x, y, strict=True), key=lambda p: p[0])
    out: list[float] = []

    def rec(part: list) -> None:
        n = len(part)
        ys = [p[1] for p in part]
        best = None
        for t in range(1, n):
            if part[t - 1][0] == part[t][0]:
                continue
            e = t / n * _ent(ys[:t]) + (n - t) / n * _ent(ys[t:])
            if best is None or e < best[0]:
                best = (e, t)
        if best is None:
            return
        e, t = best
        s1, s2 = ys[:t], ys[t:]
        gain = _ent(ys) - e
        k, k1, k2 = len(set(ys)), len(set(s1)), len(set(s2))
        delta = math.log2(3**k - 2) - (k * _ent(ys) - k1 * _ent(s1) - k2 * _ent(s2))
        if gain > (math.log2(n - 1) + delta) / n:
            out.append((part[t - 1][0] + part[t][0]) / 2)
            rec(part[:t])
            rec(part[t:])

    rec(pairs)
    return sorted(out)


@settings(max_examples=150)
@given(
    st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 2)), min_size=2, max_size=60, unique_by=lambda t: t[0]),
    st.booleans(),
)
def test_mdlp_matches_reference(pairs: list[tuple[int, int]], structured: bool) -> None:
    x = [p[0] / 10 for p in pairs]
    # structured: class mostly follows x, so that cuts are accepted
    y = [int(v // 334) if structured else p[1] for v, p in zip(x, pairs, strict=True)]
    assert mdlp_cuts(x, y) == pytest.approx(reference_mdlp(x, y))


# ------------------------------------------------------------------------ invariants
@settings(max_examples=150)
@given(st.lists(st.integers(0, 30), min_size=1, max_size=80), st.integers(2, 12))
def test_equal_frequency_keeps_ties_together(xs: list[int], c: int) -> None:
    x = np.array(xs, float)
    lab = equal_frequency(x, c)
    for v in np.unique(x):
        assert np.unique(lab[x == v]).size == 1
    assert lab.max() + 1 >= min(c, np.unique(x).size)
    order = np.argsort(x, kind="stable")
    assert np.all(np.diff(lab[order]) >= 0)


@settings(max_examples=60)
@given(st.lists(st.floats(-100, 100), min_size=1, max_size=60), st.integers(2, 8), st.integers(0, 99))
def test_resampling_invariants(xs: list[float], c: int, seed: int) -> None:
    x = np.array(xs)
    a = resampling(x, c, np.random.default_rng(seed))
    b = resampling(x, c, np.random.default_rng(seed))
    assert np.array_equal(a, b)
    assert a.size <= c and np.all(np.diff(a) > 0)
    assert x.min() - 1e-9 <= a.min() and a.max() <= x.max() + 1e-9
    if np.unique(x).size == 1:
        assert a.tolist() == [x[0]]


@settings(max_examples=60)
@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 2)), min_size=2, max_size=60), st.integers(1, 5))
def test_chimerge_max_intervals(pairs: list[tuple[int, int]], mx: int) -> None:
    x = [float(p[0]) for p in pairs]
    y = [p[1] for p in pairs]
    cuts = chimerge_cuts(x, y, max_intervals=mx)
    assert cuts.size + 1 <= mx
    assert np.all(np.diff(cuts) > 0)
    free = chimerge_cuts(x, y)
    assert free.size + 1 <= np.unique(x).size


def test_kmeans_merges_centres_that_coincide_in_floating_point() -> None:
    # 0 and 4e-219 are distinct values whose cluster means round to the same number
    centres = resampling(np.array([0.0, 1.0, 4.137719225944687e-219, -1.0]), 4, np.random.default_rng(0))
    assert np.all(np.diff(centres) > 0)
