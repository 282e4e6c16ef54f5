"""Partition-wise work over a pair of Dask DataFrames, for measures of tables larger than memory.

Column-wise SDC measures only need sums over records (counts, sums, sums of squared
deviations, sums of absolute differences). The original and masked Dask frames are walked
partition by partition in step, each pair reduced to a few per-column sums, and the sums
added. The two frames must be partitioned alike (same number of partitions, same number of
rows in each), which is what splitting one table the same way gives — a release written by
``ppdm anonymize`` has one part per partition of its input.

Also here: the blocked nearest-neighbour search of record linkage (:func:`blocked_linkage`),
per-partition sums of one table (:func:`reduce_parts`), and aligned random samples of
records (:func:`sample_pairs`) for the measures that are computed on a sample.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from ppdm.errors import SchemaError
from ppdm.metrics._common import numeric_matrix


def _pair_apply(a: Any, b: Any, names: list[str], fn: Callable[[np.ndarray, np.ndarray], Any], measure: str) -> Any:
    X = numeric_matrix(a, names, label="original", measure=measure, allow_missing=True)
    Z = numeric_matrix(b, names, label="masked", measure=measure, allow_missing=True)
    if X.shape[0] != Z.shape[0]:
        raise SchemaError(
            f"{measure}: a partition of the original has {X.shape[0]} rows and the matching "
            f"partition of the masked table {Z.shape[0]}; partition both tables alike"
        )
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
    xs = x[names].to_delayed()
    zs = z[names].to_delayed()
    if len(xs) != len(zs):
        raise SchemaError(
            f"{measure}: the original has {len(xs)} partitions and the masked table {len(zs)}; "
            "partition both tables alike"
        )
    parts = [dask.delayed(_pair_apply)(a, b, names, fn, measure) for a, b in zip(xs, zs, strict=True)]
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
    """The partitions' lengths of x, refusing a z that is not partitioned alike."""
    if x.npartitions != z.npartitions:
        raise SchemaError(f"{what}: the original has {x.npartitions} partitions and the release {z.npartitions}; "
                          "record-by-record measures need both partitioned alike (read the original with the "
                          "block size the release was made with)")
    lx, lz = partition_lengths(x), partition_lengths(z)
    if lx != lz:
        i = next(i for i, (a, b) in enumerate(zip(lx, lz, strict=True)) if a != b)
        raise SchemaError(f"{what}: partition {i} of the original has {lx[i]} rows and that of the release {lz[i]}; "
                          "partition both tables alike")
    return lx


def working_parts(df: Any, numeric: Sequence[str]) -> Any:
    """A Dask DataFrame in the working form of :func:`ppdm.data.types.working_frame`
    (dates as days, nullable integers as floats), lazily."""
    from ppdm.data.types import working_frame

    meta = working_frame(df._meta, numeric)
    return df.map_partitions(working_frame, list(numeric), meta=meta)


# ----------------------------------------------------------------------------- samples
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
        raise SchemaError(f"DDR: partition {i} of the original has {X.shape[0]} rows and that of the release "
                          f"{Z.shape[0]}; partition both tables alike")
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

    nparts = x.npartitions
    if z.npartitions != nparts:
        raise SchemaError(f"DDR: the original has {nparts} partitions and the release {z.npartitions}; "
                          "partition both tables alike")

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


def key_status_parts(x: Any, z: Any, keys: list[str], hierarchies: dict[str, Any]) -> pd.DataFrame:
    """:func:`ppdm.metrics.keyvar.key_status` of partitioned tables (record pairs partition by
    partition): the same table as in memory."""
    from ppdm.metrics.keyvar import released_covers

    def counts(xi: pd.DataFrame, zi: pd.DataFrame) -> list[tuple[int, int, int]]:
        out = []
        for k in keys:
            eq, cov = released_covers(zi[k], xi[k], hierarchies.get(k))
            out.append((len(eq), int(eq.sum()), int(cov.sum())))
        return out

    parts = pair_partitions(x, z, counts, what="key status")
    rows = []
    for j, k in enumerate(keys):
        n = sum(p[j][0] for p in parts)
        eq = sum(p[j][1] for p in parts)
        cov = sum(p[j][2] for p in parts)
        status = "unchanged" if eq == n else "generalised" if cov == n else "perturbed"
        rows.append({"key": k, "status": status, "changed": 1.0 - eq / n if n else 0.0,
                     "not_covered": 1.0 - cov / n if n else 0.0, "basis": "record pairs"})
    return pd.DataFrame(rows, columns=["key", "status", "changed", "not_covered", "basis"])


