"""Small tables and CART forests for the Forest Framework / Framework tests.

Numeric values lie on a coarse grid (multiples of 0.25, or whole numbers):
scikit-learn's tree compares float32-converted inputs with its thresholds, so a
value within float32 rounding of a threshold could be routed differently from
what the leaf's rule says. On the grid, thresholds are exact midpoints and no
original value is near one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from hypothesis import strategies as st

from ppdm.data.schema import Schema
from ppdm.rules.core import Rule
from ppdm.trees import CARTClassifier


def grid_table(seed: int, n: int, n_num: int, n_int: int, n_cat: int, n_class: int = 2) -> pd.DataFrame:
    """A table with float grid columns f*, integer columns i*, categorical c* and class ``y``
    that depends on the attributes (so trees have something to split on)."""
    rng = np.random.default_rng(seed)
    cols: dict[str, np.ndarray] = {}
    for j in range(n_num):
        cols[f"f{j}"] = rng.integers(-8, 24, n) * 0.25
    for j in range(n_int):
        cols[f"i{j}"] = rng.integers(0, 12, n)
    for j in range(n_cat):
        cols[f"c{j}"] = rng.choice(np.array(["a", "b", "c", "d"][: 2 + j]), n)
    df = pd.DataFrame(cols)
    score = rng.normal(0, 1, n)
    for c in df.columns:
        if c.startswith("c"):
            score += (df[c].to_numpy() == "a") * 1.5
        else:
            v = df[c].to_numpy(dtype=float)
            score += (v - v.mean()) / (v.std() + 1)
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, n_class + 1)[1:-1]))
    labels = np.array(["p", "q", "r"])[y]
    labels[0], labels[1] = "p", "q"  # at least two classes
    df["y"] = labels
    return df


def schema_of(df: pd.DataFrame) -> Schema:
    return Schema.infer(df, "y")


def cart_trees(df: pd.DataFrame, seed: int, n_trees: int, min_leaf: int, *, route_by_rules: bool = True) -> list:
    """CART trees grown on bootstrap samples and random attribute subsets of ``df``."""
    rng = np.random.default_rng(seed)
    attrs = [c for c in df.columns if c != "y"]
    trees = []
    for _ in range(n_trees):
        rows = rng.integers(0, len(df), len(df))
        k = int(rng.integers(1, len(attrs) + 1))
        cols = sorted(rng.choice(len(attrs), size=k, replace=False))
        sub = df.iloc[rows]
        tree = CARTClassifier(min_samples_leaf=min_leaf).fit(sub[[attrs[c] for c in cols]], sub["y"])
        trees.append(RuleRouted(tree) if route_by_rules else tree)
    return trees


@dataclass
class RuleRouted:
    """A fitted tree whose ``apply`` evaluates its leaf rules in float64 (exact), so a
    perturbed value within float32 rounding of a threshold is routed as its rule says."""

    tree: CARTClassifier

    @property
    def classes_(self) -> np.ndarray:
        return self.tree.classes_

    @property
    def feature_names_in_(self) -> np.ndarray:
        return self.tree.feature_names_in_

    def leaf_rules(self) -> dict[int, Rule]:
        return self.tree.leaf_rules()

    def __post_init__(self) -> None:
        self._rules = self.tree.leaf_rules()

    def apply(self, X: pd.DataFrame) -> np.ndarray:
        cols = {c: X[c].to_numpy() for c in self.tree.feature_names_in_}
        out = np.full(len(X), -1, dtype=np.int64)
        for lid, rule in self._rules.items():
            m = np.ones(len(X), dtype=bool)
            for cond in rule.conditions:
                v = cols[cond.attribute]
                if cond.op == "<=":
                    m &= v.astype(float) <= cond.value
                elif cond.op == ">":
                    m &= v.astype(float) > cond.value
                elif cond.op == "=":
                    m &= v == cond.value
                elif cond.op == "!=":
                    m &= v != cond.value
                else:
                    inside = np.isin(v.astype(object), list(cond.value))
                    m &= inside if cond.op == "in" else ~inside
            out[m] = lid
        assert (out >= 0).all(), "a record matched no leaf rule"
        return out


@st.composite
def tables(draw, max_rows: int = 40) -> tuple[pd.DataFrame, list]:
    """A grid table and 1–3 CART trees grown on it."""
    seed = draw(st.integers(0, 2**31 - 1))
    n = draw(st.integers(6, max_rows))
    n_num = draw(st.integers(0, 2))
    n_int = draw(st.integers(0 if n_num else 1, 2))
    n_cat = draw(st.integers(0, 2))
    n_class = draw(st.integers(2, 3))
    df = grid_table(seed, n, n_num, n_int, n_cat, n_class)
    trees = cart_trees(df, seed + 1, draw(st.integers(1, 3)), draw(st.integers(1, 5)))
    return df, trees
