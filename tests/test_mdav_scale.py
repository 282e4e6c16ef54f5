"""MDAV at scale: the pruned kernel against the full-pass definition, blocked MDAV, Dask tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone

import ppdm.anonymize.microaggregation as ma
from ppdm.anonymize._mdav import CellTree, kd_blocks, mdav_fast, mdav_reference
from ppdm.anonymize._mdav_dask import _weights
from ppdm.anonymize.microaggregation import MDAV, group_means, mdav, mdav_blocked, mdav_weights, sse
from ppdm.errors import ParameterError

SCALINGS = ("standard", "sdcmicro", "none")


def _table(kind: int, n: int, p: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if kind == 0:  # few distinct values: many exact ties and duplicate records
        return rng.integers(0, 4, size=(n, p)).astype(float)
    if kind == 1:
        return rng.normal(size=(n, p))
    return rng.exponential(size=(n, p)) ** 2  # skewed: the centroid drifts as the tail is grouped


def _kernels(X: np.ndarray, k: int, scaling: str) -> tuple[np.ndarray, np.ndarray]:
    w = mdav_weights(X, scaling)
    f32 = scaling == "sdcmicro"
    return mdav_reference(X, w, k, f32, f32), mdav_fast(X, w, k, f32, f32)


# ------------------------------------------------------------ the pruned kernel is exact
@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2), st.integers(1, 120), st.integers(1, 6), st.integers(1, 7), st.sampled_from(SCALINGS),
       st.integers(0, 10_000))
def test_fast_kernel_gives_the_reference_groups(kind: int, n: int, p: int, k: int, scaling: str, seed: int) -> None:
    X = _table(kind, n, p, seed)
    ref, fast = _kernels(X, min(k, n), scaling)
    assert np.array_equal(ref, fast)


@pytest.mark.parametrize(("n", "p"), [(3000, 2), (3000, 5), (2000, 13), (1500, 30)])
def test_fast_kernel_gives_the_reference_groups_larger(n: int, p: int) -> None:
    # large enough for re-anchoring, compaction and (at p = 13, 30) the fall-back to passes
    for kind in range(3):
        for scaling in ("standard", "sdcmicro"):
            ref, fast = _kernels(_table(kind, n, p, n + p), 3, scaling)
            assert np.array_equal(ref, fast), (kind, scaling)


def test_mdav_weights_argument() -> None:
    X = np.array([(0, 0), (0, 1), (1, 0), (10, 10), (10, 11), (11, 10.0)])
    assert np.array_equal(mdav(X, 3, weights=[1.0, 1.0]), mdav(X, 3, "none"))
    for bad in ([1.0], [1.0, 0.0], [1.0, np.nan]):
        with pytest.raises(ParameterError, match="weights"):
            mdav(X, 3, weights=bad)


# -------------------------------------------------------------------------- blocks
def test_kd_blocks_hand_example() -> None:
    # attribute 0 spreads far more than attribute 1: the first cut is along it, at rank ⌊12·1/2⌋
    X = np.array([[x, (x * 7) % 3] for x in (5, 0, 11, 1, 10, 4, 2, 9, 3, 8, 6, 7)], dtype=float)
    b = kd_blocks(X, np.ones(2), 6)
    assert b.tolist() == [int(x >= 6) for x in X[:, 0]]
    # 3 blocks of 9 records: cut at rank ⌊9·1/3⌋ = 3 first, then the other 6 in two
    v = np.array([[8.0], [0], [5], [2], [7], [1], [4], [6], [3]])
    assert kd_blocks(v, np.ones(1), 3).tolist() == [2, 0, 1, 0, 2, 0, 1, 2, 1]


def test_mdav_blocked_hand_example() -> None:
    # two clusters along x: block size 6 puts each in its own block, MDAV (k = 3) splits each in two
    xs = [0, 1, 2, 3, 4, 5, 100, 101, 102, 103, 104, 105]
    X = np.array([[x, 0.0] for x in xs])
    labels, blocks = mdav_blocked(X, 3, "none", 6)
    assert blocks.tolist() == [0] * 6 + [1] * 6
    assert sorted(group_means(X, labels)[:, 0].tolist()) == [1, 4, 101, 104]
    assert len(set(labels[:6]) & set(labels[6:])) == 0


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2), st.integers(1, 400), st.integers(1, 4), st.integers(1, 5), st.integers(0, 60),
       st.integers(0, 10_000))
def test_mdav_blocked_invariants(kind: int, n: int, p: int, k: int, extra: int, seed: int) -> None:
    k = min(k, n)
    block_size = 2 * k + extra
    X = _table(kind, n, p, seed)
    labels, blocks = mdav_blocked(X, k, "standard", block_size)
    nb = -(-n // block_size)
    bsizes = np.bincount(blocks)
    assert bsizes.size == nb and bsizes.max() <= block_size
    assert bsizes.min() >= n // nb >= k  # every block can hold a group
    for b in range(nb):
        sizes = np.bincount(labels[blocks == b])
        sizes = sizes[sizes > 0]
        # within a block MDAV's sizes: k each, the last k…2k−1
        assert sizes.min() >= k and sizes.max() <= 2 * k - 1 or sizes.size == 1
        assert (sizes == k).sum() >= sizes.size - 1
    # no group crosses a block
    assert max(np.unique(blocks[labels == g]).size for g in np.unique(labels)) == 1
    # one block is global MDAV
    if nb == 1:
        assert np.array_equal(labels, mdav(X, k))


def test_mdav_blocked_refuses_small_blocks() -> None:
    with pytest.raises(ParameterError, match="block_size must be at least 2k = 10"):
        mdav_blocked(np.zeros((20, 2)), 5, block_size=9)
    with pytest.raises(ParameterError, match="block_size"):
        MDAV(block_size=5).fit(pd.DataFrame({"a": np.arange(20.0)}))
    with pytest.raises(ParameterError, match="strategy"):
        MDAV(strategy="fast").fit(pd.DataFrame({"a": np.arange(20.0)}))


def test_blocked_sse_close_to_global() -> None:
    # two blocks of 10 000 records (p = 5): the border costs a few per cent of SSE (≤ 10 % asked)
    X = np.random.default_rng(5).normal(size=(20_000, 5))
    Z = (X - X.mean(axis=0)) / X.std(axis=0, ddof=1)
    glob = sse(Z, mdav(X, 3))
    blocked, blocks = mdav_blocked(X, 3, block_size=10_000)
    assert np.bincount(blocks).tolist() == [10_000, 10_000]
    assert 1.0 < sse(Z, blocked) / glob < 1.10


# ------------------------------------------------------------------------ technique
def _frame(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"])
    df["i"] = rng.integers(0, 100, n)
    df["cls"] = rng.choice(["x", "y"], n)
    df.index = rng.permutation(n) + 1000
    return df


@settings(max_examples=25, deadline=None)
@given(st.integers(6, 300), st.integers(1, 4), st.integers(0, 40), st.sampled_from(("auto", "global", "blocked")),
       st.integers(0, 1000))
def test_technique_records_keep_their_row(n: int, k: int, extra: int, strategy: str, seed: int) -> None:
    df = _frame(n, seed)
    t = MDAV(class_column="cls", k=k, block_size=2 * k + extra, strategy=strategy, random_state=seed)
    z = t.fit_transform(df)
    assert z.index.equals(df.index) and z.dtypes.equals(df.dtypes) and z["cls"].equals(df["cls"])
    X = df[["a", "b", "c"]].to_numpy()
    # every released row is the centroid of its own group, and groups have k…2k−1 records
    assert np.allclose(z[["a", "b", "c"]].to_numpy(), group_means(X, t.groups_)[t.groups_])
    sizes = np.bincount(t.groups_)
    assert sizes.min() >= k and sizes.max() <= 2 * k - 1 or sizes.size == 1
    assert t.strategy_ == ("global" if strategy == "auto" else strategy)
    # no randomness: another seed, a clone, a second call give the same release
    again = MDAV(class_column="cls", k=k, block_size=2 * k + extra, strategy=strategy, random_state=seed + 1)
    assert z.equals(again.fit_transform(df)) and z.equals(clone(t).fit_transform(df)) and z.equals(t.transform(df))


def test_auto_strategy_switches_at_the_documented_size(monkeypatch: pytest.MonkeyPatch) -> None:
    df = _frame(400)
    assert MDAV(class_column="cls").fit(df).transform(df) is not None
    t = MDAV(class_column="cls", block_size=100)
    t.fit_transform(df)
    assert t.strategy_ == "global" and set(t.blocks_) == {0}
    monkeypatch.setattr(ma, "AUTO_GLOBAL_MAX_ROWS", 399)
    t.fit_transform(df)
    assert t.strategy_ == "blocked" and np.bincount(t.blocks_).tolist() == [100] * 4
    assert MDAV(class_column="cls", strategy="global").fit(df)._strategy_for(10**7) == "global"


# ----------------------------------------------------------------------------- Dask
dd = pytest.importorskip("dask.dataframe")


def _dask(df: pd.DataFrame, npartitions: int):
    ddf = dd.from_pandas(df, npartitions=npartitions, sort=False)
    return ddf, ddf.compute()  # the table as Dask holds it (strings may become Arrow strings)


def test_dask_small_table_is_global_mdav() -> None:
    # n ≤ block_size: one sorted partition, one block, rows in table order: global MDAV exactly
    df = _frame(600)
    ddf, local = _dask(df, 5)
    t = MDAV(class_column="cls", k=4, scaling="none").fit(df)
    z = t.transform(ddf).compute()
    ref = MDAV(class_column="cls", k=4, scaling="none", strategy="global").fit_transform(local)
    pd.testing.assert_frame_equal(z, ref)


@pytest.mark.parametrize("scaling", SCALINGS)
def test_dask_release_contract(scaling: str) -> None:
    df = _frame(3000, 1)
    ddf, local = _dask(df, 7)
    t = MDAV(class_column="cls", k=3, scaling=scaling, block_size=400).fit(df)
    lazy = t.transform(ddf)
    z = lazy.compute()
    assert z.index.equals(local.index) and z.dtypes.equals(local.dtypes) and list(z.columns) == list(df.columns)
    assert z["cls"].equals(local["cls"]) and lazy.npartitions == 7
    sizes = z.groupby(["a", "b", "c", "i"]).size()
    assert sizes.min() >= 3 and sizes.max() <= 5
    assert z.equals(t.transform(ddf).compute())
    # every released row is the mean of the original rows that share it
    cols = ["a", "b", "c"]
    means = local[cols].groupby([z[c] for c in cols]).transform("mean")
    assert np.allclose(means.to_numpy(), z[cols].to_numpy())


def test_dask_sse_close_to_in_memory_blocked() -> None:
    df = _frame(8000, 2)
    ddf, local = _dask(df, 8)
    cols = ["a", "b", "c", "i"]
    X = local[cols].to_numpy(float)
    Z0 = (X - X.mean(axis=0)) / X.std(axis=0, ddof=1)
    t = MDAV(class_column="cls", k=3, block_size=1000, strategy="blocked").fit(local)
    in_memory = t.fit_transform(local)
    out_of_core = t.transform(ddf).compute()
    glob = MDAV(class_column="cls", k=3, strategy="global").fit_transform(local)

    def loss(z: pd.DataFrame) -> float:
        return float((((X - z[cols].to_numpy(float)) / X.std(axis=0, ddof=1)) ** 2).sum() / (Z0**2).sum())

    assert loss(glob) < loss(in_memory) < loss(glob) * 1.25
    assert loss(out_of_core) < loss(in_memory) * 1.10


def test_dask_empty_and_tiny_partitions() -> None:
    df = _frame(500, 3)
    ddf, local = _dask(df, 10)
    ddf = ddf[ddf["a"] > -0.2]  # some partitions lose rows, a few may lose all of them
    ddf = dd.concat([ddf, dd.from_pandas(local.iloc[:0], npartitions=1)])  # an empty partition for sure
    kept = ddf.compute()
    t = MDAV(class_column="cls", k=7, block_size=60).fit(df)
    z = t.transform(ddf).compute()
    assert z.index.equals(kept.index) and z["cls"].equals(kept["cls"])
    assert z.groupby(["a", "b", "c", "i"]).size().min() >= 7


def test_dask_refuses_global_and_tables_smaller_than_k() -> None:
    df = _frame(50)
    ddf, _ = _dask(df, 3)
    with pytest.raises(ParameterError, match="strategy='global'"):
        MDAV(class_column="cls", strategy="global").fit(df).transform(ddf)
    with pytest.raises(ParameterError, match="k=60"):
        MDAV(class_column="cls", k=60).fit(_frame(200)).transform(ddf)


def test_moment_weights_equal_the_in_memory_ones() -> None:
    X = np.random.default_rng(4).normal(5, 3, size=(1000, 3)) * [1, 10, 0.1]
    parts = np.array_split(X, [100, 101, 500])
    stats = [(len(P), P.sum(0), (P * P).sum(0), P.mean(0), ((P - P.mean(0)) ** 2).sum(0), None) for P in parts]
    for scaling in SCALINGS:
        assert np.allclose(_weights(stats, scaling), mdav_weights(X, scaling), rtol=1e-10)


def test_cells_are_boxes_in_order() -> None:
    X = np.random.default_rng(6).normal(size=(5000, 3))
    tree = CellTree(X, np.ones(3), max_leaves=64)
    cells = tree.cell(X)
    assert tree.n_cells == 64 and np.bincount(cells, minlength=64).min() > 0
    assert np.array_equal(tree.cell(X[::-1]), cells[::-1])
    # a cell is a box: records between two of its records along every attribute... at least its
    # records are nearer to each other than to the table on average
    spread = np.mean([X[cells == c].std(axis=0).mean() for c in range(64)])
    assert spread < 0.5 * X.std(axis=0).mean()
    # ties: equal values never straddle a threshold, whatever their number
    T = np.repeat(np.arange(4.0), [10, 500, 10, 480])[:, None]
    tc = CellTree(T, np.ones(1), max_leaves=8).cell(T)
    for v in range(4):
        assert np.unique(tc[T[:, 0] == v]).size == 1


@pytest.mark.slow
def test_dask_large_table_sse_and_groups() -> None:
    n = 300_000
    rng = np.random.default_rng(8)
    df = pd.DataFrame(rng.normal(size=(n, 5)), columns=list("abcde"))
    ddf, local = _dask(df, 6)
    t = MDAV(k=3, block_size=20_000).fit(local)
    z = t.transform(ddf).compute()
    X = local.to_numpy()
    Z0 = (X - X.mean(axis=0)) / X.std(axis=0, ddof=1)
    in_memory = t.fit_transform(local)
    assert t.strategy_ == "blocked"
    sst = (Z0**2).sum()
    loss = lambda zz: (((X - zz.to_numpy()) / X.std(axis=0, ddof=1)) ** 2).sum() / sst  # noqa: E731
    assert loss(z) < loss(in_memory) * 1.05
    assert z.groupby(list("abcde")).size().min() >= 3