def _with_weight(ctx: Any, measure: str, use: bool) -> tuple[Any, Any, str | None]:
    """The partitioned x and z with the sampling-weight column (z takes x's, partition by partition,
    when it has none), or without one."""
    import dask.dataframe as dd

    w = ctx.options.get(f"{measure}.weight", ctx.options.get("weight", ctx.schema.weight)) if use else None
    x, z = ctx.x, ctx.z
    if w is None:
        return x, z, None
    if w not in x.columns and w not in z.columns:
        raise SchemaError(f"{measure}: weight column {w!r} is in neither the original nor the released table")
    if w not in z.columns:
        check_aligned(x, z, measure)
        meta = z._meta.assign(**{w: x._meta[w]})
        z = dd.map_partitions(lambda a, b: a.assign(**{w: b[w].to_numpy()}), z, x, meta=meta,
                              align_dataframes=False)
    if w not in x.columns:
        check_aligned(x, z, measure)
        meta = x._meta.assign(**{w: z._meta[w]})
        x = dd.map_partitions(lambda a, b: a.assign(**{w: b[w].to_numpy()}), x, z, meta=meta,
                              align_dataframes=False)
    return x, z, w


def _check_weight_parts(df: Any, weight: str, measure: str) -> None:
    """Refuses missing, infinite, zero or negative weights, counted partition by partition."""
    def bad(p: pd.DataFrame) -> tuple[int, int, int]:
        s = p[weight]
        if not pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
            return (-1, 0, 0)
        v = s.to_numpy(dtype=float, na_value=np.nan)
        return (0, int((~np.isfinite(v)).sum()), int((np.isfinite(v) & (v <= 0)).sum()))

    parts = reduce_parts(df[[weight]], bad)
    if any(p[0] < 0 for p in parts):
        raise SchemaError(f"{measure}: weight column {weight!r} is not numeric")
    nonfinite, nonpos = sum(p[1] for p in parts), sum(p[2] for p in parts)
    if nonfinite:
        raise SchemaError(f"{measure}: weight column {weight!r} has {nonfinite} missing or infinite value(s)")
    if nonpos:
        raise SchemaError(f"{measure}: weight column {weight!r} has {nonpos} zero or negative value(s); "
                          "sampling weights are positive")


def key_classes(df: Any, keys: list[str], weight: str | None) -> tuple[list[Any], int]:
    """Frequencies of the key combinations of a partitioned table by a Dask group-by, exactly as
    :func:`ppdm.metrics.keyvar.key_frequencies` (sdcMicro ``freqCalc``, a missing key value
    matching every value).

    Records with equal keys (a missing value counted as a value of its own) form a *class*;
    every record of a class has the same fk and Fk. Returns frames of classes with the columns
    ``size`` (records), ``wsize`` (their weights), ``fk`` and ``Fk``, and the number of
    records. Without missing keys the classes are the group-by itself, left partitioned. With
    missing keys, a record's frequency counts the classes it matches: the table of distinct key
    combinations (an aggregate, not records) is brought together and the frequencies of
    :func:`ppdm.metrics.keyvar._wildcard_frequencies` computed on it, each class weighted by
    its records.
    """
    from ppdm.metrics.keyvar import _wildcard_frequencies, key_codes

    cols = list(keys) + ([weight] if weight else [])
    d = df[cols]
    d = d.assign(_one=np.int64(1), _w=d[weight].astype(float) if weight else 1.0)
    split = max(1, df.npartitions)
    any_missing = d[list(keys)].isna().any(axis=1)
    g = d.groupby(list(keys), dropna=False, observed=True)[["_one", "_w"]]
    n_missing, n = dask_compute(any_missing.sum(), d["_one"].sum())
    n = int(n)
    if int(n_missing) == 0:
        cl = g.sum(split_out=split).rename(columns={"_one": "size", "_w": "wsize"})
        return [cl.assign(fk=lambda t: t["size"].astype(float), Fk=lambda t: t["wsize"])], n
    cl = g.sum().compute().reset_index()
    codes = key_codes(cl, list(keys))
    fk, fw = _wildcard_frequencies(codes, codes < 0, cl["_w"].to_numpy(dtype=float),
                                   cl["_one"].to_numpy(dtype=float))
    out = pd.DataFrame({"size": cl["_one"].to_numpy(), "wsize": cl["_w"].to_numpy(dtype=float), "fk": fk, "Fk": fw})
    return [out], n


