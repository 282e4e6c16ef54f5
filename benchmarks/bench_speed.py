"""Speed where people wait, each row beside its reference, in one run:
``python benchmarks/run.py speed`` (``--quick``: small inputs).

* ``sers, adult``: SERS exact on adult (30,162 × 14, numeric noise and three permuted
  categorical attributes); goal ≤ 1.5 s.
* ``forest-framework transform``: 10⁶ × 14 (10 numeric, 4 categorical and a class), the
  forest fitted before the timing; goal ≤ 3 s.
* ``suda2``: 10⁶ records on 6 of adult's key variables, each drawn from its marginal
  distribution (so many combinations are unique), all MSU sizes and DIS-SUDA; goal ≤ 3 s.
* ``typed read``: :func:`ppdm.data.io.read_table` of a 10⁶-row mixed CSV (whole numbers with
  holes, codes with leading zeros, dates, booleans, text) beside a plain ``pandas.read_csv``
  of the same file, measured alternately; goal ≤ 1.5× the plain read.
* ``ppdm evaluate``: the default measures on adult's Forest Framework release (README's
  example, control set held out), the command run end to end in a fresh interpreter; beside
  it the same interpreter only importing what evaluate imports (the floor: pandas,
  scikit-learn, which loads scipy.stats, Numba and ppdm's measures). A first run writes the
  bytecode and Numba caches, as an installed package has them. Goal ≤ 5 s. The goal was set
  on a machine that ran SERS in 1.36 s of CPU, so the same run also measures the code that
  set it (commit ``62cb349``, 4.93 s there), alternately with today's, and carries the goal
  to this machine: ≤ that code's time here × 5 / 4.93 (a stored time is never compared).

Every row gives the wall time (``seconds``) **and** the CPU time (``cpu_s``: this process's
``process_time``, all threads; the child's ``getrusage`` for the command). On a shared
machine the wall time grows with the other processes' load, so the seconds goals are judged
on the CPU time (``judged``), which on a quiet machine is what the wall time of these
single-threaded computations comes to; the read ratio is judged on the wall times of the two
reads measured alternately under the same load (pandas' reader uses several threads, so its
CPU time exceeds its wall time on an idle machine). Numba kernels are compiled before the
timings; each in-process time is the best of ``repeats`` runs. ``before`` is the time of
the previous implementation recorded on a quiet 2-core machine, for orientation; ``load1``
is the machine's one-minute load average when the table was printed (with a load well above
the number of cores even the CPU times grow, through shared caches and memory bandwidth).
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchmarks._util import measure_cpu

ROOT = Path(__file__).resolve().parent.parent


def _best(fn: Callable[[], Any], repeats: int) -> tuple[Any, float, float, float]:
    best = None
    for _ in range(repeats):
        got = measure_cpu(fn)
        if best is None or got[2] < best[2]:
            best = got
    assert best is not None
    return best


def _row(name: str, wall: float, cpu: float, rss: float, goal_s: float | None, **extra: object) -> dict:
    meets = "-" if goal_s is None else ("yes" if cpu <= goal_s else f"no (cpu ×{cpu / goal_s:.2f})")
    return {"benchmark": name, "seconds": wall, "cpu_s": cpu, "peak_rss_mb": rss,
            "goal": f"≤{goal_s:g} s" if goal_s is not None else "-", "judged": "cpu_s" if goal_s else "-",
            "meets": meets, **extra}


def _sers_row(quick: bool, repeats: int) -> dict:
    from benchmarks.bench_measures import _perturb_adult
    from ppdm.metrics.risk import sers

    x0, z0, num0, cat0 = _perturb_adult(200, 0)
    sers(x0, z0, num0, cat0)
    x, z, num, cat = _perturb_adult(3000 if quick else None, 1)
    res, wall, cpu, rss = _best(lambda: sers(x, z, num, cat), repeats)
    return _row(f"sers exact, adult {len(x):,}×{len(num) + len(cat)}", wall, cpu, rss, None if quick else 1.5,
                before="2.9 s", value=round(res.value, 6))


def _forest_row(quick: bool, repeats: int) -> dict:
    from benchmarks.bench_forest_framework import _forest, synthetic
    from ppdm.anonymize.forest_framework import ForestFramework

    n = 20_000 if quick else 1_000_000
    big = synthetic(n)
    fit_on = big.iloc[:50_000]
    forest, learner = _forest(min_leaf=200)
    forest.fit(fit_on.drop(columns="y"), fit_on["y"])
    ff = ForestFramework(class_column="y", forest=forest, random_state=0).fit(big)
    ff.transform(big.iloc[:2000])
    _, wall, cpu, rss = _best(lambda: ff.transform(big), repeats)
    return _row(f"forest-framework transform {n:,}×14", wall, cpu, rss, None if quick else 3.0,
                before="5.2 s", learner=learner, intersections=ff.report_.n_intersections)


def _suda_table(n: int, keys: list[str], seed: int = 0) -> pd.DataFrame:
    """n records whose keys are drawn independently from adult's marginals: combinations seen
    once abound (a resample of adult's records would repeat every one and have none)."""
    from ppdm.datasets import load

    adult, _ = load("adult", missing="drop")
    rng = np.random.default_rng(seed)
    cols = {}
    for c in keys:
        vc = adult[c].value_counts(normalize=True)
        cols[c] = rng.choice(vc.index.to_numpy(), size=n, p=vc.to_numpy())
    return pd.DataFrame(cols)


def _suda_row(quick: bool, repeats: int) -> dict:
    from benchmarks.bench_risk import KEYS
    from ppdm.metrics.suda import suda2

    n = 50_000 if quick else 1_000_000
    big = _suda_table(n, KEYS)
    suda2(big.iloc[:500], KEYS)
    res, wall, cpu, rss = _best(lambda: suda2(big, KEYS), repeats)
    return _row(f"suda2 {n:,} records × {len(KEYS)} keys (+ DIS-SUDA)", wall, cpu, rss, None if quick else 3.0,
                before="6.5-16.5 s", value=round(res.value, 6),
                records_with_msus=res.special_uniques, msus_by_size=res.msu_counts)


def _read_rows(quick: bool, tmp: Path) -> list[dict]:
    from benchmarks.bench_out_of_core import _table
    from ppdm.data.io import read_table

    n = 50_000 if quick else 1_000_000
    src = tmp / "mixed.csv"
    _table(n).to_csv(src, index=False)
    read_table(src, nrows=1000)
    plain: list[tuple[float, float]] = []
    typed: list[tuple[float, float, float]] = []
    for _ in range(3):  # alternately, so both see the same load
        _, w, c, _ = measure_cpu(lambda: pd.read_csv(src))
        plain.append((w, c))
        t, w, c, rss = measure_cpu(lambda: read_table(src))
        typed.append((w, c, rss))
    assert t["zip"].str.startswith("0").any() and str(t["member"].dtype) == "boolean"
    pw, pc = min(plain)
    tw, tc, rss = min(typed)
    ratio = tw / pw
    return [
        {"benchmark": f"pandas.read_csv (reference), {n:,} rows", "seconds": pw, "cpu_s": pc, "goal": "-",
         "judged": "-", "meets": "-", "csv_mb": round(src.stat().st_size / 2**20, 1)},
        {"benchmark": f"typed read_table, {n:,} rows (codes, dates, booleans, Int64)", "seconds": tw, "cpu_s": tc,
         "peak_rss_mb": rss, "goal": "≤1.5× the reference", "judged": "wall ratio",
         "meets": "yes" if ratio <= 1.5 else f"no (×{ratio / 1.5:.2f})", "ratio": round(ratio, 2),
         "cpu_ratio": round(tc / pc, 2), "before": "1.2–1.7×"},
    ]


def _child(args: list[str], cwd: Path, *, write_bytecode: bool = False, root: Path = ROOT) -> tuple[float, float]:
    """Wall and CPU seconds of a fresh interpreter running ``args`` with the package at ``root``."""
    env = {**os.environ, "PYTHONPATH": str(root) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    if write_bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, *args], env=env, cwd=cwd, capture_output=True, check=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


#: the commit whose ``ppdm evaluate`` set the 5 s goal (4.93 s of CPU on the idle machine of
#: docs/scale.md, which ran SERS in 1.36 s), and that time
GOAL_COMMIT, GOAL_COMMIT_CPU = "62cb349", 4.93


def _reference_tree(tmp: Path) -> tuple[Path | None, str]:
    """The package as it was at :data:`GOAL_COMMIT`, extracted under ``tmp``; ``None`` and the
    reason when this checkout cannot give it (no git, a shallow clone)."""
    dest = tmp / "reference"
    dest.mkdir()
    try:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", GOAL_COMMIT, "ppdm"], capture_output=True,
                                 check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError) as e:
        return None, f"commit {GOAL_COMMIT} not available here ({type(e).__name__})"
    return dest, ""


