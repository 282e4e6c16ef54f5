"""A hospital discharge table as a data owner holds it: a record number, birth and admission
dates, sex, a three-digit zip, an admission type, blank cells in keys and in other columns,
a discharge weight, a few numeric columns (length of stay, procedures, total charges) and a
class (readmitted within 30 days). Written to CSV and read back, its dates are read as
datetime columns."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

#: the roles a data owner declares for it (the CLI's --id/--qi/--weight/--class)
ROLES = {"id": "patient_id", "qi": "birth_date,admission_date,sex,zip3", "weight": "discharge_weight",
         "class": "readmitted"}


def hospital_table(n: int = 600, seed: int = 7) -> pd.DataFrame:
    """``n`` discharges (weights per stratum of zip3 and admission type); about 5 % of sex, zip3 and birth dates and 8 % of total charges blank."""
    rng = np.random.default_rng(seed)
    birth = pd.Timestamp("1930-01-01") + pd.to_timedelta(rng.integers(0, 85 * 365, n), unit="D")
    admit = pd.Timestamp("2022-01-01") + pd.to_timedelta(rng.integers(0, 730, n), unit="D")
    age = (admit - birth).days / 365.25
    stay = rng.poisson(2 + age / 20).astype(int) + 1
    procedures = rng.poisson(1.5, n)
    charges = np.round(rng.lognormal(8.5, 0.6, n) * stay, 2)
    p = 1 / (1 + np.exp(-(-3 + age / 40 + stay / 6)))
    df = pd.DataFrame({
        "patient_id": np.arange(500_001, 500_001 + n),
        "birth_date": birth.strftime("%Y-%m-%d"),
        "admission_date": admit.strftime("%Y-%m-%d"),
        "sex": rng.choice(["F", "M"], n),
        "zip3": rng.choice(["021", "024", "017", "018", "019", "010"], n, p=[0.3, 0.2, 0.2, 0.1, 0.1, 0.1]),
        "admission_type": rng.choice(["emergency", "elective", "urgent", "newborn"], n, p=[0.5, 0.3, 0.15, 0.05]),
        "length_of_stay": stay,
        "num_procedures": procedures,
        "total_charges": charges,
        "discharge_weight": 0.0,
        "readmitted": np.where(rng.random(n) < p, "yes", "no"),
    })
    # a sampling weight per stratum (hospital region × admission type), as survey samples of
    # discharges publish it: a few dozen distinct values, not one per record
    strata = df["zip3"] + "/" + df["admission_type"]
    per = {s: round(float(w), 4) for s, w in zip(sorted(strata.unique()), rng.uniform(1.5, 6.0, strata.nunique()), strict=True)}
    df["discharge_weight"] = strata.map(per)
    for col, share in (("sex", 0.05), ("zip3", 0.05), ("birth_date", 0.05), ("total_charges", 0.08),
                       ("admission_type", 0.03)):
        df[col] = df[col].mask(rng.random(n) < share)
    return df


def write_hospital(path: Path, n: int = 600, seed: int = 7) -> Path:
    hospital_table(n, seed).to_csv(path, index=False)
    return path
