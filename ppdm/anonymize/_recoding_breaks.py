"""Break points and labels of global recoding and top/bottom coding.

R's and sdcMicro's interval arithmetic (:func:`sdc_breaks`, :func:`round_breaks`,
:func:`width_breaks`, :func:`cut` and R's ``cut`` labels), the date periods, cohorts and bands,
the checks of declared breaks, and the recoded schema. Split from
:mod:`ppdm.anonymize.recoding`, which keeps the two registered techniques (their module is
recorded in every release's provenance) and re-exports every name here.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from ppdm.data.generalization import cohort_label, format_interval, parse_interval
from ppdm.data.schema import Schema
from ppdm.data.types import cohort_start, is_iso_date, parse_iso_date
from ppdm.errors import ParameterError, SchemaError

NUMERIC_METHODS = ("equal-width", "log-equal-width", "equal-frequency", "round-width")


#: the round widths of ``method="round-width"``: these times a power of ten (as R's ``pretty`` uses)
ROUND_UNITS = (1.0, 2.0, 5.0, 10.0)


OUTSIDE = ("error", "missing")


TIES = ("merge", "jitter")


DATE_PERIODS = ("month", "year")


#: what a date column may become, in the words refusals use
DATE_MODES = {"period": "date_period", "cohort": "cohort", "age": "age_at", "breaks": "break dates"}


#: significant digits of interval labels (R's cut: dig.lab = 8 in globalRecode), raised while two
#: neighbouring break points would get the same label or a label would misstate its values
LABEL_DIGITS = 8


MAX_LABEL_DIGITS = 17


# ------------------------------------------------------------------------ break points
def r_round(v: np.ndarray) -> np.ndarray:
    """R's ``round``: halves to even (``round(8.5) == 8``), as NumPy does."""
    return np.round(np.asarray(v, dtype=float))


def sdc_breaks(x: np.ndarray, n: int, method: str, *, rng: np.random.Generator | None = None,
               ties: str = "merge") -> tuple[np.ndarray, bool, bool]:
    """sdcMicro's break points for ``n`` intervals: ``(breaks, include_lowest, jittered)``.

    * ``equal-width``: ``seq(min − 1, max + 1, length.out = n + 1)`` (the ±1 is in the
      column's units);
    * ``log-equal-width``: ``exp(seq(log(min) − 1, log(max) + 1, length.out = n + 1))``; needs
      positive values (sdcMicro fails on a zero);
    * ``equal-frequency``: R's type-7 quantiles at ``(0:n)/n``.

    Equal-width and log-equal-width breaks are rounded to whole numbers when the rounded
    values stay distinct. The lowest interval is closed on the left (``include.lowest``),
    except with one interval. Tied quantiles are merged (``ties="merge"``: fewer intervals,
    no value lost) or, as sdcMicro does, jittered (``ties="jitter"``: R's ``jitter`` with
    ``rng``; values may then fall outside every interval).
    """
    v = np.asarray(x, dtype=float)
    lo, hi = float(v.min()), float(v.max())
    jittered = False
    if n == 1:  # one interval, for every method: (min − 1, max + 1]
        return np.array([lo - 1.0, hi + 1.0]), False, False
    if method == "equal-width":
        b = np.linspace(lo - 1.0, hi + 1.0, n + 1)
    elif method == "log-equal-width":
        if lo <= 0:
            raise ParameterError("log-equal-width intervals need positive values, and the column holds "
                                 f"{'zero' if lo == 0 else 'negative values'} (sdcMicro's logEqui fails there too)")
        b = np.exp(np.linspace(math.log(lo) - 1.0, math.log(hi) + 1.0, n + 1))
    elif method == "equal-frequency":
        b = np.quantile(v, np.arange(n + 1) / n)
        if np.unique(b).size < b.size:
            if ties == "jitter":
                b = np.sort(r_jitter(b, rng if rng is not None else np.random.default_rng()))
                jittered = True
            else:
                b = np.unique(b)
        if b.size < 2:  # a constant column: one interval around it
            b = np.array([lo - 1.0, hi + 1.0])
        return b, True, jittered
    else:  # pragma: no cover - checked by the technique
        raise ParameterError(f"unknown method {method!r}")
    rb = r_round(b)
    if np.unique(rb).size == rb.size:
        b = rb
    return b, True, jittered


