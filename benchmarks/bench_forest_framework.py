"""Forest Framework speed: transform of 10⁶ rows × 14 attributes (goal ≤ 3 s, after fit)
and fit + transform on adult (goal ≤ 15 s).

The forest is SysFor with paper 004's settings when ``ppdm.trees.SysForClassifier`` is
importable, otherwise a bagged CART forest of 3 trees; the ``learner`` column says which.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchmarks._util import measure


def _forest(min_leaf: int):
    try:
        from ppdm.trees import SysForClassifier  # noqa: F401
    except ImportError:
        from ppdm.trees.cart_forest import CARTForest

        return CARTForest(n_trees=3, min_leaf=min_leaf, random_state=0), "bagged CART ×3 (SysFor not importable)"
    from ppdm.anonymize._learners import paper_learner
    from ppdm.experiments.forest_framework import SYSFOR_SETTINGS

    return paper_learner("SysForClassifier", min_leaf=min_leaf, **SYSFOR_SETTINGS), "SysFor (paper 004 settings)"


def synthetic(n: int, seed: int = 0) -> pd.DataFrame:
    """10 numeric (4 of them integer) and 4 categorical attributes plus a binary class."""
    rng = np.random.default_rng(seed)
    cols: dict[str, np.ndarray] = {}
    for j in range(6):
        cols[f"x{j}"] = rng.normal(0, 1 + j, n).round(3)
    for j in range(4):
        cols[f"k{j}"] = rng.integers(0, 50 * (j + 1), n)
    for j in range(4):
        cols[f"c{j}"] = rng.choice(np.array([f"v{v}" for v in range(3 + 2 * j)]), n)
    df = pd.DataFrame(cols)
    score = df["x0"] + 0.5 * df["x1"] - 0.02 * df["k0"] + (df["c0"] == "v1") + rng.normal(0, 1, n)
    df["y"] = np.where(score > 0, "yes", "no")
    return df


def run(quick: bool) -> list[dict]:
    from ppdm.anonymize.forest_framework import ForestFramework
    from ppdm.data.datasets import load

    rows: list[dict] = []
    n = 20_000 if quick else 1_000_000
    big = synthetic(n)
    fit_on = big.iloc[:50_000]
    forest, learner = _forest(min_leaf=200)
    forest.fit(fit_on.drop(columns="y"), fit_on["y"])
    ff = ForestFramework(class_column="y", forest=forest, random_state=0).fit(big)
    z, secs, rss = measure(lambda: ff.transform(big))
    rows.append(dict(benchmark=f"forest-framework transform {n:,}×14", seconds=secs, goal=3.0,
                     peak_rss_mb=rss, learner=learner, intersections=ff.report_.n_intersections))

    adult, schema = load("adult", missing="drop")
    if quick:
        adult = adult.iloc[:3000]
    forest, learner = _forest(min_leaf=100)

    def fit_transform() -> ForestFramework:
        tech = ForestFramework(class_column=schema.class_column, schema=schema, forest=forest, random_state=0)
        tech.fit_transform(adult)
        return tech

    tech, secs, rss = measure(fit_transform)
    rows.append(dict(benchmark=f"forest-framework fit+transform adult {len(adult):,}", seconds=secs, goal=15.0,
                     peak_rss_mb=rss, learner=learner, intersections=tech.report_.n_intersections))
    return rows
