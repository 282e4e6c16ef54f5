"""How a blank key cell is read, and the key frequencies under each reading: one implementation
for the technique that blanks cells (local suppression) and the measures that count them.

A *blank* is a missing value of a key variable (quasi-identifier): a cell local suppression
blanked, or one missing in the data. Everything here works on a code matrix: one row per
record, one column per key, integer codes compared by equality and ``-1`` for a blank.

Three ways of counting the records that "share" a record's key:

* **wildcard** (sdcMicro's ``freqCalc`` with alpha = 1, Templ, Kowarik & Meindl 2015 §3): a
  blank matches any value, so two records match when they agree on every key both have; a
  record whose keys are all blank matches every record (fk = n); with several keys a complete
  record does not count the records whose keys are all blank. This is ppdm's chosen reading
  (:data:`DEFAULT_READING`): every key-variable measure counts it unless told otherwise.
* **strict** (pyCANON, ARX): a blank is a value of its own, so two records match only when
  their released keys are equal, blanks in the same places.
* **the intruder's view** (:func:`intruder_frequencies`): an intruder knows a person's *true*
  key values (a blanked one included) and looks for them in the release; a released record is
  a candidate when it agrees with them on every key it has not blanked (the wildcard rule
  applied to a true combination, all-blank records again not counted for a complete one, so
  the count never exceeds the wildcard fk of the person's own released record). A blanked
  record can be narrowed down below k this way although its released key has fk ≥ k under
  the wildcard reading, because the intruder also knows the value it hides.

No n × n comparison is made: records are grouped by their distinct patterns, and patterns by
which keys they leave blank; two groups of masks are compared once, on the keys neither
blanks (O(M² · u) for M masks and u distinct patterns).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd

from ppdm.errors import ParameterError

#: the readings of a blank a key-variable measure accepts (option ``blanks``)
BLANK_READINGS = ("wildcard", "strict")
#: the reading every key-variable measure uses unless told otherwise
DEFAULT_READING = "wildcard"


def check_reading(value: object) -> str:
    """``value`` as one of :data:`BLANK_READINGS` (``None`` is the default reading)."""
    if value is None:
        return DEFAULT_READING
    v = str(value).strip().lower()
    if v not in BLANK_READINGS:
        raise ParameterError(f"blanks must be one of {', '.join(BLANK_READINGS)}, got {value!r}")
    return v


# ---------------------------------------------------------------------------- codes
def key_codes(df: pd.DataFrame, keys: list[str]) -> np.ndarray:
    """(n, len(keys)) int64 codes of the key columns, compared by value; −1 marks a blank."""
    cols = [pd.factorize(df[k], use_na_sentinel=True)[0].astype(np.int64, copy=False) for k in keys]
    return np.column_stack(cols) if cols else np.zeros((len(df), 0), dtype=np.int64)


def joint_key_codes(x: pd.DataFrame, z: pd.DataFrame, keys: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Codes of the keys of two tables on one coding (equal values, equal codes; −1 a blank),
    whatever their dtypes: a value is compared as the object it is (20 equals 20.0, a category
    its label)."""
    cx, cz = [], []
    for k in keys:
        both = pd.concat([x[k].astype(object), z[k].astype(object)], ignore_index=True)
        codes = pd.factorize(both, use_na_sentinel=True)[0].astype(np.int64, copy=False)
        cx.append(codes[: len(x)])
        cz.append(codes[len(x):])
    if not keys:
        return np.zeros((len(x), 0), np.int64), np.zeros((len(z), 0), np.int64)
    return np.column_stack(cx), np.column_stack(cz)


def row_ids(codes: np.ndarray) -> np.ndarray:
    """Dense id of every row of a code matrix, in order of first appearance (−1 is a value
    here: rows are equal when their codes are, blanks in the same places)."""
    n, m = codes.shape
    if m == 0:
        return np.zeros(n, dtype=np.int64)
    ids = np.zeros(n, dtype=np.int64)
    size = 1
    for j in range(m):
        col = codes[:, j] + 1
        card = int(col.max()) + 1 if n else 1
        if size > (2**62) // max(card, 1):
            ids, _ = pd.factorize(ids)
            ids = ids.astype(np.int64)
            size = int(ids.max()) + 1 if n else 1
        ids = ids * card + col
        size *= card
    out, _ = pd.factorize(ids)
    return out.astype(np.int64, copy=False)