def round_width(low: float, high: float, n: int) -> float:
    """The round interval width for about ``n`` intervals over ``[low, high]``: 1, 2 or 5 times a
    power of ten, the one nearest ``(high − low) / n`` on the log scale (the widths a statistics
    office publishes, and the units R's ``pretty`` picks from)."""
    span = float(high) - float(low)
    cell = span / max(int(n), 1)
    if not (cell > 0 and math.isfinite(cell)) or not math.isfinite(10.0 ** math.floor(math.log10(cell))):
        return 1.0
    base = 10.0 ** math.floor(math.log10(cell))
    if base == 0:
        return 1.0
    return min((u * base for u in ROUND_UNITS), key=lambda w: (abs(math.log(w / cell)), -w))


def round_breaks(x: np.ndarray, n: int) -> np.ndarray:
    """Break points of intervals ``(a, a + w]`` of a round width ``w`` (:func:`round_width`)
    anchored at multiples of ``w``, from the last multiple below the smallest value to the first
    multiple at or above the largest (ages 17 to 90 in 10-year bands: 10, 20, …, 90)."""
    v = np.asarray(x, dtype=float)
    lo, hi = float(v.min()), float(v.max())
    return width_breaks(lo, hi, round_width(lo, hi, n))


def width_breaks(lo: float, hi: float, w: float) -> np.ndarray:
    """Break points of intervals ``(a, a + w]`` of width ``w`` anchored at multiples of ``w``, from
    the last multiple below ``lo`` to the first at or above ``hi``. Widths that divide one another
    give nested intervals (each ``(a, a + 10]`` is a union of ``(b, b + 5]``): the generalisation
    hierarchy of :mod:`ppdm.anonymize.generalization_search`."""
    m0 = math.ceil(lo / w) - 1  # the first break lies strictly below lo, so lo is in the first (a, b]
    m1 = math.ceil(hi / w)
    # multiples of w from whole numbers, 0.1-wide breaks reading 0.3 rather than 0.30000000000000004
    b = np.array([float(f"{m * w:.12g}") for m in range(m0, m1 + 1)])
    if b.size < 2 or np.any(np.diff(b) <= 0) or not (b[0] < lo and b[-1] >= hi):
        b = np.arange(m0, m1 + 1, dtype=float) * w  # a width too fine for 12 digits: unrounded multiples
    return b


