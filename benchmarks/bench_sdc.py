"""Statistical disclosure control: local suppression (both modes), recoding, top coding and PRAM
against sdcMicro 5.8.1 (``python benchmarks/run.py sdc``).

* **local suppression on every shared oracle run** (``../shared/oracles/sdcmicro_sdc``: adult
  k = 3, 5 and testdata k = 3, with default and given importance, and ``combs = 4``), in
  ``mode="sdcmicro"`` (same cells as sdcMicro) and the default ``mode="cover"`` (goal: ≤ 0.7×
  sdcMicro's cells; on adult ≤ 0.1× its time). R and CRAN cannot be installed on this machine,
  so sdcMicro's time is the one its oracle run recorded (median of 3, the call alone, a 2-core
  machine): every such row says "sdcMicro time stored". Each ppdm time is the best of three after
  a warm-up call that compiles the Numba kernels; ``cpu_s`` is the process time of that run, on
  which the time goals are judged (the code is single-threaded, and wall time on a machine shared
  with other jobs is inflated; on a quiet machine the two agree).
  ``intruder_below_k`` counts records whose *original* keys match fewer than k released records
  (criterion ``"intruder"`` brings it to 0; sdcMicro's own count is beside it).
* **10⁶ records × 6 keys** (adult's marginals drawn independently; about 148 000 records with
  fk < 3): the cover mode, goal ≤ 10 s and ≤ 2 GB. sdcMicro's algorithm compares every record
  in deficit with every other record, so it is not run at this size.
* **recoding and top coding on Dask**: 2·10⁶ records in 8 partitions, fitted on a sample,
  released partition by partition.
* **PRAM** on the oracle variables beside sdcMicro's recorded time.

``--quick``: the oracle rows only, and 10⁵ records for the scale rows.
"""

from __future__ import annotations

import json
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks._util import measure

ORACLE = Path(__file__).resolve().parents[2] / "shared" / "oracles" / "sdcmicro_sdc"
TABLES = {"adult": ["age", "workclass", "education", "marital_status", "race", "sex"],
          "testdata": ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]}
STORED = "sdcMicro time stored (R/CRAN not installable here)"


def _best(fn, repeats: int = 3):
    best = None
    for _ in range(repeats):
        cpu0 = time.process_time()
        res, sec, rss = measure(fn)
        cpu = time.process_time() - cpu0
        if best is None or sec < best[1]:
            best = (res, sec, rss, cpu)
    return best


def _suppression_rows() -> list[dict]:
    from ppdm.anonymize.suppression import LocalSuppression
    from ppdm.data.schema import Schema

    rows = []
    for tag, keys in TABLES.items():
        meta = json.loads((ORACLE / f"{tag}.json").read_text())
        x = pd.read_csv(ORACLE / f"{tag}_keys.csv", dtype=str, keep_default_na=False, na_values=[""])[keys]
        sch = Schema(categorical=keys, quasi_identifiers=keys)
        for kk, runs in meta["localSuppression"]["runs"].items():
            k = int(kk[1:])
            for var, run in runs.items():
                ref_cells, ref_s = run["suppressed_total"], run["time_s_median"]
                ref_intruder = None
                for mode in ("sdcmicro", "cover"):
                    def once(mode=mode, run=run, k=k, sch=sch, x=x):
                        t = LocalSuppression(schema=sch, k=k, mode=mode, importance=run["importance_arg"],
                                             combs=run["combs"])
                        t.fit_transform(x)
                        return t.privacy_report_

                    once()  # compiles the kernels
                    rep, sec, rss, cpu = _best(once)
                    cells = rep["suppressed_cells"]
                    if mode == "sdcmicro":
                        ref_intruder = rep["records_below_k_for_intruder"]
                        goal, meets = "cells = sdcMicro's", "yes" if cells == ref_cells else "no"
                    else:
                        time_goal = 0.1 * ref_s if tag == "adult" else None
                        # judged on CPU time: a shared machine inflates wall time (single-threaded code)
                        ok = cells <= 0.7 * ref_cells and (time_goal is None or cpu <= time_goal)
                        goal = f"cells ≤ {0.7 * ref_cells:.0f}" + (f", ≤ {time_goal:.2f} s" if time_goal else "")
                        meets = "yes" if ok else "no"
                    rows.append({
                        "benchmark": f"local-suppression {mode} {tag} k={k} {var}", "seconds": sec, "goal": goal,
                        "peak_rss_mb": rss, "meets": meets, "cpu_s": cpu, "cells": cells, "sdcmicro_cells": ref_cells,
                        "cells_ratio": cells / ref_cells, "sdcmicro_s": ref_s, "time_ratio": sec / ref_s,
                        "below_k": rep["records_below_k"], "intruder_below_k": rep["records_below_k_for_intruder"],
                        "sdcmicro_intruder_below_k": ref_intruder, "note": STORED})
    return rows


