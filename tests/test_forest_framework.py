"""Forest Framework (paper 004 §3): invariants as property tests, API and CLI."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from forest_helpers import cart_trees, grid_table, schema_of, tables
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.pipeline import Pipeline

from ppdm.anonymize import make_technique
from ppdm.anonymize._noise import add_wrapped_noise, wrap_continuous, wrap_integer
from ppdm.anonymize.forest_framework import ForestFramework, permute_within_groups
from ppdm.errors import ParameterError, PPDMError
from ppdm.trees import CARTClassifier
from ppdm.trees.cart_forest import CARTForest

SEEDS = st.integers(0, 2**31 - 1)


def _ff(df: pd.DataFrame, trees: list, seed: int, **kw) -> ForestFramework:
    return ForestFramework(class_column="y", forest=trees, random_state=seed, **kw).fit(df)


def _pair_counts(groups: np.ndarray, values: pd.Series) -> dict:
    """Multiset of values within every group, as {(group, value): count}."""
    pairs, counts = np.unique(np.stack([np.asarray(groups).astype(str), values.to_numpy().astype(str)]),
                              axis=1, return_counts=True)
    return {tuple(p): int(c) for p, c in zip(pairs.T, counts, strict=True)}


# ------------------------------------------------------------------ invariants
@settings(max_examples=50)
@given(tables(), SEEDS)
def test_every_record_stays_in_its_leaf_of_every_tree(case, seed):
    df, trees = case
    z = _ff(df, trees, seed).transform(df)
    for t in trees:
        assert np.array_equal(t.apply(z), t.apply(df))


@settings(max_examples=50)
@given(tables(), SEEDS)
def test_class_counts_of_every_leaf_are_unchanged(case, seed):
    df, trees = case
    z = _ff(df, trees, seed).transform(df)
    for t in trees:
        assert _pair_counts(t.apply(df), df["y"]) == _pair_counts(t.apply(z), z["y"])


@settings(max_examples=50)
@given(tables(), SEEDS)
def test_categorical_multisets_kept_within_every_intersection(case, seed):
    df, trees = case
    ff = _ff(df, trees, seed)
    z = ff.transform(df)
    lab = ff.intersections(df).labels
    for c in [*schema_of(df).categorical, "y"]:
        assert _pair_counts(lab, df[c]) == _pair_counts(lab, z[c])


@settings(max_examples=50)
@given(tables(), SEEDS, st.sampled_from(["rules", "records"]), st.sampled_from([1 / 6, 0.5, 3.0]))
def test_numeric_values_stay_inside_their_sub_domains(case, seed, source, frac):
    df, trees = case
    ff = _ff(df, trees, seed, domain_source=source, sigma_frac=frac)
    z = ff.transform(df)
    inter = ff.intersections(df)
    assert inter.contains(z, inter.labels).all()
    sch = schema_of(df)
    for c in sch.integer:  # whole-valued attributes stay whole
        assert np.array_equal(z[c].to_numpy(dtype=float), np.round(z[c].to_numpy(dtype=float)))
    for c in sch.numeric:  # and everything stays in the global domain
        assert z[c].min() >= df[c].min() and z[c].max() <= df[c].max()
    if source == "records":
        lab = inter.labels
        assert (z[sch.numeric].groupby(lab).min() >= df[sch.numeric].groupby(lab).min()).all().all()
        assert (z[sch.numeric].groupby(lab).max() <= df[sch.numeric].groupby(lab).max()).all().all()


@settings(max_examples=50)
@given(tables(), SEEDS)
def test_no_noise_and_no_permutation_gives_back_x(case, seed):
    df, trees = case
    z = _ff(df, trees, seed, sigma_frac=0.0, swap_prob=0.0).transform(df)
    pd.testing.assert_frame_equal(z, df)


@settings(max_examples=50)
@given(tables(), SEEDS)
def test_same_seed_same_output(case, seed):
    df, trees = case
    a = _ff(df, trees, seed).transform(df)
    b = _ff(df, trees, seed).transform(df)
    pd.testing.assert_frame_equal(a, b)
    pd.testing.assert_frame_equal(a.dtypes.to_frame(), df.dtypes.to_frame())


# ------------------------------------------------------------- wrap-around
def test_wrap_around_examples():
    # overflow past hi by δ re-enters at lo + δ; open lower end never reached
    v = np.array([9.5, 4.0, 5.0, 8.0])
    out = wrap_continuous(v, 5.0, 8.0, np.array(False), np.array(True))
    assert np.allclose(out, [6.5, 7.0, 8.0, 8.0])
    # integers of (5, 8] are 6, 7, 8: 9 → 6, 10 → 7, 5 → 8, 4.6 rounds to 5 → 8
    out = wrap_integer(np.array([9.0, 10.0, 5.0, 4.6, 7.2]), 5.0, 8.0, np.array(False), np.array(True))
    assert list(out) == [6.0, 7.0, 8.0, 8.0, 7.0]
    # no room: the value is kept
    out = add_wrapped_noise(np.array([3.0, 3.0]), np.array([0.7, 0.7]), np.array([3.0, 2.2]), np.array([3.0, 2.8]),
                            np.array([True, True]), np.array([True, True]), integer=True)
    assert list(out) == [3.0, 3.0]


def test_large_sigma_spreads_uniformly_over_the_sub_domain():
    from scipy import stats

    rng = np.random.default_rng(0)
    v = np.full(20000, 2.0)
    out = add_wrapped_noise(v, rng.normal(0, 3 * 10.0, v.size), 0.0, 10.0, np.array(False), np.array(True),
                            integer=False)
    assert stats.kstest(out, stats.uniform(0, 10).cdf).pvalue > 0.01


def test_permutation_keeps_counts_and_moves_values():
    lab = np.repeat([0, 1, 2], [50, 1, 30])
    src = permute_within_groups(lab, np.random.default_rng(1))
    assert np.array_equal(lab[src], lab)
    assert sorted(src) == list(range(len(lab)))
    assert (src != np.arange(len(lab))).mean() > 0.8
    assert src[50] == 50  # a singleton cannot change


# -------------------------------------------------------------- report, API
@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return grid_table(7, 300, 2, 2, 2, 3)


def test_report_counts_intersections_and_noise(table):
    trees = cart_trees(table, 1, 3, 10)
    ff = _ff(table, trees, 0)
    z = ff.transform(table)
    rep = ff.report_
    inter = ff.intersections(table)
    assert rep.n_intersections == inter.n_intersections and rep.n_trees == 3
    assert rep.n_singletons == int((inter.sizes == 1).sum())
    assert rep.n_records == len(table)
    att = rep.attributes.set_index("attribute")
    assert list(att.index) == ["f0", "f1", "i0", "i1", "c0", "c1", "y"]
    assert att.loc["f0", "mean_abs_change"] == pytest.approx((z["f0"] - table["f0"]).abs().mean())
    assert att.loc["c0", "share_changed"] == pytest.approx((z["c0"] != table["c0"]).mean())
    assert att.loc["y", "kind"] == "class"
    assert 0 < att.loc["f0", "share_changed"] <= 1


def test_sklearn_contract(table):
    trees = cart_trees(table, 1, 2, 10)
    ff = ForestFramework(class_column="y", forest=trees, random_state=3, sigma_frac=0.25)
    params = ff.get_params()
    assert params["sigma_frac"] == 0.25 and params["noise_mean"] == 0.0 and params["n_trees"] == 3
    c = clone(ff)
    assert c.get_params()["sigma_frac"] == 0.25
    pd.testing.assert_frame_equal(c.fit_transform(table), ff.fit_transform(table))
    pipe = Pipeline([("ff", ForestFramework(class_column="y", forest=trees, random_state=3))])
    out = pipe.fit_transform(table)
    assert out.shape == table.shape and list(out.columns) == list(table.columns)
    pd.testing.assert_series_equal(out.dtypes, table.dtypes)


def test_forest_given_as_estimator_factory_or_forest(table):
    X, y = table.drop(columns="y"), table["y"]
    fitted = CARTForest(n_trees=2, min_leaf=15).fit(X, y)
    for spec in (fitted, CARTForest(n_trees=2, min_leaf=15), lambda X, y: CARTForest(n_trees=2, min_leaf=15).fit(X, y),
                 CARTClassifier(min_samples_leaf=20)):
        ff = ForestFramework(class_column="y", forest=spec, random_state=0)
        z = ff.fit_transform(table)
        for t in ff.trees_:
            cols = list(t.feature_names_in_)
            # integer / coarse-grid data: CART's float32 routing agrees with its rules
            same = t.apply(z[cols]) == t.apply(table[cols])
            assert same.mean() > 0.99


def test_bad_parameters_and_inputs(table):
    for kw in ({"sigma_frac": -1}, {"swap_prob": 1.5}, {"domain_source": "x"}, {"n_trees": 0}, {"min_leaf": 0.5},
               {"integer_attrs": ["c0"]}, {"forest": 3}):
        with pytest.raises(ParameterError):
            ForestFramework(class_column="y", **kw).fit(table)
    with pytest.raises(PPDMError, match="class"):
        ForestFramework(forest=cart_trees(table, 1, 1, 10)).fit(table)
    with pytest.raises(PPDMError):
        ForestFramework(class_column="y", forest=cart_trees(table, 1, 1, 10)).fit(table.assign(f0=np.nan))


def test_new_records_are_also_kept_in_their_leaves(table):
    trees = cart_trees(table, 2, 3, 10)
    ff = _ff(table.iloc[:200], trees, 0)
    rest = table.iloc[200:]
    z = ff.transform(rest)
    for t in trees:
        assert np.array_equal(t.apply(z), t.apply(rest))
    assert z.index.equals(rest.index)


def test_integer_attributes_stay_whole_when_stored_as_float(table):
    t = table.assign(i0=table["i0"].astype(float))
    z = _ff(t, cart_trees(t, 5, 2, 10), 1).transform(t)
    assert (z["i0"] == np.round(z["i0"])).all() and (z["i0"] != t["i0"]).any()


def _has_sysfor() -> bool:
    try:
        from ppdm.trees import SysForClassifier  # noqa: F401
    except ImportError:
        return False
    return True


NO_SYSFOR = "ppdm.trees.SysForClassifier (the default SysFor forest) is not importable in this checkout"


@pytest.mark.skipif(not _has_sysfor(), reason=NO_SYSFOR)
def test_default_forest_is_sysfor_with_paper_settings(table):
    from ppdm.trees import SysForClassifier

    ff = ForestFramework(class_column="y", random_state=0, min_leaf=30).fit(table)
    assert ff.trees_ and len(ff.trees_) <= 3
    z = ff.transform(table)
    for t in ff.trees_:
        assert np.array_equal(t.apply(z[table.columns[:-1]]), t.apply(table[table.columns[:-1]]))
    assert SysForClassifier is not None


# ----------------------------------------------------------------------- CLI
def test_cli_anonymize_with_registry(tmp_path, table):
    from typer.testing import CliRunner

    from ppdm.cli.app import app

    src = tmp_path / "x.csv"
    table.to_csv(src, index=False)
    # the default forest is SysFor; exercise the registry path with CLI-settable parameters
    tech = make_technique("forest-framework", class_column="y", random_state=0,
                          params={"sigma_frac": 0.1, "min_leaf": 20})
    assert tech.sigma_frac == 0.1
    res = CliRunner().invoke(app, ["methods"])
    assert res.exit_code == 0 and "forest-framework" in res.output
    res = CliRunner().invoke(app, ["anonymize", str(src), "--method", "forest-framework", "--class", "y",
                                   "--out", str(tmp_path / "z.csv"), "--param", "no_such=1"])
    assert res.exit_code != 0 and not (tmp_path / "z.csv").exists()


@pytest.mark.skipif(not _has_sysfor(), reason=NO_SYSFOR)
def test_cli_anonymize_default_forest(tmp_path, table):
    from typer.testing import CliRunner

    from ppdm.cli.app import app

    src = tmp_path / "x.csv"
    table.to_csv(src, index=False)
    out = tmp_path / "z.csv"
    res = CliRunner().invoke(app, ["anonymize", str(src), "--method", "forest-framework", "--class", "y",
                                   "--out", str(out), "--param", "min_leaf=30", "--param", "sigma_frac=0.1"])
    assert res.exit_code == 0, res.output
    assert pd.read_csv(out).shape == table.shape


# ------------------------------------------------ compiled kernels = NumPy forms
_ENDS = st.sampled_from([-np.inf, np.inf, np.nan, -3.0, -0.5, 0.0, 0.5, 1.0, 2.5, 4.0, 1e300])


@settings(max_examples=300)
@given(st.lists(st.tuples(st.floats(-50, 50), st.floats(-1e3, 1e3), _ENDS, _ENDS, st.booleans(), st.booleans()),
                min_size=1, max_size=30), st.booleans())
def test_compiled_wrapped_noise_is_the_numpy_form_to_the_bit(rows, integer):
    from ppdm.anonymize._noise import _add_wrapped_noise_numpy

    v, nz, lo, hi, lc, hc = (np.array(c) for c in zip(*rows, strict=True))
    got = add_wrapped_noise(v, nz, lo, hi, lc, hc, integer=integer)
    with np.errstate(invalid="ignore"):  # inf − inf where an interval is unbounded
        want = _add_wrapped_noise_numpy(v, nz, lo, hi, lc, hc, integer=integer)
    assert np.array_equal(got, want, equal_nan=True)
    assert np.array_equal(np.signbit(got), np.signbit(want))


def test_compiled_wrapped_noise_keeps_values_of_unbounded_integer_intervals():
    # an infinite or undefined end leaves no finite set of whole numbers to wrap onto
    out = add_wrapped_noise(np.array([1.0, 5.0, 2.0]), np.array([0.4, 2.2, 9.0]), np.array([-np.inf, np.nan, 0.0]),
                            np.array([4.0, 9.0, np.inf]), np.array([True, True, False]), np.array([True] * 3),
                            integer=True)
    assert list(out) == [1.0, 5.0, 2.0]


@pytest.mark.parametrize("seed", range(4))
def test_group_orders_are_numpys_stable_sorts(seed):
    from ppdm.anonymize._forest_kernels import group_orders

    rng = np.random.default_rng(seed)
    n = 3000
    groups = rng.integers(0, [1, 7, 400, 2500][seed], n)
    # keys with many ties (quarters) as well as continuous draws
    keys = rng.integers(0, 4, n) / 4 if seed % 2 else rng.random(n)
    slots, values = group_orders(groups.astype(np.int64), keys, int(groups.max()) + 1)
    assert np.array_equal(slots, np.argsort(groups, kind="stable"))
    assert np.array_equal(values, np.lexsort((keys, groups)))


def test_permutation_with_any_labels_is_the_same_as_with_their_ranks():
    lab = np.random.default_rng(3).integers(0, 9, 500)
    for relabelled in (lab * 10**12 - 7, lab.astype(float) / 3, lab - 4):
        for p in (1.0, 0.6):
            assert np.array_equal(permute_within_groups(relabelled, np.random.default_rng(8), p),
                                  permute_within_groups(lab, np.random.default_rng(8), p))


def test_unique_rows_by_table_of_present_keys_is_np_unique():
    from ppdm.trees.intersections import _unique_rows

    rng = np.random.default_rng(0)
    radix = [5, 3, 40]
    dense = np.stack([rng.integers(0, r, 2000) for r in radix], axis=1)
    uniq, labels = _unique_rows(dense, radix)
    want, inverse = np.unique(dense, axis=0, return_inverse=True)
    assert np.array_equal(uniq, want) and np.array_equal(labels, inverse.ravel())


@pytest.mark.skipif(not _has_sysfor(), reason=NO_SYSFOR)
def test_leaf_ids_through_the_shared_encoding_are_apply(table):
    ff = ForestFramework(class_column="y", random_state=0, min_leaf=30).fit(table)
    x = table.drop(columns="y")
    assert len({id(t.encoding_) for t in ff.trees_}) == 1  # the route under test is taken
    ids = ff.intersector_.leaf_ids(x)
    assert np.array_equal(ids, np.stack([t.apply(x) for t in ff.trees_], axis=1))


def test_seeded_output_is_unchanged_by_the_compiled_kernels(table):
    # digests of releases made before the kernels replaced the NumPy sorting and wrapping
    import hashlib

    cases = [(dict(forest=cart_trees(table, 1, 3, 10)), "0d7df08a65a6e98d")]
    if _has_sysfor():
        cases += [(dict(min_leaf=30), "9fb7f3b2619a1db8"), (dict(min_leaf=30, swap_prob=0.5), "5945b0ba269cedf5")]
    for kw, digest in cases:
        z = ForestFramework(class_column="y", random_state=5, **kw).fit(table).transform(table)
        assert hashlib.sha256(z.to_csv(index=False).encode()).hexdigest()[:16] == digest
