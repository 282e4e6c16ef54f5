"""Plausibility of released records: combinations of values the original never holds.

A release can keep every column's distribution and still publish records no analyst would
believe — deliveries coded on men, obstetric codes at age 8, Medicare patients aged 12. A
technique that perturbs columns one at a time (noise, random substitution, PRAM, a forest's
leaf-wise noise) makes them; so does a synthesizer whose model ignores a dependency. Data
editing calls such records *edit failures* (Fellegi & Holt 1976, JASA 71(353), §2: an edit
declares a combination of values impossible). Two measures count them, both without a record
pairing, so they judge shuffled and synthetic releases alike:

* :func:`implausible_combinations` discovers the combinations from x itself: (a) a pair of
  categories of two categorical attributes that no record of x holds although x's margins
  expect at least ``min_expected`` records in it (a *structural zero*: Bishop, Fienberg &
  Holland 1975, *Discrete Multivariate Analysis*, §5.1), and (b) a number outside the range
  [min, max] that its category has in x, for categories with at least ``min_support`` records
  in x. Both are 0 for x itself by construction (x holds every pair it holds, and every value
  of a category lies in that category's range), so z's share needs no baseline.
* :func:`edit_rule_violations` counts the records that break rules the owner declares in the
  schema (``edit_rules``; syntax in :mod:`ppdm.data.edit_rules`), in x and in z: x's own
  violations (data errors) are the baseline, and the headline is z's share beyond it.

Reports name the worst combinations by column names, category labels and counts of released
records; never a record, and never x's range bounds (one person's value each): a range is
described by how many released values fall below and above it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from ppdm.data.edit_rules import Comparison, EditRule, parse_edit_rules
from ppdm.data.types import numeric_values
from ppdm.errors import MeasureNotApplicable, ParameterError
from ppdm.metrics.base import EvaluationContext, MeasureResult, register_measure
from ppdm.metrics.closeness import compared_attributes, context_attributes
from ppdm.metrics.keyvar import _opt

#: records of x a category needs before its range of a numeric attribute is trusted
DEFAULT_MIN_SUPPORT = 20
#: records x's margins must expect in a pair of categories before its absence from x counts
DEFAULT_MIN_EXPECTED = 5.0
#: rows of the worst-combinations tables
DEFAULT_TOP = 10
#: a pair table of at most this many cells is a dense lookup; a larger one is searched sorted
_DENSE_CELLS = 1 << 22


@dataclass
class PlausibilityOptions:
    """How :func:`implausible_combinations` decides what x does not hold.

    ``min_support``: a category defines a range of a numeric attribute only when at least this
    many records of x hold it with a value (a range of 3 records says little of what is
    possible). ``min_expected``: a pair of categories absent from x counts only when x's margins
    expect at least this many records in it (n_a · n_b / n; an absent pair of two rare
    categories is chance, not structure). ``top``: rows of the worst-combinations tables.
    """

    min_support: int = DEFAULT_MIN_SUPPORT
    min_expected: float = DEFAULT_MIN_EXPECTED
    top: int = DEFAULT_TOP

    def __post_init__(self) -> None:
        try:
            ms = float(self.min_support)
            me = float(self.min_expected)
            top = float(self.top)
        except (TypeError, ValueError):
            raise ParameterError("min_support, min_expected and top must be numbers") from None
        if not (ms >= 1 and ms == int(ms)):
            raise ParameterError(f"min_support must be a whole number of records ≥ 1, got {self.min_support!r}")
        if not (me > 0 and np.isfinite(me)):
            raise ParameterError(f"min_expected must be a positive number of records, got {self.min_expected!r}")
        if not (top >= 1 and top == int(top)):
            raise ParameterError(f"top must be a whole number ≥ 1, got {self.top!r}")
        self.min_support, self.min_expected, self.top = int(ms), me, int(top)


# ------------------------------------------------------------------ encoding
def _label(v: Any) -> str:
    """A category as text: whole numbers without ``.0`` (a code 3 read as 3.0 is still "3")."""
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return str(int(v))
    return str(v.item() if isinstance(v, np.generic) else v)


def _category_codes(x: pd.DataFrame, z: pd.DataFrame,
                    columns: list[str]) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """Per column, codes of the categories over both tables (−1 missing), and the labels by code."""
    nx = len(x)
    cx = np.empty((nx, len(columns)), dtype=np.int64)
    cz = np.empty((len(z), len(columns)), dtype=np.int64)
    labels = []
    for a, c in enumerate(columns):
        if x[c].dtype == z[c].dtype:
            both = pd.concat([x[c], z[c]], ignore_index=True)  # factorized in its own dtype: fast for text
        else:
            both = pd.concat([x[c].astype(object), z[c].astype(object)], ignore_index=True)
            both = both.where(both.notna(), None)
        codes, uniques = pd.factorize(both)
        cx[:, a], cz[:, a] = codes[:nx], codes[nx:]
        labels.append(np.asarray(uniques, dtype=object))
    return cx, cz, labels


# ------------------------------------------------------------------ implausible combinations
@dataclass
class ImplausibleCombinationsResult(MeasureResult):
    """Share of released records holding a combination of values x does not hold; lower is better.

    ``pairs`` lists the worst absent pairs of categories (columns, labels, the records x's
    margins expect there, released records holding it); ``ranges`` the worst category × numeric
    attribute ranges (released values below and above x's range for that category).
    """

    implausible: int = 0  # released records with at least one implausible combination
    records: int = 0  # released records
    pair_share: float = 0.0  # share of released records holding an absent pair of categories
    range_share: float = 0.0  # share of released records with a number outside its category's range
    column_pairs: int = 0  # pairs of categorical attributes checked
    ranges_checked: int = 0  # (category, numeric attribute) ranges with enough support in x
    min_support: int = DEFAULT_MIN_SUPPORT
    min_expected: float = DEFAULT_MIN_EXPECTED
    worst: str = ""  # the worst combination in words (labels and counts; the verdict names it)
    pairs: pd.DataFrame = field(default_factory=pd.DataFrame)
    ranges: pd.DataFrame = field(default_factory=pd.DataFrame)
    flags: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))  # per released record

    record_level: ClassVar[tuple[str, ...]] = ("flags",)


def _absent_pairs(cx: np.ndarray, cz: np.ndarray, k: list[int], cat: list[str], labels: list[np.ndarray],
                  opts: PlausibilityOptions) -> tuple[np.ndarray, list[tuple], int]:
    """(a): per released record, whether it holds a structural zero of x; the zeros it hits, counted."""
    nz = len(cz)
    flag = np.zeros(nz, dtype=bool)
    rows: list[tuple] = []
    n_pairs = 0
    complete_x = np.asarray((cx >= 0).all(axis=0))  # numpy's stubs: all(axis=0) may be a scalar
    for i in range(len(cat)):
        for j in range(i + 1, len(cat)):
            n_pairs += 1
            cells = k[i] * k[j]
            xi, xj = cx[:, i], cx[:, j]
            if not (complete_x[i] and complete_x[j]):
                both = (xi >= 0) & (xj >= 0)
                xi, xj = xi[both], xj[both]
            n = len(xi)
            if n == 0:
                continue
            # margins over the records holding both values: the expected count of a pair under independence
            ni = np.bincount(xi, minlength=k[i]).astype(float)
            nj = np.bincount(xj, minlength=k[j]).astype(float)
            # categories of A that expect enough records beside B's most common one: none, nothing to find
            rows_i = np.flatnonzero(ni >= opts.min_expected * n / max(nj.max(), 1.0))
            if rows_i.size == 0:
                continue
            if cells <= _DENSE_CELLS:
                seen = np.bincount(xi * k[j] + xj, minlength=cells).reshape(k[i], k[j]) > 0
                zero = ~seen & (np.outer(ni, nj) >= opts.min_expected * n)
            else:  # huge pair tables: only the rows of categories that can expect enough records
                zero = np.zeros((k[i], k[j]), dtype=bool)
                seen_codes = np.unique(xi * k[j] + xj)
                for a in rows_i.tolist():
                    cand = np.flatnonzero(ni[a] * nj >= opts.min_expected * n)
                    zero[a, cand] = ~np.isin(a * k[j] + cand, seen_codes)
            if not zero.any():
                continue
            zi, zj = cz[:, i], cz[:, j]
            valid = (zi >= 0) & (zj >= 0)
            kz = np.where(valid, zi * k[j] + zj, 0)
            hit = valid & zero.ravel()[kz]
            if not hit.any():
                continue
            flag |= hit
            codes, counts = np.unique(kz[hit], return_counts=True)
            for cell, cnt in zip(codes.tolist(), counts.tolist(), strict=True):
                a, b = divmod(cell, k[j])
                rows.append((cat[i], _label(labels[i][a]), cat[j], _label(labels[j][b]),
                             float(ni[a] * nj[b] / n), int(cnt)))
    return flag, rows, n_pairs


def _group_ranges(v: np.ndarray, nan: np.ndarray, codes: np.ndarray,
                  k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per numeric attribute (rows of ``v``) and category code (0..k−1; −1 missing, left out): the
    smallest and largest value (+inf / −inf for none) and the number of values."""
    p = v.shape[0]
    lo = np.full((p, k), np.inf)
    hi = np.full((p, k), -np.inf)
    cnt = np.zeros((p, k), dtype=np.int64)
    known = codes >= 0
    every = known.all()
    for a in range(p):
        use = known & ~nan[a] if nan[a].any() or not every else None
        key, val = (codes, v[a]) if use is None else (codes[use], v[a][use])
        np.minimum.at(lo[a], key, val)  # unbuffered per-group minimum, no sort
        np.maximum.at(hi[a], key, val)
        cnt[a] = np.bincount(key, minlength=k)
    return lo, hi, cnt


def _out_of_range(x: pd.DataFrame, z: pd.DataFrame, cx: np.ndarray, cz: np.ndarray, k: list[int], cat: list[str],
                  labels: list[np.ndarray], num: list[str],
                  opts: PlausibilityOptions) -> tuple[np.ndarray, list[tuple], int]:
    """(b): per released record, whether a number lies outside its category's range in x; counts."""
    nz = len(cz)
    flag = np.zeros(nz, dtype=bool)
    rows: list[tuple] = []
    if not num:
        return flag, rows, 0
    # attributes × records, so each attribute's values are contiguous for the grouped reductions
    vx = np.stack([numeric_values(x[c]) for c in num])
    vz = np.stack([numeric_values(z[c]) for c in num])
    nan_x, nan_z = np.isnan(vx), np.isnan(vz)
    n_ranges = 0
    for i, c in enumerate(cat):
        lo, hi, cnt = _group_ranges(vx, nan_x, cx[:, i], k[i])
        ok = cnt >= opts.min_support  # (numeric attributes, categories)
        n_ranges += int(ok.sum())
        lo[~ok], hi[~ok] = -np.inf, np.inf  # too few records: no range to leave
        # released values by category first: a record is only compared when its group leaves a range
        zlo, zhi, _ = _group_ranges(vz, nan_z, cz[:, i], k[i])
        bad = np.flatnonzero(((zlo < lo) | (zhi > hi)).any(axis=1))
        if bad.size == 0:
            continue
        zc = cz[:, i]
        zc_v = np.where(zc >= 0, zc, 0)
        for a_num in bad.tolist():
            w = vz[a_num]
            with np.errstate(invalid="ignore"):  # a missing value compares False
                below = (w < lo[a_num, zc_v]) & (zc >= 0)
                above = (w > hi[a_num, zc_v]) & (zc >= 0)
            flag |= below | above
            nb = np.bincount(zc[below], minlength=k[i])
            na = np.bincount(zc[above], minlength=k[i])
            for a in np.flatnonzero(nb + na).tolist():
                rows.append((c, _label(labels[i][a]), num[a_num], int(cnt[a_num, a]), int(nb[a]), int(na[a])))
    return flag, rows, n_ranges


def implausible_combinations(x: pd.DataFrame, z: pd.DataFrame, numeric: list[str] | None = None,
                             categorical: list[str] | None = None,
                             options: PlausibilityOptions | None = None) -> ImplausibleCombinationsResult:
    """The share of released records that hold a combination of values x never holds.

    A released record is *implausible* when (a) for some two categorical attributes A and B it
    holds categories (a, b) that no record of x holds while x's margins expect at least
    ``min_expected`` records there (n_a · n_b / n ≥ min_expected, margins counted over x's
    records with both values), or (b) for some categorical A and numeric V its value of V lies
    outside [min, max] of V over x's records of its category a, for categories with at least
    ``min_support`` such records. Categories x never holds (a synthesizer's "other", a
    recoding's labels when x is not recoded alike) have no support and are not judged here.
    Missing cells take part in no combination. x itself scores 0 by construction, so the value
    needs no baseline; no record pairing is used (shuffled and synthetic releases alike).

    Columns default to every column both tables share (numbers as numeric, the rest
    categorical; :func:`ppdm.metrics.closeness.compared_attributes`). Cost: one pass over the
    records per pair of categorical attributes (each pair of categories one integer code looked
    up in x's codes, never a record × record table) and per categorical × numeric attribute
    (per-category minima and maxima by sorting x once per categorical attribute).
    """
    opts = options if options is not None else PlausibilityOptions()
    num, cat = compared_attributes(x, z, numeric, categorical, measure="implausible_combinations")
    if len(z) == 0:
        raise MeasureNotApplicable("implausible_combinations: the released table has no rows")
    if len(cat) == 0:
        raise MeasureNotApplicable("implausible_combinations needs a categorical attribute (a category's pairs "
                                   "and ranges are what it checks)")
    cx, cz, labels = _category_codes(x, z, cat)
    nz = len(z)
    k = [len(u) for u in labels]
    pair_flag, pair_rows, n_pairs = _absent_pairs(cx, cz, k, cat, labels, opts)
    range_flag, range_rows, n_ranges = _out_of_range(x, z, cx, cz, k, cat, labels, num, opts)
    flags = pair_flag | range_flag
    pairs = pd.DataFrame(pair_rows, columns=["column_a", "value_a", "column_b", "value_b", "expected_in_x",
                                             "released"])
    pairs = pairs.sort_values(["released", "expected_in_x"], ascending=False, kind="stable").head(opts.top)
    ranges = pd.DataFrame(range_rows, columns=["column", "value", "numeric", "support_in_x", "released_below",
                                               "released_above"])
    ranges["released"] = ranges["released_below"] + ranges["released_above"]
    ranges = ranges.sort_values("released", ascending=False, kind="stable").head(opts.top)
    return ImplausibleCombinationsResult(
        value=float(flags.mean()), implausible=int(flags.sum()), records=nz, pair_share=float(pair_flag.mean()),
        range_share=float(range_flag.mean()), column_pairs=n_pairs, ranges_checked=n_ranges,
        min_support=opts.min_support, min_expected=opts.min_expected,
        worst=_worst_text(pairs.reset_index(drop=True), ranges.reset_index(drop=True)),
        pairs=pairs.reset_index(drop=True), ranges=ranges.reset_index(drop=True), flags=flags)


def _worst_text(pairs: pd.DataFrame, ranges: pd.DataFrame, most: int = 1) -> str:
    """The ``most`` combinations held by the most released records, in words ("; " between them)."""
    items: list[tuple[int, str]] = []
    r: Any  # a row of labels, counts and numbers; pandas-stubs types each field as any scalar
    for r in pairs.itertuples(index=False):
        items.append((int(r.released), f"{r.column_a}={r.value_a} with {r.column_b}={r.value_b}: {r.released} "
                                       f"released records, none in x ({r.expected_in_x:.0f} expected)"))
    for r in ranges.itertuples(index=False):
        side = ", ".join(p for p in (f"{r.released_below} below" if r.released_below else "",
                                        f"{r.released_above} above" if r.released_above else "") if p)
        items.append((int(r.released), f"{r.numeric} for {r.column}={r.value}: {side} its range in x"))
    items.sort(key=lambda t: -t[0])
    return "; ".join(t for _, t in items[:most])


# ------------------------------------------------------------------ declared edit rules
@dataclass
class EditRuleResult(MeasureResult):
    """Share of released records breaking a declared edit rule, beyond x's own share; lower is better.

    ``rules`` has one row per rule: its text, the records of x and of z violating it and their
    shares, z's excess, and why a rule could not be evaluated on these tables (``note``).
    """

    z_share: float = 0.0  # share of released records violating at least one evaluated rule
    x_share: float = 0.0  # the same share in x (data errors the owner already has)
    z_violations: int = 0
    x_violations: int = 0
    evaluated: int = 0  # rules evaluated on both tables
    worst: str = ""  # the rule with the largest excess, in words
    rules: pd.DataFrame = field(default_factory=pd.DataFrame)
    flags: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))  # per released record

    record_level: ClassVar[tuple[str, ...]] = ("flags",)


