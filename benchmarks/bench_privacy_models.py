"""The privacy models of ``ppdm.metrics.privacy_models`` against pyCANON, on two shipped tables.

**Tables.** adult (complete cases; quasi-identifiers age, education, marital-status, race, sex,
native-country, as issue #31's comparison with ANJANA) with age recoded into 5 intervals and
the keys locally suppressed to 5-anonymity by ppdm (``recode``, then ``local-suppression``,
sdcMicro's rule); sensitive: income (categorical) and hours-per-week (numeric, ordered
t-closeness). cmc (wife's age recoded into 5 intervals, wife's and husband's education, wife's
religion and work, locally suppressed to 3-anonymity); sensitive: contraceptive method and
number of children. A suppressed key cell is written ``*`` for both tools, as ARX writes it:
pyCANON would otherwise drop the record (pandas' ``groupby``), where ppdm keeps a blank as a
value of its own — with ``*`` both see the same classes.

**Peer.** pyCANON (:data:`PYCANON`) runs in its own virtual environment, never ppdm's: the
benchmark makes it on first use (``python -m venv`` and ``pip install``) at
``PPDM_PYCANON_VENV`` (default ``~/.cache/ppdm/venvs/pycanon-<version>``); its rows are skipped
with a note when it cannot be made. ``_pycanon_peer.py`` computes its values.

**Agreement.** Checked to 1e-9: t-closeness (equal distance on income and contraceptive
method, ordered on number of children; adult's hours per week is left to ppdm alone, as
pyCANON's per-class loops over its 94 values take tens of minutes), basic β, δ, the α of (α,k),
k, distinct l, and pyCANON's integer entropy l = ⌊ppdm's min exp(H)⌋. Different by design
(docs/measures.md), and checked against pyCANON's own formula: its enhanced β is
min(β_basic, −ln p_min), and its recursive c comes from counts in increasing order (ppdm's c
needed is shown beside it). **Speed:** every ppdm model on adult well under 0.2 s (goal, per
model and sensitive attribute; ``seconds`` is the slowest model's wall time, ``slowest_cpu_s``
its CPU time).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ppdm.anonymize import make_technique
from ppdm.data import Schema
from ppdm.datasets import load
from ppdm.metrics import (
    alpha_k_anonymity,
    basic_beta_likeness,
    delta_disclosure,
    enhanced_beta_likeness,
    k_anonymity,
    l_diversity,
    recursive_cl_diversity,
    t_closeness,
)

HERE = Path(__file__).resolve().parent
PYCANON = "1.3.6"
VENV = Path(os.environ.get("PPDM_PYCANON_VENV", Path.home() / ".cache" / "ppdm" / "venvs" / f"pycanon-{PYCANON}"))
#: seconds a ppdm model may take on adult, per sensitive attribute
GOAL_SECONDS = 0.2
TOL = 1e-9


def peer_python() -> tuple[Path | None, str]:
    """pyCANON's interpreter, making its virtual environment on first use; (None, why) when it cannot."""
    from benchmarks._util import peer_venv

    return peer_venv(VENV, f"pycanon=={PYCANON}", "pyCANON", timeout=1800)


def _as_category(schema: Schema, column: str) -> Schema:
    """The schema with a recoded numeric column read as a category (its values are intervals now)."""
    return replace(schema, numeric=[c for c in schema.numeric if c != column],
                   integer=[c for c in schema.integer if c != column],
                   categorical=[*schema.categorical, column],
                   bounds={k: v for k, v in schema.bounds.items() if k != column})


def release(name: str, quick: bool) -> tuple[pd.DataFrame, pd.DataFrame, list[str], list[str], int]:
    """A shipped table recoded and locally suppressed by ppdm: the release with its blanks, and
    the same with the suppressed key cells written '*'."""
    if name == "adult":
        x, sch = load("adult", missing="drop")
        if quick:
            x = x.sample(1000, random_state=0).reset_index(drop=True)
        age, keys, sens, k = "age", ["age", "education", "marital_status", "race", "sex", "native_country"], \
            ["income", "hours_per_week"], 5
    else:
        x, sch = load("cmc")
        age, keys, sens, k = "wife_age", ["wife_age", "wife_education", "husband_education", "wife_religion",
                                          "wife_working"], ["contraceptive_method", "number_of_children"], 3
    z = make_technique("recode", params={"columns": [age], "breaks": 5}, schema=sch).fit_transform(x)
    sch = _as_category(sch, age)
    z = make_technique("local-suppression", params={"keys": keys, "k": k}, schema=sch).fit_transform(z)
    z = z[keys + sens].reset_index(drop=True)
    starred = z.copy()
    for c in keys:
        starred[c] = z[c].astype(object).where(z[c].notna(), "*").astype(str)
    return z, starred, keys, sens, k


