"""ppdm's ``generalize`` against ANJANA on adult: the same keys, hierarchies, targets and limit.

**Setting** (issue #31). adult's complete records (30 162), quasi-identifiers age, education,
marital status, race, sex and native country, sensitive attribute income, at most 5 % of the
records suppressed; k = 5 and k = 10, each alone, with distinct l-diversity l = 2 and with
t-closeness t = 0.2 on income.

**The same lattice.** ANJANA's hierarchies are made from ppdm's (:class:`Generalize`'s
``level_specs_``, read through :class:`Recode` as the release itself is): for every key and
every level, the label each observed value gets. age climbs as in x, intervals of width 5, 10
and 50 and one interval (stopped at the schema's bounds of age); the categories, which adult's
schema gives no hierarchy, are kept or become ``*``. Both tools search these 6 × 2⁵ = 192
level vectors: ppdm exactly (the lattice's least ARX loss), ANJANA greedily (it coarsens the key
with the most distinct values until the target holds within the limit).

**Judged alike.** Every release is read back onto x's rows (ANJANA deletes the records it
suppresses; they come back as rows of blanks, as ppdm publishes them) and judged by the same
code: records suppressed (every key blank), key cells lost (blank, or a label standing for
every value of its key), ARX's loss and discernibility (:func:`release_loss`, the losses ppdm
minimises, worked out from the labels alone), and the accuracy of one learner (one-hot keys,
logistic regression) fitted on the release's labels of a fixed 70 % of the records and scored
on the other 30 %. Times are measured in the same run, ppdm's in this process, ANJANA's around
its call inside its own process. Each ppdm release is then checked by pyCANON (its own
environment, :func:`benchmarks.bench_privacy_models.peer_python`), suppressed key cells
written ``*`` as for ARX: k (the ``*`` class counted), distinct l and t on income.

**Peer.** ANJANA (:data:`ANJANA`) runs in its own virtual environment, made on first use at
``PPDM_ANJANA_VENV`` (default ``~/.cache/ppdm/venvs/anjana-<version>``); ``_anjana_peer.py``
runs it. ``python benchmarks/run.py anjana`` writes the table to ``benchmarks/anjana_adult.md``;
``--quick`` runs a 3 000-record sample and writes nothing.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ppdm.anonymize.generalization_search import Generalize, release_loss
from ppdm.anonymize.recoding import Recode
from ppdm.data import Schema
from ppdm.datasets import load

HERE = Path(__file__).resolve().parent
OUT = HERE / "anjana_adult.md"
ANJANA = "1.2.3"
VENV = Path(os.environ.get("PPDM_ANJANA_VENV", Path.home() / ".cache" / "ppdm" / "venvs" / f"anjana-{ANJANA}"))
KEYS = ["age", "education", "marital_status", "race", "sex", "native_country"]
SENSITIVE = "income"
LIMIT = 0.05
#: the losses ppdm is asked to minimise, one release each (ANJANA has no such choice)
LOSSES = ("arx", "discernibility")
#: (k, l, t) of each row
TARGETS = [(5, None, None), (5, 2, None), (5, None, 0.2), (10, None, None), (10, 2, None), (10, None, 0.2)]


def peer_python() -> tuple[Path | None, str]:
    """ANJANA's interpreter, making its virtual environment on first use; (None, why) when it cannot."""
    from benchmarks._util import peer_venv

    return peer_venv(VENV, f"anjana=={ANJANA}", "ANJANA", timeout=3600)


def table(quick: bool) -> tuple[pd.DataFrame, Schema]:
    x, schema = load("adult", missing="drop")
    if quick:
        x = x.sample(3000, random_state=0)
    return x.reset_index(drop=True), schema


