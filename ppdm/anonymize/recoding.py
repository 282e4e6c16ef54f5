"""Global recoding and top/bottom coding: the statistics office's coarsening of key variables.

**Global recoding** (sdcMicro's ``globalRecode`` and ``groupAndRename``, Templ, Kowarik & Meindl
2015 §3.2; ARX's generalisation hierarchies) replaces every value of an attribute by a coarser
one, the same way in every record:

* a number becomes the interval that holds it, labelled as R's ``cut`` labels it and sdcMicro
  publishes it (``(20,30]``, ``[16,31]``, ``(12096299,2.7182818e+08]``), from explicit break
  points or from a number of intervals of equal width (sdcMicro's ``equidistant``, with its ±1
  padding and rounding), of equal width on the log scale (``logEqui``) or of equal frequency
  (``equalAmount``);
* a category becomes its label at a level of a hierarchy declared in the schema
  (``Schema.hierarchies``), or, with ``min_count``, joins the other rare categories under one label;
* a date becomes its month (``2021-03``) or year (``2021``), by the period arithmetic rounding
  uses (:func:`ppdm.data.types.generalize_dates`); its birth cohort of 5 or 10 years
  (``1940-1949``, cohorts starting at the years divisible by the width); the band between
  break dates that holds it (``[1950-01-01,1960-01-01)``); or the whole years of age it gives
  on a reference date, banded as numbers are (``(30,40]``).

Recoded values are written as text labels in an ordered categorical column (the order of the
intervals, of the hierarchy, of the periods), and the release's schema (:meth:`output_schema`)
declares each recoded column categorical with its labels in order and, for categories, the
hierarchy that maps originals to labels, so :func:`ppdm.data.generalization.covers` knows what
each released value stands for. Recoding is monotone: a larger number never gets an earlier
interval.

**Top and bottom coding** (sdcMicro's ``topBotCoding``): values above (below) a bound, given as
a value or as a quantile of the data, are replaced by a number (by default the bound itself) or
by an interval label such as ``(60,Inf)``. As in sdcMicro the tests are strict: a value equal to
the bound is kept.

Both are fitted once (break points, quantiles, merged categories) and then applied value by
value, so a Dask table is recoded partition by partition with what was learnt on the sample.
Missing values stay missing.

The break points and labels live in :mod:`ppdm.anonymize._recoding_breaks` (re-exported here).
This module stays above 600 lines because it holds the two registered techniques whole: the
class path of a technique is recorded in every release's provenance, so it does not move.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ppdm.anonymize._recoding_breaks import (  # noqa: F401  (re-exported: the public path stays this module)
    _PERCENT,
    _QUANT,
    DATE_MODES,
    DATE_PERIODS,
    LABEL_DIGITS,
    MAX_LABEL_DIGITS,
    NUMERIC_METHODS,
    OUTSIDE,
    ROUND_UNITS,
    TIES,
    _ancestors,
    _check_age_at,
    _check_breaks,
    _check_cohort,
    _coding_labels,
    _cohort_labels,
    _cut_dates,
    _date_breaks,
    _label_order,
    _num_label,
    _per_column,
    _period_labels,
    _py_value,
    _reaches,
    _values,
    cut,
    interval_labels,
    parse_bound,
    r_jitter,
    r_round,
    recoded_schema,
    round_breaks,
    round_width,
    sdc_breaks,
    width_breaks,
)
from ppdm.anonymize.base import Technique, check_known, check_whole, column_list, is_whole, split_names
from ppdm.anonymize.registry import register
from ppdm.anonymize.search_space import Choice, Integer, SearchSpace
from ppdm.data.generalization import format_date_interval, format_interval
from ppdm.data.schema import Schema
from ppdm.data.types import age_in_years, is_iso_date
from ppdm.errors import ParameterError, SchemaError

try:  # pandas' text dtype with NaN for a missing value (what a text column reads back as)
    _TEXT: Any = pd.StringDtype(na_value=np.nan)
except TypeError:  # pragma: no cover - pandas < 2.3
    _TEXT = np.dtype(object)


@register("recode")
class Recode(Technique):
    """Global recoding of numbers into intervals, categories along a hierarchy, dates to periods.

    Parameters
    ----------
    columns:
        Attributes to recode (default: the schema's quasi-identifiers, else every attribute).
        The class is recoded only when named.
    breaks:
        Numeric attributes: a number of intervals, or a list of break points (intervals
        ``(a,b]``); a dict column → either (``"*"`` for the others). Default 5. Date
        attributes: a list of break dates (``"1950-01-01"``; the first may be ``"-Inf"``, the
        last ``"Inf"``), bands ``[a,b)`` labelled ``[1950-01-01,1960-01-01)``; with ``age_at``,
        breaks of the ages as for numbers. A list of numbers or a named number of intervals for
        a date column is refused (a number of intervals given to every column applies to the
        numbers only).
    method:
        With a number of intervals: ``"equal-width"`` (sdcMicro's equidistant, default),
        ``"log-equal-width"`` (logEqui), ``"equal-frequency"`` (equalAmount), or
        ``"round-width"``: about that many intervals of a round width (1, 2 or 5 times a power
        of ten, as R's ``pretty`` picks) anchored at its multiples, the bands a statistics office
        publishes (ages in 10-year bands ``(10,20]``, ``(20,30]``, …; :func:`round_breaks`);
        or a dict.
    outside:
        A value outside every interval of explicit breaks is an error (``"error"``, default) or
        becomes missing (``"missing"``, what sdcMicro does).
    ties:
        Equal-frequency intervals whose quantiles tie: ``"merge"`` them (default, fewer
        intervals) or ``"jitter"`` the break points as sdcMicro does (random, so a value may
        fall outside and needs ``outside="missing"``).
    level:
        Categorical attributes with a hierarchy in the schema: the level to publish (1 = the
        finest generalisation; 0 leaves the column as it is); a number or a dict. Default 1.
    min_count:
        Categorical attributes: categories with fewer records than this are merged under the
        label ``other`` (with the next rarest until the merged group has ``min_count``
        records); a number or a dict. Applied after the hierarchy level.
    other:
        Label of the merged rare categories (default ``"Other"``).
    date_period:
        Date attributes: ``"month"`` (the default for a date given nothing else) or ``"year"``,
        or a dict.
    cohort:
        Date attributes: birth cohorts of this many years (5 or 10; any whole number from 2 to
        100), starting at the years divisible by the width and labelled by their first and last
        year (``1940-1949``); or a dict.
    age_at:
        Date attributes: a date (``"2024-01-01"``) on which the whole years of age are counted
        (:func:`ppdm.data.types.age_in_years`); the ages are released as labels (``"34"``), or
        in bands when ``breaks`` gives them (as for numbers: ``(30,40]``); or a dict.

    A date column takes one of ``date_period``, ``cohort``, ``age_at`` and break dates; a
    parameter no recoded column would use (breaks on a column recoded to years, ``level`` on a
    column without hierarchy, ``ties="jitter"`` without equal-frequency intervals, ``other``
    without ``min_count``, …) is refused rather than ignored.

    With a number of intervals, an end interval that sdcMicro's padding would stretch past a
    bound declared in the schema stops at the bound. A constant numeric attribute is left as
    it is (it tells nothing about anyone). After
    ``fit``: ``breaks_`` (column → break points; ages' for ``age_at``), ``labels_`` (column →
    labels in order), ``mapping_`` (categorical column → {original: label}), ``periods_``,
    ``cohorts_`` (date column → width in years), ``date_breaks_`` (date column → break dates as
    days since 1970-01-01) and ``ages_`` (date column → its reference date, in days).

    Output: intervals, break-date bands and ages are ordered categorical columns; months,
    years and cohorts are text (a later partition may hold a later period), declared in the
    release's schema as categories in the order fitted.
    """

    handles_missing = True
    missing_policy = "kept"
    #: intervals of numeric keys, how they are cut, date keys' period, and the rarest categories merged
    #: (1: none); a table without numeric (date) keys is not offered the intervals (the period), which
    #: the technique would refuse as parameters no column takes
    search_space = SearchSpace({"breaks": Integer(2, 30, log=True),
                                "method": Choice(("equal-width", "equal-frequency", "round-width")),
                                "date_period": Choice(("month", "year")),
                                "min_count": Integer(1, 300, log=True)}, needs=("keys",), deterministic=True,
                               param_needs={"breaks": "numeric-keys", "method": "numeric-keys",
                                            "date_period": "date-keys"})

    def __init__(
        self,
        class_column: str | None = None,
        schema: Schema | dict | None = None,
        random_state: Any = None,
        columns: list[str] | str | None = None,
        breaks: int | list[Any] | dict[str, Any] | None = None,
        method: str | dict[str, str] = "equal-width",
        outside: str = "error",
        ties: str = "merge",
        level: int | dict[str, int] = 1,
        min_count: int | dict[str, int] | None = None,
        other: str = "Other",
        date_period: str | dict[str, str] | None = None,
        cohort: int | dict[str, int] | None = None,
        age_at: str | dict[str, str] | None = None,
    ) -> None:
        super().__init__(class_column, schema, random_state)
        # scikit-learn's contract: __init__ stores each parameter as given (get_params, clone), so it is written out
        self.columns = columns
        self.breaks = breaks
        self.method = method
        self.outside = outside
        self.ties = ties
        self.level = level
        self.min_count = min_count
        self.other = other
        self.date_period = date_period
        self.cohort = cohort
        self.age_at = age_at

    # ------------------------------------------------------------------ checks
    def _validate_params(self) -> None:
        column_list("columns", self.columns)
        for v in (self.method.values() if isinstance(self.method, Mapping) else [self.method]):
            if v not in NUMERIC_METHODS:
                raise ParameterError(f"method must be one of {', '.join(NUMERIC_METHODS)}, got {v!r}")
        if self.outside not in OUTSIDE:
            raise ParameterError(f"outside must be one of {', '.join(OUTSIDE)}, got {self.outside!r}")
        if self.ties not in TIES:
            raise ParameterError(f"ties must be one of {', '.join(TIES)}, got {self.ties!r}")
        if self.breaks is not None:
            for v in _values(self.breaks):
                _check_breaks("a column", v)
        for lv in (self.level.values() if isinstance(self.level, Mapping) else [self.level]):
            if not is_whole(lv, 0):
                raise ParameterError(f"level must be a whole number ≥ 0 (a hierarchy level), got {lv!r}")
        if self.min_count is not None:
            for mc in (self.min_count.values() if isinstance(self.min_count, Mapping) else [self.min_count]):
                check_whole("min_count", mc)
        if not isinstance(self.other, str) or not self.other:
            raise ParameterError(f"other must be a non-empty label, got {self.other!r}")
        if self.date_period is not None:
            for v in _values(self.date_period):
                if v not in DATE_PERIODS:
                    raise ParameterError(f"date_period must be 'month' or 'year', got {v!r}")
        if self.cohort is not None:
            for v in _values(self.cohort):
                _check_cohort(v)
        if self.age_at is not None:
            for v in _values(self.age_at):
                _check_age_at(v)

    def _targets(self, schema: Schema) -> list[str]:
        named = split_names(self.columns)
        if named is None:
            return list(schema.quasi_identifiers) or list(schema.attributes)
        check_known("columns", named, schema.columns)
        for name, val in (("breaks", self.breaks), ("method", self.method), ("level", self.level),
                          ("min_count", self.min_count), ("date_period", self.date_period), ("cohort", self.cohort),
                          ("age_at", self.age_at)):
            if isinstance(val, Mapping):
                extra = sorted(set(val) - set(named) - {"*"})
                if extra:
                    raise ParameterError(f"{name} names column {extra[0]!r}, which is not recoded")
        return list(named)

    # --------------------------------------------------------------------- fit
    def _fit(self, df: pd.DataFrame, schema: Schema, rng: np.random.Generator) -> None:
        self.breaks_: dict[str, np.ndarray] = {}
        self.include_lowest_: dict[str, bool] = {}
        self.jittered_: dict[str, bool] = {}
        self.labels_: dict[str, list[Any]] = {}
        self.mapping_: dict[str, dict[Any, Any]] = {}
        self.periods_: dict[str, str] = {}
        self.cohorts_: dict[str, int] = {}
        self.date_breaks_: dict[str, np.ndarray] = {}
        self.ages_: dict[str, float] = {}
        self.levels_: dict[str, int] = {}
        self.merged_: dict[str, list[Any]] = {}
        targets = self._targets(schema)
        plan = self._plan(targets, schema)
        for c in targets:
            s = df[c]
            obs = s.dropna()
            if len(obs) == 0:
                raise SchemaError(f"column {c!r} has no observed value to recode")
            mode = plan[c]
            if mode == "period":
                period = str(_per_column(self.date_period, c, "month"))
                self.periods_[c] = period
                self.labels_[c] = sorted(set(_period_labels(obs.to_numpy(dtype=float), period)))
            elif mode == "cohort":
                width = _check_cohort(_per_column(self.cohort, c))
                self.cohorts_[c] = width
                self.labels_[c] = sorted(set(_cohort_labels(obs.to_numpy(dtype=float), width)))
            elif mode == "breaks":
                b = np.asarray(_check_breaks(c, _per_column(self.breaks, c)), dtype=float)
                self._check_outside(c, _cut_dates(obs.to_numpy(dtype=float), b), False)
                self.date_breaks_[c] = b
                self.labels_[c] = [format_date_interval(b[i], b[i + 1]) for i in range(b.size - 1)]
            elif mode == "age":
                at = _check_age_at(_per_column(self.age_at, c))
                ages = age_in_years(obs.to_numpy(dtype=float), at)
                if (ages < 0).any():
                    raise ParameterError(f"age_at {_per_column(self.age_at, c)!r} comes before {int((ages < 0).sum())} "
                                         f"date(s) of {c!r}; ages are counted on a date after every birth")
                self.ages_[c] = at
                if _reaches(self.breaks, c)[0] is not None:
                    self._fit_numeric(c, ages, rng)
                else:  # whole years of age, each its own label, in order of age
                    self.labels_[c] = [_num_label(a) for a in np.unique(ages)]
            elif c in schema.numeric:
                x = obs.to_numpy(dtype=float)
                if np.unique(x).size == 1:
                    continue  # a constant attribute tells nothing about anyone: left as it is
                self._fit_numeric(c, x, rng, schema.bounds.get(c))
            else:
                self._fit_categorical(c, obs, schema)
        self._rare_reports([c for c in targets if c not in schema.numeric and c not in schema.dates])

    def _rare_reports(self, categorical: list[str]) -> None:
        """The rule for rare categories (public) and the categories it merged (the owner's).

        Which categories were merged, and in what order they occur in x, names categories held by
        a handful of people, which may be absent from the release: only the rule is public."""
        rules = {c: f"categories of {c!r} with fewer than min_count={int(m)} records (with the next rarest, until "
                    f"the group has min_count records) become {self.other!r}"
                 for c in categorical if (m := _per_column(self.min_count, c, None)) is not None}
        self.privacy_report_ = {"technique": "recode", "rare_categories": rules} if rules else None
        merged = {c: v for c, v in self.merged_.items() if v}
        self.private_report_ = {"technique": "recode", "merged_into_other": merged} if merged else None

    def _fit_numeric(self, c: str, x: np.ndarray, rng: np.random.Generator,
                     bounds: tuple[float, float] | None = None) -> None:
        spec = _check_breaks(c, _per_column(self.breaks, c, 5))
        method = str(_per_column(self.method, c, "equal-width"))
        if isinstance(spec, int) and method == "round-width":
            b, lowest, jit = round_breaks(x, spec), False, False
            if bounds is not None:
                # the first band may start below a declared lower bound: it stops there, closed
                clipped = np.unique(np.clip(b, float(bounds[0]), float(bounds[1])))
                if clipped.size >= 2 and clipped[0] > b[0]:
                    b, lowest = clipped, True
                elif clipped.size >= 2:
                    b = clipped
        elif isinstance(spec, int):
            b, lowest, jit = sdc_breaks(x, spec, method, rng=rng, ties=self.ties)
            if bounds is not None:
                # sdcMicro's ±1 padding may reach past a declared bound: intervals stop there (the
                # lowest is closed, so the bound itself stays in it; an interval wholly beyond goes)
                clipped = np.unique(np.clip(b, float(bounds[0]), float(bounds[1])))
                if clipped.size >= 2:
                    b, lowest = clipped, True
        else:
            # explicit breaks starting at a declared lower bound: the bound itself is a possible value, so the
            # lowest interval is closed there ([0,10] rather than (0,10], which would leave 0 outside)
            b, lowest, jit = spec, bounds is not None and float(spec[0]) == float(bounds[0]), False
        self._check_outside(c, cut(x, b, lowest), jit)
        self.breaks_[c] = np.asarray(b, dtype=float)
        self.include_lowest_[c] = bool(lowest)
        self.jittered_[c] = bool(jit)
        self.labels_[c] = interval_labels(b, lowest, x)

    def _check_outside(self, c: str, idx: np.ndarray, jittered: bool) -> None:
        outside = int((idx < 0).sum())
        if outside and self.outside == "error":
            what = "the jittered break points" if jittered else "the breaks"
            raise ParameterError(
                f"{what} of {c!r} leave {outside} value(s) outside every interval; widen the breaks, or let such "
                "values become missing with outside='missing' (what sdcMicro does)")

    def _plan(self, targets: list[str], schema: Schema) -> dict[str, str]:
        """What each recoded column becomes (``"numeric"``, ``"categorical"`` or a date's mode,
        :data:`DATE_MODES`), refusing every parameter a column it reaches would ignore: a
        parameter that is silently dropped leaves the owner believing the release says less
        than it does."""
        plan: dict[str, str] = {}
        dates = [c for c in targets if c in schema.dates]
        for c in targets:
            brk, brk_how = _reaches(self.breaks, c)
            is_dates = isinstance(brk, (list, tuple, np.ndarray)) and any(is_iso_date(v) for v in brk)
            named = {n: how for n, v in (("date_period", self.date_period), ("cohort", self.cohort),
                                         ("age_at", self.age_at))
                     if (how := _reaches(v, c)[1]) is not None}
            if c not in schema.dates:
                bad = [n for n, how in named.items() if how == "named"]
                if bad:
                    raise ParameterError(f"{bad[0]} names column {c!r}, which is not a date; {bad[0]} recodes dates")
                if is_dates and (c in schema.numeric or brk_how == "named"):
                    raise ParameterError(f"breaks for {c!r} are dates, and {c!r} is not a date column; give each "
                                         "column its breaks with a dict")
                if c in schema.numeric:
                    plan[c] = "numeric"
                else:
                    if brk_how == "named":
                        raise ParameterError(f"breaks name column {c!r}, which is categorical; breaks cut numbers and "
                                             "dates (recode categories with level or min_count)")
                    plan[c] = "categorical"
                continue
            modes = [m for m, n in (("period", "date_period"), ("cohort", "cohort"), ("age", "age_at")) if n in named]
            if is_dates:
                modes.append("breaks")
            elif brk is not None and "age" not in modes and (brk_how == "named" or (
                    not isinstance(brk, (int, np.integer)) and not modes)):
                # break points for every column reach a date given no way of its own: they look meant for it
                raise ParameterError(
                    f"breaks {brk!r} would apply to the date column {c!r}, which they cannot cut: give break dates "
                    "(YYYY-MM-DD), a cohort, or age_at with breaks of ages; a dict gives each column its own")
            if len(modes) > 1:
                raise ParameterError(f"the date column {c!r} is given both {DATE_MODES[modes[0]]} and "
                                     f"{DATE_MODES[modes[1]]}; a date is recoded one way (a dict gives each column its own)")
            if "age" in modes and is_dates:  # pragma: no cover - counted as two modes above
                raise ParameterError(f"breaks of {c!r} are dates, and age_at makes it ages")
            plan[c] = modes[0] if modes else "period"
        self._refuse_unused(plan, dates, schema)
        return plan

    def _refuse_unused(self, plan: dict[str, str], dates: list[str], schema: Schema) -> None:
        """Single parameters that no recoded column takes, and dict entries of columns that cannot."""
        cat = [c for c, m in plan.items() if m == "categorical"]
        cut_by_number = [c for c, m in plan.items() if m == "numeric" or (m == "age" and
                                                                           _reaches(self.breaks, c)[0] is not None)]
        for name, val in (("date_period", self.date_period), ("cohort", self.cohort), ("age_at", self.age_at)):
            if val is not None and not dates:
                raise ParameterError(f"{name} recodes dates, and none of the recoded columns is a date")
        # a number of intervals with only categories to recode is left alone: a search draws one for every table
        if (self.breaks is not None and not cut_by_number and not any(m == "breaks" for m in plan.values())
                and (dates or not isinstance(self.breaks, (int, np.integer)))):
            raise ParameterError("breaks are given, and no recoded column is cut by them (they cut numbers, dates "
                                 "into bands with break dates, and ages with age_at)")
        if not isinstance(self.method, Mapping) and self.method != "equal-width" and not cut_by_number and dates:
            raise ParameterError(f"method={self.method!r} cuts numbers into intervals, and no recoded column is a "
                                 "number (dates take date_period, cohort, break dates or age_at)")
        for name, val, takes in (("level", self.level, lambda c: c in schema.hierarchies),
                                 ("min_count", self.min_count, lambda c: True)):
            if isinstance(val, Mapping):
                for c in val:
                    if c == "*":
                        continue
                    if plan.get(c) != "categorical":
                        raise ParameterError(f"{name} names column {c!r}, which is not categorical; {name} recodes "
                                             "categories")
                    if name == "level" and val[c] and not takes(c):
                        raise ParameterError(f"level names column {c!r}, which has no hierarchy in the schema")
        if not isinstance(self.level, Mapping) and self.level not in (0, 1) and not any(
                c in schema.hierarchies for c in cat):
            raise ParameterError(f"level={self.level!r} picks a hierarchy level, and no recoded column has a "
                                 "hierarchy in the schema")
        if isinstance(self.method, Mapping):
            for c in self.method:
                if c != "*" and c not in cut_by_number:
                    raise ParameterError(f"method names column {c!r}, which is not cut into intervals of numbers")
                if c != "*" and not isinstance(_per_column(self.breaks, c, 5), (int, np.integer)):
                    raise ParameterError(f"method names column {c!r}, whose breaks are given as break points; "
                                         "method cuts a number of intervals")
        equal_freq = [c for c in cut_by_number
                      if _per_column(self.method, c, "equal-width") == "equal-frequency"
                      and isinstance(_per_column(self.breaks, c, 5), (int, np.integer))]
        if self.ties != "merge" and not equal_freq:
            raise ParameterError(f"ties={self.ties!r} concerns equal-frequency intervals, and no column is cut by "
                                 "method='equal-frequency' into a number of intervals")
        if self.other != "Other" and self.min_count is None:
            raise ParameterError(f"other={self.other!r} labels the categories min_count merges, and min_count is not "
                                 "given")
        explicit = [c for c, m in plan.items() if m == "breaks" or (c in cut_by_number and not isinstance(
            _per_column(self.breaks, c, 5), (int, np.integer)))]
        if self.outside != "error" and not explicit and not (self.ties == "jitter" and equal_freq):
            raise ParameterError(f"outside={self.outside!r} concerns values outside given break points (or jittered "
                                 "ones), and no column has any")

    def _fit_categorical(self, c: str, obs: pd.Series, schema: Schema) -> None:
        values = pd.unique(obs).tolist()
        level = int(_per_column(self.level, c, 1))
        mapping: dict[Any, Any] = {}
        if c in schema.hierarchies and level > 0:
            self.levels_[c] = level
            for v in values:
                mapping[v] = schema.hierarchy_level(c, v, level)
        else:
            mapping = {v: v for v in values}
        min_count = _per_column(self.min_count, c, None)
        if min_count is not None:
            mapping = self._merge_rare(c, obs.map(mapping), mapping, int(min_count))
        if all(k == v for k, v in mapping.items()):
            return  # nothing changes in this column
        self.mapping_[c] = mapping
        self.labels_[c] = _label_order(c, mapping, schema)

    def _merge_rare(self, c: str, labels: pd.Series, mapping: dict[Any, Any], min_count: int) -> dict[Any, Any]:
        counts = labels.value_counts()
        rare = counts[counts < min_count]
        if rare.empty:
            return mapping
        # the rarest first; the merged group grows until it has min_count records
        order = counts.sort_values(kind="stable")
        merged = list(rare.index)
        total = int(rare.sum())
        for lab in order.index:
            if total >= min_count:
                break
            if lab not in merged:
                merged.append(lab)
                total += int(order[lab])
        if self.other in set(counts.index) - set(merged):
            raise ParameterError(f"the label {self.other!r} for merged rare categories of {c!r} is already one of its "
                                 "categories; choose another with other=...")
        self.merged_[c] = sorted(({_py_value(k) for k, v in mapping.items() if v in merged}), key=str)
        return {k: (self.other if v in merged else v) for k, v in mapping.items()}

    # ---------------------------------------------------------------- output
    def _output_dtypes(self, like: pd.DataFrame) -> dict[str, Any]:
        # periods are text (their order is the text's); a later month is no fitted category
        return {c: (_TEXT if c in self.periods_ or c in self.cohorts_ else pd.CategoricalDtype(labels, ordered=True))
                for c, labels in getattr(self, "labels_", {}).items() if c in like.columns}

    def _output_schema(self, schema: Schema) -> Schema:
        # a date's periods are declared as fitted; a partition may hold later ones (text, in order)
        return recoded_schema(schema, self.labels_, {c: _ancestors(m) for c, m in self.mapping_.items()})

    # --------------------------------------------------------------- transform
    def _transform(self, df: pd.DataFrame, schema: Schema, rng: np.random.Generator) -> pd.DataFrame:
        out = df.copy()
        for c, labels in self.labels_.items():
            s = df[c]
            if c in self.ages_ and c not in self.breaks_:
                ages = age_in_years(s.to_numpy(dtype=float), self.ages_[c])
                vals = np.array([_num_label(a) if np.isfinite(a) else None for a in ages], dtype=object)
                unseen = pd.notna(vals) & ~pd.Series(vals, dtype=object).isin(labels).to_numpy()
                if unseen.any():
                    row = s.index[np.flatnonzero(unseen)[0]]
                    raise SchemaError(f"column {c!r} holds an age fit did not see (first at row {row!r}); fit on these "
                                      "records, or band the ages with breaks")
            elif c in self.breaks_:
                x = s.to_numpy(dtype=float)
                if c in self.ages_:
                    x = age_in_years(x, self.ages_[c])
                idx = cut(x, self.breaks_[c], self.include_lowest_[c])
                lost = (idx < 0) & ~np.isnan(x)
                if lost.any() and self.outside == "error":
                    row = s.index[np.flatnonzero(lost)[0]]
                    raise SchemaError(f"column {c!r} has {int(lost.sum())} value(s) outside every interval fitted "
                                      f"(first at row {row!r}); refit on these records, or use outside='missing'")
                vals = np.asarray(labels, dtype=object)[np.maximum(idx, 0)]
                vals[idx < 0] = None
            elif c in self.periods_:
                vals = np.asarray(_period_labels(s.to_numpy(dtype=float), self.periods_[c]), dtype=object)
            elif c in self.cohorts_:
                vals = np.asarray(_cohort_labels(s.to_numpy(dtype=float), self.cohorts_[c]), dtype=object)
            elif c in self.date_breaks_:
                x = s.to_numpy(dtype=float)
                idx = _cut_dates(x, self.date_breaks_[c])
                lost = (idx < 0) & ~np.isnan(x)
                if lost.any() and self.outside == "error":
                    row = s.index[np.flatnonzero(lost)[0]]
                    raise SchemaError(f"column {c!r} has {int(lost.sum())} date(s) outside every band fitted "
                                      f"(first at row {row!r}); widen the break dates, or use outside='missing'")
                vals = np.asarray(labels, dtype=object)[np.maximum(idx, 0)]
                vals[idx < 0] = None
            else:
                vals = self._map_categories(c, s, schema)
            out[c] = pd.Series(vals, index=df.index, dtype=object)
        return out

    def _map_categories(self, c: str, s: pd.Series, schema: Schema) -> np.ndarray:
        mapping = self.mapping_[c]
        vals = s.map(mapping).to_numpy(dtype=object)
        unseen = s.notna().to_numpy() & pd.isna(vals)
        if unseen.any():
            # a value fit did not see: its hierarchy label, or the merged label for a rare one
            for i in np.flatnonzero(unseen).tolist():
                v = s.iloc[i]
                lab = schema.hierarchy_level(c, v, self.levels_[c]) if c in self.levels_ else v
                if self.other in set(mapping.values()) and lab not in set(mapping.values()):
                    lab = self.other
                if lab not in set(self.labels_[c]):
                    raise SchemaError(f"column {c!r} holds a category fit did not see at row {s.index[i]!r}, whose "
                                      "label is not among the fitted ones; fit on these records")
                vals[i] = lab
        return vals


@register("top-bottom-coding")
class TopBottomCoding(Technique):
    """Top and bottom coding of numeric attributes (sdcMicro's ``topBotCoding``).

    Parameters
    ----------
    columns:
        Numeric attributes to code (default: the numeric quasi-identifiers, else every numeric
        attribute). A categorical column is refused.
    top, bottom:
        The bound above (below) which values are coded: a number, or a quantile of the data
        (``"99%"``, ``"q0.99"``); one for every column or a dict column → bound. ``None``: no
        top (bottom) coding. Default: top coding at the 99th percentile.
    top_replacement, bottom_replacement:
        What a coded value becomes: ``None`` (default: the bound itself), a number, or
        ``"label"``: the interval label of the coded range (``(60,Inf)``, ``(-Inf,20)``); the
        column is then released as ordered categorical labels (numbers as text beside them).

    Tests are strict: x > top (x < bottom) is coded, a value equal to the bound is kept. An
    integer column needs a whole-number replacement. After ``fit``: ``bounds_`` (column →
    (bottom, top), ``None`` where not coded).

    The default codes the top 1 %: it protects the largest values (the rare, recognisable
    ones), not the table — the other 99 % of each column come out as they were, so the
    release gate refuses it alone, and no quantile short of coding most values would change
    that. Compose it with a technique that changes every record (``--method top-bottom-coding
    --then recode``, which the refusal names and which passes on the shipped tables).
    """

    handles_missing = True
    missing_policy = "kept"
    #: the quantiles above (below) which numeric keys are coded
    search_space = SearchSpace({"top": Choice(("90%", "95%", "98%", "99%", "99.5%")),
                                "bottom": Choice((None, "0.5%", "1%", "2%", "5%"))}, needs=("numeric",),
                               deterministic=True)

    def __init__(
        self,
        class_column: str | None = None,
        schema: Schema | dict | None = None,
        random_state: Any = None,
        columns: list[str] | str | None = None,
        top: float | str | dict[str, Any] | None = "99%",
        bottom: float | str | dict[str, Any] | None = None,
        top_replacement: float | str | dict[str, Any] | None = None,
        bottom_replacement: float | str | dict[str, Any] | None = None,
    ) -> None:
        super().__init__(class_column, schema, random_state)
        # scikit-learn's contract: __init__ stores each parameter as given (get_params, clone), so it is written out
        self.columns = columns
        self.top = top
        self.bottom = bottom
        self.top_replacement = top_replacement
        self.bottom_replacement = bottom_replacement

    def _validate_params(self) -> None:
        column_list("columns", self.columns)
        for name in ("top", "bottom"):
            v = getattr(self, name)
            for x in (v.values() if isinstance(v, Mapping) else [v]):
                if x is not None:
                    parse_bound(name, x)
        for name in ("top_replacement", "bottom_replacement"):
            v = getattr(self, name)
            for x in (v.values() if isinstance(v, Mapping) else [v]):
                if x is None or x == "label":
                    continue
                if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)) or not np.isfinite(x):
                    raise ParameterError(f"{name} must be a number, 'label' or None (the bound), got {x!r}")
        if self.top is None and self.bottom is None:
            raise ParameterError("top and bottom are both None: there is nothing to code")

    def _targets(self, schema: Schema) -> list[str]:
        named = split_names(self.columns)
        if named is None:
            qi = [c for c in schema.quasi_identifiers if c in schema.numeric]
            return qi or [c for c in schema.numeric if c not in schema.dates]
        check_known("columns", named, schema.columns)
        cat = [c for c in named if c not in schema.numeric]
        if cat:
            raise ParameterError(f"top and bottom coding applies to numbers, and column {cat[0]!r} is categorical; "
                                 "recode its categories instead")
        return list(named)

    def _fit(self, df: pd.DataFrame, schema: Schema, rng: np.random.Generator) -> None:
        self.bounds_: dict[str, tuple[float | None, float | None]] = {}
        self.replacements_: dict[str, tuple[Any, Any]] = {}
        targets = self._targets(schema)
        if not targets:
            raise ParameterError("top-bottom-coding needs a numeric attribute, and the table has none")
        for name, val in (("top", self.top), ("bottom", self.bottom), ("top_replacement", self.top_replacement),
                          ("bottom_replacement", self.bottom_replacement)):
            if isinstance(val, Mapping):
                extra = sorted(set(val) - set(targets) - {"*"})
                if extra:
                    raise ParameterError(f"{name} names column {extra[0]!r}, which is not coded")
        for c in targets:
            x = df[c].dropna().to_numpy(dtype=float)
            if x.size == 0:
                raise SchemaError(f"column {c!r} has no observed value to code")
            whole = c in schema.integer or c in schema.dates
            bounds: list[float | None] = []
            reps: list[float | str | None] = []
            for side, spec, rep in (("bottom", self.bottom, self.bottom_replacement),
                                    ("top", self.top, self.top_replacement)):
                v = _per_column(spec, c, None) if isinstance(spec, Mapping) else spec
                if v is None:
                    bounds.append(None)
                    reps.append(None)
                    continue
                kind, b = parse_bound(c, v)
                bound = float(np.quantile(x, b)) if kind == "quantile" else b
                r = _per_column(rep, c, None) if isinstance(rep, Mapping) else rep
                if whole and abs(bound - round(bound)) <= 1e-9 * max(1.0, abs(bound)):
                    bound = float(round(bound))  # a quantile's float noise: 24.000000000000004
                if r is None:
                    r = bound
                    if whole and bound != math.floor(bound):
                        # a quantile between two whole numbers: the bound moves to a whole number
                        r = bound = float(math.floor(bound) if side == "top" else math.ceil(bound))
                if r != "label" and whole and float(r) != math.floor(float(r)):
                    raise ParameterError(f"{side}_replacement {r!r} for the whole-number column {c!r} is not a "
                                         "whole number")
                bounds.append(bound)
                reps.append(r if r == "label" else float(r))
            if bounds[0] is not None and bounds[1] is not None and bounds[0] > bounds[1]:
                raise ParameterError(f"the bottom bound of {c!r} ({bounds[0]:g}) is above its top bound ({bounds[1]:g})")
            self.bounds_[c] = (bounds[0], bounds[1])
            self.replacements_[c] = (reps[0], reps[1])
        self.labelled_ = {c: _coding_labels(self.bounds_[c], self.replacements_[c], df[c].dropna().to_numpy(dtype=float))
                          for c in targets if "label" in self.replacements_[c]}

    def _output_dtypes(self, like: pd.DataFrame) -> dict[str, Any]:
        return {c: pd.CategoricalDtype(labels, ordered=True) for c, labels in getattr(self, "labelled_", {}).items()
                if c in like.columns}

    def _output_schema(self, schema: Schema) -> Schema:
        if not self.labelled_:
            return schema
        return recoded_schema(schema, self.labelled_, {})

    def _transform(self, df: pd.DataFrame, schema: Schema, rng: np.random.Generator) -> pd.DataFrame:
        out = df.copy()
        for c, (lo, hi) in self.bounds_.items():
            x = df[c].to_numpy(dtype=float)
            rlo, rhi = self.replacements_[c]
            below = (x < lo) if lo is not None else np.zeros(x.shape, dtype=bool)
            above = (x > hi) if hi is not None else np.zeros(x.shape, dtype=bool)
            if c in self.labelled_:
                kept = np.isfinite(x) & ~below & ~above
                unseen = kept & ~pd.Series([_num_label(v) for v in x]).isin(self.labelled_[c]).to_numpy()
                if unseen.any():
                    row = df.index[np.flatnonzero(unseen)[0]]
                    raise SchemaError(f"column {c!r} holds a value fit did not see (first at row {row!r}), which has no "
                                      "label among the fitted ones; fit on these records")
                vals = np.array([_num_label(v) if np.isfinite(v) else None for v in x], dtype=object)
                if lo is not None:
                    vals[below] = rlo if rlo != "label" else format_interval(-np.inf, lo, closed_right=False)
                if hi is not None:
                    vals[above] = rhi if rhi != "label" else format_interval(hi, np.inf, closed_right=False)
                vals = np.array([_num_label(v) if isinstance(v, float) else v for v in vals], dtype=object)
                out[c] = pd.Series(vals, index=df.index, dtype=object)
                continue
            y = x.copy()
            if lo is not None:
                y[below] = rlo
            if hi is not None:
                y[above] = rhi
            out[c] = y
        return out


__all__ = ["Recode", "TopBottomCoding", "cut", "interval_labels", "parse_bound", "r_jitter", "recoded_schema",
           "round_breaks", "round_width", "sdc_breaks",
           "width_breaks"]
