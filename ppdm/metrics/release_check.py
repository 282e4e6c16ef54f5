"""The release check: how much of a release z is still the original x, record by record.

Run after every anonymization (``ppdm anonymize``, :func:`ppdm.experiments.release.release`)
and kept in the release's provenance. It compares z with x cell by cell, so z must hold
the same records in the same order (every ppdm technique keeps them; DPCube's synthetic
records are compared by position and simply come out changed). It reports:

* the share of records whose quasi-identifiers come out unchanged (``value``; all
  attributes when no quasi-identifier is declared): an intruder who knows a person's
  quasi-identifiers finds them in z exactly as in x;
* the share of records unchanged on every compared column (``share_verbatim``),
  published as they were;
* per column, the share of unchanged cells, and the columns no technique touched;
* the number of records unique on their quasi-identifiers in z (sample uniques).

A numeric cell counts as unchanged when it moved by at most ``tolerance`` (default
10⁻⁶) times the column's standard deviation in x: a release that differs from x only
in the last digits is numerically the original. Categorical cells must be equal;
a missing value in both tables counts as unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ppdm.data.schema import Schema
from ppdm.errors import SchemaError
from ppdm.metrics._common import column_moments, merge_moments  # noqa: F401  (also used from here)
from ppdm.metrics.base import EvaluationContext, MeasureResult, register_measure

#: numeric cells closer than this many standard deviations of the column count as unchanged
TOLERANCE = 1e-6


@dataclass
class ReleaseCheck(MeasureResult):
    """Result of :func:`release_check`.

    ``value`` is the share of records whose quasi-identifiers are unchanged in z.
    ``per_column`` has one row per compared column: ``column``, ``role``, ``kind``
    (numeric/categorical), ``share_unchanged`` and ``touched`` (some cell changed).
    """

    n_records: int
    quasi_identifiers: list[str]
    quasi_identifiers_declared: bool
    records_unchanged: int
    records_verbatim: int
    share_verbatim: float
    unique_in_z: int
    untouched_columns: list[str]
    tolerance: float
    per_column: pd.DataFrame = field(repr=False)
    record_aligned: bool = True

    def summary_lines(self) -> list[str]:
        """The check as a few short lines (what ``ppdm anonymize`` prints)."""
        n = self.n_records
        qi = (f"{len(self.quasi_identifiers)} declared quasi-identifier(s)" if self.quasi_identifiers_declared
              else f"all {len(self.quasi_identifiers)} attributes (no quasi-identifier declared)")
        if not self.record_aligned:
            return [
                f"synthetic release of {n} records, not paired with the original's: each is compared with every "
                "original record",
                f"released records equal to an original record on the quasi-identifiers: {_pct(self.value)} "
                f"({self.records_unchanged} of {n}; {qi})",
                f"released records equal to an original record on every column: {_pct(self.share_verbatim)} "
                f"({self.records_verbatim} of {n})",
                f"records unique on their quasi-identifiers in z: {self.unique_in_z} of {n}",
            ]
        cells = ", ".join(f"{r.column} {100 * r.share_unchanged:.1f}%" for r in self.per_column.itertuples())
        return [
            f"records with unchanged quasi-identifiers: {_pct(self.value)} ({self.records_unchanged} of {n}; {qi})",
            f"records unchanged on every column: {_pct(self.share_verbatim)} ({self.records_verbatim} of {n})",
            f"records unique on their quasi-identifiers in z: {self.unique_in_z} of {n}",
            f"unchanged cells per column: {cells}",
            "columns no technique touched: " + (", ".join(self.untouched_columns) or "none"),
        ]


def _pct(share: float) -> str:
    return f"{100 * share:.1f}%"


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


def column_spread(moments: tuple[int, float, float, float]) -> tuple[float, float]:
    """(largest |x|, population sd) of a column from its merged moments."""
    n, _, m2, top = moments
    return top, (float(np.sqrt(m2 / n)) if n > 1 else 0.0)


@dataclass
class CheckPart:
    """The release check's sums over one partition (records are compared within it)."""

    n: int
    unchanged: dict[str, int]
    records_unchanged: int
    records_verbatim: int


def check_partition(x: pd.DataFrame, z: pd.DataFrame, schema: Schema, columns: Sequence[str],
                    spreads: dict[str, tuple[float, float]], tolerance: float = TOLERANCE) -> CheckPart:
    """:func:`release_check`'s counts for one partition pair, numeric cells judged against the
    whole column's ``spreads`` (:func:`column_spread`)."""
    qi = check_columns(schema, columns)[0]
    xv, zv = x.reset_index(drop=True), z.reset_index(drop=True)
    numeric = _numeric_set(schema)
    all_same = np.ones(len(xv), dtype=bool)
    qi_same = np.ones(len(xv), dtype=bool)
    counts = {}
    for c in columns:
        is_num = _is_numeric(c, schema, numeric, xv, zv)
        same = unchanged_cells(xv[c], zv[c], is_num, tolerance, spreads.get(c) if is_num else None)
        counts[c] = int(same.sum())
        all_same &= same
        if c in qi:
            qi_same &= same
    return CheckPart(len(xv), counts, int(qi_same.sum()), int(all_same.sum()))


