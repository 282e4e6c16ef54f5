"""Microaggregation: worked examples of the spec, optimality, group-size invariants, sdcMicro parity."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone

from ppdm.anonymize.microaggregation import MDAV, group_means, mdav, mdav_1d, optimal_1d, sse, vmdav_1d
from ppdm.data.schema import Schema
from ppdm.errors import ParameterError


def groups_as_sets(x: np.ndarray, labels: np.ndarray) -> set[tuple[float, ...]]:
    return {tuple(sorted(x[labels == g].tolist())) for g in np.unique(labels)}


# ------------------------------------------------------------------ worked examples
def test_mdav_1d_spec_examples() -> None:
    x = np.array([1, 2, 3, 10, 11, 12, 20.0])  # Ex-1.5a
    lab = mdav_1d(x, 3)
    assert groups_as_sets(x, lab) == {(1, 2, 3, 10), (11, 12, 20)}
    assert sse(x, lab) == pytest.approx(98.6666667)
    x = np.array([1, 2, 3, 4, 5, 6, 7, 8, 20.0])  # Ex-1.5b
    lab = mdav_1d(x, 3)
    assert groups_as_sets(x, lab) == {(1, 2, 3), (4, 5, 6), (7, 8, 20)}
    assert sorted(group_means(x, lab)) == pytest.approx([2, 5, 35 / 3])


def test_mdav_multivariate_spec_example() -> None:
    X = np.array([(0, 0), (0, 1), (1, 0), (10, 10), (10, 11), (11, 10.0)])  # Ex-1.5c
    lab = mdav(X, 3)
    assert lab[0] == lab[1] == lab[2] != lab[3] == lab[4] == lab[5]
    cent = group_means(X, lab)
    assert cent[lab[0]] == pytest.approx([1 / 3, 1 / 3])
    assert cent[lab[3]] == pytest.approx([31 / 3, 31 / 3])


def test_vmdav_spec_example() -> None:
    x = np.array([1, 2, 3, 3.5, 10, 11, 12, 13])  # Ex-1.6
    for gamma in (0.2, 0.1):
        lab = vmdav_1d(x, 3, gamma)
        assert groups_as_sets(x, lab) == {(1, 2, 3, 3.5), (10, 11, 12, 13)}
    assert groups_as_sets(x, mdav_1d(x, 3)) == {(11, 12, 13), (1, 2, 3, 3.5, 10)}


def test_optimal_spec_example() -> None:
    x = np.array([1, 2, 3, 10, 11, 12, 20.0])  # Ex-1.7
    lab = optimal_1d(x, 3)
    assert groups_as_sets(x, lab) == {(1, 2, 3), (10, 11, 12, 20)}
    assert sorted(group_means(x, lab)) == pytest.approx([2, 13.25])
    sst = ((x - x.mean()) ** 2).sum()
    assert 100 * sse(x, lab) / sst == pytest.approx(22.98, abs=0.01)


def test_univariate_labels_are_sorted_runs() -> None:
    x = np.random.default_rng(1).exponential(size=200)
    for f in (mdav_1d, optimal_1d, vmdav_1d):
        lab = f(x, 7)
        order = np.argsort(x, kind="stable")
        assert np.all(np.diff(lab[order]) >= 0)


def test_impossible_k() -> None:
    for f in (mdav_1d, optimal_1d, vmdav_1d):
        with pytest.raises(ParameterError):
            f([1.0, 2.0], 3)
        with pytest.raises(ParameterError):
            f([1.0, 2.0], 0)
    with pytest.raises(ParameterError):
        mdav(np.ones((3, 2)), 4)
    with pytest.raises(ParameterError):
        mdav_1d([1.0, np.nan], 1)


# --------------------------------------------------------------- optimality (OMA)
def brute_contiguous(v: np.ndarray, k: int) -> float:
    """Least SSE over every split of the sorted values into consecutive groups of ≥ k."""
    v = np.sort(v)
    n = v.size
    best = np.inf
    for cuts in itertools.product([0, 1], repeat=n - 1):
        bounds = [0, *[i + 1 for i, c in enumerate(cuts) if c], n]
        sizes = np.diff(bounds)
        if sizes.min() < k:
            continue
        tot = sum(((v[a:b] - v[a:b].mean()) ** 2).sum() for a, b in itertools.pairwise(bounds))
        best = min(best, tot)
    return best


def set_partitions(items: list[int]):
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for part in set_partitions(rest):
        for i in range(len(part)):
            yield [*part[:i], [first, *part[i]], *part[i + 1 :]]
        yield [[first], *part]


def brute_any(v: np.ndarray, k: int) -> float:
    """Least SSE over every partition of the records (any grouping) into groups of ≥ k."""
    best = np.inf
    for part in set_partitions(list(range(v.size))):
        if min(len(g) for g in part) < k:
            continue
        best = min(best, sum(((v[g] - v[g].mean()) ** 2).sum() for g in part))
    return best


values = st.lists(st.integers(-50, 50), min_size=1, max_size=12).map(lambda xs: np.array(xs, float) / 4)


@settings(max_examples=250)
@given(values, st.integers(1, 6))
def test_optimal_equals_brute_force_contiguous(v: np.ndarray, k: int) -> None:
    k = min(k, v.size)
    lab = optimal_1d(v, k)
    assert sse(v, lab) == pytest.approx(brute_contiguous(v, k), abs=1e-9)


@settings(max_examples=60)
@given(st.lists(st.integers(-20, 20), min_size=1, max_size=7).map(lambda xs: np.array(xs, float)), st.integers(1, 4))
def test_optimal_equals_brute_force_over_all_partitions(v: np.ndarray, k: int) -> None:
    k = min(k, v.size)
    assert sse(v, optimal_1d(v, k)) == pytest.approx(brute_any(v, k), abs=1e-9)


# ---------------------------------------------------------------- group-size invariants
def sizes(labels: np.ndarray) -> np.ndarray:
    return np.bincount(labels)


floats = st.lists(st.floats(-1e3, 1e3, allow_nan=False), min_size=1, max_size=80).map(np.array)


@settings(max_examples=150)
@given(floats, st.integers(1, 12))
def test_mdav_1d_group_sizes(v: np.ndarray, k: int) -> None:
    k = min(k, v.size)
    s = sizes(mdav_1d(v, k))
    assert s.min() >= k
    if v.size >= 2 * k:
        assert (s == k).sum() >= s.size - 1 and s.max() < 2 * k  # all k but one last group < 2k
    else:
        assert s.size == 1


@settings(max_examples=150)
@given(floats, st.integers(1, 12), st.floats(0, 2))
def test_vmdav_and_optimal_group_sizes(v: np.ndarray, k: int, gamma: float) -> None:
    k = min(k, v.size)
    for lab in (vmdav_1d(v, k, gamma), optimal_1d(v, k)):
        s = sizes(lab)
        assert s.min() >= k and s.max() <= max(2 * k - 1, k)
        assert s.sum() == v.size


@settings(max_examples=60)
@given(st.integers(1, 60), st.integers(1, 4), st.integers(1, 8), st.integers(0, 10_000))
def test_mdav_multivariate_group_sizes(n: int, p: int, k: int, seed: int) -> None:
    k = min(k, n)
    X = np.random.default_rng(seed).normal(size=(n, p))
    for scaling in ("standard", "sdcmicro", "none"):
        s = sizes(mdav(X, k, scaling))
        assert s.min() >= k and s.max() < max(2 * k, k + 1)
        assert (s == k).sum() >= s.size - 1


@settings(max_examples=200)
@given(st.lists(st.integers(-10_000, 10_000), min_size=1, max_size=60, unique=True), st.integers(1, 9))
def test_fast_univariate_mdav_equals_general(ints: list[int], k: int) -> None:
    v = np.array(ints, float) / 7.0  # tie-free
    k = min(k, v.size)
    fast = mdav_1d(v, k)
    general = mdav(v[:, None], k)
    assert groups_as_sets(v, fast) == groups_as_sets(v, general)


# --------------------------------------------------------------------- sdcMicro parity
@pytest.mark.parametrize(
    ("dataset", "oracle", "k"),
    [("tarragona", "tarragona_mdav_k3", 3), ("tarragona", "tarragona_mdav_k10", 10), ("cascrefmicrodata", "casc_mdav_k5", 5)],
)
def test_mdav_matches_sdcmicro(shared_dir, dataset: str, oracle: str, k: int) -> None:
    # continuous attributes, as sdcMicro treats them: whole-number attributes (integer dtypes, or
    # the whole-valued columns a schema infers as such) would have their centroids rounded
    x = pd.read_csv(shared_dir / "datasets" / f"{dataset}.csv").astype(float)
    ref = pd.read_csv(shared_dir / "oracles" / "sdcmicro" / f"{oracle}.csv")
    meta = json.loads((shared_dir / "oracles" / "sdcmicro" / f"{oracle}.json").read_text())
    z = MDAV(k=k, scaling="sdcmicro", schema=Schema(list(x.columns))).fit_transform(x)
    X, Z, R = x.to_numpy(float), z.to_numpy(float), ref.to_numpy(float)
    # same group structure: records share a masked row in ours iff they do in sdcMicro's
    same = np.isclose(Z, R, rtol=1e-9, atol=1e-6).all(axis=1)
    assert same.mean() >= 0.99
    sizes_ = pd.Series([tuple(r) for r in Z]).value_counts()
    assert len(sizes_) == meta["metrics"]["n_groups"]
    assert sizes_.min() == meta["metrics"]["min_group"] and sizes_.max() == meta["metrics"]["max_group"]
    # IL1s (sdcMicro's sum form) and dRisk (k = 0.05, "all variables" rule) within 1 %
    sd = X.std(axis=0, ddof=1)
    il1s = (np.abs(X - Z) / (np.sqrt(2) * sd)).sum()
    assert il1s == pytest.approx(meta["metrics"]["IL1s"], rel=0.01)
    half = 0.05 * Z.std(axis=0, ddof=1)
    drisk = ((X >= Z - half) & (X <= Z + half)).all(axis=1).mean()
    assert drisk == pytest.approx(meta["metrics"]["dRisk"], rel=0.01, abs=1e-12)


# ------------------------------------------------------------------- technique contract
def test_mdav_technique_contract() -> None:
    rng = np.random.default_rng(3)
    df = pd.DataFrame(
        {"a": rng.normal(size=40), "b": rng.integers(0, 100, 40), "cls": rng.choice(["x", "y"], 40)}
    )
    t = MDAV(class_column="cls", k=4)
    z = t.fit_transform(df)
    assert list(z.columns) == list(df.columns) and (z.dtypes == df.dtypes).all()
    assert z["cls"].equals(df["cls"])
    assert np.bincount(t.groups_).min() >= 4
    assert z.equals(clone(t).fit_transform(df))
    assert clone(t).get_params() == t.get_params()
    with pytest.raises(ParameterError):
        MDAV(k=41).fit_transform(df.drop(columns="cls"))
    with pytest.raises(ParameterError):
        MDAV(class_column="cls", columns=["cls"]).fit(df)
    with pytest.raises(ParameterError):
        MDAV(scaling="bogus").fit(df)
