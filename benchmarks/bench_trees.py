"""C4.5 and SysFor build times, against Weka J48 measured in the same run.

Goals (issue: faster trees, identical trees kept):
- C4.5 on adult (30162 complete rows × 14 attributes, J48 -M 2) in ≤ 0.3 × J48's own
  "Time taken to build model" (not JVM start-up), J48 run on this machine in this run when
  Java and Weka (Debian package ``weka``) are installed; the printed tree must be the one
  in ``shared/oracles/j48/adult_M2.txt``.
- SysFor with its general settings (60 trees, min_leaf 10, goodness 0.3, separation 0.3)
  on adult in ≤ 5 s; the 12 forests of ``shared/oracles/sysfor`` must come out the same.
Both build times are the best of ``REPEATS`` runs (J48's too), interleaved, because the
machine is shared; the 1-minute load average is printed beside them.
Quick mode uses wine (178 rows) and skips J48.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pandas as pd

from benchmarks._util import measure

WEKA_JAR = Path("/usr/share/java/weka.jar")
SHARED = Path(__file__).resolve().parents[1].parent / "shared"
REPEATS = 3


def j48_arff(df: pd.DataFrame, categorical: list[str], cls: str, path: Path) -> None:
    """``df`` as an ARFF file, categorical attributes and the class declared nominal."""

    def nominal(values: pd.Series) -> str:
        return "{" + ",".join(f"'{v}'" for v in pd.unique(values.astype(str))) + "}"

    lines = ["@relation bench"]
    for c in df.columns:
        lines.append(f"@attribute {c} " + (nominal(df[c]) if c in categorical or c == cls else "numeric"))
    lines.append("@data")
    quoted = df.astype(str).apply(lambda col: col if col.name not in categorical and col.name != cls
                                  else "'" + col + "'")
    lines += quoted.apply(",".join, axis=1).tolist()
    path.write_text("\n".join(lines) + "\n")


def j48_build_seconds(arff: Path) -> float | None:
    """J48 -M 2's own "Time taken to build model" on ``arff``, or None without Java/Weka."""
    if shutil.which("java") is None or not WEKA_JAR.exists():
        return None
    out = subprocess.run(["java", "-cp", str(WEKA_JAR), "weka.classifiers.trees.J48", "-t", str(arff),
                          "-M", "2", "-no-cv"], capture_output=True, text=True, timeout=900)
    m = re.search(r"Time taken to build model:\s*([0-9.]+)", out.stdout)
    return float(m.group(1)) if m else None


def _tree_body(text: str) -> str:
    body = text.split("------------------\n\n", 1)[1].split("\n\nNumber of Leaves")[0].strip("\n")
    return re.sub(r"(?<![\d.])(\d+)\.0\b", r"\1", body)


def _sysfor_parity() -> tuple[float, str]:
    """Seconds for the 12 oracle forests and whether all came out the same."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from test_trees_sysfor_parity import RUNS, compare, fit_run, parse_forest

    start = time.perf_counter()
    bad = []
    for key in RUNS:
        try:
            compare(fit_run(SHARED, key), parse_forest((SHARED / f"oracles/sysfor/{key}.txt").read_text()))
        except AssertionError:
            bad.append(key)
    return time.perf_counter() - start, "all 12 identical" if not bad else f"differ: {', '.join(bad)}"


def run(quick: bool) -> list[dict]:
    from ppdm.datasets import load
    from ppdm.trees import C45Classifier, SysForClassifier

    name = "wine" if quick else "adult"
    df, schema = load(name, missing="drop")
    X, y = df.drop(columns=schema.class_column), df[schema.class_column]
    # compile or load the kernels once, so that the timings are of the builds alone
    C45Classifier(schema=schema).fit(X.head(300), y.head(300))
    SysForClassifier(n_trees=3, schema=schema).fit(X.head(300), y.head(300))
    load1 = os.getloadavg()[0]
    rows = []
    ours: list[float] = []
    j48: list[float] = []
    tree, rss = None, 0.0
    with tempfile.TemporaryDirectory() as tmp:
        arff = Path(tmp) / "data.arff"
        if not quick:
            j48_arff(df, schema.categorical, schema.class_column, arff)
        for _ in range(REPEATS if not quick else 1):
            if not quick:
                t = j48_build_seconds(arff)
                if t is not None:
                    j48.append(t)
            tree, sec, r = measure(lambda: C45Classifier(schema=schema).fit(X, y))
            ours.append(sec)
            rss = max(rss, r)
    assert tree is not None
    best = min(ours)
    row: dict = {"benchmark": f"c45 {name} ({len(X)}x{X.shape[1]}), J48 -M 2", "seconds": best,
                 "goal": "smoke" if quick else "<= 0.3 x J48's build time", "peak_rss_mb": rss,
                 "leaves": tree.n_leaves_, "load_1min": load1}
    if not quick:
        oracle = SHARED / "oracles/j48/adult_M2.txt"
        if oracle.exists():
            same = _tree_body(tree.export_text()) == _tree_body(oracle.read_text())
            row["tree"] = "identical to J48's" if same else "DIFFERS from J48's"
        if j48:
            row.update(j48_seconds=min(j48), ratio_to_j48=best / min(j48),
                       met="yes" if best <= 0.3 * min(j48) else f"no, {best / (0.3 * min(j48)):.2f}x the goal")
        else:
            row["j48_seconds"] = "no Java/Weka here"
    rows.append(row)

    for jobs in (None, 2):
        times = []
        forest, frss = None, 0.0
        for _ in range(REPEATS if not quick else 1):
            forest, sec, r = measure(lambda jobs=jobs: SysForClassifier(schema=schema, n_jobs=jobs).fit(X, y))
            times.append(sec)
            frss = max(frss, r)
        assert forest is not None
        goal = 5.0
        rows.append({
            "benchmark": f"sysfor 60 trees {name} ({'1 thread' if jobs is None else f'n_jobs={jobs}'})",
            "seconds": min(times), "goal": "smoke" if quick else f"<= {goal:g} s", "peak_rss_mb": frss,
            "trees": len(forest.estimators_), "leaves": sum(e.n_leaves_ for e in forest.estimators_),
            "load_1min": os.getloadavg()[0],
            **({} if quick else {"met": "yes" if min(times) <= goal else f"no, {min(times) / goal:.2f}x the goal"}),
        })
    forest, sec, rss = measure(lambda: SysForClassifier.paper_004(min_leaf=100 if not quick else 10,
                                                                  schema=schema).fit(X, y))
    rows.append({"benchmark": f"sysfor 3 trees, paper-004 settings, {name}", "seconds": sec,
                 "goal": "<= 10 s" if not quick else "smoke", "peak_rss_mb": rss,
                 "leaves": sum(e.n_leaves_ for e in forest.estimators_)})
    pred, sec, rss = measure(lambda: tree.predict(X))
    rows.append({"benchmark": f"c45 predict {name}", "seconds": sec, "goal": "", "peak_rss_mb": rss})
    if not quick and (SHARED / "oracles/sysfor").is_dir():
        sec, verdict = _sysfor_parity()
        rows.append({"benchmark": "sysfor against the reference (12 oracle forests)", "seconds": sec, "goal": "",
                     "result": verdict})
    return rows
