"""Multivariate MDAV at scale (paper 003 §3.1; technique ``mdav``).

* **global MDAV, 10⁵ × 5, k = 3** (normal data), with sdcMicro's arithmetic (``scaling="sdcmicro"``)
  and with z-scores: goal ≤ 0.1× sdcMicro 5.8.1's time. sdcMicro is timed side by side when
  ``Rscript -e 'library(sdcMicro)'`` works on this machine; otherwise the row uses the stored
  reference of 84 s (measured on this kind of machine, same SSE) and says so. ppdm's former
  full-pass kernel (``mdav_reference``, the same groups) is always timed side by side.
* **blocked against global MDAV, 10⁵ × 5**: SSE/SST of ``mdav_blocked`` at several block sizes
  over that of global MDAV on the same table; goal ≤ 1.10 at the default block size (50 000).
* **5 × 10⁶ × 5 through Dask**: 10 Parquet partitions read with ``dask.dataframe.read_parquet``,
  MDAV fitted on one partition, the release written with ``to_parquet``; goal ≤ 600 s and
  peak memory ≤ 4 GB. The same table in memory (pandas, ``strategy="auto"``) is a second row.
  SSE/SST of both is reported (global MDAV does not run at this size).

microagg1d (optimal univariate microaggregation) has no multivariate MDAV; its side-by-side
row is in ``bench_rounding``. ``--quick`` shrinks every size.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks._util import measure

SDCMICRO_MDAV_REFERENCE_S = 84.0  # sdcMicro 5.8.1, 10^5 x 5, k = 3, stored (R/CRAN unavailable here)
K = 3


def _sdcmicro_seconds(X: np.ndarray, k: int) -> float | None:
    """sdcMicro's MDAV time on ``X`` measured now, or None when R with sdcMicro is not installed."""
    if shutil.which("Rscript") is None:
        return None
    try:
        if subprocess.run(["Rscript", "-e", "library(sdcMicro)"], capture_output=True, timeout=300).returncode:
            return None
        with tempfile.TemporaryDirectory() as d:
            src = Path(d) / "x.csv"
            pd.DataFrame(X, columns=[f"v{j}" for j in range(X.shape[1])]).to_csv(src, index=False)
            script = (
                f'suppressMessages(library(sdcMicro)); x <- read.csv("{src}"); '
                f't <- system.time(microaggregation(x, variables = names(x), aggr = {k}, method = "mdav")); '
                'cat(t[["elapsed"]])'
            )
            out = subprocess.run(["Rscript", "-e", script], capture_output=True, text=True, timeout=7200)
        return float(out.stdout.split()[-1]) if out.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


def _sse_sst(X: np.ndarray, Z: np.ndarray) -> float:
    """SSE/SST in % on z-scores (sdcMicro's and ppdm's ``sse_sst(..., standardize="zscore")``)."""
    sd = X.std(axis=0, ddof=1)
    sst = (((X - X.mean(axis=0)) / sd) ** 2).sum()
    return float(100 * (((X - Z) / sd) ** 2).sum() / sst)


def _global_rows(n: int) -> list[dict]:
    from ppdm.anonymize._mdav import mdav_reference
    from ppdm.anonymize.microaggregation import group_means, mdav, mdav_weights

    X = np.random.default_rng(0).normal(size=(n, 5))
    scale = (n / 100_000) ** 2  # the stored reference is for 10^5 records; MDAV is quadratic
    measured = _sdcmicro_seconds(X, K)
    if measured is None:
        ref_s, ref_name = SDCMICRO_MDAV_REFERENCE_S * scale, "sdcMicro 5.8.1 (stored: 84 s per 10^5, not installed here)"
    else:
        ref_s, ref_name = measured, "sdcMicro (measured side by side)"
    rows = []
    for scaling in ("sdcmicro", "standard"):
        w = mdav_weights(X, scaling)
        f32 = scaling == "sdcmicro"
        mdav(X[:200], K, scaling)  # compile outside the timing
        mdav_reference(X[:200], w, K, f32, f32)
        labels, secs, rss = measure(lambda s=scaling: mdav(X, K, s))
        full, full_secs, _ = measure(lambda w=w, f=f32: mdav_reference(X, w, K, f, f))
        rows.append({
            "benchmark": f"mdav global n={n:,} p=5 k={K} scaling={scaling}", "seconds": secs,
            "reference": ref_name, "reference_s": ref_s, "ratio": secs / ref_s, "goal": "ratio <= 0.1",
            "full_pass_kernel_s": full_secs, "vs_full_pass": secs / full_secs,
            "same_groups_as_full_pass": bool(np.array_equal(labels, full)),
            "sse_sst_pct": _sse_sst(X, group_means(X, labels)[labels]), "peak_rss_mb": rss,
        })
    return rows


