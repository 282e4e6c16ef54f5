"""Spectral filtering on releases that leave (almost) everything as it was: a defined value."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

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
    assert r.ratio > 1 and r.value == 1.0  # the uncapped ratio is kept beside


def test_noise_keeps_the_ratio_below_one_when_filtering_helps() -> None:
    x = _x()
    rng = np.random.default_rng(4)
    z = x + rng.normal(0, 0.5, x.shape)
    r = spectral_filtering_attack(z, x=x, noise_std=0.5)
    assert 0.0 < r.value == min(1.0, r.ratio) and not r.unchanged
