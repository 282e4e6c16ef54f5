"""Random substitution speed: perturbation (001 Algorithm 1) and MR reconstruction (Algorithm 2).

Goals (2-core machine): perturbing 1,000,000 records of one attribute with N = 100 and
rebuilding it each take under 2 s per attribute; peak memory stays within a few n-sized arrays
(no n × N allocation).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchmarks._util import measure
from ppdm.anonymize.random_substitution import RandomSubstitution
from ppdm.anonymize.reconstruct import reconstruct


def run(quick: bool) -> list[dict]:
    n = 50_000 if quick else 1_000_000
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.normal(size=n), "b": rng.gamma(2.0, size=n)})
    t = RandomSubstitution(gamma=10, n_bins=100, random_state=0).fit(df)
    z, sec_p, rss_p = measure(lambda: t.transform(df))
    _, sec_r, rss_r = measure(lambda: reconstruct(z, t.metadata_))
    return [
        {"benchmark": f"random substitution, 2 attributes, n={n:,}, N=100", "seconds": sec_p,
         "goal": 2.0 * n / 1_000_000 * 2, "peak_rss_mb": rss_p},
        {"benchmark": f"MR reconstruction, 2 attributes, n={n:,}, N=100", "seconds": sec_r,
         "goal": 2.0 * n / 1_000_000 * 2, "peak_rss_mb": rss_r},
    ]