def _blocked_rows(n: int, sizes: tuple[int, ...]) -> list[dict]:
    from ppdm.anonymize.microaggregation import group_means, mdav, mdav_blocked

    X = np.random.default_rng(1).normal(size=(n, 5))
    mdav(X[:200], K)
    labels, gsecs, _ = measure(lambda: mdav(X, K))
    glob = _sse_sst(X, group_means(X, labels)[labels])
    rows = []
    for b in sizes:
        (lab, _), secs, rss = measure(lambda b=b: mdav_blocked(X, K, block_size=b))
        blocked = _sse_sst(X, group_means(X, lab)[lab])
        rows.append({
            "benchmark": f"mdav blocked n={n:,} p=5 k={K} block_size={b:,}", "seconds": secs,
            "global_s": gsecs, "sse_sst_pct": blocked, "global_sse_sst_pct": glob,
            "sse_ratio": blocked / glob, "goal": "sse_ratio <= 1.10" if b == 50_000 else "",
            "peak_rss_mb": rss,
        })
    return rows


def _scale_rows(n: int, parts: int) -> list[dict]:
    import dask.dataframe as dd

    from ppdm.anonymize.microaggregation import MDAV

    cols = [f"a{j}" for j in range(5)]
    rows = []
    with tempfile.TemporaryDirectory() as d:
        src, dst = Path(d) / "x", Path(d) / "z"
        src.mkdir()
        rng = np.random.default_rng(2)
        for i in range(parts):  # written partition by partition: the table is never whole in memory
            m = n // parts + (i < n % parts)
            pd.DataFrame(rng.normal(size=(m, 5)), columns=cols).to_parquet(src / f"part.{i}.parquet")
        first = pd.read_parquet(src / "part.0.parquet")

        def run_dask() -> None:
            t = MDAV(k=K).fit(first)
            t.transform(dd.read_parquet(src)).to_parquet(dst)

        MDAV(k=K).fit_transform(first.iloc[:5000])  # compile outside the timing
        _, secs, rss = measure(run_dask)
        x = dd.read_parquet(src).compute().to_numpy()
        z = dd.read_parquet(dst).compute()[cols].to_numpy()
        dask_sse = _sse_sst(x, z)
        del z
        rows.append({
            "benchmark": f"mdav dask n={n:,} p=5 k={K} ({parts} parquet partitions)", "seconds": secs,
            "goal": "seconds <= 600, peak_rss_mb <= 4096", "sse_sst_pct": dask_sse, "peak_rss_mb": rss,
        })
        df = pd.DataFrame(x, columns=cols)
        del x
        t = MDAV(k=K)
        out, secs, rss = measure(lambda: t.fit_transform(df))
        rows.append({
            "benchmark": f"mdav in memory n={n:,} p=5 k={K} (strategy auto: {t.strategy_})", "seconds": secs,
            "goal": "seconds <= 600, peak_rss_mb <= 4096",
            "sse_sst_pct": _sse_sst(df.to_numpy(), out.to_numpy()), "dask_sse_ratio": dask_sse
            / _sse_sst(df.to_numpy(), out.to_numpy()), "peak_rss_mb": rss,
        })
    return rows


def run(quick: bool) -> list[dict]:
    load = os.getloadavg()[0]
    if quick:
        rows = _global_rows(5_000) + _blocked_rows(5_000, (1_000, 2_500)) + _scale_rows(60_000, 4)
    else:
        rows = (_global_rows(100_000) + _blocked_rows(100_000, (10_000, 20_000, 50_000))
                + _scale_rows(5_000_000, 10))
    for r in rows:
        r["load_avg_at_start"] = round(load, 1)
        print(f"{r['benchmark']}: {r['seconds']:.2f} s, peak {r['peak_rss_mb']:.0f} MB, "
              + ", ".join(f"{k}={v}" for k, v in r.items() if k not in ("benchmark", "seconds", "peak_rss_mb")))
    return rows
