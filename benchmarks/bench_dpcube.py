"""DPCube: speed and memory, and what a CART tree learns from its releases, beside the
field's DP synthesizers (smartnoise-synth's MST and AIM).

**Speed.** Fitting and generating 100 000 records over 5 numeric attributes × class with 10
bins (2·10⁵ cells) within 5 s (kd-tree and cell baseline); over 6 attributes (2·10⁶ cells)
within 5 s and 600 MiB, although the cell baseline keeps one box per cell. With the default
grid (``bins="auto"``, sized from n and ε, attributes chosen under DP) 100 000 records over 6
attributes, and 10 000 records over 58 attributes, within 5 s each.

**Accuracy.** A CART tree (paper 000's settings) trained on the release predicts held-out
original records: 2/3 of the table released, 1/3 held out, stratified, five splits (seeds
0–4), one release per split; the mean over the splits is reported with the original's own
tree and the majority class. Targets at ε = 1: at least the majority class plus half the gap
to the original on adult, cardio and spambase, at least 0.88 on banknote; ε = 10 above ε = 1
wherever the original leaves room (more than 0.01). Every release is made with the table's
*declared* domain (banknote and adult ship theirs; spambase and cardio are declared below,
with their sources).

**Robustness** (issue #29 item 7; :func:`robustness`): spambase at ε = 1 with a learner and
splits other than the benchmark's: three stratified 70/30 splits (seeds 0–2), scikit-learn's
CART with ``min_samples_leaf=10`` trained on the release of the 70 % and tested on the held-out
originals. Reported per split, with the mean, the majority class, x's own tree, the target
(majority + ½ · (original − majority)) and whether it is met (the mean reaches it and no split
falls below the majority class); also the same check with the paper's placement
(``split_dimension="widest"``, ``values="uniform"``) for comparison. The result is recorded in
``benchmarks/dpcube_spambase.md``. The cached spambase may be the UCI file or the mirror named
in :data:`ALSO_ACCEPTED`.

**Peers.** smartnoise-synth (MST, AIM) runs in its own virtual environment
(``PPDM_SMARTNOISE_PYTHON``, default ``/work/venvs/smartnoise/bin/python``; never a ppdm
dependency): ``python -m venv /work/venvs/smartnoise && /work/venvs/smartnoise/bin/pip install
torch==2.13.0 smartnoise-synth pandas``. Its rows are skipped with a note when that
environment is absent. The peers get the same declared domain: continuous columns are cut
into 8 equal-width bins over the declared bounds and synthesized as categories (the issue's
first comparison used the data's own range, which a DP release may not read). They run on
``PEER_SPLITS`` splits (default 1: their fits take minutes) with a time limit per fit
(``PPDM_PEER_TIMEOUT`` seconds, default 1200). MST and AIM are (ε, δ = 10⁻⁹)-DP and are given
the true number of records; DPCube is ε-DP and releases a noisy number of records.

**Data.** banknote and adult ship with ppdm. spambase (UCI, CC BY 4.0) and cardio (the
Kaggle "Cardiovascular Disease dataset", licence not stated, so not redistributed) are read
from a cache outside the package (``PPDM_BENCH_DATA``, default ``~/.cache/ppdm/benchmarks``)
and skipped with a note when absent; :data:`SOURCES` gives where they came from and their
sha256. Times are wall seconds per release (fit + generate) with the CPU seconds beside them
(``cpu_s``): on a shared machine the CPU time is the steadier figure.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks._util import measure
from ppdm.anonymize.differential_privacy import CoarseGridWarning, DPCube
from ppdm.data import Schema

HERE = Path(__file__).resolve().parent
DATA_DIR = Path(os.environ.get("PPDM_BENCH_DATA", Path.home() / ".cache" / "ppdm" / "benchmarks"))
PEER_PYTHON = Path(os.environ.get("PPDM_SMARTNOISE_PYTHON", "/work/venvs/smartnoise/bin/python"))
PEER_SPLITS = int(os.environ.get("PPDM_PEER_SPLITS", "1"))
PEER_TIMEOUT = float(os.environ.get("PPDM_PEER_TIMEOUT", "1200"))
EPSILONS = (0.1, 1.0, 10.0)
SPLITS = 5

#: files of the cache: where they came from and what they hash to
SOURCES = {
    "spambase.data": (
        "UCI Machine Learning Repository, Spambase (Hopkins, Reeber, Forman & Suermondt, 1999), CC BY 4.0, "
        "https://archive.ics.uci.edu/dataset/94/spambase; 4601 records × 57 attributes + class, no header",
        "ebec58cfca94ea61c77df632314acae15bad410f4769d38b1a66cb41050e3431"),
    "cardio_train.csv": (
        "Kaggle 'Cardiovascular Disease dataset' (S. Ulianova), 70 000 records; a verbatim copy from a public GitHub "
        "mirror (sarthakjain36/cardio_data, ';'-separated, blood pressures headed sbp/dbp instead of ap_hi/ap_lo); "
        "no licence is stated, so it is not redistributed",
        "28590cbf37f72ac631fc8dcb60b4cb3a83ed029f19ff983b7e608ee5d4d4da26"),
}

SPAM_WORDS = ("make address all 3d our over remove internet order mail receive will people report addresses free "
              "business email you credit your font 000 money hp hpl george 650 lab labs telnet 857 data 415 85 "
              "technology 1999 parts pm direct cs meeting original project re edu table conference").split()
SPAM_CHARS = ["semicolon", "paren", "bracket", "exclamation", "dollar", "hash"]


# ------------------------------------------------------------------------- tables
#: byte copies accepted beside the one :data:`SOURCES` names (sha256 → where it came from)
ALSO_ACCEPTED = {
    "spambase.data": {
        "1855d678d9019f325b7bcd6f6a4c9baedac6f291aa9cad59e5f79a25f1988372":
            "public GitHub mirror HassanRezaee/ML_from_Scratch, spambase.data at commit e1482281 (blob ba12772e); "
            "4601 records × 58 columns, 1813 spam and 2788 not, as spambase.names documents; its bytes were not "
            "compared with the UCI file's (UCI was unreachable when it was fetched)",
    },
}


def _checked(name: str) -> Path | None:
    p = DATA_DIR / name
    if not p.is_file():
        return None
    digest = hashlib.sha256(p.read_bytes()).hexdigest()
    if digest != SOURCES[name][1] and digest not in ALSO_ACCEPTED.get(name, {}):
        raise RuntimeError(f"{p} is not the expected file ({SOURCES[name][0]}); remove it or fix PPDM_BENCH_DATA")
    return p


def spambase() -> tuple[pd.DataFrame, Schema] | None:
    """spambase with the domain its documentation gives (spambase.names): 48 word and 6
    character frequencies in [0, 100] (percentages), capital-run lengths ≥ 1 with no upper
    limit documented (assumed here: average ≤ 10 000, longest ≤ 10 000, total ≤ 100 000, the
    last two whole numbers), class 0/1."""
    p = _checked("spambase.data")
    if p is None:
        return None
    cols = ([f"word_freq_{w}" for w in SPAM_WORDS] + [f"char_freq_{c}" for c in SPAM_CHARS]
            + ["capital_run_length_average", "capital_run_length_longest", "capital_run_length_total", "spam"])
    x = pd.read_csv(p, header=None, names=cols)
    num = cols[:-1]
    bounds = {c: (0.0, 100.0) for c in num[:54]}
    bounds.update({"capital_run_length_average": (1.0, 10_000.0), "capital_run_length_longest": (1, 10_000),
                   "capital_run_length_total": (1, 100_000)})
    return x, Schema(num, [], "spam", integer=["capital_run_length_longest", "capital_run_length_total"],
                     bounds=bounds, categories={"spam": [0, 1]})


def cardio() -> tuple[pd.DataFrame, Schema] | None:
    """cardio with the codes its documentation gives (gender 1/2, cholesterol and glucose
    1–3, smoking, alcohol, activity and the class 0/1). No ranges are documented for the
    measurements: assumed here as physically possible limits (age 0–43 830 days, height
    50–250 cm, weight 10–300 kg, systolic 0–400 and diastolic 0–300 mmHg); recorded values
    outside them (the table has some) are clamped."""
    p = _checked("cardio_train.csv")
    if p is None:
        return None
    x = pd.read_csv(p, sep=";").drop(columns=["id"]).rename(columns={"sbp": "ap_hi", "dbp": "ap_lo"})
    cats = {"gender": [1, 2], "cholesterol": [1, 2, 3], "gluc": [1, 2, 3], "smoke": [0, 1], "alco": [0, 1],
            "active": [0, 1], "cardio": [0, 1]}
    return x, Schema(["age", "height", "weight", "ap_hi", "ap_lo"], [c for c in cats if c != "cardio"], "cardio",
                     integer=["age", "height", "ap_hi", "ap_lo"],
                     bounds={"age": (0, 43_830), "height": (50, 250), "weight": (10.0, 300.0), "ap_hi": (0, 400),
                             "ap_lo": (0, 300)}, categories=cats)


def shipped(name: str) -> Callable[[], tuple[pd.DataFrame, Schema] | None]:
    def load() -> tuple[pd.DataFrame, Schema]:
        from ppdm.datasets import load as load_builtin

        x, s = load_builtin(name, missing="drop")
        return x, s

    return load


TABLES: dict[str, Callable[[], tuple[pd.DataFrame, Schema] | None]] = {
    "banknote": shipped("banknote"), "adult": shipped("adult"), "spambase": spambase, "cardio": cardio,
}
#: the cached file of each table that does not ship with ppdm
CACHED = {"spambase": "spambase.data", "cardio": "cardio_train.csv"}
#: tables the peers run on (banknote, adult and a wide one)
PEER_TABLES = ("banknote", "adult", "spambase")


# ----------------------------------------------------------------------- accuracy
def _splits(x: pd.DataFrame, cls: str, n: int) -> list[tuple[pd.DataFrame, pd.DataFrame]]:
    from sklearn.model_selection import train_test_split

    out = []
    for seed in range(n):
        tr, te = train_test_split(x, test_size=1 / 3, stratify=x[cls], random_state=seed)
        out.append((tr.reset_index(drop=True), te.reset_index(drop=True)))
    return out


def _accuracy(train: pd.DataFrame, z: pd.DataFrame, test: pd.DataFrame, schema: Schema) -> float:
    from ppdm.metrics.model import compare_models

    m = compare_models(train, z, test, schema.class_column, schema)
    return float((m.pred_z == m.y_test).mean())


def _dpcube_row(name: str, eps: float, splits: list, schema: Schema) -> dict:
    accs, secs, cpus, peak = [], [], [], 0.0
    for seed, (train, test) in enumerate(splits):
        t = DPCube(epsilon=eps, schema=schema, random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CoarseGridWarning)
            c0 = time.process_time()
            z, sec, rss = measure(lambda t=t, train=train: t.fit_transform(train))
            cpus.append(time.process_time() - c0)
        secs.append(sec)
        peak = max(peak, rss)
        accs.append(_accuracy(train, z, test, schema))
    return {"benchmark": f"accuracy {name} ε={eps:g} dpcube", "seconds": float(np.mean(secs)),
            "peak_rss_mb": peak, "accuracy": float(np.mean(accs)), "splits": len(accs),
            "cpu_s": float(np.mean(cpus)), "cells": t.grid_.n_cells, "attributes_binned": len(t.selected_)}


def _peer_spec(schema: Schema) -> list[dict]:
    cols = []
    for c in schema.columns:
        if c in schema.numeric:
            lo, hi = schema.bounds[c]
            cols.append({"name": c, "kind": "numeric", "lo": lo, "hi": hi})
        else:
            cols.append({"name": c, "kind": "categorical", "values": list(schema.categories[c])})
    return cols


def _peer_row(name: str, method: str, eps: float, splits: list, schema: Schema) -> dict:
    row = {"benchmark": f"accuracy {name} ε={eps:g} {method} (smartnoise)", "seconds": float("nan")}
    accs, secs, cpus, peak = [], [], [], 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for seed, (train, test) in enumerate(splits[:PEER_SPLITS]):
            src, out, spec = Path(tmp) / "x.csv", Path(tmp) / "z.csv", Path(tmp) / "spec.json"
            train.to_csv(src, index=False)
            spec.write_text(json.dumps({"train": str(src), "out": str(out), "epsilon": eps, "method": method,
                                        "seed": seed, "rows": len(train), "bins": 8,
                                        "columns": _peer_spec(schema)}))
            try:
                proc = subprocess.run([str(PEER_PYTHON), str(HERE / "_smartnoise_peer.py"), str(spec)],
                                      capture_output=True, text=True, timeout=PEER_TIMEOUT)
            except subprocess.TimeoutExpired:
                return {**row, "note": f"no result within {PEER_TIMEOUT:.0f} s per fit"}
            if proc.returncode != 0:
                return {**row, "note": "failed: " + (proc.stderr.strip().splitlines() or ["?"])[-1][:120]}
            info = json.loads(proc.stdout.strip().splitlines()[-1])
            z = pd.read_csv(out)
            for c in schema.categorical + [schema.class_column]:
                z[c] = z[c].astype(train[c].dtype)
            accs.append(_accuracy(train, z, test, schema))
            secs.append(info["seconds"])
            cpus.append(info["cpu_seconds"])
            peak = max(peak, info["peak_rss_mb"])
    return {**row, "seconds": float(np.mean(secs)), "peak_rss_mb": peak, "accuracy": float(np.mean(accs)),
            "splits": len(accs), "cpu_s": float(np.mean(cpus))}


def _reference_rows(name: str, splits: list, schema: Schema) -> tuple[dict, float, float]:
    accs, maj = [], []
    for train, test in splits:
        accs.append(_accuracy(train, train, test, schema))
        maj.append(float((test[schema.class_column] == train[schema.class_column].mode()[0]).mean()))
    a, m = float(np.mean(accs)), float(np.mean(maj))
    return ({"benchmark": f"accuracy {name}: original (x's own tree) / majority class", "seconds": float("nan"),
             "accuracy": a, "majority": m, "records": int(len(splits[0][0]) + len(splits[0][1]))}, a, m)


def accuracy_rows(quick: bool) -> list[dict]:
    rows: list[dict] = []
    peers = PEER_PYTHON.is_file()
    if not peers:
        rows.append({"benchmark": "smartnoise-synth (MST, AIM)", "seconds": float("nan"),
                     "note": f"skipped: no peer environment at {PEER_PYTHON} (see this module's docstring)"})
    names = ["banknote"] if quick else list(TABLES)
    for name in names:
        loaded = TABLES[name]()
        if loaded is None:
            file = CACHED[name]
            rows.append({"benchmark": f"accuracy {name}", "seconds": float("nan"),
                         "note": f"skipped: {DATA_DIR / file} is absent ({SOURCES[file][0]})"})
            continue
        x, schema = loaded
        splits = _splits(x, schema.class_column, 1 if quick else SPLITS)
        ref, orig, maj = _reference_rows(name, splits, schema)
        rows.append(ref)
        by_eps = {}
        for eps in ((1.0,) if quick else EPSILONS):
            r = _dpcube_row(name, eps, splits, schema)
            if eps == 1.0:
                goal = 0.88 if name == "banknote" else maj + (orig - maj) / 2
                r["target"] = round(goal, 3)
                r["meets"] = r["accuracy"] >= goal
            if eps == 10.0 and 1.0 in by_eps:
                r["beats_eps_1"] = r["accuracy"] > by_eps[1.0]["accuracy"] or orig - by_eps[1.0]["accuracy"] <= 0.01
            by_eps[eps] = r
            rows.append(r)
            if peers and name in PEER_TABLES:
                for method in ("mst", "aim"):
                    rows.append(_peer_row(name, method, eps, splits, schema))
    return rows


# --------------------------------------------------------------------------- speed
def _table(n: int, d: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    cols = {f"a{j}": rng.normal(y * (j + 1) * 0.5, 1.0) for j in range(d)}
    cols["y"] = y
    return pd.DataFrame(cols)


def _declared(d: int) -> Schema:
    """A public domain wide enough for every generated value (declared, not read from the data)."""
    cols = [f"a{j}" for j in range(d)]
    return Schema(cols, [], "y", bounds={f"a{j}": (-6.0, 6.0 + (j + 1) * 0.5) for j in range(d)},
                  categories={"y": [0, 1]})


def speed_rows(quick: bool) -> list[dict]:
    rows = []
    cases = [(2_000, 3, 6, "kd"), (2_000, 3, 6, "cell"), (2_000, 3, "auto", "kd")] if quick else [
        (100_000, 5, 10, "kd"), (100_000, 5, 10, "cell"), (100_000, 6, 10, "kd"), (100_000, 6, 10, "cell"),
        (100_000, 6, "auto", "kd"), (10_000, 58, "auto", "kd"),
    ]
    for n, d, bins, part in cases:
        df = _table(n, d)
        t = DPCube(epsilon=1.0, bins=bins, partitioning=part, random_state=0, schema=_declared(d),
                   edges="equal" if bins != "auto" else "quantile")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CoarseGridWarning)
            c0 = time.process_time()
            z, sec, rss = measure(lambda t=t, df=df: t.fit_transform(df))
        rows.append({
            "benchmark": f"dpcube {part} n={n} d={d} bins={bins}", "cells": t.grid_.n_cells,
            "partitions": len(t.partitions_), "rows_released": len(z), "seconds": sec,
            "cpu_s": time.process_time() - c0, "goal": 5.0, "peak_rss_mb": rss,
        })
    return rows


# --------------------------------------------------------------------- robustness
#: the independent check of issue #29 item 7: 70/30 stratified splits, scikit-learn's CART with 10-record leaves
ROBUST_SPLITS = 3
ROBUST_LEAF = 10


def _sk_cart(train: pd.DataFrame, test: pd.DataFrame, schema: Schema) -> float:
    """Accuracy on ``test`` of scikit-learn's CART (``min_samples_leaf=10``, otherwise its defaults) fitted on ``train``."""
    from sklearn.tree import DecisionTreeClassifier

    f, y = schema.attributes, schema.class_column
    m = DecisionTreeClassifier(min_samples_leaf=ROBUST_LEAF, random_state=0).fit(train[f], train[y].astype(int))
    return float((m.predict(test[f]) == test[y].astype(int)).mean())


