"""Quasi-identifiers that a release blanks or recodes while another released column gives them back.

Local suppression (sdcMicro's ``localSuppression``) blanks key cells and global recoding
coarsens key values until k-anonymity holds (Sweeney 2002; Templ, Kowarik & Meindl 2015 §3.2).
Both assume that the intruder learns a person's key only from the key's own column. When the
release carries another column that determines the key — adult's ``education_num`` is a
one-to-one code of ``education``, a birth year fixes an age — the intruder reads the blanked or
coarsened value back from it, and the k-anonymity that the blanking bought is gone.

:func:`restorable_keys` finds such pairs and measures what is left of k-anonymity after the
intruder restores every key he can:

* A key A is *affected* in a record when z blanks it (missing in z, present in x) or recodes
  it (present in both and different: an interval, a hierarchy label, any other changed value).
* The dependency B → A is measured in x, among x's records whose A and B are both present.
  For a record with B = b the intruder's guess is the most frequent A among x's *other*
  records with B = b (leave-one-out: the record does not vouch for itself, so a column that is
  unique per record — a weight, a serial number — restores nothing), and b *determines* A
  when that most frequent value holds at least ``share`` of those other records (at least one).
  An affected record is *restored* by B when its released B determines A and the guess is its
  true A.
* B can be used when the release keeps it: its cells in z equal x's on at least ``usable``
  (99 %) of the records (paired tables), or its values in z equal x's as multisets on at least
  that share (unpaired tables).
* B *restores* A when it restores at least ``share`` of A's affected cells, more than guessing
  A's most frequent value in x for every affected cell would (``baseline``), so a key almost
  constant in x is not said to be restored by an unrelated column.

The headline ``value`` is the share of released records whose quasi-identifier combination is
shared by fewer than k records (fk < k, :func:`ppdm.metrics.keyvar.k_anonymity`, a missing
value matching every value as in sdcMicro) in the *restored view*: z with each restorable key's
affected cells replaced by the value its best restoring column implies, wherever that column
determines it (right or wrong: it is what the intruder reads). ``before`` is the same share in z
as released. Only column names and counts are reported, never values of a record.

Paired or not (:attr:`ppdm.metrics.base.EvaluationContext.is_paired`):

* *paired* (row i of z released from row i of x): the affected cells are known exactly and a
  cell is restored when the guess equals its own original; the shares are exact.
* *unpaired*: z alone shows which cells are affected — missing ones, and values that never occur
  in x's column (labels, intervals) — and their originals are unknown. A record of z is assumed
  to be like x's records with the same B: an affected cell whose b determines A counts as
  restored with the probability that a record of that group carries the group's most frequent
  value, (c − 1)/(n − 1) on the others being at least ``share`` (c of the n records of x with B = b
  carry it). The restored share is that expectation; it assumes the blanked originals were
  present (x complete on A) and that z's records come from x's population.

The registered measure ``restorable_keys`` takes the quasi-identifiers as the key-variable
measures do (:func:`ppdm.metrics.keyvar.judged_keys`: declared, else inferred for the default
set; perturbed keys left out, so ``before`` is ``k_anonymity``'s value) and the options ``share``,
``k`` and ``columns``. A release that blanks or recodes no key, or none restorably, gets a
result with ``not_judged`` set rather than :class:`ppdm.errors.ScenarioNotApplicable`: the
measure did apply and found nothing to restore, which the reader should see (the keys it
checked, the best column for each changed key), while the verdict leaves the value to
``k_anonymity``, which already judges that release as it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ppdm.errors import ParameterError, SchemaError
from ppdm.metrics._records import RecordDetailMixin
from ppdm.metrics.base import EvaluationContext, register_measure
from ppdm.metrics.keyvar import KEY_OPTIONS, _finish, _opt, check_keys, judged_keys, k_anonymity
from ppdm.utils import unique_pairs

#: columns of :attr:`RestorableKeysResult.pairs` (one row per restoring pair)
PAIR_COLUMNS = ["key", "column", "change", "affected", "restored", "share_restored", "baseline", "used"]
#: columns of :attr:`RestorableKeysResult.key_changes` (one row per blanked or recoded key)
KEY_COLUMNS = ["key", "change", "blanked", "recoded", "best_column", "share_restored", "baseline", "restorable"]

NOTHING_CHANGED = ("no quasi-identifier was blanked or recoded, so none can be restored from another column "
                   "(k_anonymity judges the release as it is)")
NOTHING_RESTORED = ("no blanked or recoded quasi-identifier is restored by another released column "
                    "(k_anonymity judges the release as it is)")


@dataclass
class RestorableKeysResult(RecordDetailMixin):
    """Result of :func:`restorable_keys`; ``value`` is the share of records with fk < k in the
    restored view (lower is better), ``before`` the same share in z as released.

    ``pairs`` has a row per (key, column) where the column restores the key: ``change``
    (blanked, recoded or both), ``affected`` cells, ``restored`` cells (an expected count
    without a pairing), ``share_restored``, ``baseline`` (the share guessing the key's most
    frequent value would restore) and ``used`` (the column the restored view takes the key
    from: the best one). ``key_changes`` has a row per blanked or recoded key with its best
    column, restorable or not. ``not_judged`` says why a verdict leaves the value out.
    """

    keys: list[str] = field(default_factory=list)
    k: int = 3
    share: float = 0.95
    n: int = 0
    paired: bool = True
    before: float = 0.0
    violations_before: int = 0
    violations_after: int = 0
    changed_keys: list[str] = field(default_factory=list)
    restored_keys: list[str] = field(default_factory=list)
    not_judged: str | None = None
    key_source: str = ""
    perturbed_keys: list[str] = field(default_factory=list)
    pairs: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=PAIR_COLUMNS))
    # not named per_key: reports read a risk measure's per_key table as the sample uniques each key causes
    key_changes: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=KEY_COLUMNS))


# ------------------------------------------------------------------ building blocks
def _shared_codes(a: pd.Series, b: pd.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Codes of two columns' values on one coding (−1 for a missing value), and the values.

    Two numeric columns are compared as float64, anything else as Python objects, so 5, 5.0 and
    an Int64 5 are one value whatever the columns' dtypes."""
    if all(pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s) for s in (a, b)):
        # numbers as float64 (exact for the integers a key holds), far faster than objects
        both: Any = np.concatenate([a.to_numpy(dtype=float, na_value=np.nan), b.to_numpy(dtype=float, na_value=np.nan)])
    else:
        both = pd.concat([a.reset_index(drop=True).astype(object), b.reset_index(drop=True).astype(object)],
                         ignore_index=True)
        both = both.where(both.notna(), None)
    codes, uniques = pd.factorize(both, use_na_sentinel=True)
    codes = codes.astype(np.int64, copy=False)
    return codes[: len(a)], codes[len(a):], np.asarray(uniques, dtype=object)


