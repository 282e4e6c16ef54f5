"""Real tables at size: typed reading, and a release and its evaluation partition by partition.

A mixed table (whole numbers, 2-decimal floats, codes with leading zeros, dates, booleans, a
class; 20 % of every attribute missing) of 10⁶ rows (``--quick``: 5·10⁴) is written as CSV.

* ``typed read``: :func:`ppdm.data.io.read_table` (codes, dates, booleans, nullable integers)
  against a plain ``pandas.read_csv`` of the same file, measured side by side: the cost of
  typing (goal: ≤ 3× the plain read).
* ``partitioned release``: ``release_dataset`` (Gaussian noise, fitted on 10⁵ records) from the
  CSV in 16 MB blocks into a Parquet dataset, on this machine's local scheduler (goal:
  ≤ 120 s and peak RSS ≤ 1.5 GB — memory bounded by the partitions in flight, not the table).
* ``exact measures``: il1s, sse_sst, idr and release_check out of core on that release
  (goal ≤ 60 s); ``blocked linkage``: ddr out of core on 10⁵ rows (goal ≤ 60 s).

Run with ``python benchmarks/run.py out_of_core``.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks._util import measure


def _table(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)

    def holes(s: pd.Series) -> pd.Series:
        return s.mask(rng.random(n) < 0.2)

    return pd.DataFrame({
        "age": holes(pd.Series(rng.integers(18, 90, n)).astype("Int64")),
        "income": holes(pd.Series(np.round(rng.normal(3000, 800, n), 2))),
        "ratio": holes(pd.Series(np.round(rng.random(n), 3))),
        "zip": holes(pd.Series(rng.choice(["0150", "0001", "1200", "0420", "7000"], n), dtype="str")),
        "visit": holes(pd.Series(pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 700, n), unit="D"))),
        "member": holes(pd.Series(rng.random(n) < 0.4, dtype="boolean")),
        "label": pd.Series(rng.choice(["yes", "no"], n), dtype="str"),
    })


def _row(name: str, seconds: float, rss: float, goal_s: float | None, goal_mb: float | None = None,
         **extra: object) -> dict:
    misses = []
    if goal_s is not None and seconds > goal_s:
        misses.append(f"time ×{seconds / goal_s:.2f}")
    if goal_mb is not None and rss > goal_mb:
        misses.append(f"memory ×{rss / goal_mb:.2f}")
    goal = " ".join(g for g in (f"≤{goal_s:g} s" if goal_s else "", f"≤{goal_mb:g} MB" if goal_mb else "") if g)
    return {"benchmark": name, "seconds": seconds, "peak_rss_mb": rss, "goal": goal or "-",
            "meets": "yes" if not misses else "no (" + ", ".join(misses) + ")", **extra}


def run(quick: bool = False) -> list[dict]:
    from ppdm.anonymize.registry import make_technique
    from ppdm.data.io import read_table
    from ppdm.data.partitions import open_dataset
    from ppdm.experiments.evaluation import load_all_measures
    from ppdm.experiments.out_of_core import release_dataset
    from ppdm.metrics._dask import working_parts
    from ppdm.metrics.base import MEASURES, EvaluationContext
    from ppdm.metrics.out_of_core import evaluate_measure

    load_all_measures()
    n = 50_000 if quick else 1_000_000
    rows: list[dict] = []
    tmp = Path(tempfile.mkdtemp(prefix="ppdm-bench-"))
    try:
        src = tmp / "x.csv"
        _table(n).to_csv(src, index=False)
        size_mb = src.stat().st_size / 2**20
        best_plain = best_typed = float("inf")
        rss_typed = 0.0
        for _ in range(2):  # side by side, best of two
            _, t_plain, _ = measure(lambda: pd.read_csv(src))
            typed, t_typed, rss_typed = measure(lambda: read_table(src))
            best_plain, best_typed = min(best_plain, t_plain), min(best_typed, t_typed)
        assert typed["zip"].str.startswith("0").any()
        ratio = best_typed / best_plain
        rows.append({"benchmark": "typed read (ratio to pandas.read_csv)", "seconds": best_typed,
                     "peak_rss_mb": rss_typed, "goal": "≤3×", "ratio": ratio, "plain_s": best_plain,
                     "rows": n, "csv_mb": size_mb, "meets": "yes" if ratio <= 3 else f"no (×{ratio / 3:.2f})"})
        ds = open_dataset(str(src), blocksize="4MB" if quick else "16MB")
        tech = make_technique("gaussian-noise", class_column="label", random_state=1, params={"level": 0.3})
        rel, secs, rss = measure(lambda: release_dataset(ds, tech, tmp / "z", missing="keep",
                                                         fit_rows=100_000, allow_unchanged=True))
        rows.append(_row("partitioned release (gaussian-noise)", secs, rss, None if quick else 120.0,
                         None if quick else 1500.0, rows=n, partitions=rel.n_partitions, rows_per_s=n / secs))
        z = open_dataset(str(tmp / "z"), schema=rel.schema)
        ctx = EvaluationContext(x=working_parts(ds.data, rel.schema.numeric),
                                z=working_parts(z.data, rel.schema.numeric), schema=rel.schema, random_state=0)
        names = ["il1s", "sse_sst", "idr", "release_check"]
        _, secs, rss = measure(lambda: [evaluate_measure(MEASURES[m], ctx) for m in names])
        rows.append(_row("exact measures (" + ", ".join(names) + ")", secs, rss, None if quick else 60.0, rows=n))
        k = 10_000 if quick else 100_000
        small = tmp / "s.csv"
        _table(k, 1).to_csv(small, index=False)
        sds = open_dataset(str(small), blocksize="1MB")
        rel2 = release_dataset(sds, tech, tmp / "sz", missing="keep", fit_rows=k, allow_unchanged=True)
        zs = open_dataset(str(tmp / "sz"), schema=rel2.schema)
        ctx2 = EvaluationContext(x=working_parts(sds.data, rel2.schema.numeric),
                                 z=working_parts(zs.data, rel2.schema.numeric), schema=rel2.schema)
        res, secs, rss = measure(lambda: evaluate_measure(MEASURES["ddr"], ctx2))
        rows.append(_row("blocked linkage (ddr out of core)", secs, rss, None if quick else 60.0, rows=k,
                         partitions=sds.npartitions, linked_records=res.n))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows
