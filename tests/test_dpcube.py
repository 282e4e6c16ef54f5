"""DPCube (Xiao, Xiong & Yuan 2010; paper 000 §7.2/§8.4): invariants, noise scale, accounting, parameters."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone

from ppdm.anonymize import get_technique, make_technique
from ppdm.anonymize.differential_privacy import (
    DomainFromDataWarning,
    DPCube,
    allocate_counts,
    box_sums,
    box_volumes,
    kd_partition,
    laplace_mechanism,
)
from ppdm.data import Schema
from ppdm.errors import ParameterError, SchemaError

pytestmark = pytest.mark.filterwarnings("ignore::ppdm.anonymize.differential_privacy.DomainFromDataWarning")


def _table(n: int = 60, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    return pd.DataFrame(
        {
            "a": rng.normal(y * 2.0, 1.0),
            "age": rng.integers(18, 70, n),
            "job": rng.choice(["clerk", "nurse", "pilot"], n),
            "y": np.where(y == 1, "yes", "no"),
        }
    )


@st.composite
def tables(draw) -> pd.DataFrame:
    n = draw(st.integers(2, 30))
    floats = st.floats(-50, 50, allow_nan=False, allow_subnormal=False)
    a = draw(st.lists(floats, min_size=n, max_size=n))
    k = draw(st.lists(st.integers(-5, 8), min_size=n, max_size=n))
    c = draw(st.lists(st.sampled_from(["p", "q", "r"]), min_size=n, max_size=n))
    y = draw(st.lists(st.sampled_from([0, 1, 2]), min_size=n, max_size=n))
    return pd.DataFrame({"a": a, "k": k, "c": c, "y": y})


params = st.fixed_dictionaries(
    {
        "epsilon": st.sampled_from([0.05, 0.5, 2.0, math.inf]),
        "alpha": st.sampled_from([0.2, 0.5, 0.8]),
        "partitioning": st.sampled_from(["kd", "cell"]),
        "bins": st.integers(1, 4),
        "split": st.sampled_from(["median", "midpoint"]),
        "split_dimension": st.sampled_from(["widest", "class-first"]),
        "max_depth": st.sampled_from([None, 0, 2]),
        "combine": st.booleans(),
    }
)


# --------------------------------------------------------------- invariants
@settings(max_examples=40)
@given(df=tables(), p=params, seed=st.integers(0, 2**16))
def test_partitions_tile_the_grid_and_records_lie_in_their_partition(df, p, seed):
    t = DPCube(class_column="y", random_state=seed, **p).fit(df)
    boxes = t.partitions_
    shape = t.grid_.shape
    # disjoint boxes whose volumes add up to the grid: each cell covered exactly once
    cover = np.zeros(shape, dtype=int)
    for box in boxes:
        cover[tuple(slice(a, b + 1) for a, b in box)] += 1
    assert np.all(cover == 1)
    assert box_volumes(boxes).sum() == t.grid_.n_cells
    assert t.partition_counts_.sum() == len(df)

    z = t.transform(df)
    # shape, columns, order, index and dtypes kept; integer column stays integer
    assert z.shape == df.shape and list(z.columns) == list(df.columns)
    assert z.index.equals(df.index)
    assert (z.dtypes == df.dtypes).all()
    # every synthetic record falls in a partition that was given records, as many as allocated
    got = np.bincount(t.partition_index(z), minlength=len(boxes))
    assert np.array_equal(got, t.allocate(len(df)))
    assert got.sum() == len(df)
    # values inside the (here data-derived) domain
    assert z["a"].between(df["a"].min(), df["a"].max()).all()
    assert z["k"].between(df["k"].min(), df["k"].max()).all()
    assert set(z["c"]) <= set(df["c"]) and set(z["y"]) <= set(df["y"])


@settings(max_examples=15)
@given(df=tables(), p=params, seed=st.integers(0, 2**16))
def test_same_seed_same_output(df, p, seed):
    z1 = DPCube(class_column="y", random_state=seed, **p).fit_transform(df)
    t = DPCube(class_column="y", random_state=seed, **p)
    z2 = t.fit_transform(df)
    pd.testing.assert_frame_equal(z1, z2)
    pd.testing.assert_frame_equal(z2, t.transform(df))  # transform redraws from the same seed


def test_noise_off_gives_true_counts_and_n_rows():
    df = _table()
    t = DPCube(class_column="y", epsilon=math.inf, random_state=0).fit(df)
    assert np.array_equal(t.noisy_counts_, t.partition_counts_)
    assert np.array_equal(t.allocate(len(df)), t.partition_counts_.astype(int))
    z = t.transform(df)
    # with exact counts every partition receives exactly its own records back (as new values)
    assert np.array_equal(np.bincount(t.partition_index(z), minlength=len(t.partitions_)),
                          np.bincount(t.partition_index(df), minlength=len(t.partitions_)))


def test_class_first_gives_class_pure_partitions():
    df = _table()
    t = DPCube(class_column="y", epsilon=math.inf, split_dimension="class-first", random_state=0).fit(df)
    j = t.grid_.columns.index("y")
    assert np.all(t.partitions_[:, j, 0] == t.partitions_[:, j, 1])


def test_bounds_are_public_domain_and_clip_outliers():
    df = _table()
    with warnings.catch_warnings():
        warnings.simplefilter("error", DomainFromDataWarning)
        t = DPCube(
            class_column="y", epsilon=1.0, random_state=0,
            bounds={"a": (-1.0, 1.0), "age": (0, 100)},
            domains={"job": ["clerk", "nurse", "pilot", "vet"], "y": ["no", "yes"]},
        )
        z = t.fit_transform(df)
    assert t.privacy_report_.public_domain
    assert z["a"].between(-1.0, 1.0).all() and z["age"].between(0, 100).all()
    assert t.grid_.shape == (10, 10, 4, 2)


def test_domain_from_data_warns():
    with pytest.warns(DomainFromDataWarning, match="'a'"):
        t = DPCube(class_column="y", random_state=0).fit(_table())
    assert not t.privacy_report_.public_domain


def test_value_outside_declared_domain_is_refused():
    with pytest.raises(SchemaError, match="'job'"):
        DPCube(class_column="y", domains={"job": ["clerk", "nurse"]}).fit(_table())


# ----------------------------------------------------------------- noise
def test_laplace_scale_is_sensitivity_over_epsilon():
    rng = np.random.default_rng(1)
    for sens, eps in [(1.0, 0.5), (2.0, 0.1), (1.0, 4.0)]:
        noise = laplace_mechanism(np.zeros(200_000), sens, eps, rng)
        b = sens / eps
        assert np.var(noise) == pytest.approx(2 * b * b, rel=0.03)
        assert np.mean(np.abs(noise)) == pytest.approx(b, rel=0.02)  # E|Lap(b)| = b
    assert np.array_equal(laplace_mechanism(np.arange(3.0), 1.0, math.inf, rng), np.arange(3.0))


@pytest.mark.parametrize("neighbouring,sens", [("add-remove", 1.0), ("replace", 2.0)])
def test_partition_count_noise_variance(neighbouring, sens):
    df = _table(40)
    eps, alpha = 0.8, 0.25
    res = []
    for seed in range(300):
        t = DPCube(class_column="y", epsilon=eps, alpha=alpha, bins=3, neighbouring=neighbouring,
                   random_state=seed).fit(df)
        res.append(t.noisy_counts_ - t.partition_counts_)
    r = np.concatenate(res)
    want = 2 * (sens / ((1 - alpha) * eps)) ** 2
    assert len(r) >= 300
    assert np.var(r) == pytest.approx(want, rel=0.15)


def test_larger_epsilon_gives_closer_counts():
    df = _table(80)

    def err(eps: float) -> float:
        e = []
        for seed in range(20):
            t = DPCube(class_column="y", epsilon=eps, partitioning="cell", bins=3, random_state=seed).fit(df)
            e.append(np.mean(np.abs(t.noisy_counts_ - t.partition_counts_)))
        return float(np.mean(e))

    errs = [err(e) for e in (0.05, 0.5, 5.0)]
    assert errs[0] > errs[1] > errs[2]
    # mean absolute Laplace noise is 1/ε: the ratio tracks the budgets
    assert errs[0] / errs[1] == pytest.approx(10, rel=0.15)


# --------------------------------------------------------------- kd-tree
def test_kd_partition_reads_only_the_noisy_histogram():
    df = _table()
    t = DPCube(class_column="y", epsilon=1.0, random_state=3).fit(df)
    hist = t.histogram_noisy_.copy()  # the tree needs nothing but this array
    again = kd_partition(hist, min_count=t.min_count_, uniformity_threshold=t.uniformity_threshold_)
    assert np.array_equal(again, t.partitions_)


def test_kd_partition_hand_example():
    # 1-d histogram [0, 10, 0, 0, 10, 0, 0, 0]: weighted median cut after cell 1, then each side again
    h = np.array([0.0, 10, 0, 0, 10, 0, 0, 0])
    boxes = kd_partition(h, min_count=5.0, uniformity_threshold=0.0)
    assert boxes[:, 0, :].tolist() == [[0, 0], [1, 1], [2, 3], [4, 4], [5, 7]]
    assert box_sums(h, boxes).tolist() == [0, 10, 0, 10, 0]
    # a uniform box is not split; depth 0 keeps the root
    assert kd_partition(np.ones((4, 4)), min_count=0, uniformity_threshold=0.0).shape == (1, 2, 2)
    assert kd_partition(h, min_count=0, uniformity_threshold=0.0, max_depth=0).shape == (1, 1, 2)
    mid = kd_partition(np.ones(8) + np.arange(8), min_count=0, uniformity_threshold=0.0, split="midpoint", max_depth=1)
    assert mid[:, 0, :].tolist() == [[0, 3], [4, 7]]


def test_allocate_counts_largest_remainder():
    # clip → [0, 2.5, 1.5, 1] sum 5 → scaled to 4: [0, 2, 1.2, 0.8] → floors [0,2,1,0], one more to the 0.8
    assert allocate_counts(np.array([-3.0, 2.5, 1.5, 1.0]), 4).tolist() == [0, 2, 1, 1]
    assert allocate_counts(np.array([-1.0, -2.0]), 3, volumes=np.array([1, 2])).tolist() == [1, 2]
    assert allocate_counts(np.array([0.2, 0.2, 0.2]), 2).tolist() == [1, 1, 0]


# ----------------------------------------------------------- accounting
def test_privacy_accounting_sequential_composition():
    t = DPCube(class_column="y", epsilon=0.4, alpha=0.25, random_state=0).fit(_table())
    steps = t.privacy_report_.steps
    assert [s.epsilon for s in steps] == pytest.approx([0.1, 0.3])
    assert [s.scale for s in steps] == pytest.approx([10.0, 1 / 0.3])
    assert t.epsilon_spent_ == pytest.approx(0.4)
    assert len(t.privacy_report_.to_frame()) == 2
    c = DPCube(class_column="y", epsilon=0.4, partitioning="cell", random_state=0).fit(_table())
    assert [s.epsilon for s in c.privacy_report_.steps] == [0.4] and c.epsilon_spent_ == 0.4


# ------------------------------------------------------------ parameters
@pytest.mark.parametrize(
    "bad",
    [
        {"epsilon": 0}, {"epsilon": -1.0}, {"epsilon": float("nan")}, {"epsilon": "x"},
        {"alpha": 0.0}, {"alpha": 1.0}, {"alpha": 1.5}, {"max_depth": -1}, {"bins": 0},
        {"min_count": -1}, {"uniformity_threshold": float("inf")}, {"split": "mean"},
        {"split_dimension": "class"}, {"partitioning": "grid"}, {"neighbouring": "swap"},
        {"bounds": {"a": (2.0, 1.0)}}, {"bounds": {"job": (0, 1)}}, {"domains": {"a": ["x"]}},
        {"max_cells": 10},
    ],
)
def test_bad_parameters_raise(bad):
    with pytest.raises(ParameterError):
        DPCube(class_column="y", **bad).fit(_table())


def test_column_outside_schema_is_refused():
    schema = Schema(["a"], ["job"], "y")
    with pytest.raises(SchemaError, match="'age'"):
        DPCube(schema=schema).fit(_table())


def test_registry_clone_and_params():
    assert get_technique("dpcube") is DPCube
    t = make_technique("dpcube", class_column="y", random_state=4, params={"epsilon": 0.3, "bins": 5})
    p = t.get_params()
    assert p["epsilon"] == 0.3 and p["bins"] == 5 and p["alpha"] == 0.5
    c = clone(t)
    assert c.get_params() == p
    pd.testing.assert_frame_equal(c.fit_transform(_table()), t.fit_transform(_table()))