def dask_compute(*items: Any) -> tuple[Any, ...]:
    import dask

    return dask.compute(*items)


def _class_sums(frames: list[Any], fn: Callable[[pd.DataFrame], dict[str, float]], columns: list[str],
                mins: tuple[str, ...] = (), maxs: tuple[str, ...] = ()) -> dict[str, float]:
    """``fn`` over every class frame, summed (``mins``/``maxs``: smallest/largest instead)."""
    import dask

    meta = pd.DataFrame({c: pd.Series(dtype=float) for c in columns})
    lazy = [f.map_partitions(lambda p: pd.DataFrame([fn(p)], columns=columns), meta=meta) for f in frames
            if not isinstance(f, pd.DataFrame)]
    parts = list(dask.compute(*lazy)) + [pd.DataFrame([fn(f)], columns=columns) for f in frames
                                         if isinstance(f, pd.DataFrame)]
    allp = pd.concat(parts, ignore_index=True)
    out = {}
    for c in columns:
        v = allp[c].dropna()
        out[c] = float(v.min() if c in mins else v.max() if c in maxs else v.sum()) if len(v) else float("nan")
    return out


def _uniques(frames: list[Any]) -> int:
    return int(_class_sums(frames, lambda p: {"u": float(p["size"][p["fk"] == 1].sum())}, ["u"])["u"])


def _cached(cache: dict | None, key: tuple, make: Callable[[], Any]) -> Any:
    """``make()`` once per evaluation: k-anonymity, sample uniques and re-identification risk of a
    partitioned table count the same key combinations (as their in-memory forms share fk/Fk)."""
    if cache is None:
        return make()
    if key not in cache:
        cache[key] = make()
    return cache[key]


def _per_key_parts(df: Any, keys: list[str], uniques: int, cache: dict | None = None) -> pd.DataFrame:
    """The per-key table of :func:`ppdm.metrics.keyvar.k_anonymity` for a partitioned table."""
    return _cached(cache, ("dask_per_key", id(df), tuple(keys)), lambda: _per_key_table(df, keys, uniques))


def _per_key_table(df: Any, keys: list[str], uniques: int) -> pd.DataFrame:
    import dask

    distinct, miss = dask.compute([df[k].nunique() for k in keys], [df[k].isna().sum() for k in keys])
    rows = []
    for j, k in enumerate(keys):
        u = 0 if len(keys) == 1 else _uniques(key_classes(df, [c for c in keys if c != k], None)[0])
        rows.append({"key": k, "distinct_values": int(distinct[j]), "missing": int(miss[j]), "uniques_without": u,
                     "uniques_removed_by_dropping": uniques - u})
    return pd.DataFrame(rows)


def _class_stats(df: Any, keys: list[str], weight: str | None, k: int, cache: dict | None = None
                 ) -> tuple[dict[str, float], int]:
    """Everything the key-variable measures read from the classes of one table, in one pass:
    fk < k and Fk < k counts, sample uniques, classes, the smallest fk, records whose weights give
    Fk < fk, and the expected re-identifications with and without weights."""
    from ppdm.metrics.keyvar import individual_risk

    def make() -> tuple[dict[str, float], int]:
        frames, n = key_classes(df, keys, weight)

        def fn(p: pd.DataFrame) -> dict[str, float]:
            s = p["size"].to_numpy(dtype=float)
            fk, fw = p["fk"].to_numpy(dtype=float), p["Fk"].to_numpy(dtype=float)
            r = individual_risk(fk, fw, weight is not None) if len(p) else np.zeros(0)
            return {"viol": float(s[fk < k].sum()), "viol_w": float(s[fw < k].sum()), "uniq": float(s[fk == 1].sum()),
                    "classes": float(len(p)), "min_fk": float(fk.min()) if len(p) else np.nan,
                    "bad": float(s[fw < fk * (1 - 1e-12)].sum()) if weight is not None else 0.0,
                    "er": float(np.nansum(s * r)), "max": float(np.nanmax(r)) if len(r) else np.nan}

        cols = ["viol", "viol_w", "uniq", "classes", "min_fk", "bad", "er", "max"]
        return _class_sums(frames, fn, cols, mins=("min_fk",), maxs=("max",)), n

    return _cached(cache, ("dask_classes", id(df), tuple(keys), weight, int(k)), make)


