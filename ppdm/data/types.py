"""Column types beyond "numeric" and "categorical": dates, whole numbers with missing cells,
booleans, codes written with leading zeros, and the precision a column was written with.

Techniques and measures work on plain numbers (float64, NaN for a missing cell) and plain
category labels. This module converts between what a table holds and that working form:

* **dates and datetimes** are numeric attributes on a *time axis*: days since
  1970-01-01 (a float; whole days for a date without a time of day). A technique perturbs
  or rounds them like any number; :func:`restore_column` turns the result back into the
  column's datetime dtype, rounded to the resolution its text format shows (a day for
  ``%Y-%m-%d``, a second for ``%H:%M:%S``), and :func:`ppdm.data.io.write_table` writes
  them in that format again;
* **whole numbers with missing cells** are pandas' nullable ``Int64``: the working form
  is float64 with NaN, and the result is rounded back to whole numbers with the missing
  cells still missing;
* **booleans** are categorical attributes with the values ``True`` and ``False``
  (``boolean`` dtype when a cell is missing);
* **decimals**: :func:`decimals_of` finds how many decimals a float column was written
  with, so a release can be written with no more (:func:`round_to_decimals`): the float
  noise of arithmetic (``0.5720000000000001``) never reaches a file.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from ppdm.errors import PPDMError, SchemaError

#: the origin of the time axis
EPOCH = pd.Timestamp("1970-01-01")
#: one day, the unit of the time axis
DAY = pd.Timedelta(days=1)
#: the format a date column is written in when nothing else is known
DEFAULT_DATE_FORMAT = "%Y-%m-%d"
DEFAULT_DATETIME_FORMAT = "%Y-%m-%d %H:%M:%S"
#: at most this many decimals are looked for; a column needing more is written in full
MAX_DECIMALS = 15

#: (pattern of the text, strftime format); tried in this order on text columns
_DATE_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"\d{4}-\d{2}-\d{2}", "%Y-%m-%d"),
    (r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}", "%Y-%m-%d %H:%M:%S"),
    (r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}", "%Y-%m-%dT%H:%M:%S"),
    (r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}", "%Y-%m-%d %H:%M"),
    (r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}", "%Y-%m-%dT%H:%M"),
    (r"\d{4}/\d{2}/\d{2}", "%Y/%m/%d"),
    (r"\d{2}\.\d{2}\.\d{4}", "%d.%m.%Y"),
    (r"\d{2}/\d{2}/\d{4}", "%d/%m/%Y|%m/%d/%Y"),
)
_LEADING_ZERO = r"^\s*[+-]?0\d"  # a string, so pandas runs it vectorised (pyarrow) on text columns
_TRUE = frozenset({"true", "True", "TRUE"})
_FALSE = frozenset({"false", "False", "FALSE"})


# ----------------------------------------------------------------------- detection
def is_date_dtype(s: pd.Series | Any) -> bool:
    """Whether a column (or dtype) holds datetimes (time-zone naive or aware)."""
    dtype = getattr(s, "dtype", s)
    return bool(pd.api.types.is_datetime64_any_dtype(dtype))


def is_bool_column(s: pd.Series) -> bool:
    """Whether ``s`` holds booleans only (missing cells allowed): ``bool`` or ``boolean``
    dtype, or object values that are all ``True``/``False``."""
    if pd.api.types.is_bool_dtype(s):
        return True
    if not pd.api.types.is_object_dtype(s):
        return False
    vals = _distinct(s)
    return len(vals) > 0 and all(isinstance(v, (bool, np.bool_)) for v in vals)


def detect_date_format(text: pd.Series) -> str | None:
    """The strftime format every non-missing value of a text column is written in, or
    ``None`` when the column is not all dates of one known layout.

    Day/month order with slashes (``03/04/2021``) is read from the data: a first field
    above 12 makes it day first, a second above 12 month first; when neither says, the
    column stays text (declare its format in the schema, ``"dates": {"col": "%d/%m/%Y"}``).
    """
    vals = _distinct(text)
    if len(vals) == 0:
        return None
    s = pd.Series(vals, dtype="str").str.strip()
    for pattern, fmt in _DATE_PATTERNS:
        if not s.str.fullmatch(pattern).all():
            continue
        if "|" in fmt:
            first = s.str.slice(0, 2).astype(int)
            second = s.str.slice(3, 5).astype(int)
            if (first > 12).any() and not (second > 12).any():
                fmt = "%d/%m/%Y"
            elif (second > 12).any() and not (first > 12).any():
                fmt = "%m/%d/%Y"
            else:
                return None
        try:
            pd.to_datetime(s, format=fmt)
        except (ValueError, TypeError):
            return None
        return fmt
    return None


def has_leading_zero_code(text: pd.Series) -> bool:
    """Whether a column written as numbers holds a code with a leading zero (``0150``):
    read as a number, the zero would be lost."""
    vals = _distinct(text)
    if len(vals) == 0:
        return False
    return bool(pd.Series(vals, dtype="str").str.match(_LEADING_ZERO).any())


def written_as_whole(text: pd.Series) -> bool:
    """Whether every non-missing value of a numeric column was written without a decimal
    point or exponent (``12``, not ``12.0``)."""
    vals = pd.Series(_distinct(text), dtype="str")
    return bool(len(vals)) and not vals.str.contains(r"[.eE]", regex=True).any()


def as_bool(s: pd.Series) -> pd.Series:
    """``s`` as booleans: ``bool`` dtype, or nullable ``boolean`` when a cell is missing.
    Text ``true``/``false`` (any of three spellings) is accepted."""
    if pd.api.types.is_bool_dtype(s) and not s.isna().any():
        return s.astype(bool)
    # each distinct value is judged once, then looked up by its code (a loop over the
    # records took most of the time of reading a large table)
    codes, uniq = pd.factorize(s, use_na_sentinel=True)
    meaning = np.zeros(len(uniq) + 1, dtype=bool)  # the last entry: missing cells (code -1)
    for i, v in enumerate(np.asarray(uniq, dtype=object)):
        if isinstance(v, (bool, np.bool_)):
            meaning[i] = bool(v)
        elif isinstance(v, str) and v in _TRUE:
            meaning[i] = True
        elif isinstance(v, str) and v in _FALSE:
            meaning[i] = False
        else:
            raise SchemaError(f"column {s.name!r} holds {v!r}, which is not a boolean")
    values = meaning[codes]
    missing = codes < 0
    if not missing.any():
        return pd.Series(values, index=s.index, name=s.name)
    return pd.Series(pd.arrays.BooleanArray(values, missing), index=s.index, name=s.name)


def _distinct(s: pd.Series) -> np.ndarray:
    """The distinct non-missing values of ``s`` (detection looks at each value once)."""
    u = np.asarray(s.unique(), dtype=object)
    return u[~pd.isna(u)] if len(u) else u


def text_is_bool(text: pd.Series) -> bool:
    """Whether every non-missing value of a text column spells a boolean."""
    vals = _distinct(text)  # each value judged once
    return len(vals) > 0 and all(str(v) in _TRUE | _FALSE for v in vals)


# ------------------------------------------------------------------------ time axis
def to_time_axis(s: pd.Series) -> np.ndarray:
    """Days since 1970-01-01 of a datetime column (NaN for a missing date). Time-zone aware
    columns are measured in UTC."""
    if getattr(s.dt, "tz", None) is not None:
        s = s.dt.tz_convert("UTC").dt.tz_localize(None)
    delta = (s - EPOCH) / DAY
    return delta.to_numpy(dtype=float, na_value=np.nan)


def resolution_of(fmt: str | None) -> str:
    """The finest unit a strftime format shows: ``"D"``, ``"h"``, ``"min"``, ``"s"`` or
    ``"us"`` (a format with ``%f``)."""
    fmt = fmt or DEFAULT_DATE_FORMAT
    if "%f" in fmt:
        return "us"
    if "%S" in fmt or "%T" in fmt or "%X" in fmt or "%c" in fmt:
        return "s"
    if "%M" in fmt or "%R" in fmt:
        return "min"
    if "%H" in fmt or "%I" in fmt:
        return "h"
    return "D"


def from_time_axis(days: np.ndarray, like: pd.Series, fmt: str | None, column: str,
                   index: pd.Index | None = None) -> pd.Series:
    """Datetimes with the dtype of ``like`` from days since 1970-01-01, rounded to the
    resolution of ``fmt``, on ``index`` (default: ``like``'s, when the rows are the same).
    A value beyond the range pandas can hold raises naming the column."""
    v = np.asarray(days, dtype=float)
    finite = np.isfinite(v)
    lo, hi = (pd.Timestamp.min - EPOCH) / DAY, (pd.Timestamp.max - EPOCH) / DAY
    if np.any(finite & ((v < lo + 1) | (v > hi - 1))):
        raise PPDMError(f"date column {column!r} received a value outside the range of dates (years 1677 to 2262)")
    # whole microseconds first: the time axis' float carries no finer meaning
    us = np.where(finite, np.rint(np.where(finite, v, 0.0) * 86_400_000_000.0), 0).astype(np.int64)
    out = pd.Series(EPOCH + pd.to_timedelta(us, unit="us"), index=like.index if index is None else index,
                    name=like.name)
    res = resolution_of(fmt)
    if res != "us":
        out = out.dt.round(res)
    out = out.where(finite)  # a datetime Series fills with NaT
    tz = getattr(like.dt, "tz", None) if is_date_dtype(like) else None
    if tz is not None:
        out = out.dt.tz_localize("UTC").dt.tz_convert(tz)
    try:
        return out.astype(like.dtype)
    except (TypeError, ValueError):
        return out


def whole_days(s: pd.Series) -> bool:
    """Whether every date of a datetime column falls on midnight (a date without time)."""
    v = s.dropna()
    if getattr(v.dt, "tz", None) is not None:
        v = v.dt.tz_localize(None)
    return bool((v == v.dt.normalize()).all())


def default_date_format(s: pd.Series) -> str:
    """ISO format for a datetime column: the date alone when every value is at midnight."""
    return DEFAULT_DATE_FORMAT if whole_days(s) else DEFAULT_DATETIME_FORMAT


def generalize_dates(days: np.ndarray, period: str) -> np.ndarray:
    """Days since 1970-01-01 moved to the first day of their month (``period="month"``) or
    year (``"year"``): the generalisation of a date to a coarser one."""
    v = np.asarray(days, dtype=float)
    finite = np.isfinite(v)
    d = (np.datetime64("1970-01-01", "D") + np.where(finite, np.floor(v), 0).astype("timedelta64[D]"))
    unit = {"month": "M", "year": "Y"}[period]
    start = d.astype(f"datetime64[{unit}]").astype("datetime64[D]")
    out = (start - np.datetime64("1970-01-01", "D")).astype(float)
    return np.where(finite, out, np.nan)


_ISO_DATE = r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?"


def is_iso_date(value: Any) -> bool:
    """Whether ``value`` is a date written as ISO 8601 text (``2021-03-17``, optionally with a
    time of day ``2021-03-17T08:30``), the form a date is given in parameters and domains."""
    import re

    return isinstance(value, str) and re.fullmatch(_ISO_DATE, value.strip()) is not None


def parse_iso_date(value: Any, what: str) -> float:
    """An ISO date (``"2021-03-17"``) as days since 1970-01-01 on the time axis; ``what`` names
    the parameter in the one-line error a malformed or impossible date raises."""
    if not is_iso_date(value):
        raise SchemaError(f"{what} must be a date written as YYYY-MM-DD, got {value!r}")
    try:
        ts = pd.Timestamp(str(value).strip())
    except (ValueError, OverflowError):
        raise SchemaError(f"{what} is not a date of the calendar (years 1677 to 2262): {value!r}") from None
    return float((ts - EPOCH) / DAY)


def format_day(days: float) -> str:
    """A point of the time axis as ISO text: the date alone at midnight, else date and time."""
    ts = EPOCH + pd.Timedelta(microseconds=round(float(days) * 86_400_000_000.0))
    return ts.strftime(DEFAULT_DATE_FORMAT if ts == ts.normalize() else DEFAULT_DATETIME_FORMAT)


def _calendar(days: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(finite, year, month, day) of days since 1970-01-01 (a time of day is dropped)."""
    v = np.asarray(days, dtype=float)
    finite = np.isfinite(v)
    d = np.datetime64("1970-01-01", "D") + np.where(finite, np.floor(v), 0).astype("timedelta64[D]")
    year = d.astype("datetime64[Y]").astype(np.int64) + 1970
    month = d.astype("datetime64[M]").astype(np.int64) % 12 + 1
    day = (d - d.astype("datetime64[M]").astype("datetime64[D]")).astype(np.int64) + 1
    return finite, year, month, day


def cohort_start(days: np.ndarray, width: int) -> np.ndarray:
    """The first year of each date's birth cohort of ``width`` years, cohorts starting at the
    years divisible by ``width`` (1940–1949 for width 10, 1945–1949 for width 5); NaN where
    the date is missing."""
    finite, year, _, _ = _calendar(days)
    start = (year // int(width)) * int(width)  # floor division: cohorts before year 0 stay aligned
    return np.where(finite, start.astype(float), np.nan)


def age_in_years(days: np.ndarray, at: float) -> np.ndarray:
    """Whole years of age on the date ``at`` (days since 1970-01-01) of people born on ``days``:
    the years between, less one when the birthday has not come yet that year (someone born on
    29 February turns a year older on 1 March in other years). NaN where the date is missing."""
    finite, year, month, day = _calendar(days)
    _, ry, rm, rd = _calendar(np.array([at]))
    before = (month > rm[0]) | ((month == rm[0]) & (day > rd[0]))
    age = ry[0] - year - before.astype(np.int64)
    return np.where(finite, age.astype(float), np.nan)


# -------------------------------------------------------------------- working form
def numeric_values(s: pd.Series) -> np.ndarray:
    """A numeric attribute as float64 with NaN for missing cells (dates on the time axis)."""
    if is_date_dtype(s):
        return to_time_axis(s)
    if pd.api.types.is_bool_dtype(s):
        return s.astype("Float64").to_numpy(dtype=float, na_value=np.nan)
    return s.to_numpy(dtype=float, na_value=np.nan)


def working_frame(df: pd.DataFrame, numeric: Iterable[str]) -> pd.DataFrame:
    """A copy of ``df`` in the form techniques and measures compute on: the ``numeric``
    columns as float64 (dates on the time axis, nullable integers with NaN for missing
    cells); nullable booleans as objects with NaN for missing cells. Columns already in
    that form are not copied twice."""
    out = df.copy(deep=False)
    numeric = [c for c in numeric if c in out.columns]
    for c in numeric:
        s = out[c]
        if is_date_dtype(s) or isinstance(s.dtype, pd.api.extensions.ExtensionDtype):
            out[c] = pd.Series(numeric_values(s), index=s.index, name=c)
    for c in out.columns:
        s = out[c]
        if c in numeric or is_date_dtype(s) or not _nullable(s):
            continue
        # categorical codes stored as nullable integers or booleans: objects, NaN for missing
        out[c] = pd.Series(s.to_numpy(dtype=object, na_value=np.nan), index=s.index, name=c, dtype=object)
    return out


def _nullable(s: pd.Series) -> bool:
    """A pandas extension dtype with pd.NA for missing cells (not the text dtype)."""
    return isinstance(s.dtype, pd.api.extensions.ExtensionDtype) and not pd.api.types.is_string_dtype(s) \
        and not isinstance(s.dtype, pd.CategoricalDtype)


def restore_column(values: pd.Series, like: pd.Series, *, date_format: str | None = None) -> pd.Series:
    """``values`` (a technique's output for one column) in the dtype of ``like`` (the input):
    dates back from the time axis, nullable integers rounded with missing cells kept,
    booleans, and everything else cast. A whole-number column never receives a fraction:
    values are rounded to the nearest whole number first."""
    want = like.dtype
    name = like.name
    if values.dtype == want:
        return values
    if is_date_dtype(want):
        days = values.to_numpy(dtype=float, na_value=np.nan) if not is_date_dtype(values) else to_time_axis(values)
        # a synthetic release (DPCube) has its own rows: keep its index
        return from_time_axis(days, like, date_format, str(name), index=values.index)
    if pd.api.types.is_integer_dtype(want):
        vals = values.to_numpy(dtype=float, na_value=np.nan)
        nullable = isinstance(want, pd.api.extensions.ExtensionDtype)
        if not nullable and not np.all(np.isfinite(vals)):
            raise AssertionError(f"technique produced a non-finite value in integer column {name!r}")
        if nullable:
            if np.isinf(vals).any():
                raise AssertionError(f"technique produced an infinite value in integer column {name!r}")
            return pd.Series(pd.array(np.rint(vals), dtype="Float64"), index=values.index, name=name).astype(want)
        return pd.Series(np.rint(vals).astype(want), index=values.index, name=name)
    if isinstance(want, pd.BooleanDtype) or pd.api.types.is_bool_dtype(want):
        b = as_bool(values)
        return b.astype(want) if not (pd.api.types.is_bool_dtype(want) and not isinstance(want, pd.BooleanDtype)
                                      and b.isna().any()) else b
    return values.astype(want)


# ------------------------------------------------------------------------- decimals
def decimals_of(values: np.ndarray) -> int | None:
    """The fewest decimals ``d`` (0…15) such that every finite value is the number a
    ``d``-decimal text parses to, or ``None`` when none does (the column needs full precision).

    A value read from ``0.572`` passes at ``d = 3``: rounding it to 3 decimals gives the same
    float back, and the shortest text of that float has 3 decimals.
    """
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return 0
    v = np.unique(v)
    for d in range(MAX_DECIMALS + 1):
        scale = 10.0**d
        scaled = v * scale
        if np.any(np.abs(scaled) >= 2.0**53):
            return None
        if np.array_equal(np.rint(scaled) / scale, v):
            return d
    return None


def source_decimals(df: pd.DataFrame, columns: Iterable[str]) -> dict[str, int]:
    """Decimals of every float column among ``columns`` (see :func:`decimals_of`); columns
    that need full precision are left out, as are integer, date and non-numeric columns."""
    out: dict[str, int] = {}
    for c in columns:
        if c not in df.columns:
            continue
        s = df[c]
        if not pd.api.types.is_float_dtype(s):
            continue
        d = decimals_of(s.to_numpy(dtype=float, na_value=np.nan))
        if d is not None:
            out[str(c)] = d
    return out


def merge_decimals(parts: Iterable[Mapping[str, int | None]]) -> dict[str, int]:
    """The decimals of a table from those of its parts (the most any part needs; a column
    one part needs in full precision is left out)."""
    out: dict[str, int] = {}
    full: set[str] = set()
    for p in parts:
        for c, d in p.items():
            if d is None:
                full.add(c)
            else:
                out[c] = max(out.get(c, 0), int(d))
    return {c: d for c, d in out.items() if c not in full}


def round_to_decimals(df: pd.DataFrame, decimals: Mapping[str, int]) -> pd.DataFrame:
    """``df`` with each float column named in ``decimals`` rounded to that many decimals
    (a copy; other columns untouched). ``-0.0`` becomes ``0.0``."""
    if not decimals:
        return df
    out = df.copy()
    for c, d in decimals.items():
        if c in out.columns and pd.api.types.is_float_dtype(out[c]):
            vals = np.round(out[c].to_numpy(dtype=float, na_value=np.nan), int(d)) + 0.0
            out[c] = pd.Series(vals, index=out.index, name=c).astype(out[c].dtype)
    return out


def parse_decimals(text: str | None, columns: Iterable[str]) -> dict[str, int] | None:
    """``--decimals``: ``"2"`` (every float column) or ``"a=2,b=0"`` (per column), as a dict
    over ``columns``; ``None`` when not given."""
    if text is None:
        return None
    cols = [str(c) for c in columns]

    def num(v: str, what: str) -> int:
        v = v.strip()
        if not v.isdigit() or int(v) > MAX_DECIMALS:
            raise PPDMError(f"--decimals {what} must be a whole number from 0 to {MAX_DECIMALS}, got {v!r}")
        return int(v)

    t = text.strip()
    if "=" not in t:
        d = num(t, "")
        return dict.fromkeys(cols, d)
    out: dict[str, int] = {}
    for part in t.split(","):
        if not part.strip():
            continue
        if "=" not in part:
            raise PPDMError(f"--decimals takes one number or column=number pairs, got {text!r}")
        c, v = part.split("=", 1)
        c = c.strip()
        if c not in cols:
            raise PPDMError(f"--decimals names column {c!r}, which is not a numeric column of the table")
        out[c] = num(v, f"for {c!r}")
    return out
