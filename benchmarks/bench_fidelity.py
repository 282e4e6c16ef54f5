"""Distribution fidelity against SDMetrics, and its cost in ``ppdm evaluate``.

**Parity.** ``column_fidelity`` and ``pair_fidelity`` (:mod:`ppdm.metrics.fidelity`) follow
SDMetrics' definitions; this benchmark scores every column and every pair of columns of two
shipped tables, adult (32 561 records, 15 columns, 4 262 blank cells) and credit (690 records,
16 columns, 67 blank cells), both read with ``missing="keep"``, with ppdm and with ``sdmetrics``
(``KSComplement``, ``TVComplement``, ``CorrelationSimilarity`` with Pearson's r,
``ContingencySimilarity`` with the pair's numbers as ``continuous_column_names`` and 10 bins),
and asserts that every score agrees within 1e-9 (a score both leave undefined, a constant column
in a correlation, agrees too). The release is made here: Gaussian noise of a tenth of each
numeric column's standard deviation, 5 % of the category cells redrawn from the column's values
in x, and 2 % of all cells blanked (seed 0), so blanks, ties and every kind of pair occur.

**Environment.** ``sdmetrics`` is never a ppdm dependency: it runs in the benchmark's own virtual
environment, made on first use with ``python -m venv`` and ``pip install sdmetrics==0.32.0``
under ``~/.cache/ppdm/benchmarks/venv-sdmetrics`` (``PPDM_SDMETRICS_VENV`` to put it elsewhere).
When it cannot be made (no package index), the parity rows are skipped with a note.

**Cost.** The CPU seconds of both measures as ``ppdm evaluate`` runs them (one evaluation
context, the columns prepared once for both), best of three, on adult: goal under 0.15 s.

The table is written to ``benchmarks/fidelity_sdmetrics.md``; ``--quick`` runs a 5 000-record
sample of adult and credit and writes nothing.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ppdm.datasets import load

HERE = Path(__file__).resolve().parent
OUT = HERE / "fidelity_sdmetrics.md"
SDMETRICS_VERSION = "0.32.0"
VENV = Path(os.environ.get("PPDM_SDMETRICS_VENV", Path.home() / ".cache" / "ppdm" / "benchmarks" / "venv-sdmetrics"))
TABLES = ("adult", "credit")
TOLERANCE = 1e-9
COST_GOAL = 0.15  # CPU seconds of both measures on adult
BINS = 10


def peer_python() -> Path | None:
    """The virtual environment's python with sdmetrics, made on first use; ``None`` when it cannot be."""
    py = VENV / "bin" / "python"
    check = [str(py), "-c", f"import sdmetrics; assert sdmetrics.__version__ == {SDMETRICS_VERSION!r}"]
    if py.exists() and subprocess.run(check, capture_output=True).returncode == 0:
        return py
    try:
        VENV.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True, capture_output=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", f"sdmetrics=={SDMETRICS_VERSION}"], check=True,
                       capture_output=True, timeout=1800)
    except (subprocess.SubprocessError, OSError) as e:
        print(f"bench_fidelity: could not make the sdmetrics environment in {VENV}: {e}", file=sys.stderr)
        return None
    return py if subprocess.run(check, capture_output=True).returncode == 0 else None


def noisy_release(x: pd.DataFrame, numeric: list[str], seed: int = 0) -> pd.DataFrame:
    """x with Gaussian noise (a tenth of each numeric column's standard deviation), 5 % of the
    category cells redrawn from the column's values in x and 2 % of all cells blanked."""
    rng = np.random.default_rng(seed)
    z = x.copy()
    n = len(z)
    for c in z.columns:
        if c in numeric:
            v = z[c].to_numpy(dtype=float, na_value=np.nan)
            z[c] = v + rng.normal(0.0, 0.1 * np.nanstd(v), n)
        else:
            values = x[c].dropna().to_numpy(dtype=object)
            v = z[c].to_numpy(dtype=object).copy()
            redraw = rng.random(n) < 0.05
            v[redraw] = rng.choice(values, int(redraw.sum()))
            z[c] = v
        blank = rng.random(n) < 0.02
        col = z[c].to_numpy(dtype=object if c not in numeric else float).copy()
        col[blank] = np.nan if c in numeric else None
        z[c] = col
    return z


def read(path: Path, numeric: list[str], categorical: list[str]) -> pd.DataFrame:
    """A table as the peer reads it: numbers as floats, categories as text, only an empty cell blank."""
    dtypes: dict[str, Any] = {**{c: float for c in numeric}, **{c: object for c in categorical}}
    return pd.read_csv(path, dtype=dtypes, keep_default_na=False, na_values=[""])


def ppdm_scores(x: pd.DataFrame, z: pd.DataFrame, numeric: list[str], categorical: list[str]) -> dict[str, Any]:
    from ppdm.metrics.fidelity import FidelityOptions, column_fidelity, pair_fidelity

    col = column_fidelity(x, z, numeric, categorical)
    pairs = pair_fidelity(x, z, numeric, categorical, FidelityOptions(bins=BINS, max_pairs=10**6))
    return {"columns": dict(zip(col.per_column["column"], col.per_column["score"], strict=True)),
            "pairs": {f"{a}|{b}": s for a, b, s in pairs.per_pair[["column_1", "column_2", "score"]].itertuples(
                index=False, name=None)},
            "column": col, "pair": pairs}