@dataclass
class _Dependency:
    """Per value code b of B: x's records with B = b and A present (``n``), their most frequent
    A code (``mode``, −1 when none) and how many carry it (``top``)."""

    n: np.ndarray
    mode: np.ndarray
    top: np.ndarray


def _dependency(xb: np.ndarray, xa: np.ndarray, n_values: int) -> _Dependency:
    """B → A in x from codes (sorting the distinct (b, a) pairs, never a |B| × |A| table)."""
    ok = (xb >= 0) & (xa >= 0)
    b, a = xb[ok], xa[ok]
    n = np.bincount(b, minlength=n_values)
    mode = np.full(n_values, -1, dtype=np.int64)
    top = np.zeros(n_values, dtype=np.int64)
    if b.size:
        pb, pa, counts = unique_pairs(b, a, return_counts=True)
        order = np.lexsort((-counts, pb))  # by b, the most frequent a first
        pb, pa, counts = pb[order], pa[order], counts[order]
        first = np.r_[True, pb[1:] != pb[:-1]]
        mode[pb[first]] = pa[first]
        top[pb[first]] = counts[first]
    return _Dependency(n, mode, top)


def _usable_share(coded: tuple[np.ndarray, np.ndarray, np.ndarray], paired: bool) -> float:
    """The share of z's cells of a column (:func:`_shared_codes` of x's and z's) that are x's:
    cell by cell when paired, else as multisets of values (a missing value is a value). Values
    are compared exactly, as the key-variable measures compare keys."""
    cx, cz, values = coded
    if paired:
        return float((cx == cz).mean()) if len(cz) else 1.0
    size = len(values) + 1
    nx, nz = np.bincount(cx + 1, minlength=size), np.bincount(cz + 1, minlength=size)
    return float(np.minimum(nx, nz).sum() / max(len(cz), 1))


@dataclass
class _Key:
    """One blanked or recoded key: its codes and which records are affected."""

    name: str
    xa: np.ndarray  # codes of x's values (−1 missing)
    values: np.ndarray  # the values behind the codes
    affected: np.ndarray  # indices of z's affected records
    blanked: int
    recoded: int
    baseline: float

    @property
    def change(self) -> str:
        return "blanked and recoded" if self.blanked and self.recoded else "blanked" if self.blanked else "recoded"


