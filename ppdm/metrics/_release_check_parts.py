"""The release check of partitioned tables: per-partition counts and Dask DataFrames.

:func:`check_partition` counts one partition pair, :func:`release_check_from_parts` adds the
counts up into a :class:`ReleaseCheck`, and :func:`release_check_dask` runs the whole check
on two Dask DataFrames, exactly. Split from :mod:`ppdm.metrics.release_check`, which
re-exports every name here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ppdm.data.schema import Schema
from ppdm.errors import SchemaError
from ppdm.metrics._common import column_moments, merge_moments
from ppdm.metrics._release_check_cells import (
    TOLERANCE,
    _is_numeric,
    _numeric_set,
    check_columns,
    column_spread,
    near_cells,
    release_decimals,
    unchanged_cells,
)
from ppdm.metrics._release_check_gate import GateThresholds
from ppdm.metrics._release_check_hashes import (
    KeyCounts,
    _compute,
    _RowHashes,
    dask_copies,
    multiset_matches,
    qi_hashes,
)
from ppdm.metrics._release_check_result import PER_KEY_COLUMNS, ReleaseCheck


@dataclass
class CheckPart:
    """The release check's sums over one partition (records are compared within it).

    ``copied`` counts the partition's released records that copy one of its original records
    (multisets); ``verbatim_keys`` holds the hashes on all compared columns of the originals
    that come out verbatim (own original or copy), ``near_keys`` those of the originals that
    come out verbatim or near-verbatim (:func:`near_cells`), to be looked up among all of x's
    records; ``near`` counts the near-verbatim records."""

    n: int
    unchanged: dict[str, int]
    records_unchanged: int
    records_verbatim: int
    copied: int = 0
    verbatim_keys: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint64))
    near: int = 0
    near_keys: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.uint64))


def check_partition(x: pd.DataFrame, z: pd.DataFrame, schema: Schema, columns: Sequence[str],
                    spreads: dict[str, tuple[float, float]], tolerance: float = TOLERANCE,
                    thresholds: GateThresholds | dict[str, Any] | None = None,
                    decimals: dict[str, int] | None = None) -> CheckPart:
    """:func:`release_check`'s counts for one partition pair, numeric cells judged against the
    whole column's ``spreads`` (:func:`column_spread`); ``thresholds`` and ``decimals`` as
    for :func:`release_check`."""
    t = GateThresholds.of(thresholds)
    qi = check_columns(schema, columns)[0]
    xv, zv = x.reset_index(drop=True), z.reset_index(drop=True)
    numeric = _numeric_set(schema)
    kinds = {c: _is_numeric(c, schema, numeric, xv, zv) for c in columns}
    dec = release_decimals(zv, kinds) if decimals is None else decimals
    all_same = np.ones(len(xv), dtype=bool)
    qi_same = np.ones(len(xv), dtype=bool)
    near_all = np.ones(len(xv), dtype=bool)
    counts = {}
    for c in columns:
        spread = spreads.get(c) if kinds[c] else None
        same = unchanged_cells(xv[c], zv[c], kinds[c], tolerance, spread)
        counts[c] = int(same.sum())
        all_same &= same
        near_all &= same | near_cells(xv[c], zv[c], kinds[c], t.near_verbatim, spread, dec.get(c))
        if c in qi:
            qi_same &= same
    hx, hz = _RowHashes(xv, kinds), _RowHashes(zv, kinds)
    full_x, full_z = hx.of(list(columns)), hz.of(list(columns))
    copied = multiset_matches(full_x, full_z)
    verbatim = all_same | np.isin(full_x, full_z)
    return CheckPart(len(xv), counts, int(qi_same.sum()), int(all_same.sum()), copied, np.unique(full_x[verbatim]),
                     int(near_all.sum()), np.unique(full_x[verbatim | near_all]))


def release_check_from_parts(parts: Sequence[CheckPart], schema: Schema, columns: Sequence[str],
                             unique_in_z: int, tolerance: float = TOLERANCE,
                             kinds: dict[str, str] | None = None, keys: KeyCounts | None = None,
                             copies: tuple[int, int, int] | None = None,
                             thresholds: GateThresholds | dict[str, Any] | None = None) -> ReleaseCheck:
    """The release check of a partitioned table from its partitions' counts; with ``keys`` (x's
    records counted by key across partitions) also the verbatim records unique in x and the
    per-key table; ``copies`` (:func:`dask_copies`) counts copies among all of x instead of
    within each partition; ``thresholds`` as for :func:`release_check`."""
    t = GateThresholds.of(thresholds)
    qi, declared = check_columns(schema, columns)
    n = sum(p.n for p in parts)
    if n == 0:
        raise SchemaError("the release check needs at least one record")
    rows: list[dict[str, Any]] = []
    for c in columns:
        share = sum(p.unchanged[c] for p in parts) / n
        role = schema.role(c) if c in schema.all_columns else "not in the schema"
        kind = (kinds or {}).get(c) or ("numeric" if c in _numeric_set(schema) else "categorical")
        rows.append({"column": c, "role": role, "kind": kind, "share_unchanged": share, "touched": bool(share < 1.0)})
    per_column = pd.DataFrame(rows, columns=["column", "role", "kind", "share_unchanged", "touched"])
    qi_n = sum(p.records_unchanged for p in parts)
    paired = sum(p.records_verbatim for p in parts)
    copied = sum(p.copied for p in parts) if copies is None else copies[0]
    verbatim = max(paired, copied)
    verbatim_unique = near_unique = unique_x = unique_all = 0
    untouched_keys: list[str] = []
    together = 0.0
    per_key = pd.DataFrame(columns=PER_KEY_COLUMNS)
    alone: dict[str, float] = {}
    share_of = dict(zip(per_column["column"], per_column["share_unchanged"], strict=True))
    if keys is not None:
        empty = np.zeros(0, np.uint64)
        cands = np.unique(np.concatenate([p.verbatim_keys for p in parts])) if parts else empty
        near_cands = np.unique(np.concatenate([p.near_keys for p in parts] + [cands])) if parts else empty
        if copies is None:
            verbatim_unique = keys.unique_among(columns, cands)
            near_unique = keys.unique_among(columns, near_cands)
        else:
            verbatim_unique, near_unique = copies[1], copies[2]
        unique_all = keys.stats(columns)[2]
        for c in columns:
            if share_of[c] >= t.untouched_share:
                total, _, single = keys.stats([c])
                alone[c] = single / total if total else 0.0
    if keys is not None and qi:
        unique_x = keys.stats(qi)[2]
        untouched_keys = [c for c in qi if share_of.get(c, 0.0) >= t.untouched_share]

        def unique_share(cols: list[str]) -> float:
            if not cols:
                return 0.0
            total, _, single = keys.stats(cols)
            return single / total if total else 0.0

        together = unique_share(untouched_keys)
        key_rows = []
        for c in qi:
            total, distinct, single = keys.stats([c])
            drop = (together - unique_share([k for k in untouched_keys if k != c])) if c in untouched_keys \
                else float("nan")
            key_rows.append({"column": c, "share_unchanged": float(share_of.get(c, 0.0)), "untouched": c in untouched_keys,
                             "distinct_x": distinct, "unique_alone": single / total if total else 0.0,
                             "unique_drop": drop})
        per_key = pd.DataFrame(key_rows, columns=PER_KEY_COLUMNS)
    return ReleaseCheck(
        value=qi_n / n if qi else 1.0, n_records=n, quasi_identifiers=qi, quasi_identifiers_declared=declared,
        records_unchanged=qi_n if qi else n, records_verbatim=verbatim, share_verbatim=verbatim / n,
        unique_in_z=int(unique_in_z), untouched_columns=[r["column"] for r in rows if not r["touched"]],
        tolerance=float(tolerance), per_column=per_column, records_copied=copied, records_verbatim_paired=paired,
        records_verbatim_unique=verbatim_unique, share_verbatim_unique=verbatim_unique / n, unique_in_x=unique_x,
        untouched_keys=untouched_keys, untouched_keys_unique=together, per_key=per_key,
        untouched_share=float(t.untouched_share), near_tolerance=float(t.near_verbatim),
        records_near_verbatim=sum(p.near for p in parts), records_near_verbatim_unique=max(near_unique, verbatim_unique),
        share_near_verbatim_unique=max(near_unique, verbatim_unique) / n, unique_in_x_all=unique_all,
        untouched_alone=alone,
    )


def release_check_dask(x: Any, z: Any, schema: Schema, *, columns: Sequence[str] | None = None,
                       tolerance: float = TOLERANCE, record_aligned: bool = True,
                       thresholds: GateThresholds | dict[str, Any] | None = None) -> ReleaseCheck:
    """:func:`release_check` of two Dask DataFrames, exactly. Paired (partitioned alike, row
    ``i`` of each partition of z made from row ``i`` of x's): column moments of x in a first
    pass, the record-by-record counts per partition pair in a second, x's records counted by
    key and the sample uniques of z from hashes Dask counts across partitions. Not paired:
    every count among all of x, from hashes Dask counts in both tables."""
    from ppdm.data.partitions import read_partition, run_partitions
    from ppdm.data.types import working_frame
    from ppdm.metrics._dask import check_aligned

    cols = [c for c in z.columns if c in x.columns] if columns is None else list(columns)
    numeric = [c for c in cols if c in _numeric_set(schema)]
    num_set = _numeric_set(schema)
    kinds = {c: _is_numeric(c, schema, num_set, x._meta, z._meta) for c in cols}
    qi = check_columns(schema, cols)[0]
    if not record_aligned:
        return _release_check_dask_unpaired(x, z, schema, cols, qi, kinds, tolerance)
    check_aligned(x, z, "the release check")

    def moments(i: int) -> dict[str, tuple[int, float, float, float]]:
        w = working_frame(read_partition(x, i)[numeric], numeric)
        return {c: column_moments(w[c].to_numpy(dtype=float, na_value=np.nan)) for c in numeric}

    per = run_partitions(moments, x.npartitions, name="ppdm-check-moments")
    spreads = {c: column_spread(merge_moments([m[c] for m in per])) for c in numeric}

    def part(i: int) -> CheckPart:
        xi = working_frame(read_partition(x, i), schema.numeric)
        zi = working_frame(read_partition(z, i), schema.numeric)
        return check_partition(xi, zi, schema, cols, spreads, tolerance, thresholds)

    parts = run_partitions(part, x.npartitions, name="ppdm-check")
    unique = 0
    if qi:
        h = z[qi].map_partitions(lambda p: pd.Series(qi_hashes(p, qi), dtype="uint64"), meta=("h", "uint64"))
        unique = int((h.value_counts(split_out=max(1, z.npartitions // 8)) == 1).sum().compute())
    keys = np.unique(np.concatenate([p.verbatim_keys for p in parts])) if parts else None
    near = np.unique(np.concatenate([p.near_keys for p in parts])) if parts else None
    return release_check_from_parts(parts, schema, cols, unique, tolerance, keys=KeyCounts(x, kinds),
                                    copies=dask_copies(x, z, cols, kinds, keys, near), thresholds=thresholds)


def _release_check_dask_unpaired(x: Any, z: Any, schema: Schema, cols: list[str], qi: list[str],
                                 kinds: dict[str, bool], tolerance: float) -> ReleaseCheck:
    """The pairing-free check of two Dask DataFrames: records and values matched one to one
    among all of x (multisets of hashes, counted by Dask)."""
    kx, kz = KeyCounts(x, kinds), KeyCounts(z, kinds)
    n = kz.stats(cols)[0]
    if n == 0:
        raise SchemaError("the release check needs at least one record in x and in z")

    def matched(c: Sequence[str]) -> int:
        split = max(1, x.npartitions // 8)
        a = kx._hashes(c).value_counts(split_out=split).rename("a")
        b = kz._hashes(c).value_counts(split_out=split).rename("b")
        both = a.to_frame().merge(b.to_frame(), left_index=True, right_index=True, how="inner")
        return int(_compute(both.min(axis=1).sum())[0])

    rows: list[dict[str, Any]] = []
    for c in cols:
        share = matched([c]) / n
        role = schema.role(c) if c in schema.all_columns else "not in the schema"
        rows.append({"column": c, "role": role, "kind": "numeric" if kinds[c] else "categorical",
                     "share_unchanged": share, "touched": bool(share < 1.0)})
    per_column = pd.DataFrame(rows, columns=["column", "role", "kind", "share_unchanged", "touched"])
    copied, verbatim_unique, _ = dask_copies(x, z, cols, kinds)
    qi_n = matched(qi) if qi else n
    unique_z = kz.stats(qi)[2] if qi else 0
    check = ReleaseCheck(
        value=qi_n / n if qi else 1.0, n_records=n, quasi_identifiers=qi,
        quasi_identifiers_declared=bool(schema.quasi_identifiers), records_unchanged=qi_n, records_verbatim=copied,
        share_verbatim=copied / n, unique_in_z=unique_z,
        untouched_columns=[r["column"] for r in rows if not r["touched"]], tolerance=float(tolerance),
        per_column=per_column, record_aligned=False, records_copied=copied, records_verbatim_unique=verbatim_unique,
        share_verbatim_unique=verbatim_unique / n, unique_in_x=kx.stats(qi)[2] if qi else 0,
        untouched_share=1.0, records_near_verbatim_unique=verbatim_unique,
        share_near_verbatim_unique=verbatim_unique / n, unique_in_x_all=kx.stats(cols)[2],
    )
    return check
