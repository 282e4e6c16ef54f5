"""Microaggregation: partition records into groups of at least k and replace them by group means.

Paper 003 §3.1 builds rounding sets from three univariate microaggregation methods whose
group centroids become the rounding points:

* **MDAV** (maximum distance to average vector, fixed group size k): :func:`mdav_1d`, an
  O(n log n) univariate path, and :func:`mdav`, the general multivariate algorithm
  (O(n²·p/k) time at worst, O(n·p) memory) behind the :class:`MDAV` technique;
  :func:`mdav_blocked`, its large-n form, runs it inside compact blocks of the table.
* **V-MDAV** (variable group sizes k…2k−1, Solanas et al. 2006): :func:`vmdav_1d`.
* **Optimal univariate microaggregation** (Hansen & Mukherjee 2003, "OMA" in paper 003):
  :func:`optimal_1d`, the shortest path over the sorted values solved by dynamic programming
  in O(n·k) time and O(n) memory.

Every function returns one integer group label per record. Univariate labels number the
groups in ascending order of value, so groups are contiguous runs of the sorted values.

The compiled sorted-order kernels of the three univariate methods live in
:mod:`ppdm.anonymize._microaggregation_univariate`; the registered :class:`MDAV` stays here,
whose class path every release's provenance records, with ``AUTO_GLOBAL_MAX_ROWS``, which
both the technique and the tests read here.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import pandas as pd

from ppdm.anonymize._domain import DomainGuard, technique_name
from ppdm.anonymize._mdav import CellTree, group_means, kd_blocks, labels_in_blocks, mdav_labels
from ppdm.anonymize._microaggregation_univariate import (
    _labels_from_sorted,
    _mdav_sorted,
    _optimal_sorted,
    _relabel_sorted,
    _split_best,
    _vmdav_sorted,
)
from ppdm.anonymize.base import Technique, check_column_names, check_whole
from ppdm.anonymize.registry import register
from ppdm.anonymize.search_space import Choice, Integer, SearchSpace
from ppdm.data.schema import Schema
from ppdm.errors import ParameterError
from ppdm.utils import check_choice, check_k, finite_vector

Scaling = Literal["standard", "sdcmicro", "none"]
Strategy = Literal["auto", "global", "blocked"]
SCALINGS: tuple[Scaling, ...] = ("standard", "sdcmicro", "none")
#: attributes whose largest |value| lies outside [2^-SAFE_EXPONENT, 2^SAFE_EXPONENT] are grouped in a
#: space scaled by a power of two (squares and sums of squares of n records then fit in a double)
SAFE_EXPONENT = 256

#: ``strategy="auto"`` runs global MDAV up to this many records and blocked MDAV above
AUTO_GLOBAL_MAX_ROWS = 100_000
#: records of the fit table used to learn the ordering of a Dask transform (evenly spaced rows)
CELL_SAMPLE_ROWS = 100_000


# ----------------------------------------------------------------------------- helpers
def _as_1d(x: object) -> np.ndarray:
    return finite_vector(x, task="microaggregate")


# ------------------------------------------------------------------ univariate MDAV
def mdav_1d(x: object, k: int) -> np.ndarray:
    """Univariate MDAV in O(n log n) (paper 003 §3.1, fixed group size k).

    In one dimension the record farthest from the centroid of the remaining records is an
    extreme, the record farthest from it is the opposite extreme, and the k−1 records nearest
    to an extreme are its neighbours in sorted order. So one stable sort and two pointers give
    the groups of the general algorithm: k-groups peeled from both ends while ≥ 3k records
    remain, then one k-group from the end farther from the remaining mean when 2k…3k−1 remain
    (a tie goes to the end holding the lowest original index), and the rest as the last group.
    """
    v = _as_1d(x)
    k = check_k(k, v.size)
    order = np.argsort(v, kind="stable")
    return _labels_from_sorted(order, _mdav_sorted(v[order], order.astype(np.int64), k))


# -------------------------------------------------------------------- univariate V-MDAV
def vmdav_1d(x: object, k: int, gamma: float = 0.2) -> np.ndarray:
    """Univariate V-MDAV (Solanas et al. 2006; paper 003 §3.1, Algorithm 2), groups of k…2k−1.

    Over the sorted values the unassigned records always form one contiguous slice. The
    record e farther from the global mean of its two ends starts a group with its k−1
    neighbours; the group then grows by the next unassigned value while its distance to the
    group (d_in) is below ``gamma`` times its distance to the next unassigned value (d_out),
    up to 2k−1 members. Fewer than k records left at the end join the group with the nearest
    centroid; a group pushed beyond 2k−1 members by them is split at its least-SSE cut into
    two groups of k…2k−1, so every group keeps the sizes the paper states.
    """
    v = _as_1d(x)
    k = check_k(k, v.size)
    if not np.isfinite(gamma) or gamma < 0:
        raise ParameterError(f"gamma must be a non-negative number, got {gamma!r}")
    order = np.argsort(v, kind="stable")
    s = v[order]
    grp = _vmdav_sorted(s, k, float(gamma))
    left = np.flatnonzero(grp < 0)
    if left.size:
        # the (< k) leftovers form one sorted slice between the groups built from the low end
        # and those from the high end; the nearest centroid is that of an adjacent group
        a, b = int(left[0]), int(left[-1])
        near = [g for g in (grp[a - 1] if a > 0 else -1, grp[b + 1] if b + 1 < s.size else -1) if g >= 0]
        cents = {g: s[grp == g].mean() for g in near}
        for i in left:  # equal distance -> the lower group, so runs stay contiguous
            grp[i] = min(near, key=lambda g: (abs(cents[g] - s[i]), cents[g]))
        # split any run pushed over 2k-1 members
        grp = _relabel_sorted(grp)
        out = grp.copy()
        bounds = np.flatnonzero(np.r_[True, grp[1:] != grp[:-1], True])
        nxt = 0
        for a, b in zip(bounds[:-1], bounds[1:], strict=True):
            if b - a > 2 * k - 1:
                t = _split_best(s[a:b], k)
                out[a : a + t] = nxt
                out[a + t : b] = nxt + 1
                nxt += 2
            else:
                out[a:b] = nxt
                nxt += 1
        grp = out
    else:
        grp = _relabel_sorted(grp)
    return _labels_from_sorted(order, grp)


# ------------------------------------------------------------- optimal univariate (OMA)
def optimal_1d(x: object, k: int) -> np.ndarray:
    """Optimal univariate microaggregation (Hansen & Mukherjee 2003; OMA in paper 003 §3.1).

    The optimal k-partition of univariate data consists of groups that are contiguous in
    sorted order with k…2k−1 members; it is the shortest path from node 0 to node n of the
    graph whose arc (i, j), i+k ≤ j ≤ i+2k−1, costs the SSE of the sorted values i+1…j. The
    graph is acyclic in index order, so a forward recursion over j (each step trying the
    ≤ k admissible last groups) finds it in O(n·k) time with O(n) memory. Among equal-cost
    paths the one whose last group is largest wins.
    """
    v = _as_1d(x)
    k = check_k(k, v.size)
    order = np.argsort(v, kind="stable")
    return _labels_from_sorted(order, _optimal_sorted(v[order], k))


# ------------------------------------------------------------------ multivariate MDAV
def check_scaling(scaling: object) -> Scaling:
    """``scaling`` checked against :data:`SCALINGS` (``None`` reads as ``"none"``)."""
    return check_choice(scaling, SCALINGS, "scaling")


def grouping_scale(X: np.ndarray, scaling: Scaling) -> np.ndarray:
    """Per-attribute powers of two that bring huge or tiny attributes near 1 while groups are
    formed; all ones for ordinary data (every attribute's largest |value| within
    [2^-:data:`SAFE_EXPONENT`, 2^:data:`SAFE_EXPONENT`]).

    Squared distances and variances of values near 10²⁰⁰ overflow (near 10⁻²⁰⁰ they underflow),
    which made every distance infinite. Multiplying by a power of two is exact and MDAV's groups
    do not depend on it: with ``"standard"`` and ``"sdcmicro"`` every attribute is divided by
    its own spread anyway, so each is scaled on its own; with ``"none"`` (raw Euclidean
    distance) all attributes share one factor, so their relative weights stay as they are.
    """
    scaling = check_scaling(scaling)
    p = X.shape[1]
    with np.errstate(invalid="ignore"):
        top = np.nanmax(np.abs(X), axis=0) if X.shape[0] else np.zeros(p)
    top = np.where(np.isfinite(top), top, 0.0)
    exp = np.frexp(top)[1]  # top = m·2^exp with 0.5 ≤ m < 1
    odd = (top > 2.0**SAFE_EXPONENT) | ((top > 0) & (top < 2.0**-SAFE_EXPONENT))
    if not odd.any():
        return np.ones(p)
    if scaling == "none":
        big = float(top.max())
        if 2.0**-SAFE_EXPONENT <= big <= 2.0**SAFE_EXPONENT:
            return np.ones(p)  # only small attributes: beside the others they weigh nothing anyway
        return np.full(p, np.ldexp(1.0, -int(exp.max())))
    return np.where(odd, np.ldexp(1.0, -exp), 1.0)


def mdav_weights(X: np.ndarray, scaling: Scaling) -> np.ndarray:
    """Per-attribute weights of the squared distance.

    ``"standard"``: 1/sample variance (distances between z-scored records);
    ``"sdcmicro"``: 1/population variance computed as mean(x²) − mean(x)², sdcMicro's convention;
    ``"none"`` (or ``None``): 1 (raw Euclidean distance). A constant attribute gets weight 1.
    An attribute whose variance or weight does not fit in double precision is refused, naming
    it: scale it by :func:`grouping_scale` first (:func:`mdav` and the technique do).
    """
    scaling = check_scaling(scaling)
    n, p = X.shape
    if scaling == "none":
        return np.ones(p)
    with np.errstate(over="ignore", invalid="ignore"):
        if scaling == "standard":
            var = X.var(axis=0, ddof=1) if n > 1 else np.zeros(p)
        else:
            avr = X.sum(axis=0) / n
            var = (X * X).sum(axis=0) / n - avr * avr
    w = np.ones(p)
    nz = var != 0
    w[nz] = 1.0 / var[nz]
    # overflow (an infinite variance) or underflow (a weight of 0 or ∞); a NaN from missing cells is the caller's
    bad = np.flatnonzero(np.isinf(var) | (nz & np.isfinite(var) & ((w == 0) | np.isinf(w))))
    if bad.size:
        j = int(bad[0])
        raise ParameterError(
            f"attribute {j} holds values up to {float(np.nanmax(np.abs(X[:, j]))):.3g}, too large or too small "
            "for squared distances in double precision; MDAV scales such attributes by a power of two first "
            "(mdav(), the MDAV technique): compute weights on grouping_scale(X)·X"
        )
    return w


def _as_table(X: object) -> np.ndarray:
    A = np.ascontiguousarray(np.asarray(X, dtype=float))
    if A.ndim == 1:
        A = A[:, None]
    if A.ndim != 2 or A.shape[0] == 0 or A.shape[1] == 0:
        raise ParameterError("MDAV needs a non-empty 2-d table of numbers")
    if not np.all(np.isfinite(A)):
        raise ParameterError("MDAV cannot handle NaN or infinite values")
    return A


def _weights(A: np.ndarray, scaling: Scaling, weights: object) -> np.ndarray:
    if weights is None:
        return mdav_weights(A, scaling)
    w = np.ascontiguousarray(np.asarray(weights, dtype=float))
    if w.shape != (A.shape[1],) or not np.all(np.isfinite(w)) or np.any(w <= 0):
        raise ParameterError(f"weights must be {A.shape[1]} positive finite numbers, one per attribute")
    return w


def mdav(X: object, k: int, scaling: Scaling = "standard", *, weights: object = None) -> np.ndarray:
    """Multivariate MDAV microaggregation with fixed group size k (Domingo-Ferrer & Torra).

    While at least 3k records remain: x_r is the record farthest from the centroid of the
    remaining records, x_s the record farthest from x_r; x_r and its k−1 nearest records form
    a group, then x_s and its k−1 nearest among the rest. With 2k…3k−1 left, one group is
    formed around the record farthest from the centroid and the rest is the last group; fewer
    than 2k records form a single group. Distances are weighted squared Euclidean
    (:func:`mdav_weights`, or ``weights`` given explicitly, e.g. those of a whole table when
    ``X`` is one block of it). Ties go to the lowest original index, except that with
    ``scaling="sdcmicro"`` distances are accumulated in single precision and, among equally
    near records, the highest index is taken first, as sdcMicro 5.8.1 does.

    From 5 000 records on, the searches are pruned with exact bounds
    (:mod:`ppdm.anonymize._mdav`): the groups are those of the plain O(n²·p/k) algorithm,
    found in a fraction of its time when there are few attributes (about 1/7 at 10⁵ × 5);
    memory O(n·p), no distance matrix.
    """
    A = _as_table(X)
    k = check_k(k, A.shape[0])
    scaling = check_scaling(scaling)
    if weights is None:
        A = A * grouping_scale(A, scaling)  # exact; the same groups, without overflowing distances
    w = _weights(A, scaling, weights)
    f32 = scaling == "sdcmicro"
    return mdav_labels(A, w, k, f32, f32)


def mdav_blocked(
    X: object, k: int, scaling: Scaling = "standard", block_size: int = 50_000, *, weights: object = None
) -> tuple[np.ndarray, np.ndarray]:
    """MDAV run separately in compact blocks of at most ``block_size`` records: ``(labels, blocks)``.

    The records are cut into ⌈n/block_size⌉ blocks by recursive median splits along the
    attribute of largest weighted variance (:func:`~ppdm.anonymize._mdav.kd_blocks`); each
    block holds more than block_size/2 records (all of them when n ≤ block_size), and MDAV
    groups the records of each block with the weights of the whole table. Groups never cross
    a block, so every group has k…2k−1 records. Time grows linearly with n for a fixed block
    size; the cost in SSE is that of records near a block's border that cannot join
    neighbours across it (docs/rounding.md gives measured ratios to global MDAV).
    """
    A = _as_table(X)
    k = check_k(k, A.shape[0])
    block_size = check_block_size(block_size, k)
    scaling = check_scaling(scaling)
    if weights is None:
        A = A * grouping_scale(A, scaling)
    w = _weights(A, scaling, weights)
    blocks = kd_blocks(A, w, block_size)
    return labels_in_blocks(A, w, k, scaling == "sdcmicro", blocks), blocks


def check_block_size(block_size: object, k: int) -> int:
    """``block_size`` as an int, or :class:`ParameterError` unless it is at least 2k."""
    if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)):
        raise ParameterError(f"block_size must be a whole number, got {block_size!r}")
    if block_size < 2 * k:
        raise ParameterError(
            f"block_size must be at least 2k = {2 * k} so that every block holds k records, got {block_size}"
        )
    return int(block_size)


# ------------------------------------------------------------------------- summaries
def nan_group_means(x: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Mean of the observed (non-NaN) values of 2-d ``x`` per group label 0…g−1, column by
    column; NaN where a group has no observed value."""
    labels = np.asarray(labels)
    g = int(labels.max()) + 1
    cols = []
    for j in range(x.shape[1]):
        obs = ~np.isnan(x[:, j])
        cnt = np.bincount(labels[obs], minlength=g).astype(float)
        tot = np.bincount(labels[obs], weights=x[obs, j], minlength=g)
        with np.errstate(invalid="ignore", divide="ignore"):
            cols.append(np.where(cnt > 0, tot / np.where(cnt > 0, cnt, 1.0), np.nan))
    return np.column_stack(cols)


