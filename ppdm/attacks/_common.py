"""Pieces shared by the attack-based risks: success rates with Wilson intervals, the residual
risk against a control set, the attack result, table checks and encoding, and the
mixed-type nearest-neighbour search of linkability and inference.

Rates and risk (Giomi et al. 2023, §4): an attack with k successes out of n attempts has
the Wilson score estimate r = (k + z²/2) / (n + z²) with error
e = z / (n + z²) · √(k(n − k)/n + z²/4), z the normal quantile of the confidence level.
The risk is the residual success of the main attack (targets: records used to make the
release) over the control attack (targets: records that were not),
R = (r_main − r_control) / (1 − r_control), with the error propagated to first order,
e_R = √((e_main / (1 − r_control))² + (e_control (1 − r_main) / (1 − r_control)²)²);
R and R ± e_R are clipped to [0, 1].
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numba import njit

from ppdm.errors import MeasureNotApplicable, ParameterError, PPDMError, SchemaError
from ppdm.metrics._common import wilson_score as wilson
from ppdm.metrics._kernels import groups_by_level, mismatch_counts, same_codes
from ppdm.metrics._records import RecordDetailMixin, record_field
from ppdm.parallel import chunks_for, run_chunks
from ppdm.utils import RandomState, check_random_state


# ------------------------------------------------------------------------ rates
def residual(main: tuple[float, float], control: tuple[float, float]) -> tuple[float, float]:
    """Residual success of the main attack over the control attack and its propagated error."""
    (a, ea), (c, ec) = main, control
    if c >= 1.0:
        return 0.0, 1.0  # the control attack always succeeds: nothing can be told apart
    value = (a - c) / (1.0 - c)
    err = math.sqrt((ea / (1.0 - c)) ** 2 + (ec * (a - 1.0) / (1.0 - c) ** 2) ** 2)
    return value, err


def _clip(v: float) -> float:
    return min(max(v, 0.0), 1.0)


@dataclass
class AttackResult(RecordDetailMixin):
    """Risk of one attack: ``value`` is the residual risk of the main attack over the control
    attack, in [0, 1] (lower is better protected), with its confidence interval
    [``ci_low``, ``ci_high``]. The three attack rates and their errors are Wilson estimates.
    Per-attack detail (queries, guesses, links) stays in ``detail`` and is never printed or
    serialised: it may hold values of the release's records."""

    attack: str = ""
    ci_low: float = 0.0
    ci_high: float = 0.0
    confidence: float = 0.95
    main_rate: float = 0.0
    main_error: float = 0.0
    baseline_rate: float = 0.0
    baseline_error: float = 0.0
    control_rate: float = 0.0
    control_error: float = 0.0
    n_attacks: int = 0
    n_baseline_attacks: int = 0
    n_control_attacks: int = 0
    n_success: float = 0.0
    n_baseline_success: float = 0.0
    n_control_success: float = 0.0
    baseline_warning: bool = False  # the attack did no better than random guessing
    settings: dict[str, Any] = field(default_factory=dict)
    detail: dict[str, Any] | None = record_field()

    @property
    def ci(self) -> tuple[float, float]:
        return (self.ci_low, self.ci_high)


def make_result(
    attack: str,
    *,
    n_attacks: tuple[int, int, int],
    n_success: float,
    n_baseline: float,
    n_control: float,
    confidence: float,
    settings: dict[str, Any],
    detail: dict[str, Any] | None = None,
) -> AttackResult:
    """Rates, risk and interval from the success counts of the main, baseline and control attacks."""
    n_main, n_base, n_ctrl = n_attacks
    main = wilson(n_success, n_main, confidence)
    base = wilson(n_baseline, n_base, confidence)
    ctrl = wilson(n_control, n_ctrl, confidence)
    value, err = residual(main, ctrl)
    return AttackResult(
        value=_clip(value), attack=attack, ci_low=_clip(value - err), ci_high=_clip(value + err),
        confidence=confidence, main_rate=main[0], main_error=main[1], baseline_rate=base[0],
        baseline_error=base[1], control_rate=ctrl[0], control_error=ctrl[1], n_attacks=n_main,
        n_baseline_attacks=n_base, n_control_attacks=n_ctrl, n_success=float(n_success),
        n_baseline_success=float(n_baseline), n_control_success=float(n_control),
        baseline_warning=base[0] >= main[0], settings=settings, detail=detail)


