"""Input handling shared by the information-loss and disclosure-risk measures.

The SDC measures compare an original table x with its masked release z cell by
cell, so both must hold the same numeric attributes on the same records in the
same order. :func:`numeric_pair` turns DataFrames or 2-D arrays into two float64
matrices and refuses anything that would make the comparison meaningless.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ppdm.errors import MeasureNotApplicable, ParameterError, SchemaError


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


def numeric_matrix(obj: Any, names: list[str], *, label: str, measure: str) -> np.ndarray:
    """``obj[names]`` as an (n, m) float64 matrix; NaN/inf and non-numeric values refused."""
    if isinstance(obj, pd.DataFrame):
        missing = [c for c in names if c not in obj.columns]
        if missing:
            raise SchemaError(f"{measure}: column(s) {', '.join(map(repr, missing))} not in the {label} table")
        for c in names:
            s = obj[c]
            if not pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
                raise SchemaError(f"{measure}: column {c!r} of the {label} table is not numeric (dtype {s.dtype})")
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
    bad = ~np.isfinite(arr)
    if bad.any():
        i, j = np.argwhere(bad)[0]
        kind = "a missing" if np.isnan(arr[i, j]) else "an infinite"
        raise SchemaError(f"{measure}: column {names[j]!r} of the {label} table holds {kind} value at row {i}")
    return np.ascontiguousarray(arr)


def numeric_pair(
    x: Any, z: Any, columns: Iterable[str] | None = None, *, measure: str
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Column names and the (n, m) float64 matrices of the original ``x`` and masked ``z``.

    ``x`` and ``z`` are DataFrames (``columns`` defaults to every column of ``x``) or
    2-D arrays (columns named ``x0, x1, ...`` unless ``columns`` names them).
    """
    names = column_names(x, columns, measure=measure)
    X = numeric_matrix(x, names, label="original", measure=measure)
    Z = numeric_matrix(z, names, label="masked", measure=measure)
    if X.shape[0] != Z.shape[0]:
        # a synthetic release with its own number of records (DPCube) has no record pairs
        raise MeasureNotApplicable(
            f"{measure} compares records one to one, but the original has {X.shape[0]} rows "
            f"and the masked table {Z.shape[0]}"
        )
    if X.shape[0] < 2:
        raise SchemaError(f"{measure} needs at least 2 records (standard deviations), got {X.shape[0]}")
    return names, X, Z


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
