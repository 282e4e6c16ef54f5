"""Input handling shared by the information-loss and disclosure-risk measures.

The SDC measures compare an original table x with its masked release z cell by
cell, so both must hold the same numeric attributes on the same records in the
same order. :func:`numeric_pair` turns DataFrames or 2-D arrays into two float64
matrices and refuses anything that would make the comparison meaningless.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ppdm.errors import MeasureNotApplicable, ParameterError, PPDMError, SchemaError


def is_dask(obj: Any) -> bool:
    """True for a dask DataFrame (without importing dask when it is not in use)."""
    mod = type(obj).__module__ or ""
    if not mod.startswith("dask"):
        return False
    import dask.dataframe as dd

    return isinstance(obj, dd.DataFrame)


def _names_for(obj: Any, columns: Sequence[str] | None) -> list[str]:
    if columns is not None:
        return list(columns)
    if isinstance(obj, pd.DataFrame) or is_dask(obj):
        return list(obj.columns)
    arr = np.asarray(obj)
    m = 1 if arr.ndim == 1 else arr.shape[1]
    return [f"x{j}" for j in range(m)]


def column_names(x: Any, columns: Iterable[str] | None, *, measure: str) -> list[str]:
    """The attributes a measure compares: ``columns``, else every column of ``x`` (``x0, x1, ...``
    for an array); refuses an empty selection. Serves the in-memory and the dask paths alike."""
    names = _names_for(x, None if columns is None else list(columns))
    if not names:
        raise ParameterError(f"{measure} needs at least one numeric attribute; none was given")
    return names


def numeric_matrix(obj: Any, names: list[str], *, label: str, measure: str,
                   allow_missing: bool = False) -> np.ndarray:
    """``obj[names]`` as an (n, m) float64 matrix (dates as days since 1970-01-01); inf and
    non-numeric values refused, and NaN too unless ``allow_missing``."""
    if isinstance(obj, pd.DataFrame):
        from ppdm.data.types import is_date_dtype, numeric_values

        missing = [c for c in names if c not in obj.columns]
        if missing:
            raise SchemaError(f"{measure}: column(s) {', '.join(map(repr, missing))} not in the {label} table")
        for c in names:
            s = obj[c]
            if is_date_dtype(s):
                continue
            if not pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
                raise SchemaError(f"{measure}: column {c!r} of the {label} table is not numeric (dtype {s.dtype})")
        if any(is_date_dtype(obj[c]) for c in names):
            arr = np.column_stack([numeric_values(obj[c]) for c in names]) if names else np.zeros((len(obj), 0))
        else:
            arr = obj[names].to_numpy(dtype=float, na_value=np.nan)
    else:
        try:
            arr = np.asarray(obj, dtype=float)
        except (TypeError, ValueError):
            raise SchemaError(f"{measure}: the {label} data are not numeric") from None
        if arr.ndim == 1:
            arr = arr[:, None]
        if arr.ndim != 2:
            raise SchemaError(f"{measure}: the {label} data must be a 2-D table, got {arr.ndim} dimensions")
        if arr.shape[1] != len(names):
            raise SchemaError(f"{measure}: the {label} data have {arr.shape[1]} columns, {len(names)} were named")
    bad = np.isinf(arr) if allow_missing else ~np.isfinite(arr)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        kind = "a missing" if np.isnan(arr[i, j]) else "an infinite"
        raise SchemaError(f"{measure}: column {names[j]!r} of the {label} table holds {kind} value at row {i}")
    return np.ascontiguousarray(arr)


def numeric_pair(
    x: Any, z: Any, columns: Iterable[str] | None = None, *, measure: str, allow_missing: bool = False,
    rescale: str | None = None,
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Column names and the (n, m) float64 matrices of the original ``x`` and masked ``z``.

    ``x`` and ``z`` are DataFrames (``columns`` defaults to every column of ``x``) or
    2-D arrays (columns named ``x0, x1, ...`` unless ``columns`` names them). Missing cells
    are refused unless ``allow_missing`` (they are NaN then).

    ``rescale`` brings columns of huge or tiny values (beyond 2^±256, where squares summed over
    the records overflow) near 1 by a power of two, exactly: ``"column"`` each column by its own
    factor, for measures that do not change when one attribute is rescaled (IL1s, IL metrics,
    correlations, z-scored distances); ``"common"`` all by one factor, for those that only keep
    ratios (raw distances). Ordinary data are returned as they are.
    """
    names = column_names(x, columns, measure=measure)
    X = numeric_matrix(x, names, label="original", measure=measure, allow_missing=allow_missing)
    Z = numeric_matrix(z, names, label="masked", measure=measure, allow_missing=allow_missing)
    if X.shape[0] != Z.shape[0]:
        # a synthetic release with its own number of records (DPCube) has no record pairs
        raise MeasureNotApplicable(
            f"{measure} compares records one to one, but the original has {X.shape[0]} rows "
            f"and the masked table {Z.shape[0]}"
        )
    if X.shape[0] < 2:
        raise SchemaError(f"{measure} needs at least 2 records (standard deviations), got {X.shape[0]}")
    if rescale is not None:
        S = power_of_two_scale(X, Z, per_column=rescale == "column")
        if not np.all(S == 1.0):
            X, Z = X * S, Z * S
    return names, X, Z