def robustness(x: pd.DataFrame, schema: Schema, splits: int = ROBUST_SPLITS, **params: object) -> dict:
    """DPCube at ε = 1 (``params`` on top of the defaults) against the target of issue #29 item 7.

    ``splits`` stratified 70/30 splits (seeds 0, 1, …; DPCube's seed is the split's), scikit-learn's
    CART with 10-record leaves trained on the release of the 70 % and tested on the held-out 30 %
    originals. Returns the per-split accuracies, the majority class's accuracy on each test part
    (the commonest class of the training part), x's own tree, their means, the target (majority +
    ½ · (original − majority), means over the splits) and ``met``: the mean reaches the target and
    no split falls below its majority class.
    """
    from sklearn.model_selection import train_test_split

    cls = schema.class_column
    accs, majs, origs = [], [], []
    for seed in range(splits):
        tr, te = train_test_split(x, test_size=0.3, stratify=x[cls], random_state=seed)
        tr, te = tr.reset_index(drop=True), te.reset_index(drop=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CoarseGridWarning)
            z = DPCube(epsilon=1.0, schema=schema, random_state=seed, **params).fit_transform(tr)  # type: ignore[arg-type]  # keyword parameters of DPCube
        accs.append(_sk_cart(z, te, schema))
        majs.append(float((te[cls] == tr[cls].mode()[0]).mean()))
        origs.append(_sk_cart(tr, te, schema))
    maj, orig = float(np.mean(majs)), float(np.mean(origs))
    target = maj + (orig - maj) / 2
    return {"accuracies": accs, "majorities": majs, "originals": origs, "mean": float(np.mean(accs)),
            "majority": maj, "original": orig, "target": target,
            "met": bool(np.mean(accs) >= target and all(a >= m for a, m in zip(accs, majs, strict=True)))}


