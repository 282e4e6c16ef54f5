"""Spectral filtering on releases that leave (almost) everything as it was: a defined value."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ppdm.attacks.reconstruction import spectral_filtering_attack


def _x(n: int = 400) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    a = rng.normal(0, 1, n)
    return pd.DataFrame({"a": a, "b": a + rng.normal(0, 0.3, n), "c": rng.normal(5, 2, n)})


def test_an_unchanged_release_is_the_original_value_zero() -> None:
    x = _x()
    r = spectral_filtering_attack(x.copy(), x=x)
    assert r.unchanged and r.value == 0.0 and r.rmse_release == 0.0


def test_a_nearly_unchanged_release_gets_a_value_in_zero_one() -> None:
    x = _x()
    z = x.copy()
    z.loc[7, "c"] += 1e-3  # one cell moved: filtering only adds error, the attacker keeps z
    r = spectral_filtering_attack(z, x=x)
    assert not r.unchanged and math.isfinite(r.value) and 0.0 <= r.value <= 1.0
    # the uncapped ratio is kept beside; the value is the share of cells the release changed
    assert r.ratio > 1 and r.changed_share == 1 / x.size and r.value == r.changed_share


def test_a_near_identity_release_fails_the_threshold() -> None:
    """One cell in 16 000 nudged, by a little or by a lot: filtering only adds error, so the
    ratio is 1 and used to pass the ≥ 0.9 threshold; the release protects almost nothing."""
    from ppdm.metrics.base import MEASURES, EvaluationContext, judge

    rng = np.random.default_rng(5)
    a = rng.normal(0, 1, 4000)
    x = pd.DataFrame({"a": a, "b": a + rng.normal(0, 0.3, 4000), "c": rng.normal(5, 2, 4000),
                      "d": rng.normal(-3, 1, 4000)})  # 16 000 cells
    spec = MEASURES["spectral_filtering"]
    for nudge in (1e-3, 1.0, 50.0):
        z = x.copy()
        z.loc[123, "b"] += nudge
        r = spectral_filtering_attack(z, x=x)
        assert r.ratio >= 1.0 and r.changed_share == 1 / 16_000
        assert r.value == pytest.approx(1 / 16_000)
        ctx = EvaluationContext(x=x, z=z, schema=_schema(x))
        assert judge(spec.fn(ctx).value, spec.threshold, spec.direction) == "misses"
    same = spectral_filtering_attack(x.copy(), x=x)
    assert same.value == 0.0 and same.unchanged


def test_values_near_1e200_are_filtered_without_overflow() -> None:
    x = _x()
    z = x + np.random.default_rng(4).normal(0, 0.5, x.shape)
    small = spectral_filtering_attack(z, x=x, noise_std=0.5)
    big = spectral_filtering_attack(z * 2.0**660, x=x * 2.0**660, noise_std=0.5 * 2.0**660)
    assert math.isfinite(big.value) and big.value == small.value and big.ratio == small.ratio
    assert big.n_signal == small.n_signal
    np.testing.assert_array_equal(big.estimate.to_numpy() / 2.0**660, small.estimate.to_numpy())
    # without the noise level the attacker's floor is the median eigenvalue: the same, scaled
    assert spectral_filtering_attack(z * 1e200, x=x * 1e200).value == pytest.approx(
        spectral_filtering_attack(z, x=x).value, rel=1e-9)


def _schema(df: pd.DataFrame):
    from ppdm.data.schema import Schema

    return Schema.infer(df)


def test_noise_keeps_the_ratio_below_one_when_filtering_helps() -> None:
    x = _x()
    rng = np.random.default_rng(4)
    z = x + rng.normal(0, 0.5, x.shape)
    r = spectral_filtering_attack(z, x=x, noise_std=0.5)
    assert 0.0 < r.value == min(1.0, r.ratio) and not r.unchanged