def l_diverse(z: pd.DataFrame, keys: list[str], s: str) -> pd.DataFrame:
    """The records of ``z`` in classes with at least two distinct values of ``s`` (as pyCANON's
    ``_achieve_l_diversity`` suppresses), so that recursive (c,2)-diversity has a finite c."""
    distinct = z.groupby(keys, dropna=False)[s].transform("nunique")
    return z[distinct >= 2].reset_index(drop=True)


def pycanon_c(z: pd.DataFrame, keys: list[str], s: str, l: int) -> float:  # noqa: E741
    """pyCANON's recursive c, from its formula: per class the counts in increasing order r,
    ⌊r[0] / (r[l−1] + … )⌋ + 1, the largest over the classes (docs/measures.md: r[0] is the
    rarest value's count, not the most frequent's)."""
    worst = 0.0
    for _, counts in z.groupby(keys, dropna=False)[s].value_counts().groupby(level=list(range(len(keys)))):
        r = np.sort(counts.to_numpy())
        worst = max(worst, float(np.floor(r[0] / r[l - 1:].sum() + 1)))
    return worst


def ppdm_values(z: pd.DataFrame, keys: list[str], s: str) -> dict[str, Any]:
    """Every model of one sensitive attribute, with the seconds each took."""
    out: dict[str, Any] = {}

    def timed(label: str, fn: Any) -> Any:
        start, cpu = time.perf_counter(), time.process_time()
        r = fn()
        out[label + "_s"] = time.perf_counter() - start
        out[label + "_cpu"] = time.process_time() - cpu  # steadier than wall time on a shared machine
        return r

    out["t"] = timed("t", lambda: t_closeness(z, keys, [s])).value
    ak = timed("alpha_k", lambda: alpha_k_anonymity(z, keys, [s], k=1))
    out["alpha"], out["k_exact"] = ak.achieved_alpha, int(ak.per_class["fk"].min())
    out["basic_beta"] = timed("basic_beta", lambda: basic_beta_likeness(z, keys, [s])).value
    eb = timed("enhanced_beta", lambda: enhanced_beta_likeness(z, keys, [s]))
    out["enhanced_value"], out["beta_needed"] = eb.value, eb.beta_needed
    out["delta"] = timed("delta", lambda: delta_disclosure(z, keys, [s])).value
    ld = l_diversity(z, keys, [s])
    out["l"] = int(ld.per_sensitive["min_distinct_l"].iloc[0])
    out["entropy_l"] = float(ld.per_sensitive["min_entropy_l"].iloc[0])
    cl = timed("c_l", lambda: recursive_cl_diversity(z, keys, [s], l=max(out["l"], 1)))
    out["c_needed"] = cl.c_needed
    known = z[s].dropna()
    out["p_min"] = float(known.value_counts(normalize=True).min())
    return out


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=TOL, abs_tol=TOL)


def run(quick: bool = False) -> list[dict]:
    py, why = peer_python()
    rows: list[dict] = []
    for name in ("adult", "cmc"):
        blanks, starred, keys, sens, k = release(name, quick)
        ka = k_anonymity(blanks, keys, k)  # 5- (3-) anonymous: a blank key matches any value
        # the tables both tools read: the release, and the classes with two sensitive values or more
        tables = {"": starred, " l>=2": l_diverse(starred, keys, sens[0])}
        for label, z in tables.items():
            rows.extend(_compare(f"{name}{label}", z, keys, sens if not label else sens[:1], py, why, ka.achieved_k,
                                 # pyCANON's per-class loops over adult's 94 hours take tens of minutes
                                 peer_sensitive=sens if name != "adult" else sens[:1]))
    return rows


