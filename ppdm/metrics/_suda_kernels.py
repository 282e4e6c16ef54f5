"""Numba kernel of SUDA2's search for minimal sample uniques (see :mod:`ppdm.metrics.suda`).

The search runs on the distinct key combinations of a table (its rows with their
multiplicities), not on its records: only a combination held by one record (a *single*)
can be unique on a subset of the keys, and a repeated one counts for the others.

Subsets are visited level by level. For a subset S, a single complete on S that is unique
on some immediate subset S \\ {j} is unique on S too (uniqueness only grows with S) and S
is not minimal for it; the others are S's *candidates*. A record that shares a candidate's
values on S shares them on every S \\ {j}, so it is itself a candidate or a repeated
combination: counting the candidates and the repeated combinations complete on S tells
which candidates are unique on S, and the rest of the table need not be read. Counts go
into a direct table when S's value combinations are few, else into a hash table.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ppdm.parallel import run_chunks

_MIX = np.uint64(0x9E3779B97F4A7C15)
_TOP = np.uint64(1 << 63)
_LOW = np.uint64((1 << 63) - 1)


@njit(cache=True, inline="always")
def _complete(codes: np.ndarray, d: int, cols: np.ndarray) -> bool:
    for c in cols:
        if codes[d, c] < 0:
            return False
    return True


@njit(cache=True, inline="always")
def _hash(codes: np.ndarray, d: int, cols: np.ndarray) -> np.uint64:
    h = np.uint64(0)
    for c in cols:
        h = (h ^ np.uint64(codes[d, c] + 1)) * _MIX
    return h ^ (h >> np.uint64(29))


@njit(cache=True, inline="always")
def _same(codes: np.ndarray, a: int, b: int, cols: np.ndarray) -> bool:
    for c in cols:
        if codes[a, c] != codes[b, c]:
            return False
    return True


@njit(cache=True, inline="always")
def _cell(codes: np.ndarray, d: int, cols: np.ndarray, cards: np.ndarray) -> int:
    key = 0
    for c in cols:
        key = key * cards[c] + codes[d, c]
    return key


@njit(cache=True)
def _alone(codes: np.ndarray, w: np.ndarray, cards: np.ndarray, cols: np.ndarray, cand: np.ndarray,
           repeated: np.ndarray, direct: np.ndarray) -> np.ndarray:
    """Whether each candidate combination ``cand[i]`` (a single, complete on ``cols``) is the
    only record with its values on ``cols`` among the candidates and the ``repeated``
    combinations (those complete on ``cols`` count with their multiplicity ``w``). A direct
    table counts them when it has at most ``direct[0]`` cells per record counted plus
    ``direct[1]``."""
    n_c = cand.shape[0]
    n_r = repeated.shape[0]
    out = np.zeros(n_c, dtype=np.bool_)
    cells = 1
    small = True
    limit = direct[0] * (n_c + n_r) + direct[1]
    for c in cols:
        if cells > limit // max(cards[c], 1):
            small = False
            break
        cells *= max(cards[c], 1)
    if small:
        # only "one record or more" matters: counts saturate at 2 (a small table to clear)
        counts = np.zeros(cells, dtype=np.uint8)
        for i in range(n_c):
            k = _cell(codes, cand[i], cols, cards)
            counts[k] = min(counts[k] + 1, 2)
        for r in range(n_r):
            d = repeated[r]
            if _complete(codes, d, cols):
                counts[_cell(codes, d, cols, cards)] = 2
        for i in range(n_c):
            out[i] = counts[_cell(codes, cand[i], cols, cards)] == 1
        return out
    size = 1
    while size < 2 * n_c:
        size *= 2
    mask = np.uint64(size - 1)
    rep = np.full(size, -1, dtype=np.int64)
    hits = np.zeros(size, dtype=np.uint8)
    slot_of = np.empty(n_c, dtype=np.int64)
    for i in range(n_c):
        d = cand[i]
        s = np.int64(_hash(codes, d, cols) & mask)
        while rep[s] >= 0 and not _same(codes, rep[s], d, cols):
            s = (s + 1) & (size - 1)
        rep[s] = d
        hits[s] = min(hits[s] + 1, 2)
        slot_of[i] = s
    for r in range(n_r):
        d = repeated[r]
        if not _complete(codes, d, cols):
            continue
        s = np.int64(_hash(codes, d, cols) & mask)
        while rep[s] >= 0:
            if _same(codes, rep[s], d, cols):
                hits[s] = 2
                break
            s = (s + 1) & (size - 1)
    for i in range(n_c):
        out[i] = hits[slot_of[i]] == 1
    return out


@njit(cache=True, inline="always")
def _cell_packed(key: np.uint64, shifts: np.ndarray, widths: np.ndarray, cols: np.ndarray) -> int:
    """The mixed-radix cell of a packed combination's values on ``cols`` (bit fields, so
    a column of width b takes b bits)."""
    cell = 0
    for c in cols:
        cell = (cell << widths[c]) | np.int64((key >> np.uint64(shifts[c])) & np.uint64((1 << widths[c]) - 1))
    return cell


@njit(cache=True)
def _alone_packed(packed: np.ndarray, missing: np.ndarray, shifts: np.ndarray, widths: np.ndarray,
                  cols: np.ndarray, cand: np.ndarray, repeated: np.ndarray, direct: np.ndarray) -> np.ndarray:
    """:func:`_alone` on combinations packed in one integer each (column c in ``widths[c]``
    bits from bit ``shifts[c]``; ``missing``: a bit per column holding a missing value)."""
    n_c = cand.shape[0]
    n_r = repeated.shape[0]
    out = np.zeros(n_c, dtype=np.bool_)
    proj = np.uint64(0)
    need = np.int64(0)
    bits = 0
    for c in cols:
        proj |= np.uint64(((1 << widths[c]) - 1) << shifts[c])
        need |= np.int64(1) << c
        bits += widths[c]
    if (1 << min(bits, 62)) <= direct[0] * (n_c + n_r) + direct[1]:
        counts = np.zeros(1 << bits, dtype=np.uint8)
        for i in range(n_c):
            k = _cell_packed(packed[cand[i]], shifts, widths, cols)
            counts[k] = min(counts[k] + 1, 2)
        for r in range(n_r):
            d = repeated[r]
            if missing[d] & need == 0:
                counts[_cell_packed(packed[d], shifts, widths, cols)] = 2
        for i in range(n_c):
            out[i] = counts[_cell_packed(packed[cand[i]], shifts, widths, cols)] == 1
        return out
    size = 1
    while size < 2 * n_c:
        size *= 2
    mask = np.uint64(size - 1)
    # each slot holds a projection + 1 (0: empty); its top bit, free since projections
    # take at most 62 bits, marks a projection held by more than one record
    table = np.zeros(size, dtype=np.uint64)
    slot_of = np.empty(n_c, dtype=np.int64)
    for i in range(n_c):
        key = (packed[cand[i]] & proj) + np.uint64(1)
        h = key * _MIX
        s = np.int64((h ^ (h >> np.uint64(29))) & mask)
        while table[s] != 0 and (table[s] & _LOW) != key:
            s = (s + 1) & (size - 1)
        table[s] = key if table[s] == 0 else (key | _TOP)
        slot_of[i] = s
    for r in range(n_r):
        d = repeated[r]
        if missing[d] & need != 0:
            continue
        key = (packed[d] & proj) + np.uint64(1)
        h = key * _MIX
        s = np.int64((h ^ (h >> np.uint64(29))) & mask)
        while table[s] != 0:
            if (table[s] & _LOW) == key:
                table[s] = key | _TOP
                break
            s = (s + 1) & (size - 1)
    for i in range(n_c):
        out[i] = table[slot_of[i]] & _TOP == 0
    return out


def msu_level(codes: np.ndarray, w: np.ndarray, cards: np.ndarray, single: np.ndarray, repeated: np.ndarray,
              cols: np.ndarray, parents: np.ndarray, prev_unique: np.ndarray, packed: np.ndarray,
              missing: np.ndarray, shifts: np.ndarray, widths: np.ndarray, direct: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
    """One level of the search: for every subset t of the level (key columns ``cols[t]``),
    which singles are unique on it and for which it is a minimal sample unique.

    ``codes`` (D, M): codes of the distinct combinations, −1 for a missing value; ``w`` their
    multiplicities; ``cards[c]`` = largest code of column c plus one; ``single`` and
    ``repeated``: the combinations held by one record and by more; ``parents[t]``: rows of
    ``prev_unique`` (uniqueness of the singles on the previous level's subsets) that are
    the immediate subsets of subset t. ``packed``/``missing``/``shifts``/``widths``: the
    combinations packed in one integer each (see :func:`_alone_packed`); ``packed`` empty
    when they do not fit in 62 bits; ``direct``: the size limit of a direct count table
    (cells per record counted, plus a floor). Returns (unique, msu), both (subsets, singles).
    """
    n_sub = cols.shape[0]
    unique = np.zeros((n_sub, single.shape[0]), dtype=np.bool_)
    msu = np.zeros((n_sub, single.shape[0]), dtype=np.bool_)
    run_chunks(_msu_level_chunk, n_sub, codes, w, cards, single, repeated, cols, parents, prev_unique, packed, missing,
               shifts, widths, direct, unique, msu)
    return unique, msu


@njit(cache=True, nogil=True)
def _msu_level_chunk(c_, lo, hi, codes, w, cards, single, repeated, cols, parents, prev_unique, packed, missing, shifts,
                     widths, direct, unique, msu):
    """Subsets ``lo:hi`` of :func:`msu_level` (:func:`ppdm.parallel.run_chunks`)."""
    use_packed = packed.shape[0] > 0
    n_s = single.shape[0]
    for t in range(lo, hi):
        c = cols[t]
        need = np.int64(0)
        for col in c:
            need |= np.int64(1) << col
        cand = np.empty(n_s, dtype=np.int64)
        n_c = 0
        for i in range(n_s):
            if missing[single[i]] & need != 0:
                continue
            implied = False
            for j in range(parents.shape[1]):
                if prev_unique[parents[t, j], i]:
                    implied = True
                    break
            if implied:
                unique[t, i] = True
            else:
                cand[n_c] = i
                n_c += 1
        if n_c == 0:
            continue
        if use_packed:
            alone = _alone_packed(packed, missing, shifts, widths, c, single[cand[:n_c]], repeated, direct)
        else:
            alone = _alone(codes, w, cards, c, single[cand[:n_c]], repeated, direct)
        for q in range(n_c):
            if alone[q]:
                unique[t, cand[q]] = True
                msu[t, cand[q]] = True