# ------------------------------------------------------------------------ inputs
def check_confidence(confidence: float) -> float:
    if not (isinstance(confidence, (int, float)) and 0.0 < confidence < 1.0):
        raise ParameterError(f"confidence must be in (0, 1), got {confidence!r}")
    return float(confidence)


def check_n_attacks(n_attacks: Any, name: str = "n_attacks") -> int:
    if isinstance(n_attacks, bool) or not isinstance(n_attacks, (int, np.integer)) or n_attacks < 1:
        raise ParameterError(f"{name} must be a positive integer, got {n_attacks!r}")
    return int(n_attacks)


def check_tables(ori: Any, syn: Any, control: Any, attack: str) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The original, released and control tables on the original's columns.

    The control set must hold exactly the original's columns (it is a sample of the same
    population, set aside before the release was made); the release must hold them too.
    """
    if control is None:
        raise MeasureNotApplicable(
            f"{attack} needs a control set of original records not used to make the release "
            "(ppdm evaluate --control, or hold records out before anonymizing)")
    for label, df in (("original", ori), ("released", syn), ("control", control)):
        if not isinstance(df, pd.DataFrame):
            raise SchemaError(f"{attack}: the {label} table must be a pandas DataFrame, got {type(df).__name__}")
        if len(df) == 0:
            raise SchemaError(f"{attack}: the {label} table has no rows")
    cols = list(ori.columns)
    if set(control.columns) != set(cols):
        missing = [c for c in cols if c not in control.columns]
        extra = [c for c in control.columns if c not in cols]
        raise PPDMError(f"{attack}: the control set's columns differ from the original's"
                        + (f" (missing {missing})" if missing else "") + (f" (extra {extra})" if extra else ""))
    absent = [c for c in cols if c not in syn.columns]
    if absent:
        raise SchemaError(f"{attack}: column(s) {', '.join(map(repr, absent))} of the original are not in the release")
    return ori, syn[cols], control[cols]


def numeric_columns(df: pd.DataFrame, numeric: list[str] | None) -> list[str]:
    """The numeric attributes: ``numeric`` when given (a schema's), else numeric dtypes."""
    if numeric is not None:
        return [c for c in df.columns if c in set(numeric)]
    return [c for c in df.columns if pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c])]


@dataclass
class Encoded:
    """Tables as float64 matrices over one column list: numeric columns hold their values
    (NaN for missing), other columns the codes of their values shared by every table
    (NaN for missing); ``is_numeric`` flags the columns."""

    columns: list[str]
    is_numeric: np.ndarray
    tables: list[np.ndarray]
    ranges: np.ndarray  # range of each numeric column over all tables (1 for categorical / constant)
    #: what attacks derive from these tables and share (singling out's tables without duplicates)
    memo: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def select(self, columns: list[str]) -> Encoded:
        """The encoding of ``columns`` alone: each column is encoded on its own (codes shared by
        the tables, ranges over them), so it is these columns of this encoding."""
        if list(columns) == self.columns:
            return self
        idx = [self.columns.index(c) for c in columns]
        return Encoded(columns=list(columns), is_numeric=self.is_numeric[idx], tables=[t[:, idx] for t in self.tables],
                       ranges=self.ranges[idx])


def encode(tables: list[pd.DataFrame], columns: list[str], numeric: list[str]) -> Encoded:
    num = set(numeric)
    mats = [np.empty((len(t), len(columns))) for t in tables]
    is_num = np.array([c in num for c in columns], dtype=bool)
    ranges = np.ones(len(columns))
    for a, c in enumerate(columns):
        if c in num:
            vals = []
            for t, mat in zip(tables, mats, strict=True):
                s = t[c]
                if not pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
                    raise SchemaError(f"numeric column {c!r} is not numeric in every table (dtype {s.dtype})")
                v = s.to_numpy(dtype=float, na_value=np.nan)
                if np.isinf(v).any():
                    raise SchemaError(f"numeric column {c!r} holds an infinite value")
                mat[:, a] = v
                vals.append(v)
            allv = np.concatenate(vals)
            allv = allv[~np.isnan(allv)]
            if allv.size and allv.max() > allv.min():
                ranges[a] = float(allv.max() - allv.min())
        else:
            codes, _ = pd.factorize(pd.concat([t[c] for t in tables], ignore_index=True), use_na_sentinel=True)
            codes = codes.astype(float)
            codes[codes < 0] = np.nan
            o = 0
            for t, mat in zip(tables, mats, strict=True):
                mat[:, a] = codes[o:o + len(t)]
                o += len(t)
    return Encoded(columns=list(columns), is_numeric=is_num, tables=mats, ranges=ranges)


