"""A small people table shared by the release and evaluation tests: two numbers, two categories
and a class that depends on age (so models trained on it predict something)."""

from __future__ import annotations

import numpy as np
import pandas as pd


def people(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a = rng.normal(40, 10, n).round(1)
    return pd.DataFrame({
        "age": a,
        "hours": rng.integers(10, 60, n),
        "sex": rng.choice(["f", "m"], n),
        "job": rng.choice(["clerk", "nurse", "smith", "cook"], n),
        "y": np.where(a + rng.normal(0, 5, n) > 40, "hi", "lo"),
    })
