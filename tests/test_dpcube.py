"""DPCube (Xiao, Xiong & Yuan 2010; paper 000 §7.2/§8.4): invariants, declared domain, noise,
selection, bin edges, accounting, parameters, utility targets."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from sklearn.base import clone

import ppdm.anonymize._dp_partition as _dp_partition
from ppdm.anonymize import get_technique, make_technique
from ppdm.anonymize._dp_mechanisms import (
    discrete_laplace,
    discrete_laplace_variance,
    dp_bin_edges,
    gumbel_top_k,
    split_purity_scores,
)
from ppdm.anonymize.differential_privacy import (
    CoarseGridWarning,
    DomainFromDataWarning,
    DPCube,
    _best_cut_gain,
    _fmt_count,
    allocate_counts,
    auto_bins,
    box_sums,
    box_volumes,
    count_cells,
    kd_partition,
    measurements_path,
)
from ppdm.data import Schema
from ppdm.errors import ParameterError, SchemaError

pytestmark = [pytest.mark.filterwarnings("ignore::ppdm.anonymize.differential_privacy.CoarseGridWarning")]


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


SCHEMA = Schema(["a", "age"], ["job"], "y", integer=["age"], bounds={"a": (-4.0, 6.0), "age": (0, 100)},
                categories={"job": ["clerk", "nurse", "pilot", "vet"], "y": ["no", "yes"]})
DECLARED = {"bounds": {"a": (-4.0, 6.0), "age": (0, 100)},
            "domains": {"job": ["clerk", "nurse", "pilot", "vet"], "y": ["no", "yes"]}}


@st.composite
def tables(draw) -> pd.DataFrame:
    n = draw(st.integers(2, 30))
    floats = st.floats(-50, 50, allow_nan=False, allow_subnormal=False)
    a = draw(st.lists(floats, min_size=n, max_size=n))
    k = draw(st.lists(st.integers(-5, 8), min_size=n, max_size=n))
    c = draw(st.lists(st.sampled_from(["p", "q", "r", "s"]), min_size=n, max_size=n))  # "s" is undeclared
    y = draw(st.lists(st.sampled_from([0, 1, 2]), min_size=n, max_size=n))
    return pd.DataFrame({"a": a, "k": k, "c": c, "y": y})


TABLE_SCHEMA = Schema(["a", "k"], ["c"], "y", integer=["k"], bounds={"a": (-20.0, 30.0), "k": (-2, 6)},
                      categories={"c": ["p", "q", "r"], "y": [0, 1, 2]})

params = st.fixed_dictionaries(
    {
        "epsilon": st.sampled_from([0.05, 0.5, 2.0, math.inf]),
        "alpha": st.sampled_from([0.2, 0.5, 0.8]),
        "partitioning": st.sampled_from(["kd", "cell"]),
        "bins": st.sampled_from(["auto", 1, 2, 4]),
        "edges": st.sampled_from(["quantile", "equal"]),
        "selection": st.sampled_from(["auto", "off"]),
        "split": st.sampled_from(["median", "midpoint"]),
        "split_dimension": st.sampled_from(["widest", "class-first"]),
        "placement": st.sampled_from(["cells", "uniform"]),
        "max_depth": st.sampled_from([None, 0, 2]),
        "combine": st.booleans(),
        "neighbouring": st.sampled_from(["add-remove", "replace"]),
        "unknown": st.sampled_from(["drop", "other"]),
    }
)


# --------------------------------------------------------------- invariants
@settings(max_examples=40, deadline=None)
@given(df=tables(), p=params, seed=st.integers(0, 2**16))
def test_partitions_tile_the_grid_and_records_stay_in_the_declared_domain(df, p, seed):
    t = DPCube(schema=TABLE_SCHEMA, random_state=seed, **p).fit(df)
    boxes = t.partitions_
    shape = t.grid_.shape
    # disjoint boxes whose volumes add up to the grid: each cell covered exactly once
    cover = np.zeros(shape, dtype=int)
    for box in boxes:
        cover[tuple(slice(a, b + 1) for a, b in box)] += 1
    assert np.all(cover == 1)
    assert box_volumes(boxes).sum() == t.grid_.n_cells
    kept = t.private_report_["records_used"]
    assert t.partition_counts_.sum() == kept == len(df) - t.private_report_["dropped_unknown_category"]

    z = t.transform(df)
    if p["neighbouring"] == "replace":  # n public: as many records as the input, its index
        assert len(z) == len(df) and z.index.equals(df.index) and t.n_rows_ is None
    else:
        assert len(z) == t.n_rows_ >= 1 and z.index.equals(pd.RangeIndex(len(z)))
    # columns in order; types from the declaration, whatever the input's dtypes
    assert list(z.columns) == list(df.columns)
    assert z["a"].dtype == np.float64 and z["k"].dtype == np.int64
    # declared whole-number classes, unless an "other" cell (text) joins them
    assert z["y"].dtype == (np.int64 if p["unknown"] == "drop" else object)
    # every synthetic record falls in a partition that was given records, as many as allocated
    got = np.bincount(t.partition_index(z), minlength=len(boxes))
    assert np.array_equal(got, t.allocate(len(z)))
    # values inside the declared domain, never the undeclared category
    assert z["a"].between(-20, 30).all() and z["k"].between(-2, 6).all()
    allowed = {"p", "q", "r"} | ({"other"} if p["unknown"] == "other" else set())
    assert set(z["c"]) <= allowed and set(z["y"]) <= {0, 1, 2, "other"}


@settings(max_examples=15, deadline=None)
@given(df=tables(), p=params, seed=st.integers(0, 2**16))
def test_same_seed_same_output(df, p, seed):
    z1 = DPCube(schema=TABLE_SCHEMA, random_state=seed, **p).fit_transform(df)
    t = DPCube(schema=TABLE_SCHEMA, random_state=seed, **p)
    z2 = t.fit_transform(df)
    pd.testing.assert_frame_equal(z1, z2)
    pd.testing.assert_frame_equal(z2, t.transform(df))  # transform redraws from the same seed


def test_noise_off_gives_true_counts_and_n_rows():
    df = _table()
    t = DPCube(schema=SCHEMA, epsilon=math.inf, random_state=0).fit(df)
    assert np.array_equal(t.noisy_counts_, t.partition_counts_)
    assert t.n_rows_ == len(df)
    assert np.array_equal(t.allocate(len(df)), t.partition_counts_.astype(int))
    z = t.transform(df)
    # with exact counts every partition receives exactly its own records back (as new values)
    assert np.array_equal(np.bincount(t.partition_index(z), minlength=len(t.partitions_)),
                          np.bincount(t.partition_index(df), minlength=len(t.partitions_)))
    assert not t.privacy_report_["differentially_private"]
    assert t.privacy_report_["guarantee"].startswith("Not differentially private")


def test_cell_placement_follows_the_phase_1_cells():
    # noise off: inside each partition, records land only in cells that hold original records
    df = _table(200)
    kw = {"epsilon": math.inf, "bins": 4, "edges": "equal", "max_depth": 0, "random_state": 0}
    t = DPCube(schema=SCHEMA, **kw).fit(df)
    assert len(t.partitions_) == 1  # one partition: the root
    z = t.transform(df)
    occupied = {tuple(c) for c in t.cell_indices(df)}
    assert {tuple(c) for c in t.cell_indices(z)} <= occupied
    u = DPCube(schema=SCHEMA, placement="uniform", **kw).fit_transform(df)
    assert not {tuple(c) for c in t.cell_indices(u)} <= occupied  # uniform over the box


@pytest.mark.parametrize("partitioning", ["kd", "cell"])
def test_a_grid_of_one_cell(partitioning):
    # point bounds and a tiny budget: every dimension has one cell, the grid is one box
    df = pd.DataFrame({"a": [0.0, 0.0], "k": [0, 0], "c": ["p", "p"], "y": [0, 0]})
    sch = Schema(["a", "k"], ["c"], "y", integer=["k"], categories={"c": ["p"], "y": [0]})
    t = DPCube(schema=sch, bounds={"a": (0, 0), "k": (0, 0)}, epsilon=0.05, partitioning=partitioning,
               random_state=0).fit(df)
    assert t.grid_.n_cells == 1 and len(t.partitions_) == 1
    z = t.transform(df)
    assert len(z) == t.n_rows_ and (z["a"] == 0.0).all() and (z["c"] == "p").all()


def test_class_first_gives_class_pure_partitions():
    t = DPCube(schema=SCHEMA, epsilon=math.inf, split_dimension="class-first", random_state=0).fit(_table())
    j = t.grid_.columns.index("y")
    assert np.all(t.partitions_[:, j, 0] == t.partitions_[:, j, 1])


# ------------------------------------------------------------------ domain
def test_declared_domain_from_parameters_and_clamped_outliers():
    df = _table()
    with warnings.catch_warnings():
        warnings.simplefilter("error", DomainFromDataWarning)
        t = DPCube(class_column="y", epsilon=1.0, bins=10, edges="equal", random_state=0,
                   bounds={"a": (-1.0, 1.0), "age": (0, 100)}, domains=DECLARED["domains"])
        z = t.fit_transform(df)
    assert t.privacy_report_["differentially_private"] and not t.privacy_report_["domain_from_data"]
    assert t.privacy_report_["domain"]["declared"] == ["a", "age", "job", "y"]
    assert z["a"].between(-1.0, 1.0).all() and z["age"].between(0, 100).all()
    assert t.grid_.shape == (10, 10, 4, 2)
    # the declaration says nothing of whole numbers: every numeric attribute is continuous
    assert z["age"].dtype == np.float64
    # how many values were clamped is the owner's secret
    assert t.private_report_["clamped_to_bounds"]["a"] == int((df["a"].abs() > 1).sum())


def test_declared_domain_from_the_schema_and_parameter_precedence():
    df = _table()
    with warnings.catch_warnings():
        warnings.simplefilter("error", DomainFromDataWarning)
        t = DPCube(schema=SCHEMA, bins=5, edges="equal", random_state=0).fit(df)
        assert t.privacy_report_["differentially_private"]
        assert t.grid_.dims[0].edges[[0, -1]].tolist() == [-4.0, 6.0]
        assert t.grid_.dims[2].values == ["clerk", "nurse", "pilot", "vet"]
        t2 = DPCube(schema=SCHEMA, bins=5, edges="equal", bounds={"a": (-2, 2)}, random_state=0).fit(df)
        assert t2.grid_.dims[0].edges[[0, -1]].tolist() == [-2.0, 2.0]


def test_domain_from_data_warns_and_the_report_says_not_dp():
    with pytest.raises(SchemaError, match="bounds of 'a', 'age' and categories of 'job', 'y' are not declared"):
        DPCube(class_column="y", random_state=0).fit(_table())
    with pytest.warns(DomainFromDataWarning, match="'a'.*not differentially private"):
        t = DPCube(class_column="y", domain_from_data=True, random_state=0).fit(_table())
    r = t.privacy_report_
    assert r["domain_from_data"] and not r["differentially_private"] and not r["domain_declared"]
    assert r["domain"]["from_data"] == ["a", "age", "job", "y", "the column types"]
    assert r["guarantee"].startswith("Not differentially private: 'a', 'age', 'job', 'y', the column types were read")


def test_unknown_categories_and_undeclared_missing_cells_drop_or_go_to_other():
    df = _table(100)
    df.loc[[0, 1], "job"] = "astronaut"
    df.loc[2, "y"] = "maybe"
    df.loc[3, "a"] = np.nan
    df.loc[4, "y"] = None
    t = DPCube(schema=SCHEMA, epsilon=math.inf, random_state=0).fit(df)
    pr = t.private_report_
    assert pr["dropped_unknown_category"] == 3 and pr["dropped_missing"] == 2 and pr["records_used"] == 95
    o = DPCube(schema=SCHEMA, epsilon=math.inf, unknown="other", other_label="(other)", random_state=0).fit(df)
    z = o.transform(df)
    assert o.private_report_["records_used"] == 98  # only the two missing cells drop their records
    assert (z["job"] == "(other)").sum() == 2 and (z["y"] == "(other)").sum() == 1


def test_nullable_columns_model_missing_cells():
    df = _table(200)
    df.loc[:39, "a"] = np.nan
    df.loc[40:59, "job"] = None
    t = DPCube(schema=SCHEMA, epsilon=math.inf, nullable=["a", "job"], random_state=0).fit(df)
    z = t.transform(df)
    assert t.private_report_["records_used"] == 200
    assert z["a"].isna().sum() == 40 and z["job"].isna().sum() == 20
    assert t.privacy_report_["domain"]["nullable"] == ["a", "job"]
    with pytest.raises(ParameterError, match="nullable names 'b'"):
        DPCube(schema=SCHEMA, nullable=["b"]).fit(df)


def test_types_come_from_the_declaration():
    df = _table().astype({"age": float})
    sch = Schema(["a", "age"], ["job"], "y", integer=["age"], bounds=SCHEMA.bounds,
                 categories={"job": SCHEMA.categories["job"], "y": [0, 1]})
    df["y"] = np.where(df["y"] == "yes", 1.0, 0.0)  # the class arrives as floats
    z = DPCube(schema=sch, random_state=0).fit_transform(df)
    assert z["age"].dtype == np.int64 and z["y"].dtype == np.int64 and z["job"].dtype == object


def test_column_outside_schema_is_refused():
    with pytest.raises(SchemaError, match="'age'"):
        DPCube(schema=Schema(["a"], ["job"], "y")).fit(_table())



def test_a_weight_column_is_synthesized_not_copied():
    """A sampling weight (schema role ``weight``) is x's, record by record: DPCube synthesizes it
    from the DP counts like a numeric attribute, inside its declared bounds; the release keeps the
    column and never holds x's weights (continuous weights: a copied one would match exactly).
    Without public bounds for it, the refusal names the weight, as it would any attribute."""
    from dataclasses import replace

    df = _table()
    df["w"] = np.random.default_rng(3).uniform(1.0, 9.0, len(df))
    sch = replace(SCHEMA, weight="w")  # a schema declares bounds of attributes; the weight's go to bounds=
    z = DPCube(schema=sch, bounds={"w": (0.0, 10.0)}, epsilon=1.0, random_state=0).fit_transform(df)
    assert list(z.columns) == list(df.columns) and z["w"].dtype == np.float64
    assert z["w"].between(0.0, 10.0).all() and not np.isin(z["w"].to_numpy(), df["w"].to_numpy()).any()
    with pytest.raises((SchemaError, ParameterError), match="'w'"):
        DPCube(schema=sch, epsilon=1.0, random_state=0).fit(df)

# ----------------------------------------------------------------- noise
def test_discrete_laplace_is_two_sided_geometric():
    rng = np.random.default_rng(1)
    for sens, eps in [(1.0, 0.5), (2.0, 0.1), (1.0, 4.0)]:
        noise = discrete_laplace(np.zeros(200_000), sens, eps, rng)
        assert np.array_equal(noise, np.round(noise))
        assert np.var(noise) == pytest.approx(discrete_laplace_variance(sens, eps), rel=0.03)
        a = math.exp(-eps / sens)
        # P(k) ∝ a^|k|: P(0) = (1 − a)/(1 + a), and P(k+1)/P(k) = a
        assert np.mean(noise == 0) == pytest.approx((1 - a) / (1 + a), abs=0.005)
        if eps < 2:
            assert np.mean(noise == 2) / np.mean(noise == 1) == pytest.approx(a, rel=0.05)
    # variance by hand: ε = ln 2, Δ = 1 → a = 1/2 → 2·(1/2)/(1/2)² = 4
    assert discrete_laplace_variance(1.0, math.log(2)) == pytest.approx(4.0)
    assert np.array_equal(discrete_laplace(np.arange(3.0), 1.0, math.inf, rng), np.arange(3.0))


@pytest.mark.parametrize("neighbouring,sens,eps2", [("add-remove", 1.0, 0.8 * 0.95 * 0.75),
                                                    ("replace", 2.0, 0.8 * 0.75)])
def test_partition_count_noise_variance(neighbouring, sens, eps2):
    df = _table(40)
    res = []
    for seed in range(300):
        t = DPCube(schema=SCHEMA, epsilon=0.8, alpha=0.25, bins=3, edges="equal", neighbouring=neighbouring,
                   random_state=seed).fit(df)
        res.append(t.noisy_counts_ - t.partition_counts_)
    r = np.concatenate(res)
    assert len(r) >= 300
    assert np.var(r) == pytest.approx(discrete_laplace_variance(sens, eps2), rel=0.15)


def test_noisy_size_and_released_rows():
    df = _table(200)
    rows, est = [], []
    for seed in range(200):
        t = DPCube(schema=SCHEMA, epsilon=1.0, bins=3, edges="equal", random_state=seed).fit(df)
        rows.append(t.n_rows_)
        est.append(t.n_noisy_)
        assert len(t.transform(df.iloc[:7])) == t.n_rows_  # the input's size does not matter
    rows_a = np.array(rows)
    # an unbiased estimate of n, never exactly n every time (n is private under add/remove-one)
    assert np.mean(est) == pytest.approx(200, abs=3)
    assert len(set(rows)) > 5 and np.abs(rows_a - 200).max() < 100
    # its variance is no larger than that of the phase-0 count alone
    assert np.var(est) < discrete_laplace_variance(1.0, 0.05)


def test_larger_epsilon_gives_closer_counts():
    df = _table(80)

    def err(eps: float) -> float:
        e = []
        for seed in range(20):
            t = DPCube(schema=SCHEMA, epsilon=eps, partitioning="cell", bins=3, edges="equal",
                       random_state=seed).fit(df)
            e.append(np.mean(np.abs(t.noisy_counts_ - t.partition_counts_)))
        return float(np.mean(e))

    errs = [err(e) for e in (0.05, 0.5, 5.0)]
    assert errs[0] > errs[1] > errs[2]
    # mean absolute noise is about 1/ε1 when ε1 is small: the ratio tracks the budgets
    assert errs[0] / errs[1] == pytest.approx(10, rel=0.15)


# ------------------------------------------------------- selection and edges
def test_split_purity_scores_by_hand():
    # values 1,2,3,4 with classes 0,0,1,1: the cut 2|3 makes two pure groups: 2²/2 + 2²/2 = 4
    # codes [0,0,1,1] of a categorical attribute: the same groups; codes [0,1,0,1]: (1+1)/2·2 = 2
    y = np.array([0, 0, 1, 1])
    s = split_purity_scores([np.array([1.0, 2, 3, 4]), np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1])],
                            ["values", "codes", "codes"], y, 2)
    assert s.tolist() == pytest.approx([4.0, 4.0, 2.0])
    # a constant attribute: no split, the root's purity (2² + 2²)/4 = 2
    assert split_purity_scores([np.zeros(4)], ["values"], y, 2)[0] == pytest.approx(2.0)


@settings(max_examples=200, deadline=None)
@given(v=st.lists(st.integers(0, 4), min_size=1, max_size=25), data=st.data())
def test_split_purity_scores_have_sensitivity_one(v, data):
    n = len(v)
    y = data.draw(st.lists(st.integers(0, 2), min_size=n, max_size=n))
    codes = data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    extra = data.draw(st.tuples(st.integers(0, 4), st.integers(0, 2), st.integers(0, 3)))
    before = split_purity_scores([np.array(v, float), np.array(codes)], ["values", "codes"], np.array(y), 3)
    after = split_purity_scores([np.array([*v, extra[0]], float), np.array([*codes, extra[2]])],
                                ["values", "codes"], np.array([*y, extra[1]]), 3)
    assert np.all(np.abs(after - before) <= 1 + 1e-9)


def test_gumbel_top_k_is_the_exponential_mechanism():
    rng = np.random.default_rng(0)
    scores = np.array([0.0, 1.0, 2.0])
    assert gumbel_top_k(scores, 2, math.inf, 1.0, rng).tolist() == [2, 1]
    # one pick: P(i) ∝ exp(ε·u_i/(2Δ)); with ε = 2, Δ = 1: ∝ e^0, e^1, e^2
    picks = np.array([gumbel_top_k(scores, 1, 2.0, 1.0, rng)[0] for _ in range(20_000)])
    want = np.exp(scores) / np.exp(scores).sum()
    got = np.bincount(picks, minlength=3) / len(picks)
    assert stats.chisquare(np.bincount(picks, minlength=3), want * len(picks)).pvalue > 1e-3
    assert got == pytest.approx(want, abs=0.015)


def test_dp_bin_edges_by_hand():
    rng = np.random.default_rng(0)
    x = np.repeat(np.arange(16.0) + 0.5, 10)  # 10 records in each of the pieces of [0, 16]
    edges, hull = dp_bin_edges(x, 0.0, 16.0, 4, math.inf, 1.0, False, rng, pieces=16, zoom_levels=0)
    assert edges.tolist() == [4.0, 8.0, 12.0] and hull == (0.0, 16.0)
    # records only in [4, 8): empty pieces carry no mass; the hull is the occupied range and one
    # piece on each side
    edges, hull = dp_bin_edges(np.linspace(4.1, 7.9, 40), 0.0, 16.0, 2, math.inf, 1.0, False, rng,
                               pieces=16, zoom_levels=0)
    assert hull == (3.0, 9.0) and edges.tolist() == [6.0]
    # most records share one value: zooming resolves it (zeros apart from the rest)
    x = np.concatenate([np.zeros(300), np.linspace(0.5, 10, 100)])
    edges, _ = dp_bin_edges(x, 0.0, 100.0, 2, math.inf, 1.0, False, rng, pieces=16, zoom_levels=2)
    assert 0 < edges[0] < 0.5
    flat, _ = dp_bin_edges(x, 0.0, 100.0, 2, math.inf, 1.0, False, rng, pieces=16, zoom_levels=0)
    assert flat[0] > 0.5
    # whole numbers: cuts c split x ≤ c−1 | x ≥ c
    edges, hull = dp_bin_edges(np.arange(1, 11).repeat(5).astype(float), 1, 10, 2, math.inf, 1.0, True, rng,
                               pieces=10, zoom_levels=0)
    assert edges.tolist() == [6.0] and hull == (1.0, 10.0)


def test_selection_picks_the_attributes_that_separate_the_classes():
    rng = np.random.default_rng(0)
    n = 3000
    y = rng.integers(0, 2, n)
    cols = {f"noise{j}": rng.uniform(0, 10, n) for j in range(12)}
    cols["signal"] = np.where(y == 1, rng.uniform(6, 10, n), rng.uniform(0, 4, n))
    cols["group"] = np.where(rng.random(n) < 0.9, y, 1 - y)
    df = pd.DataFrame({**cols, "y": y})
    num = [c for c in df.columns if c.startswith("noise")] + ["signal"]
    sch = Schema(num, ["group"], "y", bounds=dict.fromkeys(num, (0, 10)), categories={"group": [0, 1], "y": [0, 1]})
    t = DPCube(schema=sch, epsilon=5.0, random_state=0).fit(df)
    assert {"signal", "group"} <= set(t.selected_) and len(t.selected_) < 14
    names = [p["name"] for p in t.privacy_report_["phases"]]
    assert any(n.startswith("attribute selection") for n in names)
    z = t.transform(df)
    # the selected attributes keep the class structure; the others are uniform over their bounds
    assert z.groupby("y")["signal"].mean().diff().iloc[-1] > 3
    # a narrow table spends nothing on selection
    small = DPCube(schema=SCHEMA, random_state=0).fit(_table(2000))
    assert not any(p["name"].startswith("attribute selection") for p in small.privacy_report_["phases"])


def _one_signal_table(n: int = 400) -> tuple[pd.DataFrame, Schema]:
    """One attribute that separates the classes, eleven that do not: phase S keeps few of them."""
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, n)
    cols = {f"w{j}": rng.choice([0.0, 0.5], n) for j in range(10)}  # word-frequency-like: near 0 in [0, 100]
    cols["runs"] = rng.integers(1, 20, n)  # a whole number declared in [1, 10 000]
    cols["signal"] = np.where(y == 1, rng.uniform(60, 100, n), rng.uniform(0, 40, n))
    df = pd.DataFrame({**cols, "y": y})
    num = [c for c in df.columns if c != "y"]
    bounds = {**dict.fromkeys(num, (0.0, 100.0)), "runs": (1, 10_000)}
    return df, Schema(num, [], "y", integer=["runs"], bounds=bounds, categories={"y": [0, 1]})


def test_wide_tables_release_attributes_without_bins_at_the_centre():
    df, sch = _one_signal_table()
    centre = DPCube(schema=sch, epsilon=1.0, random_state=0).fit(df)
    uniform = DPCube(schema=sch, epsilon=1.0, values="uniform", random_state=0).fit(df)
    assert centre.values_ == "center-unbinned" and uniform.values_ == "uniform"
    left_out = [c for c in sch.numeric if c not in centre.selected_]
    assert left_out and "signal" in centre.selected_
    z, zu = centre.transform(df), uniform.transform(df)
    for c in left_out:
        # by hand: the centre of [0, 100] is 50.0; of the whole numbers 1..10 000, (1 + 10 000) // 2 = 5000
        assert (z[c] == (5000 if c == "runs" else 50.0)).all(), c
        assert zu[c].nunique() > 10 and zu[c].min() >= sch.bounds[c][0] and zu[c].max() <= sch.bounds[c][1]
    assert z["runs"].dtype == np.int64
    # the selected attribute stays uniform inside its cells and keeps the class structure
    assert z["signal"].nunique() > 10 and z.groupby("y")["signal"].mean().diff().iloc[-1] > 20
    # values="center": one value per cell, the centre of the cell's range (narrowed to the DP hull)
    every = DPCube(schema=sch, epsilon=1.0, values="center", random_state=0).fit(df)
    dim = next(d for d in every.grid_.dims if d.name == "signal")
    a, b = dim.edges[:-1], dim.edges[1:]
    if dim.support is not None:
        a, b = np.maximum(a, dim.support[0]), np.minimum(b, dim.support[1])
    assert set(every.transform(df)["signal"].unique()) <= set((a + (b - a) / 2).tolist())
    # placed for free: the same seed makes the same noisy outputs, budget and record count either way
    assert centre.epsilon_spent_ == uniform.epsilon_spent_ == 1.0
    assert np.array_equal(centre.noisy_counts_, uniform.noisy_counts_) and len(z) == len(zu)
    assert centre.privacy_report_["phases"] == uniform.privacy_report_["phases"]
    # a narrow table (every attribute fits, no phase S) keeps Xiao et al.'s uniform draws
    assert DPCube(schema=SCHEMA, random_state=0).fit(_table(2000)).values_ == "uniform"
    assert DPCube(schema=SCHEMA, values="center", random_state=0).fit(_table(2000)).values_ == "center"
    with pytest.raises(ParameterError, match="values must be 'auto', 'uniform', 'center-unbinned' or 'center'"):
        DPCube(schema=sch, values="middle").fit(df)


def test_class_first_by_default_when_the_attributes_were_chosen_for_the_class():
    df, sch = _one_signal_table()
    t = DPCube(schema=sch, epsilon=1.0, random_state=0).fit(df)
    assert t.split_dimension_ == "class-first"
    # every partition holds one class: the class dimension (last in the grid) was cut first
    cls = [d.name for d in t.grid_.dims].index("y")
    assert len(t.partitions_) > 1 and (t.partitions_[:, cls, 0] == t.partitions_[:, cls, 1]).all()
    widest = DPCube(schema=sch, epsilon=1.0, split_dimension="widest", random_state=0).fit(df)
    assert widest.split_dimension_ == "widest"
    # a narrow table (every attribute fits, no phase S) keeps Xiao et al.'s widest-first cuts
    assert DPCube(schema=SCHEMA, random_state=0).fit(_table(2000)).split_dimension_ == "widest"


def test_the_grid_grows_with_epsilon():
    df = _table(2000)
    cells = [DPCube(schema=SCHEMA, epsilon=e, random_state=0).fit(df).grid_.n_cells for e in (0.1, 1, 10)]
    assert cells[0] < cells[1] < cells[2]


# --------------------------------------------------------------- kd-tree
def test_kd_partition_reads_only_the_noisy_histogram():
    t = DPCube(schema=SCHEMA, epsilon=1.0, bins=4, edges="equal", random_state=3).fit(_table())
    hist = t.histogram_noisy_.copy()  # the tree needs nothing but this array
    e1 = [p for p in t.privacy_report_["phases"] if p["name"].startswith("cell histogram")][0]["epsilon"]
    again = kd_partition(hist, noise_var=discrete_laplace_variance(1.0, e1), min_count=t.min_count_)
    assert np.array_equal(t.grid_.expand(again), t.partitions_)


def test_kd_partition_hand_example():
    # 1-d histogram [0, 10, 0, 0, 10, 0, 0, 0]: weighted median cut after cell 1, then each side again
    h = np.array([0.0, 10, 0, 0, 10, 0, 0, 0])
    boxes = kd_partition(h, noise_var=0.0, min_count=5.0, split_threshold=0.0)
    assert boxes[:, 0, :].tolist() == [[0, 0], [1, 1], [2, 3], [4, 4], [5, 7]]
    assert box_sums(h, boxes).tolist() == [0, 10, 0, 10, 0]
    assert kd_partition(np.ones((4, 4)), noise_var=0.0).shape == (1, 2, 2)
    assert kd_partition(h, noise_var=0.0, max_depth=0).shape == (1, 1, 2)
    mid = kd_partition(np.ones(8) + np.arange(8), noise_var=0.0, split_threshold=0.0, split="midpoint", max_depth=1)
    assert mid[:, 0, :].tolist() == [[0, 3], [4, 7]]


def test_uniformity_test_hand_example():
    # [4, 4, 0, 0]: cuts after cell 0, 1, 2 reduce the squared error around the mean (2) by
    # (4 − 4/3)²·1·3/4 = 16/3, (4 − 0)²·2·2/4 = 16 and 16/3; the best is 16, with m = 3 cuts
    h = np.array([4.0, 4, 0, 0])
    gain, m = _best_cut_gain(h)
    assert gain == pytest.approx(16.0) and m == 3
    # split iff 16 > (split_threshold + 2·ln 3)·σ²: with σ² = 1, threshold 13 splits, 14 does not
    assert len(kd_partition(h, noise_var=1.0, split_threshold=13.0)) > 1
    assert len(kd_partition(h, noise_var=1.0, split_threshold=14.0)) == 1
    assert _best_cut_gain(np.array([[6.0, 0], [0, 0]])) == (pytest.approx(9.0), 2)


def _kd_reference(noisy, noise_var, min_count, split_threshold):
    """The kd-tree with direct sums over each box (what the summed-area tables must reproduce)."""
    out, stack = [], [np.array([[0, n - 1] for n in noisy.shape])]
    while stack:
        box = stack.pop()
        ext = box[:, 1] - box[:, 0] + 1
        sub = noisy[tuple(slice(a, b + 1) for a, b in box)]
        if np.all(ext == 1) or sub.sum() <= min_count:
            out.append(box)
            continue
        gain, m = _best_cut_gain(sub)
        if gain <= (split_threshold + 2 * math.log(m)) * noise_var:
            out.append(box)
            continue
        dim = int(np.argmax(ext))
        other = tuple(i for i in range(noisy.ndim) if i != dim)
        cum = np.cumsum(np.clip(sub, 0, None).sum(axis=other) if other else np.clip(sub, 0, None))
        cut = int(np.searchsorted(cum, cum[-1] / 2)) if cum[-1] > 0 else ext[dim] // 2 - 1
        cut = min(max(cut, 0), ext[dim] - 2)
        left, right = box.copy(), box.copy()
        left[dim, 1] = box[dim, 0] + cut
        right[dim, 0] = box[dim, 0] + cut + 1
        stack += [right, left]
    return np.stack(out)


@pytest.mark.parametrize("shape", [(12,), (5, 7), (4, 3, 6), (3, 3, 2, 4), (2, 3, 2, 2, 3, 2, 2)])
@pytest.mark.parametrize("direct", [False, True])
def test_kd_partition_fast_sums_match_direct_sums(shape, direct, monkeypatch):
    if direct:  # the path for many dimensions, also on small grids
        monkeypatch.setattr(_dp_partition, "_SAT_MAX_DIMS", 0)
    rng = np.random.default_rng(len(shape))
    for _ in range(5):
        noisy = rng.poisson(rng.gamma(0.5, 6.0, shape)).astype(float) + rng.laplace(0, 1.0, shape)
        got = kd_partition(noisy, noise_var=2.0, min_count=2.0, split_threshold=1.0)
        want = _kd_reference(noisy, 2.0, 2.0, 1.0)
        assert np.array_equal(got, want)
        assert len(got) > 1


def test_allocate_counts_largest_remainder():
    # clip → [0, 2.5, 1.5, 1] sum 5 → scaled to 4: [0, 2, 1.2, 0.8] → floors [0,2,1,0], one more to the 0.8
    assert allocate_counts(np.array([-3.0, 2.5, 1.5, 1.0]), 4).tolist() == [0, 2, 1, 1]
    assert allocate_counts(np.array([-1.0, -2.0]), 3, volumes=np.array([1, 2])).tolist() == [1, 2]
    assert allocate_counts(np.array([0.2, 0.2, 0.2]), 2).tolist() == [1, 1, 0]


# ---------------------------------------------------------------- grid size
def test_auto_bins_hand_examples():
    # banknote-sized: 1372·1/(1·2) = 686 cells over 2 classes → 343 per class: 4⁴ = 256 fits, 5⁴ = 625 not;
    # then the first attribute gets 5 (5·4³ = 320 ≤ 343), the second not (5·5·4² = 400)
    assert auto_bins(1372, 1.0, 1.0, [None] * 4, 2, 2.0, 10**7) == [5, 4, 4, 4]
    # replace-one (Δ = 2) halves the grid: 171.5 per class → 3⁴ = 81, 4·3³ = 108, 4·4·3² = 144, 4³·3 = 192 > 171.5
    assert auto_bins(1372, 1.0, 2.0, [None] * 4, 2, 2.0, 10**7) == [4, 4, 3, 3]
    # an integer attribute with 3 whole numbers caps its bins; the other takes the rest: 3·33 = 99 ≤ 100
    assert auto_bins(400, 1.0, 1.0, [3, None], 2, 2.0, 10**7) == [3, 33]
    assert auto_bins(10, 0.01, 1.0, [None] * 3, 2, 2.0, 10**7) == [1, 1, 1]
    assert auto_bins(1372, 1.0, 1.0, [], 2, 2.0, 10**7) == []
    # the grid grows with ε past one cell per record (1000·10/2 = 5000 cells: 71·70 = 4970);
    # the noise off sizes it to one cell per record
    assert auto_bins(1000, 10.0, 1.0, [None] * 2, 1, 2.0, 10**7) == [71, 70]
    assert auto_bins(1000, math.inf, 1.0, [None] * 2, 1, 2.0, 10**7) == [32, 31]
    assert math.prod(auto_bins(10**6, math.inf, 1.0, [None] * 2, 1, 2.0, 10**4)) <= 10**4
    b = auto_bins(1000, 1.0, 1.0, [None] * 58, 2, 2.0, 10**7)
    assert len(b) == 58 and math.prod(b) * 2 <= 500 and set(b) == {1, 2}


def test_cell_counts_never_overflow():
    assert count_cells([10] * 58 + [2]) == 2 * 10**58  # int64 would wrap around
    assert _fmt_count(2 * 10**58) == "≈2.0e58"
    assert _fmt_count(12345) == "12345"
    assert _fmt_count(10**400) == "≈1.0e400"  # beyond float range


def _wide(d: int, n: int = 300) -> tuple[pd.DataFrame, Schema]:
    rng = np.random.default_rng(d)
    y = rng.integers(0, 2, n)
    df = pd.DataFrame({f"a{j}": rng.normal(y * 0.5, 1.0) for j in range(d)})
    df["y"] = y
    cols = [f"a{j}" for j in range(d)]
    return df, Schema(cols, [], "y", bounds=dict.fromkeys(cols, (-5, 5)), categories={"y": [0, 1]})


@pytest.mark.parametrize("d", [22, 58])
def test_wide_tables_get_a_small_grid_or_a_clear_refusal(d):
    df, sch = _wide(d)
    with pytest.warns(CoarseGridWarning, match=f"of the {d} attributes"):
        t = DPCube(schema=sch, random_state=0).fit(df)
    assert t.grid_.n_cells <= t.max_cells and len(t.grid_.array_shape) <= 23
    z = t.transform(df)
    assert z.shape[1] == d + 1 and (z.dtypes == df.dtypes).all()
    with pytest.raises(ParameterError, match=r"≈2\.0e" + str(d) + r" cells.*bins='auto'"):
        DPCube(schema=sch, bins=10, random_state=0).fit(df)


def test_wide_table_cli_exits_2_and_writes_nothing(tmp_path):
    df, sch = _wide(58, 100)
    src, out, sch_file = tmp_path / "wide.csv", tmp_path / "z.csv", tmp_path / "wide.schema.json"
    df.to_csv(src, index=False)
    sch_file.write_text(sch.to_json())
    from typer.testing import CliRunner

    from ppdm.cli.app import app

    # in process (the exit code comes from the command group; test_cli_shell runs the real entry point)
    res = CliRunner().invoke(app, ["anonymize", str(src), "--class", "y", "--method", "dpcube", "--param", "bins=10",
                                   "--schema", str(sch_file), "--out", str(out)])
    assert res.exit_code == 2, res.output
    assert "error: the grid has ≈2.0e58 cells" in res.output and "bins='auto'" in res.output
    assert not out.exists()


def test_many_categories_are_selected_from_or_refused():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({f"c{j}": rng.choice(list("abcdefghij"), 50) for j in range(8)})
    df["y"] = rng.integers(0, 2, 50)
    cats = {f"c{j}": list("abcdefghij") for j in range(8)}
    sch = Schema([], list(cats), "y", categories={**cats, "y": [0, 1]})
    # with a class, the attributes that get cells are chosen: the others are merged into one cell
    t = DPCube(schema=sch, random_state=0).fit(df)
    assert t.grid_.n_cells < 10**3
    with pytest.raises(ParameterError, match="alone make 200000000 cells.*'c0' with 10 values"):
        DPCube(schema=sch, selection="off").fit(df)


# ----------------------------------------------------------- accounting
def test_privacy_accounting_sequential_composition():
    t = DPCube(schema=SCHEMA, epsilon=0.4, alpha=0.25, bins=3, edges="equal", random_state=0).fit(_table())
    phases = t.privacy_report_["phases"]
    assert [p["name"] for p in phases] == ["table size (phase 0)", "cell histogram (phase 1)",
                                           "partition counts (phase 2b)"]
    assert [p["epsilon"] for p in phases] == pytest.approx([0.02, 0.095, 0.285])
    assert [p["noise_scale"] for p in phases] == pytest.approx([50.0, 1 / 0.095, 1 / 0.285])
    assert t.epsilon_spent_ == pytest.approx(0.4)
    c = DPCube(schema=SCHEMA, epsilon=0.4, partitioning="cell", bins=3, edges="equal", random_state=0).fit(_table())
    assert [p["epsilon"] for p in c.privacy_report_["phases"]] == pytest.approx([0.02, 0.38])
    r = DPCube(schema=SCHEMA, epsilon=0.4, neighbouring="replace", bins=3, edges="equal",
               random_state=0).fit(_table())
    phases = r.privacy_report_["phases"]
    assert [p["epsilon"] for p in phases] == pytest.approx([0.2, 0.2])
    assert {p["sensitivity"] for p in phases} == {2.0}
    # with bin edges at quantiles: the edges take quantile_share of what phase 0 leaves
    q = DPCube(schema=SCHEMA, epsilon=1.0, bins=3, random_state=0).fit(_table())
    e = [p["epsilon"] for p in q.privacy_report_["phases"]]
    assert e == pytest.approx([0.05, 0.19, 0.38, 0.38]) and sum(e) == pytest.approx(1.0)


def test_privacy_report_is_json_and_states_the_guarantee():
    t = DPCube(schema=SCHEMA, epsilon=0.5, random_state=3).fit(_table())
    r = json.loads(json.dumps(t.privacy_report_, allow_nan=False))  # strict JSON round trip
    assert r["differentially_private"] and r["epsilon"] == 0.5 and r["epsilon_spent"] == pytest.approx(0.5)
    assert r["neighbouring"]["relation"] == "add-remove" and r["neighbouring"]["count_sensitivity"] == 1.0
    assert r["rows"]["source"] == "noisy count" and r["rows"]["released"] == t.n_rows_
    # whether a seed was given is not public (the private log says it)
    assert "seeded" not in r and not r["domain_from_data"] and r["domain_declared"]
    assert r["count_noise"] == "discrete Laplace (two-sided geometric)"
    assert r["guarantee"].startswith("The release is 0.5-differentially private for neighbouring tables that "
                                     "differ by adding or removing one record")
    unseeded = DPCube(schema=SCHEMA, neighbouring="replace").fit(_table()).privacy_report_
    assert unseeded["assumptions"][1] == r["assumptions"][1] and "fixed seed" not in r["guarantee"]
    assert unseeded["rows"]["source"] == "public n" and "n is public" in " ".join(unseeded["assumptions"])
    off = DPCube(schema=SCHEMA, epsilon=math.inf).fit(_table()).privacy_report_
    assert off["epsilon"] is None and json.dumps(off, allow_nan=False)


def test_measurements_sidecar_holds_the_noisy_outputs_only(tmp_path):
    df = _table(120)
    t = DPCube(schema=SCHEMA, epsilon=1.0, random_state=5).fit(df)
    [p] = t.write_sidecars(tmp_path / "z.csv")
    assert p == measurements_path(tmp_path / "z.csv") == tmp_path / "z.dpcube.json"
    m = json.loads(p.read_text())
    assert m["table_size_noisy"] == t.n0_ and m["rows_released"] == t.n_rows_
    assert m["histogram_noisy"] == np.rint(t.histogram_noisy_).astype(int).reshape(-1).tolist()
    assert m["partition_counts_noisy"] == t.noisy_counts_.tolist()
    assert [d["column"] for d in m["grid"]] == t.grid_.columns
    # nothing exact: no true counts, no count of records
    assert set(m) == {"format", "version", "table_size_noisy", "selected_attributes", "grid", "histogram_shape",
                      "histogram_noisy", "partitions", "partition_counts_noisy", "rows_released"}


# ------------------------------------------------------------ parameters
@pytest.mark.parametrize(
    "bad",
    [
        {"epsilon": 0}, {"epsilon": -1.0}, {"epsilon": float("nan")}, {"epsilon": "x"},
        {"alpha": 0.0}, {"alpha": 1.0}, {"alpha": 1.5}, {"max_depth": -1}, {"bins": 0}, {"bins": "many"},
        {"bins": 2.5}, {"grid_density": 0}, {"grid_density": float("inf")}, {"min_bins": 1},
        {"min_count": -1}, {"split_threshold": float("inf")}, {"split_threshold": -1}, {"split": "mean"},
        {"split_dimension": "class"}, {"partitioning": "grid"}, {"neighbouring": "swap"},
        {"placement": "everywhere"}, {"size_share": 0.0}, {"size_share": 1.0}, {"selection_share": 0.0},
        {"quantile_share": 1.0}, {"selection_share": 0.6, "quantile_share": 0.5}, {"selection": "best"},
        {"edges": "random"}, {"unknown": "keep"}, {"nullable": "a"}, {"domain_from_data": "yes"},
        {"bounds": {"a": (2.0, 1.0)}}, {"bounds": {"job": (0, 1)}}, {"domains": {"a": ["x"]}},
        {"domains": {"job": ["clerk", "clerk", "nurse", "pilot"]}}, {"bins": 10, "max_cells": 10},
        {"max_cells": 0},
    ],
)
def test_bad_parameters_raise(bad):
    with pytest.raises(ParameterError):
        DPCube(schema=SCHEMA, **bad).fit(_table())


def test_registry_clone_and_params():
    assert get_technique("dpcube") is DPCube
    t = make_technique("dpcube", class_column="y", random_state=4, schema=SCHEMA, params={"epsilon": 0.3, "bins": 5})
    p = t.get_params()
    assert p["epsilon"] == 0.3 and p["bins"] == 5 and p["alpha"] == 0.5 and p["neighbouring"] == "add-remove"
    c = clone(t)
    assert c.get_params() == p
    pd.testing.assert_frame_equal(c.fit_transform(_table()), t.fit_transform(_table()))


def test_default_release_with_one_class_or_a_constant_column():
    df = _table()
    one = df.assign(y="yes")
    z = DPCube(schema=SCHEMA, random_state=1).fit_transform(one)
    assert set(z["y"]) <= {"no", "yes"} and list(z.columns) == list(df.columns)
    const = df.assign(a=3.5)
    z = DPCube(schema=SCHEMA, random_state=1).fit_transform(const)
    assert z["a"].between(-4, 6).all()


def test_default_release_cannot_be_made_per_dask_partition():
    dd = pytest.importorskip("dask.dataframe")
    t = DPCube(schema=SCHEMA, random_state=1).fit(_table())
    with pytest.raises(ParameterError, match="own number of records"):
        t.transform(dd.from_pandas(_table(), npartitions=2))


def test_cli_releases_a_shipped_dataset_with_its_declared_domain(tmp_path):
    out = tmp_path / "z.csv"
    from typer.testing import CliRunner

    from ppdm.cli.app import app

    res = CliRunner().invoke(app, ["anonymize", "builtin:banknote", "--class", "class", "--method", "dpcube",
                                   "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "not differentially private" not in res.output
    assert "privacy: The release is 1-differentially private" in res.stdout
    assert (tmp_path / "z.dpcube.json").is_file() and (tmp_path / "z.private.json").is_file()


# -------------------------------------------------------- utility targets (issue: defaults keep the structure)
@pytest.fixture(scope="module")
def banknote_split():
    """Banknotes with its declared domain: 2/3 to release, 1/3 of original records held out."""
    from sklearn.model_selection import train_test_split

    from ppdm.datasets import load
    from ppdm.trees.cart import rules_from_cart

    x, s = load("banknote")
    train, test = train_test_split(x, test_size=1 / 3, stratify=x["class"], random_state=0)
    train, test = train.reset_index(drop=True), test.reset_index(drop=True)
    return train, test, s, rules_from_cart(train, s, random_state=0)


def _quality(z, banknote_split) -> tuple[float, float, float]:
    """(accuracy of CART trained on z on the held-out originals, Rule Accuracy, RLD)."""
    from ppdm.metrics.model import compare_models
    from ppdm.metrics.retention import rule_accuracy, rule_label_distance

    train, test, s, rules = banknote_split
    m = compare_models(train, z, test, "class", s)
    return (float((m.pred_z == m.y_test).mean()), rule_accuracy(train, z, rules, "class").value,
            rule_label_distance(train, z, rules, "class").value)


def _dpcube_quality(banknote_split, eps: float, seeds: range = range(6), **kw) -> np.ndarray:
    train, _, s, _ = banknote_split
    return np.array([_quality(DPCube(epsilon=eps, schema=s, random_state=sd, **kw).fit_transform(train),
                              banknote_split) for sd in seeds])


def test_defaults_keep_banknote_structure_at_epsilon_1(banknote_split):
    train, _, s, _ = banknote_split
    rng = np.random.default_rng(0)
    # the uniform release: every attribute uniform over its declared bounds, labels at random
    uniform = pd.DataFrame({c: rng.uniform(*s.bounds[c], len(train)) for c in s.numeric})
    uniform["class"] = rng.choice(s.categories["class"], len(train))
    u_acc, u_ra, u_rld = _quality(uniform, banknote_split)
    dp = _dpcube_quality(banknote_split, 1.0)
    acc, ra, rld = dp.mean(axis=0)
    # CART trained on z predicts held-out original records (x's own tree: ≈ 0.95; uniform: ≈ 0.5)
    assert acc >= 0.85 and dp[:, 0].min() >= 0.75 and u_acc < 0.65
    assert ra <= 0.6 * u_ra and rld <= 0.7 * u_rld


def test_quality_degrades_smoothly_as_epsilon_falls(banknote_split):
    eps = [10.0, 2.0, 1.0, 0.5, 0.2, 0.1]
    acc = np.array([_dpcube_quality(banknote_split, e, range(4))[:, 0].mean() for e in eps])
    # no cliff: halving the budget never costs more than 0.25 of accuracy ...
    assert np.all(acc[:-1] - acc[1:] <= 0.25), acc
    # ... the trend goes down (small bumps within the spread of the releases), and the grid that
    # grows with ε pays off past ε = 1
    assert np.all(acc[1:] <= acc[:-1] + 0.06), acc
    assert acc[0] - acc[-1] >= 0.15 and acc[0] > acc[2] + 0.02, acc


@pytest.mark.slow
def test_spambase_at_epsilon_1_holds_up_on_every_split(monkeypatch):
    """Issue #29 item 7: spambase (57 attributes) at ε = 1, three stratified 70/30 splits,
    scikit-learn's CART with 10-record leaves trained on the release and tested on held-out
    originals: the mean reaches the majority class plus half the gap to x's own tree, and
    no split falls below the majority class (the widest-first, uniform release gave 0.65,
    0.77 and 0.66 against a target of 0.757). The table is the benchmark's cached copy
    (``PPDM_BENCH_DATA``); skipped when it is absent."""
    from pathlib import Path

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1]))
    from benchmarks import bench_dpcube as bench

    loaded = bench.spambase()
    if loaded is None:
        pytest.skip(f"spambase is not cached in {bench.DATA_DIR} (see benchmarks/bench_dpcube.py)")
    x, schema = loaded
    r = bench.robustness(x, schema)
    assert r["met"], r
    assert r["mean"] >= r["target"] and min(a - m for a, m in zip(r["accuracies"], r["majorities"], strict=True)) >= 0
    # the paper's own placement (widest-first cuts, uniform values) misses the target: the check can fail
    before = bench.robustness(x, schema, split_dimension="widest", values="uniform")
    assert not before["met"]