class _NotEvaluable(Exception):
    """A rule's comparison cannot be read on this table (an order test of a column of labels)."""


def _as_numbers(s: pd.Series) -> np.ndarray | None:
    """The column as numbers, when every value is one (codes read as text included); else None."""
    if pd.api.types.is_bool_dtype(s):
        return None
    if pd.api.types.is_numeric_dtype(s) or pd.api.types.is_datetime64_any_dtype(s):
        return numeric_values(s)
    conv = pd.to_numeric(s.astype(object).where(s.notna(), None), errors="coerce")
    if (conv.isna() & s.notna()).any():
        return None
    return conv.to_numpy(dtype=float, na_value=np.nan)


def _holds(cmp: Comparison, s: pd.Series) -> np.ndarray:
    """Whether ``cmp`` holds for each value of ``s`` (missing values: False; callers mask them)."""
    lits = cmp.value if isinstance(cmp.value, tuple) else (cmp.value,)
    nums = _as_numbers(s)
    if cmp.op in ("<", "<=", ">", ">="):
        if nums is None:
            raise _NotEvaluable(f"{cmp.column} is not numeric in the table")
        t = float(lits[0])
        with np.errstate(invalid="ignore"):
            return {"<": nums < t, "<=": nums <= t, ">": nums > t, ">=": nums >= t}[cmp.op]
    if nums is not None and all(isinstance(v, float) for v in lits):
        hit = np.isin(nums, np.asarray(lits, dtype=float))
    else:
        # compared as labels: a code 3 matches "3" and 3, whatever the column's dtype
        codes, uniques = pd.factorize(s)
        want = {_label(v) for v in lits}
        match = np.array([_label(u) in want for u in uniques] + [False], dtype=bool)
        hit = match[np.where(codes >= 0, codes, len(uniques))]
    return hit if cmp.op in ("==", "in") else ~hit


