"""Model measures of paper 000 §3: CART on z vs CART on x, both tested on t, against scikit-learn."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import accuracy_score, f1_score, fbeta_score, roc_auc_score
from sklearn.tree import DecisionTreeClassifier

from ppdm.anonymize.noise import GaussianNoise
from ppdm.data.schema import Schema
from ppdm.datasets import load
from ppdm.errors import ParameterError
from ppdm.experiments.evaluation import resolve_measures
from ppdm.metrics.base import EvaluationContext
from ppdm.metrics.model import (
    DEFAULT_MULTICLASS_AVERAGE,
    auc,
    compare_models,
    f_measure,
    holdout,
    prediction_accuracy,
)

# noise without declared bounds warns that its clipping range came from x: not what these tests check
pytestmark = [pytest.mark.filterwarnings("ignore::ppdm.anonymize._domain.BoundsFromDataWarning")]


def test_hand_example():
    # one attribute separating the classes perfectly in x; in z the labels of v=2 and v=3 swapped
    x = pd.DataFrame({"v": [0, 1, 2, 3, 4, 5] * 10, "y": ["a", "a", "a", "b", "b", "b"] * 10})
    z = x.assign(v=[0, 1, 3, 2, 4, 5] * 10)
    t = pd.DataFrame({"v": [0, 2, 3, 5], "y": ["a", "a", "b", "b"]})
    # Ψx: v ≤ 2.5 → a, all 4 right. Ψz learns v=3 → a and v=2 → b: 2 of 4 right
    pa = prediction_accuracy(x, z, t, "y")
    assert (pa.score_x, pa.score_z) == (1.0, 0.5) and pa.value == 0.5
    # positive label b (default: the rarer class of x; a tie goes to the last class)
    f = f_measure(x, z, t, "y")
    assert f.pos_label == "b"
    # Ψz on t: predicts a, b, a, b → TP 1, FP 1, FN 1 → precision = recall = F = 0.5
    assert f.score_x == 1.0 and f.score_z == pytest.approx(0.5)
    a = auc(x, z, t, "y")
    assert a.score_x == 1.0 and a.score_z == pytest.approx(0.5)


def _split(df: pd.DataFrame, frac: float = 0.66, seed: int = 0):
    rng = np.random.default_rng(seed)
    idx = rng.permutation(len(df))
    k = int(frac * len(df))
    return df.iloc[np.sort(idx[:k])].reset_index(drop=True), df.iloc[np.sort(idx[k:])].reset_index(drop=True)


def _sk(d: pd.DataFrame, feats: list[str], cls: str) -> DecisionTreeClassifier:
    leaf = math.ceil(0.02 * len(d))
    return DecisionTreeClassifier(min_samples_leaf=leaf, max_depth=12, random_state=0).fit(d[feats].to_numpy(float), d[cls])


def test_binary_against_scikit_learn():
    df, sch = load("banknote")
    cls = sch.class_column
    x, t = _split(df)
    z = GaussianNoise(level=0.3, class_column=cls, random_state=2).fit_transform(x)
    feats = sch.attributes
    mx, mz = _sk(x, feats, cls), _sk(z, feats, cls)
    T, yt = t[feats].to_numpy(float), t[cls].to_numpy()
    pa = prediction_accuracy(x, z, t, cls, sch)
    assert pa.score_x == pytest.approx(accuracy_score(yt, mx.predict(T)))
    assert pa.score_z == pytest.approx(accuracy_score(yt, mz.predict(T)))
    assert pa.value == pytest.approx(pa.score_x - pa.score_z)
    for pos in (0, 1):
        j = list(mx.classes_).index(pos)
        a = auc(x, z, t, cls, sch, pos_label=pos)
        assert a.score_x == pytest.approx(roc_auc_score(yt == pos, mx.predict_proba(T)[:, j]))
        assert a.score_z == pytest.approx(roc_auc_score(yt == pos, mz.predict_proba(T)[:, j]))
        f = f_measure(x, z, t, cls, sch, pos_label=pos)
        assert f.score_x == pytest.approx(f1_score(yt, mx.predict(T), pos_label=pos))
        assert f.score_z == pytest.approx(f1_score(yt, mz.predict(T), pos_label=pos))
        f2 = f_measure(x, z, t, cls, sch, pos_label=pos, beta=2.0)
        assert f2.score_z == pytest.approx(fbeta_score(yt, mz.predict(T), beta=2.0, pos_label=pos))
    # the positive label may come as text (from the command line)
    assert auc(x, z, t, cls, sch, pos_label="1").pos_label == 1


def test_multiclass_averages_by_default_and_matches_scikit_learn():
    df, sch = load("wine")
    cls = sch.class_column
    x, t = _split(df, seed=1)
    z = GaussianNoise(level=0.2, class_column=cls, random_state=0).fit_transform(x)
    # three classes and no averaging named: the documented default, macro, instead of an error
    assert DEFAULT_MULTICLASS_AVERAGE == "macro"
    for fn in (auc, f_measure):
        default, macro = fn(x, z, t, cls, sch), fn(x, z, t, cls, sch, average="macro")
        assert default.average == "macro" and default.value == macro.value and default.pos_label is None
    with pytest.raises(ParameterError, match="one of"):
        auc(x, z, t, cls, sch, average="samples")
    feats = sch.attributes
    mz = _sk(z, feats, cls)
    T, yt = t[feats].to_numpy(float), t[cls].to_numpy()
    for avg in ("macro", "weighted", "micro"):
        a = auc(x, z, t, cls, sch, average=avg)
        assert a.score_z == pytest.approx(roc_auc_score(yt, mz.predict_proba(T), multi_class="ovr", average=avg))
        f = f_measure(x, z, t, cls, sch, average=avg)
        assert f.score_z == pytest.approx(f1_score(yt, mz.predict(T), average=avg))
    # prediction accuracy needs no averaging
    assert prediction_accuracy(x, z, t, cls, sch).n_test == len(t)


def test_holdout_is_stratified_seeded_and_keeps_z_aligned():
    df, sch = load("banknote")
    z = df.assign(variance=-df["variance"])
    x1, z1, t1 = holdout(df, z, sch.class_column, random_state=4)
    x2, _, t2 = holdout(df, z, sch.class_column, random_state=4)
    assert t1.index.equals(t2.index) and x1.index.equals(x2.index)
    assert len(t1) == pytest.approx(len(df) / 3, abs=1)
    assert not set(t1.index) & set(x1.index) and z1.index.equals(x1.index)
    share = df[sch.class_column].mean()
    assert abs(t1[sch.class_column].mean() - share) < 0.01


def test_adapters_hold_out_a_test_set_and_are_zero_for_z_equal_x():
    df, sch = load("banknote")
    ctx = EvaluationContext(df, df.copy(), sch, random_state=0)
    for spec in resolve_measures("prediction_accuracy,auc,f_measure"):
        r = spec.fn(ctx)
        assert r.value == 0.0 and r.test_source == "holdout"
        assert r.n_test == pytest.approx(len(df) / 3, abs=1)
    assert len([k for k in ctx.cache if k[0] == "model_comparison"]) == 1


def test_models_see_categorical_attributes_directly():
    df, sch = load("credit", missing="drop")
    x, t = _split(df)
    mc = compare_models(x, x, t, sch.class_column, Schema.from_dict(sch.to_dict()))
    assert (mc.pred_x == mc.pred_z).all() and mc.proba_x.shape == (len(t), 2)


@settings(max_examples=15)
@given(seed=st.integers(0, 10**6), n=st.integers(30, 120))
def test_model_measures_are_zero_when_z_equals_x(seed, n):
    rng = np.random.default_rng(seed)
    x = pd.DataFrame({"a": rng.normal(size=n), "g": rng.choice(["u", "v"], n)})
    x["y"] = np.where(x["a"] + (x["g"] == "u") + rng.normal(0, 0.5, n) > 0.5, "p", "q")
    x.loc[:1, "y"] = ["p", "q"]  # both classes present
    t = x.copy()  # holds both classes, so AUC is defined
    for fn in (prediction_accuracy, auc, f_measure):
        assert fn(x, x.copy(), t, "y").value == 0.0