def attack_encoding(encoded: Encoded | None, tables: list[pd.DataFrame], columns: list[str],
                    numeric: list[str] | None) -> Encoded:
    """The encoding of ``tables`` (original, release, control) on the attack's ``columns``: taken
    from the evaluation's shared ``encoded`` (:func:`context_encoding`) when there is one, else
    encoded here with the numeric attributes of :func:`numeric_columns`."""
    if encoded is not None:
        return encoded.select(columns)
    return encode(tables, columns, numeric_columns(tables[0], numeric))


def context_encoding(ctx: Any, x: pd.DataFrame, z: pd.DataFrame, control: pd.DataFrame | None,
                     numeric: list[str]) -> Encoded | None:
    """The tables of :func:`attack_tables` encoded once per evaluation on all their columns, for
    every attack to take its columns from (:meth:`Encoded.select`); ``None`` when they cannot be
    encoded together (each attack then encodes, and refuses, its own columns)."""
    if control is None:
        return None
    if "attack_encoding" not in ctx.cache:
        try:
            enc: Encoded | None = encode([x, z, control], list(x.columns), numeric)
        except (PPDMError, KeyError):
            enc = None
        ctx.cache["attack_encoding"] = enc
    return ctx.cache["attack_encoding"]


def rng_of(random_state: RandomState) -> np.random.Generator:
    """A NumPy generator: OS entropy for ``None``, reproducible for a seed."""
    return check_random_state(random_state)


# --------------------------------------------------------- nearest neighbours
@njit(cache=True, nogil=True)
def _scan(j: int, stop: int, step: int, pivot: int, base: float, q: int, q_num: np.ndarray, c_num: np.ndarray,
          c_prio: np.ndarray, c_idx: np.ndarray, bd: np.ndarray, bp: np.ndarray, bi: np.ndarray) -> None:
    """Offer candidates ``j, j + step, ...`` (``stop`` excluded) to the k best of query ``q``.

    With ``pivot`` ≥ 0 the range runs away from the query's value on that column and ends once
    the categorical part plus the pivot's term alone exceeds the k-th distance: every later
    candidate is at least as far on it. One call per range, the candidates in one flat loop:
    a helper called per candidate made the search several times slower."""
    k = bd.shape[0]
    u0 = q_num[q, pivot] if pivot >= 0 else 0.0
    while j != stop:
        worst = bd[k - 1]
        if pivot >= 0 and base + abs(c_num[j, pivot] - u0) > worst:
            return
        d = base
        for a in range(q_num.shape[1]):
            u = q_num[q, a]
            w = c_num[j, a]
            if u != u or w != w:  # missing: 0 against missing, 1 against a value
                d += 0.0 if (u != u and w != w) else 1.0
            else:
                d += abs(u - w)
            if d > worst:
                break
        if not (d > worst or (d == worst and c_prio[j] > bp[k - 1])):
            r = k - 1
            while r > 0 and (bd[r - 1] > d or (bd[r - 1] == d and bp[r - 1] > c_prio[j])):
                bd[r] = bd[r - 1]
                bp[r] = bp[r - 1]
                bi[r] = bi[r - 1]
                r -= 1
            bd[r] = d
            bp[r] = c_prio[j]
            bi[r] = c_idx[j]
        j += step


