"""Disclosure risk of a release larger than memory: 5·10⁶ records (``--quick``: 2·10⁵).

An original table (sex, region with 3 % missing, job, age, income, a sampling weight) and
its release (income with noise, half of the ages moved by up to 2 years) are written as two
Parquet datasets of 250 000-record parts, generated part by part, and measured out of core
as ``ppdm evaluate`` does:

* ``key-variable risk (exact)``: k-anonymity, sample uniques and re-identification risk with
  the weights on sex, region and job, each on z and on x — Dask group-bys on the keys, no
  sample (goal ≤ 120 s, peak RSS ≤ 2 GB);
* ``record linkage (sampled)``: 20 000 released records, each linked against all 5·10⁶
  originals (a k-d tree per part, each part read twice), with a Wilson 95 % interval
  (goal ≤ 300 s);
* ``intruder matching (sampled)``: 20 000 originals, each matched on sex, region and the
  perturbed age against every released record (goal ≤ 120 s).

Peak RSS is that of this process (the local threaded scheduler). Run with
``python benchmarks/run.py risk_scale``.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks._util import measure

PART_ROWS = 250_000


def _part(n: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    region = pd.Series(rng.choice([f"r{i:02d}" for i in range(30)], n), dtype=object)
    region[rng.random(n) < 0.03] = None
    x = pd.DataFrame({"sex": rng.choice(["f", "m"], n), "region": region,
                      "job": rng.choice([f"j{i}" for i in range(12)], n),
                      "age": rng.integers(18, 90, n).astype(float), "income": np.round(rng.normal(3000, 800, n), 2),
                      "weight": rng.uniform(50, 150, n)})
    z = x.copy()
    z["income"] = np.round(z["income"] + rng.normal(0, 150, n), 2)
    moved = rng.random(n) < 0.5
    z.loc[moved, "age"] = z.loc[moved, "age"] + rng.integers(-2, 3, int(moved.sum()))
    return x, z


def _row(name: str, seconds: float, rss: float, goal_s: float, goal_mb: float | None, **extra: object) -> dict:
    misses = []
    if seconds > goal_s:
        misses.append(f"time ×{seconds / goal_s:.2f}")
    if goal_mb is not None and rss > goal_mb:
        misses.append(f"memory ×{rss / goal_mb:.2f}")
    goal = f"≤{goal_s:g} s" + (f" ≤{goal_mb:g} MB" if goal_mb else "")
    return {"benchmark": name, "seconds": seconds, "peak_rss_mb": rss, "goal": goal,
            "meets": "yes" if not misses else "no (" + ", ".join(misses) + ")", **extra}


def run(quick: bool = False) -> list[dict]:
    from ppdm.data.partitions import open_dataset
    from ppdm.data.schema import Schema
    from ppdm.experiments.evaluation import load_all_measures
    from ppdm.metrics.base import MEASURES, EvaluationContext
    from ppdm.metrics.out_of_core import evaluate_measure

    load_all_measures()
    n = 200_000 if quick else 5_000_000
    part = 50_000 if quick else PART_ROWS
    tmp = Path(tempfile.mkdtemp(prefix="ppdm-bench-risk-"))
    rows: list[dict] = []
    try:
        (tmp / "x").mkdir()
        (tmp / "z").mkdir()
        for i, start in enumerate(range(0, n, part)):
            x, z = _part(min(part, n - start), i)
            x.to_parquet(tmp / "x" / f"part.{i:05d}.parquet", index=False)
            z.to_parquet(tmp / "z" / f"part.{i:05d}.parquet", index=False)
        sch = Schema(numeric=["age", "income"], categorical=["sex", "region", "job"], weight="weight")
        dx, dz = open_dataset(str(tmp / "x"), schema=sch), open_dataset(str(tmp / "z"), schema=sch)
        ctx = EvaluationContext(x=dx.data, z=dz.data, schema=sch, random_state=0,
                                options={"keys": "sex,region,job", "qi_matching.keys": "sex,region,age"})
        names = ["k_anonymity", "sample_uniques", "reidentification_risk"]
        res, secs, rss = measure(lambda: [evaluate_measure(MEASURES[m], ctx) for m in names])
        rows.append(_row("key-variable risk out of core (exact: " + ", ".join(names) + ")", secs, rss,
                         120.0, 2048.0, rows=n, partitions=dx.npartitions,
                         reidentification_risk=res[2].value, k_anonymity=res[0].value))
        res, secs, rss = measure(lambda: evaluate_measure(MEASURES["record_linkage"], ctx))
        rows.append(_row("record linkage out of core (20 000 released records against all originals)", secs, rss,
                         300.0, 2048.0, rows=n, value=res.value, ci=f"[{res.ci_low:.4f}, {res.ci_high:.4f}]"))
        res, secs, rss = measure(lambda: evaluate_measure(MEASURES["qi_matching"], ctx))
        rows.append(_row("intruder matching out of core (20 000 originals against all released)", secs, rss,
                         120.0, 2048.0, rows=n, value=res.value, ci=f"[{res.ci_low:.5f}, {res.ci_high:.5f}]",
                         tolerance=res.tolerance))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows
