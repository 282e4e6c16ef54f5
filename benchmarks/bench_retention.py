"""Rule Accuracy, RSD and RLD for 100 rules on 10⁶ rows (goal: ≤ 5 s on 2 cores).

x is a synthetic mixed table (4 numeric, 3 categorical attributes, binary class);
Ψx is 100 CART leaves grown on a sample of x (deep, small leaves, so rules are long
and share many conditions); z is x with 10 % uniform noise. The timed part is
:func:`ppdm.metrics.retention.rule_retention` (Ψx|x and Ψx|z) plus the three measures.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchmarks._util import measure
from ppdm.anonymize.noise import UniformNoise
from ppdm.data.schema import Schema
from ppdm.metrics.retention import (
    rule_accuracy_from,
    rule_label_distance_from,
    rule_retention,
    rule_support_distance_from,
)
from ppdm.rules.core import RuleSet
from ppdm.trees.cart import rules_from_cart


def make_table(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({
        "age": rng.integers(17, 90, n),
        "income": rng.lognormal(10, 1, n).round(2),
        "hours": rng.normal(40, 10, n).round(1),
        "score": rng.random(n),
        "job": pd.Series(rng.choice([f"job{i}" for i in range(12)], n), dtype="str"),
        "region": pd.Series(rng.choice(list("NSEWC"), n), dtype="str"),
        "edu": pd.Series(rng.choice(["hs", "ba", "ms", "phd", "none"], n), dtype="str"),
    })
    logit = (df["age"] - 45) / 10 + np.log(df["income"]) - 10 + (df["job"].isin(["job1", "job2"])) - df["score"]
    df["label"] = np.where(logit + rng.normal(0, 1, n) > 0, "yes", "no")
    return df


def run(quick: bool = False) -> list[dict]:
    n = 100_000 if quick else 1_000_000
    x = make_table(n)
    schema = Schema.infer(x, "label")
    sample = x.sample(40_000, random_state=0)
    rules = rules_from_cart(sample, schema, min_leaf_frac=0.004, max_depth=12)
    rules = RuleSet(rules.rules[:100], rules.class_column)
    z = UniformNoise(level=0.1, class_column="label", schema=schema, random_state=0).fit_transform(x)

    def work():
        rr = rule_retention(x, z, rules, "label")
        return rule_accuracy_from(rr), rule_support_distance_from(rr), rule_label_distance_from(rr)

    (ra, rsd, rld), secs, rss = measure(work)
    n_cond = sum(len(r.conditions) for r in rules)
    return [{
        "benchmark": "retention: RA + RSD + RLD",
        "rows": n,
        "rules": len(rules),
        "conditions": n_cond,
        "seconds": secs,
        "goal": 5.0 if not quick else "",
        "peak_rss_mb": rss,
        "rsd": round(rsd.value, 4),
    }]
