"""Speed and memory of the quadratic risk measures (SERS, DDR) and the column-wise SDC measures.

Goals: SERS exact on adult (30162 × 14) ≤ 10 s with peak RSS ≤ 1 GB; SERS exact on
10⁵ records with peak RSS ≤ 2 GB; DDR on 10⁵ records ≤ 10 s, and ≤ 3 s on the 10⁵ × 13
Gaussian stress cases (the previous default method runs beside them); EDUDS and EDUSC on adult
against a Forest Framework release ≤ 5 s each, through the registered adapters with the
default SysFor forests (rows "+ fits" include fitting those forests, the others time the
measure alone on forests fitted beforehand). Run with
``python benchmarks/run.py measures`` (``--quick`` for a smoke run on small inputs).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchmarks._util import measure


def _perturb_adult(n: int | None, seed: int) -> tuple[pd.DataFrame, pd.DataFrame, list[str], list[str]]:
    """adult's 14 attributes (complete cases), resampled to n rows if asked, and a noisy release."""
    from ppdm.datasets import load

    x, sch = load("adult", missing="drop")
    rng = np.random.default_rng(seed)
    if n is not None and n != len(x):
        x = x.iloc[rng.integers(0, len(x), n)].reset_index(drop=True)
    numeric, categorical = list(sch.numeric), list(sch.categorical)
    x = x[numeric + categorical]
    z = x.copy()
    for c in numeric:
        v = x[c].to_numpy(float)
        z[c] = v + rng.normal(0, 0.1 * v.std(), len(v))
    for c in categorical[:3]:
        z[c] = rng.permutation(z[c].to_numpy())
    return x, z, numeric, categorical


def _row(name: str, n: int, m: int, seconds: float, rss: float, goal_s: float | None, goal_mb: float | None,
         **extra) -> dict:
    misses = []
    if goal_s is not None and seconds > goal_s:
        misses.append(f"time ×{seconds / goal_s:.2f}")
    if goal_mb is not None and rss > goal_mb:
        misses.append(f"memory ×{rss / goal_mb:.2f}")
    goal = " ".join(g for g in (f"≤{goal_s:g} s" if goal_s else "", f"≤{goal_mb:g} MB" if goal_mb else "") if g)
    return {"benchmark": name, "n": n, "m": m, "seconds": seconds, "peak_rss_mb": rss, "goal": goal or "-",
            "meets": "yes" if not misses else "no (" + ", ".join(misses) + ")", **extra}


def run(quick: bool = False) -> list[dict]:
    from ppdm.metrics.info_loss import il1s, sse_sst
    from ppdm.metrics.risk import ddr, idr, sers

    rows: list[dict] = []
    # compile the Numba kernels outside the timings
    x0, z0, num0, cat0 = _perturb_adult(200, 0)
    sers(x0, z0, num0, cat0)
    ddr(x0[num0], z0[num0], method="brute")
    ddr(x0[num0], z0[num0], method="tree")
    ddr(x0[num0], z0[num0], method="blas")

    n_adult = 3000 if quick else None
    x, z, num, cat = _perturb_adult(n_adult, 1)
    res, sec, rss = measure(lambda: sers(x, z, num, cat))
    rows.append(_row("sers exact, adult", len(x), len(num) + len(cat), sec, rss, 10.0, 1024.0,
                     value=round(res.value, 4)))

    n_big = 10_000 if quick else 100_000
    xb, zb, num, cat = _perturb_adult(n_big, 2)
    res, sec, rss = measure(lambda: sers(xb, zb, num, cat))
    rows.append(_row("sers exact, resampled adult", n_big, len(num) + len(cat), sec, rss, None, 2048.0,
                     value=round(res.value, 4)))
    res, sec, rss = measure(lambda: sers(xb, zb, num, cat, sample=2000, random_state=0))
    rows.append(_row("sers sample=2000 (95% CI)", n_big, len(num) + len(cat), sec, rss, None, None,
                     value=f"{res.value:.4f} [{res.ci_low:.4f}, {res.ci_high:.4f}]"))

    rng = np.random.default_rng(3)
    res, sec, rss = measure(lambda: ddr(xb[num], zb[num]))
    rows.append(_row(f"ddr ({res.method}), resampled adult numeric + noise", n_big, len(num), sec, rss, 10.0, None,
                     value=round(res.value, 4)))
    # stress cases: 13 independent dimensions (no structure for a kd-tree to exploit); the
    # method that was the default before the own-ball tree search runs beside it for a ratio
    for sd, before in ((0.25, "kdtree"), (1.0, "blas")):
        xs = rng.normal(size=(n_big, 13))
        zs = xs + rng.normal(0, sd, size=xs.shape)
        res, sec, rss = measure(lambda xs=xs, zs=zs: ddr(xs, zs))
        rows.append(_row(f"ddr ({res.method}), 13-d gaussian + noise sd {sd}", n_big, 13, sec, rss, 3.0, None,
                         value=round(res.value, 4)))
        if not quick:
            ref, sec_ref, rss_ref = measure(lambda xs=xs, zs=zs, m=before: ddr(xs, zs, method=m))
            rows.append(_row(f"ddr ({before}, the previous default), same data", n_big, 13, sec_ref, rss_ref, None,
                             None, value=round(ref.value, 4), ratio=round(sec_ref / sec, 2)))

    n_col = 100_000 if quick else 1_000_000
    xc = pd.DataFrame(rng.normal(size=(n_col, 10)), columns=[f"v{j}" for j in range(10)])
    zc = xc + rng.normal(0, 0.1, size=xc.shape)
    _, sec, rss = measure(lambda: (il1s(xc, zc), sse_sst(xc, zc), idr(xc, zc)))
    rows.append(_row("il1s + sse_sst + idr", n_col, 10, sec, rss, None, None))
    rows.extend(_structure_rows(quick))
    return rows


def _structure_rows(quick: bool) -> list[dict]:
    """EDUDS and EDUSC (paper 004 §4–§5) on adult and its Forest Framework release."""
    from ppdm.anonymize import ForestFramework
    from ppdm.datasets import load
    from ppdm.experiments.evaluation import resolve_measures
    from ppdm.metrics.base import EvaluationContext
    from ppdm.metrics.structure import _ctx_forest

    x, sch = load("adult", missing="drop")
    if quick:
        x = x.iloc[:3000].reset_index(drop=True)
    z = ForestFramework(class_column=sch.class_column, random_state=1).fit_transform(x)
    specs = {s.name: s for s in resolve_measures("eduds,edusc")}
    m = len(sch.attributes)
    # compile the Numba kernels outside the timings
    small = EvaluationContext(x=x.iloc[:300], z=z.iloc[:300], schema=sch)
    specs["edusc"].fn(small)
    rows = []
    for name in ("eduds", "edusc"):
        ctx = EvaluationContext(x=x, z=z, schema=sch)
        res, sec, rss = measure(lambda ctx=ctx, name=name: specs[name].fn(ctx))
        rows.append(_row(f"{name} + fits of the default (paper 004) SysFor forest(s), adult vs Forest Framework", len(x), m,
                         sec, rss, 5.0, None, value=round(res.value, 6)))
        ctx = EvaluationContext(x=x, z=z, schema=sch)
        _ctx_forest(ctx, "x", None)
        if name == "eduds":
            _ctx_forest(ctx, "z", None)
        res, sec, rss = measure(lambda ctx=ctx, name=name: specs[name].fn(ctx))
        rows.append(_row(f"{name}, forests fitted beforehand, adult vs Forest Framework", len(x), m, sec, rss,
                         5.0, None, value=round(res.value, 6)))
    return rows
