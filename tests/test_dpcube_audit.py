"""An empirical privacy audit of DPCube (slow suite).

Differential privacy bounds, for neighbouring tables D and D′ and every set E of outputs,
``P(M(D′) ∈ E) ≤ e^ε · P(M(D) ∈ E)`` and the same with D and D′ swapped. The audit
runs the mechanism many times on D and on D′ = D plus one record, picks an event from a
first batch of runs (selection), estimates its probability under D and D′ on fresh runs,
and bounds ε from below by ``ln(lower(p′) / upper(p))`` with Clopper–Pearson intervals
(each at confidence 1 − 0.005, so the bound holds with probability ≥ 0.99). A correct
mechanism gives a bound at most its ε; the companion tests show that the audit does
flag a mechanism whose noise has been removed or halved while it still claims ε.

(A) audits the released table end to end with DPCube's defaults (ε = 1): the statistics
are the number of released records in the added record's corner of the domain and the
number of released records. The release reveals much less about one record than ε
allows (allocation and placement are post-processing), so its bound stays far below ε:
(A) detects gross failures such as missing noise or an exact record count.
(B) audits the phase-1 noisy cell histogram, which DPCube publishes as its histogram,
against the phase's own budget ε1: its bound comes within a few tenths of ε1, so it
also detects a noise scale that is off by a factor of two.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest
from scipy.stats import beta

import ppdm.anonymize.differential_privacy as dpmod
from ppdm.data import Schema

pytestmark = pytest.mark.slow

ALPHA = 0.005  # per Clopper–Pearson interval; two intervals per bound


def clopper_pearson(k: int, n: int, alpha: float) -> tuple[float, float]:
    """One-sided (lower, upper) confidence bounds, each at level 1 − alpha, for a proportion k/n."""
    lo = 0.0 if k == 0 else float(beta.ppf(alpha, k, n - k + 1))
    hi = 1.0 if k == n else float(beta.ppf(1 - alpha, k + 1, n - k))
    return lo, hi


def _ratios(c0: int, c1: int, n: int) -> dict[str, tuple[int, int]]:
    """(numerator, denominator) counts of the four ratios DP bounds for an event E and its complement."""
    return {"P1(E)/P0(E)": (c1, c0), "P0(E)/P1(E)": (c0, c1),
            "P1(not E)/P0(not E)": (n - c1, n - c0), "P0(not E)/P1(not E)": (n - c0, n - c1)}


def _log_ratio_bound(num: int, den: int, n: int, alpha: float) -> float:
    lo, _ = clopper_pearson(num, n, alpha)
    _, hi = clopper_pearson(den, n, alpha)
    return math.log(lo / hi) if lo > 0 else -math.inf


def epsilon_lower_bound(run: Callable[[pd.DataFrame, int], tuple[float, ...]], d0: pd.DataFrame, d1: pd.DataFrame,
                        n_select: int, n_estimate: int) -> tuple[float, str]:
    """Lower confidence bound on the ε of ``run`` from events ``statistic_j ≥ t``.

    ``run(table, seed)`` returns the statistics of one release. The event (statistic,
    threshold, direction) is the one with the best bound on ``n_select`` runs per table
    among those seen in at least a tenth of them (rarer ones win the selection by luck);
    the returned bound comes from ``n_estimate`` fresh runs, so the selection does not
    bias it.
    """
    s0 = np.array([run(d0, 10**6 + i) for i in range(n_select)], dtype=float)
    s1 = np.array([run(d1, 2 * 10**6 + i) for i in range(n_select)], dtype=float)
    best: tuple[float, int, float, str] = (-math.inf, 0, 0.0, "P1(E)/P0(E)")
    for j in range(s0.shape[1]):
        values = np.unique(np.concatenate([s0[:, j], s1[:, j]]))
        if len(values) > 60:
            values = np.unique(np.quantile(values, np.linspace(0, 1, 60)))
        for t in values:
            c0, c1 = int((s0[:, j] >= t).sum()), int((s1[:, j] >= t).sum())
            for name, (num, den) in _ratios(c0, c1, n_select).items():
                if num < 0.1 * n_select:  # a rare event's ratio on few runs is mostly luck
                    continue
                b = _log_ratio_bound(num, den, n_select, 0.05)
                if b > best[0]:
                    best = (b, j, float(t), name)
    _, j, t, name = best
    e0 = sum(run(d0, 3 * 10**6 + i)[j] >= t for i in range(n_estimate))
    e1 = sum(run(d1, 4 * 10**6 + i)[j] >= t for i in range(n_estimate))
    num, den = _ratios(int(e0), int(e1), n_estimate)[name]
    return _log_ratio_bound(num, den, n_estimate, ALPHA), f"statistic {j} ≥ {t:g}, {name}, counts {num}/{den}"


# ---------------------------------------------------------------- neighbouring tables
def _neighbours(n: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, Schema]:
    """D: n records in the lower half of a's declared domain [0, 1]; D′: D plus one record at a = 0.97."""
    rng = np.random.default_rng(0)
    d0 = pd.DataFrame({"a": rng.uniform(0, 0.5, n), "y": rng.integers(0, 2, n)})
    extra = pd.DataFrame({"a": [0.97], "y": [1]})
    schema = Schema(["a"], [], "y", bounds={"a": (0.0, 1.0)}, categories={"y": [0, 1]})
    return d0, pd.concat([d0, extra], ignore_index=True), extra, schema