def rule_violations(rule: EditRule | str, df: pd.DataFrame) -> np.ndarray:
    """Per record of ``df``, whether it violates ``rule``: every comparison before ``->`` holds and
    some comparison after it does not; records with a missing value in the rule's columns never
    violate it. Raises :class:`~ppdm.errors.ParameterError` for a column ``df`` lacks."""
    r = parse_edit_rules([rule])[0]
    absent = [c for c in r.columns if c not in df.columns]
    if absent:
        raise ParameterError(f"edit rule {r.text!r} names column {absent[0]!r}, which the table does not have")
    known = np.ones(len(df), dtype=bool)
    for c in r.columns:
        known &= df[c].notna().to_numpy()
    given = np.ones(len(df), dtype=bool)
    for cmp in r.given:
        given &= _holds(cmp, df[cmp.column])
    then = np.ones(len(df), dtype=bool)
    for cmp in r.then:
        then &= _holds(cmp, df[cmp.column])
    return known & given & ~then


def edit_rule_violations(x: pd.DataFrame, z: pd.DataFrame,
                         rules: Sequence[str | EditRule]) -> EditRuleResult:
    """For each declared edit rule, the records of x and of z that violate it.

    ``value`` = max(0, share of z's records violating at least one rule − the same share in x):
    x's own violations are data errors the owner already publishes with any release, so only a
    release's additions count. No pairing is used. A rule that cannot be read on one of the
    tables (an order comparison of a column a recoding turned into labels) is left out and says
    why in ``rules.note``; when none can be read the measure does not apply. Syntax:
    :mod:`ppdm.data.edit_rules`; an unknown column or a malformed rule raises
    :class:`~ppdm.errors.ParameterError`.
    """
    parsed = parse_edit_rules(list(rules))
    if not parsed:
        raise MeasureNotApplicable("edit_rule_violations: no edit rule is declared (edit_rules in a schema file)")
    for r in parsed:
        for c in r.columns:
            for label, df in (("original", x), ("released", z)):
                if c not in df.columns:
                    raise ParameterError(f"edit rule {r.text!r} names column {c!r}, which the {label} table "
                                         "does not have")
    if len(x) == 0 or len(z) == 0:
        raise MeasureNotApplicable("edit_rule_violations: a table has no rows")
    fx = np.zeros(len(x), dtype=bool)
    fz = np.zeros(len(z), dtype=bool)
    rows: list[tuple[str, int | None, float | None, int | None, float | None, float | None, str]] = []
    for r in parsed:
        try:
            vx, vz = rule_violations(r, x), rule_violations(r, z)
        except _NotEvaluable as e:
            rows.append((r.text, None, None, None, None, None, f"not evaluated: {e}"))
            continue
        fx |= vx
        fz |= vz
        sx, sz = float(vx.mean()), float(vz.mean())
        rows.append((r.text, int(vx.sum()), sx, int(vz.sum()), sz, max(0.0, sz - sx), ""))
    table = pd.DataFrame(rows, columns=["rule", "x_violations", "x_share", "z_violations", "z_share", "excess",
                                        "note"])
    done = table[table["note"] == ""]
    if done.empty:
        raise MeasureNotApplicable("edit_rule_violations: no declared edit rule can be evaluated on these tables "
                                   f"({table['note'].iloc[0]})")
    worst = ""
    top = done.sort_values("excess", ascending=False, kind="stable").iloc[0]
    if top["excess"] > 0:
        worst = f"{top['rule']}: {int(top['z_violations'])} released records, {int(top['x_violations'])} in x"
    zs, xs = float(fz.mean()), float(fx.mean())
    return EditRuleResult(value=max(0.0, zs - xs), z_share=zs, x_share=xs, z_violations=int(fz.sum()),
                          x_violations=int(fx.sum()), evaluated=len(done), worst=worst, rules=table, flags=fz)