def check_columns(schema: Schema, columns: Sequence[str]) -> tuple[list[str], bool]:
    """The quasi-identifiers among ``columns`` (all attributes when none is declared)."""
    declared = bool(schema.quasi_identifiers)
    return [c for c in (schema.quasi_identifiers if declared else schema.attributes) if c in columns], declared


def release_check_from_parts(parts: Sequence[CheckPart], schema: Schema, columns: Sequence[str],
                             unique_in_z: int, tolerance: float = TOLERANCE,
                             kinds: dict[str, str] | None = None) -> ReleaseCheck:
    """The release check of a partitioned table from its partitions' counts."""
    qi, declared = check_columns(schema, columns)
    n = sum(p.n for p in parts)
    if n == 0:
        raise SchemaError("the release check needs at least one record")
    rows = []
    for c in columns:
        share = sum(p.unchanged[c] for p in parts) / n
        role = schema.role(c) if c in schema.all_columns else "not in the schema"
        kind = (kinds or {}).get(c) or ("numeric" if c in _numeric_set(schema) else "categorical")
        rows.append({"column": c, "role": role, "kind": kind, "share_unchanged": share, "touched": bool(share < 1.0)})
    qi_n = sum(p.records_unchanged for p in parts)
    all_n = sum(p.records_verbatim for p in parts)
    return ReleaseCheck(
        value=qi_n / n if qi else 1.0, n_records=n, quasi_identifiers=qi, quasi_identifiers_declared=declared,
        records_unchanged=qi_n if qi else n, records_verbatim=all_n, share_verbatim=all_n / n,
        unique_in_z=int(unique_in_z), untouched_columns=[r["column"] for r in rows if not r["touched"]],
        tolerance=float(tolerance),
        per_column=pd.DataFrame(rows, columns=["column", "role", "kind", "share_unchanged", "touched"]),
    )


def _numeric_set(schema: Schema) -> set[str]:
    return set(schema.numeric) | ({schema.weight} if schema.weight else set())


def _is_numeric(c: str, schema: Schema, numeric: set[str], xv: pd.DataFrame, zv: pd.DataFrame) -> bool:
    return c in numeric or (c not in schema.categorical and c != schema.class_column
                            and pd.api.types.is_numeric_dtype(xv[c]) and pd.api.types.is_numeric_dtype(zv[c]))


def release_check(
    x: pd.DataFrame,
    z: pd.DataFrame,
    schema: Schema,
    *,
    columns: Sequence[str] | None = None,
    tolerance: float = TOLERANCE,
    record_aligned: bool = True,
) -> ReleaseCheck:
    """Compare a release ``z`` with the original ``x`` record by record.

    ``columns`` are the columns compared (default: every column of z that x has);
    the quasi-identifiers are ``schema.quasi_identifiers``, or all of the schema's
    attributes when none is declared.

    With ``record_aligned=False`` (a synthetic release with its own number of records,
    whose rows are not paired with x's) a released record counts as unchanged when it
    equals *some* original record exactly: ``value`` is then the share of z's records
    whose quasi-identifiers occur in x, ``share_verbatim`` the share of z's records that
    are copies of a record of x, and ``per_column`` is empty.
    """
    if len(x) == 0 or len(z) == 0:
        raise SchemaError("the release check needs at least one record in x and in z")
    cols, qi, declared = _compared_columns(x, z, schema, columns)
    if not record_aligned:
        return _check_unaligned(x, z, cols, qi, declared, tolerance)
    if len(x) != len(z):
        raise SchemaError(f"the release check compares records one by one: x has {len(x)} rows, z has {len(z)}")
    xv, zv = x.reset_index(drop=True), z.reset_index(drop=True)
    numeric = _numeric_set(schema)
    same: dict[str, np.ndarray] = {}
    rows = []
    for c in cols:
        is_num = _is_numeric(c, schema, numeric, xv, zv)
        same[c] = unchanged_cells(xv[c], zv[c], is_num, tolerance)
        share = float(same[c].mean())
        role = schema.role(c) if c in schema.all_columns else "not in the schema"
        rows.append({"column": c, "role": role, "kind": "numeric" if is_num else "categorical",
                     "share_unchanged": share, "touched": bool(share < 1.0)})
    n = len(xv)
    all_same = np.ones(n, dtype=bool)
    for c in cols:
        all_same &= same[c]
    qi_same = np.ones(n, dtype=bool)
    for c in qi:
        qi_same &= same[c]
    per_column = pd.DataFrame(rows, columns=["column", "role", "kind", "share_unchanged", "touched"])
    untouched = [r["column"] for r in rows if not r["touched"]]
    return _result(zv, qi, declared, qi_same, all_same, untouched, tolerance, per_column, aligned=True)


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


