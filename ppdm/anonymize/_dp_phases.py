"""DPCube's noisy phases, each a module function so its noise is visible in one place.

Part of :mod:`ppdm.anonymize.differential_privacy`. The audits in
tests/test_dpcube_audit.py replace these one at a time (on this module) to check that a
weakened phase is caught, so the technique calls them as ``phases.<name>``.
"""

from __future__ import annotations

import numpy as np

from ppdm.anonymize._dp_mechanisms import (
    discrete_laplace,
    discrete_laplace_variance,
    dp_bin_edges,
    gumbel_top_k,
)

__all__ = ["discrete_laplace_variance", "dp_bin_edges", "noisy_histogram", "noisy_partition_counts",
           "noisy_table_size", "select_attributes"]


def noisy_table_size(n: int, epsilon: float, rng: np.random.Generator) -> float:
    """Phase 0: ``n + DLap(1/ε0)`` (a count of sensitivity 1 under add/remove-one neighbours)."""
    return float(discrete_laplace(np.array([float(n)]), 1.0, epsilon, rng)[0])


def select_attributes(scores: np.ndarray, k: int, epsilon_each: float, sensitivity: float,
                      rng: np.random.Generator) -> np.ndarray:
    """Phase S: the k attributes picked one after the other by the exponential mechanism,
    each pick ``epsilon_each``-DP for scores of the given sensitivity."""
    return gumbel_top_k(scores, k, epsilon_each, sensitivity, rng)


def noisy_histogram(hist: np.ndarray, sensitivity: float, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """Phase 1: every cell count plus ``DLap(Δ/ε1)`` (disjoint cells: parallel composition)."""
    return discrete_laplace(hist, sensitivity, epsilon, rng)


def noisy_partition_counts(counts: np.ndarray, sensitivity: float, epsilon: float,
                           rng: np.random.Generator) -> np.ndarray:
    """Phase 2b: every partition's count plus ``DLap(Δ/ε2)`` (disjoint boxes: parallel composition)."""
    return discrete_laplace(counts, sensitivity, epsilon, rng)


def _child_rng(rng: np.random.Generator, k: int) -> np.random.Generator:
    """Independent stream number ``k`` of ``rng`` (fit draws noise from 0, transform samples from 1)."""
    try:
        return rng.spawn(2)[k]
    except (TypeError, ValueError, AttributeError):  # a generator without a seed sequence
        return rng
