"""Rounding benchmarks (paper 003).

* optimal univariate microaggregation on 10⁶ values, k = 5, beside the ``microagg1d`` package
  (goal: ≤ 1.0× its time; 0.4 s is used as its reference time when it is not installed).

Multivariate MDAV (against sdcMicro, blocked, Dask) is in ``bench_mdav``.
"""

from __future__ import annotations

import numpy as np

from benchmarks._util import measure

MICROAGG1D_REFERENCE_S = 0.4


def run(quick: bool) -> list[dict]:
    from ppdm.anonymize.microaggregation import optimal_1d

    rng = np.random.default_rng(0)
    n1 = 10_000 if quick else 1_000_000
    x = rng.normal(size=n1)
    optimal_1d(x[:100], 5)  # compile outside the timing

    rows: list[dict] = []
    _, secs, rss = measure(lambda: optimal_1d(x, 5))
    try:
        from microagg1d import univariate_microaggregation

        univariate_microaggregation(x[:100], 5)
        _, ref, _ = measure(lambda: univariate_microaggregation(x, 5))
        ref_name = "microagg1d (measured)"
    except ImportError:
        ref, ref_name = MICROAGG1D_REFERENCE_S * n1 / 1_000_000, "microagg1d (reference 0.4 s per 10^6)"
    rows.append({"benchmark": f"optimal_1d n={n1:,} k=5", "seconds": secs, "reference": ref_name,
                 "reference_s": ref, "ratio": secs / ref, "goal": "ratio <= 1.0", "peak_rss_mb": rss})

    for r in rows:
        print(f"{r['benchmark']}: {r['seconds']:.3f} s, {r['reference']} {r['reference_s']:.3f} s, ratio {r['ratio']:.2f}")
    return rows
