"""Key-variable risk of partitioned (Dask) tables: the measures of :mod:`ppdm.metrics.keyvar`
computed exactly, partition by partition.

The key classes are counted per partition and merged (:func:`key_classes`); k-anonymity,
sample uniques, the re-identification risk and l-diversity are then read from the merged
counts and give the values the in-memory functions give. Here rather than in
:mod:`ppdm.metrics._dask`, which holds only measure-free partition helpers, so that the two
modules do not depend on each other; :mod:`ppdm.metrics.keyvar` re-exports every name here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from ppdm.data.blanks import (
    DEFAULT_READING,
    key_codes,
    pattern_frequencies,
)
from ppdm.errors import MeasureNotApplicable, ParameterError, PPDMError, SchemaError
from ppdm.metrics._dask import check_aligned, reduce_parts
from ppdm.metrics._keyvar_frequencies import (
    KAnonymityResult,
    LDiversityResult,
    ReidentificationRiskResult,
    SampleUniquesResult,
    _codes,
    individual_risk,
    wildcard_ldiversity,
)
from ppdm.metrics._keyvar_keys import declared_weight


def _with_weight(ctx: Any, measure: str, use: bool) -> tuple[Any, Any, str | None]:
    """The partitioned x and z with the sampling-weight column (z takes x's, partition by partition,
    when it has none), or without one."""
    import dask.dataframe as dd

    w = declared_weight(ctx, measure) if use else None
    x, z = ctx.x, ctx.z
    if w is None:
        return x, z, None
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


def key_classes(df: Any, keys: list[str], weight: str | None,
                blanks: str = DEFAULT_READING) -> tuple[list[Any], int]:
    """Frequencies of the key combinations of a partitioned table by a Dask group-by, exactly as
    :func:`ppdm.metrics.keyvar.key_frequencies` (sdcMicro ``freqCalc``, a missing key value
    matching every value).

    Records with equal keys (a missing value counted as a value of its own) form a *class*;
    every record of a class has the same fk and Fk. Returns frames of classes with the columns
    ``size`` (records), ``wsize`` (their weights), ``fk`` and ``Fk``, and the number of
    records. Without missing keys the classes are the group-by itself, left partitioned. With
    missing keys, a record's frequency counts the classes it matches: the table of distinct key
    combinations (an aggregate, not records) is brought together and the frequencies of
    :func:`ppdm.data.blanks.pattern_frequencies` computed on it, each class weighted by its
    records. ``blanks="strict"`` reads a blank as a value of its own: the classes are then the
    group-by itself.
    """

    cols = list(keys) + ([weight] if weight else [])
    d = df[cols]
    d = d.assign(_one=np.int64(1), _w=d[weight].astype(float) if weight else 1.0)
    split = max(1, df.npartitions)
    any_missing = d[list(keys)].isna().any(axis=1)
    g = d.groupby(list(keys), dropna=False, observed=True)[["_one", "_w"]]
    n_missing, n = dask_compute(any_missing.sum(), d["_one"].sum())
    n = int(n)
    if int(n_missing) == 0 or blanks == "strict":
        cl = g.sum(split_out=split).rename(columns={"_one": "size", "_w": "wsize"})
        return [cl.assign(fk=lambda t: t["size"].astype(float), Fk=lambda t: t["wsize"])], n
    cl = g.sum().compute().reset_index()
    codes = key_codes(cl, list(keys))
    sums = pattern_frequencies(codes, np.column_stack([cl["_one"].to_numpy(dtype=float),
                                                       cl["_w"].to_numpy(dtype=float)]))
    fk, fw = sums[:, 0], sums[:, 1]
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


def _per_key_parts(df: Any, keys: list[str], uniques: int, cache: dict | None = None,
                   blanks: str = DEFAULT_READING) -> pd.DataFrame:
    """The per-key table of :func:`ppdm.metrics.keyvar.k_anonymity` for a partitioned table."""
    return _cached(cache, ("dask_per_key", id(df), tuple(keys), blanks),
                   lambda: _per_key_table(df, keys, uniques, blanks))


def _per_key_table(df: Any, keys: list[str], uniques: int, blanks: str = DEFAULT_READING) -> pd.DataFrame:
    import dask

    distinct, miss = dask.compute([df[k].nunique() for k in keys], [df[k].isna().sum() for k in keys])
    rows = []
    for j, k in enumerate(keys):
        u = 0 if len(keys) == 1 else _uniques(key_classes(df, [c for c in keys if c != k], None, blanks)[0])
        rows.append({"key": k, "distinct_values": int(distinct[j]), "missing": int(miss[j]), "uniques_without": u,
                     "uniques_removed_by_dropping": uniques - u})
    return pd.DataFrame(rows)


def _class_stats(df: Any, keys: list[str], weight: str | None, k: int, cache: dict | None = None,
                 blanks: str = DEFAULT_READING) -> tuple[dict[str, float], int]:
    """Everything the key-variable measures read from the classes of one table, in one pass:
    fk < k and Fk < k counts, sample uniques, classes, the smallest fk, records whose weights give
    Fk < fk, and the expected re-identifications with and without weights."""

    def make() -> tuple[dict[str, float], int]:
        frames, n = key_classes(df, keys, weight, blanks)

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

    return _cached(cache, ("dask_classes", id(df), tuple(keys), weight, int(k), blanks), make)


def _uniques_cached(df: Any, keys: list[str], cache: dict | None,
                    blanks: str = DEFAULT_READING) -> tuple[int, int]:
    """Sample uniques and records of a table, from any class statistics already counted."""
    if cache is not None:
        for key, value in list(cache.items()):
            if isinstance(key, tuple) and key[:4] == ("dask_classes", id(df), tuple(keys), None) \
                    and key[-1] == blanks:
                return int(value[0]["uniq"]), value[1]
    st, n = _class_stats(df, keys, None, 1, cache, blanks)
    return int(st["uniq"]), n


def k_anonymity_parts(ctx: Any, keys: list[str], k: Any, weighted: bool, blanks: str = DEFAULT_READING) -> Any:
    """:func:`ppdm.metrics.keyvar.k_anonymity` of a partitioned release (and of x, for reference):
    exact, from Dask group-bys on the keys (:func:`key_classes`)."""
    from ppdm.errors import ParameterError

    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ParameterError(f"k-anonymity k must be an integer ≥ 1, got {k!r}")
    x, z, w = _with_weight(ctx, "k_anonymity", weighted)
    if weighted and w is None:
        raise ParameterError("k_anonymity.weighted=true needs a weight column (--weight or weight in a schema)")
    res = {}
    for label, df in (("z", z), ("x", x)):
        if w is not None:
            _check_weight_parts(df, w, "k-anonymity")
        st, n = _class_stats(df, keys, w, int(k), ctx.cache if w is None else None, blanks)
        if w is not None and st["bad"] > 0:
            raise PPDMError(f"k-anonymity: the sampling weights in column {w!r} give {int(st['bad'])} record(s) a "
                            "population frequency Fk below their sample frequency fk; sampling weights are inverse "
                            "inclusion probabilities (≥ 1)")
        res[label] = (st, n, df)
    st, n, df = res["z"]
    viol_w = int(st["viol_w"]) if w is not None else None
    out = KAnonymityResult(value=(viol_w if weighted else st["viol"]) / n, k=int(k), keys=list(keys), n=n,  # type: ignore[operator]  # weighted needs w: viol_w is set
                           violations=int(st["viol"]), sample_uniques=int(st["uniq"]), achieved_k=int(st["min_fk"]),
                           n_combinations=int(st["classes"]), weight=w, weighted=bool(weighted),
                           violations_weighted=viol_w, blanks=blanks,
                           per_key=_per_key_parts(ctx.z, keys, int(st["uniq"]), ctx.cache, blanks))
    sx, nx, _ = res["x"]
    out.original = (sx["viol_w"] if weighted else sx["viol"]) / nx
    return out


def sample_uniques_parts(ctx: Any, keys: list[str], blanks: str = DEFAULT_READING) -> Any:
    """:func:`ppdm.metrics.keyvar.sample_uniques` of a partitioned release, exactly."""

    u, n = _uniques_cached(ctx.z, keys, ctx.cache, blanks)
    ux, nx = _uniques_cached(ctx.x, keys, ctx.cache, blanks)
    return SampleUniquesResult(value=u / n, keys=list(keys), n=n, sample_uniques=u, blanks=blanks,
                               per_key=_per_key_parts(ctx.z, keys, u, ctx.cache, blanks), original=ux / nx)


def reidentification_risk_parts(ctx: Any, keys: list[str], blanks: str = DEFAULT_READING) -> Any:
    """:func:`ppdm.metrics.keyvar.reidentification_risk` of a partitioned release (weights of the
    schema), exactly: individual risks per class of equal keys, summed over the classes."""

    x, z, w = _with_weight(ctx, "reidentification_risk", True)
    out = {}
    for label, df, orig in (("z", z, ctx.z), ("x", x, ctx.x)):
        ww = w if (w is not None and w in df.columns) else None
        if ww is not None:
            _check_weight_parts(df, ww, "re-identification risk")
        # unweighted classes of the evaluation's own tables are shared with k-anonymity
        st, n = _class_stats(orig if ww is None else df, keys, ww, 3, ctx.cache if ww is None else None, blanks)
        if st["bad"] > 0:
            raise PPDMError(f"re-identification risk: the sampling weights in column {ww!r} give {int(st['bad'])} "
                            "record(s) a population frequency Fk below their sample frequency fk; sampling weights "
                            "are inverse inclusion probabilities (≥ 1)")
        out[label] = (st, n, ww)
    st, n, ww = out["z"]
    res = ReidentificationRiskResult(value=st["er"] / n, keys=list(keys), weight=ww, n=n,
                                     expected_reidentifications=st["er"], global_risk_pct=100.0 * st["er"] / n,
                                     max_risk=st["max"], sample_uniques=int(st["uniq"]),
                                     n_combinations=int(st["classes"]), blanks=blanks,
                                     per_key=_per_key_parts(ctx.z, keys, int(st["uniq"]), ctx.cache, blanks))
    sx, nx, _ = out["x"]
    res.original = sx["er"] / nx
    return res


def _ldiversity_table(df: Any, keys: list[str], sensitive: list[str], l_target: int,
                      blanks: str = DEFAULT_READING) -> tuple[pd.DataFrame, int]:
    """Per sensitive attribute: the smallest distinct and entropy l over the groups of exact keys
    and the share of records in groups below ``l_target`` — two group-bys (key and value cells,
    then groups), as :func:`ppdm.metrics.keyvar.l_diversity` counts them. With blank keys read as
    wildcards the key and value cells (an aggregate, not records) are brought together and
    :func:`wildcard_ldiversity` reads them."""
    rows = []
    n = None
    split = max(1, df.npartitions)
    if blanks == "wildcard" and int(dask_compute(df[list(keys)].isna().any(axis=1).sum())[0]):
        for s in sensitive:
            cells = df[list(keys) + [s]].groupby(list(keys) + [s], dropna=False, observed=True).size()
            cells = cells.compute().rename("c").reset_index()
            c = cells["c"].to_numpy(dtype=float)
            inv, d, e = wildcard_ldiversity(key_codes(cells, list(keys)), _codes(cells[s]), c)
            size = np.bincount(inv, weights=c, minlength=len(d))
            n = int(c.sum())
            rows.append({"sensitive": s, "min_distinct_l": int(d.min()), "min_entropy_l": float(e.min()),
                         "records_below_l_target": float(size[d < l_target].sum() / n) if n else 0.0})
        return pd.DataFrame(rows), int(n or 0)
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


def _l_diversity_args(l_target: Any, sensitive: Any, columns: Any, keys: list[str]) -> list[str]:
    """Checks of l-diversity's arguments, shared by the in-memory and partitioned forms; the
    sensitive attributes as a list."""
    if isinstance(l_target, bool) or not isinstance(l_target, (int, np.integer)) or l_target < 1:
        raise ParameterError(f"l-diversity l_target must be an integer ≥ 1, got {l_target!r}")
    return check_sensitive(sensitive, columns, keys, measure="l-diversity")


def check_sensitive(sensitive: Any, columns: Any, keys: list[str], *, measure: str) -> list[str]:
    """The sensitive attributes as a list of column names (a comma list is split): refuses none
    (:class:`MeasureNotApplicable`, saying how to declare one), absent ones, and one that is
    also a quasi-identifier."""
    if isinstance(sensitive, str):
        sensitive = [s.strip() for s in sensitive.replace(";", ",").split(",") if s.strip()]
    sensitive = list(sensitive or [])
    if not sensitive:
        raise MeasureNotApplicable(
            f"{measure} needs a sensitive attribute; declare it with --sensitive or sensitive in a schema file "
            "(Schema(sensitive=[...]) in Python)")
    absent = [s for s in sensitive if s not in columns]
    if absent:
        raise SchemaError(f"{measure}: sensitive column(s) {', '.join(map(repr, absent))} not in the table")
    clash = [s for s in sensitive if s in keys]
    if clash:
        raise ParameterError(f"{measure}: {clash[0]!r} is both a quasi-identifier and the sensitive attribute")
    return sensitive


def l_diversity_parts(ctx: Any, keys: list[str], sensitive: Any, l_target: Any,
                      blanks: str = DEFAULT_READING) -> Any:
    """:func:`ppdm.metrics.keyvar.l_diversity` of a partitioned release, exactly."""
    sensitive = _l_diversity_args(l_target, sensitive, ctx.z.columns, keys)
    per, n = _ldiversity_table(ctx.z, keys, sensitive, int(l_target), blanks)
    per_x, _ = _ldiversity_table(ctx.x, keys, sensitive, int(l_target), blanks)
    return LDiversityResult(value=float(per["min_distinct_l"].min()), keys=list(keys), sensitive=sensitive,
                            l_target=int(l_target), n=n, blanks=blanks, per_sensitive=per,
                            original=float(per_x["min_distinct_l"].min()))