def _check_unaligned(
    x: pd.DataFrame, z: pd.DataFrame, cols: list[str], qi: list[str], declared: bool, tolerance: float
) -> ReleaseCheck:
    xv, zv = x.reset_index(drop=True), z.reset_index(drop=True)

    def found(subset: list[str]) -> np.ndarray:
        # exact equality of whole rows, by hashing each row of both tables the same way
        if not subset:
            return np.ones(len(zv), dtype=bool)
        hx = pd.util.hash_pandas_object(xv[subset].astype(object), index=False).to_numpy()
        hz = pd.util.hash_pandas_object(zv[subset].astype(object), index=False).to_numpy()
        return np.isin(hz, hx)

    empty = pd.DataFrame(columns=["column", "role", "kind", "share_unchanged", "touched"])
    return _result(zv, qi, declared, found(qi), found(cols), [], tolerance, empty, aligned=False)


def _result(
    zv: pd.DataFrame, qi: list[str], declared: bool, qi_same: np.ndarray, all_same: np.ndarray,
    untouched: list[str], tolerance: float, per_column: pd.DataFrame, *, aligned: bool,
) -> ReleaseCheck:
    n = len(zv)
    unique = int((~zv.duplicated(subset=qi, keep=False)).sum()) if qi else 0
    return ReleaseCheck(
        value=float(qi_same.mean()) if qi else 1.0,
        n_records=n,
        quasi_identifiers=qi,
        quasi_identifiers_declared=declared,
        records_unchanged=int(qi_same.sum()) if qi else n,
        records_verbatim=int(all_same.sum()),
        share_verbatim=float(all_same.mean()),
        unique_in_z=unique,
        untouched_columns=untouched,
        tolerance=float(tolerance),
        per_column=per_column,
        record_aligned=aligned,
    )


def qi_hashes(z: pd.DataFrame, qi: Sequence[str]) -> np.ndarray:
    """One 64-bit hash per record of its quasi-identifier values (to count sample uniques
    across partitions; two different combinations share a hash with probability about 2⁻⁶⁴)."""
    if not qi:
        return np.zeros(len(z), dtype=np.uint64)
    return pd.util.hash_pandas_object(z[list(qi)].reset_index(drop=True), index=False).to_numpy()


def release_check_dask(x: Any, z: Any, schema: Schema, *, columns: Sequence[str] | None = None,
                       tolerance: float = TOLERANCE) -> ReleaseCheck:
    """:func:`release_check` of two Dask DataFrames partitioned alike, exactly: column moments
    of x in a first pass, the record-by-record counts per partition pair in a second, and the
    sample uniques of z from hashes Dask counts across partitions."""
    from ppdm.data.partitions import read_partition, run_partitions
    from ppdm.data.types import working_frame
    from ppdm.metrics._dask import check_aligned

    check_aligned(x, z, "the release check")
    cols = [c for c in z.columns if c in x.columns] if columns is None else list(columns)
    numeric = [c for c in cols if c in _numeric_set(schema)]

    def moments(i: int) -> dict[str, tuple[int, float, float, float]]:
        w = working_frame(read_partition(x, i)[numeric], numeric)
        return {c: column_moments(w[c].to_numpy(dtype=float, na_value=np.nan)) for c in numeric}

    per = run_partitions(moments, x.npartitions, name="ppdm-check-moments")
    spreads = {c: column_spread(merge_moments([m[c] for m in per])) for c in numeric}

    def part(i: int) -> CheckPart:
        xi = working_frame(read_partition(x, i), schema.numeric)
        zi = working_frame(read_partition(z, i), schema.numeric)
        return check_partition(xi, zi, schema, cols, spreads, tolerance)

    parts = run_partitions(part, x.npartitions, name="ppdm-check")
    qi = check_columns(schema, cols)[0]
    unique = 0
    if qi:
        h = z[qi].map_partitions(lambda p: pd.Series(qi_hashes(p, qi), dtype="uint64"), meta=("h", "uint64"))
        unique = int((h.value_counts(split_out=max(1, z.npartitions // 8)) == 1).sum().compute())
    return release_check_from_parts(parts, schema, cols, unique, tolerance)


@register_measure(
    "release_check",
    kind="risk",
    description="share of records whose quasi-identifiers (all attributes if none declared) are unchanged in z",
    needs_class=False,
    direction="lower",
    value_range=(0.0, 1.0),
    meaning="The share of released records whose quasi-identifiers (all attributes when none are declared) "
    "are exactly their original values, so an intruder who knows them finds the person unchanged; 0 is best.",
    threshold=0.05,
    out_of_core=True,
)
def _release_check_measure(ctx: EvaluationContext) -> ReleaseCheck:
    from ppdm.metrics._common import is_dask

    if is_dask(ctx.x) or is_dask(ctx.z):
        return release_check_dask(ctx.x, ctx.z, ctx.schema)
    return release_check(ctx.x, ctx.z, ctx.schema, record_aligned=len(ctx.x) == len(ctx.z))
