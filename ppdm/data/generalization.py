"""Released values that stand for a set of original values: intervals and category groups.

Global recoding, top/bottom coding and local suppression publish a value that is not an
original value but a *set* of them: an age band ``(20,30]``, a merged category
``Married`` standing for ``Married-civ-spouse`` and ``Married-AF-spouse``, a suppressed
(missing) cell standing for any value. An intruder who knows a person's original value
matches it to every released value whose set contains it. This module holds that
relation, so techniques that make such values and measures that match on them agree on
what a released value covers:

* **intervals** are written as R's ``cut`` writes them, which is what sdcMicro's
  ``globalRecode`` publishes: ``(a,b]``, ``[a,b]``, ``[a,b)``, ``(a,b)``, with the
  numbers in C's ``%.8g`` form (``formatC(digits=8, format="g")``: ``10``, ``1e+08``,
  ``2.7182818e+08``); an open end is ``-Inf`` or ``Inf`` (``(60,Inf]``);
* **category groups** come from a hierarchy: for each original category, the labels of
  its generalisations from fine to coarse (ARX's hierarchy levels), see :func:`covers`;
* a **missing** released cell covers every value (sdcMicro's rule for suppressed key
  values), and a missing original value is unknown to the intruder, so it is covered by
  every released value.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

#: significant digits of interval end points in labels (R's ``formatC(digits=8, format="g")``)
LABEL_DIGITS = 8

_NUMBER = r"[-+]?(?:Inf|inf|(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)"
_INTERVAL = re.compile(rf"^\s*([\[(])\s*({_NUMBER})\s*,\s*({_NUMBER})\s*([\])])\s*$")


@dataclass(frozen=True)
class Interval:
    """An interval of the real line, as a recoded label stands for it."""

    low: float
    high: float
    closed_left: bool
    closed_right: bool

    def contains(self, values: Any) -> np.ndarray:
        """Which of ``values`` (array-like of numbers; NaN is never contained) lie in the interval."""
        v = np.asarray(values, dtype=float)
        with np.errstate(invalid="ignore"):
            left = v >= self.low if self.closed_left else v > self.low
            right = v <= self.high if self.closed_right else v < self.high
        return left & right

    def label(self, digits: int = LABEL_DIGITS) -> str:
        """The interval's label (see :func:`format_interval`)."""
        return format_interval(self.low, self.high, closed_left=self.closed_left,
                               closed_right=self.closed_right, digits=digits)


def format_number(v: float, digits: int = LABEL_DIGITS) -> str:
    """An end point as labels write it: C's ``%.{digits}g``; infinities as ``Inf``/``-Inf``."""
    f = float(v)
    if math.isinf(f):
        return "Inf" if f > 0 else "-Inf"
    return f"{f:.{digits}g}"


def format_interval(low: float, high: float, *, closed_left: bool = False, closed_right: bool = True,
                    digits: int = LABEL_DIGITS) -> str:
    """The label of an interval, e.g. ``format_interval(10, 20) == "(10,20]"``."""
    return (("[" if closed_left else "(") + format_number(low, digits) + "," + format_number(high, digits)
            + ("]" if closed_right else ")"))


def parse_interval(label: Any) -> Interval | None:
    """The interval a label stands for, or ``None`` when the label is not an interval."""
    if not isinstance(label, str):
        return None
    m = _INTERVAL.match(label)
    if m is None:
        return None
    low, high = float(m.group(2)), float(m.group(3))
    if not low <= high:
        return None
    return Interval(low, high, m.group(1) == "[", m.group(4) == "]")


def interval_of_labels(labels: pd.Series | Sequence[Any]) -> dict[Any, Interval] | None:
    """Each distinct non-missing label's interval, or ``None`` when one of them is not an interval."""
    out: dict[Any, Interval] = {}
    for lab in pd.unique(pd.Series(labels, dtype=object).dropna()):
        iv = parse_interval(lab)
        if iv is None:
            return None
        out[lab] = iv
    return out