def _affected_key(x: pd.Series, z: pd.Series, paired: bool) -> _Key | None:
    """The key's affected records of z (see the module docstring), or ``None`` when there is none."""
    xa, za, values = _shared_codes(x, z)
    zmiss = za < 0
    if paired:
        present = xa >= 0
        blanked = present & zmiss
        recoded = present & ~zmiss & (xa != za)
    else:
        in_x = np.zeros(len(values) + 1, dtype=bool)
        in_x[xa + 1] = True
        blanked = zmiss
        recoded = ~zmiss & ~in_x[za + 1]
    affected = np.flatnonzero(blanked | recoded)
    if affected.size == 0:
        return None
    counts = np.bincount(xa[xa >= 0], minlength=len(values))
    top = int(counts.argmax()) if counts.size else -1
    if paired:  # the share of affected cells whose original is x's most frequent value
        baseline = float((xa[affected] == top).mean()) if top >= 0 else 0.0
    else:  # unknown originals: the chance a record of x carries that value
        baseline = float(counts[top] / counts.sum()) if top >= 0 and counts.sum() else 0.0
    return _Key(str(x.name), xa, values, affected, int(blanked.sum()), int(recoded.sum()), baseline)


def _restore(key: _Key, xb: np.ndarray, zb: np.ndarray, n_values: int, share: float,
             paired: bool) -> tuple[np.ndarray, np.ndarray, float]:
    """For each affected record of ``key``: whether its released B determines A (leave-one-out,
    see the module docstring), the A code it implies, and the number of cells restored (exact
    when paired, expected otherwise)."""
    dep = _dependency(xb, key.xa, n_values)
    rows = key.affected
    b = zb[rows]
    valid = b >= 0
    bb = np.where(valid, b, 0)
    n, top, mode = dep.n[bb], dep.top[bb], dep.mode[bb]
    if paired:
        # the record itself, when it is among x's records with B = b, does not vouch for itself
        own = valid & (xb[rows] == b) & (key.xa[rows] >= 0)
        others = n - own
        agree = top - (own & (key.xa[rows] == mode))
        determined = valid & (others >= 1) & (agree >= share * others - 1e-9)
        restored = float((determined & (mode == key.xa[rows])).sum())
    else:
        # a record of the group: it carries the mode with chance top/n, and then the others agree
        # on it when (top − 1)/(n − 1) ≥ share
        others = n - 1
        determined = valid & (others >= 1) & (top - 1 >= share * others - 1e-9)
        restored = float(np.where(determined, top / np.maximum(n, 1), 0.0).sum())
    return determined, mode, restored


def restorable_pairs(x: pd.DataFrame, z: pd.DataFrame, keys: Any, columns: Any = None, *, share: float = 0.95,
                     paired: bool = True, usable: float = 0.99) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """Which released columns restore which blanked or recoded keys (the detection of
    :func:`restorable_keys`, without k-anonymity): the ``pairs`` and ``key_changes`` tables of
    :class:`RestorableKeysResult`, and per restorable key the restoration its best column
    makes (for the restored view): key → (affected rows of z it determines, the values implied)."""
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0.5 < float(share) <= 1.0:
        raise ParameterError(f"restorable keys: share must be a number in (0.5, 1], got {share!r}")
    if isinstance(usable, bool) or not isinstance(usable, (int, float)) or not 0.0 < float(usable) <= 1.0:
        raise ParameterError(f"restorable keys: usable must be a share in (0, 1], got {usable!r}")
    keys = check_keys(z, keys, measure="restorable keys")
    absent = [c for c in keys if c not in x.columns]
    if absent:
        raise SchemaError(f"restorable keys: quasi-identifier(s) {', '.join(map(repr, absent))} not in the original")
    if paired and len(x) != len(z):
        raise SchemaError(f"restorable keys compares records one by one when paired: x has {len(x)} rows, "
                          f"z has {len(z)}")
    if columns is None:
        columns = [c for c in z.columns if c in x.columns]
    else:
        if isinstance(columns, str):
            columns = [c.strip() for c in columns.replace(";", ",").split(",") if c.strip()]
        columns = list(columns)
        absent = [c for c in columns if c not in x.columns or c not in z.columns]
        if absent:
            raise SchemaError(f"restorable keys: column(s) {', '.join(map(repr, absent))} are not in both tables")
    share = float(share)
    changed = [kk for kk in (_affected_key(x[c], z[c], paired) for c in keys) if kk is not None]
    pair_rows: list[dict[str, Any]] = []
    key_rows: list[dict[str, Any]] = []
    best: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    if changed:
        coded = {c: _shared_codes(x[c], z[c]) for c in columns}  # each column coded once
        # a column can restore only if the release keeps it
        usable_cols = [c for c in columns if _usable_share(coded[c], paired) >= usable]
    for key in changed:
        found: list[tuple[float, str, np.ndarray, np.ndarray]] = []
        top_share, top_col = 0.0, None
        for c in usable_cols:
            if c == key.name:
                continue
            xb, zb, values = coded[c]
            determined, mode, restored = _restore(key, xb, zb, len(values), share, paired)
            got = restored / len(key.affected)
            if got > top_share:
                top_share, top_col = got, c
            if got >= share and got > key.baseline:
                found.append((got, c, determined, mode))
                pair_rows.append({"key": key.name, "column": c, "change": key.change,
                                  "affected": int(len(key.affected)), "restored": restored,
                                  "share_restored": got, "baseline": key.baseline, "used": False})
        if found:
            got, col, determined, mode = max(found, key=lambda f: f[0])  # the first best, in column order
            for row in pair_rows:
                if row["key"] == key.name and row["column"] == col:
                    row["used"] = True
            rows = key.affected[determined]
            best[key.name] = (rows, key.values[mode[determined]])
        key_rows.append({"key": key.name, "change": key.change, "blanked": key.blanked, "recoded": key.recoded,
                         "best_column": top_col, "share_restored": top_share, "baseline": key.baseline,
                         "restorable": bool(found)})
    pairs = pd.DataFrame(pair_rows, columns=PAIR_COLUMNS)
    key_changes = pd.DataFrame(key_rows, columns=KEY_COLUMNS)
    return pairs, key_changes, best


