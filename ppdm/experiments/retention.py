"""Rule retention as noise grows (paper 000 §8.2, Figure 4) on one dataset.

Ψx is found once on the whole table x by CART (minimum leaf 0.02·|x|, maximum depth
12, paper 000 §7). For every noise level, ``repetitions`` anonymized tables z are
drawn with a toy noise technique of §7.1 (different seeds) and Rule Accuracy, RSD
and RLD of Ψx|z are computed; the summary gives their mean and standard deviation
per level. (The paper additionally cross-validates; rule retention needs no test
table, so here each repetition is simply a fresh z of the same x.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ppdm.anonymize.registry import make_technique
from ppdm.data.schema import Schema
from ppdm.errors import ParameterError
from ppdm.metrics.retention import (
    rule_accuracy_from,
    rule_label_distance_from,
    rule_retention,
    rule_support_distance_from,
)
from ppdm.rules.core import RuleSet
from ppdm.trees.cart import rules_from_cart

MEASURES = ("rule_accuracy", "rule_support_distance", "rule_label_distance", "rule_accuracy_error")


@dataclass
class RetentionExperiment:
    """Per-run results (``runs``), mean/std per noise level (``summary``) and the rules used."""

    runs: pd.DataFrame
    summary: pd.DataFrame
    rules: RuleSet
    n_records: int
    noise: str

    def markdown(self) -> str:
        """The summary as a Markdown table (means ± standard deviations)."""
        head = ("| noise level | " + " | ".join(MEASURES) + " | rules flipped |\n|---|"
                + "---|" * (len(MEASURES) + 1) + "\n")
        lines = []
        for level, row in self.summary.iterrows():
            cells = [f"{row[(m, 'mean')]:.4f} ± {row[(m, 'std')]:.4f}" for m in MEASURES]
            cells.append(f"{row[('n_flipped', 'mean')]:.1f}")
            lines.append(f"| {level:.0%} | " + " | ".join(cells) + " |")
        return head + "\n".join(lines) + "\n"

    def is_monotone(self, measures: Sequence[str] = MEASURES[:3]) -> bool:
        """Whether every mean in ``measures`` rises strictly from one level to the next."""
        return all(self.summary[(m, "mean")].is_monotonic_increasing and self.summary[(m, "mean")].is_unique
                   for m in measures)

    def save(self, out_dir: str | Path) -> list[Path]:
        """Write runs.csv, summary.csv, summary.md and rules.txt into ``out_dir`` (created if needed)."""
        from ppdm.data.io import atomic_write_text, write_table

        d = Path(out_dir)
        d.mkdir(parents=True, exist_ok=True)
        flat = self.summary.copy()
        flat.columns = [f"{m}_{s}" for m, s in flat.columns]  # type: ignore[str-unpack]  # pandas-stubs: a MultiIndex holds tuples
        paths = [
            write_table(self.runs, d / "runs.csv"),
            write_table(flat.reset_index(), d / "summary.csv"),
            atomic_write_text(d / "summary.md", self.markdown()),
        ]
        self.rules.save(d / "rules.txt")
        return [*paths, d / "rules.txt"]


def run_retention_experiment(
    x: pd.DataFrame,
    schema: Schema,
    *,
    noise: str = "uniform-noise",
    levels: Sequence[float] = (0.0, 0.1, 0.2, 0.3),
    repetitions: int = 10,
    seed: int = 0,
    rules: RuleSet | None = None,
    min_leaf_frac: float = 0.02,
    max_depth: int | None = 12,
    min_support: int = 5,
    progress: Callable[[], None] | None = None,
) -> RetentionExperiment:
    """Rule Accuracy, RSD and RLD of Ψx on ``repetitions`` noisy copies of x per level.

    Repetition r at every level uses seed ``seed + r``. ``progress`` is called once per run.
    """
    cls = schema.require_class()
    if isinstance(repetitions, bool) or not isinstance(repetitions, int) or repetitions < 1:
        raise ParameterError(f"repetitions must be a whole number ≥ 1, got {repetitions!r}")
    if not levels:
        raise ParameterError("give at least one noise level")
    if rules is None:
        rules = rules_from_cart(x, schema, min_leaf_frac=min_leaf_frac, max_depth=max_depth, random_state=seed)
    rows = []
    for level in levels:
        for r in range(repetitions):
            tech = make_technique(noise, class_column=cls, schema=schema, random_state=seed + r,
                                  params={"level": level})
            z = tech.fit_transform(x)
            rr = rule_retention(x, z, rules, cls, min_support=min_support)
            ra = rule_accuracy_from(rr)
            rows.append({
                "noise": noise, "level": float(level), "repetition": r, "seed": seed + r,
                "rule_accuracy": ra.value,
                "rule_support_distance": rule_support_distance_from(rr).value,
                "rule_label_distance": rule_label_distance_from(rr).value,
                "rule_accuracy_error": ra.error_z,
                "n_flipped": int(rr.per_rule["flipped"].sum()),
            })
            if progress is not None:
                progress()
    runs = pd.DataFrame(rows)
    summary = runs.groupby("level")[[*MEASURES, "n_flipped"]].agg(["mean", "std"])
    return RetentionExperiment(runs, summary, rules, len(x), noise)