def r_jitter(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """R's ``jitter(x)`` (factor 1, no amount): uniform noise of ±d/5, d the smallest gap between
    distinct values of x rounded to 3 significant digits of its range (R's documentation)."""
    v = np.asarray(x, dtype=float)
    z = float(v.max() - v.min())
    if z == 0:
        z = abs(float(v[0]))
    if z == 0:
        z = 1.0
    xx = np.unique(np.round(v, int(3 - math.floor(math.log10(z)))))
    d = float(np.diff(xx).min()) if xx.size > 1 else (float(xx[0]) / 10 if xx[0] != 0 else z / 10)
    amount = abs(d) / 5.0
    return v + rng.uniform(-amount, amount, size=v.size)


def interval_labels(breaks: np.ndarray, include_lowest: bool, values: np.ndarray | None = None) -> list[str]:
    """The labels R's ``cut(..., right = TRUE)`` gives the intervals between ``breaks``,
    with ``formatC(digits = 8, format = "g")`` numbers, and more digits (up to 17) while two
    neighbouring break points would read the same, or while a label read back as an interval
    would not hold one of ``values`` its break points put in it (e.g. a top break 100000.625
    that 8 digits write as 100000.62): a published label must stand for what it holds."""
    b = np.asarray(breaks, dtype=float)
    want = None if values is None else cut(values, b, include_lowest)
    for digits in range(LABEL_DIGITS, MAX_LABEL_DIGITS + 1):
        labels = [format_interval(b[i], b[i + 1], closed_left=include_lowest and i == 0, digits=digits)
                  for i in range(b.size - 1)]
        ends = [lab.split(",") for lab in labels]
        if any(ends[i][1][:-1] == ends[i][0][1:] for i in range(len(ends))):
            continue
        if want is not None:
            got = np.full(want.shape, -1, dtype=np.int64)
            for i, lab in enumerate(labels):
                iv = parse_interval(lab)
                got[(got < 0) & iv.contains(values)] = i  # type: ignore[union-attr]  # format_interval's labels parse
            if not np.array_equal(got, want):
                continue
        break
    return labels


def cut(x: np.ndarray, breaks: np.ndarray, include_lowest: bool) -> np.ndarray:
    """The interval of each value (−1 outside every interval or missing), intervals (a, b]."""
    v = np.asarray(x, dtype=float)
    b = np.asarray(breaks, dtype=float)
    idx = np.searchsorted(b, v, side="left") - 1
    if include_lowest:
        idx = np.where(v == b[0], 0, idx)
    bad = (idx < 0) | (idx >= b.size - 1) | np.isnan(v)
    return np.where(bad, -1, idx).astype(np.int64)


# ------------------------------------------------------------------------ parameters
def _per_column(value: Any, column: str, default: Any = None) -> Any:
    if isinstance(value, Mapping):
        if column in value:
            return value[column]
        return value.get("*", default)
    return default if value is None else value


def _check_breaks(column: str, value: Any) -> int | np.ndarray:
    if isinstance(value, bool):
        raise ParameterError(f"breaks for {column!r} must be a number of intervals or a list of break points")
    if isinstance(value, (int, np.integer)):
        if value < 1:
            raise ParameterError(f"breaks for {column!r} must be at least 1 interval, got {value}")
        return int(value)
    if isinstance(value, (list, tuple, np.ndarray)) and any(isinstance(v, str) and is_iso_date(v) for v in value):
        return _date_breaks(column, list(value))
    if isinstance(value, (list, tuple, np.ndarray)):
        try:
            b = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            raise ParameterError(f"breaks for {column!r} must be numbers, or dates written as YYYY-MM-DD, "
                                 f"got {value!r}") from None
        if b.ndim != 1 or b.size < 2 or np.isnan(b).any():
            raise ParameterError(f"breaks for {column!r} must list at least two break points, got {value!r}")
        if np.any(np.diff(b) <= 0):
            raise ParameterError(f"breaks for {column!r} must increase strictly, got {value!r}")
        return b
    raise ParameterError(f"breaks for {column!r} must be a number of intervals or a list of break points, "
                         f"got {value!r}")


def _date_breaks(column: str, value: list[Any]) -> np.ndarray:
    """Break dates (days since 1970-01-01) from ISO text, of a date column's bands ``[a,b)``; the
    first may be ``"-Inf"`` and the last ``"Inf"`` (open ends, so no band's end is an extreme of x)."""
    days = []
    for i, v in enumerate(value):
        end = str(v).strip() if isinstance(v, str) else None
        if i == 0 and end in ("-Inf", "-inf") or i == len(value) - 1 and end in ("Inf", "inf"):
            days.append(-math.inf if i == 0 else math.inf)
            continue
        if not is_iso_date(v):
            raise ParameterError(f"breaks for {column!r} mix dates and other values ({v!r}); give every break as a "
                                 "date written as YYYY-MM-DD (the first may be '-Inf', the last 'Inf')")
        try:
            days.append(parse_iso_date(v, f"the break {v!r} of {column!r}"))
        except SchemaError as e:
            raise ParameterError(str(e)) from None
    b = np.asarray(days, dtype=float)
    if b.size < 2:
        raise ParameterError(f"breaks for {column!r} must list at least two break dates, got {value!r}")
    if np.any(np.diff(b) <= 0):
        raise ParameterError(f"break dates for {column!r} must increase strictly, got {value!r}")
    return b


def _check_cohort(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 2 <= value <= 100:
        raise ParameterError(f"cohort must be a whole number of years from 2 to 100 (5 or 10 for birth cohorts), "
                             f"got {value!r}")
    return int(value)


def _check_age_at(value: Any) -> float:
    try:
        return parse_iso_date(value, "age_at")
    except SchemaError as e:
        raise ParameterError(f"{e} (the date on which ages are counted)") from None


def _reaches(value: Any, column: str) -> tuple[Any, str | None]:
    """What a per-column parameter gives ``column`` and how: ``"named"`` (a dict key),
    ``"all"`` (a single value, or a dict's ``"*"``), or ``None`` (nothing)."""
    if value is None:
        return None, None
    if isinstance(value, Mapping):
        if column in value:
            return value[column], "named"
        if "*" in value:
            return value["*"], "all"
        return None, None
    return value, "all"


def _values(value: Any) -> list[Any]:
    return list(value.values()) if isinstance(value, Mapping) else [value]


def _py_value(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


def _label_order(c: str, mapping: dict[Any, Any], schema: Schema) -> list[Any]:
    """Labels in the order of their first original in the declared categories (or the
    hierarchy, or the sorted originals)."""
    declared = schema.categories.get(c) or list(schema.hierarchies.get(c, {}))
    first: dict[Any, int] = {}
    pos = {str(v): i for i, v in enumerate(declared)}
    for i, orig in enumerate(sorted(mapping, key=lambda v: (pos.get(str(v), len(pos)), str(v)))):
        first.setdefault(mapping[orig], i)
    return sorted(first, key=lambda lab: first[lab])


def _ancestors(mapping: dict[Any, Any]) -> dict[Any, list[Any]]:
    return {k: [v] for k, v in mapping.items() if k != v}


def _period_labels(days: np.ndarray, period: str) -> list[Any]:
    from ppdm.data.types import generalize_dates

    start = generalize_dates(days, period)
    ok = np.isfinite(start)
    d = (np.datetime64("1970-01-01", "D") + np.where(ok, start, 0).astype("timedelta64[D]")).astype(str)
    keep = 7 if period == "month" else 4
    return [s[:keep] if o else None for s, o in zip(d.tolist(), ok.tolist(), strict=True)]


def _cohort_labels(days: np.ndarray, width: int) -> list[Any]:
    start = cohort_start(days, width)
    return [cohort_label(int(v), width) if np.isfinite(v) else None for v in start]


def _cut_dates(days: np.ndarray, breaks: np.ndarray) -> np.ndarray:
    """The band ``[a,b)`` of each date (−1 outside every band or missing)."""
    v = np.asarray(days, dtype=float)
    b = np.asarray(breaks, dtype=float)
    idx = np.searchsorted(b, v, side="right") - 1
    bad = (idx < 0) | (idx >= b.size - 1) | np.isnan(v)
    return np.where(bad, -1, idx).astype(np.int64)


def recoded_schema(schema: Schema, labels: Mapping[str, list[Any]],
                   ancestors: Mapping[str, dict[Any, list[Any]]]) -> Schema:
    """``schema`` with every column of ``labels`` categorical, its labels declared in order, and
    the originals' labels as a hierarchy where categories were grouped (the release's schema)."""
    from dataclasses import replace

    recoded = set(labels)
    numeric = [c for c in schema.numeric if c not in recoded]
    categorical = list(schema.categorical) + [c for c in schema.numeric if c in recoded]
    cats = {**{c: v for c, v in schema.categories.items() if c not in recoded},
            **{c: list(v) for c, v in labels.items()}}
    hier = {c: h for c, h in schema.hierarchies.items() if c not in recoded}
    for c, anc in ancestors.items():
        base = schema.hierarchies.get(c, {})
        merged = {k: list(dict.fromkeys([*v, *(base.get(k, []) or [])])) for k, v in anc.items()}
        if merged:
            hier[c] = merged
    return replace(schema, numeric=numeric, categorical=categorical,
                   integer=[c for c in schema.integer if c not in recoded],
                   bounds={c: b for c, b in schema.bounds.items() if c not in recoded},
                   dates={c: f for c, f in schema.dates.items() if c not in recoded},
                   categories=cats, hierarchies=hier)


# ============================================================== top and bottom coding
_PERCENT = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*%\s*$")


_QUANT = re.compile(r"^\s*q\s*(\d*\.?\d+)\s*$", re.IGNORECASE)


def parse_bound(column: str, value: Any) -> tuple[str, float]:
    """``("value", v)`` for a number, ``("quantile", q)`` for ``"99%"`` or ``"q0.99"``."""
    if isinstance(value, bool):
        raise ParameterError(f"the bound of {column!r} must be a number or a quantile such as '99%', got {value!r}")
    if isinstance(value, (int, float, np.integer, np.floating)):
        if not np.isfinite(value):
            raise ParameterError(f"the bound of {column!r} must be finite, got {value!r}")
        return "value", float(value)
    if isinstance(value, str):
        m = _PERCENT.match(value)
        q = float(m.group(1)) / 100 if m else None
        if q is None:
            mq = _QUANT.match(value)
            q = float(mq.group(1)) if mq else None
        if q is not None and 0.0 <= q <= 1.0:
            return "quantile", q
    raise ParameterError(f"the bound of {column!r} must be a number or a quantile such as '99%' or 'q0.99', "
                         f"got {value!r}")


def _num_label(v: float) -> str:
    return f"{v:.15g}"


def _coding_labels(bounds: tuple[float | None, float | None], reps: tuple[Any, Any], x: np.ndarray) -> list[str]:
    """The labels of a labelled coding in order: the bottom label, the kept numbers, the top label."""
    lo, hi = bounds
    rlo, rhi = reps
    keep = np.ones(x.shape, dtype=bool)
    if lo is not None:
        keep &= x >= lo
    if hi is not None:
        keep &= x <= hi
    vals = sorted(set(np.unique(x[keep]).tolist()))
    labels: list[Any] = []
    if lo is not None:
        labels.append(format_interval(-np.inf, lo, closed_right=False) if rlo == "label" else float(rlo))
    labels += vals
    if hi is not None:
        labels.append(format_interval(hi, np.inf, closed_right=False) if rhi == "label" else float(rhi))
    out: list[str] = []
    for lab in labels:
        t = _num_label(lab) if isinstance(lab, float) else lab
        if t not in out:
            out.append(t)
    return out