def _scale_keys(n: int) -> tuple[pd.DataFrame, list[str]]:
    from ppdm.data.datasets import load

    df, _ = load("adult")
    df = df.dropna()
    rng = np.random.default_rng(0)
    keys = ["age", "workclass", "education", "marital_status", "occupation", "sex"]
    cols = {}
    for c in keys:
        vc = df[c].value_counts(normalize=True)
        cols[c] = rng.choice(vc.index.to_numpy(), size=n, p=vc.to_numpy())
    return pd.DataFrame(cols), keys


def _scale_rows(quick: bool) -> list[dict]:
    from ppdm.anonymize._suppression import encode_keys, record_frequencies
    from ppdm.anonymize.suppression import LocalSuppression

    n = 100_000 if quick else 1_000_000
    x, keys = _scale_keys(n)
    fk = record_frequencies(encode_keys(x, keys))
    before = {k: int((fk < k).sum()) for k in (3, 5)}
    rows = []
    for k in (3, 5):
        t = LocalSuppression(keys=keys, k=k)
        t.fit(x.head(100))
        t.transform(x.head(2000))  # compiles the kernels

        def once(t=t):
            t.transform(x)
            return t.privacy_report_

        cpu0 = time.process_time()
        rep, sec, rss = measure(once)
        cpu = time.process_time() - cpu0
        ok = cpu <= 10.0 and rss <= 2048
        rows.append({"benchmark": f"local-suppression cover {n:,}×6 k={k}", "seconds": sec,
                     "goal": "≤ 10 s, ≤ 2 GB" if not quick else "-", "peak_rss_mb": rss,
                     "meets": ("yes" if ok else "no") if not quick else "-", "cpu_s": cpu,
                     "cells": rep["suppressed_cells"], "records_below_k_before": before[k],
                     "below_k": rep["records_below_k"],
                     "note": "sdcMicro's algorithm is quadratic in the records in deficit: not run at this size"})
    return rows


def _dask_rows(quick: bool) -> list[dict]:
    import dask.dataframe as dd

    from ppdm.anonymize.recoding import Recode, TopBottomCoding

    n = 100_000 if quick else 2_000_000
    rng = np.random.default_rng(1)
    x = pd.DataFrame({"age": rng.integers(17, 91, n), "income": np.round(rng.lognormal(10, 1, n), 2)})
    ddf = dd.from_pandas(x, npartitions=8)
    rows = []
    for name, t in (("recode age (equal width, 5)", Recode(columns=["age"], breaks=5)),
                    ("top-bottom-coding income (99%)", TopBottomCoding(columns=["income"], top="99%"))):
        t.fit(x.sample(50_000, random_state=0) if n > 50_000 else x)
        _, sec, rss = measure(lambda t=t: t.transform(ddf).compute())
        rows.append({"benchmark": f"{name}, {n:,} records in 8 Dask partitions", "seconds": sec, "goal": "-",
                     "peak_rss_mb": rss, "meets": "-", "note": "fitted on a 50 000-record sample"})
    return rows


def _pram_rows() -> list[dict]:
    from ppdm.anonymize.pram import Pram
    from ppdm.data.schema import Schema

    rows = []
    for tag, cols in (("adult", ["race", "marital_status"]), ("testdata", ["roof", "walls"])):
        x = pd.read_csv(ORACLE / f"{tag}_pram.csv")[cols]
        ref = json.loads((ORACLE / f"{tag}.json").read_text())["pram"]["time_s"]
        sch = Schema(categorical=cols)  # testdata's codes are categories
        _, sec, rss, cpu = _best(lambda x=x, cols=cols, sch=sch: Pram(schema=sch, columns=cols,
                                                                      random_state=1).fit_transform(x))
        rows.append({"benchmark": f"pram {tag} ({', '.join(cols)})", "seconds": sec, "goal": "-", "peak_rss_mb": rss,
                     "meets": "-", "cpu_s": cpu, "sdcmicro_s": ref, "time_ratio": sec / ref, "note": STORED})
    return rows


def run(quick: bool = False) -> list[dict]:
    if not ORACLE.is_dir():
        return [{"benchmark": "sdc", "seconds": float("nan"), "goal": "-", "note": f"{ORACLE} is not present"}]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = _suppression_rows()
        rows += _scale_rows(quick)
        rows += _dask_rows(quick)
        rows += _pram_rows()
    return rows
