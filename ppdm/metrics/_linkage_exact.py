"""The first stage of record linkage: exact joins on the columns a release keeps verbatim.

:func:`verbatim_columns` judges from the values alone which columns of z appear unchanged;
:func:`exact_join` joins on them, most identifying first, and links a released record equal
to a single original on its longest matching prefix. The ``join_*`` functions do the same
for partitioned tables, block by block. Split from :mod:`ppdm.metrics.linkage`, which
re-exports every name here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

#: multiset overlap of a column's released and original values from which the release is taken
#: to keep the column verbatim, so that the intruder joins on it (:func:`exact_join`)
VERBATIM_OVERLAP = 0.9


@dataclass
class ExactJoin:
    """The intruder's exact joins of z to x (:func:`exact_join`): per released record, how many
    originals equal it on its longest matching prefix of ``columns`` (0: none on the first) and,
    when exactly one does, which (its row in x; −1 otherwise)."""

    columns: list[str]
    count: np.ndarray
    target: np.ndarray

    @property
    def linked(self) -> np.ndarray:
        """Released records the exact join ties to a single original."""
        return self.count == 1


def verbatim_columns(x: pd.DataFrame, z: pd.DataFrame, columns: list[str]) -> tuple[list[str], list[np.ndarray]]:
    """The columns z appears to keep verbatim, judged from the values alone (no pairing): those
    whose multiset overlap Σ_v min(count_x(v), count_z(v)) / |z| is at least
    :data:`VERBATIM_OVERLAP`, ordered by their number of distinct values in x, most first (the
    most identifying). Also returns each kept column's codes over x then z (a missing value is a
    code of its own, equal to a missing value only, as in the Gower distance)."""
    nx = len(x)
    kept: list[tuple[int, int, str, np.ndarray]] = []
    for pos, c in enumerate(columns):
        codes, _ = pd.factorize(pd.concat([x[c], z[c]], ignore_index=True), use_na_sentinel=False)
        codes = np.asarray(codes, dtype=np.int64)
        m = int(codes.max()) + 1 if codes.size else 0
        bx = np.bincount(codes[:nx], minlength=m)
        bz = np.bincount(codes[nx:], minlength=m)
        if len(z) and np.minimum(bx, bz).sum() >= VERBATIM_OVERLAP * len(z):
            kept.append((-int((bx > 0).sum()), pos, c, codes))
    kept.sort(key=lambda t: (t[0], t[1]))
    return [t[2] for t in kept], [t[3] for t in kept]


def exact_join(x: pd.DataFrame, z: pd.DataFrame, columns: list[str]) -> ExactJoin:
    """The maximum-knowledge intruder's exact joins of z to x, made before any distance.

    A Gower distance averages one column kept verbatim with many noisy ones, so an intruder
    who joins on the verbatim columns finds records the nearest-neighbour link misses. The
    intruder has no pairing, so the join columns K are judged from the values alone
    (:func:`verbatim_columns`). For the prefixes S_1 ⊂ S_2 ⊂ … of K, each released record's
    originals equal to it on S_j are counted (hash joins: one factorisation per prefix, never
    an n × n comparison); the record's link is made at the longest prefix on which it still
    matches some original, and is a link to one person when exactly one original matches there.
    """
    nx, nz = len(x), len(z)
    cols, codes = verbatim_columns(x, z, columns)
    count = np.zeros(nz, dtype=np.int64)
    target = np.full(nz, -1, dtype=np.int64)
    key = np.zeros(nx + nz, dtype=np.int64)
    for code in codes:
        # the prefix's key: the previous key and this column's code, renumbered densely
        key, _ = pd.factorize(key * (int(code.max()) + 1) + code)
        key = np.asarray(key, dtype=np.int64)
        kx, kz = key[:nx], key[nx:]
        nk = int(key.max()) + 1
        c = np.bincount(kx, minlength=nk)[kz]
        hit = c > 0
        if not hit.any():
            break  # no record matches a longer prefix either
        who = np.empty(nk, dtype=np.int64)
        who[kx] = np.arange(nx)  # an original of each key (the only one where the count is 1)
        count[hit] = c[hit]
        target[hit] = who[kz[hit]]
    target[count != 1] = -1
    return ExactJoin(cols, count, target)


def _value_hashes(df: pd.DataFrame, cols: list[str]) -> np.ndarray:
    """A 64-bit hash of every value of ``cols`` (rows × columns), for joins across partitions:
    numbers as float64 (1 equals 1.0, −0.0 equals 0.0), every missing value one hash — the
    equality :func:`verbatim_columns` uses, up to a collision of two 64-bit hashes."""
    out = np.empty((len(df), len(cols)), dtype=np.uint64)
    for a, c in enumerate(cols):
        v = df[c]
        if _numeric_dtype(v.dtype):
            f = v.to_numpy(dtype=float, na_value=np.nan)
            out[:, a] = pd.util.hash_array(np.where(np.isnan(f), np.nan, f))
        else:
            out[:, a] = pd.util.hash_array(v.astype(object).where(v.notna(), None).to_numpy(), categorize=False)
    return out


def _prefix_hashes(h: np.ndarray) -> np.ndarray:
    """Column j: a hash of the values on the first j + 1 columns of ``h``."""
    out = h.copy()
    for j in range(1, h.shape[1]):
        with np.errstate(over="ignore"):  # wrapping multiplication, then mixed by the hash
            out[:, j] = pd.util.hash_array(out[:, j - 1] * np.uint64(0x9E3779B97F4A7C15) + h[:, j])
    return out


def join_columns_parts(x: Any, z: Any, columns: list[str]) -> list[str]:
    """:func:`verbatim_columns` of partitioned tables: the multiset overlap of every column from
    Dask value counts of its values' hashes, joined per value inside the graph, so that only
    three numbers per column are computed."""
    import dask

    meta = pd.DataFrame({c: pd.Series(dtype="uint64") for c in columns})

    def hashed(df: pd.DataFrame) -> pd.DataFrame:
        return pd.DataFrame(_value_hashes(df, columns), columns=columns, index=df.index)

    hx = x[columns].map_partitions(hashed, meta=meta)
    hz = z[columns].map_partitions(hashed, meta=meta)
    todo = []
    for c in columns:
        vx, vz = hx[c].value_counts(), hz[c].value_counts()
        both = vx.to_frame("x").join(vz.to_frame("z"), how="inner")
        todo += [both.min(axis=1).sum(), vx.size, hz[c].size]
    got = dask.compute(*todo)
    kept = []
    for pos, c in enumerate(columns):
        overlap, distinct, nz = (int(v) for v in got[3 * pos:3 * pos + 3])
        if nz and overlap >= VERBATIM_OVERLAP * nz:
            kept.append((-distinct, pos, c))
    return [t[2] for t in sorted(kept)]


def join_block(zh: np.ndarray, block: pd.DataFrame, cols: list[str], offset: int, cnt: np.ndarray,
               who: np.ndarray) -> None:
    """Adds one block of originals (its first row is row ``offset`` of x) to the prefix match
    counts ``cnt`` and smallest matching rows ``who`` (released records × prefixes) of the
    released records whose prefix hashes are ``zh``."""
    xh = _prefix_hashes(_value_hashes(block, cols))
    for j in range(len(cols)):
        g = pd.DataFrame({"h": xh[:, j], "row": offset + np.arange(len(xh))}).groupby("h")["row"].agg(["size", "min"])
        pos = np.asarray(g.index.get_indexer(zh[:, j]))  # type: ignore[arg-type]  # pandas-stubs: get_indexer takes any array-like at run time
        ok = pos >= 0
        if not ok.any():
            break  # no released record matches this block on a longer prefix either
        cnt[ok, j] += g["size"].to_numpy()[pos[ok]]
        who[ok, j] = np.minimum(who[ok, j], g["min"].to_numpy()[pos[ok]])


def join_finish(cnt: np.ndarray, who: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Count and unique match (−1 when the count is not 1) at each record's longest matching
    prefix, from the per-prefix counts of :func:`join_block` (they never grow with the prefix)."""
    last = (cnt > 0).sum(axis=1) - 1
    r = np.arange(len(cnt))
    count = np.where(last >= 0, cnt[r, np.maximum(last, 0)], 0) if cnt.shape[1] else np.zeros(len(cnt), np.int64)
    target = np.where(count == 1, who[r, np.maximum(last, 0)], -1) if cnt.shape[1] else np.full(len(cnt), -1)
    return count.astype(np.int64), target.astype(np.int64)


def join_against_parts(x: Any, zpart: pd.DataFrame, cols: list[str], offsets: np.ndarray) -> tuple[np.ndarray,
                                                                                                 np.ndarray]:
    """:func:`exact_join` of the released records ``zpart`` against every partition of x, read
    one at a time (the exact-join stage of :func:`record_linkage_parts`)."""
    from ppdm.data.partitions import read_partition

    zh = _prefix_hashes(_value_hashes(zpart, cols))
    cnt = np.zeros((len(zpart), len(cols)), np.int64)
    who = np.full((len(zpart), len(cols)), np.iinfo(np.int64).max, np.int64)
    if len(zpart):
        for b in range(len(offsets)):
            join_block(zh, read_partition(x, b)[cols], cols, int(offsets[b]), cnt, who)
    return join_finish(cnt, who)


def _numeric_dtype(dtype: Any) -> bool:
    return pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)
