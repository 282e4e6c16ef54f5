"""Random substitution (paper 001): matrices, Algorithm 1, reconstruction and MR."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest
from sklearn.base import clone

from ppdm.anonymize import get_technique, make_technique
from ppdm.anonymize.perturbation_matrix import (
    GammaDiagonal,
    condition_number,
    gamma_diagonal,
    gamma_diagonal_inverse,
    gamma_from_privacy,
    keep_probability,
    matrix_entropy,
    matrix_entropy_of,
    t_step_matrix,
)
from ppdm.anonymize.random_substitution import (
    RandomSubstitution,
    SubstitutionMetadata,
    sidecar_path,
    substitute,
)
from ppdm.anonymize.reconstruct import (
    clip_negative,
    estimate_counts,
    estimate_distribution,
    estimation_error,
    largest_remainder,
    matrix_reconstruct,
    reconstruct,
    reduce_error,
)
from ppdm.errors import ParameterError, PPDMError, SchemaError


# ------------------------------------------------------------------ matrices
@pytest.mark.parametrize("gamma,n", [(2, 5), (19, 10), (7.5, 100), (21, 2)])
def test_gamma_diagonal_columns_sum_to_one_and_inverse(gamma, n):
    m = gamma_diagonal(gamma, n)
    assert np.allclose(m.sum(axis=0), 1.0)
    assert np.allclose(m @ gamma_diagonal_inverse(gamma, n), np.eye(n), atol=1e-12)
    assert np.allclose(gamma_diagonal_inverse(gamma, n), np.linalg.inv(m))
    assert condition_number(gamma, n) == pytest.approx(np.linalg.cond(m))
    # amplification: every row's largest over smallest entry is γ (ρ1-to-ρ2 guarantee)
    assert np.allclose(m.max(axis=1) / m.min(axis=1), gamma)


def test_hand_computed_matrix_and_entropy():
    # γ = 2, N = 3: x = 1/4, M = [[.5,.25,.25],...]; H(column) = .5·1 + 2·.25·2 = 1.5 bits
    m = gamma_diagonal(2, 3)
    assert np.allclose(m, [[0.5, 0.25, 0.25], [0.25, 0.5, 0.25], [0.25, 0.25, 0.5]])
    assert matrix_entropy(2, 3) == pytest.approx(1.5)
    assert matrix_entropy_of(m) == pytest.approx(1.5)
    assert matrix_entropy_of(m, prior=np.array([0.2, 0.3, 0.5])) == pytest.approx(1.5)
    assert keep_probability(2, 3) == 0.5
    assert condition_number(2, 3) == pytest.approx(4.0)


@settings(max_examples=40)
@given(st.floats(1.05, 50), st.integers(2, 60))
def test_entropy_closed_form_matches_definition(gamma, n):
    assert matrix_entropy(gamma, n) == pytest.approx(matrix_entropy_of(gamma_diagonal(gamma, n)), rel=1e-9)
    assert 0 <= matrix_entropy(gamma, n) <= np.log2(n) + 1e-12


def test_entropy_monotone_in_gamma_and_n():
    # 001 §4, Fig. 3: entropy grows with N and falls with γ
    assert matrix_entropy(5, 20) < matrix_entropy(5, 40)
    assert matrix_entropy(12, 20) < matrix_entropy(5, 20)


def test_gamma_from_privacy():
    assert gamma_from_privacy(0.05, 0.5) == pytest.approx(19.0)
    g = GammaDiagonal.from_privacy(0.1, 0.4, 8)
    assert g.gamma == pytest.approx(0.4 * 0.9 / (0.1 * 0.6))
    for r1, r2 in [(0.5, 0.5), (0.6, 0.5), (0.0, 0.5), (0.1, 1.0), (-0.1, 0.3)]:
        with pytest.raises(ParameterError):
            gamma_from_privacy(r1, r2)


def test_t_step_matrix_theorem2():
    g, n = 6.0, 7
    m = gamma_diagonal(g, n)
    prev = m
    for t in range(2, 12):
        mt = t_step_matrix(g, n, t)
        assert np.allclose(mt, np.linalg.matrix_power(m, t))
        # Theorem 2: diagonal strictly falls, off-diagonal strictly rises, towards 1/N
        assert np.all(np.diag(mt) < np.diag(prev))
        assert mt[0, 1] > prev[0, 1]
        prev = mt
    assert np.allclose(t_step_matrix(g, n, 400), 1.0 / n)
    assert matrix_entropy_of(t_step_matrix(g, n, 400)) == pytest.approx(np.log2(n))


@pytest.mark.parametrize("bad", [0, -1, 1, 1.0, float("nan"), "ten", True, None])
def test_bad_gamma_rejected(bad):
    with pytest.raises(ParameterError):
        gamma_diagonal(bad, 5)


# ----------------------------------------------------------------- algorithm 1
def test_keep_rate_binomial_and_replacements_uniform():
    rng = np.random.default_rng(3)
    n, n_dom, gamma = 20000, 10, 19.0
    k = rng.integers(0, n_dom, n)
    h = substitute(k, gamma_diagonal(gamma, n_dom), np.random.default_rng(4))
    kept = int((h == k).sum())
    p = keep_probability(gamma, n_dom)
    assert binomtest(kept, n, p).pvalue > 1e-3
    # a replaced value is uniform over the other N-1 values
    off = (h - k)[h != k] % n_dom
    counts = np.bincount(off, minlength=n_dom)[1:]
    from scipy.stats import chisquare

    assert chisquare(counts).pvalue > 1e-3


def test_substitute_general_matrix_follows_columns():
    m = np.array([[0.0, 1.0], [1.0, 0.0]])  # swap always
    k = np.array([0, 1, 1, 0])
    assert substitute(k, m, np.random.default_rng(0)).tolist() == [1, 0, 0, 1]


# ----------------------------------------------------------------- technique
def _table(n: int = 300, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "age": rng.integers(18, 90, n),
            "wage": rng.normal(50, 10, n),
            "job": rng.choice(["a", "b", "c"], n),
            "code": rng.integers(0, 4, n),
            "y": rng.choice(["no", "yes"], n),
        },
        index=pd.RangeIndex(100, 100 + n),
    )


def _fit(df: pd.DataFrame, **kw) -> RandomSubstitution:
    kw.setdefault("gamma", 5)
    kw.setdefault("n_bins", 8)
    return RandomSubstitution(class_column="y", random_state=1, **kw).fit(df)


def test_contract_rows_dtypes_class_untouched():
    df = _table()
    t = _fit(df)
    z = t.transform(df)
    assert list(z.columns) == list(df.columns)
    assert z.index.equals(df.index)
    assert (z.dtypes == df.dtypes).all()
    assert z["y"].equals(df["y"])
    assert set(z["job"]) <= {"a", "b", "c"}
    assert set(z["wage"]) <= set(t.metadata_.attributes["wage"].values)
    assert (z["wage"] != df["wage"]).any()
    assert get_technique("random-substitution") is RandomSubstitution
    assert clone(t).get_params() == t.get_params()
    assert t.get_params()["gamma"] == 5


def test_same_seed_same_output_other_seed_differs():
    df = _table()
    a = RandomSubstitution(class_column="y", gamma=3, random_state=7).fit_transform(df)
    b = RandomSubstitution(class_column="y", gamma=3, random_state=7).fit_transform(df)
    c = RandomSubstitution(class_column="y", gamma=3, random_state=8).fit_transform(df)
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)


def test_integer_column_representatives_are_whole_and_distinct():
    df = _table()
    t = _fit(df, n_bins=20)
    age = t.metadata_.attributes["age"]
    assert age.kind == "binned" and age.integer
    reps = np.asarray(age.values)
    assert np.all(reps == np.round(reps)) and len(set(reps)) == 20
    # x's ages span [18, 89]; bins over it would publish the youngest and the oldest, so the range is
    # narrowed to the grid of 2 (1, 2 or 5 × 10^k at most the width 3.55) strictly inside: 18 is on
    # the grid, so the low end moves to 20; 89 is not, so the high end is 88: [20, 88], bins of 3.4,
    # centres rounded half up (the ends say only that the youngest is 18 or 19 and the oldest 88 or 89)
    assert age.edges[0] == 20 and age.edges[-1] == 88
    edges = np.linspace(20, 88, 21)
    assert np.array_equal(reps, np.floor((edges[:-1] + edges[1:]) / 2 + 0.5))
    # a column with few values uses them as its domain (001 §6)
    assert t.metadata_.attributes["code"].kind == "distinct"
    assert t.metadata_.attributes["code"].values == [0, 1, 2, 3]


@pytest.mark.parametrize("rep", ["low", "high", "random"])
def test_representative_options_stay_inside_bins(rep):
    df = _table()
    t = _fit(df, representative=rep)
    z = t.transform(df)
    for c in ("age", "wage"):
        dom = t.metadata_.attributes[c]
        e = np.asarray(dom.edges)
        assert z[c].between(e[0], e[-1]).all()
    assert (z["age"] == z["age"].round()).all()
    if rep == "random":
        assert z["wage"].nunique() > 8


def test_per_attribute_gamma_and_bins_and_perturb_class():
    df = _table()
    t = _fit(df, gamma={"age": 3, "*": 9}, n_bins={"wage": 12}, perturb_class=True)
    att = t.metadata_.attributes
    assert att["age"].gamma == 3 and att["wage"].gamma == 9 and att["y"].gamma == 9
    assert att["wage"].n == 12 and att["age"].n == 10
    assert (t.transform(df)["y"] != df["y"]).any()
    t2 = _fit(df, gamma=None, rho1=0.05, rho2=0.5, columns=["wage"])
    assert list(t2.metadata_.attributes) == ["wage"]
    assert t2.metadata_.attributes["wage"].gamma == pytest.approx(19)


@pytest.mark.parametrize(
    "params",
    [
        {"gamma": 0},
        {"gamma": -3},
        {"gamma": 1},
        {"gamma": 5, "n_bins": 1},
        {"gamma": 5, "n_bins": 2.5},
        {"gamma": None, "rho1": 0.05},  # no gamma means γ = 5 (DEFAULT_GAMMA); rho1 alone lacks rho2
        {"gamma": None, "rho2": 0.5},
        {"gamma": None, "rho1": 0.5, "rho2": 0.4},
        {"gamma": None, "rho1": 0.3, "rho2": 0.3},
        {"gamma": 5, "rho1": 0.1, "rho2": 0.5},
        {"gamma": 5, "representative": "middle"},
        {"gamma": {"age": 3}},
        {"gamma": {"nope": 3, "*": 4}},
        {"gamma": 5, "columns": ["nope"]},
        {"gamma": 5, "bounds": {"wage": (5, 1)}},
        {"gamma": 5, "perturb_class": "yes"},
        {"gamma": 5, "n_bins": 200, "distinct_domain": False},
    ],
)
def test_bad_parameters_raise(params):
    with pytest.raises(ParameterError):
        RandomSubstitution(class_column="y", **params).fit(_table())


def test_bad_table_raises_schema_error():
    df = _table().astype({"wage": float})
    df.loc[105, "wage"] = np.inf
    with pytest.raises(SchemaError):
        RandomSubstitution(class_column="y", gamma=5).fit(df)
    t = _fit(_table())
    other = _table()
    other.loc[100, "job"] = "zzz"
    with pytest.raises(SchemaError, match="job"):
        t.transform(other)


@settings(max_examples=25)
@given(
    n=st.integers(5, 60),
    gamma=st.floats(1.5, 30),
    n_bins=st.integers(2, 12),
    seed=st.integers(0, 1000),
)
def test_property_invariants(n, gamma, n_bins, seed):
    df = _table(n, seed)
    t = RandomSubstitution(class_column="y", gamma=gamma, n_bins=n_bins, random_state=seed)
    z = t.fit_transform(df)
    assert z.shape == df.shape and (z.dtypes == df.dtypes).all() and z.index.equals(df.index)
    for c, dom in t.metadata_.attributes.items():
        assert np.allclose(dom.matrix.sum(axis=0), 1)
        k = dom.get_index(z[c], released=True)
        assert np.array_equal(np.asarray(dom.get_values(k), dtype=object).astype(str),
                              z[c].to_numpy().astype(float if c in ("age", "wage", "code") else object).astype(str))
    pd.testing.assert_frame_equal(z, t.transform(df))
    r = reconstruct(z, t.metadata_)
    assert r.shape == z.shape and (r.dtypes == df.dtypes).all()


# ------------------------------------------------------------- metadata json
def test_metadata_round_trip_and_sidecar(tmp_path):
    df = _table()
    t = _fit(df)
    md = RandomSubstitution.from_json(t.to_json())
    assert list(md.attributes) == list(t.metadata_.attributes)
    for c, a in md.attributes.items():
        b = t.metadata_.attributes[c]
        assert a.values == b.values and a.kind == b.kind and np.allclose(a.matrix, b.matrix)
    assert "random_state" not in t.to_json()
    out = tmp_path / "Z.csv"
    paths = t.write_sidecars(out)
    assert paths == [tmp_path / "Z.matrices.json"]
    assert json.loads(paths[0].read_text())["class_column"] == "y"
    assert sidecar_path("a/b.csv.gz").name == "b.matrices.json"
    assert sidecar_path("b.parquet").name == "b.matrices.json"


@pytest.mark.parametrize(
    "text",
    ["not json", "[]", '{"format": "other"}', '{"format": "ppdm.random-substitution/1"}',
     '{"format": "ppdm.random-substitution/1", "attributes": [{"column": "a", "kind": "categorical", '
     '"values": [1, 2], "matrix": [[0.9, 0.3], [0.2, 0.8]]}]}'],
)
def test_malformed_metadata(text):
    with pytest.raises(PPDMError):
        SubstitutionMetadata.from_json(text)


# ------------------------------------------------------------- reconstruction
def test_hand_computed_estimate():
    # γ = 2, N = 3, y = (5, 3, 0): X̂ = ((γ+N−1)y − n)/(γ−1) = (4·5−8, 4·3−8, 0−8) = (12, 4, −8)
    m = gamma_diagonal(2, 3)
    xhat = estimate_counts(np.array([5, 3, 0]), m, gamma=2)
    assert np.allclose(xhat, [12, 4, -8])
    assert np.allclose(estimate_counts(np.array([5, 3, 0]), m), [12, 4, -8])
    # heuristic: clip → (12, 4, 0), rescale to 8 → (6, 2, 0)
    assert reduce_error(xhat).tolist() == [6, 2, 0]
    assert estimation_error(np.array([6, 2, 0]), np.array([5, 2, 1])) == pytest.approx(2 / 8)
    assert largest_remainder(np.array([1.0, 1.0, 1.0]), 10).tolist() == [4, 3, 3]


@settings(max_examples=60)
@given(
    st.lists(st.floats(-1e4, 1e4, allow_nan=False), min_size=2, max_size=30),
    st.integers(0, 2**31),
)
def test_clipping_never_increases_error(xhat, seed):
    # 001 Proposition 1: true counts are non-negative, so clipping a negative estimate helps
    xhat = np.asarray(xhat)
    x = np.random.default_rng(seed).integers(0, 50, xhat.size).astype(float)
    x[0] += 1  # non-empty
    assert estimation_error(clip_negative(xhat), x) <= estimation_error(xhat, x) + 1e-12
    if (xhat < -1e-6).any():  # strictly, up to float resolution
        assert estimation_error(clip_negative(xhat), x) < estimation_error(xhat, x)


@settings(max_examples=40)
@given(st.lists(st.floats(0, 1e3), min_size=1, max_size=20).filter(lambda w: sum(w) > 0), st.integers(0, 5000))
def test_largest_remainder_sums_to_n(w, n):
    c = largest_remainder(np.asarray(w), n)
    assert c.sum() == n and (c >= 0).all()
    share = np.asarray(w) * n / sum(w)
    assert np.all(np.abs(c - share) < 1 + 1e-9)


def test_error_falls_with_n():
    rng = np.random.default_rng(0)
    gamma, n_dom = 19.0, 10
    m = gamma_diagonal(gamma, n_dom)
    p = rng.dirichlet(np.ones(n_dom))
    errs = []
    for n in (1_000, 10_000, 100_000):
        e = []
        for s in range(4):
            k = np.random.default_rng(s).choice(n_dom, n, p=p)
            y = np.bincount(substitute(k, m, np.random.default_rng(100 + s)), minlength=n_dom)
            e.append(estimation_error(estimate_counts(y, m), np.bincount(k, minlength=n_dom)))
        errs.append(np.mean(e))
    assert errs[0] > errs[1] > errs[2]
    assert errs[2] < 0.02  # spec §7 tolerance for n = 1e5, k = 10, γ = 19


def test_mr_gives_estimated_counts_and_keeps_order():
    df = _table(500, 2)
    t = _fit(df, gamma=8, n_bins=6)
    z = t.transform(df)
    dom = t.metadata_.attributes["wage"]
    rec = matrix_reconstruct(z["wage"], dom, random_state=0)
    counts = np.bincount(dom.get_index(rec, released=True), minlength=dom.n)
    assert np.array_equal(counts, estimate_distribution(z["wage"], dom))
    # Algorithm 2 assigns values in the released order: a record with a larger released
    # value never gets a smaller reconstructed value
    zi = dom.get_index(z["wage"], released=True)
    ri = dom.get_index(rec, released=True)
    assert np.all(np.diff(ri[np.lexsort((ri, zi))]) >= 0)
    stable = matrix_reconstruct(z["wage"], dom, ties="stable")
    assert np.array_equal(np.bincount(dom.get_index(stable, released=True), minlength=dom.n), counts)
    with pytest.raises(ParameterError):
        matrix_reconstruct(z["wage"], dom, ties="sorted")


def test_reconstruct_table_and_errors():
    df = _table()
    t = _fit(df)
    z = t.transform(df)
    r = reconstruct(z, t.metadata_, random_state=3)
    pd.testing.assert_frame_equal(r, reconstruct(z, t.metadata_, random_state=3))
    assert (r.dtypes == df.dtypes).all() and r["y"].equals(df["y"])
    with pytest.raises(ParameterError):
        reconstruct(z, t.metadata_, columns=["y"])
    with pytest.raises(SchemaError):
        reconstruct(z.drop(columns=["wage"]), t.metadata_)


def test_cli_registry_builds_it():
    t = make_technique("random-substitution", class_column="y", params={"gamma": 10, "n_bins": 20})
    assert isinstance(t, RandomSubstitution) and t.n_bins == 20


def test_float_column_marked_integer_stays_whole():
    df = _table()
    df["age"] = df["age"].astype(float)  # whole values stored as float (e.g. read with NaNs)
    t = _fit(df, n_bins=20)
    assert t.metadata_.attributes["age"].integer
    z = t.transform(df)
    assert z["age"].dtype == float and (z["age"] == z["age"].round()).all()


def test_missing_cells_stay_missing_and_domains_are_observed():
    df = _table().astype({"wage": float})
    df.loc[df.index % 7 == 0, "wage"] = np.nan
    df.loc[df.index % 5 == 0, "job"] = None
    t = RandomSubstitution(class_column="y", gamma=2, random_state=4).fit(df)
    z = t.transform(df)
    assert z["wage"].isna().equals(df["wage"].isna()) and z["job"].isna().equals(df["job"].isna())
    dom = t.metadata_.attributes["job"].values
    assert None not in dom and all(v == v for v in dom)  # the domain holds observed values only
    assert set(z["job"].dropna()) <= set(df["job"].dropna())
    assert (z["job"].dropna() != df.loc[z["job"].notna(), "job"]).any()
