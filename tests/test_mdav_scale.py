"""MDAV at scale: the pruned kernel against the full-pass definition."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppdm.anonymize._mdav import mdav_fast, mdav_reference
from ppdm.anonymize.microaggregation import mdav, mdav_weights
from ppdm.errors import ParameterError

SCALINGS = ("standard", "sdcmicro", "none")


def _table(kind: int, n: int, p: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if kind == 0:  # few distinct values: many exact ties and duplicate records
        return rng.integers(0, 4, size=(n, p)).astype(float)
    if kind == 1:
        return rng.normal(size=(n, p))
    return rng.exponential(size=(n, p)) ** 2  # skewed: the centroid drifts as the tail is grouped


def _kernels(X: np.ndarray, k: int, scaling: str) -> tuple[np.ndarray, np.ndarray]:
    w = mdav_weights(X, scaling)
    f32 = scaling == "sdcmicro"
    return mdav_reference(X, w, k, f32, f32), mdav_fast(X, w, k, f32, f32)


# ------------------------------------------------------------ the pruned kernel is exact
@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2), st.integers(1, 120), st.integers(1, 6), st.integers(1, 7), st.sampled_from(SCALINGS),
       st.integers(0, 10_000))
def test_fast_kernel_gives_the_reference_groups(kind: int, n: int, p: int, k: int, scaling: str, seed: int) -> None:
    X = _table(kind, n, p, seed)
    ref, fast = _kernels(X, min(k, n), scaling)
    assert np.array_equal(ref, fast)


@pytest.mark.parametrize(("n", "p"), [(3000, 2), (3000, 5), (2000, 13), (1500, 30)])
def test_fast_kernel_gives_the_reference_groups_larger(n: int, p: int) -> None:
    # large enough for re-anchoring, compaction and (at p = 13, 30) the fall-back to passes
    for kind in range(3):
        for scaling in ("standard", "sdcmicro"):
            ref, fast = _kernels(_table(kind, n, p, n + p), 3, scaling)
            assert np.array_equal(ref, fast), (kind, scaling)


def test_mdav_weights_argument() -> None:
    X = np.array([(0, 0), (0, 1), (1, 0), (10, 10), (10, 11), (11, 10.0)])
    assert np.array_equal(mdav(X, 3, weights=[1.0, 1.0]), mdav(X, 3, "none"))
    for bad in ([1.0], [1.0, 0.0], [1.0, np.nan]):
        with pytest.raises(ParameterError, match="weights"):
            mdav(X, 3, weights=bad)