def _compare(name: str, z: pd.DataFrame, keys: list[str], sens: list[str], py: Path | None, why: str, k_ppdm: int,
             peer_sensitive: list[str]) -> list[dict]:
    """One row per sensitive attribute: ppdm's values and times, and pyCANON's where it ran."""
    rows: list[dict] = []
    peer = None
    peer_s = math.nan
    peer_sensitive = [s for s in sens if s in peer_sensitive]
    if py is not None and peer_sensitive:
        with tempfile.TemporaryDirectory() as tmp:
            table = Path(tmp) / "z.csv"
            z.to_csv(table, index=False)
            spec = Path(tmp) / "spec.json"
            spec.write_text(json.dumps({"table": str(table), "qi": keys, "sensitive": peer_sensitive, "text": keys}))
            start = time.perf_counter()
            proc = subprocess.run([str(py), str(HERE / "_pycanon_peer.py"), str(spec)], capture_output=True,
                                  text=True, timeout=7200)
            peer_s = time.perf_counter() - start
        if proc.returncode == 0:
            peer = json.loads(proc.stdout.strip().splitlines()[-1])
        else:
            err = proc.stderr.strip().splitlines()
            why = f"pyCANON failed: {err[-1] if err else proc.returncode}"
    for s in sens:
        mine = ppdm_values(z, keys, s)
        times = [v for key, v in mine.items() if key.endswith("_s")]
        # the goal is per model: the slowest of them is the benchmark's seconds
        row: dict[str, Any] = {"benchmark": f"privacy_models {name} / {s}", "seconds": max(times),
                               "goal": GOAL_SECONDS, "slowest_cpu_s": max(v for key, v in mine.items()
                                                                          if key.endswith("_cpu")),
                               "all_models_s": sum(times), "records": len(z),
                               "k_release": k_ppdm, "k_classes": mine["k_exact"], "t": mine["t"],
                               "basic_beta": mine["basic_beta"], "delta": mine["delta"], "alpha": mine["alpha"],
                               "enhanced_value": mine["enhanced_value"], "l": mine["l"], "c_needed": mine["c_needed"]}
        if peer is None or s not in peer["by_sensitive"]:
            row["pycanon"] = why or ("not run: its per-class loops over this attribute's values take tens of "
                                     "minutes on the whole of adult" if py is not None else "not run")
            rows.append(row)
            continue
        theirs = peer["by_sensitive"][s]
        agree = {
            "t": _close(mine["t"], theirs["t"]),
            "basic_beta": _close(mine["basic_beta"], theirs["basic_beta"]),
            "delta": _close(mine["delta"], theirs["delta"]),
            "alpha": _close(mine["alpha"], theirs["alpha_k"][0]),
            "k": mine["k_exact"] == int(theirs["alpha_k"][1]) == int(peer["k"]),
            "l": mine["l"] == int(theirs["l"]),
            "entropy_l": int(np.floor(mine["entropy_l"] + 1e-12)) == int(theirs["entropy_l"]),
            # pyCANON's enhanced β is max_i min(β_basic, −ln p_i) = min(β_basic, −ln p_min)
            "enhanced_as_pycanon": _close(min(mine["basic_beta"], -math.log(mine["p_min"])),
                                          theirs["enhanced_beta"]),
        }
        if mine["l"] >= 2:  # a finite c on both sides: pyCANON's is its own formula's (ascending counts)
            agree["c_as_pycanon"] = _close(pycanon_c(z, keys, s, mine["l"]), theirs["c_l"][0])
        row.update({"pycanon": peer["version"], "agree": all(agree.values()),
                    "disagree": ",".join(n for n, ok in agree.items() if not ok) or "-",
                    "pycanon_enhanced": theirs["enhanced_beta"], "pycanon_c": theirs["c_l"][0],
                    "pycanon_l": theirs["c_l"][1],
                    "pycanon_s": sum(v for key, v in theirs.items() if key.endswith("_s")),
                    "pycanon_process_s": peer_s})
        rows.append(row)
    return rows


if __name__ == "__main__":
    for r in run(quick="--quick" in sys.argv):
        print(json.dumps(r, default=str))
