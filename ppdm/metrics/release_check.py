"""The release check: how much of a release z is still the original x — and the gate on it.

Run after every anonymization (``ppdm anonymize``, :func:`ppdm.experiments.release.release`)
and kept in the release's private log; also a measure of ``ppdm evaluate``. It compares z
with x in two ways:

* **record by record**, when the pairing of z's rows with x's is known (at ``anonymize``,
  before the rows are shuffled; at ``evaluate`` through the release's private log): a cell
  is unchanged when it equals its own original;
* **as multisets**, always: a released record is a *copy* when it equals some record of x on
  every compared column, each record of x matched at most once. A row-permuted copy of x is
  a copy in full, whatever the pairing says. Without a pairing (a file the owner did not
  pair) this is the only form: every count below is then taken among all of x.

It reports:

* the share of records whose quasi-identifiers come out unchanged (``value``; all
  attributes when no quasi-identifier is declared): an intruder who knows a person's
  quasi-identifiers finds them in z exactly as in x (without a pairing: the share of z's
  records whose quasi-identifiers occur in x, matched one to one);
* the records published as they were (``records_verbatim``: the larger of those equal to
  their own original and the copies), and among them those whose original is unique in x on
  its quasi-identifiers (``records_verbatim_unique``): such a record is found and fully
  disclosed by anyone who knows the quasi-identifiers;
* per column, the share of unchanged cells (without a pairing: of z's values matched one to
  one with x's values of the column, an upper bound) and the columns no technique touched;
* per quasi-identifier (``per_key``), whether it passed untouched, its distinct values and
  the share of x's records it makes unique alone, and for the untouched ones together the
  share of x's records they make unique (``untouched_keys_unique``);
* the number of records unique on their quasi-identifiers in z (sample uniques).

:func:`gate` turns the check into refusals and warnings (:class:`GateThresholds`).

A numeric cell counts as unchanged when it moved by at most ``tolerance`` (default
10⁻⁶) times the column's standard deviation in x: a release that differs from x only
in the last digits is numerically the original. Categorical cells must be equal;
a missing value in both tables counts as unchanged. Copies are exact equality of the
values as compared (numbers as float64, everything else as text).
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
#: a column counts as untouched when at least this share of its cells is unchanged (a technique
#: that changes a handful of values, e.g. top-coding 0.1 % of them, leaves the column a join key)
UNTOUCHED_SHARE = 0.99
#: a record is near-verbatim when each numeric value is within this many standard deviations of
#: its original (or within the release's own precision) and each categorical value is equal
NEAR_TOLERANCE = 0.01


PER_KEY_COLUMNS = ["column", "share_unchanged", "untouched", "distinct_x", "unique_alone", "unique_drop"]


@dataclass
class ReleaseCheck(MeasureResult):
    """Result of :func:`release_check`.

    ``value`` is the share of records whose quasi-identifiers are unchanged in z.
    ``per_column`` has one row per compared column: ``column``, ``role``, ``kind``
    (numeric/categorical), ``share_unchanged`` and ``touched`` (some cell changed).
    ``per_key`` has one row per quasi-identifier: ``share_unchanged``, ``untouched``,
    ``distinct_x`` (distinct values in x), ``unique_alone`` (share of x's records whose value
    no other record has) and ``unique_drop`` (for an untouched key: how much the share of
    x's records unique on the untouched keys falls without it — the key most responsible
    has the largest drop). ``record_aligned`` says whether records were compared with their
    own originals (the pairing known) or among all of x.

    A key or column is *untouched* from ``untouched_share`` of unchanged cells (default 99 %).
    ``records_verbatim_unique`` counts verbatim records (own original or copy) whose original
    is unique in x on its quasi-identifiers or on all compared columns — the same thing, as a
    record unique on a subset of its values is unique on all of them; ``unique_in_x_all`` is
    the number of x's records unique on all compared columns. ``records_near_verbatim``
    counts records within ``near_tolerance`` of their own original on every column
    (:func:`near_cells`; only with a pairing), and ``records_near_verbatim_unique`` the
    verbatim or near-verbatim records unique in x. ``untouched_alone`` gives, for every
    untouched column (with a pairing), the share of x's records its value alone makes unique.
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
    records_copied: int = 0
    records_verbatim_paired: int = 0
    records_verbatim_unique: int = 0
    share_verbatim_unique: float = 0.0
    unique_in_x: int = 0
    untouched_keys: list[str] = field(default_factory=list)
    untouched_keys_unique: float = 0.0
    per_key: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=PER_KEY_COLUMNS), repr=False)
    untouched_share: float = UNTOUCHED_SHARE
    near_tolerance: float = NEAR_TOLERANCE
    records_near_verbatim: int = 0
    records_near_verbatim_unique: int = 0
    share_near_verbatim_unique: float = 0.0
    unique_in_x_all: int = 0
    untouched_alone: dict[str, float] = field(default_factory=dict)

    @property
    def lower_bound(self) -> str | None:
        """Records looked up among all of x (no pairing) are counted only when copied verbatim: the
        value then bounds the share of unchanged records from below (:mod:`ppdm.metrics.judgement`)."""
        if self.record_aligned:
            return None
        return ("without the pairing only records copied verbatim are counted; the release's private log "
                "(--private) gives the exact share")
    #: blanked or recoded quasi-identifiers another released column restores (in-memory checks only;
    #: :func:`ppdm.metrics.restorable.restorable_pairs`: key, column, change, affected, share_restored...)
    restorable_keys: pd.DataFrame = field(default_factory=pd.DataFrame, repr=False)

    def summary_lines(self) -> list[str]:
        """The check as a few short lines (what ``ppdm anonymize`` prints)."""
        n = self.n_records
        qi = (f"{len(self.quasi_identifiers)} declared quasi-identifier(s)" if self.quasi_identifiers_declared
              else f"all {len(self.quasi_identifiers)} attributes (no quasi-identifier declared)")
        keys = self._key_line()
        if not self.record_aligned:
            lines = [
                f"released records not paired with the original's ({n}): each is compared with every original "
                "record",
                f"released records equal to an original record on the quasi-identifiers: {_pct(self.value)} "
                f"({self.records_unchanged} of {n}; {qi})",
                f"released records equal to an original record on every column: {_pct(self.share_verbatim)} "
                f"({self.records_verbatim} of {n}), of which an original unique in x: "
                f"{self.records_verbatim_unique}",
                f"records unique on their quasi-identifiers in z: {self.unique_in_z} of {n}",
            ]
            return lines + ([keys] if keys else [])
        cells = ", ".join(f"{r.column} {100 * r.share_unchanged:.1f}%" for r in self.per_column.itertuples())  # type: ignore[operator, str-bytes-safe]  # pandas-stubs types itertuples' fields as any scalar
        lines = [
            f"records with unchanged quasi-identifiers: {_pct(self.value)} ({self.records_unchanged} of {n}; {qi})",
            f"records unchanged on every column: {_pct(self.share_verbatim)} ({self.records_verbatim} of {n}"
            + (f", of which {self.records_copied} copies found among all of x" if self.records_copied
               > self.records_verbatim_paired else "") + ")",
            f"records unchanged on every column and unique in x: "
            f"{_pct(self.share_verbatim_unique)} ({self.records_verbatim_unique} of {n})",
            f"records unchanged or within {self.near_tolerance:g} standard deviations of their original on every "
            f"column (near-verbatim): {self.records_near_verbatim} of {n}, unique in x with the copies: "
            f"{self.records_near_verbatim_unique}",
            f"records unique on their quasi-identifiers in z: {self.unique_in_z} of {n}",
            f"unchanged cells per column: {cells}",
            "columns no technique touched: " + (", ".join(self.untouched_columns) or "none"),
        ]
        return lines + ([keys] if keys else [])

    def _key_line(self) -> str:
        if not self.untouched_keys:
            return ""
        return (f"quasi-identifiers no technique touched: {', '.join(self.untouched_keys)}, which make "
                f"{_pct(self.untouched_keys_unique)} of the original records unique")


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