def evaluate_cost(x: pd.DataFrame, z: pd.DataFrame, schema: Any, repeats: int = 3) -> float:
    """CPU seconds of column_fidelity and pair_fidelity as ``ppdm evaluate`` runs them, best of ``repeats``."""
    from ppdm.experiments.evaluation import load_all_measures, measurement_context

    measures = load_all_measures()
    # ppdm reads a text column as pandas' text dtype (the peer's object columns are a reading of its own)
    text = {c: "str" for c in x.columns if c not in set(schema.numeric)}
    x, z = x.astype(text), z.astype(text)
    best = math.inf
    for _ in range(repeats):
        ctx = measurement_context(x, z, schema, paired=False)
        start = time.process_time()
        measures["column_fidelity"].fn(ctx)
        measures["pair_fidelity"].fn(ctx)
        best = min(best, time.process_time() - start)
    return best


def _diff(a: dict[str, Any], b: dict[str, Any]) -> tuple[float, list[str]]:
    """The largest |ppdm − sdmetrics| and the names where they disagree (one undefined, or apart)."""
    worst, off = 0.0, []
    for k in sorted(set(a) | set(b)):
        u, v = a.get(k), b.get(k)
        nu = u is None or (isinstance(u, float) and math.isnan(u))
        nv = v is None or (isinstance(v, float) and math.isnan(v))
        if nu and nv:
            continue
        if nu != nv:
            off.append(k)
            continue
        d = abs(float(u) - float(v))  # type: ignore[arg-type]
        worst = max(worst, d)
        if d > TOLERANCE:
            off.append(k)
    return worst, off


def run(quick: bool = False) -> list[dict]:
    py = peer_python()
    rows, lines = [], []
    for name in TABLES:
        x0, schema = load(name, missing="keep")
        if quick and len(x0) > 5000:
            x0 = x0.sample(5000, random_state=0).reset_index(drop=True)
        numeric = [c for c in x0.columns if c in set(schema.numeric)]
        categorical = [c for c in x0.columns if c not in set(numeric)]
        with tempfile.TemporaryDirectory() as d:
            xp, zp, sp = Path(d) / "x.csv", Path(d) / "z.csv", Path(d) / "spec.json"
            x0.to_csv(xp, index=False)
            noisy_release(x0, numeric).to_csv(zp, index=False)
            # both sides read the same files the same way
            x, z = read(xp, numeric, categorical), read(zp, numeric, categorical)
            ours = ppdm_scores(x, z, numeric, categorical)
            cost = evaluate_cost(x, z, schema)
            row: dict[str, Any] = {"benchmark": f"fidelity {name} ({len(x)} records)", "seconds": cost,
                                   "goal": COST_GOAL if name == "adult" else "", "columns": len(ours["columns"]),
                                   "pairs": len(ours["pairs"]),
                                   "worst_column": f"{ours['column'].worst} {ours['column'].value:.4f}",
                                   "worst_pair": f"{ours['pair'].worst} {ours['pair'].value:.4f}"}
            if py is None:
                row["sdmetrics"] = "skipped: no sdmetrics environment"
                rows.append(row)
                continue
            sp.write_text(json.dumps({"x": str(xp), "z": str(zp), "numeric": numeric, "categorical": categorical,
                                      "bins": BINS}))
            done = subprocess.run([str(py), str(HERE / "_sdmetrics_peer.py"), str(sp)], capture_output=True,
                                  text=True, check=True)
            theirs = json.loads(done.stdout.strip().splitlines()[-1])
        dc, off_c = _diff(ours["columns"], theirs["columns"])
        dp, off_p = _diff(ours["pairs"], theirs["pairs"])
        undefined = sum(1 for v in theirs["pairs"].values() if v is None)
        row.update({"max_diff_columns": dc, "max_diff_pairs": dp, "undefined_pairs": undefined,
                    "sdmetrics_seconds": theirs["seconds"]})
        rows.append(row)
        lines.append(f"| {name} | {len(x):,} | {row['columns']} | {row['pairs']} | {dc:.1e} | {dp:.1e} | {undefined} | "
                     f"{row['worst_column']} | {row['worst_pair']} | {cost:.3f} | {theirs['seconds']:.1f} |")
        assert not off_c and not off_p, (f"{name}: ppdm and sdmetrics disagree beyond {TOLERANCE:g} on columns "
                                         f"{off_c[:5]} and pairs {off_p[:5]}")
    if lines and not quick:
        OUT.write_text(
            "# Distribution fidelity: ppdm against SDMetrics\n\n"
            f"Written by `python benchmarks/run.py fidelity` (sdmetrics {SDMETRICS_VERSION} in its own environment). "
            "Every column and every pair of columns of each table, scored by both on the same noisy release "
            "(see the benchmark's docstring); \"largest Δ\" is the largest difference between them, and the benchmark "
            "fails above "
            f"{TOLERANCE:g}. Pairs left undefined by both (a constant column in a correlation) count as agreeing. "
            "ppdm's CPU seconds are both measures as `ppdm evaluate` runs them (best of three); sdmetrics' are "
            "wall seconds of its metrics, pair by pair.\n\n"
            "| table | records | columns | pairs | largest Δ, columns | largest Δ, pairs | undefined pairs | worst column | "
            "worst pair | ppdm CPU s | sdmetrics s |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|\n" + "\n".join(lines) + "\n", encoding="utf-8")
    return rows


if __name__ == "__main__":
    for r in run(quick="--quick" in sys.argv):
        print(r)