def sse(x: np.ndarray, labels: np.ndarray) -> float:
    """Within-group sum of squared errors Σ_i ‖x_i − centroid(group(i))‖²."""
    x = np.asarray(x, dtype=float)
    cent = group_means(x, labels)
    return float(((x - cent[labels]) ** 2).sum())


# ------------------------------------------------------------------------- technique
@register("mdav")
class MDAV(Technique):
    """Multivariate MDAV microaggregation: groups of k similar records share their centroid.

    Parameters
    ----------
    columns:
        Numeric attributes aggregated together (default: every numeric attribute; never the class).
    k:
        Minimum group size (every group has k members, the last one of each block k…2k−1).
        The default, 10, makes the release of every shipped table but cmc pass the release gate
        (:func:`ppdm.metrics.release_check.gate`). MDAV leaves categorical attributes as they
        are, so a record unique on them comes out near-verbatim whenever its group is tight:
        on adult k = 3 (sdcMicro's default) leaves 10.4 % of the records near-verbatim and
        unique in x and k = 5 leaves 5.3 %, both refused above 5 %; k = 10, the largest of the
        sizes in common use (3, 5, 10), leaves 2.2 %. Paper 003 groups more records still
        (k ≥ 20 at n = 500, §4.3). cmc, two numeric attributes beside seven categorical ones,
        is refused up to k ≈ 200 (docs/rounding.md, "Default size"). Give ``k=3`` to compare
        with sdcMicro.
    scaling:
        ``"standard"`` (z-scores), ``"sdcmicro"`` (sdcMicro's variance weights and single-precision
        distances, for side-by-side comparison with ``sdcMicro::microaggregation(method="mdav")``)
        or ``"none"``.
    strategy:
        ``"global"``: MDAV over the whole table (:func:`mdav`); ``"blocked"``: MDAV inside compact
        blocks of at most ``block_size`` records (:func:`mdav_blocked`), whose time grows linearly
        with the table; ``"auto"``: global up to ``AUTO_GLOBAL_MAX_ROWS`` (100 000) records,
        blocked above. A Dask table is always transformed in blocks, after a global ordering
        (:meth:`_transform_dask`; docs/rounding.md, "MDAV at scale").
    block_size:
        Most records in a block (at least 2k); blocks hold more than half of it.

    A centroid lies within its members' range, so inside the attribute's domain; the
    centroid of a whole-number attribute (the schema's ``integer``) is rounded to a whole
    number, as integer dtypes always were (sdcMicro releases the fraction).

    Missing values: a missing cell stays missing, as in sdcMicro's microaggregation. For
    forming the groups a missing cell counts as its column's mean (the centre of the
    standardised space, so it pulls the record neither way); a group's centroid is the mean
    of its members' observed values, and only observed cells receive it. Every group still has
    at least k records, but a record's missing cells set it apart from its group on those
    attributes.

    MDAV draws no random numbers: ``random_state`` has no effect and the output is a function of
    the table. After a pandas ``transform`` the groups are in ``groups_`` (one label per row), their
    centroids in ``centroids_`` (a DataFrame, one row per group), the block of every row in
    ``blocks_`` (all 0 for global MDAV) and the strategy used in ``strategy_``.
    """

    handles_missing = True
    missing_policy = "kept"
    #: group size k, and which attributes: all numeric ones, or only those on which records have
    #: values of their own (``"unique-valued"``, see ``ppdm.anonymize.search_space.COLUMN_SETS``);
    #: MDAV draws no random numbers, so the same setting gives the same release
    search_space = SearchSpace({"k": Integer(2, 100, log=True, at_most_share=0.5),
                                "columns": Choice((None, "unique-valued"))}, needs=("numeric",),
                               deterministic=True, value_needs={"columns": {"unique-valued": "unique-valued"}})
    #: larger groups: each released value is the mean of more records
    strength_param = ("k", "increasing", None)

    def __init__(
        self,
        class_column: str | None = None,
        schema: Schema | dict | None = None,
        random_state: object = None,
        columns: list[str] | None = None,
        k: int = 10,
        scaling: Scaling = "standard",
        strategy: Strategy = "auto",
        block_size: int = 50_000,
    ) -> None:
        super().__init__(class_column, schema, random_state)
        # scikit-learn's contract: __init__ stores each parameter as given (get_params, clone), so it is written out
        self.columns = columns
        self.k = k
        self.scaling = scaling
        self.strategy = strategy
        self.block_size = block_size

    def _validate_params(self) -> None:
        check_whole("k", self.k)
        check_scaling(self.scaling)
        check_choice(self.strategy, ("auto", "global", "blocked"), "strategy")
        check_block_size(self.block_size, int(self.k))

    def _fit(self, df: pd.DataFrame, schema: Schema, rng: np.random.Generator) -> None:
        self.columns_ = resolve_columns(self.columns, schema, df)
        check_k(self.k, len(df))
        # the ordering a Dask transform sorts records by, learnt on (evenly spaced rows of) this table
        X = df[self.columns_].to_numpy(dtype=float)
        if len(X) > CELL_SAMPLE_ROWS:
            X = X[np.linspace(0, len(X) - 1, CELL_SAMPLE_ROWS).round().astype(np.int64)]
        # the powers of two the Dask transform groups in (all 1 for ordinary data)
        self.scale_ = grouping_scale(X, self.scaling)
        Xs = X * self.scale_
        self.cells_ = CellTree(Xs, mdav_weights(Xs, self.scaling))

    def _strategy_for(self, n: int) -> str:
        if self.strategy == "auto":
            return "global" if n <= AUTO_GLOBAL_MAX_ROWS else "blocked"
        return str(self.strategy)

    def _transform(self, df: pd.DataFrame, schema: Schema, rng: np.random.Generator) -> pd.DataFrame:
        X = df[self.columns_].to_numpy(dtype=float)
        miss = np.isnan(X)
        if miss.any():
            # a missing cell sits at its column's mean while the groups are formed
            cnt = (~miss).sum(axis=0)
            mu = np.where(cnt > 0, np.where(miss, 0.0, X).sum(axis=0) / np.maximum(cnt, 1), 0.0)
            G = np.where(miss, mu, X)
        else:
            G = X
        k = check_k(self.k, len(df))
        strategy = self._strategy_for(len(X))
        scaling = check_scaling(self.scaling)
        # huge or tiny attributes are grouped, and averaged, scaled by a power of two (exact)
        S = grouping_scale(G, scaling)
        G = G * S
        w = mdav_weights(G, scaling)
        if strategy == "global":
            labels = mdav(G, k, scaling, weights=w)
            blocks = np.zeros(len(X), dtype=np.int64)
        else:
            labels, blocks = mdav_blocked(G, k, scaling, self.block_size, weights=w)
        cent = (nan_group_means(X * S, labels) if miss.any() else group_means(X * S, labels)) / S
        self.strategy_ = strategy
        self.groups_ = labels
        self.blocks_ = blocks
        self.centroids_ = pd.DataFrame(cent, columns=self.columns_)
        out = df.copy()
        keep = DomainGuard(self.value_domains_, df, technique_name(self))
        for j, c in enumerate(self.columns_):
            # a centroid lies in its members' range; a whole-number attribute's is rounded
            out[c] = keep(c, np.where(miss[:, j], np.nan, cent[labels, j]))
        return out

    def _transform_dask(self, ddf: Any) -> Any:
        """Blocked MDAV over a Dask table: global ordering, blocks per sorted partition, rows back in place.

        One pass counts the rows, the column moments (for the weights, exact over the whole
        table) and the records per cell of the ordering learnt in ``fit``; the records are then
        sorted by (cell, row) into partitions of at least max(n / partitions, block_size, k)
        records, each partition is cut into blocks and aggregated like :func:`mdav_blocked`,
        and the centroids are shuffled back to the rows they belong to.
        """
        if self.strategy == "global":
            raise ParameterError(
                "strategy='global' needs the whole table in memory; a Dask table is aggregated in blocks "
                "(strategy='auto' or 'blocked'), or compute it to pandas first"
            )
        from ppdm.anonymize._mdav_dask import mdav_dask

        return mdav_dask(self, ddf)


def resolve_columns(columns: list[str] | str | None, schema: Schema, df: pd.DataFrame) -> list[str]:
    """The numeric attributes to mask: ``columns`` checked against the schema, or all numeric ones."""
    if columns is None:
        cols = list(schema.numeric)
    else:
        cols = check_column_names("columns", columns) or []
        for c in cols:
            if c == schema.class_column:
                raise ParameterError(f"column {c!r} is the class column; it is never masked")
            if c not in df.columns:
                raise ParameterError(f"column {c!r} named in columns= is not in the table")
            if c not in schema.numeric:
                raise ParameterError(f"column {c!r} is not a numeric attribute")
    if not cols:
        raise ParameterError("the table has no numeric attribute to mask")
    return cols
