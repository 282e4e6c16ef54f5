"""The release check's records as hashes: copies as multisets, uniqueness, the intruder's search.

Records are compared through 64-bit hashes of their values (:class:`_RowHashes`): copies are
the multiset intersection of the hashes (:func:`multiset_matches`), a record is unique when no
other has its hash, and a verbatim record counts as found only when an intruder who knows its
values narrows z to it alone (:func:`found_by_values`). :class:`KeyCounts` and
:func:`dask_copies` count the same across the partitions of Dask DataFrames. Split from
:mod:`ppdm.metrics.release_check`, which re-exports every name here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd


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


def qi_hashes(z: pd.DataFrame, qi: Sequence[str]) -> np.ndarray:
    """One 64-bit hash per record of its quasi-identifier values (to count sample uniques
    across partitions; two different combinations share a hash with probability about 2⁻⁶⁴)."""
    if not qi:
        return np.zeros(len(z), dtype=np.uint64)
    return pd.util.hash_pandas_object(z[list(qi)].reset_index(drop=True), index=False).to_numpy()