def check_columns(schema: Schema, columns: Sequence[str]) -> tuple[list[str], bool]:
    """The quasi-identifiers among ``columns`` (all attributes when none is declared)."""
    declared = bool(schema.quasi_identifiers)
    return [c for c in (schema.quasi_identifiers if declared else schema.attributes) if c in columns], declared


class KeyCounts:
    """Counts of x's records by key combination, across the partitions of a Dask DataFrame
    (exact: Dask counts the records' hashes). ``kinds`` says which columns are numbers."""

    def __init__(self, x: Any, kinds: dict[str, bool]) -> None:
        self.x = x
        self.kinds = kinds
        self._cache: dict[tuple[str, ...], tuple[int, int, int]] = {}

    def _hashes(self, cols: Sequence[str]) -> Any:
        kinds, cols = self.kinds, list(cols)
        return self.x.map_partitions(lambda p: pd.Series(_RowHashes(p.reset_index(drop=True), kinds).of(cols),
                                                         dtype="uint64"), meta=("h", "uint64"))

    def stats(self, cols: Sequence[str]) -> tuple[int, int, int]:
        """(records, distinct combinations, records whose combination no other record has)."""
        key = tuple(cols)
        if key not in self._cache:
            vc = self._hashes(cols).value_counts(split_out=max(1, self.x.npartitions // 8))
            n, distinct, single = (int(v) for v in _compute(vc.sum(), vc.size, (vc == 1).sum()))
            self._cache[key] = (n, distinct, single)
        return self._cache[key]

    def unique_among(self, cols: Sequence[str], hashes: np.ndarray) -> int:
        """How many of the combinations ``hashes`` (on ``cols``) belong to exactly one record of x."""
        if hashes.size == 0:
            return 0
        h = self._hashes(cols)
        vc = h[h.isin(hashes)].value_counts()
        return int(_compute((vc == 1).sum())[0])


def _compute(*items: Any) -> tuple[Any, ...]:
    import dask

    return dask.compute(*items)


def dask_copies(x: Any, z: Any, columns: Sequence[str], kinds: dict[str, bool],
                paired_keys: np.ndarray | None = None,
                near_keys: np.ndarray | None = None) -> tuple[int, int, int]:
    """Among all of x, counted by Dask: (released records that copy a record of x, multisets;
    records of x unique on all ``columns`` that are copied or — ``paired_keys``, their hashes
    on ``columns`` — equal to their own release; the same with ``near_keys``, the originals
    whose release is near-verbatim, in place of ``paired_keys``)."""
    cols = list(columns)
    split = max(1, x.npartitions // 8)
    hx = KeyCounts(x, kinds)._hashes(cols).rename("f").to_frame()
    in_x = hx["f"].value_counts(split_out=split).rename("a").to_frame()
    in_z = KeyCounts(z, kinds)._hashes(cols).value_counts(split_out=split).rename("b").to_frame()
    common = in_x.merge(in_z, left_index=True, right_index=True, how="inner")
    copies = common.min(axis=1).sum()
    single = hx.merge(in_x, left_on="f", right_index=True)
    single = single[single["a"] == 1].merge(in_z, left_on="f", right_index=True, how="left")
    copied = ~single["b"].isna()
    hit = copied | single["f"].isin(paired_keys) if paired_keys is not None and paired_keys.size else copied
    near = copied | single["f"].isin(near_keys) if near_keys is not None and near_keys.size else hit
    n_copies, n_unique, n_near = _compute(copies, hit.sum(), near.sum())
    if int(n_unique):
        # as in memory (found_by_values): a verbatim record counts only when an intruder who knows
        # its values finds it alone among all of z's records, blanks matching anything
        unfound = _not_found(x, z, cols, kinds, _compute(single["f"][hit])[0].to_numpy(dtype=np.uint64))
        n_unique, n_near = int(n_unique) - unfound, int(n_near) - unfound
    return int(n_copies), int(n_unique), max(int(n_unique), int(n_near))


def _not_found(x: Any, z: Any, cols: list[str], kinds: dict[str, bool], verbatim: np.ndarray) -> int:
    """How many of x's records with the full hashes ``verbatim`` (on ``cols``) an intruder who
    knows their values cannot single out in z: :func:`candidates_in` summed over z's
    partitions, one task per partition (:func:`ppdm.data.partitions.run_partitions`)."""
    from ppdm.data.partitions import read_partition, run_partitions

    def queries(i: int) -> tuple[np.ndarray, np.ndarray]:
        p = read_partition(x, i).reset_index(drop=True)
        h = _RowHashes(p, kinds)
        keep = np.isin(h.of(cols), verbatim)
        return _cell_hashes(h, cols)[keep], p[cols].isna().to_numpy()[keep]

    found = run_partitions(queries, x.npartitions, name="ppdm-check-verbatim")
    q = np.concatenate([f[0] for f in found]) if found else np.zeros((0, len(cols)), np.uint64)
    qb = np.concatenate([f[1] for f in found]) if found else np.zeros((0, len(cols)), bool)

    def count(j: int) -> np.ndarray:
        p = read_partition(z, j).reset_index(drop=True)
        return candidates_in(_cell_hashes(_RowHashes(p, kinds), cols), p[cols].isna().to_numpy(), q, qb)

    total = np.sum(run_partitions(count, z.npartitions, name="ppdm-check-intruder"), axis=0)
    return int((np.asarray(total) >= FOUND_BELOW).sum())


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


def _numeric_set(schema: Schema) -> set[str]:
    return set(schema.numeric) | ({schema.weight} if schema.weight else set())


def column_kinds(schema: Schema, x: pd.DataFrame, z: pd.DataFrame, columns: Sequence[str]) -> dict[str, bool]:
    """Which compared columns are numbers (compared within the tolerance, hashed as float64)."""
    num = _numeric_set(schema)
    return {c: _is_numeric(c, schema, num, x, z) for c in columns}


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
    thresholds: GateThresholds | dict[str, Any] | None = None,
    decimals: dict[str, int] | None = None,
) -> ReleaseCheck:
    """Compare a release ``z`` with the original ``x`` (see the module docstring).

    ``thresholds`` (:class:`GateThresholds`) give the share of unchanged cells from which a
    column counts as untouched (``untouched_share``) and the near-verbatim tolerance
    (``near_verbatim``); ``decimals`` the decimals z's numeric columns were rounded to (by
    default read from z, :func:`release_decimals`).

    ``columns`` are the columns compared (default: every column of z that x has);
    the quasi-identifiers are ``schema.quasi_identifiers``, or all of the schema's
    attributes when none is declared.

    ``record_aligned=True`` says that row ``i`` of z was made from row ``i`` of x (the pairing
    known): records are compared with their own originals, and as multisets besides. With
    ``record_aligned=False`` (a synthetic release with its own number of records, or a z whose
    rows the owner did not pair with x's) every count is taken among all of x, records and
    values matched one to one (exact equality).
    """
    if len(x) == 0 or len(z) == 0:
        raise SchemaError("the release check needs at least one record in x and in z")
    cols, qi, declared = _compared_columns(x, z, schema, columns)
    if record_aligned and len(x) != len(z):
        raise SchemaError(f"the release check compares records one by one: x has {len(x)} rows, z has {len(z)}")
    t = GateThresholds.of(thresholds)
    xv, zv = x.reset_index(drop=True), z.reset_index(drop=True)
    numeric = _numeric_set(schema)
    kinds = {c: _is_numeric(c, schema, numeric, xv, zv) for c in cols}
    hx, hz = _RowHashes(xv, kinds), _RowHashes(zv, kinds)
    n = len(zv)
    same: dict[str, np.ndarray] = {}
    near_all = np.ones(n, dtype=bool) if record_aligned else np.zeros(n, dtype=bool)
    dec = release_decimals(zv, kinds) if decimals is None and record_aligned else dict(decimals or {})
    rows: list[dict[str, Any]] = []
    for c in cols:
        if record_aligned:
            same[c] = unchanged_cells(xv[c], zv[c], kinds[c], tolerance)
            near_all &= same[c] | near_cells(xv[c], zv[c], kinds[c], t.near_verbatim, decimals=dec.get(c))
            share = float(same[c].mean())
        else:
            share = multiset_matches(hx.of([c]), hz.of([c])) / n
        role = schema.role(c) if c in schema.all_columns else "not in the schema"
        rows.append({"column": c, "role": role, "kind": "numeric" if kinds[c] else "categorical",
                     "share_unchanged": share, "touched": bool(share < 1.0)})
    per_column = pd.DataFrame(rows, columns=["column", "role", "kind", "share_unchanged", "touched"])
    untouched = [r["column"] for r in rows if not r["touched"]]
    # copies among all of x: the multiset intersection of whole records
    full_x, full_z = hx.of(cols), hz.of(cols)
    copied = multiset_matches(full_x, full_z)
    qi_x = hx.of(qi) if qi else np.zeros(len(xv), dtype=np.uint64)
    unique_x = _unique_mask(qi_x) if qi else np.zeros(len(xv), dtype=bool)
    # verbatim and unique is judged on all compared columns: a record unique in x on its
    # quasi-identifiers is unique on all of them, and one unique only on all of them is still a
    # true record of one person in full (at most one copy matches it)
    unique_all = _unique_mask(full_x)
    has_copy = np.isin(full_x, full_z)
    if record_aligned:
        all_same = np.ones(n, dtype=bool)
        for c in cols:
            all_same &= same[c]
        qi_same = np.ones(n, dtype=bool)
        for c in qi:
            qi_same &= same[c]
        paired = int(all_same.sum())
        records_unchanged = int(qi_same.sum()) if qi else n
        exact = (all_same | has_copy) & unique_all
        exact &= found_by_values(xv, zv, cols, hx, hz, exact)
        verbatim_unique = int(exact.sum())
        near_unique = int((exact | (near_all & ~all_same & ~has_copy & unique_all)).sum())
    else:
        paired = 0
        records_unchanged = multiset_matches(qi_x, hz.of(qi)) if qi else n
        exact = has_copy & unique_all
        verbatim_unique = near_unique = int((exact & found_by_values(xv, zv, cols, hx, hz, exact)).sum())
    verbatim = max(paired, copied)
    # without a pairing a column's values matched as multisets say nothing of a record keeping
    # its own: only a column matched in full counts as untouched there
    share_untouched = t.untouched_share if record_aligned else 1.0
    keys = _per_key(xv, hx, qi, per_column, share_untouched)
    untouched_keys = [str(r.column) for r in keys.itertuples() if r.untouched]  # names are str already
    alone = ({r["column"]: _unique_share(hx.of([r["column"]])) for r in rows
              if r["share_unchanged"] >= share_untouched} if record_aligned else {})
    return ReleaseCheck(
        value=records_unchanged / n if qi else 1.0,
        n_records=n,
        quasi_identifiers=qi,
        quasi_identifiers_declared=declared,
        records_unchanged=records_unchanged,
        records_verbatim=verbatim,
        share_verbatim=verbatim / n,
        unique_in_z=int(_unique_mask(hz.of(qi)).sum()) if qi else 0,
        untouched_columns=untouched,
        tolerance=float(tolerance),
        per_column=per_column,
        record_aligned=bool(record_aligned),
        records_copied=copied,
        records_verbatim_paired=paired,
        records_verbatim_unique=verbatim_unique,
        share_verbatim_unique=verbatim_unique / n,
        unique_in_x=int(unique_x.sum()),
        untouched_keys=untouched_keys,
        untouched_keys_unique=_unique_share(hx.of(untouched_keys)) if untouched_keys else 0.0,
        per_key=keys,
        untouched_share=float(share_untouched),
        near_tolerance=float(t.near_verbatim),
        records_near_verbatim=int(near_all.sum()),
        records_near_verbatim_unique=near_unique,
        share_near_verbatim_unique=near_unique / n,
        unique_in_x_all=int(unique_all.sum()),
        untouched_alone=alone,
        restorable_keys=_restorable_keys(xv, zv, qi, cols, record_aligned),
    )


def _restorable_keys(x: pd.DataFrame, z: pd.DataFrame, qi: list[str], columns: list[str],
                     paired: bool) -> pd.DataFrame:
    """The pairs (key, compared column) where the column gives a blanked or recoded key back
    (:func:`ppdm.metrics.restorable.restorable_pairs`), for the ``warn_restorable_key`` finding."""
    from ppdm.metrics.restorable import restorable_pairs  # loaded only when a check runs

    return restorable_pairs(x, z, qi, columns, paired=paired)[0] if qi else pd.DataFrame()


#: a verbatim record unique in x counts as found when an intruder who knows its true values finds
#: fewer than this many released records that could be it (itself alone)
FOUND_BELOW = 2


def found_by_values(x: pd.DataFrame, z: pd.DataFrame, cols: Sequence[str], hx: _RowHashes, hz: _RowHashes,
                    rows: np.ndarray) -> np.ndarray:
    """Which of x's records ``rows`` an intruder who knows their true values on ``cols`` narrows to
    fewer than :data:`FOUND_BELOW` released records: the intruder's view
    (:func:`ppdm.data.blanks.intruder_frequencies`), a blank of z matching any value and a value
    missing in x being one the intruder does not know. A record that local suppression left as it
    was, while blanking others so that they could be it, is then not found. Grouped by patterns
    of blanks, never an n × n comparison (:func:`candidates_in`; a partitioned table adds it up
    over z's partitions, :func:`dask_copies`)."""
    out = np.zeros(len(x), dtype=bool)
    if not rows.any():
        return out
    cand = candidates_in(_cell_hashes(hz, cols), z[list(cols)].isna().to_numpy(),
                         _cell_hashes(hx, cols)[rows], x[list(cols)].isna().to_numpy()[rows])
    out[np.flatnonzero(rows)] = cand < FOUND_BELOW
    return out


def _cell_hashes(h: _RowHashes, cols: Sequence[str]) -> np.ndarray:
    """The hash of every cell on ``cols`` (one column each), as :class:`_RowHashes` takes them."""
    return (np.column_stack([h._column(c) for c in cols]) if cols
            else np.zeros((len(h.df), 0), dtype=np.uint64))


def candidates_in(z_cells: np.ndarray, z_blank: np.ndarray, queries: np.ndarray, q_blank: np.ndarray) -> np.ndarray:
    """For each query record (its cells' hashes and which of them are missing), how many records
    of z (cells' hashes, blanks) an intruder who knows the query's values cannot tell from it: a
    blank of z matches any value, a missing value of the query is one the intruder does not
    know. The values are coded densely over the query and z together (the blank-pattern
    grouping needs small codes), so the counts of z's partitions add up to z's."""
    from ppdm.data.blanks import distinct_patterns, pattern_frequencies

    nq, m = queries.shape
    if nq == 0 or len(z_cells) == 0:
        return np.zeros(nq)
    cq, cz = [], []
    for j in range(m):
        both = pd.factorize(np.concatenate([queries[:, j], z_cells[:, j]]))[0].astype(np.int64)
        cq.append(np.where(q_blank[:, j], -1, both[:nq]))
        cz.append(np.where(z_blank[:, j], -1, both[nq:]))
    pats, cnt, _ = distinct_patterns(np.column_stack(cz))
    return pattern_frequencies(pats, cnt, queries=np.column_stack(cq))


class _RowHashes:
    """64-bit hashes of records on a set of columns, numbers as float64 (−0 as 0) and
    everything else as text, so that x and z hash alike whatever their dtypes."""

    def __init__(self, df: pd.DataFrame, kinds: dict[str, bool]) -> None:
        self.df = df
        self.kinds = kinds
        self._cols: dict[str, np.ndarray] = {}

    def _column(self, c: str) -> np.ndarray:
        if c not in self._cols:
            s = self.df[c]
            if self.kinds.get(c, False):
                v = s.to_numpy(dtype=float, na_value=np.nan) + 0.0  # -0.0 + 0.0 is 0.0
                h = pd.util.hash_array(v)
            else:
                text = s.astype(object).where(s.notna(), "\x00missing").astype(str).to_numpy(dtype=object)
                h = pd.util.hash_array(text)
            self._cols[c] = h
        return self._cols[c]

    def of(self, cols: Sequence[str]) -> np.ndarray:
        """One hash per record of its values on ``cols`` (order matters; two different records
        share a hash with probability about 2⁻⁶⁴)."""
        out = np.zeros(len(self.df), dtype=np.uint64)
        for k, c in enumerate(cols):
            # combine column hashes as pandas combines them for a row: multiply-xor with a running factor
            out = (out * np.uint64(0x100000001B3 + 2 * k)) ^ self._column(c)
        return out


def multiset_matches(a: np.ndarray, b: np.ndarray) -> int:
    """Size of the multiset intersection of two arrays of hashes: each element of ``b`` matched
    to at most one equal element of ``a`` and the other way round."""
    if a.size == 0 or b.size == 0:
        return 0
    ua, ca = np.unique(a, return_counts=True)
    ub, cb = np.unique(b, return_counts=True)
    _, ia, ib = np.intersect1d(ua, ub, assume_unique=True, return_indices=True)
    return int(np.minimum(ca[ia], cb[ib]).sum())


def _unique_mask(h: np.ndarray) -> np.ndarray:
    """Which records' hash no other record has."""
    if h.size == 0:
        return np.zeros(0, dtype=bool)
    _, inv, counts = np.unique(h, return_inverse=True, return_counts=True)
    return counts[inv] == 1


def _unique_share(h: np.ndarray) -> float:
    return float(_unique_mask(h).mean()) if h.size else 0.0


def _per_key(xv: pd.DataFrame, hx: _RowHashes, qi: Sequence[str], per_column: pd.DataFrame,
             untouched_share: float = UNTOUCHED_SHARE) -> pd.DataFrame:
    """The per-quasi-identifier table (see :class:`ReleaseCheck`); a key is untouched from
    ``untouched_share`` of unchanged cells."""
    share = dict(zip(per_column["column"], per_column["share_unchanged"], strict=True))
    untouched = [c for c in qi if share.get(c, 0.0) >= untouched_share]
    together = _unique_share(hx.of(untouched)) if untouched else 0.0
    rows = []
    for c in qi:
        drop = float("nan")
        if c in untouched:
            rest = [k for k in untouched if k != c]
            drop = together - (_unique_share(hx.of(rest)) if rest else 0.0)
        rows.append({"column": c, "share_unchanged": float(share.get(c, 0.0)), "untouched": c in untouched,
                     "distinct_x": int(xv[c].nunique(dropna=False)), "unique_alone": _unique_share(hx.of([c])),
                     "unique_drop": drop})
    return pd.DataFrame(rows, columns=PER_KEY_COLUMNS)


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


def qi_hashes(z: pd.DataFrame, qi: Sequence[str]) -> np.ndarray:
    """One 64-bit hash per record of its quasi-identifier values (to count sample uniques
    across partitions; two different combinations share a hash with probability about 2⁻⁶⁴)."""
    if not qi:
        return np.zeros(len(z), dtype=np.uint64)
    return pd.util.hash_pandas_object(z[list(qi)].reset_index(drop=True), index=False).to_numpy()


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


# ------------------------------------------------------------------------------ the gate
@dataclass(frozen=True)
class GateThresholds:
    """Where the release gate refuses and warns (shares between 0 and 1; docs/roles_and_release.md).

    Refusals (each overridden by its own flag, :data:`GATE_OVERRIDES`):

    * ``unchanged`` — at least this share of the records come out unchanged on every column;
    * ``verbatim_unique`` — more than this share are unchanged on every column *and* their
      original is unique in x on its quasi-identifiers;
    * ``untouched_unique`` — the quasi-identifiers no technique touched make more than this
      share of the original records unique;
    * ``pass_through_distinct`` — a column no technique models (the weight) has at least this
      share of distinct values, so joining on it finds people (checked before anonymizing);
    * ``untouched_column_unique`` — any other released column that is untouched (below) and
      whose value alone makes more than this share of x's records unique: a join key like a
      weight, refused like one.

    Measuring: a column counts as untouched from ``untouched_share`` of unchanged cells, and
    a record as near-verbatim when every numeric value is within ``near_verbatim`` standard
    deviations of its original (or within the release's precision) and every categorical one
    equal; near-verbatim records unique in x count with the verbatim ones in ``verbatim_unique``.

    Warnings, below the refusal lines: ``warn_verbatim`` (records unchanged on every column),
    ``warn_unchanged_keys`` (records whose quasi-identifiers are all unchanged),
    ``warn_untouched_unique`` (records the untouched quasi-identifiers make unique) and
    ``warn_pass_through_unique`` (records a pass-through column makes unique) and
    ``warn_restorable_key`` (at least this share of a blanked or recoded quasi-identifier's cells
    are given back by another released column, :mod:`ppdm.metrics.restorable`).
    """

    unchanged: float = 0.95
    verbatim_unique: float = 0.05
    untouched_unique: float = 0.5
    pass_through_distinct: float = 0.9
    warn_verbatim: float = 0.05
    warn_unchanged_keys: float = 0.05
    warn_untouched_unique: float = 0.05
    warn_pass_through_unique: float = 0.05
    untouched_share: float = UNTOUCHED_SHARE
    near_verbatim: float = NEAR_TOLERANCE
    untouched_column_unique: float = 0.05
    warn_restorable_key: float = 0.95

    @classmethod
    def of(cls, value: GateThresholds | dict[str, Any] | None) -> GateThresholds:
        """Thresholds from ``None`` (the defaults), a dict of some of them by name, or themselves."""
        from dataclasses import fields, replace

        from ppdm.errors import ParameterError

        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if not isinstance(value, dict):
            raise ParameterError(f"gate thresholds must be a dict of names to shares, got {type(value).__name__}")
        names = [f.name for f in fields(cls)]
        out = {}
        for k, v in value.items():
            if k not in names:
                raise ParameterError(f"unknown gate threshold {k!r}; the thresholds are {', '.join(names)}")
            try:
                f = float(v)
            except (TypeError, ValueError):
                raise ParameterError(f"gate threshold {k} must be a number, got {v!r}") from None
            if not 0.0 <= f <= 1.0:
                raise ParameterError(f"gate threshold {k} is a share between 0 and 1, got {v!r}")
            out[k] = f
        return replace(cls(), **out)


#: refusal rule → (library keyword, command-line flag) that releases anyway
GATE_OVERRIDES = {
    "unchanged": ("allow_unchanged=True", "--allow-unchanged"),
    "verbatim_unique": ("allow_verbatim=True", "--allow-verbatim"),
    "untouched_unique": ("allow_untouched_keys=True", "--allow-untouched-keys"),
    "pass_through_distinct": ("allow_pass_through=[...]", "--allow-pass-through COLUMN"),
    "untouched_column_unique": ("allow_pass_through=[...]", "--allow-pass-through COLUMN"),
}


@dataclass(frozen=True)
class GateOptions:
    """Everything the gate is told, as one object from the command line (``--gate``,
    ``--allow-...``) or the library down to the check: the ``thresholds`` and the refusals
    the owner overrides. ``allow_pass_through`` names the columns declared safe although
    they pass into the release (nearly) unchanged and single records out. ``suggest`` lets a
    refusal of :func:`ppdm.experiments.release.release` re-run the technique to name a setting
    that passes (off for searches that make many releases, such as ``ppdm recommend``)."""

    thresholds: GateThresholds = field(default_factory=GateThresholds)
    allow_unchanged: bool = False
    allow_verbatim: bool = False
    allow_untouched_keys: bool = False
    allow_pass_through: tuple[str, ...] = ()
    suggest: bool = True

    @classmethod
    def of(cls, value: GateOptions | GateThresholds | dict[str, Any] | None = None, **overrides: Any) -> GateOptions:
        """Options from themselves, thresholds (or a dict of some of them), or ``None``; keyword
        ``overrides`` set the ``allow_...`` fields (``True`` ones add to those given, columns
        of ``allow_pass_through`` too)."""
        from dataclasses import replace

        from ppdm.data.roles import split_names

        base = value if isinstance(value, GateOptions) else cls(thresholds=GateThresholds.of(value))
        out: dict[str, Any] = {}
        for k, v in overrides.items():
            if k == "allow_pass_through":
                names = tuple(dict.fromkeys([*base.allow_pass_through, *split_names(v)]))
                out[k] = names
            elif k in ("allow_unchanged", "allow_verbatim", "allow_untouched_keys"):
                out[k] = bool(v) or getattr(base, k)
            else:
                from ppdm.errors import ParameterError

                raise ParameterError(f"unknown gate option {k!r}")
        return replace(base, **out)

    def allows(self, finding: Finding) -> bool:
        """Whether the owner overrides this refusal."""
        if finding.rule in ("pass_through_distinct", "untouched_column_unique"):
            return bool(finding.columns) and all(c in self.allow_pass_through for c in finding.columns)
        return bool({"unchanged": self.allow_unchanged, "verbatim_unique": self.allow_verbatim,
                     "untouched_unique": self.allow_untouched_keys}.get(finding.rule, False))


@dataclass
class Finding:
    """One judgement of the gate: ``level`` "refuse" or "warn", the ``rule`` (a name of
    :class:`GateThresholds`), the measured ``share`` and the ``threshold``, the ``columns``
    responsible (most responsible first) and a ``message`` naming shares and columns only."""

    rule: str
    level: str
    share: float
    threshold: float
    columns: list[str]
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "level": self.level, "share": self.share, "threshold": self.threshold,
                "columns": list(self.columns), "message": self.message}


def _top_unchanged(table: pd.DataFrame, k: int = 3) -> tuple[list[str], str]:
    """The columns most often left unchanged (at least half their cells), as names and text."""
    if table.empty:
        return [], ""
    t = table.sort_values("share_unchanged", ascending=False, kind="stable")
    t = t[t["share_unchanged"] >= 0.5].head(k)
    return list(t["column"]), ", ".join(f"{r.column} {100 * r.share_unchanged:.1f}%" for r in t.itertuples())  # type: ignore[operator, str-bytes-safe]  # pandas-stubs types itertuples' fields as any scalar


def _responsible_keys(check: ReleaseCheck) -> list[str]:
    """Untouched quasi-identifiers, the one whose removal most lowers uniqueness first."""
    keys = check.per_key[check.per_key["untouched"].astype(bool)] if not check.per_key.empty else check.per_key
    if keys.empty:
        return list(check.untouched_keys)
    keys = keys.sort_values(["unique_drop", "unique_alone"], ascending=False, kind="stable")
    return list(keys["column"])


def gate(check: ReleaseCheck, thresholds: GateThresholds | dict[str, Any] | None = None) -> list[Finding]:
    """The refusals and warnings a release check earns under ``thresholds`` (refusals first).

    Nothing is refused or warned twice for one cause: a release refused as (almost) the
    original is not also warned about its verbatim records."""
    t = GateThresholds.of(thresholds)
    n = max(check.n_records, 1)
    out: list[Finding] = []
    refused: set[str] = set()
    if check.share_verbatim >= t.unchanged:
        cols, text = _top_unchanged(check.per_column)
        out.append(Finding("unchanged", "refuse", check.share_verbatim, t.unchanged, cols,
                           f"the release is almost the original: {_pct(check.share_verbatim)} of the records "
                           f"({check.records_verbatim} of {check.n_records}) come out unchanged on every column "
                           f"(refused from {_pct(t.unchanged)})"))
        refused.add("verbatim")
    # a release refused as (almost) the original is not refused again for its verbatim records:
    # allowing the one (allow_unchanged) allows the other
    # near-verbatim records count with the verbatim ones: noise of a hundredth of a standard
    # deviation hides nobody (a check made before near-verbatim records were counted has 0 of them)
    near = max(check.records_near_verbatim_unique, check.records_verbatim_unique)
    if "verbatim" not in refused and near / n > t.verbatim_unique:
        cols, text = _top_unchanged(check.per_key if not check.per_key.empty else check.per_column)
        extra = near - check.records_verbatim_unique
        how = (f"unchanged on every column ({check.records_verbatim_unique}) or within "
               f"{check.near_tolerance:g} standard deviations of their original ({extra})" if extra else
               "unchanged on every column")
        out.append(Finding("verbatim_unique", "refuse", near / n, t.verbatim_unique, cols,
                           f"{_pct(near / n)} of the records ({near} of {check.n_records}) come out {how} while no "
                           "other original record has their quasi-identifiers or all their values (refused above "
                           f"{_pct(t.verbatim_unique)}): whoever knows those finds the record, and all of it is "
                           "(nearly) true" + (f"; quasi-identifiers most often unchanged: {text}" if text else "")))
        refused.add("verbatim")
    # without a pairing a key "untouched" only has x's multiset of values, which tells nothing of
    # a record keeping its own: the copies are judged above, as whole records
    keyed = check.record_aligned and bool(check.untouched_keys)
    if keyed and check.untouched_keys_unique > t.untouched_unique:
        keys = _responsible_keys(check)
        out.append(Finding("untouched_unique", "refuse", check.untouched_keys_unique, t.untouched_unique, keys,
                           f"quasi-identifier(s) {', '.join(keys)} pass into the release untouched and make "
                           f"{_pct(check.untouched_keys_unique)} of the original records unique (refused above "
                           f"{_pct(t.untouched_unique)}); {keys[0]!r} matters most"
                           + _untouched_note(check)))
        refused.add("untouched")
    # any other column that passes (nearly) unchanged and singles records out alone is a join key,
    # like a weight; the weight itself is screened before anonymizing
    named = set(_responsible_keys(check)) if "untouched" in refused else set()
    roles = dict(zip(check.per_column["column"], check.per_column["role"], strict=True)) \
        if not check.per_column.empty else {}
    joins = sorted(((c, u) for c, u in check.untouched_alone.items()
                    if u > t.untouched_column_unique and c not in named and roles.get(c) != "weight"),
                   key=lambda cu: -cu[1])
    if joins:
        share_of = dict(zip(check.per_column["column"], check.per_column["share_unchanged"], strict=True))
        text = ", ".join(f"{c!r} ({_pct(share_of.get(c, 1.0))} unchanged, {_pct(u)} unique)" for c, u in joins)
        out.append(Finding("untouched_column_unique", "refuse", joins[0][1], t.untouched_column_unique,
                           [c for c, _ in joins],
                           f"column(s) {text} pass into the release (nearly) unchanged and alone make more than "
                           f"{_pct(t.untouched_column_unique)} of the original records unique: joining the release "
                           "with the original on them finds those people, as on a weight; round or group them, or "
                           "perturb them"))
    if "verbatim" not in refused and check.share_verbatim > t.warn_verbatim:
        cols, text = _top_unchanged(check.per_column)
        out.append(Finding("warn_verbatim", "warn", check.share_verbatim, t.warn_verbatim, cols,
                           f"{_pct(check.share_verbatim)} of the records ({check.records_verbatim} of "
                           f"{check.n_records}) come out unchanged on every column (warned above "
                           f"{_pct(t.warn_verbatim)})" + (f"; most often unchanged: {text}" if text else "")))
    if "verbatim" not in refused and check.quasi_identifiers and check.value > t.warn_unchanged_keys and \
            check.records_unchanged > check.records_verbatim:
        cols, text = _top_unchanged(check.per_key if not check.per_key.empty else check.per_column)
        out.append(Finding("warn_unchanged_keys", "warn", check.value, t.warn_unchanged_keys, cols,
                           f"{_pct(check.value)} of the records ({check.records_unchanged} of {n}) keep all their "
                           f"quasi-identifiers unchanged (warned above {_pct(t.warn_unchanged_keys)})"
                           + (f"; most often unchanged: {text}" if text else "")))
    if "untouched" not in refused and keyed and check.untouched_keys_unique > t.warn_untouched_unique:
        keys = _responsible_keys(check)
        out.append(Finding("warn_untouched_unique", "warn", check.untouched_keys_unique, t.warn_untouched_unique, keys,
                           f"quasi-identifier(s) {', '.join(keys)} pass into the release untouched and make "
                           f"{_pct(check.untouched_keys_unique)} of the original records unique (warned above "
                           f"{_pct(t.warn_untouched_unique)}); {keys[0]!r} matters most" + _untouched_note(check)))
    out.extend(_restorable_findings(check, t))
    return out


def _restorable_findings(check: ReleaseCheck, t: GateThresholds) -> list[Finding]:
    """A warning per blanked or recoded quasi-identifier that a released column gives back in at
    least ``warn_restorable_key`` of its changed cells (the column restoring most of them named)."""
    table = check.restorable_keys
    if table is None or table.empty:
        return []
    out = []
    best = table.sort_values("share_restored", ascending=False, kind="stable").drop_duplicates("key")
    r: Any  # a row of best; pandas-stubs types its fields as any scalar
    for r in best.itertuples():
        if r.share_restored < t.warn_restorable_key:
            continue
        cells = f"{int(r.affected)} cell(s)"
        out.append(Finding("warn_restorable_key", "warn", float(r.share_restored), t.warn_restorable_key,
                           [str(r.column), str(r.key)],
                           f"{r.key!r} {r.change} in {cells} is restored by the released {r.column!r} in "
                           f"{_pct(r.share_restored)} of them (warned from {_pct(t.warn_restorable_key)}); release "
                           f"{r.column} recoded too, or leave it out"))
    return out


def _untouched_note(check: ReleaseCheck) -> str:
    """Says when a key counts as untouched although a few of its cells changed."""
    if check.untouched_share >= 1.0 or check.per_key.empty:
        return ""
    part = check.per_key[check.per_key["untouched"].astype(bool) & (check.per_key["share_unchanged"] < 1.0)]
    if part.empty:
        return ""
    return (" (a key counts as untouched from " + _pct(check.untouched_share) + " of unchanged cells: "
            + ", ".join(f"{r.column} {100 * r.share_unchanged:.1f}%" for r in part.itertuples()) + ")")  # type: ignore[operator, str-bytes-safe]  # pandas-stubs types itertuples' fields as any scalar


@register_measure(
    "release_check",
    kind="risk",
    options=(),
    description="share of records whose quasi-identifiers (all attributes if none declared) are unchanged in z "
                "(without a pairing: occur in x), with verbatim records and copies as multisets",
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
        return release_check_dask(ctx.x, ctx.z, ctx.schema, record_aligned=ctx.paired)
    return release_check(ctx.x, ctx.z, ctx.schema, record_aligned=ctx.paired and len(ctx.x) == len(ctx.z))
