"""C4.5 and SysFor build times against Weka J48's reference.

Goals: C4.5 on adult (30162 complete rows × 14 attributes, J48 -M 2) within 1.5× of J48's
model build — measured on this machine when Java and Weka (Debian package ``weka``) are
installed, else the oracle printout's 1.04 s (Weka 3.6.14); SysFor with 3 trees
(paper 004 settings, min_leaf 100) on adult within 10 s; memory O(n·m).
Quick mode uses wine (178 rows).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pandas as pd

from benchmarks._util import measure

J48_ADULT_SECONDS = 1.04  # "Time taken to build model" in shared/oracles/j48/adult_M2.txt
WEKA_JAR = Path("/usr/share/java/weka.jar")


def j48_build_seconds(df: pd.DataFrame, categorical: list[str], cls: str) -> float | None:
    """J48 -M 2 model build time reported by Weka on this machine, or None without Java/Weka."""
    if shutil.which("java") is None or not WEKA_JAR.exists():
        return None

    def nominal(values: pd.Series) -> str:
        return "{" + ",".join(f"'{v}'" for v in pd.unique(values.astype(str))) + "}"

    lines = ["@relation bench"]
    for c in df.columns:
        lines.append(f"@attribute {c} " + (nominal(df[c]) if c in categorical or c == cls else "numeric"))
    lines.append("@data")
    quoted = df.astype(str).apply(lambda col: col if col.name not in categorical and col.name != cls
                                  else "'" + col + "'")
    lines += quoted.apply(",".join, axis=1).tolist()
    with tempfile.TemporaryDirectory() as tmp:
        arff = Path(tmp) / "data.arff"
        arff.write_text("\n".join(lines) + "\n")
        out = subprocess.run(["java", "-cp", str(WEKA_JAR), "weka.classifiers.trees.J48", "-t", str(arff),
                              "-M", "2", "-no-cv"], capture_output=True, text=True, timeout=600)
    m = re.search(r"Time taken to build model:\s*([0-9.]+)", out.stdout)
    return float(m.group(1)) if m else None


def run(quick: bool) -> list[dict]:
    from ppdm.datasets import load
    from ppdm.trees import C45Classifier, SysForClassifier

    name = "wine" if quick else "adult"
    df, schema = load(name, missing="drop")
    X, y = df.drop(columns=schema.class_column), df[schema.class_column]
    # compile and load the kernels once so the timing is of the build alone
    C45Classifier(schema=schema).fit(X.head(200), y.head(200))
    rows = []
    j48 = None if quick else j48_build_seconds(df, schema.categorical, schema.class_column)
    ref, ref_src = (j48, "J48 measured here") if j48 is not None else (J48_ADULT_SECONDS, "J48 oracle printout")
    tree, sec, rss = measure(lambda: C45Classifier(schema=schema).fit(X, y))
    rows.append({
        "benchmark": f"c45 {name} ({len(X)}x{X.shape[1]})", "seconds": sec,
        "goal": f"<= {1.5 * ref:.2f} s (1.5x J48)" if not quick else "smoke",
        "j48_seconds": ref if not quick else "", "reference": ref_src if not quick else "",
        "ratio_to_j48": sec / ref if not quick else "", "leaves": tree.n_leaves_,
        "peak_rss_mb": rss,
    })
    forest, sec, rss = measure(lambda: SysForClassifier.paper_004(min_leaf=100 if not quick else 10,
                                                                  schema=schema).fit(X, y))
    rows.append({
        "benchmark": f"sysfor 3 trees {name}", "seconds": sec, "goal": "<= 10 s" if not quick else "smoke",
        "leaves": sum(e.n_leaves_ for e in forest.estimators_), "peak_rss_mb": rss,
    })
    pred, sec, rss = measure(lambda: tree.predict(X))
    rows.append({"benchmark": f"c45 predict {name}", "seconds": sec, "goal": "", "peak_rss_mb": rss})
    return rows