def _uniques_cached(df: Any, keys: list[str], cache: dict | None) -> tuple[int, int]:
    """Sample uniques and records of a table, from any class statistics already counted."""
    if cache is not None:
        for key, value in list(cache.items()):
            if isinstance(key, tuple) and key[:4] == ("dask_classes", id(df), tuple(keys), None):
                return int(value[0]["uniq"]), value[1]
    st, n = _class_stats(df, keys, None, 1, cache)
    return int(st["uniq"]), n


def k_anonymity_parts(ctx: Any, keys: list[str], k: Any, weighted: bool) -> Any:
    """:func:`ppdm.metrics.keyvar.k_anonymity` of a partitioned release (and of x, for reference):
    exact, from Dask group-bys on the keys (:func:`key_classes`)."""
    from ppdm.errors import ParameterError, PPDMError
    from ppdm.metrics.keyvar import KAnonymityResult

    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ParameterError(f"k-anonymity k must be an integer ≥ 1, got {k!r}")
    x, z, w = _with_weight(ctx, "k_anonymity", weighted)
    if weighted and w is None:
        raise ParameterError("k_anonymity.weighted=true needs a weight column (--weight or weight in a schema)")
    res = {}
    for label, df in (("z", z), ("x", x)):
        if w is not None:
            _check_weight_parts(df, w, "k-anonymity")
        st, n = _class_stats(df, keys, w, int(k), ctx.cache if w is None else None)
        if w is not None and st["bad"] > 0:
            raise PPDMError(f"k-anonymity: the sampling weights in column {w!r} give {int(st['bad'])} record(s) a "
                            "population frequency Fk below their sample frequency fk; sampling weights are inverse "
                            "inclusion probabilities (≥ 1)")
        res[label] = (st, n, df)
    st, n, df = res["z"]
    viol_w = int(st["viol_w"]) if w is not None else None
    out = KAnonymityResult(value=(viol_w if weighted else st["viol"]) / n, k=int(k), keys=list(keys), n=n,
                           violations=int(st["viol"]), sample_uniques=int(st["uniq"]), achieved_k=int(st["min_fk"]),
                           n_combinations=int(st["classes"]), weight=w, weighted=bool(weighted),
                           violations_weighted=viol_w,
                           per_key=_per_key_parts(ctx.z, keys, int(st["uniq"]), ctx.cache))
    sx, nx, _ = res["x"]
    out.original = (sx["viol_w"] if weighted else sx["viol"]) / nx
    return out


def sample_uniques_parts(ctx: Any, keys: list[str]) -> Any:
    """:func:`ppdm.metrics.keyvar.sample_uniques` of a partitioned release, exactly."""
    from ppdm.metrics.keyvar import SampleUniquesResult

    u, n = _uniques_cached(ctx.z, keys, ctx.cache)
    ux, nx = _uniques_cached(ctx.x, keys, ctx.cache)
    return SampleUniquesResult(value=u / n, keys=list(keys), n=n, sample_uniques=u,
                               per_key=_per_key_parts(ctx.z, keys, u, ctx.cache), original=ux / nx)


