"""Values at the edges of floating point: rounding and CART give real answers, not overflow."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ppdm.anonymize.rounding import METHODS, Rounding, scale_factor
from ppdm.cli.app import app
from ppdm.trees.cart import CARTClassifier

runner = CliRunner()
UNSUPERVISED = [m for m in METHODS if m not in ("mdlp", "chimerge")]


def test_scale_factor_is_a_power_of_two_only_when_needed() -> None:
    assert scale_factor(np.array([1.0, -3e10, 0.0])) == 1.0
    f = scale_factor(np.array([1e300, -2e299]))
    assert np.log2(f) == int(np.log2(f)) and 1 <= 1e300 * f < 2
    assert scale_factor(np.array([1e-300, 0.0])) > 1
    assert scale_factor(np.array([0.0, np.nan])) == 1.0


@pytest.mark.parametrize("method", UNSUPERVISED + ["mdlp"])
@pytest.mark.parametrize("scale", [1e300, 1e-300])
def test_rounding_huge_and_tiny_values_is_the_rounding_of_the_scaled_values(method: str, scale: float) -> None:
    """Huge values used to collapse into one group (sums of squares overflowed)."""
    rng = np.random.default_rng(0)
    a = rng.normal(0, 1, 300)
    base = pd.DataFrame({"a": a, "y": np.where(a + rng.normal(0, 0.3, 300) > 0.2, "p", "q")})
    big = base.assign(a=base["a"] * scale)
    t_big = Rounding(class_column="y", method=method, random_state=0).fit(big)
    t_one = Rounding(class_column="y", method=method, random_state=0).fit(base)
    z_big, z_one = t_big.transform(big), t_one.transform(base)
    assert z_big["a"].nunique() == z_one["a"].nunique() > 1
    assert np.allclose(z_big["a"] / scale, z_one["a"], rtol=1e-12, atol=0)
    assert np.allclose(t_big.rounding_sets_["a"] / scale, t_one.rounding_sets_["a"], rtol=1e-12, atol=0)
    assert np.isfinite(z_big["a"]).all()


@settings(max_examples=40)
@given(st.integers(0, 2**31 - 1), st.integers(-60, 60))
def test_rounding_is_exactly_equivariant_under_powers_of_two(seed: int, e: int) -> None:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"a": rng.normal(0, 1, 80)})
    f = 2.0 ** (8 * e)
    z1 = Rounding(method="optimal", k=4).fit_transform(df)
    z2 = Rounding(method="optimal", k=4).fit_transform(df * f)
    assert np.array_equal(z2["a"].to_numpy() / f, z1["a"].to_numpy())


def test_ordinary_data_round_as_before() -> None:
    """No scaling for ordinary magnitudes: the release is bit for bit the unscaled algorithm's."""
    from ppdm.anonymize import microaggregation as micro

    x = np.random.default_rng(3).normal(100, 20, 200)
    t = Rounding(method="mdav", k=5).fit(pd.DataFrame({"a": x}))
    labels = micro.mdav_1d(x, 5)
    means = np.bincount(labels, weights=x) / np.bincount(labels)
    assert np.array_equal(np.sort(t.rounding_sets_["a"]), np.unique(means))


def _big_table(n: int = 300, scale: float = 1e39) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    b = rng.normal(0, 1, n)
    return pd.DataFrame({"a": rng.normal(0, 1, n), "b": b * scale, "label": np.where(b > 0.3, "hi", "lo")})


@pytest.mark.parametrize("scale", [1e39, 1e300])
def test_cart_beyond_float32_range_gives_rules_in_the_original_values(scale: float) -> None:
    df = _big_table(scale=scale)
    m = CARTClassifier(random_state=0).fit(df[["a", "b"]], df["label"])
    small = CARTClassifier(random_state=0).fit(df[["a", "b"]].assign(b=df["b"] / scale), df["label"])
    assert (m.predict(df[["a", "b"]]) == small.predict(df[["a", "b"]].assign(b=df["b"] / scale))).all()
    # the first split separates the classes at b ≈ 0.3·scale, stated in b's own values
    rules = m.leaf_rules()
    thresholds = [c.value for r in rules.values() for c in r.conditions if c.attribute == "b"]
    assert any(abs(t / scale - 0.3) < 0.05 for t in thresholds)
    # a value beyond float32 met later still goes to the right side
    far = pd.DataFrame({"a": [0.0, 0.0], "b": [1e308, -1e308]})
    assert list(m.predict(far)) == ["hi", "lo"]


def test_rules_and_evaluate_beyond_float32_range(tmp_path: Path) -> None:
    """Both commands ended with an internal error (exit 1); now they work."""
    p = tmp_path / "big.csv"
    _big_table().to_csv(p, index=False)
    res = runner.invoke(app, ["rules", str(p), "--class", "label", "--seed", "0"])
    assert res.exit_code == 0, res.output
    assert "e+38" in res.output or "e+39" in res.output
    res = runner.invoke(app, ["evaluate", "-x", str(p), "-z", str(p), "--class", "label", "--seed", "0",
                              "--json", "--pairing", "position"])
    assert res.exit_code == 0, res.output
    obj = json.loads(res.stdout)
    assert obj["measures"]["rule_accuracy"]["value"] == 0 and obj["measures"]["prediction_accuracy"]["value"] == 0
