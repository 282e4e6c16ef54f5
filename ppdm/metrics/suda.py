"""SUDA2: special uniques and their DIS-SUDA scores (Elliot et al. 2002; Manning, Haglin &
Keane 2008; the scores as sdcMicro's ``suda2`` computes them).

A *minimal sample unique* (MSU) of a record is a set of its key values that no other
record shares while every proper subset of it is shared. A record with MSUs of few
variables is "special": an intruder needs to know little about the person to single the
record out. The SUDA score of a record sums, over its MSUs, (M − |MSU|)! where M is the
number of key variables (at least 3, see below); it is 0 for every record that is not a
sample unique on the full key.

The DIS-SUDA score turns scores into a per-record probability that a unique match is a
correct match: with U the sample uniques and P the records whose key occurs exactly
twice, the DIS probability at sampling fraction f is Dis = U·f / (U·f + P·(1 − f))
(Skinner & Elliot 2002), and a record with score s > 0 gets

    dis(s) = 1 / (1 + (U/Dis − U) / (s^Q · Σ_{s_j > 0} s_j^−Q)),   Q = 1 + (8 − M)/20,

and 0 when s = 0. Q is rounded to single precision as sdcMicro does.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ppdm.errors import ParameterError, PPDMError
from ppdm.metrics._records import RecordDetailMixin, record_field
from ppdm.metrics.base import EvaluationContext, register_measure
from ppdm.metrics.keyvar import KEY_OPTIONS, check_keys, group_codes, judged_keys, key_codes

#: sdcMicro's SUDA2 needs three key variables and pads fewer with constant ones (which
#: never form an MSU but raise M in the score weights); ppdm does the same for parity.
MIN_KEYS = 3

#: key combinations are packed in one integer when their codes fit in this many bits
PACKED_BITS = 62
#: records of a subset are counted in a direct table of at most this many cells per
#: record counted, plus the second number (else in a hash table)
DIRECT_CELLS = (4, 1 << 16)

#: subsets of this many key variables or more would take too long to enumerate
MAX_KEYS = 20

#: bins of DIS-SUDA scores in sdcMicro's printout
DIS_BINS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7)


@dataclass
class SUDA2Result(RecordDetailMixin):
    """SUDA2 on the key variables. ``value`` is the mean DIS-SUDA score of the records (the
    average estimated probability that a unique match on the record is correct); lower is
    better."""

    keys: list[str] = field(default_factory=list)
    n: int = 0
    dis_fraction: float = 0.01
    special_uniques: int = 0  # records with at least one MSU (score > 0)
    max_score: float = 0.0
    max_dis_score: float = 0.0
    msu_counts: dict[int, int] = field(default_factory=dict)  # MSUs by size
    dis_table: pd.DataFrame = field(default_factory=pd.DataFrame)
    per_key: pd.DataFrame = field(default_factory=pd.DataFrame)
    original: float | None = None
    key_source: str = ""
    perturbed_keys: list[str] = field(default_factory=list)  # declared keys left out: perturbed in z
    score: np.ndarray | None = record_field()
    dis_score: np.ndarray | None = record_field()


def _msu_search(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """MSUs of the distinct key combinations: (group of each record, multiplicity of each
    combination, MSUs by size of each combination (D, M + 1), MSUs by variable (M, M + 1)).

    Subsets are visited level by level (see :mod:`ppdm.metrics._suda_kernels`).
    """
    from ppdm.metrics._suda_kernels import msu_level

    n, m = codes.shape
    g = group_codes(codes) if n else np.zeros(0, dtype=np.int64)
    n_d = int(g.max()) + 1 if n else 0
    w = np.bincount(g, minlength=n_d).astype(np.int64)
    comb = np.empty((n_d, m), dtype=np.int32)
    comb[g] = codes  # every record of a group has the group's codes
    by_size = np.zeros((n_d, m + 1), dtype=np.int64)
    by_var = np.zeros((m, m + 1), dtype=np.int64)
    single = np.flatnonzero(w == 1)
    if single.size == 0 or m == 0:
        return g, w, by_size, by_var
    repeated = np.flatnonzero(w > 1)
    cards = np.maximum(comb.max(axis=0).astype(np.int64) + 1, 1)
    # a bit per column marks a missing value; the values are packed in one integer each
    # (column c in bits shifts[c] … shifts[c] + widths[c]) when they fit in 62 bits
    missing = ((comb < 0) * (np.int64(1) << np.arange(m, dtype=np.int64))).sum(axis=1)
    widths = np.array([max(int(k - 1).bit_length(), 1) for k in cards], dtype=np.int64)
    shifts = np.concatenate([[0], np.cumsum(widths)[:-1]]).astype(np.int64)
    if widths.sum() <= PACKED_BITS:
        packed = np.zeros(n_d, dtype=np.uint64)
        for c in range(m):
            packed |= np.maximum(comb[:, c], 0).astype(np.uint64) << np.uint64(shifts[c])
    else:
        packed = np.zeros(0, dtype=np.uint64)
    prev_subsets: list[tuple[int, ...]] = [()]
    prev_unique = np.zeros((1, single.size), dtype=bool)
    for size in range(1, m + 1):
        subsets = list(itertools.combinations(range(m), size))
        pos = {s: i for i, s in enumerate(prev_subsets)}
        parents = np.array([[pos[s[:j] + s[j + 1:]] for j in range(size)] for s in subsets], dtype=np.int64)
        cols = np.array(subsets, dtype=np.int64)
        unique, msu = msu_level(comb, w, cards, single, repeated, cols, parents, prev_unique, packed, missing,
                                shifts, widths, np.array(DIRECT_CELLS, dtype=np.int64))
        by_size[single, size] = msu.sum(axis=0)
        per_subset = msu.sum(axis=1)
        for t, s in enumerate(subsets):
            by_var[list(s), size] += per_subset[t]
        prev_subsets, prev_unique = subsets, unique
    return g, w, by_size, by_var


def msu_counts(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Number of minimal sample uniques of each record by size, and of each variable.

    ``codes`` is (n, M) with −1 for a missing value; a missing value never matches and is
    never part of an MSU (as in SUDA2). Every subset S of the variables is visited once,
    level by level: record i is unique on S when no other complete record shares its
    values on S, and S is an MSU of i when i is unique on S but on no S \\ {j} (uniqueness
    only grows with S, so the immediate subsets suffice). Returns ``by_size`` (n, M + 1)
    and ``weight_by_var`` (M, M + 1): MSUs of each size that contain each variable.
    """
    g, _, by_size, by_var = _msu_search(np.asarray(codes, dtype=np.int64).reshape(len(codes), -1))
    return by_size[g], by_var


