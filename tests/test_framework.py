"""Framework (Islam & Brankovic 2011, paper 004 §2)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from forest_helpers import RuleRouted, cart_trees, grid_table, schema_of, tables
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.pipeline import Pipeline

from ppdm.anonymize.framework import Framework, draw_from_rows
from ppdm.errors import ParameterError
from ppdm.trees import CARTClassifier

SEEDS = st.integers(0, 2**31 - 1)
DETECTIVE = CARTClassifier(min_samples_leaf=3)


def _fw(df, tree, seed, **kw) -> Framework:
    return Framework(class_column="y", tree=tree, detective_tree=DETECTIVE, random_state=seed, **kw).fit(df)


# no bounds declared: that advice is asserted in test_value_domains.py
# (test_the_warning_comes_only_where_a_rare_end_of_x_shapes_the_release)
@pytest.mark.filterwarnings("ignore::ppdm.anonymize._domain.BoundsFromDataWarning")
@settings(max_examples=50)
@given(tables(), SEEDS, st.sampled_from(["noise", "gadp"]), st.sampled_from(["shuffle", "probabilistic"]),
       st.sampled_from([0.1, 1.0]))
def test_every_record_stays_in_its_leaf(case, seed, innocent, class_mode, p_cat):
    df, trees = case
    tree = trees[0]
    fw = _fw(df, tree, seed, innocent_method=innocent, class_mode=class_mode, p_cat=p_cat)
    z = fw.transform(df)
    assert np.array_equal(tree.apply(z), tree.apply(df))
    pd.testing.assert_series_equal(z.dtypes, df.dtypes)
    sch = schema_of(df)
    inter = fw.intersector_.find(df)
    # categorical attributes tested by the record's leaf (influential) are never changed
    for a in sch.categorical:
        k = inter.attributes.index(a)
        infl = inter.tested[inter.labels, k]
        assert (z[a][infl] == df[a][infl]).all()
    if innocent == "noise":
        assert inter.contains(z, inter.labels).all()
    if class_mode == "shuffle":
        leaf = tree.apply(df)
        pd.testing.assert_frame_equal(pd.crosstab(leaf, df["y"].to_numpy()), pd.crosstab(leaf, z["y"].to_numpy()))


@settings(max_examples=50)
@given(tables(), SEEDS)
def test_same_seed_same_output_and_no_noise_identity(case, seed):
    df, trees = case
    a = _fw(df, trees[0], seed).transform(df)
    pd.testing.assert_frame_equal(a, _fw(df, trees[0], seed).transform(df))
    z = _fw(df, trees[0], seed, sigma_frac=0.0, p_cat=0.0, class_mode="none").transform(df)
    pd.testing.assert_frame_equal(z, df)


def test_capt_changes_values_to_others_of_their_detective_cluster():
    df = grid_table(4, 3000, 1, 1, 2, 2)
    tree = RuleRouted(CARTClassifier(min_samples_leaf=400).fit(df[["f0", "i0", "c1"]], df["y"]))
    fw = Framework(class_column="y", tree=tree, detective_tree=CARTClassifier(min_samples_leaf=100), random_state=0,
                   p_cat=0.3, class_mode="none").fit(df)
    z = fw.transform(df)
    inter = fw.intersector_.find(df)
    for a in ("c0", "c1"):
        det, ids, counts = fw.detectives_[a]
        inputs = [c for c in df.columns if c != a]
        leaf = det.apply(df[inputs])
        changed = (z[a] != df[a]).to_numpy()
        innocent = ~inter.tested[inter.labels, inter.attributes.index(a)]
        assert not changed[~innocent].any()
        if a == "c1":  # the tree tests c1 in every leaf: never changed
            assert not innocent.any() and not changed.any()
            continue
        # about p_cat of the innocent records whose cluster has another value change
        levels = fw.domain_.categorical[a]
        row = counts[np.searchsorted(ids, leaf)]
        others = (row > 0).sum(axis=1) > 1
        eligible = innocent & others
        assert eligible.sum() > 200
        assert abs(changed[eligible].mean() - 0.3) < 0.05
        # each new value occurs in the record's DETECTIVE cluster
        new_codes = np.array([levels.index(v) for v in z[a][changed]])
        assert (row[changed, new_codes] > 0).all()


def test_draw_from_rows_follows_the_weights():
    rng = np.random.default_rng(0)
    counts = np.tile([[0.0, 3.0, 1.0, 0.0]], (40000, 1))
    idx = draw_from_rows(counts, rng)
    assert set(np.unique(idx)) == {1, 2}
    assert abs((idx == 1).mean() - 0.75) < 0.01
    assert draw_from_rows(np.zeros((2, 3)), rng).tolist() == [-1, -1]


def test_probabilistic_class_mode_changes_about_p_class():
    df = grid_table(8, 4000, 2, 0, 1, 2)
    tree = RuleRouted(CARTClassifier(min_samples_leaf=500).fit(df.drop(columns="y"), df["y"]))
    z = _fw(df, tree, 1, class_mode="probabilistic", p_class=0.5, p_cat=0.0).transform(df)
    # a redraw from a leaf with class shares s changes the label with probability Σ s(1 − s)
    leaf = tree.apply(df)
    share = pd.crosstab(leaf, df["y"], normalize="index")
    expect = 0.5 * np.mean([(share.loc[lf] * (1 - share.loc[lf])).sum() for lf in leaf])
    assert abs((z["y"] != df["y"]).mean() - expect) < 0.03


def test_sklearn_contract_and_parameters():
    df = grid_table(2, 200, 2, 1, 1, 2)
    tree = cart_trees(df, 3, 1, 10)[0]
    fw = Framework(class_column="y", tree=tree, detective_tree=DETECTIVE, random_state=5, p_cat=0.2)
    c = clone(fw)
    assert c.get_params()["p_cat"] == 0.2 and c.get_params()["class_mode"] == "shuffle"
    z = Pipeline([("f", fw)]).fit_transform(df)
    pd.testing.assert_frame_equal(z, fw.fit_transform(df))
    assert fw.report_.n_records == 200 and list(fw.report_.attributes["attribute"]) == ["f0", "f1", "i0", "c0", "y"]
    with pytest.raises(ParameterError, match="one tree"):
        Framework(class_column="y", tree=cart_trees(df, 3, 2, 10), detective_tree=DETECTIVE).fit(df)
    for kw in ({"innocent_method": "x"}, {"class_mode": "x"}, {"p_cat": 2}, {"min_leaf": 0}):
        with pytest.raises(ParameterError):
            Framework(class_column="y", tree=tree, **kw).fit(df)
    # an unfitted estimator is grown on the table
    fw2 = Framework(class_column="y", tree=CARTClassifier(min_samples_leaf=20), detective_tree=DETECTIVE,
                    random_state=0).fit(df)
    assert (fw2.tree_.apply(fw2.transform(df)[df.columns[:-1]]) == fw2.tree_.apply(df[df.columns[:-1]])).mean() > 0.99


def _has_c45() -> bool:
    try:
        from ppdm.trees import C45Classifier  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.skipif(not _has_c45(), reason="ppdm.trees.C45Classifier (the default tree) is not importable in this checkout")
def test_default_tree_is_c45():
    df = grid_table(2, 200, 2, 1, 1, 2)
    fw = Framework(class_column="y", random_state=0, min_leaf=10).fit(df)
    z = fw.transform(df)
    X = df.drop(columns="y")
    assert np.array_equal(fw.tree_.apply(z[X.columns]), fw.tree_.apply(X))