def covers(released: pd.Series | Sequence[Any], original: pd.Series | Sequence[Any], *,
           ancestors: Mapping[Any, Sequence[Any]] | None = None) -> np.ndarray:
    """Row by row, whether each released value stands for the original value beside it.

    A released value covers an original one when it is equal to it, when it is missing
    (suppressed), when the original is missing (unknown to the intruder), when it is an
    interval label containing the (numeric) original, or when it is one of the original's
    generalisations in ``ancestors`` (``{original category: [labels, fine to coarse]}``).
    Both sequences must have the same length; the comparison is element-wise (no n×n).
    """
    z = pd.Series(released, dtype=object).reset_index(drop=True)
    x = pd.Series(original, dtype=object).reset_index(drop=True)
    if len(z) != len(x):
        raise ValueError(f"covers needs sequences of the same length, got {len(z)} and {len(x)}")
    zmiss = z.isna().to_numpy()
    xmiss = x.isna().to_numpy()
    out = zmiss | xmiss
    rest = ~out
    if not rest.any():
        return out
    zr, xr = z[rest], x[rest]
    hit = (zr.to_numpy() == xr.to_numpy()) | (zr.astype(str).to_numpy() == xr.astype(str).to_numpy())
    # intervals: each distinct label parsed once, numbers compared vectorised per label (the
    # originals read as numbers only when some label is an interval: text parses slowly)
    xnum: np.ndarray | None = None
    for lab in pd.unique(zr[~hit]):
        iv = parse_interval(lab)
        if iv is None:
            continue
        if xnum is None:
            xnum = pd.to_numeric(xr, errors="coerce").to_numpy(dtype=float)
        sel = (zr.to_numpy() == lab) & ~hit
        hit[sel] = iv.contains(xnum[sel])
    if ancestors:
        for orig, ups in ancestors.items():
            sel = (xr.to_numpy() == orig) & ~hit
            if sel.any():
                hit[sel] = zr[sel].isin(list(ups)).to_numpy()
    out[rest] = hit
    return out


_PERIOD = re.compile(r"^\d{4}(-\d{2})?$")
_COHORT = re.compile(r"^(\d{4})-(\d{4})$")
_DAY = r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?"
_DATE_INTERVAL = re.compile(rf"^\s*([\[(])\s*(-Inf|{_DAY})\s*,\s*(Inf|{_DAY})\s*([\])])\s*$")


def cohort_label(start: int, width: int) -> str:
    """The label of the birth cohort of ``width`` years starting in year ``start``: first and
    last year, both included (``cohort_label(1940, 10) == "1940-1949"``), as offices write them."""
    return f"{int(start):04d}-{int(start) + int(width) - 1:04d}"


def format_date_interval(low: float, high: float) -> str:
    """The label of the dates from ``low`` up to, not including, ``high`` (days since 1970-01-01;
    ±inf for an open end): ``[1950-01-01,1960-01-01)``, ``(-Inf,1950-01-01)``, ``[2000-01-01,Inf)``.
    Date intervals are closed on the left, as periods are: a break date starts a band."""
    from ppdm.data.types import format_day

    lo = "-Inf" if math.isinf(low) else format_day(low)
    hi = "Inf" if math.isinf(high) else format_day(high)
    return ("(" if math.isinf(low) else "[") + lo + "," + hi + ")"


def parse_date_label(label: Any) -> Interval | None:
    """The dates (days since 1970-01-01) a date label stands for, or ``None`` when ``label`` is
    not one: a year (``2021``), a month (``2021-03``), a cohort (``1940-1949``, both years
    included) or a date interval (``[1950-01-01,1960-01-01)``, :func:`format_date_interval`)."""
    from ppdm.data.types import DAY, EPOCH

    if not isinstance(label, str):
        return None

    def day(text: str) -> float:
        return float((pd.Timestamp(text) - EPOCH) / DAY)

    try:
        m = _DATE_INTERVAL.match(label)
        if m is not None:
            lo = -math.inf if m.group(2) == "-Inf" else day(m.group(2))
            hi = math.inf if m.group(3) == "Inf" else day(m.group(3))
            return Interval(lo, hi, m.group(1) == "[", m.group(4) == "]") if lo <= hi else None
        m = _COHORT.match(label)
        if m is not None:
            a, b = int(m.group(1)), int(m.group(2))
            return Interval(day(f"{a:04d}-01-01"), day(f"{b + 1:04d}-01-01"), True, False) if a <= b else None
        if _PERIOD.match(label):
            start = pd.Period(label, freq="M" if len(label) == 7 else "Y")
            return Interval(day(str(start.start_time.date())), day(str((start + 1).start_time.date())), True, False)
    except (ValueError, OverflowError):  # an impossible month or a year pandas cannot hold
        return None
    return None


def _label_ranges(out: np.ndarray, todo: np.ndarray, labs: Sequence[Any],
                  parse: Callable[[Any], Interval | None], values: np.ndarray) -> np.ndarray:
    """Give each value still ``todo`` the first label ``parse`` reads as a range holding it
    (written into ``out``); returns what is left to do."""
    for lab in labs:
        iv = parse(lab)
        if iv is None:
            continue
        sel = todo & iv.contains(values)
        out[sel] = lab
        todo = todo & ~sel
    return todo