# ------------------------------------------------------------------ registrations
@register_measure("implausible_combinations", kind="utility", needs_class=False, default=True, direction="lower",
                  value_range=(0.0, 1.0), threshold=0.05, options=("min_support", "min_expected", "top"),
                  meaning="The share of released records holding a pair of categories x never holds (though its "
                          "margins expect it) or a number outside its category's range in x; 0 is best, and x "
                          "itself scores 0.",
                  description="implausible records: pairs of categories absent from x, and numbers outside the "
                              "range their category has in x, without a record pairing")
def _implausible_combinations_measure(ctx: EvaluationContext) -> ImplausibleCombinationsResult:
    """Options ``implausible_combinations.min_support`` (default 20), ``.min_expected`` (5) and
    ``.top`` (10)."""
    name = "implausible_combinations"
    numeric, categorical = context_attributes(ctx, name)
    opts = PlausibilityOptions(min_support=_opt(ctx, name, "min_support", DEFAULT_MIN_SUPPORT),
                               min_expected=_opt(ctx, name, "min_expected", DEFAULT_MIN_EXPECTED),
                               top=_opt(ctx, name, "top", DEFAULT_TOP))
    return implausible_combinations(ctx.x, ctx.z, numeric, categorical, opts)


@register_measure("edit_rule_violations", kind="utility", needs_class=False, default=True, direction="lower",
                  value_range=(0.0, 1.0), threshold=0.01, options=(), declared_by="edit_rules",
                  meaning="The share of released records breaking an edit rule the schema declares, beyond the "
                          "share of x's records that do; 0 is best.",
                  description="records breaking the schema's declared edit rules (edit_rules), in z beyond x")
def _edit_rule_violations_measure(ctx: EvaluationContext) -> EditRuleResult:
    rules = list(ctx.schema.edit_rules or [])
    if not rules:
        raise MeasureNotApplicable("the schema declares no edit_rules")
    return edit_rule_violations(ctx.x, ctx.z, rules)


__all__ = ["DEFAULT_MIN_EXPECTED", "DEFAULT_MIN_SUPPORT", "DEFAULT_TOP", "EditRuleResult",
           "ImplausibleCombinationsResult", "PlausibilityOptions", "edit_rule_violations",
           "implausible_combinations", "rule_violations"]
