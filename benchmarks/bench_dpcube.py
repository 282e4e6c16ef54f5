"""DPCube speed and memory on 10⁵ records.

Goals: fitting and generating 100 000 records over 5 numeric attributes × class with 10
bins (2·10⁵ cells) within 5 s (kd-tree and cell baseline); over 6 attributes (2·10⁶ cells)
within 5 s and 600 MiB, although the cell baseline keeps one box per cell.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from benchmarks._util import measure
from ppdm.anonymize.differential_privacy import DomainFromDataWarning, DPCube


def _table(n: int, d: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    cols = {f"a{j}": rng.normal(y * (j + 1) * 0.5, 1.0) for j in range(d)}
    cols["y"] = y
    return pd.DataFrame(cols)


def run(quick: bool) -> list[dict]:
    rows = []
    cases = [(2_000, 3, 6)] if quick else [(100_000, 5, 10), (100_000, 6, 10)]
    for n, d, bins in cases:
        df = _table(n, d)
        for part in ("kd", "cell"):
            t = DPCube(class_column="y", epsilon=1.0, bins=bins, partitioning=part, random_state=0)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DomainFromDataWarning)
                _, sec, rss = measure(lambda t=t, df=df: t.fit_transform(df))
            cells = t.grid_.n_cells
            rows.append({
                "benchmark": f"dpcube {part} n={n} d={d} bins={bins}",
                "cells": cells, "partitions": len(t.partitions_), "seconds": sec,
                "goal": 5.0, "peak_rss_mb": rss,
            })
    return rows