def _evaluate_rows(quick: bool, tmp: Path, repeats: int) -> list[dict]:
    data = "builtin:adult"
    common = ["--class", "income", "--missing", "drop", "--seed", "0"]
    experiment = ["--experiment-seed"]  # a benchmark is an experiment: its small seed is no secret
    if quick:
        from ppdm.datasets import load

        small, _ = load("adult", missing="drop")
        small.iloc[:3000].to_csv(tmp / "adult_small.csv", index=False)
        data = str(tmp / "adult_small.csv")
    anonymize = ["-m", "ppdm.cli", "anonymize", data, "--method", "forest-framework", "--holdout", "0.5",
                 "--out", "z.csv", *common]
    cmd = ["-m", "ppdm.cli", "evaluate", "--original", data, "--anonymized", "z.csv", *common]
    floor = ["-c", "import ppdm.cli.app, ppdm.experiments.evaluation as e, ppdm.metrics.model, "
                   "ppdm.metrics.linkage, ppdm.attacks.singling_out, ppdm.metrics.keyvar; e.load_all_measures()"]
    # each version evaluates its own release (the private log's format changed between them)
    here = tmp / "current"
    here.mkdir()
    _child([*anonymize, *experiment], here)
    ref_root, why_not = (None, "quick run") if quick else _reference_tree(tmp)
    there = tmp / "goal-commit"
    if ref_root is not None:
        there.mkdir()
        _child(anonymize, there, root=ref_root)  # that version had no --experiment-seed
    # Numba kernels and bytecode cached, as an installed package has them from its second run
    # (compiling a module's source is not part of evaluating)
    _child(cmd, here, write_bytecode=True)
    if ref_root is not None:
        _child(cmd, there, write_bytecode=True, root=ref_root)
    runs, refs = [], []
    for _ in range(repeats):  # alternated, so both see the same load
        runs.append(_child(cmd, here))
        if ref_root is not None:
            refs.append(_child(cmd, there, root=ref_root))
    floors = sorted((_child(floor, here) for _ in range(repeats)), key=lambda wc: wc[1])
    (w, c), (fw, fc) = min(runs, key=lambda wc: wc[1]), floors[0]
    rows = [
        {"benchmark": "python: importing what evaluate imports (reference floor)", "seconds": fw, "cpu_s": fc,
         "goal": "-", "judged": "-", "meets": "-"},
        _row("ppdm evaluate adult (default measures, end to end)", w, c, float("nan"), None if quick else 5.0,
             release="forest-framework, control set 50 %"),
    ]
    if ref_root is None:
        rows.append({"benchmark": f"ppdm evaluate adult at {GOAL_COMMIT} (the code that set the 5 s goal)",
                     "seconds": float("nan"), "cpu_s": float("nan"), "goal": "-", "judged": "-",
                     "meets": f"not measured: {why_not}"})
        return rows
    rw, rc = min(refs, key=lambda wc: wc[1])
    # the goal carried to this machine: what the goal's code takes here, scaled by 5 / 4.93
    carried = rc * 5.0 / GOAL_COMMIT_CPU
    rows.append({"benchmark": f"ppdm evaluate adult at {GOAL_COMMIT} (the code that set the 5 s goal, "
                              f"{GOAL_COMMIT_CPU} s CPU where it was set)", "seconds": rw, "cpu_s": rc,
                 "goal": "-", "judged": "-", "meets": "-"})
    rows.append({"benchmark": "ppdm evaluate adult, the 5 s goal carried to this machine",
                 "seconds": w, "cpu_s": c, "goal": f"≤{carried:.2f} s", "judged": "cpu_s",
                 "meets": "yes" if c <= carried else f"no (cpu ×{c / carried:.2f})",
                 "ratio_to_goal_commit": round(c / rc, 3)})
    return rows


def run(quick: bool = False) -> list[dict]:
    repeats = 1 if quick else 3
    rows = [_sers_row(quick, repeats), _forest_row(quick, repeats), _suda_row(quick, repeats)]
    with tempfile.TemporaryDirectory(prefix="ppdm-speed-") as d:
        tmp = Path(d)
        rows += _read_rows(quick, tmp)
        rows += _evaluate_rows(quick, tmp, repeats)
    load = os.getloadavg()[0]
    for r in rows:
        r["load1"] = round(load, 1)  # the machine's load when the table was made (2 cores: > 2 is loaded)
        r.setdefault("peak_rss_mb", float("nan"))
        if isinstance(r.get("peak_rss_mb"), float) and np.isnan(r["peak_rss_mb"]):
            r["peak_rss_mb"] = "-"
    return rows