def reidentification_risk_parts(ctx: Any, keys: list[str]) -> Any:
    """:func:`ppdm.metrics.keyvar.reidentification_risk` of a partitioned release (weights of the
    schema), exactly: individual risks per class of equal keys, summed over the classes."""
    from ppdm.errors import PPDMError
    from ppdm.metrics.keyvar import ReidentificationRiskResult

    x, z, w = _with_weight(ctx, "reidentification_risk", True)
    out = {}
    for label, df, orig in (("z", z, ctx.z), ("x", x, ctx.x)):
        ww = w if (w is not None and w in df.columns) else None
        if ww is not None:
            _check_weight_parts(df, ww, "re-identification risk")
        # unweighted classes of the evaluation's own tables are shared with k-anonymity
        st, n = _class_stats(orig if ww is None else df, keys, ww, 3, ctx.cache if ww is None else None)
        if st["bad"] > 0:
            raise PPDMError(f"re-identification risk: the sampling weights in column {ww!r} give {int(st['bad'])} "
                            "record(s) a population frequency Fk below their sample frequency fk; sampling weights "
                            "are inverse inclusion probabilities (≥ 1)")
        out[label] = (st, n, ww)
    st, n, ww = out["z"]
    res = ReidentificationRiskResult(value=st["er"] / n, keys=list(keys), weight=ww, n=n,
                                     expected_reidentifications=st["er"], global_risk_pct=100.0 * st["er"] / n,
                                     max_risk=st["max"], sample_uniques=int(st["uniq"]),
                                     n_combinations=int(st["classes"]),
                                     per_key=_per_key_parts(ctx.z, keys, int(st["uniq"]), ctx.cache))
    sx, nx, _ = out["x"]
    res.original = sx["er"] / nx
    return res


def _ldiversity_table(df: Any, keys: list[str], sensitive: list[str], l_target: int) -> tuple[pd.DataFrame, int]:
    """Per sensitive attribute: the smallest distinct and entropy l over the groups of exact keys
    and the share of records in groups below ``l_target`` — two group-bys (key and value cells,
    then groups), as :func:`ppdm.metrics.keyvar.l_diversity` counts them."""
    rows = []
    n = None
    split = max(1, df.npartitions)
    for s in sensitive:
        cells = df[list(keys) + [s]].groupby(list(keys) + [s], dropna=False, observed=True).size(split_out=split)
        cells = cells.to_frame("c").reset_index()
        cells = cells.assign(clogc=cells["c"] * np.log(cells["c"].astype(float)),
                             val=(~cells[s].isna()).astype(np.int64), miss=cells[s].isna().astype(np.int64))
        groups = cells.groupby(list(keys), dropna=False, observed=True)[["c", "clogc", "val", "miss"]].sum(
            split_out=split)

        def fn(p: pd.DataFrame) -> dict[str, float]:
            size = p["c"].to_numpy(dtype=float)
            vals = p["val"].to_numpy()
            distinct = vals + ((p["miss"].to_numpy() > 0) & (vals > 0))
            with np.errstate(divide="ignore", invalid="ignore"):
                ent = np.where(vals > 0, np.log(size) - p["clogc"].to_numpy(dtype=float) / size, 0.0)
            return {"min_d": float(distinct.min()) if len(p) else np.nan,
                    "min_e": float(np.exp(ent).min()) if len(p) else np.nan,
                    "below": float(size[distinct < l_target].sum()), "n": float(size.sum())}

        st = _class_sums([groups], fn, ["min_d", "min_e", "below", "n"], mins=("min_d", "min_e"))
        n = int(st["n"])
        rows.append({"sensitive": s, "min_distinct_l": int(st["min_d"]), "min_entropy_l": st["min_e"],
                     "records_below_l_target": st["below"] / n if n else 0.0})
    return pd.DataFrame(rows), int(n or 0)