def hierarchies(x: pd.DataFrame, schema: Schema) -> dict[str, list[list[str]]]:
    """ppdm's hierarchy of every key as ANJANA takes it: per level, the label of each observed
    value (row i of every level the same value), labels as text."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted = Generalize(schema=schema, keys=KEYS, k=1).fit(x)
    out: dict[str, list[list[str]]] = {}
    for c in KEYS:
        values = pd.unique(x[c].dropna())
        levels = [[str(v) for v in values]]
        for spec in fitted.level_specs_.get(c, [None])[1:]:
            what, v = spec
            rec = Recode(schema=fitted.search_schema_, columns=[c], **{what: {c: v}})
            labels = rec.fit_transform(x)[c].astype(str)
            first = pd.Series(labels.to_numpy(), index=x[c].to_numpy()).groupby(level=0).first()
            levels.append([str(first[v]) for v in values])
        out[c] = levels
    return out


def ppdm_release(x: pd.DataFrame, schema: Schema, k: int, l: int | None, t: float | None,  # noqa: E741
                 loss: str = "arx") -> tuple[pd.DataFrame, float, float, Generalize]:
    tech = Generalize(schema=schema, keys=KEYS, k=k, l=l, t=t, suppression_limit=LIMIT, loss=loss,
                      sensitive=[SENSITIVE] if (l is not None or t is not None) else None)
    start, cpu = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        z = tech.fit_transform(x)
    return z[KEYS].astype(object), time.perf_counter() - start, time.process_time() - cpu, tech


def anjana_releases(x: pd.DataFrame, hier: dict[str, list[list[str]]], py: Path, tmp: Path
                    ) -> tuple[dict[str, pd.DataFrame | None], dict[str, Any], str]:
    """ANJANA's release of every target, read back onto x's rows (deleted records blank)."""
    src = tmp / "x.csv"
    x[KEYS + [SENSITIVE]].astype(str).assign(_row=np.arange(len(x))).to_csv(src, index=False)
    jobs = [{"name": _name(k, l, t), "k": k, "l": l, "t": t} for k, l, t in TARGETS]  # noqa: E741
    spec = tmp / "anjana.json"
    spec.write_text(json.dumps({"table": str(src), "qi": KEYS, "sensitive": SENSITIVE, "hierarchies": hier,
                                "supp_level": LIMIT * 100, "jobs": jobs, "out": str(tmp)}))
    proc = subprocess.run([str(py), str(HERE / "_anjana_peer.py"), str(spec)], capture_output=True, text=True,
                          timeout=7200)
    if proc.returncode != 0:
        err = proc.stderr.strip().splitlines()
        return {}, {}, f"ANJANA failed: {err[-1] if err else proc.returncode}"
    peer = json.loads(proc.stdout.strip().splitlines()[-1])
    out: dict[str, pd.DataFrame | None] = {}
    for name, job in peer["jobs"].items():
        if not job["released"]:
            out[name] = None
            continue
        z = pd.read_csv(job["path"], dtype=str, keep_default_na=False)
        back = pd.DataFrame(np.nan, index=pd.RangeIndex(len(x)), columns=KEYS, dtype=object)
        back.loc[z["_row"].astype(int).to_numpy(), KEYS] = z[KEYS].to_numpy()
        out[name] = back
    return out, peer, ""


def _name(k: int, l: int | None, t: float | None) -> str:  # noqa: E741
    return f"k={k}" + (f", l={l}" if l is not None else "") + (f", t={t:g}" if t is not None else "")


def cells_lost(x: pd.DataFrame, z: pd.DataFrame) -> int:
    """Key cells that tell nothing: blank, or a label standing for every observed value of its key."""
    lost = 0
    for c in KEYS:
        blank = z[c].isna().to_numpy()
        lab = z[c].astype(str).where(~z[c].isna(), "")
        stands = pd.DataFrame({"z": lab, "x": x[c]}).groupby("z")["x"].transform("nunique").to_numpy()
        lost += int((blank | (stands == x[c].nunique())).sum())
    return lost


def accuracy(x: pd.DataFrame, z: pd.DataFrame, train: np.ndarray) -> float:
    """One learner for every release: one-hot keys (a blank a value of its own), logistic
    regression fitted on the release's train rows, scored on its other rows."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    feats = z[KEYS].astype(str).where(z[KEYS].notna(), "(blank)")
    y = x[SENSITIVE].astype(str).to_numpy()
    model = make_pipeline(OneHotEncoder(handle_unknown="ignore"), LogisticRegression(max_iter=2000))
    model.fit(feats[train], y[train])
    return float((model.predict(feats[~train]) == y[~train]).mean())