def suda2(df: pd.DataFrame, keys: Any, dis_fraction: float = 0.01) -> SUDA2Result:
    """SUDA2 scores and DIS-SUDA scores of every record on the key variables (sdcMicro ``suda2``
    with ``original_scores=TRUE``; see the module docstring for the formulas).

    ``dis_fraction`` is the sampling fraction f of the DIS estimate (sdcMicro's
    ``DisFraction``, default 0.01). With fewer than 3 keys, M = 3 as in sdcMicro (which pads
    the keys with constant columns). ``per_key`` gives, per key variable, the MSUs it takes
    part in and its contribution to the total score in percent (sdcMicro's
    ``attribute_contributions``; the shares add up to more than 100 because an MSU of s
    variables counts for each of them). Per-record ``score`` and ``dis_score`` stay on the
    result, never printed.
    """
    if not (isinstance(dis_fraction, (int, float)) and 0 < dis_fraction < 1):
        raise ParameterError(f"SUDA2 dis_fraction must be in (0, 1), got {dis_fraction!r}")
    keys = check_keys(df, keys, measure="SUDA2")
    if len(keys) >= MAX_KEYS:
        raise ParameterError(f"SUDA2 enumerates every subset of the key variables; {len(keys)} keys are too many "
                             f"(at most {MAX_KEYS - 1})")
    codes = key_codes(df, keys)
    n, m_keys = codes.shape
    m = max(m_keys, MIN_KEYS)
    g, mult, by_size, by_var = _msu_search(codes)
    w = np.array([float(math.factorial(m - s)) if s <= m else 0.0 for s in range(m_keys + 1)])
    w[0] = 0.0
    score = (by_size @ w)[g]
    total = float(score.sum())
    # DIS estimate on the full key, missing values compared as a value of their own
    u = int((mult == 1).sum())
    p = 2 * int((mult == 2).sum())
    dis_score = np.zeros(n)
    pos = score > 0
    if pos.any():
        if u == 0:  # pragma: no cover - a record with an MSU is a sample unique
            raise PPDMError("SUDA2: records have MSUs but none is a sample unique")
        q = float(np.float32(1.0) + (np.float32(8.0) - np.float32(m)) / np.float32(20.0))
        dis = u * dis_fraction / (u * dis_fraction + p * (1.0 - dis_fraction))
        adj = float(np.sum(score[pos] ** -q))
        dis_score[pos] = 1.0 / (1.0 + (u / dis - u) / (score[pos] ** q * adj))
    edges = [-np.inf, *[b + np.finfo(float).eps for b in DIS_BINS], np.inf]
    labels = ["= 0", *[f"({a:.1f}, {b:.1f}]" for a, b in itertools.pairwise(DIS_BINS)], "> 0.7"]
    counts = pd.cut(pd.Series(dis_score), bins=edges, labels=labels).value_counts(sort=False)
    dis_table = pd.DataFrame({"interval": labels, "records": [int(counts[lb]) for lb in labels]})
    per_key = pd.DataFrame({
        "key": keys,
        "msus": by_var[:, 1:].sum(axis=1).astype(int),
        "contribution_pct": (100.0 * (by_var @ w) / total) if total > 0 else np.zeros(m_keys),
    })
    return SUDA2Result(
        value=float(dis_score.mean()), keys=keys, n=n, dis_fraction=float(dis_fraction),
        special_uniques=int(pos.sum()), max_score=float(score.max()), max_dis_score=float(dis_score.max()),
        msu_counts={s: int(by_size[:, s].sum()) for s in range(1, m_keys + 1)}, dis_table=dis_table,
        per_key=per_key, score=score, dis_score=dis_score)


@register_measure("suda2", kind="risk", needs_class=False, direction="lower", value_range=(0.0, 1.0),
                  options=(*KEY_OPTIONS, "dis_fraction"),
                  meaning="The mean probability, after the DIS model, that a record unique on few quasi-identifier "
                  "values is correctly matched to its person; 0 is best.",
                  description="SUDA2 special uniques on the quasi-identifiers: mean DIS-SUDA score of the "
                              "released records (sdcMicro suda2)")
def _suda2_measure(ctx: EvaluationContext) -> SUDA2Result:
    keys, perturbed = judged_keys(ctx, "suda2")
    nested = ctx.options.get("suda2")
    frac = nested["dis_fraction"] if isinstance(nested, dict) and "dis_fraction" in nested else \
        ctx.options.get("suda2.dis_fraction", ctx.options.get("dis_fraction", 0.01))
    res = suda2(ctx.z, keys, frac)
    res.original = suda2(ctx.x, keys, frac).value
    res.key_source = ctx.cache.get('key_source', '')
    res.perturbed_keys = list(perturbed)
    return res


__all__ = ["SUDA2Result", "msu_counts", "suda2"]
