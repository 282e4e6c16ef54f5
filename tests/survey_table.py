"""A survey-like table as a data owner holds it: a record number, zip codes written with
leading zeros, birth dates, incomes with empty cells, a sampling weight and a diagnosis.
Written to CSV and read back, it exercises every column type the typed reader knows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

#: the roles a data owner declares for it (the CLI's --id/--qi/--weight)
ROLES = {"id": "person_id", "qi": "zip,birth_date,sex", "weight": "weight", "class": "diagnosis"}


def survey_table(n: int = 400, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    zips = [f"{z:05d}" for z in rng.integers(100, 99_999, 12)]
    zips[:3] = ["01562", "02134", "00501"]  # leading zeros, whatever the draw
    birth = pd.Timestamp("1940-01-01") + pd.to_timedelta(rng.integers(0, 60 * 365, n), unit="D")
    income = np.round(rng.lognormal(10, 0.5, n), 2)
    df = pd.DataFrame({
        "person_id": np.arange(100_001, 100_001 + n),
        "zip": rng.choice(zips, n),
        "birth_date": birth.strftime("%Y-%m-%d"),
        "sex": rng.choice(["F", "M"], n),
        "income": income,
        "weight": np.round(rng.uniform(50, 150, n), 1),
        "diagnosis": np.where(income > np.median(income), rng.choice(["flu", "none"], n, p=[0.3, 0.7]),
                              rng.choice(["asthma", "none"], n, p=[0.4, 0.6])),
    })
    df["income"] = df["income"].mask(rng.random(n) < 0.1)
    return df


def write_survey(path: Path, n: int = 400, seed: int = 3) -> Path:
    survey_table(n, seed).to_csv(path, index=False)
    return path