def restored_view(z: pd.DataFrame, keys: list[str], restoration: dict) -> pd.DataFrame:
    """z's key columns with every restorable key's affected cells replaced by the value its
    best column implies (:func:`restorable_pairs`' third result)."""
    view = z[list(keys)].reset_index(drop=True).copy()
    for name, (rows, values) in restoration.items():
        col = view[name].astype(object).to_numpy(copy=True)
        col[rows] = values
        view[name] = col
    return view


def restorable_keys(x: pd.DataFrame, z: pd.DataFrame, keys: Any, columns: Any = None, *, share: float = 0.95,
                    k: int = 3, paired: bool = True, usable: float = 0.99) -> RestorableKeysResult:
    """Blanked or recoded quasi-identifiers that another released column restores, and the
    k-anonymity left after restoring them (see the module docstring for every definition).

    ``keys`` are the quasi-identifiers; ``columns`` the released columns that may restore
    them (default: every column of z that x has, keys, class and all). ``share`` is both the
    agreement within a group of B that makes b determine A and the share of A's affected
    cells B must restore (in (0.5, 1]); ``k`` the k of the fk < k count; ``paired`` whether
    row i of z is the release of row i of x; ``usable`` the share of B's cells the release
    must keep for B to count.

    When no key is blanked or recoded, ``value`` is 0 and ``not_judged`` says so; when some
    are but none is restorable, ``value`` equals ``before`` (nothing changes) and
    ``not_judged`` says that k_anonymity already judges that release.
    """
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ParameterError(f"restorable keys: k must be an integer ≥ 1, got {k!r}")
    keys = check_keys(z, keys, measure="restorable keys")
    pairs, changes, restoration = restorable_pairs(x, z, keys, columns, share=share, paired=paired, usable=usable)
    out = RestorableKeysResult(value=0.0, keys=keys, k=int(k), share=float(share), n=len(z), paired=bool(paired),
                               changed_keys=list(changes["key"]), restored_keys=list(restoration),
                               pairs=pairs, key_changes=changes)
    if changes.empty:
        out.not_judged = NOTHING_CHANGED
        return out
    zv = z[keys].reset_index(drop=True)
    before = k_anonymity(zv, keys, k, per_key=False)
    after = k_anonymity(restored_view(zv, keys, restoration), keys, k, per_key=False) if restoration else before
    out.value, out.before = float(after.value), float(before.value)
    out.violations_before, out.violations_after = before.violations, after.violations
    if not restoration:
        out.not_judged = NOTHING_RESTORED
    return out


@register_measure(
    "restorable_keys", kind="risk", needs_class=False, default=True, direction="lower", value_range=(0.0, 1.0),
    threshold=0.05, scenario="quasi-identifiers", options=(*KEY_OPTIONS, "columns", "share", "k"),
    description="share of released records with fk < k (k = 3) once every blanked or recoded quasi-identifier "
                "that another released column determines is restored from it",
    meaning="The share of released records that share their quasi-identifiers with fewer than k records after "
    "an intruder reads blanked or recoded keys back from other released columns (education from education_num); "
    "0 is best. Compare with 'before', the same share as released. Not judged when no key is blanked or recoded, "
    "or none is restorable.")
def _restorable_keys_measure(ctx: EvaluationContext) -> RestorableKeysResult:
    keys, perturbed = judged_keys(ctx, "restorable_keys")
    res = restorable_keys(ctx.x, ctx.z, keys, _opt(ctx, "restorable_keys", "columns", None),
                          share=_opt(ctx, "restorable_keys", "share", 0.95), k=_opt(ctx, "restorable_keys", "k", 3),
                          paired=ctx.is_paired)
    return _finish(res, ctx, perturbed)


__all__ = ["RestorableKeysResult", "restorable_keys", "restorable_pairs", "restored_view"]
