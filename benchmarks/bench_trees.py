"""C4.5 and SysFor build times against Weka J48's reference.

Goals: C4.5 on adult (30162 complete rows × 14 attributes, J48 -M 2) within 1.5× of J48's
model build (1.04 s, Weka 3.6.14, from the oracle printout); SysFor with 3 trees
(paper 004 settings, min_leaf 100) on adult within 10 s; memory O(n·m).
Quick mode uses wine (178 rows).
"""

from __future__ import annotations

from benchmarks._util import measure

J48_ADULT_SECONDS = 1.04  # "Time taken to build model" in shared/oracles/j48/adult_M2.txt


def run(quick: bool) -> list[dict]:
    from ppdm.datasets import load
    from ppdm.trees import C45Classifier, SysForClassifier

    name = "wine" if quick else "adult"
    df, schema = load(name, missing="drop")
    X, y = df.drop(columns=schema.class_column), df[schema.class_column]
    # compile and load the kernels once so the timing is of the build alone
    C45Classifier(schema=schema).fit(X.head(200), y.head(200))
    rows = []
    tree, sec, rss = measure(lambda: C45Classifier(schema=schema).fit(X, y))
    rows.append({
        "benchmark": f"c45 {name} ({len(X)}x{X.shape[1]})", "seconds": sec,
        "goal": f"<= {1.5 * J48_ADULT_SECONDS:.2f} s (1.5x J48)" if not quick else "smoke",
        "ratio_to_j48": sec / J48_ADULT_SECONDS if not quick else "", "leaves": tree.n_leaves_,
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
