"""Record linkage over mixed attributes: can an intruder holding x find each record's own original?

The intruder modelled is the maximum-knowledge one: it holds x's records, so it knows every
attribute z shares with x and links on all of them (the class included), not only on declared
quasi-identifiers. It links in two stages, and a record's credit is the larger of the two.

First, exact joins (:func:`exact_join`): the columns z appears to keep verbatim, judged from
the values alone, are joined on, most identifying first, and a released record equal to a
single original on its longest matching prefix of them is linked to it. A distance averages
one verbatim column with many noisy ones and misses such joins (a release that keeps only a
near-unique weight column intact is linked through it).

Then the nearest distance. DDR (:func:`ppdm.metrics.risk.ddr`) links on numeric attributes
only. Here each released record z_i is compared with every original record x_j on numeric
*and* categorical attributes with a Gower distance (Gower 1971; the distance-based record
linkage of Domingo-Ferrer & Torra 2001, applied to mixed data):

    d(z_i, x_j) = Σ_categorical [z_ic ≠ x_jc] + Σ_numeric |z_ia − x_ja| / range_a,

where range_a is the range of attribute a over x and z together, so every term lies in
[0, 1]. A missing value equals a missing value (distance 0) and differs from any other
(distance 1). The link of z_i is the set of originals at the smallest distance,
T_i = {j : d_ij ≤ min_j d_ij · (1 + 10⁻¹²) + 10⁻¹⁵}; it is correct when i ∈ T_i. As for
DDR, ties are credited 1/|T_i| (``"fractional"``, an intruder choosing among the tied
records at random), only when i is the lowest index in T_i (``"first"``) or only when
T_i = {i} (``"strict"``).

The search is exact. It never finds the nearest original as such: it asks whether any
original is clearly nearer than x_i (then the link fails at once) and, when none is, counts
the originals tied with it. A k-d tree over the originals (:func:`build_mixed_tree`) bounds
the Gower distance from below per node, so the search explores only the ball of radius
d(z_i, x_i); a point's distance is summed term by term in one fixed order and abandoned once
it passes the radius, so every decision is that of a plain scan. The originals may be split
in blocks (:func:`link_against_blocks`): a first pass over the blocks refutes links and finds
each record's nearest distance, a second counts its ties — the same links, whatever the
blocks, which is how partitioned tables are linked out of core.

The exact joins (:mod:`ppdm.metrics._linkage_exact`) and the compiled search
(:mod:`ppdm.metrics._linkage_search`) live in private modules; their names are importable from here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from ppdm.errors import MeasureNotApplicable, ParameterError, SchemaError
from ppdm.metrics._common import mixed_attributes, wilson_interval
from ppdm.metrics._linkage_exact import (  # noqa: F401  (re-exported: the public path stays this module)
    VERBATIM_OVERLAP,
    ExactJoin,
    _numeric_dtype,
    _prefix_hashes,
    _value_hashes,
    exact_join,
    join_against_parts,
    join_block,
    join_columns_parts,
    join_finish,
    verbatim_columns,
)
from ppdm.metrics._linkage_search import (  # noqa: F401  (re-exported: the public path stays this module)
    LEAF_BUDGET_FRACTION,
    LEAF_SIZE,
    TIE_ABS_TOL,
    TIE_REL_TOL,
    _Block,
    _gower,
    _group_columns,
    _group_keys,
    _mixed_bound,
    _mixed_scan_one,
    _mixed_search_one,
    _own_distances,
    build_mixed_tree,
    link_against_blocks,
    mixed_block_search,
    own_distances,
)
from ppdm.metrics._records import RecordDetailMixin, record_field
from ppdm.metrics.base import SYNTHETIC_NOTE, EvaluationContext, register_measure
from ppdm.parallel import chunks_for


@dataclass
class LinkageResult(RecordDetailMixin):
    """Share of released records the maximum-knowledge intruder links to their own original: by
    an exact join on the columns z seems to keep verbatim, else as their nearest original (Gower
    distance on numeric and categorical attributes); lower is better. ``lower_bound`` is set when
    the value only bounds the risk from below (no pairing) and says what would settle it."""

    linked: float = 0.0
    n: int = 0
    tied: int = 0  # records linked to their own original and to others at the same distance
    exact: int = 0  # records identical to their own original on every linking attribute
    numeric: list[str] = field(default_factory=list)
    categorical: list[str] = field(default_factory=list)
    ties: str = "fractional"
    paired: bool = True  # own originals known from the pairing (False: verbatim copies only)
    sample_size: int | None = None  # released records linked when sampled (each against all of x)
    population: int | None = None
    confidence: float = 0.95
    ci_low: float = float("nan")  # Wilson interval when sampled, missing when exact
    ci_high: float = float("nan")
    exact_join_linked: int = 0  # records the exact join tied to one original (right or wrong)
    exact_join_correct: int | None = None  # of them, linked to their own original (paired only)
    exact_join_columns: list[str] = field(default_factory=list)  # the columns joined on (K), most identifying first
    joined_on: str = ""  # the same names, comma-joined (what a report's details can carry)
    lower_bound: str | None = None  # when the value only bounds the risk from below: what would settle it
    not_judged: str = ""  # why a verdict does not hold the release to this measure (a synthetic release)
    credit: np.ndarray | None = record_field()
    tie_count: np.ndarray | None = record_field()


#: what settles a linkage measured without a pairing
UNPAIRED_LOWER_BOUND = "the release's private log (--private) pairs z with x and gives the exact linkage"


def numeric_scales(parts: list[tuple[pd.DataFrame, str]], numeric: list[str]) -> np.ndarray:
    """1/range of every numeric attribute over the tables given (0 for a constant attribute, which
    tells nothing apart); refuses a non-numeric or infinite column."""
    out = np.zeros(len(numeric))
    for a, c in enumerate(numeric):
        lo, hi = np.inf, -np.inf
        for df, label in parts:
            s = df[c]
            if not pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
                raise SchemaError(f"record linkage: numeric column {c!r} of the {label} table is not numeric "
                                  f"(dtype {s.dtype})")
            v = s.to_numpy(dtype=float, na_value=np.nan)
            if np.isinf(v).any():
                raise SchemaError(f"record linkage: numeric column {c!r} holds an infinite value")
            v = v[~np.isnan(v)]
            if v.size:
                lo, hi = min(lo, float(v.min())), max(hi, float(v.max()))
        rng = hi - lo if hi >= lo else 0.0
        out[a] = 1.0 / rng if rng > 0 else 0.0
    return out


def encode_part(df: pd.DataFrame, numeric: list[str], scales: np.ndarray, categorical: list[str],
                categories: list[pd.Index]) -> tuple[np.ndarray, np.ndarray]:
    """A table's linking attributes as the search reads them: numeric values times their scale
    (NaN for missing) and categorical codes in ``categories`` (a missing value has the code after
    the last, so it equals a missing value and differs from every value)."""
    xn = np.empty((len(df), len(numeric)))
    for a, c in enumerate(numeric):
        xn[:, a] = df[c].to_numpy(dtype=float, na_value=np.nan) * scales[a]
    xc = np.empty((len(df), len(categorical)), dtype=np.int64)
    for a, c in enumerate(categorical):
        v = df[c]
        codes = np.asarray(categories[a].get_indexer(v.astype(object).where(v.notna(), None)), dtype=np.int64)  # type: ignore[arg-type]  # pandas-stubs: get_indexer takes any array-like at run time
        codes[v.isna().to_numpy()] = len(categories[a])
        xc[:, a] = codes
    return np.ascontiguousarray(xn), np.ascontiguousarray(xc)


def _prepare(
    x: pd.DataFrame, z: pd.DataFrame, numeric: list[str], categorical: list[str]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    scales = numeric_scales([(x, "original"), (z, "released")], numeric)
    cats = [pd.Index(pd.unique(pd.concat([x[c], z[c]], ignore_index=True).dropna().astype(object)), dtype=object)
            for c in categorical]
    xn, xc = encode_part(x, numeric, scales, categorical, cats)
    zn, zc = encode_part(z, numeric, scales, categorical, cats)
    return xn, xc, zn, zc


def credits(own: np.ndarray, count: np.ndarray, first: np.ndarray, mine: np.ndarray, ties: str) -> np.ndarray:
    """Credit of each released record by the tie rule (``count``/``first`` over T including the own)."""
    if ties == "fractional":
        return np.where(own, 1.0 / np.maximum(count, 1), 0.0)
    if ties == "first":
        return (own & (first == mine)).astype(float)
    return (own & (count == 1)).astype(float)


def _check_ties(ties: str) -> None:
    if ties not in ("fractional", "first", "strict"):
        raise ParameterError(f"record linkage ties must be 'fractional', 'first' or 'strict', got {ties!r}")


def record_linkage(
    x: pd.DataFrame,
    z: pd.DataFrame,
    numeric: list[str] | None = None,
    categorical: list[str] | None = None,
    *,
    ties: Literal["fractional", "first", "strict"] = "fractional",
    paired: bool = True,
    sample: int | None = None,
    random_state: int | None = 0,
    confidence: float = 0.95,
    exact_joins: bool = True,
) -> LinkageResult:
    """Record linkage of z to x by the maximum-knowledge intruder: exact joins, then distance.

    The intruder holds the original records themselves and knows every attribute z shares
    with x; ``numeric``/``categorical`` name those linking attributes (default: numeric
    dtypes of x are numeric, the rest categorical). ``value`` is the share of released
    records correctly linked to their own original (row i of z masks row i of x, as every
    ppdm technique keeps rows in order). Each record is linked in two stages, and its credit
    is the larger of the two:

    1. exact joins (:func:`exact_join`, unless ``exact_joins=False``): a record equal to
       exactly one original on its longest matching prefix of the columns z appears to keep
       verbatim is linked to it, credit 1 when that original is its own;
    2. the rest are linked by the nearest Gower distance with the tie rules of the module
       docstring (credit 1, 1/|T| or 0).

    Per-record credit and tie counts stay on the result. ``sample=s`` links s released
    records drawn at random (seed ``random_state``), each against every original, and gives
    a Wilson ``confidence`` interval.

    ``paired=False`` (a release whose rows are not in x's order and whose pairing is not
    given) cannot tell whether a link is right. It credits a released record that is a
    verbatim copy of an original (equal on every column both tables have) 1/|T| for the
    originals it cannot be told from on the linking attributes. The exact joins are made and
    counted (``exact_join_linked``) but not credited: a column shuffled among the records keeps
    its values, looks verbatim and joins a record to the wrong person (on adult with every
    column shuffled on its own, which links nobody, 62 % of the records are tied to one
    original). So the value is a lower bound of the risk, and the result's ``lower_bound``
    says what would settle it (a verdict never lets it meet a threshold).
    """
    _check_ties(ties)
    numeric, categorical = mixed_attributes(x, z, numeric, categorical, measure="record linkage", z_label="released")
    if len(x) == 0 or len(z) == 0:
        raise SchemaError("record linkage: the tables have no rows")
    if not paired:
        return _unpaired_linkage(x, z, numeric, categorical, ties, exact_joins)
    if len(x) != len(z):
        # a synthetic release with its own number of records has no record pairs to link
        raise MeasureNotApplicable(f"record linkage compares records one to one, but the original has {len(x)} rows "
                                   f"and the released table {len(z)}")
    xn, xc, zn, zc = _prepare(x, z, numeric, categorical)
    n = len(z)
    rows = np.arange(n)
    if sample is not None and int(sample) < n:
        rows = np.sort(np.random.default_rng([int(random_state or 0), 17]).choice(n, int(sample), replace=False))
    join = exact_join(x, z, numeric + categorical) if exact_joins else None
    right = np.zeros(len(rows), dtype=bool) if join is None else join.target[rows] == rows
    own_d = own_distances(zn[rows], zc[rows], xn[rows], xc[rows])
    # records the exact join links to their own original need no distance search
    at = np.flatnonzero(~right)
    own = np.zeros(len(rows), dtype=bool)
    count = np.ones(len(rows), dtype=np.int64)
    first = rows.copy()
    if at.size:
        o, c, f = link_against_blocks(zn, zc, rows[at], own_d[at], np.zeros(at.size, np.int64), rows[at],
                                      [_Block(xn, xc, 0)], 1)
        own[at] = o
        count[at] = np.where(o, c + 1, 0)  # the own original is one of the nearest
        first[at] = np.where(o, np.minimum(f, rows[at]), 0)
    credit = np.maximum(credits(own, count, first, rows, ties), right.astype(float))
    count[right] = 1
    linked = float(credit.sum())
    res = LinkageResult(value=linked / len(rows), linked=linked, n=len(rows),
                        tied=int((own & ~right & (count > 1)).sum()), exact=int((own_d == 0).sum()),
                        numeric=numeric, categorical=categorical, ties=ties, credit=credit, tie_count=count)
    if join is not None:
        res.exact_join_linked = int(join.linked[rows].sum())
        res.exact_join_correct = int(right.sum())
        res.exact_join_columns, res.joined_on = join.columns, ", ".join(join.columns)
    if len(rows) < n:
        res.sample_size, res.population, res.confidence = len(rows), n, confidence
        res.ci_low, res.ci_high = wilson_interval(linked, len(rows), confidence)
    return res


def _unpaired_linkage(x: pd.DataFrame, z: pd.DataFrame, numeric: list[str], categorical: list[str],
                      ties: str, exact_joins: bool = True) -> LinkageResult:
    """Record linkage without a pairing: verbatim copies, each tied with the originals equal to it
    on the linking attributes (see :func:`record_linkage`); a lower bound of the risk. The records
    the exact join ties to a single original are counted (``exact_join_linked``) but not credited:
    only the pairing tells a right join from a column shuffled on its own."""
    cols = [c for c in x.columns if c in z.columns]
    link = numeric + categorical

    def hashes(df: pd.DataFrame, names: list[str]) -> np.ndarray:
        return pd.util.hash_pandas_object(df[names].reset_index(drop=True).astype(object), index=False).to_numpy()

    copy = np.isin(hashes(z, cols), hashes(x, cols))
    hx, hz = hashes(x, link), hashes(z, link)
    uniq, cnt = np.unique(hx, return_counts=True)
    pos = np.searchsorted(uniq, hz)
    pos = np.minimum(pos, len(uniq) - 1)
    count = np.where(copy & (uniq[pos] == hz), cnt[pos], 0)
    credit = np.where(count > 0, 1.0 / np.maximum(count, 1), 0.0) if ties != "strict" else \
        (count == 1).astype(float)
    res = LinkageResult(value=0.0, numeric=numeric, categorical=categorical, ties=ties, paired=False, n=len(z),
                        tied=int((count > 1).sum()), exact=int(copy.sum()), lower_bound=UNPAIRED_LOWER_BOUND)
    if exact_joins:
        # reported, not credited: without the pairing a join tied to one original may be the wrong
        # person (columns shuffled one by one keep their values), so crediting it would overstate
        # the risk of a safe release and the value would no longer be a lower bound
        join = exact_join(x, z, link)
        res.exact_join_linked = int(join.linked.sum())
        res.exact_join_columns, res.joined_on = join.columns, ", ".join(join.columns)
    res.linked = float(credit.sum())
    res.value = res.linked / len(z)
    res.credit, res.tie_count = credit, count
    return res


#: records above which a partitioned evaluation links a sample of released records (against all of x)
EXACT_ROWS = 200_000


@register_measure("record_linkage", kind="risk", needs_class=False, default=True, direction="lower", value_range=(0.0, 1.0),
                  threshold=0.05, out_of_core=True, options=("ties", "sample", "exact_rows", "columns"),
                  meaning="The share of released records an intruder who holds the original records links to the right "
                  "person, joining exactly on the columns the release keeps verbatim first, then by the nearest Gower "
                  "distance on every attribute the release shares with the originals; 0 is best.",
                  description="record linkage by the intruder who holds the originals: exact joins, then the nearest "
                              "Gower distance on every shared attribute; share of released records linked to their "
                              "own original")
def _record_linkage_measure(ctx: EvaluationContext) -> LinkageResult:
    """Models the maximum-knowledge intruder: one who holds x's records and so knows every
    attribute z shares with x. It links on all of the schema's attributes z has, the class
    included (it is released too; identifiers never are), whatever quasi-identifiers are
    declared — they say what an outsider may know, not what this intruder knows. The option
    ``record_linkage.columns=a,b`` narrows the linking attributes explicitly."""
    sch = ctx.schema
    nested = ctx.options.get("record_linkage")

    def opt(name: str, default: Any) -> Any:
        if isinstance(nested, dict) and name in nested:
            return nested[name]
        return ctx.options.get(f"record_linkage.{name}", default)

    cols = linking_columns(ctx, opt("columns", None))
    ties = opt("ties", ctx.options.get("ties", "fractional"))
    sample = opt("sample", None)
    numeric = [c for c in cols if c in sch.numeric or (c == sch.class_column and _numeric_dtype(ctx.x.dtypes[c]))]
    categorical = [c for c in cols if c not in numeric]
    from ppdm.metrics._common import is_dask

    if is_dask(ctx.x) or is_dask(ctx.z):
        _check_ties(ties)
        return record_linkage_parts(ctx.x, ctx.z, numeric, categorical, ties=ties,
                                    sample=None if sample is None else int(sample),
                                    default_sample=int(ctx.cache.get("sample_rows", 20_000)),
                                    exact_rows=int(opt("exact_rows", EXACT_ROWS)),
                                    random_state=ctx.random_state)
    res = record_linkage(ctx.x, ctx.z, numeric, categorical, ties=ties, paired=ctx.is_paired,
                         sample=None if sample is None else int(sample), random_state=ctx.random_state)
    if ctx.synthetic:
        res.lower_bound, res.not_judged = None, SYNTHETIC_NOTE
    return res


def linking_columns(ctx: EvaluationContext, columns: Any = None) -> list[str]:
    """The attributes the maximum-knowledge intruder links on: every schema attribute and the
    class column that both x and z hold, in schema order; or ``columns`` (a list or a
    comma-separated string), checked to be such attributes."""
    sch = ctx.schema
    shared = [c for c in sch.columns if c in ctx.z.columns and c in ctx.x.columns]
    if columns is None:
        if not shared:
            raise MeasureNotApplicable("record linkage: the released table holds none of the schema's attributes")
        return shared
    if not isinstance(columns, (list, tuple)):
        columns = [c.strip() for c in str(columns).replace(";", ",").split(",") if c.strip()]
    columns = [str(c) for c in columns]
    if not columns:
        raise ParameterError("record_linkage.columns names no column")
    bad = [c for c in columns if c not in shared]
    if bad:
        raise ParameterError(f"record_linkage.columns: {', '.join(map(repr, bad))} not among the attributes both "
                             f"tables hold ({', '.join(shared)})")
    if len(set(columns)) != len(columns):
        raise ParameterError("record_linkage.columns names a column twice")
    return columns


__all__ = ["EXACT_ROWS", "VERBATIM_OVERLAP", "ExactJoin", "LinkageResult", "encode_part", "exact_join",
           "link_against_blocks", "linking_columns", "numeric_scales", "record_linkage", "verbatim_columns"]


# ------------------------------------------------------------------ record linkage (mixed)
def record_linkage_parts(x: Any, z: Any, numeric: list[str], categorical: list[str], *, ties: str,
                         sample: int | None, default_sample: int, exact_rows: int,
                         random_state: int | None, exact_joins: bool = True) -> Any:
    """:func:`ppdm.metrics.linkage.record_linkage` of partitioned tables, block by block.

    The exact joins come first: the join columns from Dask value counts
    (:func:`join_columns_parts`), then each released record's prefix matches counted against
    every block of x (:func:`join_against_parts`); the records they do not link to their own
    original are then linked by distance.
    Every released record is linked against every block of originals (a k-d tree per block,
    :func:`ppdm.metrics.linkage.link_against_blocks`): the same links as in memory, whatever
    the partitions. Up to ``exact_rows`` records (or with ``sample=0``) every released record
    is linked — exact; above it (or with ``sample=s``) a uniform sample of released records
    is linked, each against ALL originals, and a Wilson interval is given. A task holds one
    block of z and one block of x at a time, reading each block of x three times (once for
    the exact joins).
    """
    from ppdm.data.partitions import read_partition, run_partitions, sample_counts
    from ppdm.metrics._common import mixed_attributes
    from ppdm.metrics._dask import check_aligned, pair_partitions

    mixed_attributes(x._meta, z._meta, numeric, categorical, measure="record linkage", z_label="released")
    lengths = check_aligned(x, z, "record linkage")
    n = int(sum(lengths))
    if n == 0:
        raise SchemaError("record linkage: the tables have no rows")
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    nparts = x.npartitions
    cols = list(numeric) + list(categorical)

    def scan(xi: pd.DataFrame, zi: pd.DataFrame) -> tuple[list[tuple[float, float]], list[set]]:

        ranges = []
        for c in numeric:
            numeric_scales([(xi, "original"), (zi, "released")], [c])  # refuses non-numeric or infinite values
            v = np.concatenate([xi[c].to_numpy(dtype=float, na_value=np.nan), zi[c].to_numpy(dtype=float,
                                                                                        na_value=np.nan)])
            v = v[~np.isnan(v)]
            ranges.append((float(v.min()), float(v.max())) if v.size else (np.inf, -np.inf))
        values = [set(pd.unique(pd.concat([xi[c], zi[c]], ignore_index=True).dropna().astype(object)))
                  for c in categorical]
        return ranges, values

    parts = pair_partitions(x[cols], z[cols], scan, what="record linkage")
    scales = np.zeros(len(numeric))
    for a in range(len(numeric)):
        lo = min(p[0][a][0] for p in parts)
        hi = max(p[0][a][1] for p in parts)
        rng = hi - lo if hi >= lo else 0.0
        scales[a] = 1.0 / rng if rng > 0 else 0.0
    categories = [pd.Index(sorted(set().union(*[p[1][a] for p in parts]), key=repr), dtype=object)
                  for a in range(len(categorical))]

    if sample is not None and sample <= 0:
        k = n
    elif sample is not None:
        k = min(int(sample), n)
    else:
        k = n if n <= exact_rows else min(int(default_sample), n)
    rng = np.random.default_rng([int(random_state or 0), 19])
    counts = np.asarray(lengths) if k >= n else sample_counts(lengths, k, rng)
    picks = [np.arange(lengths[i]) if k >= n else
             np.sort(np.random.default_rng([int(random_state or 0), 19, i]).choice(lengths[i], int(counts[i]),
                                                                                   replace=False))
             for i in range(nparts)]

    def block(b: int) -> Any:
        xn, xc = encode_part(read_partition(x, b)[cols], numeric, scales, categorical, categories)
        return _Block(xn, xc, int(offsets[b]))

    join_cols = join_columns_parts(x, z, cols) if exact_joins else []

    def joined(res: LinkageResult, linked: int, correct: int) -> LinkageResult:
        if exact_joins:
            res.exact_join_columns, res.exact_join_linked, res.exact_join_correct = join_cols, linked, correct
            res.joined_on = ", ".join(join_cols)
        return res

    if k < n:
        res, jl, jc = _sampled_linkage(x, z, cols, picks, offsets, block, numeric, scales, categorical, categories,
                                       ties, n, join_cols)
        return joined(res, jl, jc)

    def task(j: int) -> tuple[float, int, int, int, int, int]:
        """(credit summed, records tied, records equal to their own original, records linked,
        records joined, rightly) of block j."""
        rows = picks[j]
        if rows.size == 0:
            return 0.0, 0, 0, 0, 0, 0
        xj = read_partition(x, j)[cols].iloc[rows]
        zj = read_partition(z, j)[cols].iloc[rows]
        xn, xc = encode_part(xj, numeric, scales, categorical, categories)
        zn, zc = encode_part(zj, numeric, scales, categorical, categories)
        d_own = own_distances(zn, zc, xn, xc)
        mine = offsets[j] + rows
        count, target = join_against_parts(x, zj[join_cols], join_cols, offsets)
        ok = target == mine
        at = np.flatnonzero(~ok)  # records the exact join links to their own original need no search
        own = np.zeros(len(rows), dtype=bool)
        cnt = np.ones(len(rows), dtype=np.int64)
        first = mine.copy()
        if at.size:
            o, c, f = link_against_blocks(zn, zc, at, d_own[at], np.full(at.size, j, np.int64), rows[at],
                                          block, nparts)
            own[at] = o
            cnt[at] = np.where(o, c + 1, 0)
            first[at] = np.where(o, np.minimum(f, mine[at]), 0)
        credit = np.maximum(credits(own, cnt, first, mine, ties), ok.astype(float))
        return (float(credit.sum()), int((own & ~ok & (cnt > 1)).sum()), int((d_own == 0).sum()), len(rows),
                int((count == 1).sum()), int(ok.sum()))

    out = run_partitions(task, nparts, name="ppdm-record-linkage")
    linked = float(sum(o[0] for o in out))
    m = int(sum(o[3] for o in out))
    return joined(LinkageResult(value=linked / m, linked=linked, n=m, tied=int(sum(o[1] for o in out)),
                                exact=int(sum(o[2] for o in out)), numeric=list(numeric),
                                categorical=list(categorical), ties=ties),
                  int(sum(o[4] for o in out)), int(sum(o[5] for o in out)))


def _sampled_linkage(x: Any, z: Any, cols: list[str], picks: list[np.ndarray], offsets: np.ndarray, block: Any,
                     numeric: list[str], scales: np.ndarray, categorical: list[str], categories: list[Any],
                     ties: str, n: int, join_cols: list[str]) -> tuple[Any, int, int]:
    """Record linkage of a sample of released records, each against every block of originals: the
    sample and its own originals are gathered (small), then each block of x is read and searched
    once per pass — 2 × partitions block reads in all, 3 × with exact joins on ``join_cols``
    (a sampled record they link to its own original is credited 1 and not searched). Returns
    the result, the records joined and those joined rightly."""
    from ppdm.data.partitions import read_partition, run_partitions

    nparts = len(picks)

    def gather(i: int) -> tuple[pd.DataFrame, pd.DataFrame]:
        rows = picks[i]
        return read_partition(x, i)[cols].iloc[rows], read_partition(z, i)[cols].iloc[rows]

    got = run_partitions(gather, nparts, name="ppdm-linkage-sample")
    xs = pd.concat([g[0] for g in got], ignore_index=True)
    zs = pd.concat([g[1] for g in got], ignore_index=True)
    own_block = np.concatenate([np.full(len(picks[i]), i, np.int64) for i in range(nparts)])
    own_local = np.concatenate(picks).astype(np.int64)
    mine = offsets[own_block] + own_local
    xn, xc = encode_part(xs, numeric, scales, categorical, categories)
    zn, zc = encode_part(zs, numeric, scales, categorical, categories)
    d_own = own_distances(zn, zc, xn, xc)
    keys = _group_keys(zn, zc)
    m = len(zs)
    zh = _prefix_hashes(_value_hashes(zs, join_cols))

    def join(b: int) -> tuple[np.ndarray, np.ndarray]:
        cnt = np.zeros((m, len(join_cols)), np.int64)
        who = np.full((m, len(join_cols)), np.iinfo(np.int64).max, np.int64)
        if join_cols and m:
            join_block(zh, read_partition(x, b)[join_cols], join_cols, int(offsets[b]), cnt, who)
        return cnt, who

    pj = run_partitions(join, nparts, name="ppdm-linkage-join") if join_cols else []
    jcount, jtarget = join_finish(np.sum([c for c, _ in pj], axis=0), np.min([w for _, w in pj], axis=0)) \
        if join_cols else (np.zeros(m, np.int64), np.full(m, -1, np.int64))
    right = jtarget == mine
    at = np.flatnonzero(~right)
    chunks = chunks_for(m)

    def refute(b: int) -> tuple[np.ndarray, np.ndarray]:
        blk = block(b)
        st, bd = np.ones(m, np.int64), np.full(m, np.inf)
        if len(blk.xn) == 0 or at.size == 0:
            return st, bd
        oj = np.where(own_block[at] == b, own_local[at], -1)
        gz = np.full(m, -1, np.int64)
        gz[at] = blk.group_of(keys.iloc[at])
        st[at], bd[at], _ = mixed_block_search(zn, zc, gz, at, d_own[at], oj, 1, d_own[at], blk.xn, blk.xc,
                                               blk.tree, TIE_REL_TOL, TIE_ABS_TOL, blk.budget, blk.offset, chunks)
        return st, bd

    p1 = run_partitions(refute, nparts, name="ppdm-linkage-refute")
    own = np.all([st != 0 for st, _ in p1], axis=0) & ~right
    best = np.minimum(d_own, np.min([np.where(st == 1, bd, np.inf) for st, bd in p1], axis=0))
    lim = best * (1.0 + TIE_REL_TOL) + TIE_ABS_TOL
    sel = np.flatnonzero(own)

    def count(b: int) -> tuple[np.ndarray, np.ndarray]:
        blk = block(b)
        if len(blk.xn) == 0 or sel.size == 0:
            return np.zeros(sel.size, np.int64), np.full(sel.size, np.iinfo(np.int64).max)
        gz = np.full(m, -1, np.int64)
        gz[sel] = blk.group_of(keys.iloc[sel])
        oj = np.where(own_block[sel] == b, own_local[sel], -1)
        cnt, _, f = mixed_block_search(zn, zc, gz, sel, d_own[sel], oj, 2, lim[sel], blk.xn, blk.xc, blk.tree,
                                       TIE_REL_TOL, TIE_ABS_TOL, blk.budget, blk.offset, chunks)
        return cnt, f

    p2 = run_partitions(count, nparts, name="ppdm-linkage-ties")
    cnt = np.zeros(m, np.int64)
    first = np.zeros(m, np.int64)
    if sel.size:
        cnt[sel] = 1 + np.sum([c for c, _ in p2], axis=0)
        first[sel] = np.minimum(mine[sel], np.min([f for _, f in p2], axis=0))
    credit = np.maximum(credits(own, cnt, first, mine, ties), right.astype(float))
    tied = int((cnt > 1).sum())
    cnt[right] = 1
    linked = float(credit.sum())
    res = LinkageResult(value=linked / m, linked=linked, n=m, tied=tied, exact=int((d_own == 0).sum()),
                        numeric=list(numeric), categorical=list(categorical), ties=ties, credit=credit, tie_count=cnt)
    res.sample_size, res.population = m, n
    res.ci_low, res.ci_high = wilson_interval(linked, m, res.confidence)
    return res, int((jcount == 1).sum()), int(right.sum())