def _release_statistics(schema: Schema) -> Callable[[pd.DataFrame, int], tuple[float, ...]]:
    def run(table: pd.DataFrame, seed: int) -> tuple[float, ...]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", dpmod.CoarseGridWarning)
            z = dpmod.DPCube(schema=schema, random_state=seed).fit_transform(table)
        return float(((z["a"] > 0.9) & (z["y"] == 1)).sum()), float(len(z))

    return run


def _histogram_statistic(schema: Schema, extra: pd.DataFrame) -> Callable[[pd.DataFrame, int], tuple[float, ...]]:
    def run(table: pd.DataFrame, seed: int) -> tuple[float, ...]:
        t = dpmod.DPCube(schema=schema, random_state=seed).fit(table)
        cell = tuple(t.grid_.cell_indices(extra, active_only=True)[0])
        return (float(t.histogram_noisy_[cell]),)

    return run


def _claimed(schema: Schema, table: pd.DataFrame) -> tuple[float, float]:
    report = dpmod.DPCube(schema=schema, random_state=0).fit(table).privacy_report_
    return report["epsilon"], report["phases"][1]["epsilon"]


@pytest.fixture
def noise_removed(monkeypatch):
    """The mechanism without its Laplace noise, still claiming its ε."""
    monkeypatch.setattr(dpmod, "laplace_mechanism", lambda values, sensitivity, epsilon, rng:
                        np.asarray(values, dtype=float).copy())


@pytest.fixture
def noise_halved(monkeypatch):
    """Laplace noise of half the scale the accounting claims."""
    real = dpmod.laplace_mechanism
    monkeypatch.setattr(dpmod, "laplace_mechanism", lambda values, sensitivity, epsilon, rng:
                        real(values, sensitivity, 2 * epsilon, rng))


# ---------------------------------------------------------------------- the audits
def test_released_table_respects_epsilon():
    d0, d1, _, schema = _neighbours(40)
    eps, _ = _claimed(schema, d0)
    bound, event = epsilon_lower_bound(_release_statistics(schema), d0, d1, n_select=300, n_estimate=1500)
    assert bound <= eps, f"measured ε ≥ {bound:.3f} > claimed {eps} ({event})"


def test_release_audit_fails_when_the_noise_is_removed(noise_removed):
    d0, d1, _, schema = _neighbours(40)
    eps, _ = _claimed(schema, d0)
    bound, event = epsilon_lower_bound(_release_statistics(schema), d0, d1, n_select=100, n_estimate=300)
    assert bound > eps + 2, f"the audit missed a mechanism without noise: bound {bound:.3f} ({event})"


def test_noisy_histogram_respects_its_phase_budget():
    d0, d1, extra, schema = _neighbours(200)
    _, eps1 = _claimed(schema, d0)
    bound, event = epsilon_lower_bound(_histogram_statistic(schema, extra), d0, d1, n_select=300, n_estimate=2000)
    assert bound <= eps1, f"measured ε1 ≥ {bound:.3f} > claimed {eps1} ({event})"
    # the audit sees the record (its power: the companion below flags noise of half the scale)
    assert bound > 0, event


def test_histogram_audit_fails_when_the_noise_is_halved(noise_halved):
    d0, d1, extra, schema = _neighbours(200)
    _, eps1 = _claimed(schema, d0)
    bound, event = epsilon_lower_bound(_histogram_statistic(schema, extra), d0, d1, n_select=300, n_estimate=2000)
    assert bound > eps1, f"the audit missed noise of half the claimed scale: bound {bound:.3f} ({event})"