def robustness_rows(quick: bool) -> list[dict]:
    loaded = spambase()
    if loaded is None:
        return [{"benchmark": "robustness spambase", "seconds": float("nan"),
                 "note": f"skipped: {DATA_DIR / 'spambase.data'} is absent ({SOURCES['spambase.data'][0]})"}]
    x, schema = loaded
    rows = []
    cases = [("defaults", {})] if quick else [
        ("defaults", {}), ("before: split_dimension='widest', values='uniform'",
                           {"split_dimension": "widest", "values": "uniform"})]
    for label, params in cases:
        t0 = time.perf_counter()
        r = robustness(x, schema, **params)
        sec = time.perf_counter() - t0
        for i, (a, m, o) in enumerate(zip(r["accuracies"], r["majorities"], r["originals"], strict=True)):
            rows.append({"benchmark": f"robustness spambase ε=1 {label}: split {i} (70/30, CART leaf {ROBUST_LEAF})",
                         "seconds": float("nan"), "accuracy": round(a, 3), "majority": round(m, 3),
                         "original": round(o, 3)})
        rows.append({"benchmark": f"robustness spambase ε=1 {label}: mean of {ROBUST_SPLITS} splits",
                     "seconds": sec, "accuracy": round(r["mean"], 3), "majority": round(r["majority"], 3),
                     "original": round(r["original"], 3), "target": round(r["target"], 3), "met": r["met"]})
    return rows


def run(quick: bool) -> list[dict]:
    return speed_rows(quick) + accuracy_rows(quick) + robustness_rows(quick)