def distinct_patterns(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(patterns, counts, inverse)``: the distinct rows (in order of first appearance), how
    many records carry each, and the pattern of every record."""
    inv = row_ids(codes)
    first = np.full(int(inv.max()) + 1 if inv.size else 0, -1, dtype=np.int64)
    # first occurrence of each id: reversed assignment keeps the smallest index
    first[inv[::-1]] = np.arange(len(inv) - 1, -1, -1)
    return codes[first], np.bincount(inv).astype(np.int64), inv


# ---------------------------------------------------------------------- matching
def _groups(ids: np.ndarray) -> dict[int, np.ndarray]:
    order = np.argsort(ids, kind="stable")
    s = ids[order]
    cuts = np.flatnonzero(np.diff(s)) + 1
    return {int(ids[b[0]]): b for b in (order[a:z] for a, z in zip(np.r_[0, cuts], np.r_[cuts, len(s)], strict=True))}


def matching_groups(patterns: np.ndarray,
                    queries: np.ndarray | None = None) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """The wildcard matches between query patterns and patterns, one block per pair of blank masks.

    Yields ``(q_rows, q_gid, p_rows, p_gid)``: query ``q_rows[a]`` matches pattern ``p_rows[b]``
    exactly when ``q_gid[a] == p_gid[b]`` (ids local to the block). Every match of the wildcard
    rule (module docstring) is in exactly one block. ``queries=None`` matches the patterns with
    themselves, which must then be distinct.
    """
    P = np.asarray(patterns, dtype=np.int64)
    Q = P if queries is None else np.asarray(queries, dtype=np.int64)
    u, m = P.shape
    if len(Q) == 0 or u == 0:
        return
    if m == 0:
        yield np.arange(len(Q)), np.zeros(len(Q), np.int64), np.arange(u), np.zeros(u, np.int64)
        return
    pm, qm = P < 0, Q < 0
    p_groups = _groups(row_ids(pm.astype(np.int64)))
    q_groups = p_groups if queries is None else _groups(row_ids(qm.astype(np.int64)))
    for qi, q_rows in q_groups.items():
        q_miss = qm[q_rows[0]]
        if q_miss.all():  # keys blank altogether: the record could be anyone
            for p_rows in p_groups.values():
                yield q_rows, np.zeros(len(q_rows), np.int64), p_rows, np.zeros(len(p_rows), np.int64)
            continue
        q_complete = not q_miss.any()
        for pi, p_rows in p_groups.items():
            p_miss = pm[p_rows[0]]
            if p_miss.all() and q_complete and m > 1:
                continue  # with several keys, all-blank records do not count for complete ones
            if queries is None and pi == qi:
                ids = np.arange(len(q_rows))  # distinct patterns with one mask match only themselves
                yield q_rows, ids, p_rows, ids
                continue
            common = np.flatnonzero(~q_miss & ~p_miss)
            if common.size == 0:
                yield q_rows, np.zeros(len(q_rows), np.int64), p_rows, np.zeros(len(p_rows), np.int64)
                continue
            both = row_ids(np.vstack([P[np.ix_(p_rows, common)], Q[np.ix_(q_rows, common)]]))
            yield q_rows, both[len(p_rows):], p_rows, both[: len(p_rows)]


def pattern_frequencies(patterns: np.ndarray, weights: np.ndarray,
                        queries: np.ndarray | None = None) -> np.ndarray:
    """The wildcard fk of every pattern (or of every query pattern) in a table of distinct patterns.

    ``weights`` give each pattern its number of records, or its summed sampling weights, or
    several such columns at once (shape (u, c)). Without ``queries`` the result is the fk of
    each pattern; with them, the fk a record with each query pattern would have in this table
    (its own record included when it is in ``patterns``).
    """
    w = np.asarray(weights, dtype=float)
    nq = len(patterns) if queries is None else len(queries)
    out = np.zeros((nq, *w.shape[1:]))
    for q_rows, q_gid, p_rows, p_gid in matching_groups(patterns, queries):
        size = int(max(q_gid.max(initial=-1), p_gid.max(initial=-1))) + 1
        if w.ndim == 1:
            # weighted, so floats (numpy's stubs say intp); the 2-D branch's zeros are floats too
            sums: np.ndarray = np.bincount(p_gid, weights=w[p_rows], minlength=size)
        else:
            sums = np.zeros((size, w.shape[1]))
            np.add.at(sums, p_gid, w[p_rows])
        out[q_rows] += sums[q_gid]
    return out


def record_frequencies(codes: np.ndarray, blanks: str = DEFAULT_READING,
                       weights: np.ndarray | None = None) -> np.ndarray:
    """fk of every record of a code matrix under a reading of blanks (:data:`BLANK_READINGS`);
    with ``weights`` (one per record, or (n, c)), the summed weights of the matching records
    instead (Fk)."""
    return record_frequencies_and_groups(codes, blanks, weights)[0]


def record_frequencies_and_groups(codes: np.ndarray, blanks: str = DEFAULT_READING,
                                  weights: np.ndarray | None = None) -> tuple[np.ndarray, int]:
    """:func:`record_frequencies` and the number of distinct key patterns (a blank counted as a
    value of its own): the one fk counting of local suppression and of the key-variable measures."""
    pats, cnt, inv = distinct_patterns(codes)
    w = cnt.astype(float) if weights is None else _sum_by(inv, np.asarray(weights, dtype=float), len(pats))
    if check_reading(blanks) == "strict" or not (pats < 0).any():
        return w[inv], len(pats)
    return pattern_frequencies(pats, w)[inv], len(pats)


def _sum_by(inv: np.ndarray, w: np.ndarray, size: int) -> np.ndarray:
    if w.ndim == 1:
        return np.bincount(inv, weights=w, minlength=size)
    out = np.zeros((size, w.shape[1]))
    np.add.at(out, inv, w)
    return out


def intruder_frequencies(original: np.ndarray, released: np.ndarray) -> np.ndarray:
    """For every record, how many released records are candidates for its *original* key values
    (module docstring: an intruder who knows them, blanked ones included, finds that many).

    ``original`` and ``released`` must be coded alike (:func:`joint_key_codes`); a blank in
    ``original`` is a value the intruder does not know. Released records whose keys are all
    blank are not counted for a complete original, as in the wildcard rule, so this never
    exceeds the wildcard fk of the released record."""
    rp, rc, _ = distinct_patterns(released)
    op, _, oinv = distinct_patterns(original)
    return pattern_frequencies(rp, rc, queries=op)[oinv]


__all__ = ["BLANK_READINGS", "DEFAULT_READING", "check_reading", "distinct_patterns", "intruder_frequencies",
           "joint_key_codes", "key_codes", "matching_groups", "pattern_frequencies", "record_frequencies",
           "record_frequencies_and_groups", "row_ids"]
