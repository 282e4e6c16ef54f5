"""Singling out (Giomi et al. 2023, §4.1; Cohen & Nissim 2020): predicates learnt from the
release that isolate exactly one original record.

The attacker writes queries on the release z that match exactly one released record and
bets that each also matches exactly one person of the original data. Two query makers:

* **univariate**: one condition on one attribute — a value that occurs once in z
  (``age == 87``), the smallest or largest value of a numeric attribute (``fnlwgt <= 13769``,
  ``fnlwgt >= 1484705``), or ``is missing`` when one record of z lacks the attribute;
* **multivariate**: a random record of z and ``n_cols`` random attributes of it, each
  becoming a condition: equality for a categorical attribute, ``>= value`` for a numeric
  value above the attribute's median in z and ``<= value`` otherwise (extreme regions are
  where records are rare); only queries that match exactly one record of z are kept, up to
  ``n_attacks`` distinct ones.

The main attack succeeds on a query that matches exactly one original record; the control
attack runs the same queries on the control set. The baseline attacker writes random
queries (random attributes, values drawn from z, random comparison operators) and is
scored on the originals. Duplicate records are removed from every table first (two
identical records cannot be told apart), and the success rates are counted out of
``n_attacks`` even when fewer queries could be made (the attacker's failure to find queries
is part of the protection), both as in anonymeter 1.1.0.

When the control set (after removing duplicates) differs in size from the original data,
its successes are rescaled to the original's size: a query singles out more easily in a
smaller table. For a query matching c of the m control records, the expected number of
single matches in s records drawn from them is c·C(m − c, s − 1)/C(m, s); summed over the
queries this gives the expected successes E(s) at any s ≤ m. For a larger original (n > m),
E is extrapolated with Cohen & Nissim's model E(s) = A·∫₀^w P(u, s) du, P(u, s) = s·u(1 − u)^(s−1)
(query weights spread evenly up to w), fitted to E at ten sizes up to m.

The counting of a query's matches lives in :mod:`ppdm.attacks._singling_out_counts`; the names
of it used elsewhere are importable from here.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Literal

import numpy as np
import pandas as pd

from ppdm.attacks._common import (
    AttackResult,
    Encoded,
    attack_encoding,
    attack_tables,
    check_confidence,
    check_n_attacks,
    check_tables,
    context_encoding,
    make_result,
    measure_options,
    rng_of,
)
from ppdm.attacks._singling_out_counts import (  # noqa: F401  (re-exported: the public path stays this module)
    EQ,
    GE,
    GT,
    ISNULL,
    LE,
    LT,
    NE,
    NOTNULL,
    Indexed,
    Queries,
    _counts,
    _own_query_counts,
    _univariate_counts,
    count_matches,
)
from ppdm.errors import ParameterError
from ppdm.metrics.base import EvaluationContext, register_measure
from ppdm.parallel import chunks_for
from ppdm.utils import RandomState

#: queries of the registered multivariate singling-out measure (the library default stays 500)
EVALUATE_MULTIVARIATE_QUERIES = 4000
#: the multivariate search keeps a copy of the table's run positions in each column's order (m²
#: values a record, 4 bytes each) up to this many values, 64 MB: adult needs 3.4 million
BY_COLUMN_CELLS = 2**24
OP_TEXT = {EQ: "==", NE: "!=", LT: "<", GT: ">", LE: "<=", GE: ">=", ISNULL: "is missing", NOTNULL: "is not missing"}


def _without_duplicates(t: np.ndarray) -> np.ndarray:
    """The rows of an encoded table without repeats, first occurrences in order: duplicate
    records are one record to a query (missing values compare equal here)."""
    from ppdm.metrics.keyvar import group_codes

    if len(t) == 0:
        return t
    codes = np.column_stack([pd.factorize(t[:, a], use_na_sentinel=False)[0] for a in range(t.shape[1])])
    _, first = np.unique(group_codes(codes.astype(np.int64)), return_index=True)
    return t[np.sort(first)]


# --------------------------------------------------------------- query makers
def _univariate_queries(tab: Indexed, enc: Encoded, rng: np.random.Generator, n_queries: int) -> Queries:
    syn = tab.data
    cols, ops, vals = [], [], []
    for a in range(syn.shape[1]):
        v = syn[:, a]
        miss = np.isnan(v)
        if miss.sum() == 1:
            cols.append(a)
            ops.append(ISNULL)
            vals.append(np.nan)
        present = v[~miss]
        if enc.is_numeric[a] and present.size:
            cols += [a, a]
            ops += [LE, GE]
            vals += [present.min(), present.max()]
        uniq, cnt = np.unique(present, return_counts=True)
        rare = uniq[cnt == 1]
        cols += [a] * len(rare)
        ops += [EQ] * len(rare)
        vals += rare.tolist()
    col = np.array(cols, dtype=np.int64)[:, None]
    op = np.array(ops, dtype=np.int64)[:, None]
    val = np.array(vals, dtype=float)[:, None]
    order = _common_order(col[:, 0], op[:, 0], val[:, 0], rng)
    col, op, val = col[order], op[order], val[order]
    keep = np.flatnonzero(_counts(tab, (col, op, val), 2) == 1)[:n_queries]
    return col[keep], op[keep], val[keep]


def _mix64(v: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: a well-spread 64-bit hash of each value."""
    with np.errstate(over="ignore"):
        v = (v ^ (v >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        v = (v ^ (v >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return v ^ (v >> np.uint64(31))


def _common_order(col: np.ndarray, op: np.ndarray, val: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A random order of the candidate queries in which each query's place depends only on the
    query and the seed, not on the other candidates: two releases measured with the same seed
    draw the same queries wherever they offer the same ones (common random numbers), so their
    difference in risk is the difference of what they release, not of the draw. One number is
    taken from ``rng`` whatever the number of candidates."""
    salt = np.uint64(int(rng.integers(0, 2**63 - 1)))
    bits = np.ascontiguousarray(np.where(np.isnan(val), np.nan, val + 0.0), dtype=np.float64).view(np.uint64)
    key = _mix64(bits ^ _mix64(col.astype(np.uint64) * np.uint64(16) + op.astype(np.uint64) + salt))
    return np.argsort(key, kind="stable")


def _multivariate_queries(
    tab: Indexed, enc: Encoded, rng: np.random.Generator, n_queries: int, n_cols: int, max_attempts: int | None,
    batch: int = 1000,
) -> Queries:
    syn = tab.data
    n, m = syn.shape
    medians = np.array([np.nanmedian(syn[:, a]) if enc.is_numeric[a] and not np.isnan(syn[:, a]).all() else np.nan
                        for a in range(m)])
    order, _, n_present = tab._sort()
    run_lo, run_hi = tab.runs()
    # run_lo copied into each column's order (m² values a record) while that stays small: the
    # scans of the search then read memory in sequence
    by_col = np.take(run_lo, order, axis=0) if n * m * m <= BY_COLUMN_CELLS else run_lo[None]
    is_num = np.ascontiguousarray(enc.is_numeric, dtype=np.bool_)
    seen: set[bytes] = set()
    out_c: list[Any] = []
    out_o: list[Any] = []
    out_v: list[Any] = []
    attempts = 0
    # a candidate is fixed by its row and its set of columns: N = n·C(m, n_cols) of them. After
    # N·(ln N + 10) draws every one has been seen except with probability below e^-10, so on a
    # small table the search stops there instead of running to max_attempts for queries that
    # do not exist
    n_cand = n * math.comb(m, n_cols)
    cover = int(math.ceil(n_cand * (math.log(max(n_cand, 1)) + 10)))
    max_attempts = cover if max_attempts is None else min(max_attempts, cover)
    while len(out_c) < n_queries and attempts < max_attempts:
        if out_c:  # size the next batch on the share found so far: few large calls, not many small
            batch = int(min(50_000, max(1000, 1.2 * (n_queries - len(out_c)) * attempts / len(out_c))))
        b = min(batch, max_attempts - attempts)
        rows = rng.integers(0, n, size=b)
        u = rng.random((b, m))
        cols = np.empty((b, n_cols), dtype=np.int64)
        counts = _own_query_counts(rows, u, n_cols, syn, is_num, medians, order, run_lo, run_hi, by_col, n_present,
                                   cols, chunks_for(b))
        attempts += b
        singles = np.flatnonzero(counts == 1)
        cols = cols[singles]
        vals = syn[rows[singles, None], cols]
        ops = np.where(np.isnan(vals), ISNULL,
                       np.where(enc.is_numeric[cols], np.where(vals > medians[cols], GE, LE), EQ))
        keyvals = np.nan_to_num(vals, nan=np.inf)  # once per batch, not per query
        for i, kv in enumerate(keyvals):
            key = cols[i].tobytes() + ops[i].tobytes() + kv.tobytes()
            if key in seen:
                continue
            seen.add(key)
            out_c.append(cols[i])
            out_o.append(ops[i])
            out_v.append(vals[i])
            if len(out_c) >= n_queries:
                break
    if not out_c:
        return (np.zeros((0, n_cols), np.int64), np.zeros((0, n_cols), np.int64), np.zeros((0, n_cols)))
    return np.array(out_c), np.array(out_o), np.array(out_v)


def _random_queries(syn: np.ndarray, enc: Encoded, rng: np.random.Generator, n_queries: int, n_cols: int) -> Queries:
    """The baseline attacker's queries: random attributes, a random value of z (missing
    included) and a random operator (== or != for categorical attributes, any comparison
    for numeric ones; a missing value gives ``is missing`` or ``is not missing``)."""
    n, m = syn.shape
    cols = np.sort(np.argpartition(rng.random((n_queries, m)), n_cols - 1, axis=1)[:, :n_cols], axis=1)
    ops = np.empty_like(cols)
    vals = np.empty(cols.shape)
    u_val = rng.random(cols.shape)
    u_op = rng.random(cols.shape)
    for a in np.unique(cols):
        at = cols == a
        v = syn[:, a]
        values = np.unique(v[~np.isnan(v)])
        if np.isnan(v).any():
            values = np.append(values, np.nan)
        picked = values[np.minimum((u_val[at] * len(values)).astype(np.int64), len(values) - 1)]
        n_ops = 6 if enc.is_numeric[a] else 2
        op = np.minimum((u_op[at] * n_ops).astype(np.int64), n_ops - 1)
        op = np.where(np.isnan(picked), np.where(op == EQ, ISNULL, NOTNULL), op)
        vals[at] = picked
        ops[at] = op
    return cols, ops, vals


# -------------------------------------------------------------- size correction
def _log_comb(a: np.ndarray | float, b: np.ndarray | float) -> np.ndarray:
    from scipy.special import gammaln

    return gammaln(a + 1) - gammaln(b + 1) - gammaln(a - b + 1)


def expected_single_matches(counts: np.ndarray, m: int, s: int) -> float:
    """Expected number of queries matching exactly one of s records drawn without replacement
    from m, for queries matching ``counts`` of the m records: Σ c·C(m − c, s − 1)/C(m, s)."""
    c = counts[(counts > 0) & (m - counts >= s - 1)].astype(float)
    if c.size == 0 or s < 1:
        return 0.0
    return float(np.sum(c * np.exp(_log_comb(m - c, np.full_like(c, s - 1)) - _log_comb(np.float64(m), np.float64(s)))))


def _model(n: np.ndarray | float, w: float, a: float) -> np.ndarray | float:
    """Cohen & Nissim: A·∫₀^w s·u(1 − u)^(s−1) du = A·(1 − (s·w + 1)(1 − w)^s)/(s + 1)."""
    n = np.asarray(n, dtype=float)
    return a * (1.0 - (n * w + 1.0) * (1.0 - w) ** n) / (n + 1.0)


def control_at_size(counts: np.ndarray, m: int, n: int) -> float:
    """Successes of the control attack rescaled from m control records to n originals."""
    if n == m:
        return float(np.sum(counts == 1))
    if n < m:
        return expected_single_matches(counts, m, n)
    from scipy.optimize import OptimizeWarning, curve_fit

    sizes = np.unique(np.linspace(min(1000, m), m, 10).astype(int))
    succ = np.array([expected_single_matches(counts, m, int(s)) for s in sizes])
    if not succ.any():
        return 0.0
    w0 = 1.0 / sizes.max()
    a0 = succ.max() / max(float(_model(sizes.max(), w0, 1.0)), 1e-300)
    try:
        with warnings.catch_warnings():  # only the fitted curve is used, never its covariance
            warnings.simplefilter("ignore", OptimizeWarning)
            (w, a), _ = curve_fit(_model, sizes, succ, p0=(w0, a0), bounds=((0.0, 0.0), (1.0, np.inf)),
                                  maxfev=20000)
    except (RuntimeError, ValueError):  # the fit failed: keep the measured successes
        return float(succ[-1])
    at_m = float(_model(m, w, a))
    return float(succ[-1]) * float(_model(n, w, a)) / at_m if at_m > 0 else float(succ[-1])


# --------------------------------------------------------------------- attack
def singling_out(
    ori: pd.DataFrame,
    syn: pd.DataFrame,
    control: pd.DataFrame | None,
    *,
    mode: Literal["univariate", "multivariate"] = "multivariate",
    n_attacks: int | None = None,
    n_cols: int = 3,
    max_attempts: int | None = 10_000_000,
    confidence: float = 0.95,
    numeric: list[str] | None = None,
    random_state: RandomState = None,
    encoded: Encoded | None = None,
) -> AttackResult:
    """Singling-out risk of the release ``syn`` for the records of ``ori`` (see the module
    docstring), with ``control`` records not used to make ``syn``.

    ``n_attacks`` queries (default 2000 univariate, 500 multivariate); ``n_cols`` conditions
    per multivariate query; ``max_attempts`` caps the candidate queries tried (``None``: no
    cap beyond the coverage bound: after N·(ln N + 10) candidates, N = rows × C(attributes,
    n_cols), every distinct candidate has almost surely been tried, and the search ends). ``numeric`` names the numeric attributes (default: numeric dtypes). The result's
    ``detail`` holds the queries and which of them succeeded (never printed). ``encoded``: these tables already encoded on all their columns (:func:`~ppdm.attacks._common.context_encoding`), shared by the attacks of one evaluation.
    """
    attack = f"singling out ({mode})"
    if mode not in ("univariate", "multivariate"):
        raise ParameterError(f"singling-out mode must be 'univariate' or 'multivariate', got {mode!r}")
    n_attacks = check_n_attacks(n_attacks if n_attacks is not None else (2000 if mode == "univariate" else 500))
    if mode == "multivariate":
        n_cols = check_n_attacks(n_cols, "n_cols")
    if max_attempts is not None:
        max_attempts = check_n_attacks(max_attempts, "max_attempts")
    confidence = check_confidence(confidence)
    ori, syn, control = check_tables(ori, syn, control, attack)
    cols = list(ori.columns)
    if mode == "multivariate" and n_cols > len(cols):
        raise ParameterError(f"singling out: n_cols = {n_cols} but the table has {len(cols)} attributes")
    rng = rng_of(random_state)
    enc = attack_encoding(encoded, [ori, syn, control], cols, numeric)
    if "without_duplicates" not in enc.memo:  # the same for both modes
        enc.memo["without_duplicates"] = tuple(Indexed.of(_without_duplicates(t)) for t in enc.tables)
    o, s, c = enc.memo["without_duplicates"]
    k = 1 if mode == "univariate" else n_cols
    if mode == "univariate":
        queries = _univariate_queries(s, enc, rng, n_attacks)
    else:
        queries = _multivariate_queries(s, enc, rng, n_attacks, n_cols, max_attempts)
    main_ok = _counts(o, queries, 2) == 1
    same_size = len(c.data) == len(o.data)
    ctl_counts = _counts(c, queries, 2 if same_size else None)
    n_control = control_at_size(ctl_counts, len(c.data), len(o.data))
    base = _random_queries(s.data, enc, rng, n_attacks, k)
    n_baseline = int(np.sum(_counts(o, base, 2) == 1))
    detail = {"columns": cols, "query_columns": queries[0], "query_operators": queries[1],
              "query_values": queries[2], "main_success": main_ok, "control_success": ctl_counts == 1}
    settings = {"mode": mode, "n_cols": k, "n_queries": int(len(queries[0])), "max_attempts": max_attempts,
                "control_rescaled": not same_size,
                "rows_without_duplicates": [len(o.data), len(s.data), len(c.data)]}
    return make_result(attack, n_attacks=(n_attacks, n_attacks, n_attacks), n_success=int(main_ok.sum()),
                       n_baseline=n_baseline, n_control=n_control, confidence=confidence, settings=settings,
                       detail=detail)


def query_text(detail: dict, i: int) -> str:
    """Query i of a singling-out result's ``detail`` as text (it holds released values: for the
    data owner's eyes, never for a report)."""
    parts = []
    for a, o, v in zip(detail["query_columns"][i], detail["query_operators"][i], detail["query_values"][i],
                       strict=True):
        parts.append(f"{detail['columns'][a]} {OP_TEXT[int(o)]}" + ("" if o in (ISNULL, NOTNULL) else f" {v!r}"))
    return " and ".join(parts)


# ------------------------------------------------------------ registrations
_UNIVARIATE_OPTIONS = ("n_attacks", "confidence")
_MULTIVARIATE_OPTIONS = ("n_attacks", "n_cols", "max_attempts", "confidence")


@register_measure("singling_out_univariate", kind="risk", needs_class=False, default=True, options=_UNIVARIATE_OPTIONS,
                  direction="lower", value_range=(0.0, 1.0), threshold=0.05,
                  meaning="How much more often one-attribute predicates learnt from the release isolate a single "
                  "original record than a control record, as a share; 0 is best.",
                  description="singling-out risk, one-attribute queries (Giomi et al. 2023, anonymeter)")
def _so_uni_measure(ctx: EvaluationContext) -> AttackResult:
    x, z, control, num = attack_tables(ctx)
    opts = measure_options(ctx, "singling_out_univariate", _UNIVARIATE_OPTIONS)
    return singling_out(x, z, control, mode="univariate", numeric=num, random_state=ctx.random_state,
                        encoded=context_encoding(ctx, x, z, control, num), **opts)


@register_measure("singling_out_multivariate", kind="risk", needs_class=False, default=True,
                  options=_MULTIVARIATE_OPTIONS,
                  direction="lower", value_range=(0.0, 1.0), threshold=0.05,
                  meaning="How much more often three-attribute predicates learnt from the release isolate a single "
                  "original record than a control record, as a share; 0 is best.",
                  description="singling-out risk, queries on 3 attributes of a released record (Giomi et al. "
                              "2023, anonymeter)")
def _so_multi_measure(ctx: EvaluationContext) -> AttackResult:
    x, z, control, num = attack_tables(ctx)
    opts = measure_options(ctx, "singling_out_multivariate", _MULTIVARIATE_OPTIONS)
    # more queries than anonymeter's 500: their random choice otherwise moves the interval across
    # the verdict's threshold from one measurement seed to the next
    opts.setdefault("n_attacks", EVALUATE_MULTIVARIATE_QUERIES)
    return singling_out(x, z, control, mode="multivariate", numeric=num, random_state=ctx.random_state,
                        encoded=context_encoding(ctx, x, z, control, num), **opts)


__all__ = ["control_at_size", "count_matches", "expected_single_matches", "query_text", "singling_out"]

