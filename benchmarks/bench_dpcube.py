"""DPCube speed and memory on 10⁵ records.

Goals: fitting and generating 100 000 records over 5 numeric attributes × class with 10
bins (2·10⁵ cells) within 5 s (kd-tree and cell baseline); over 6 attributes (2·10⁶ cells)
within 5 s and 600 MiB, although the cell baseline keeps one box per cell. With the
default grid (``bins="auto"``, sized from n, d and ε) 100 000 records over 6 attributes,
and 10 000 records over 58 attributes (a wide table: most attributes get one bin, no
overflow), within 5 s each.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from benchmarks._util import measure
from ppdm.anonymize.differential_privacy import CoarseGridWarning, DPCube


def _table(n: int, d: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    cols = {f"a{j}": rng.normal(y * (j + 1) * 0.5, 1.0) for j in range(d)}
    cols["y"] = y
    return pd.DataFrame(cols)


def _declared(d: int) -> dict:
    """A public domain wide enough for every generated value (declared, not read from the data)."""
    return {"bounds": {f"a{j}": (-6.0, 6.0 + (j + 1) * 0.5) for j in range(d)}, "domains": {"y": [0, 1]}}


def run(quick: bool) -> list[dict]:
    rows = []
    cases = [(2_000, 3, 6, "kd"), (2_000, 3, 6, "cell"), (2_000, 3, "auto", "kd")] if quick else [
        (100_000, 5, 10, "kd"), (100_000, 5, 10, "cell"), (100_000, 6, 10, "kd"), (100_000, 6, 10, "cell"),
        (100_000, 6, "auto", "kd"), (10_000, 58, "auto", "kd"),
    ]
    for n, d, bins, part in cases:
        df = _table(n, d)
        t = DPCube(class_column="y", epsilon=1.0, bins=bins, partitioning=part, random_state=0, **_declared(d))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CoarseGridWarning)
            z, sec, rss = measure(lambda t=t, df=df: t.fit_transform(df))
        rows.append({
            "benchmark": f"dpcube {part} n={n} d={d} bins={bins}",
            "cells": t.grid_.n_cells, "partitions": len(t.partitions_), "rows_released": len(z), "seconds": sec,
            "goal": 5.0, "peak_rss_mb": rss,
        })
    return rows
