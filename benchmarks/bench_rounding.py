"""Rounding benchmarks (paper 003).

* optimal univariate microaggregation on 10⁶ values, k = 5, beside the ``microagg1d`` package
  (goal: ≤ 1.0× its time; 0.4 s is used as its reference time when it is not installed);
* multivariate MDAV on 10⁵ × 5, k = 3, beside sdcMicro's reference of about 74 s
  (goal: ≤ 0.25× that time).
"""

from __future__ import annotations

import numpy as np

from benchmarks._util import measure

MICROAGG1D_REFERENCE_S = 0.4
SDCMICRO_MDAV_REFERENCE_S = 74.0


def run(quick: bool) -> list[dict]:
    from ppdm.anonymize.microaggregation import mdav, optimal_1d

    rng = np.random.default_rng(0)
    n1 = 10_000 if quick else 1_000_000
    n2 = 5_000 if quick else 100_000
    x = rng.normal(size=n1)
    X = rng.normal(size=(n2, 5))
    optimal_1d(x[:100], 5)  # compile outside the timing
    mdav(X[:100], 3)

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

    _, secs, rss = measure(lambda: mdav(X, 3))
    ref = SDCMICRO_MDAV_REFERENCE_S * (n2 / 100_000) ** 2  # quadratic algorithm: scale the reference
    rows.append({"benchmark": f"mdav n={n2:,} p=5 k=3", "seconds": secs, "reference": "sdcMicro 5.8.1 (74 s per 10^5)",
                 "reference_s": ref, "ratio": secs / ref, "goal": "ratio <= 0.25", "peak_rss_mb": rss})
    for r in rows:
        print(f"{r['benchmark']}: {r['seconds']:.3f} s, {r['reference']} {r['reference_s']:.3f} s, ratio {r['ratio']:.2f}")
    return rows