def knn_gower(
    q_cat: np.ndarray,  # (nq, C) int32 categorical codes of the queries (−1 = missing)
    q_num: np.ndarray,  # (nq, P) numeric values divided by their range (NaN = missing)
    g_codes: np.ndarray,  # (C, G) int32 categorical codes of each group of candidates
    g_start: np.ndarray,  # (G + 1,) candidates of group g are rows g_start[g]:g_start[g + 1]
    g_present: np.ndarray,  # (G,) rows g_start[g]:g_present[g] hold the pivot, ascending; the rest miss it
    pivot: int,  # the numeric column the groups are sorted by (−1: none)
    c_num: np.ndarray,  # (n, P) numeric values of the candidates, grouped
    c_prio: np.ndarray,  # (n,) distinct random ranks: among equally near candidates, lower wins
    c_idx: np.ndarray,  # (n,) original index of each grouped candidate
    k: int,
    n_chunks: int,
    q_order: np.ndarray,  # (nq,) the order the queries are searched in (equal categorical codes together)
) -> np.ndarray:
    """Indices of the k nearest candidates of each query (Gower distance), nearest first, ties
    in ``c_prio`` order.

    Candidates are grouped by their categorical values, so the categorical part of the
    distance is computed once per group; groups are visited level by level of categorical
    distance and the visit stops once a level alone exceeds the current k-th distance. Within
    a group the candidates are sorted by one numeric column, the pivot: the visit starts at
    the query's pivot value and walks outwards (:func:`_scan`, upwards then downwards), and a
    direction ends once the categorical part plus the pivot's term alone exceeds the k-th
    distance (every farther candidate's distance is at least that). The numeric terms are added in column order and abandoned once the sum
    passes the k-th distance. Every distance is the categorical count plus the numeric terms
    in one fixed order, so equal distances are equal bit for bit, and the k best (distance,
    rank) pairs do not depend on the order in which candidates are visited, nor on the order
    of the queries: ``q_order`` lists them with equal categorical codes next to one another, so
    the categorical counts and the groups in their order are made once per distinct codes."""
    nq = q_cat.shape[0]
    out = np.empty((nq, k), dtype=np.int64)
    run_chunks(_knn_gower_chunk, nq, q_cat, q_num, g_codes, g_start, g_present, pivot, c_num, c_prio, c_idx, k,
               q_order, out, chunks=n_chunks)
    return out


@njit(cache=True, nogil=True)
def _knn_gower_chunk(c, start, stop, q_cat, q_num, g_codes, g_start, g_present, pivot, c_num, c_prio, c_idx, k, q_order,
                     out):
    """Queries ``q_order[start:stop]`` of :func:`knn_gower` (range ``c`` of :func:`ppdm.parallel.run_chunks`)."""
    n_cat = q_cat.shape[1]
    n_groups = g_start.shape[0] - 1
    dc = np.empty(n_groups, dtype=np.int32)
    head = np.empty(n_cat + 2, dtype=np.int64)
    by_level = np.empty(n_groups, dtype=np.int64)
    bd = np.empty(k)
    bp = np.empty(k, dtype=np.int64)
    bi = np.empty(k, dtype=np.int64)
    prev = -1
    for s in range(start, stop):
        q = q_order[s]
        if not same_codes(q_cat, q, prev):
            mismatch_counts(dc, g_codes, q_cat[q])
            groups_by_level(dc, head, by_level)
        prev = q
        for r in range(k):
            bd[r] = np.inf
            bp[r] = np.iinfo(np.int64).max
            bi[r] = -1
        u = q_num[q, pivot] if pivot >= 0 else np.nan
        # groups by categorical distance, while their distance can still beat the k-th
        for t in range(n_groups):
            g = by_level[t]
            base = float(dc[g])
            if base > bd[k - 1]:
                break
            lo, mid, hi = g_start[g], g_present[g], g_start[g + 1]
            if u != u:  # the query misses the pivot: no order to use
                _scan(lo, hi, 1, -1, base, q, q_num, c_num, c_prio, c_idx, bd, bp, bi)
                continue
            # the candidates missing the pivot are 1 away on it alone
            if base + 1.0 <= bd[k - 1]:
                _scan(mid, hi, 1, -1, base, q, q_num, c_num, c_prio, c_idx, bd, bp, bi)
            # outwards from the query's value: upwards, then downwards
            right = lo + np.searchsorted(c_num[lo:mid, pivot], u)
            _scan(right, mid, 1, pivot, base, q, q_num, c_num, c_prio, c_idx, bd, bp, bi)
            _scan(right - 1, lo - 1, -1, pivot, base, q, q_num, c_num, c_prio, c_idx, bd, bp, bi)
        for r in range(k):
            out[q, r] = bi[r]


