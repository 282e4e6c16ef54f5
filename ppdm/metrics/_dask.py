"""Partition-wise work over a pair of Dask DataFrames, for measures of tables larger than memory.

Column-wise SDC measures only need sums over records (counts, sums, sums of squared
deviations, sums of absolute differences). The original and masked Dask frames are walked
partition by partition in step, each pair reduced to a few per-column sums, and the sums
added. The two frames must be paired: partition i of z holds, row for row, the releases of
partition i of x. A partitioned release as written is not (it mixes its rows across its
parts); the evaluation pairs it through its private log
(:func:`ppdm.experiments.evaluate_partitioned.repair_partitions`), and a pair whose numbers
of partitions or rows differ is refused with one error (:func:`not_paired`).

Also here: the blocked nearest-neighbour search of record linkage (:func:`blocked_linkage`),
per-partition sums of one table (:func:`reduce_parts`), and aligned random samples of
records (:func:`sample_pairs`) for the measures that are computed on a sample.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal, overload

import numpy as np
import pandas as pd

from ppdm.errors import SchemaError
from ppdm.metrics._common import numeric_matrix

#: what to do about a z whose partitions do not hold x's records row for row
PAIR_HINT = ("z's rows are not paired with x's row for row (a partitioned release mixes its rows across its parts): "
             "evaluate it with its private log (ppdm.experiments.evaluate.evaluate, or ppdm evaluate "
             "--engine dask), which puts each released row beside its original")


def not_paired(what: str, i: int | None = None, nx: int | None = None, nz: int | None = None) -> SchemaError:
    """The one error of a record-by-record measure whose x and z are not partitioned alike
    (``i``: the first partition whose lengths differ, else their numbers differ)."""
    if i is None:
        where = f"x has {nx} partitions and z {nz}"
    else:
        where = f"partition {i} of x has {nx} rows and that of z {nz}"
    return SchemaError(f"{what}: {where}; {PAIR_HINT}")


def check_partitions(x: Any, z: Any, what: str) -> None:
    """x and z have as many partitions (the lengths are checked by :func:`check_aligned`, or
    by each task as it reads a partition pair)."""
    if x.npartitions != z.npartitions:
        raise not_paired(what, nx=x.npartitions, nz=z.npartitions)


def _pair_apply(a: Any, b: Any, names: list[str], fn: Callable[[np.ndarray, np.ndarray], Any], measure: str,
                i: int) -> Any:
    X = numeric_matrix(a, names, label="original", measure=measure, allow_missing=True)
    Z = numeric_matrix(b, names, label="masked", measure=measure, allow_missing=True)
    if X.shape[0] != Z.shape[0]:
        raise not_paired(measure, i, X.shape[0], Z.shape[0])
    return fn(X, Z)


def reduce_pairs(
    x: Any, z: Any, names: list[str], fn: Callable[[np.ndarray, np.ndarray], Any], *, measure: str
) -> list[Any]:
    """``fn(X_part, Z_part)`` for every aligned partition pair (float matrices, NaN for a
    missing cell, dates as days), computed by Dask."""
    import dask

    for label, df in (("original", x), ("masked", z)):
        absent = [c for c in names if c not in df.columns]
        if absent:
            raise SchemaError(f"{measure}: column(s) {', '.join(map(repr, absent))} not in the {label} table")
    check_partitions(x, z, measure)
    xs = x[names].to_delayed()
    zs = z[names].to_delayed()
    parts = [dask.delayed(_pair_apply)(a, b, names, fn, measure, i) for i, (a, b) in enumerate(zip(xs, zs, strict=True))]
    return list(dask.compute(*parts))


def reduce_parts(df: Any, fn: Callable[[pd.DataFrame], Any]) -> list[Any]:
    """``fn(partition)`` for every partition of one Dask DataFrame (results kept small by ``fn``)."""
    import dask

    return list(dask.compute(*[dask.delayed(fn)(p) for p in df.to_delayed()]))


def count_and_sums(
    x: Any, z: Any, names: list[str], *, side: Literal["original", "masked"] = "original", measure: str
) -> tuple[Any, np.ndarray]:
    """Number of records and column sums of one side of the pair: the first pass of the
    two-pass means and standard deviations the column-wise measures need (complete tables)."""
    if side == "original":
        return add(reduce_pairs(x, z, names, lambda X, Z: (X.shape[0], X.sum(0)), measure=measure))
    return add(reduce_pairs(x, z, names, lambda X, Z: (X.shape[0], Z.sum(0)), measure=measure))


def observed_sums(A: np.ndarray, mask: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(count, sum) of every column over its observed cells (``mask``, default: not NaN)."""
    obs = ~np.isnan(A) if mask is None else mask
    return obs.sum(axis=0), np.where(obs, A, 0.0).sum(axis=0)