def generalise(original: pd.Series | Sequence[Any], labels: Sequence[Any], *,
               ancestors: Mapping[Any, Sequence[Any]] | None = None) -> pd.Series:
    """Each original value as the released label that stands for it, given a column's labels
    (its recoded categories in order): the equal label, the interval label containing a number,
    the month or year (``2021-03``, ``2021``), the birth cohort (``1940-1949``) or the date
    interval (``[1950-01-01,1960-01-01)``, :func:`parse_date_label`) of a date, or the label among the value's
    ``ancestors`` (a hierarchy). A value no label stands for becomes missing, as recoding with
    ``outside="missing"`` publishes it. Used to compare an original with a recoded release on
    the release's own categories (what :func:`covers` does record by record)."""
    x = pd.Series(original).reset_index(drop=True)
    labs = [lab for lab in labels if not (isinstance(lab, float) and math.isnan(lab))]
    out = np.full(len(x), None, dtype=object)
    known = {str(lab): lab for lab in labs}
    miss = x.isna().to_numpy()
    is_date = pd.api.types.is_datetime64_any_dtype(x)
    text = x.astype(str).to_numpy() if not is_date else np.full(len(x), "", dtype=object)
    num = pd.to_numeric(x, errors="coerce").to_numpy(dtype=float) if not is_date else np.full(len(x), np.nan)
    # a number written as the labels write kept numbers (top/bottom coding): 40.0 -> "40"
    short = np.array([f"{v:.15g}" if np.isfinite(v) else "" for v in num], dtype=object)
    for i in range(len(x)):
        if miss[i]:
            continue
        hit = known.get(text[i], known.get(short[i]))
        if hit is not None:
            out[i] = hit
    todo = (out == None) & ~miss  # noqa: E711 - elementwise test of an object array
    if todo.any() and is_date:
        periods = [lab for lab in labs if isinstance(lab, str) and _PERIOD.match(lab)]
        if periods:
            width = len(periods[0])
            fmt = "%Y-%m" if width == 7 else "%Y"
            stamp = x.dt.strftime(fmt).to_numpy(dtype=object)
            pset = set(periods)
            for i in np.flatnonzero(todo).tolist():
                if stamp[i] in pset:
                    out[i] = stamp[i]
            todo = (out == None) & ~miss  # noqa: E711
    if todo.any() and is_date:
        # birth cohorts and date intervals: each label read once as the dates it stands for
        from ppdm.data.types import to_time_axis

        todo = _label_ranges(out, todo, labs, parse_date_label, to_time_axis(x))
    if todo.any():
        todo = _label_ranges(out, todo, labs, parse_interval, num)
    if todo.any() and ancestors:
        lab_set = set(known)
        for i in np.flatnonzero(todo).tolist():
            ups = ancestors.get(x.iloc[i]) or ancestors.get(text[i]) or []
            for u in ups:
                if str(u) in lab_set:
                    out[i] = known[str(u)]
                    break
    return pd.Series(out, index=pd.Series(original).index if isinstance(original, pd.Series) else None,
                     dtype=object)


def recoded_view(schema: Any, released: Any, columns: Sequence[str], *,
                 ages: Mapping[str, float] | None = None) -> tuple[list[str], Any, Any]:
    """How to compare x with a release that recoded some columns, on the release's own categories.

    ``schema`` is x's :class:`~ppdm.data.schema.Schema`, ``released`` the release's output schema
    (recoding's interval labels and category groups, declared in order, with their hierarchies).
    Returns ``(cols, recode, schema)``: the columns of ``columns`` the release recoded (categorical
    in ``released``, not the class, and numeric in x or with other categories or hierarchy), a
    function turning those columns of a table of x's records into the labels that stand for their
    values (:func:`generalise`), and x's schema with those columns categorical on the labels. One
    implementation for ``ppdm evaluate`` and for the trials of ``ppdm recommend``. ``ages`` gives
    the reference date (days since 1970-01-01) of date columns released as ages (recoding's
    ``age_at``): their dates become whole years of age before they are read on the labels.
    """
    from dataclasses import replace

    cols = [c for c in columns if c in released.categorical and c != schema.class_column
            and (c in schema.numeric or released.categories.get(c) != schema.categories.get(c)
                 or released.hierarchies.get(c) != schema.hierarchies.get(c))]

    def labels(c: str) -> list[Any]:
        return list(released.categories.get(c) or [])

    def recode(df: pd.DataFrame) -> pd.DataFrame:
        df = df.copy()
        for c in cols:
            if c in df.columns:
                col = df[c]
                if ages and c in ages and pd.api.types.is_datetime64_any_dtype(col):
                    from ppdm.data.types import age_in_years, to_time_axis

                    col = pd.Series(age_in_years(to_time_axis(col), ages[c]), index=col.index)
                df[c] = generalise(col, labels(c), ancestors=released.hierarchies.get(c)).to_numpy()
        return df

    sch = replace(schema, numeric=[c for c in schema.numeric if c not in cols],
                  categorical=[*schema.categorical, *[c for c in cols if c not in schema.categorical]],
                  integer=[c for c in schema.integer if c not in cols],
                  bounds={c: b for c, b in schema.bounds.items() if c not in cols},
                  dates={c: f for c, f in schema.dates.items() if c not in cols},
                  categories={**schema.categories, **{c: labels(c) for c in cols if labels(c)}},
                  hierarchies={**schema.hierarchies, **{c: h for c, h in released.hierarchies.items() if c in cols}})
    return cols, recode, sch
