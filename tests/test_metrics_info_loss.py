"""Information-loss measures: hand-computed examples (spec Ex-2), identities, properties."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from ppdm.errors import MeasureNotApplicable, ParameterError, SchemaError
from ppdm.metrics.info_loss import (
    correlation_difference,
    entropy,
    il1s,
    il1s_mean,
    il_metrics,
    shannon_entropy,
    sse_sst,
)

# spec rounding_and_sdc_measures.md §2.6 (Ex-2)
X = pd.DataFrame({"a": [1.0, 2, 3, 4], "b": [4.0, 2, 8, 6]})
Z = pd.DataFrame({"a": [1.5, 1.5, 3.5, 3.5], "b": [3.0, 3, 7, 7]})


def test_il_metrics_hand_example():
    r = il_metrics(X, Z)
    assert r.il_x == pytest.approx(25 / 96)
    assert r.il_m == pytest.approx(0.0)
    assert r.il_v == pytest.approx(11 / 45)
    assert r.il_s == pytest.approx(0.2)
    assert r.il_r == pytest.approx(0.4)
    assert r.value == pytest.approx(100 * (25 / 96 + 11 / 45 + 0.2 + 0.4) / 5)
    assert r.value == pytest.approx(22.0972, abs=1e-4)


def test_il_metrics_options_and_zero_denominators():
    # with the diagonal in the divisor IL_R = 0.4 / 3
    assert il_metrics(X, Z, r_divisor="with_diag").il_r == pytest.approx(0.4 / 3)
    # a zero original cell is left out of IL_X and counted
    x0 = X.copy()
    x0.loc[0, "a"] = 0.0
    r = il_metrics(x0, Z)
    assert r.excluded["il_x"] == 1
    # one attribute: IL_R does not exist
    one = il_metrics(X[["a"]], Z[["a"]])
    assert math.isnan(one.il_r)
    assert one.value == pytest.approx(100 * (one.il_x + one.il_m + one.il_v + one.il_s) / 4)
    assert il_metrics(X[["a"]], Z[["a"]], r_term_p1="zero").value == pytest.approx(
        100 * (one.il_x + one.il_m + one.il_v + one.il_s) / 5)


def test_il1s_hand_example_both_forms():
    r = il1s(X, Z)
    assert r.form == "sum"
    # |diffs| a: .5,.5,.5,.5 over sd sqrt(5/3); b: 1,1,1,1 over sd sqrt(20/3)
    expected = (2 / math.sqrt(5 / 3) + 4 / math.sqrt(20 / 3)) / math.sqrt(2)
    assert r.value == pytest.approx(expected)
    assert r.value == pytest.approx(2.190890, abs=1e-6)
    assert r.mean == pytest.approx(math.sqrt(3 / 40))
    assert il1s_mean(X, Z).value == pytest.approx(math.sqrt(3 / 40))
    assert il1s(X, Z, form="mean").value == r.mean
    assert list(r.per_attribute["attribute"]) == ["a", "b"]
    assert r.per_attribute["il1s_sum"].sum() == pytest.approx(r.value)


def test_sse_sst_hand_example():
    r = sse_sst(X, Z)
    assert (r.sse, r.sst, r.value) == (pytest.approx(5.0), pytest.approx(25.0), pytest.approx(20.0))
    zs = sse_sst(X, Z, standardize="zscore")
    # SSE_a = 1 / (5/3), SSE_b = 4 / (20/3); SST = 2 columns × (n − 1)
    assert zs.sst == pytest.approx(6.0)
    assert zs.sse == pytest.approx(0.6 + 0.6)
    assert zs.value == pytest.approx(20.0)


def test_entropy_examples():
    assert shannon_entropy([2, 2, 5, 5]) == pytest.approx(1.0)
    assert shannon_entropy([2, 2, 2, 5]) == pytest.approx(0.811278, abs=1e-6)
    assert shannon_entropy([7, 7]) == 0.0
    assert shannon_entropy([1, 2, 3, 4], normalized=True) == pytest.approx(1.0)
    r = entropy(X, Z)
    assert list(r.per_attribute["entropy_masked"]) == [pytest.approx(1.0), pytest.approx(1.0)]
    assert list(r.per_attribute["entropy_original"]) == [pytest.approx(2.0), pytest.approx(2.0)]
    assert r.value == pytest.approx(1.0)


def test_correlation_variants():
    assert correlation_difference(X, Z).value == pytest.approx(0.4)
    r = correlation_difference(X, Z, variant="preservation")
    assert r.value == pytest.approx(2 / math.sqrt(5))


def test_x_against_itself_loses_nothing():
    rng = np.random.default_rng(1)
    x = pd.DataFrame(rng.normal(size=(50, 3)) + 5, columns=["p", "q", "r"])
    assert il1s(x, x).value == 0.0
    assert sse_sst(x, x).value == 0.0
    assert il_metrics(x, x).value == pytest.approx(0.0, abs=1e-12)
    assert correlation_difference(x, x).value == pytest.approx(0.0, abs=1e-12)
    assert entropy(x, x).per_attribute["difference"].abs().max() == 0.0


def test_arrays_are_accepted():
    r = il1s(X.to_numpy(), Z.to_numpy())
    assert r.value == pytest.approx(il1s(X, Z).value)
    assert list(r.per_attribute["attribute"]) == ["x0", "x1"]


def test_bad_input_is_named():
    const = X.assign(a=1.0)  # a constant column: the measures are undefined, an evaluation skips them
    with pytest.raises(MeasureNotApplicable, match="'a'"):
        il1s(const, Z)
    with pytest.raises(MeasureNotApplicable, match="'a'"):
        correlation_difference(const, Z)
    with pytest.raises(MeasureNotApplicable, match="'a'"):
        il_metrics(const, Z)
    with pytest.raises(MeasureNotApplicable, match="rows"):
        il1s(X, Z.iloc[:3])
    with pytest.raises(SchemaError, match="'b'"):
        il1s(X, Z.assign(b=[1.0, np.inf, 2, 3]))
    with pytest.raises(SchemaError, match="'c'"):
        il1s(X, Z, columns=["a", "c"])
    with pytest.raises(SchemaError, match="not numeric"):
        il1s(X.assign(b=list("wxyz")), Z)
    with pytest.raises(ParameterError):
        il1s(X, Z, form="median")
    with pytest.raises(ParameterError):
        il1s(X, Z, columns=[])


_cells = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)


@settings(max_examples=40)
@given(arrays(float, (8, 3), elements=_cells), arrays(float, (8, 3), elements=_cells))
def test_properties_of_il1s_and_sse(a, b):
    # keep columns non-constant so every measure is defined
    a = a + np.arange(8)[:, None] * 0.5
    r = il1s(a, b)
    assert r.value >= 0 and r.mean == pytest.approx(r.value / 24)
    assert il1s(a, a).value == 0.0
    # scale invariance of IL1s: both tables scaled alike
    assert il1s(3 * a, 3 * b).value == pytest.approx(r.value, rel=1e-9, abs=1e-9)
    s = sse_sst(a, b)
    assert s.value >= 0
    assert sse_sst(a, np.repeat(a.mean(axis=0, keepdims=True), 8, axis=0)).value == pytest.approx(100.0)
    c = correlation_difference(a, b)
    assert 0 <= c.value <= 2