def observed_means(
    x: Any, z: Any, names: list[str], *, side: Literal["original", "masked"], measure: str
) -> tuple[Any, np.ndarray, np.ndarray]:
    """``(n, count, mean)``: the number of records, and every column's observed cells and mean on
    one side of the pair (missing cells left out): the first pass of two-pass standard deviations."""
    n, cnt, s = add(reduce_pairs(
        x, z, names, lambda X, Z: (X.shape[0], *observed_sums(X if side == "original" else Z)), measure=measure))
    return n, cnt, s / np.maximum(cnt, 1)


def add(parts: list[Any]) -> Any:
    """Element-wise sum of per-partition results (tuples of arrays/scalars)."""
    total = parts[0]
    for p in parts[1:]:
        total = tuple(np.add(t, q) for t, q in zip(total, p, strict=True))
    return total


def partition_lengths(df: Any) -> list[int]:
    """Rows of every partition (computed partition by partition; a list of numbers)."""
    return [int(v) for v in reduce_parts(df, len)]


def check_aligned(x: Any, z: Any, what: str) -> list[int]:
    """The partitions' lengths of x, refusing a z that is not partitioned alike (:func:`not_paired`).

    Record-by-record measures read partition i of x beside partition i of z and compare them
    row for row: they trust that the evaluation paired them (``EvaluationContext.paired``;
    :func:`ppdm.experiments.evaluate_partitioned.repair_partitions` does it through the
    release's private log). Lengths that differ prove the opposite, and are refused here."""
    check_partitions(x, z, what)
    lx, lz = partition_lengths(x), partition_lengths(z)
    if lx != lz:
        i = next(i for i, (a, b) in enumerate(zip(lx, lz, strict=True)) if a != b)
        raise not_paired(what, i, lx[i], lz[i])
    return lx


def working_parts(df: Any, numeric: Sequence[str]) -> Any:
    """A Dask DataFrame in the working form of :func:`ppdm.data.types.working_frame`
    (dates as days, nullable integers as floats), lazily."""
    from ppdm.data.types import working_frame

    meta = working_frame(df._meta, numeric)
    return df.map_partitions(working_frame, list(numeric), meta=meta)


# ----------------------------------------------------------------------------- samples
@overload
def sample_pairs(x: Any, z: None, k: int, seed: int) -> tuple[pd.DataFrame, None, int]: ...


@overload
def sample_pairs(x: Any, z: Any, k: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame, int]: ...


def sample_pairs(x: Any, z: Any | None, k: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame | None, int]:
    """A uniform random sample of ``k`` records, drawn without replacement across partitions,
    from x and the same records (same positions) from z when given; also the number of
    records of x. Each task reads one partition (pair)."""
    from ppdm.data.partitions import read_partition, run_partitions, sample_counts

    lengths = check_aligned(x, z, "sampling") if z is not None else partition_lengths(x)
    n = int(sum(lengths))
    counts = sample_counts(lengths, min(k, n), np.random.default_rng([seed, 7]))

    def take(i: int) -> tuple[pd.DataFrame, pd.DataFrame | None]:
        c = int(counts[i])
        if c == 0:
            return x._meta, (z._meta if z is not None else None)
        rows = np.sort(np.random.default_rng([seed, 7, i]).choice(lengths[i], size=c, replace=False))
        xi = read_partition(x, i).iloc[rows]
        zi = read_partition(z, i).iloc[rows] if z is not None else None
        return xi, zi

    parts = run_partitions(take, x.npartitions, name="ppdm-sample-pairs")
    xs = pd.concat([p[0] for p in parts], ignore_index=True)
    zs = pd.concat([p[1] for p in parts], ignore_index=True) if z is not None else None
    return xs, zs, n