def judge(x: pd.DataFrame, z: pd.DataFrame, train: np.ndarray) -> dict[str, Any]:
    sup = z[KEYS].isna().all(axis=1)
    return {"suppressed": int(sup.sum()), "cells_lost": cells_lost(x, z),
            "arx_loss": release_loss(x, z, KEYS, "arx"), "discernibility": release_loss(x, z, KEYS, "discernibility"),
            "accuracy": accuracy(x, z, train)}


def pycanon_check(x: pd.DataFrame, z: pd.DataFrame, tmp: Path, name: str) -> dict[str, Any]:
    """pyCANON's k, distinct l and t on income of a ppdm release (suppressed key cells as '*')."""
    from benchmarks.bench_privacy_models import peer_python as pycanon_python

    py, why = pycanon_python()
    if py is None:
        return {"pycanon": why}
    starred = z[KEYS].astype(object).where(z[KEYS].notna(), "*").astype(str).assign(**{SENSITIVE: x[SENSITIVE]})
    path = tmp / f"pycanon_{abs(hash(name))}.csv"
    starred.to_csv(path, index=False)
    spec = tmp / "pycanon.json"
    spec.write_text(json.dumps({"table": str(path), "qi": KEYS, "sensitive": [SENSITIVE], "text": KEYS}))
    proc = subprocess.run([str(py), str(HERE / "_pycanon_peer.py"), str(spec)], capture_output=True, text=True,
                          timeout=3600)
    if proc.returncode != 0:
        err = proc.stderr.strip().splitlines()
        return {"pycanon": f"pyCANON failed: {err[-1] if err else proc.returncode}"}
    peer = json.loads(proc.stdout.strip().splitlines()[-1])
    row = peer["by_sensitive"][SENSITIVE]
    return {"pycanon": peer["version"], "pycanon_k": int(peer["k"]), "pycanon_l": int(row["l"]),
            "pycanon_t": float(row["t"])}


def run(quick: bool = False) -> list[dict]:
    x, schema = table(quick)
    train = np.zeros(len(x), dtype=bool)
    train[np.random.default_rng(0).permutation(len(x))[: int(0.7 * len(x))]] = True
    hier = hierarchies(x, schema)
    py, why = peer_python()
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        theirs: dict[str, pd.DataFrame | None] = {}
        peer: dict[str, Any] = {}
        if py is not None:
            theirs, peer, why = anjana_releases(x, hier, py, tmp)
        original = accuracy(x, x[KEYS].astype(object), train)
        for (k, l, t), loss in ((target, loss) for target in TARGETS for loss in LOSSES):  # noqa: E741
            name = _name(k, l, t)
            z, wall, cpu, tech = ppdm_release(x, schema, k, l, t, loss)
            mine = judge(x, z, train)
            check = pycanon_check(x, z, tmp, name)
            meets = (check.get("pycanon_k", 0) >= k and (l is None or check.get("pycanon_l", 0) >= l)
                     and (t is None or check.get("pycanon_t", math.inf) <= t + 1e-9)) if "pycanon_k" in check else None
            row: dict[str, Any] = {"benchmark": f"anjana adult {name}", "loss": loss, "seconds": wall, "cpu_s": cpu,
                                   "records": len(x), "levels": tech.privacy_report_["levels"],
                                   **{f"ppdm_{m}": v for m, v in mine.items()}, **check, "pycanon_meets": meets,
                                   "accuracy_of_x": original}
            z2 = theirs.get(name)
            if z2 is not None:
                row.update({f"anjana_{m}": v for m, v in judge(x, z2, train).items()})
                row.update({"anjana": peer["version"], "anjana_s": peer["jobs"][name]["seconds"],
                            "anjana_levels": {c: _level_of(z2[c], hier[c]) for c in KEYS}})
                # ppdm at or below ANJANA on the loss it was asked to minimise
                judged = "arx_loss" if loss == "arx" else "discernibility"
                row["ppdm_at_or_below"] = row[f"ppdm_{judged}"] <= row[f"anjana_{judged}"] + 1e-12
            else:
                row["anjana"] = why or ("no release: ANJANA found none within the limit" if name in peer.get("jobs", {})
                                        else "not run")
            rows.append(row)
    if not quick:
        OUT.write_text(_markdown(rows, x), encoding="utf-8")
    return rows