def l_diversity_parts(ctx: Any, keys: list[str], sensitive: Any, l_target: Any) -> Any:
    """:func:`ppdm.metrics.keyvar.l_diversity` of a partitioned release, exactly."""
    from ppdm.errors import MeasureNotApplicable, ParameterError
    from ppdm.metrics.keyvar import LDiversityResult

    if isinstance(l_target, bool) or not isinstance(l_target, (int, np.integer)) or l_target < 1:
        raise ParameterError(f"l-diversity l_target must be an integer ≥ 1, got {l_target!r}")
    if isinstance(sensitive, str):
        sensitive = [s.strip() for s in sensitive.replace(";", ",").split(",") if s.strip()]
    sensitive = list(sensitive or [])
    if not sensitive:
        raise MeasureNotApplicable(
            "l-diversity needs a sensitive attribute; declare it with --sensitive or sensitive in a schema file "
            "(Schema(sensitive=[...]) in Python)")
    absent = [s for s in sensitive if s not in ctx.z.columns]
    if absent:
        raise SchemaError(f"l-diversity: sensitive column(s) {', '.join(map(repr, absent))} not in the table")
    clash = [s for s in sensitive if s in keys]
    if clash:
        raise ParameterError(f"l-diversity: {clash[0]!r} is both a quasi-identifier and the sensitive attribute")
    per, n = _ldiversity_table(ctx.z, keys, sensitive, int(l_target))
    per_x, _ = _ldiversity_table(ctx.x, keys, sensitive, int(l_target))
    return LDiversityResult(value=float(per["min_distinct_l"].min()), keys=list(keys), sensitive=sensitive,
                            l_target=int(l_target), n=n, per_sensitive=per,
                            original=float(per_x["min_distinct_l"].min()))


# ------------------------------------------------------------------ record linkage (mixed)
def record_linkage_parts(x: Any, z: Any, numeric: list[str], categorical: list[str], *, ties: str,
                         sample: int | None, default_sample: int, exact_rows: int,
                         random_state: int | None) -> Any:
    """:func:`ppdm.metrics.linkage.record_linkage` of partitioned tables, block by block.

    Every released record is linked against every block of originals (a k-d tree per block,
    :func:`ppdm.metrics.linkage.link_against_blocks`): the same links as in memory, whatever
    the partitions. Up to ``exact_rows`` records (or with ``sample=0``) every released record
    is linked — exact; above it (or with ``sample=s``) a uniform sample of released records
    is linked, each against ALL originals, and a Wilson interval is given. A task holds one
    block of z and one block of x at a time, reading each block of x twice.
    """
    from ppdm.data.partitions import read_partition, run_partitions, sample_counts
    from ppdm.metrics._common import mixed_attributes
    from ppdm.metrics.linkage import (
        LinkageResult,
        _Block,
        credits,
        encode_part,
        link_against_blocks,
        own_distances,
    )

    mixed_attributes(x._meta, z._meta, numeric, categorical, measure="record linkage", z_label="released")
    lengths = check_aligned(x, z, "record linkage")
    n = int(sum(lengths))
    if n == 0:
        raise SchemaError("record linkage: the tables have no rows")
    offsets = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    nparts = x.npartitions
    cols = list(numeric) + list(categorical)

    def scan(xi: pd.DataFrame, zi: pd.DataFrame) -> tuple[list[tuple[float, float]], list[set]]:
        from ppdm.metrics.linkage import numeric_scales

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

    if k < n:
        return _sampled_linkage(x, z, cols, picks, offsets, block, numeric, scales, categorical, categories, ties, n)

    def task(j: int) -> tuple[float, int, int, int]:
        """(credit summed, records tied, records equal to their own original, records linked) of block j."""
        rows = picks[j]
        if rows.size == 0:
            return 0.0, 0, 0, 0
        xj = read_partition(x, j)[cols].iloc[rows]
        zj = read_partition(z, j)[cols].iloc[rows]
        xn, xc = encode_part(xj, numeric, scales, categorical, categories)
        zn, zc = encode_part(zj, numeric, scales, categorical, categories)
        d_own = own_distances(zn, zc, xn, xc)
        at = np.arange(len(rows))
        own, cnt, first = link_against_blocks(zn, zc, at, d_own, np.full(len(rows), j, np.int64), rows,
                                              block, nparts)
        mine = offsets[j] + rows
        cnt = np.where(own, cnt + 1, 0)
        first = np.where(own, np.minimum(first, mine), 0)
        credit = credits(own, cnt, first, mine, ties)
        return float(credit.sum()), int((cnt > 1).sum()), int((d_own == 0).sum()), len(rows)

    out = run_partitions(task, nparts, name="ppdm-record-linkage")
    linked = float(sum(o[0] for o in out))
    m = int(sum(o[3] for o in out))
    return LinkageResult(value=linked / m, linked=linked, n=m, tied=int(sum(o[1] for o in out)),
                         exact=int(sum(o[2] for o in out)), numeric=list(numeric), categorical=list(categorical),
                         ties=ties)


