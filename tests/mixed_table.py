"""A realistic mixed table for the round-trip tests: whole numbers, floats written with 2 and
3 decimals, codes with leading zeros, integer-coded categories, dates, booleans and a class,
with 10–30 % of the cells of every attribute missing."""

from __future__ import annotations

import numpy as np
import pandas as pd

#: share of missing cells per attribute
MISSING_SHARE = {"age": 0.2, "income": 0.1, "ratio": 0.3, "zip": 0.15, "visit": 0.25, "member": 0.2,
                 "grade": 0.1}
CODES = ["0150", "0001", "1200", "0420", "7000"]
#: parameters that make every technique run on the table (DPCube: a small grid, little noise, one
#: partition per cell so that its synthetic records keep the shares of missing cells)
PARAMS: dict[str, dict] = {"random-substitution": {"gamma": 5.0},
                           "dpcube": {"bins": 3, "epsilon": 50.0, "partitioning": "cell", "domain_from_data": True},
                           "local-suppression": {"keys": ["age", "zip", "member", "grade"]},
                           # a missing key is a value of its own for generalize: with 10–30 % missing cells per key the
                           # missingness patterns make small classes at every level, suppressed beyond the default 5 %;
                           # the numbers and the date are its keys (categories would become *, which the tests of
                           # leading zeros and booleans do not expect)
                           "generalize": {"keys": ["age", "income", "ratio", "visit"], "suppression_limit": 1.0}}


def mixed_table(n: int = 240, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)

    def holes(s: pd.Series, share: float) -> pd.Series:
        # exactly round(share·n) missing cells, at random rows
        gone = np.zeros(n, dtype=bool)
        gone[rng.choice(n, size=round(share * n), replace=False)] = True
        return s.mask(gone)

    cols = {
        "age": pd.Series(rng.integers(18, 90, n)).astype("Int64"),
        "income": pd.Series(np.round(rng.normal(3000, 800, n), 2)),
        "ratio": pd.Series(np.round(rng.random(n), 3)),
        "zip": pd.Series(rng.choice(CODES, n), dtype="str"),
        "visit": pd.Series(pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 700, n), unit="D")),
        "member": pd.Series(rng.random(n) < 0.4, dtype="boolean"),
        "grade": pd.Series(rng.integers(1, 5, n)).astype("Int64"),
    }
    df = pd.DataFrame({c: holes(s, MISSING_SHARE[c]) for c, s in cols.items()})
    df["label"] = pd.Series(np.where(df["income"].fillna(3000) + rng.normal(0, 400, n) > 3000, "yes", "no"),
                            dtype="str")
    return df
