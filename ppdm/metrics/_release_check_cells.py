"""The release check's per-cell rules: when a released cell is unchanged or near-verbatim.

A numeric cell is unchanged within a tolerance of the column's standard deviation
(:func:`unchanged_cells`), near-verbatim within a wider one, within the release's own
precision or inside a narrow interval label holding its original (:func:`near_cells`); and
which columns are compared, which of them are numbers and which are the quasi-identifiers.
Split from :mod:`ppdm.metrics.release_check`, which re-exports every name here.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ppdm.data.schema import Schema
from ppdm.errors import SchemaError

#: numeric cells closer than this many standard deviations of the column count as unchanged
TOLERANCE = 1e-6
#: a column counts as untouched when at least this share of its cells is unchanged (a technique
#: that changes a handful of values, e.g. top-coding 0.1 % of them, leaves the column a join key)
UNTOUCHED_SHARE = 0.99
#: a record is near-verbatim when each numeric value is within this many standard deviations of
#: its original (or within the release's own precision) and each categorical value is equal
NEAR_TOLERANCE = 0.01


def unchanged_cells(x: pd.Series, z: pd.Series, numeric: bool, tolerance: float = TOLERANCE,
                    spread: tuple[float, float] | None = None) -> np.ndarray:
    """Boolean vector: which cells of z equal x (numeric ones within ``tolerance`` × sd(x)).

    ``spread`` = (largest |x|, population sd of x) of the whole column, when ``x`` is one
    partition of a larger table (:func:`column_spread` combines them); by default both are
    those of ``x``."""
    if numeric:
        a = x.to_numpy(dtype=float, na_value=np.nan)
        b = z.to_numpy(dtype=float, na_value=np.nan)
        both_nan = np.isnan(a) & np.isnan(b)
        finite = np.isfinite(a)
        # compare in a scaled space: differences and spreads of huge values must not overflow
        if spread is None:
            scale = float(np.max(np.abs(a[finite]))) if finite.any() else 1.0
        else:
            scale = float(spread[0])
        scale = scale if scale > 0 else 1.0
        sa, sb = a / scale, b / scale
        if spread is None:
            sd = float(np.std(sa[finite])) if finite.sum() > 1 else 0.0
        else:
            sd = float(spread[1]) / scale
        with np.errstate(invalid="ignore", over="ignore"):
            same = np.abs(sb - sa) <= tolerance * sd
        return same | (a == b) | both_nan
    xa = x.to_numpy(dtype=object, na_value=np.nan)
    za = z.to_numpy(dtype=object, na_value=np.nan)
    return (xa == za) | (pd.isna(x).to_numpy() & pd.isna(z).to_numpy())


def near_cells(x: pd.Series, z: pd.Series, numeric: bool, tolerance: float = NEAR_TOLERANCE,
               spread: tuple[float, float] | None = None, decimals: int | None = None) -> np.ndarray:
    """Boolean vector: which cells of z are near-verbatim, i.e. within ``tolerance`` × the
    population standard deviation of x's column of their original, or within half a unit of
    the release's last decimal (``decimals``: noise finer than what z can show is no noise);
    categorical cells must be equal. The standard deviation rather than the interquartile
    range: it is the spread the unchanged test already uses and it is never 0 for a column
    with two values."""
    near = unchanged_cells(x, z, numeric, tolerance, spread)
    if not numeric and pd.api.types.is_numeric_dtype(x) and not pd.api.types.is_bool_dtype(x):
        near |= _narrow_intervals(x, z, tolerance, spread)
    if numeric and decimals is not None:
        a = x.to_numpy(dtype=float, na_value=np.nan)
        b = z.to_numpy(dtype=float, na_value=np.nan)
        with np.errstate(invalid="ignore", over="ignore"):
            near |= np.abs(b - a) <= 0.5 * 10.0 ** (-int(decimals)) * (1 + 1e-9)
    return near


def _narrow_intervals(x: pd.Series, z: pd.Series, tolerance: float,
                      spread: tuple[float, float] | None) -> np.ndarray:
    """Which released interval labels (recoding's ``(a,b]``) hold their own original and are so
    narrow that their midpoint lies within ``tolerance`` × sd(x) of every value they stand for: a
    recode into intervals that each hold one original is a copy written as labels."""
    from ppdm.data.generalization import interval_of_labels

    a = x.to_numpy(dtype=float, na_value=np.nan)
    ivs = interval_of_labels(z) if z.dtype == object or isinstance(z.dtype, pd.CategoricalDtype) else None
    if not ivs:
        return np.zeros(len(a), dtype=bool)
    labels = z.astype(object)
    low = labels.map({k: iv.low for k, iv in ivs.items()}).to_numpy(dtype=float, na_value=np.nan)
    high = labels.map({k: iv.high for k, iv in ivs.items()}).to_numpy(dtype=float, na_value=np.nan)
    finite = np.isfinite(a)
    sd = float(spread[1]) if spread is not None else (float(np.std(a[finite])) if finite.sum() > 1 else 0.0)
    with np.errstate(invalid="ignore"):
        return (a >= low) & (a <= high) & ((high - low) / 2 <= tolerance * sd)


def release_decimals(z: pd.DataFrame, kinds: dict[str, bool]) -> dict[str, int]:
    """The decimals each numeric column of the release is written with: 0 for integers, the
    fewest that reproduce every value for floats (:func:`ppdm.data.types.decimals_of`; a
    column at full precision is left out)."""
    from ppdm.data.types import decimals_of

    out: dict[str, int] = {}
    for c, num in kinds.items():
        if not num or c not in z.columns:
            continue
        s = z[c]
        if pd.api.types.is_integer_dtype(s) or pd.api.types.is_bool_dtype(s):
            out[c] = 0
        elif pd.api.types.is_float_dtype(s):
            d = decimals_of(s.to_numpy(dtype=float, na_value=np.nan))
            if d is not None:
                out[c] = d
    return out


def column_spread(moments: tuple[int, float, float, float]) -> tuple[float, float]:
    """(largest |x|, population sd) of a column from its merged moments."""
    n, _, m2, top = moments
    return top, (float(np.sqrt(m2 / n)) if n > 1 else 0.0)


def check_columns(schema: Schema, columns: Sequence[str]) -> tuple[list[str], bool]:
    """The quasi-identifiers among ``columns`` (all attributes when none is declared)."""
    declared = bool(schema.quasi_identifiers)
    return [c for c in (schema.quasi_identifiers if declared else schema.attributes) if c in columns], declared


def _numeric_set(schema: Schema) -> set[str]:
    return set(schema.numeric) | ({schema.weight} if schema.weight else set())


def column_kinds(schema: Schema, x: pd.DataFrame, z: pd.DataFrame, columns: Sequence[str]) -> dict[str, bool]:
    """Which compared columns are numbers (compared within the tolerance, hashed as float64)."""
    num = _numeric_set(schema)
    return {c: _is_numeric(c, schema, num, x, z) for c in columns}


def _is_numeric(c: str, schema: Schema, numeric: set[str], xv: pd.DataFrame, zv: pd.DataFrame) -> bool:
    return c in numeric or (c not in schema.categorical and c != schema.class_column
                            and pd.api.types.is_numeric_dtype(xv[c]) and pd.api.types.is_numeric_dtype(zv[c]))


def _compared_columns(
    x: pd.DataFrame, z: pd.DataFrame, schema: Schema, columns: Sequence[str] | None
) -> tuple[list[str], list[str], bool]:
    """The compared columns, the quasi-identifiers among them, and whether those were declared."""
    cols = [c for c in z.columns if c in x.columns] if columns is None else list(columns)
    absent = [c for c in cols if c not in x.columns or c not in z.columns]
    if absent:
        raise SchemaError(f"release check: column(s) {', '.join(map(repr, absent))} are not in both tables")
    declared = bool(schema.quasi_identifiers)
    qi = [c for c in (schema.quasi_identifiers if declared else schema.attributes) if c in cols]
    return cols, qi, declared
