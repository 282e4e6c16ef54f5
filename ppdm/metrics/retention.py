"""Rule-retention measures: how far the anonymized table z still follows the rules Ψx of x.

Paper 000 §4 proposes measuring utility as Ψx|z — the rules found in the original
table x, evaluated on the anonymized table z — and §5 gives three implementations:

* **Rule Accuracy** (§5.1, Eq. 1): ``|α(Ψx|x) − α(Ψx|z)|``, where α(Ψx|d) is the
  fraction of records of d whose class Ψx predicts correctly.
* **Rule Support Distance, RSD** (§5.2, Eq. 2):
  ``Σ_ψ ||σψ(x)| − |σψ(z)|| / (|Ψx|·|x|)``, the mean change in rule support as a
  fraction of |x|.
* **Rule Label Distance, RLD** (§5.3, Eqs. 3–4): the mean over rules of the χ²
  histogram distance ``½ Σ_c (f(σψ(x),c) − f(σψ(z),c))² / (f(σψ(x),c) + f(σψ(z),c))``
  between the relative class frequencies of the records each rule covers in x and z;
  rules with fewer than 5 records in x are discounted (§5.3).

All three share one per-rule table (:func:`rule_retention`): the support of each rule
in x and z, its class counts in both, the χ² distance, the majority class in x and in
z and whether it flipped. Coverage is computed one rule at a time
(:meth:`ppdm.rules.RuleSet.iter_masks`), so memory stays O(n) however many rules there are.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from ppdm.errors import ParameterError, SchemaError
from ppdm.metrics.base import EvaluationContext, MeasureResult, register_measure
from ppdm.rules.core import RuleSet

ZeroSupport = Literal["one", "skip"]


# --------------------------------------------------------------------- core statistics
@dataclass
class RuleCounts:
    """What Ψx says about one table d: per-rule support and class counts, and α(Ψx|d).

    ``class_counts[i, k]`` is the number of records of σψi(d) whose class is ``classes[k]``.
    """

    support: np.ndarray
    class_counts: np.ndarray
    n_records: int
    n_correct: int
    n_uncovered: int
    n_overlapping: int

    @property
    def accuracy(self) -> float:
        """α(Ψx|d): correctly predicted records over all records of d (paper 000 §3)."""
        return self.n_correct / self.n_records if self.n_records else float("nan")


def count_rules(
    df: pd.DataFrame,
    rules: RuleSet,
    class_column: str,
    classes: pd.Index,
    *,
    default_class: Any = None,
) -> RuleCounts:
    """Support, class counts and the prediction accuracy α(Ψx|df) of ``rules`` on ``df``.

    How Ψx predicts (paper 000 §3 and §5.1): a record covered by a rule gets that rule's
    consequent c (for CART rules the majority class of σψ(x)). Rules from one tree
    partition the data, so each record is covered by exactly one rule. For rule sets
    that overlap, the rules are read as a decision list — the first covering rule in
    list order predicts. A record no rule covers gets no prediction and so counts as
    wrong (α divides by |d|, paper 000 §3), unless ``default_class`` is given, which
    then predicts it.
    """
    y = df[class_column]
    if y.isna().any():
        raise SchemaError(f"class column {class_column!r} has missing values")
    # factorize first: looking up a million values in an object index is slow
    codes, uniques = pd.factorize(y)
    ycodes = classes.get_indexer(pd.Index(uniques, dtype=object))[codes]
    if (ycodes < 0).any():  # pragma: no cover - classes is built from the data
        raise SchemaError(f"class column {class_column!r} holds a value outside {list(classes)}")
    k = len(classes)
    # few classes: one boolean mask per class makes the class counts of a rule k cheap ANDs
    class_masks = {j: ycodes == j for j in range(k)} if k <= 16 else {}
    few_classes = bool(class_masks)
    n = len(df)
    support = np.zeros(len(rules), dtype=np.int64)
    counts = np.zeros((len(rules), k), dtype=np.int64)
    pred_codes: np.ndarray | list[int] = classes.get_indexer(pd.Index([r.prediction for r in rules], dtype=object)) if len(rules) else []
    seen = np.zeros(n, dtype=bool)
    overlap = np.zeros(n, dtype=bool)
    n_correct = 0
    for i, m in rules.iter_masks(df):
        support[i] = np.count_nonzero(m)
        if support[i] == 0:
            continue
        if few_classes:
            counts[i, 1:] = [np.count_nonzero(m & class_masks[j]) for j in range(1, k)]
            counts[i, 0] = support[i] - counts[i, 1:].sum()
        else:
            counts[i] = np.bincount(ycodes[m], minlength=k)
        newly = m & ~seen
        overlap |= m & seen
        seen |= m
        p = int(pred_codes[i])
        if p >= 0:
            eq = class_masks.get(p)
            if eq is None:
                eq = class_masks[p] = ycodes == p
            n_correct += int(np.count_nonzero(newly & eq))
    n_uncovered = int(n - np.count_nonzero(seen))
    if default_class is not None and n_uncovered:
        d = classes.get_indexer(pd.Index([default_class], dtype=object))[0]
        if d >= 0:
            n_correct += int(np.count_nonzero(~seen & (ycodes == d)))
    return RuleCounts(support, counts, n, n_correct, n_uncovered, int(np.count_nonzero(overlap)))


def chi2_histogram_distance(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """χ² histogram distance ½ Σ_c (p_c − q_c)² / (p_c + q_c) (paper 000 Eq. 3, after Pele & Werman).

    ``p`` and ``q`` are relative frequencies (rows of the last axis sum to 1); classes
    absent from both (zero denominator) contribute nothing. Lies in [0, 1].
    """
    p = np.asarray(p, dtype=float)
    q = np.asarray(q, dtype=float)
    den = p + q
    num = (p - q) ** 2
    with np.errstate(invalid="ignore", divide="ignore"):
        terms = np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)
    return 0.5 * terms.sum(axis=-1)


def _majority(counts: np.ndarray, classes: pd.Index, prefer: list[Any]) -> list[Any]:
    """Majority class of each row of ``counts``; a tie goes to the rule's consequent when
    it is among the tied classes, else to the first tied class in ``classes`` order."""
    out: list[Any] = []
    for row, pref in zip(counts, prefer, strict=True):
        total = row.sum()
        if total == 0:
            out.append(None)
            continue
        best = np.flatnonzero(row == row.max())
        tied = [classes[int(j)] for j in best]
        out.append(pref if pref in tied else tied[0])
    return out


@dataclass
class RuleRetention:
    """Ψx evaluated on x and on z: everything the three retention measures need."""

    rules: RuleSet
    classes: pd.Index
    x: RuleCounts
    z: RuleCounts
    chi2: np.ndarray
    min_support: int
    zero_support: ZeroSupport
    per_rule: pd.DataFrame


def rule_retention(
    x: pd.DataFrame,
    z: pd.DataFrame,
    rules: RuleSet,
    class_column: str | None = None,
    *,
    min_support: int = 5,
    zero_support: ZeroSupport = "one",
    default_class: Any = None,
) -> RuleRetention:
    """Evaluate Ψx (``rules``) on x and on z and build the per-rule table.

    Parameters
    ----------
    x, z:
        Original and anonymized tables with the same columns (z need not have as many rows).
    rules:
        Ψx, e.g. from :func:`ppdm.trees.cart.rules_from_cart` or a rule file.
    class_column:
        The class attribute C; defaults to ``rules.class_column``.
    min_support:
        Rules with |σψ(x)| below this are left out of RLD (paper 000 §5.3 recommends 5).
    zero_support:
        A rule covering no record of z has no class distribution in z; ``"one"``
        (default) gives it the largest χ² distance, 1, ``"skip"`` leaves it out of RLD.
        Either way it is flagged in ``per_rule.zero_support_z``.
    default_class:
        Class predicted for records no rule covers (default: none, so they count as wrong).

    The per-rule table has one row per rule: ``rule`` (its text), ``consequent``,
    ``support_x``, ``support_z``, ``support_diff`` (z − x), ``n_x[c]``/``n_z[c]`` (class
    counts in σψ(x) and σψ(z) for every class c), ``chi2``, ``predicted_x``/``predicted_z``
    (majority class of σψ(x) and σψ(z)), ``flipped`` (the majority class changed or
    σψ(z) is empty), ``zero_support_z`` and ``discounted`` (|σψ(x)| < ``min_support``).
    """
    cls = class_column or rules.class_column
    if cls is None:
        raise SchemaError("rule retention needs the class column: pass class_column=... (CLI: --class)")
    if not isinstance(rules, RuleSet):
        raise ParameterError(f"rules must be a RuleSet, got {type(rules).__name__}")
    if len(rules) == 0:
        raise ParameterError("the rule set Ψx is empty; rule retention needs at least one rule")
    if isinstance(min_support, bool) or not isinstance(min_support, (int, np.integer)) or min_support < 0:
        raise ParameterError(f"min_support must be a whole number ≥ 0, got {min_support!r}")
    if zero_support not in ("one", "skip"):
        raise ParameterError(f"zero_support must be 'one' or 'skip', got {zero_support!r}")
    for name, d in (("x", x), ("z", z)):
        if not isinstance(d, pd.DataFrame):
            raise SchemaError(f"{name} must be a pandas DataFrame, got {type(d).__name__}")
        if cls not in d.columns:
            raise SchemaError(f"class column {cls!r} is not in {name}")
        if len(d) == 0:
            raise SchemaError(f"table {name} has no rows")
    values = pd.concat([x[cls], z[cls]], ignore_index=True).dropna().unique()
    classes = pd.Index(sorted(values, key=lambda v: (type(v).__name__, v)), dtype=object)
    cx = count_rules(x, rules, cls, classes, default_class=default_class)
    cz = count_rules(z, rules, cls, classes, default_class=default_class)
    return retention_from_counts(rules, classes, cx, cz, min_support=min_support, zero_support=zero_support)


def retention_from_counts(rules: RuleSet, classes: pd.Index, cx: RuleCounts, cz: RuleCounts, *,
                          min_support: int = 5, zero_support: ZeroSupport = "one") -> RuleRetention:
    """The per-rule table and the retention statistics from the rule counts of x and z."""
    sx = cx.support.astype(float)[:, None]
    sz = cz.support.astype(float)[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        fx = np.where(sx > 0, cx.class_counts / np.where(sx > 0, sx, 1), 0.0)
        fz = np.where(sz > 0, cz.class_counts / np.where(sz > 0, sz, 1), 0.0)
    chi2 = chi2_histogram_distance(fx, fz)
    empty_x = cx.support == 0
    empty_z = cz.support == 0
    # one side without records: the distributions share nothing, the largest distance
    chi2 = np.where(empty_x ^ empty_z, 1.0, np.where(empty_x & empty_z, 0.0, chi2))

    consequents = [r.prediction for r in rules]
    pred_x = _majority(cx.class_counts, classes, consequents)
    pred_z = _majority(cz.class_counts, classes, pred_x)
    table: dict[str, Any] = {
        "rule": [r.to_text(counts=False).rsplit(" -> ", 1)[0] for r in rules],
        "consequent": pd.Series(consequents, dtype=object),
        "support_x": cx.support,
        "support_z": cz.support,
        "support_diff": cz.support - cx.support,
    }
    for j, c in enumerate(classes):
        table[f"n_x[{c}]"] = cx.class_counts[:, j]
    for j, c in enumerate(classes):
        table[f"n_z[{c}]"] = cz.class_counts[:, j]
    table["chi2"] = chi2
    # object columns keep class values as they are and an empty rule's prediction as None
    table["predicted_x"] = pd.Series(pred_x, dtype=object)
    table["predicted_z"] = pd.Series(pred_z, dtype=object)
    table["flipped"] = [bool(a != b) for a, b in zip(pred_x, pred_z, strict=True)]
    table["zero_support_z"] = empty_z
    table["discounted"] = cx.support < min_support
    per_rule = pd.DataFrame(table)
    per_rule.index.name = "rule_index"
    return RuleRetention(rules, classes, cx, cz, chi2, int(min_support), zero_support, per_rule)


def add_counts(parts: list[RuleCounts]) -> RuleCounts:
    """The rule counts of a table from those of its partitions (every field is a sum; rules
    read as a decision list give the same predictions partition by partition)."""
    return RuleCounts(
        support=np.sum([p.support for p in parts], axis=0), class_counts=np.sum([p.class_counts for p in parts], axis=0),
        n_records=sum(p.n_records for p in parts), n_correct=sum(p.n_correct for p in parts),
        n_uncovered=sum(p.n_uncovered for p in parts), n_overlapping=sum(p.n_overlapping for p in parts),
    )


def rule_retention_dask(x: Any, z: Any, rules: RuleSet, class_column: str | None = None, *, min_support: int = 5,
                        zero_support: ZeroSupport = "one", default_class: Any = None) -> RuleRetention:
    """:func:`rule_retention` of two Dask DataFrames (partitioned any way): the classes are
    collected first, then every partition of x and of z is counted and the counts added. Exact."""
    from ppdm.data.partitions import read_partition, run_partitions

    cls = class_column or rules.class_column
    if cls is None:
        raise SchemaError("rule retention needs the class column: pass class_column=... (CLI: --class)")
    if len(rules) == 0:
        raise ParameterError("the rule set Ψx is empty; rule retention needs at least one rule")
    values = set()
    for d in (x, z):
        for part in run_partitions(lambda i, d=d: set(read_partition(d, i)[cls].dropna().unique()), d.npartitions,
                                   name="ppdm-classes"):
            values |= part
    classes = pd.Index(sorted(values, key=lambda v: (type(v).__name__, v)), dtype=object)

    def counts(d: Any) -> RuleCounts:
        parts = run_partitions(lambda i: count_rules(read_partition(d, i), rules, cls, classes,
                                                     default_class=default_class), d.npartitions, name="ppdm-rules")
        return add_counts([p for p in parts if p.n_records])

    return retention_from_counts(rules, classes, counts(x), counts(z), min_support=min_support,
                                 zero_support=zero_support)


# --------------------------------------------------------------------------- results
@dataclass
class RuleAccuracyResult(MeasureResult):
    """Rule Accuracy (paper 000 §5.1, Eq. 1): ``value = |α(Ψx|x) − α(Ψx|z)|``.

    ``accuracy_x``/``accuracy_z`` are α(Ψx|x) and α(Ψx|z); the paper's Figure 4 plots the
    "rule accuracy error" 1 − α(Ψx|z) (``error_z``).
    """

    accuracy_x: float = float("nan")
    accuracy_z: float = float("nan")
    error_z: float = float("nan")
    n_rules: int = 0
    n_uncovered_x: int = 0
    n_uncovered_z: int = 0
    n_overlapping_x: int = 0
    n_overlapping_z: int = 0
    per_rule: pd.DataFrame = field(default_factory=pd.DataFrame)


@dataclass
class RuleSupportDistanceResult(MeasureResult):
    """Rule Support Distance (paper 000 §5.2, Eq. 2):
    ``value = Σ_ψ ||σψ(x)| − |σψ(z)|| / (|Ψx|·|x|)``."""

    n_rules: int = 0
    n_records: int = 0
    total_support_change: int = 0
    per_rule: pd.DataFrame = field(default_factory=pd.DataFrame)


@dataclass
class RuleLabelDistanceResult(MeasureResult):
    """Rule Label Distance (paper 000 §5.3, Eq. 4): the mean χ² histogram distance of the
    class frequencies in σψ(x) and σψ(z) over the rules that are not discounted.

    ``discounted`` lists the rules left out because |σψ(x)| < ``min_support``;
    ``zero_support_rules`` those covering no record of z (distance 1, or left out when
    ``zero_support="skip"``). ``value`` is NaN when no rule is left.
    """

    n_rules: int = 0
    n_used: int = 0
    min_support: int = 5
    zero_support: str = "one"
    discounted: list[int] = field(default_factory=list)
    zero_support_rules: list[int] = field(default_factory=list)
    per_rule: pd.DataFrame = field(default_factory=pd.DataFrame)


def _rr(x, z, rules, class_column, min_support=5, zero_support="one", default_class=None) -> RuleRetention:
    if isinstance(x, RuleRetention):
        return x
    return rule_retention(x, z, rules, class_column, min_support=min_support, zero_support=zero_support,
                          default_class=default_class)


def rule_accuracy_from(rr: RuleRetention) -> RuleAccuracyResult:
    """Rule Accuracy from an already computed :func:`rule_retention`."""
    ax, az = rr.x.accuracy, rr.z.accuracy
    return RuleAccuracyResult(
        value=float(abs(ax - az)), accuracy_x=float(ax), accuracy_z=float(az), error_z=float(1 - az),
        n_rules=len(rr.rules), n_uncovered_x=rr.x.n_uncovered, n_uncovered_z=rr.z.n_uncovered,
        n_overlapping_x=rr.x.n_overlapping, n_overlapping_z=rr.z.n_overlapping, per_rule=rr.per_rule,
    )


def rule_support_distance_from(rr: RuleRetention) -> RuleSupportDistanceResult:
    """RSD from an already computed :func:`rule_retention`."""
    total = int(np.abs(rr.x.support - rr.z.support).sum())
    value = total / (len(rr.rules) * rr.x.n_records)
    return RuleSupportDistanceResult(
        value=float(value), n_rules=len(rr.rules), n_records=rr.x.n_records, total_support_change=total,
        per_rule=rr.per_rule,
    )


def rule_label_distance_from(rr: RuleRetention) -> RuleLabelDistanceResult:
    """RLD from an already computed :func:`rule_retention`."""
    discounted = rr.x.support < rr.min_support
    zero_z = rr.z.support == 0
    use = ~discounted
    if rr.zero_support == "skip":
        use &= ~zero_z
    value = float(rr.chi2[use].mean()) if use.any() else float("nan")
    return RuleLabelDistanceResult(
        value=value, n_rules=len(rr.rules), n_used=int(use.sum()), min_support=rr.min_support,
        zero_support=rr.zero_support, discounted=[int(i) for i in np.flatnonzero(discounted)],
        zero_support_rules=[int(i) for i in np.flatnonzero(zero_z)], per_rule=rr.per_rule,
    )


def rule_accuracy(
    x: pd.DataFrame, z: pd.DataFrame, rules: RuleSet, class_column: str | None = None, *,
    default_class: Any = None,
) -> RuleAccuracyResult:
    """Rule Accuracy ``|α(Ψx|x) − α(Ψx|z)|`` (paper 000 §5.1, Eq. 1).

    α(Ψx|d) is the fraction of the records of d whose class Ψx predicts (paper 000 §3):
    a covered record gets the consequent of the rule covering it (rules from one tree
    partition the records; overlapping rules act as a decision list, the first covering
    rule predicting); a record no rule covers counts as wrong unless ``default_class``
    names a class to predict for it. Lies in [0, 1]; 0 when z equals x.
    """
    return rule_accuracy_from(_rr(x, z, rules, class_column, default_class=default_class))


def rule_support_distance(
    x: pd.DataFrame, z: pd.DataFrame, rules: RuleSet, class_column: str | None = None
) -> RuleSupportDistanceResult:
    """RSD ``Σ_ψ ||σψ(x)| − |σψ(z)|| / (|Ψx|·|x|)`` (paper 000 §5.2, Eq. 2).

    Every rule counts equally and whether it predicts correctly is irrelevant. In [0, 1]
    whenever |z| ≤ |x| (always for an anonymized copy of x); 0 when z equals x.
    """
    return rule_support_distance_from(_rr(x, z, rules, class_column))


def rule_label_distance(
    x: pd.DataFrame, z: pd.DataFrame, rules: RuleSet, class_column: str | None = None, *,
    min_support: int = 5, zero_support: ZeroSupport = "one",
) -> RuleLabelDistanceResult:
    """RLD: mean over rules of the χ² histogram distance between the relative class
    frequencies of σψ(x) and σψ(z) (paper 000 §5.3, Eqs. 3–4).

    Rules with |σψ(x)| < ``min_support`` (5, as the paper recommends, since the χ²
    distance is unstable on fewer records) are discounted and listed in the result. A
    rule covering nothing in z gets distance 1 (``zero_support="one"``) or is left out
    (``"skip"``); it is always flagged. In [0, 1]; 0 when z equals x.
    """
    return rule_label_distance_from(
        _rr(x, z, rules, class_column, min_support=min_support, zero_support=zero_support)
    )


# ----------------------------------------------------------------- CLI registration
def _int_option(ctx: EvaluationContext, name: str, default: int) -> int:
    v = ctx.options.get(name, default)
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise ParameterError(f"measure option {name} must be a whole number, got {v!r}")
    return int(v)


#: the options :func:`retention_from_context` reads, shared by the three rule measures (Ψx itself is
#: found with the evaluation-wide options rule_rows, min_leaf_frac and max_depth)
RETENTION_OPTIONS = ("min_support", "zero_support", "default_class")


def retention_from_context(ctx: EvaluationContext) -> RuleRetention:
    """Ψx|x and Ψx|z computed once per context and shared by the three measures.

    Options read from ``ctx.options``: ``min_support`` (5), ``zero_support`` ("one"),
    ``default_class`` (None).
    """
    key = (
        "rule_retention",
        _int_option(ctx, "min_support", 5),
        ctx.options.get("zero_support", "one"),
        ctx.options.get("default_class"),
    )
    if key not in ctx.cache:
        from ppdm.metrics._common import is_dask

        cls = ctx.schema.require_class()
        fn = rule_retention_dask if is_dask(ctx.x) or is_dask(ctx.z) else rule_retention
        ctx.cache[key] = fn(
            ctx.x, ctx.z, ctx.get_rules(), cls, min_support=key[1], zero_support=key[2], default_class=key[3]
        )
    return ctx.cache[key]


@register_measure(
    "rule_accuracy", kind="utility", default=True, out_of_core=True, options=RETENTION_OPTIONS,
    description="Rule Accuracy |α(Ψx|x) − α(Ψx|z)|: change in how well x's rules predict (paper 000 §5.1)",
    direction="lower", value_range=(0.0, 1.0), threshold=0.05,
    meaning="0 means the rules found in x predict the class on z exactly as well as on x; 0.05 means their "
    "accuracy moved by 5 percentage points.",
)
def _rule_accuracy_measure(ctx: EvaluationContext) -> RuleAccuracyResult:
    return rule_accuracy_from(retention_from_context(ctx))


@register_measure(
    "rule_support_distance", kind="utility", default=True, out_of_core=True, options=RETENTION_OPTIONS,
    description="RSD: mean change in rule support, as a fraction of |x| (paper 000 §5.2)",
    direction="lower", value_range=(0.0, None), threshold=0.01,
    meaning="0 means every rule of x covers as many records in z as in x; 0.01 means a rule gains or loses on "
    "average 1 % of the records of x.",
)
def _rule_support_distance_measure(ctx: EvaluationContext) -> RuleSupportDistanceResult:
    return rule_support_distance_from(retention_from_context(ctx))


@register_measure(
    "rule_label_distance", kind="utility", default=True, out_of_core=True, options=RETENTION_OPTIONS,
    description="RLD: mean χ² distance of the class frequencies each rule covers (paper 000 §5.3)",
    direction="lower", value_range=(0.0, 1.0), threshold=0.05,
    meaning="0 means the records each rule covers have the same class mix in z as in x; 1 means the mixes share "
    "nothing.",
)
def _rule_label_distance_measure(ctx: EvaluationContext) -> RuleLabelDistanceResult:
    return rule_label_distance_from(retention_from_context(ctx))