# ------------------------------------------------------------------------ record linkage
def _kept_block(x: Any, z: Any, i: int, names: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Partition ``i`` of x and z as float matrices, records complete in both only."""
    from ppdm.data.partitions import read_partition

    X = numeric_matrix(read_partition(x, i), names, label="original", measure="DDR", allow_missing=True)
    Z = numeric_matrix(read_partition(z, i), names, label="masked", measure="DDR", allow_missing=True)
    if X.shape[0] != Z.shape[0]:
        raise not_paired("DDR", i, X.shape[0], Z.shape[0])
    ok = ~(np.isnan(X).any(axis=1) | np.isnan(Z).any(axis=1))
    return X[ok], Z[ok]


def blocked_linkage(
    x: Any, z: Any, names: list[str], *, standardize: str, rel_tol: float, abs_tol: float, ties: str,
) -> tuple[float, int, int, int]:
    """Distance-based record linkage of z against x, partition block by partition block.

    The records complete on ``names`` in both tables are linked among themselves, as
    :func:`ppdm.metrics.risk.ddr` does in memory: each masked record z_r is standardised
    (``standardize``, with means and sds over all blocks) and linked to the originals at the
    smallest Euclidean distance over every block of x. A first sweep finds each record's
    smallest squared distance d²_min (a KD-tree per block), a second counts the originals
    within d²_min·(1 + rel_tol) + abs_tol and, for ``ties="first"``, the lowest record number
    among them. The link is correct when the record's own original is within that bound.
    Exact, for any table size: partitions² block pairs, two blocks in memory per task.
    Returns (credit summed over records, records tied, records linked, records left out).
    """
    from scipy.spatial import cKDTree

    from ppdm.data.partitions import run_partitions
    from ppdm.metrics._common import column_moments, merge_moments

    check_partitions(x, z, "DDR")
    nparts = x.npartitions

    def moments(i: int) -> tuple[int, int, list[Any], list[Any]]:
        X, Z = _kept_block(x, z, i, names)
        from ppdm.data.partitions import read_partition

        total = len(read_partition(z, i))
        return (len(X), total, [column_moments(X[:, j]) for j in range(X.shape[1])],
                [column_moments(Z[:, j]) for j in range(Z.shape[1])])

    stats = run_partitions(moments, nparts, name="ppdm-linkage-moments")
    kept = np.array([s[0] for s in stats], dtype=np.int64)
    left_out = int(sum(s[1] for s in stats) - kept.sum())
    n = int(kept.sum())
    if n < 2:
        raise SchemaError("DDR needs at least 2 records complete on the compared attributes in x and z")
    offsets = np.concatenate([[0], np.cumsum(kept)[:-1]])

    def mean_sd(which: int) -> tuple[np.ndarray, np.ndarray]:
        mus, sds = [], []
        for j in range(len(names)):
            c, mu, m2, _ = merge_moments([s[2 + which][j] for s in stats])
            sd = float(np.sqrt(m2 / (c - 1))) if c > 1 else 0.0
            mus.append(mu)
            sds.append(sd if sd > 0 else 1.0)  # a constant column is only centred
        return np.array(mus), np.array(sds)

    if standardize == "none":
        cx = cz = (np.zeros(len(names)), np.ones(len(names)))
    else:
        cx = mean_sd(0)
        cz = cx if standardize == "original" else mean_sd(1)

    def std(i: int) -> tuple[np.ndarray, np.ndarray]:
        X, Z = _kept_block(x, z, i, names)
        return (X - cx[0]) / cx[1], (Z - cz[0]) / cz[1]

    def link(j: int) -> tuple[float, int]:
        Xj, Zs = std(j)
        if len(Zs) == 0:
            return 0.0, 0
        own2 = ((Zs - Xj) ** 2).sum(axis=1)
        best = own2.copy()
        for i in range(nparts):
            Xi = Xj if i == j else std(i)[0]
            if len(Xi):
                d, _ = cKDTree(Xi).query(Zs, k=1)
                best = np.minimum(best, d * d)
        lim2 = best * (1.0 + rel_tol) + abs_tol
        own = own2 <= lim2
        count = np.ones(len(Zs), dtype=np.int64)
        first = offsets[j] + np.arange(len(Zs))
        sel = np.flatnonzero(own)
        if sel.size:
            count[sel] = 0
            r = np.sqrt(lim2[sel])
            for i in range(nparts):
                Xi = Xj if i == j else std(i)[0]
                if not len(Xi):
                    continue
                tree = cKDTree(Xi)
                count[sel] += np.asarray(tree.query_ball_point(Zs[sel], r, return_length=True), dtype=np.int64)
                if ties == "first":
                    for s, lst in zip(sel, tree.query_ball_point(Zs[sel], r), strict=True):
                        if lst:
                            first[s] = min(first[s], int(offsets[i] + min(lst)))
            count[sel] = np.maximum(count[sel], 1)  # the own record is always within the bound
        mine = offsets[j] + np.arange(len(Zs))
        if ties == "fractional":
            credit = np.where(own, 1.0 / count, 0.0)
        elif ties == "first":
            credit = (own & (first == mine)).astype(float)
        else:
            credit = (own & (count == 1)).astype(float)
        return float(credit.sum()), int((own & (count > 1)).sum())

    parts = run_partitions(link, nparts, name="ppdm-linkage")
    return float(sum(p[0] for p in parts)), int(sum(p[1] for p in parts)), n, left_out


# ------------------------------------------------------------------- key-variable risk
def pair_partitions(x: Any, z: Any, fn: Callable[[pd.DataFrame, pd.DataFrame], Any], *, what: str) -> list[Any]:
    """``fn(x_i, z_i)`` for every aligned partition pair (pandas frames), one task each."""
    from ppdm.data.partitions import read_partition, run_partitions

    check_aligned(x, z, what)

    def one(i: int) -> Any:
        return fn(read_partition(x, i).reset_index(drop=True), read_partition(z, i).reset_index(drop=True))

    return run_partitions(one, x.npartitions, name=f"ppdm-{what.replace(' ', '-')}")