def _level_of(col: pd.Series, levels: list[list[str]]) -> int | None:
    """The level of the hierarchy whose labels a released column uses (None: all blank)."""
    used = set(col.dropna().astype(str))
    if not used:
        return None
    for i, labels in enumerate(levels):
        if used <= set(labels):
            return i
    return None


def _markdown(rows: list[dict], x: pd.DataFrame) -> str:
    head = ("| targets | tool | levels (age, edu, marital, race, sex, country) | records suppressed | key cells lost | "
            "ARX loss | discernibility | accuracy | seconds | pyCANON k / l / t |\n|---|---|---|---|---|---|---|---|---|---|\n")
    lines = []
    names = list(dict.fromkeys(r["benchmark"] for r in rows))
    for bench in names:
        mine = [r for r in rows if r["benchmark"] == bench]
        name = bench.removeprefix("anjana adult ")
        for r in mine:
            lv = ", ".join(str(v) for v in r["levels"].values())
            canon = (f"{r['pycanon_k']} / {r['pycanon_l']} / {r['pycanon_t']:.4f}" if "pycanon_k" in r
                     else str(r.get("pycanon", "—")))
            lines.append(f"| {name} | ppdm `generalize`, loss={r['loss']} | {lv} | {r['ppdm_suppressed']} | "
                         f"{r['ppdm_cells_lost']} | {r['ppdm_arx_loss']:.4f} | {r['ppdm_discernibility']:.4f} | "
                         f"{r['ppdm_accuracy']:.4f} | {r['seconds']:.1f} | {canon} |")
        r = mine[0]
        if "anjana_arx_loss" in r:
            alv = ", ".join("—" if v is None else str(v) for v in r["anjana_levels"].values())
            lines.append(f"| {name} | ANJANA {r['anjana']} | levels {alv} | {r['anjana_suppressed']} | "
                         f"{r['anjana_cells_lost']} | {r['anjana_arx_loss']:.4f} | {r['anjana_discernibility']:.4f} | "
                         f"{r['anjana_accuracy']:.4f} | {r['anjana_s']:.1f} | |")
        else:
            lines.append(f"| {name} | ANJANA | {r['anjana']} | | | | | | | |")
    return ("`python benchmarks/run.py anjana`: adult, complete records ({n}), keys {keys}, sensitive {s}, "
            "at most {lim:.0%} of the records suppressed, the same hierarchies for both tools (module docstring of "
            "`benchmarks/bench_anjana.py`; ANJANA's levels are indices into them: age 0 as in x, 1 width 1 from "
            "the bound 17, 2 width 5, 3 width 10, 4 width 50, 5 one interval; a category 0 as in x, 1 `*`). "
            "Accuracy: logistic regression on the one-hot keys of the release, fitted on a fixed 70 % of the "
            "records and scored on the rest (x itself: {acc:.4f}). Seconds: wall time of each tool in the same "
            "run.\n\n").format(n=len(x), keys=", ".join(KEYS), s=SENSITIVE, lim=LIMIT, acc=rows[0]["accuracy_of_x"]) + \
        head + "\n".join(lines) + "\n"


if __name__ == "__main__":
    for r in run(quick="--quick" in sys.argv):
        print(json.dumps(r, default=str))