def nearest(
    enc: Encoded, query_tab: int, rows: np.ndarray, cand_tab: int, cols: list[str], k: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """k nearest records of table ``cand_tab`` for the given rows of table ``query_tab`` on
    columns ``cols``: Gower distance (a categorical mismatch counts 1, a numeric difference is
    divided by the attribute's range over all tables), equally near records in random order."""
    from ppdm.metrics.keyvar import group_codes

    idx = [enc.columns.index(c) for c in cols]
    cat = [a for a in idx if not enc.is_numeric[a]]
    num = [a for a in idx if enc.is_numeric[a]]
    cands = enc.tables[cand_tab]
    queries = enc.tables[query_tab][rows]
    n = len(cands)
    k = min(k, n)
    c_cat = np.nan_to_num(cands[:, cat], nan=-1.0).astype(np.int32)
    q_cat = np.ascontiguousarray(np.nan_to_num(queries[:, cat], nan=-1.0).astype(np.int32))
    group = group_codes(c_cat.astype(np.int64)) if cat else np.zeros(n, dtype=np.int64)
    order = np.argsort(group, kind="stable")
    n_groups = int(group.max()) + 1 if n else 0
    g_start = np.concatenate([[0], np.cumsum(np.bincount(group, minlength=n_groups))]).astype(np.int64)
    first = order[g_start[:-1]]
    g_codes = np.ascontiguousarray(c_cat[first].T) if cat else np.zeros((0, n_groups), dtype=np.int32)
    scale = 1.0 / enc.ranges[num]
    c_all = cands[:, num] * scale
    # the pivot: the numeric column whose values spread most, so walking out from a query's
    # value on it reaches the k-th distance after the fewest candidates
    with warnings.catch_warnings():  # a column missing everywhere has no spread: never the pivot
        warnings.simplefilter("ignore", RuntimeWarning)
        spread = np.nanstd(c_all, axis=0) if len(num) and n else np.zeros(0)
    spread = np.where(np.isnan(spread), -1.0, spread)
    pivot = int(np.argmax(spread)) if len(num) and n and spread.max() > 0 else -1
    if pivot >= 0:  # within each group: the pivot ascending, then the records missing it
        pv = c_all[:, pivot]
        order = np.lexsort((np.where(np.isnan(pv), np.inf, pv), np.isnan(pv), group))
        g_present = g_start[:-1] + np.bincount(group[~np.isnan(pv)], minlength=n_groups)
    else:
        g_present = g_start[1:].copy()
    c_num = np.ascontiguousarray(c_all[order])
    q_num = np.ascontiguousarray(queries[:, num] * scale)
    prio = rng.permutation(n).astype(np.int64)[order]
    # queries with equal categorical codes one after another: their counts are made once
    q_order = np.argsort(group_codes(q_cat.astype(np.int64)), kind="stable") if cat and len(rows) else \
        np.arange(len(rows))
    return knn_gower(q_cat, q_num, g_codes, g_start, g_present.astype(np.int64), pivot, c_num,
                             np.ascontiguousarray(prio), order.astype(np.int64), k,
                             chunks_for(len(rows)), q_order.astype(np.int64))


# ------------------------------------------------------------ registrations
def measure_options(ctx: Any, name: str, allowed: Sequence[str]) -> dict[str, Any]:
    """Options meant for the registered measure ``name``: ``name.key`` or ``{name: {key: ...}}``
    (plain keys are not read: ``n_attacks`` for one attack is not meant for another)."""
    out: dict[str, Any] = {}
    nested = ctx.options.get(name)
    if isinstance(nested, dict):
        out.update(nested)
    prefix = f"{name}."
    for key, val in ctx.options.items():
        if isinstance(key, str) and key.startswith(prefix):
            out[key[len(prefix):]] = val
    bad = sorted(set(out) - set(allowed))
    if bad:
        raise ParameterError(f"measure {name!r} has no parameter {bad[0]!r}; it takes {sorted(allowed)}")
    return out


def attack_tables(ctx: Any) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame | None, list[str]]:
    """x, z and the control set of an evaluation on the schema's columns (attributes and the
    class), and the numeric ones. A control set whose columns differ from x is refused."""
    cols = [c for c in ctx.schema.columns if c in ctx.x.columns]
    control = ctx.control
    if control is not None:
        if not isinstance(control, pd.DataFrame):
            raise SchemaError(f"the control set must be a pandas DataFrame, got {type(control).__name__}")
        missing = [c for c in ctx.x.columns if c not in control.columns]
        extra = [c for c in control.columns if c not in ctx.x.columns]
        if missing or extra:
            raise PPDMError("the control set's columns differ from the original's"
                            + (f" (missing {missing})" if missing else "") + (f" (extra {extra})" if extra else ""))
        control = control[cols]
    return ctx.x[cols], ctx.z, control, [c for c in ctx.schema.numeric if c in cols]


__all__ = ["AttackResult", "Encoded", "attack_encoding", "attack_tables", "check_tables", "context_encoding", "encode", "make_result", "measure_options",
           "nearest", "residual", "wilson"]