def complete_records(df: pd.DataFrame, columns: Iterable[str]) -> pd.DataFrame:
    """The records of ``df`` without a missing value in ``columns`` (``df`` itself when all are)."""
    cols = [c for c in columns if c in df.columns]
    gaps = df[cols].isna().to_numpy().any(axis=1) if cols else np.zeros(len(df), dtype=bool)
    return df.loc[~gaps] if gaps.any() else df  # type: ignore[index]  # numpy's stubs: any(axis=1) may be a scalar


def complete_rows(*mats: np.ndarray) -> np.ndarray:
    """Records without a missing cell in any of the matrices."""
    ok = np.ones(mats[0].shape[0], dtype=bool)
    for m in mats:
        ok &= ~np.isnan(m).any(axis=1)
    return ok


def observed_sd(A: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """Sample sd (ddof = 1) of every column over its observed cells (``mask``, default: not NaN)."""
    obs = ~np.isnan(A) if mask is None else mask
    cnt = obs.sum(axis=0)
    mean = np.where(obs, A, 0.0).sum(axis=0) / np.maximum(cnt, 1)
    ss = np.where(obs, (np.where(obs, A, 0.0) - mean) ** 2, 0.0).sum(axis=0)
    return sd_from_sums(ss, cnt)


def sd_from_sums(ss: np.ndarray, cnt: np.ndarray) -> np.ndarray:
    """Sample sd (ddof = 1) of every column from its sum of squared deviations from the mean
    ``ss`` over ``cnt`` observed cells; 0 for a column with fewer than two."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(cnt > 1, np.sqrt(ss / np.maximum(cnt - 1, 1)), 0.0)


def require_nonconstant(names: list[str], sd: np.ndarray, *, measure: str, label: str = "original") -> None:
    """Raise when a column has zero spread, which makes a scaled measure undefined."""
    zero = np.flatnonzero(~(sd > 0))
    if zero.size:
        raise MeasureNotApplicable(
            f"{measure} is undefined: column {names[zero[0]]!r} of the {label} table is constant (sd = 0)"
        )


def pick_options(options: dict[str, Any], name: str, allowed: Iterable[str]) -> dict[str, Any]:
    """The parameters meant for measure ``name`` in an evaluation context's options.

    Three spellings are accepted: ``{"idr": {"k": 0.1}}``, ``{"idr.k": 0.1}`` and a
    plain ``{"k": 0.1}`` (plain keys apply to every measure that has such a parameter).
    A namespaced key the measure does not know is an error.
    """
    allowed = set(allowed)
    out: dict[str, Any] = {}
    for key, val in options.items():
        if key in allowed:
            out[key] = val
    nested = options.get(name)
    if isinstance(nested, dict):
        for key, val in nested.items():
            if key not in allowed:
                raise ParameterError(f"measure {name!r} has no parameter {key!r}; it takes {sorted(allowed)}")
            out[key] = val
    prefix = f"{name}."
    for key, val in options.items():
        if isinstance(key, str) and key.startswith(prefix):
            sub = key[len(prefix):]
            if sub not in allowed:
                raise ParameterError(f"measure {name!r} has no parameter {sub!r}; it takes {sorted(allowed)}")
            out[sub] = val
    return out


def context_numeric(ctx: Any, measure: str) -> list[str]:
    """The numeric non-class attributes of an evaluation context, checked against z."""
    cols = [c for c in ctx.schema.numeric if c != ctx.schema.class_column]
    if not cols:
        raise MeasureNotApplicable(f"measure {measure!r} needs numeric attributes, and the schema names none")
    absent = [c for c in cols if c not in ctx.z.columns]
    if absent:
        raise SchemaError(f"measure {measure!r}: column(s) {', '.join(map(repr, absent))} not in the masked table")
    return cols


def mixed_attributes(
    x: pd.DataFrame,
    z: pd.DataFrame,
    numeric: Sequence[str] | None,
    categorical: Sequence[str] | None,
    *,
    measure: str,
    z_label: str,
    none_error: type[PPDMError] = ParameterError,
) -> tuple[list[str], list[str]]:
    """The numeric and categorical attributes a record-to-record measure compares.

    Without either list, numeric (non-boolean) columns of ``x`` are numeric and the
    rest categorical. Both tables must hold every attribute; no attribute at all raises
    ``none_error``.
    """
    if not isinstance(x, pd.DataFrame) or not isinstance(z, pd.DataFrame):
        raise SchemaError(f"{measure} compares two DataFrames (original and {z_label})")
    if numeric is None and categorical is None:
        numeric = [c for c in x.columns if pd.api.types.is_numeric_dtype(x[c]) and not pd.api.types.is_bool_dtype(x[c])]
        categorical = [c for c in x.columns if c not in numeric]
    numeric, categorical = list(numeric or []), list(categorical or [])
    if not numeric + categorical:
        raise none_error(f"{measure} needs at least one attribute; none was given")
    for label, df in (("original", x), (z_label, z)):
        absent = [c for c in numeric + categorical if c not in df.columns]
        if absent:
            raise SchemaError(f"{measure}: column(s) {', '.join(map(repr, absent))} not in the {label} table")
    return numeric, categorical


# ------------------------------------------------------------------ column moments
def column_moments(v: np.ndarray) -> tuple[int, float, float, float]:
    """(count, mean, sum of squared deviations, largest |value|) of the finite values of ``v``:
    the per-partition summary :func:`merge_moments` combines exactly (Chan et al.'s update)."""
    f = v[np.isfinite(v)]
    if f.size == 0:
        return 0, 0.0, 0.0, 0.0
    m = float(f.mean())
    return int(f.size), m, float(((f - m) ** 2).sum()), float(np.abs(f).max())


def merge_moments(parts: Sequence[tuple[int, float, float, float]]) -> tuple[int, float, float, float]:
    n, mean, m2, top = 0, 0.0, 0.0, 0.0
    for c, mu, q, t in parts:
        if c == 0:
            continue
        tot = n + c
        d = mu - mean
        mean += d * c / tot
        m2 += q + d * d * n * c / tot
        n = tot
        top = max(top, t)
    return n, mean, m2, top


# ------------------------------------------------------------------ values at the edge of floating point
#: columns whose largest |value| lies outside [2^-SAFE_EXPONENT, 2^SAFE_EXPONENT] are compared in a
#: space scaled by a power of two: squares of such values, summed over n records, still fit in a double
SAFE_EXPONENT = 256


def power_of_two_scale(*mats: np.ndarray, per_column: bool) -> np.ndarray:
    """Factors (powers of two, one per column) that bring columns of huge or tiny values near 1
    before squares are summed; all ones for ordinary data, so results keep their bits.

    Multiplying by a power of two is exact, so a ratio of sums of squares (SSE/SST, an RMSE
    ratio) is unchanged; ``per_column=False`` gives every column the factor of the largest one
    (for sums over columns), ``per_column=True`` each its own (for per-column ratios).
    """
    p = mats[0].shape[1]
    top = np.zeros(p)
    for A in mats:
        if A.size:
            with np.errstate(invalid="ignore"):
                t = np.nanmax(np.where(np.isfinite(A), np.abs(A), 0.0), axis=0)
            top = np.maximum(top, np.where(np.isfinite(t), t, 0.0))
    lo, hi = 2.0**-SAFE_EXPONENT, 2.0**SAFE_EXPONENT
    exp = np.frexp(top)[1]
    if per_column:
        odd = (top > hi) | ((top > 0) & (top < lo))
        return np.where(odd, np.ldexp(1.0, -exp), 1.0)
    big = float(top.max()) if p else 0.0
    if big == 0.0 or lo <= big <= hi:
        return np.ones(p)
    return np.full(p, np.ldexp(1.0, -int(exp.max())))


def wilson_score(k: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score estimate of a share k/n and its half-width at ``confidence`` (Wilson 1927).

    With z the normal quantile of the confidence level, the estimate is
    ``(k + z²/2) / (n + z²)`` and the half-width ``z / (n + z²) · √(k(n − k)/n + z²/4)``
    (Giomi et al. 2023, §4, write the attack rates this way). ``k`` may be a sum of
    fractional credits in [0, n]. The one implementation behind the attack rates, the
    linkage and matching intervals and closeness's sampled shares.
    """
    from statistics import NormalDist

    z = NormalDist().inv_cdf(0.5 * (1.0 + confidence))
    z2 = z * z
    p = k / n
    # the same numbers in terms of the share p (as the linkage and matching intervals always had them)
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z / (1 + z2 / n) * math.sqrt(max(p * (1 - p), 0.0) / n + z2 / (4 * n * n))
    return centre, half


def wilson_interval(k: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of a share k/n, clipped to [0, 1] (see :func:`wilson_score`)."""
    centre, half = wilson_score(k, n, confidence)
    return max(0.0, centre - half), min(1.0, centre + half)