def _sampled_linkage(x: Any, z: Any, cols: list[str], picks: list[np.ndarray], offsets: np.ndarray, block: Any,
                     numeric: list[str], scales: np.ndarray, categorical: list[str], categories: list[Any],
                     ties: str, n: int) -> Any:
    """Record linkage of a sample of released records, each against every block of originals: the
    sample and its own originals are gathered (small), then each block of x is read and searched
    once per pass — 2 × partitions block reads in all."""
    from ppdm.data.partitions import read_partition, run_partitions
    from ppdm.metrics.linkage import (
        TIE_ABS_TOL,
        TIE_REL_TOL,
        LinkageResult,
        _group_keys,
        credits,
        encode_part,
        mixed_block_search,
        own_distances,
        wilson_interval,
    )
    from ppdm.metrics.risk import _threads

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
    at = np.arange(m)
    chunks = max(1, min(m, 8 * _threads()))

    def refute(b: int) -> tuple[np.ndarray, np.ndarray]:
        blk = block(b)
        if len(blk.xn) == 0:
            return np.ones(m, np.int64), np.full(m, np.inf)
        oj = np.where(own_block == b, own_local, -1)
        st, bd, _ = mixed_block_search(zn, zc, blk.group_of(keys), at, d_own, oj, 1, d_own, blk.xn, blk.xc,
                                       blk.tree, TIE_REL_TOL, TIE_ABS_TOL, blk.budget, blk.offset, chunks)
        return st, bd

    p1 = run_partitions(refute, nparts, name="ppdm-linkage-refute")
    own = np.all([st != 0 for st, _ in p1], axis=0)
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
    credit = credits(own, cnt, first, mine, ties)
    linked = float(credit.sum())
    res = LinkageResult(value=linked / m, linked=linked, n=m, tied=int((cnt > 1).sum()), exact=int((d_own == 0).sum()),
                        numeric=list(numeric), categorical=list(categorical), ties=ties, credit=credit, tie_count=cnt)
    res.sample_size, res.population = m, n
    res.ci_low, res.ci_high = wilson_interval(linked, m, res.confidence)
    return res


# --------------------------------------------------------------------- intruder matching
def qi_matching_parts(ctx: Any, keys: list[str], status: dict[str, str], tolerance: Any, sample_rows: int) -> Any:
    """:func:`ppdm.metrics.matching.qi_matching` of partitioned tables: a uniform sample of
    ``sample_rows`` original records (all of them when the table is smaller: then exact), each
    matched against EVERY released record, partition by partition — match counts add up over
    the partitions of z — with a Wilson interval when sampled."""
    import dask

    from ppdm.data.partitions import read_partition, run_partitions
    from ppdm.metrics.keyvar import context_hierarchies
    from ppdm.metrics.matching import _check_tolerances, _encode, key_rules, match_counts, summarise_matching

    hier = context_hierarchies(ctx)
    x, z = ctx.x, ctx.z
    xs, zs, n = sample_pairs(x, z, int(sample_rows), int(ctx.random_state or 0))
    rules = key_rules(xs, zs, keys, status, hier)
    tol_keys = [k for k in keys if rules[k] == "tolerance"]
    sds = dict(zip(tol_keys, (float(v) for v in dask.compute(*[x[k].std() for k in tol_keys])), strict=True))
    for k in list(sds):
        if not sds[k] > 0:
            rules[k] = "exact"
            del sds[k]
    tol_keys = [k for k in keys if rules[k] == "tolerance"]
    tols = _check_tolerances(tolerance) if tol_keys else (0.0,)
    xk = xs[keys].reset_index(drop=True)

    def task(i: int) -> np.ndarray:
        zi = read_partition(z, i)[keys].reset_index(drop=True)
        enc = _encode(xk, zi, rules, hier)
        return np.stack([match_counts(enc, len(xk), np.array([t * sds[k] for k in tol_keys])) for t in tols])

    counts = np.sum(run_partitions(task, z.npartitions, name="ppdm-qi-matching"), axis=0)
    res = summarise_matching(xk, zs[keys].reset_index(drop=True), keys, rules, sds, status, tols, counts,
                             paired=True, hierarchies=hier, population=n)
    res.n_released = n
    return res
