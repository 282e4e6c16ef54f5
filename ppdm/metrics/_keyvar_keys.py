"""Which quasi-identifiers a key-variable measure reads, and what the release did to each.

The status of every key in the release (unchanged, generalised or perturbed:
:func:`key_status`, with :func:`released_covers` for generalised values), the quasi-identifiers
inferred when none are declared, and the helpers that read a measure's keys, weight, blank
reading and hierarchies from its :class:`~ppdm.metrics.base.EvaluationContext`. Split from
:mod:`ppdm.metrics.keyvar`, which re-exports every name here.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from ppdm.data.blanks import (
    DEFAULT_READING,
    check_reading,
)
from ppdm.errors import MeasureNotApplicable, ScenarioNotApplicable, SchemaError
from ppdm.metrics._dask import pair_partitions
from ppdm.metrics._keyvar_frequencies import (
    HOW_TO_DECLARE,
    KeyFrequencies,
    check_keys,
    key_frequencies,
)
from ppdm.metrics.base import EvaluationContext

# ------------------------------------------- which keys reach the release as they were
#: how a quasi-identifier reaches the release: every released value equal to its original,
#: every one standing for a set holding it (interval, group, suppressed cell), or neither
KEY_STATUSES = ("unchanged", "generalised", "perturbed")


def _is_number(s: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)


def released_covers(released: pd.Series, original: pd.Series,
                    ancestors: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Record by record: whether the released value equals its original (a missing value
    equals a missing one), and whether it stands for it
    (:func:`ppdm.data.generalization.covers`: equal, suppressed, an interval or a group
    holding the original, or an original the intruder does not know)."""
    zm = released.isna().to_numpy()
    xm = original.isna().to_numpy()
    if _is_number(released) and _is_number(original):
        zv = released.to_numpy(dtype=float, na_value=np.nan)
        xv = original.to_numpy(dtype=float, na_value=np.nan)
        eq = (zv == xv) | (zm & xm)
        return eq, eq | zm | xm
    from ppdm.data.generalization import covers

    zo = released.to_numpy(dtype=object)
    xo = original.to_numpy(dtype=object)
    both = ~zm & ~xm
    eq = zm & xm
    eq[both] = zo[both] == xo[both]
    cov = eq | zm | xm
    rest = ~cov
    if rest.any():
        cov[rest] = covers(released[rest], original[rest], ancestors=ancestors)
    return eq, cov


def _unpaired_status(released: pd.Series, original: pd.Series, ancestors: Any = None) -> str:
    """A key's status without a record pairing, from the values alone: unchanged when the
    released values are the originals' (the same multiset); generalised when every released
    value that is not an interval, a group label or a suppressed cell occurs in x at least
    as often as in z; perturbed otherwise."""
    from ppdm.data.generalization import parse_interval

    zc = released.value_counts(dropna=False)
    xc = original.value_counts(dropna=False)
    if len(zc) == len(xc) and zc.sort_index().equals(xc.reindex(zc.index).sort_index()):
        return "unchanged"
    labels = {lab for ups in (ancestors or {}).values() for lab in ups}
    for v, c in zc.items():
        if pd.isna(v) or v in labels or parse_interval(v) is not None:  # type: ignore[call-overload]  # pandas-stubs: isna takes any scalar label at run time
            continue
        if c > int(xc.get(v, 0)):
            return "perturbed"
    return "generalised"


def key_status(x: pd.DataFrame, z: pd.DataFrame, keys: Any, *, paired: bool = True,
               hierarchies: dict[str, Any] | None = None) -> pd.DataFrame:
    """How each quasi-identifier reaches the release, with the shares behind it.

    With ``paired`` records (row i of z releases row i of x, as many rows): a key is
    ``unchanged`` when every released value equals its original, ``generalised`` when every
    one stands for it (:func:`released_covers`: an interval or a hierarchy group holding it,
    a suppressed cell) and some differ, and ``perturbed`` otherwise — noise, swaps,
    microaggregation and synthetic values give a released value that does not stand for the
    original. ``changed`` and ``not_covered`` are the shares of records whose released value
    differs from, and does not stand for, the original. Without a pairing the status is read
    from the values (:func:`_unpaired_status`) and the shares are missing.
    ``hierarchies`` maps a key to its ``{original: [generalised labels]}``.
    """
    keys = check_keys(z, keys, measure="key status")
    absent = [k for k in keys if k not in x.columns]
    if absent:
        raise SchemaError(f"key status: quasi-identifier(s) {', '.join(map(repr, absent))} not in the original")
    rows = []
    for k in keys:
        anc = (hierarchies or {}).get(k)
        if paired and len(x) == len(z):
            eq, cov = released_covers(z[k].reset_index(drop=True), x[k].reset_index(drop=True), anc)
            status = "unchanged" if eq.all() else "generalised" if cov.all() else "perturbed"
            rows.append({"key": k, "status": status, "changed": float(1.0 - eq.mean()),
                         "not_covered": float(1.0 - cov.mean()), "basis": "record pairs"})
        else:
            rows.append({"key": k, "status": _unpaired_status(z[k], x[k], anc), "changed": np.nan,
                         "not_covered": np.nan, "basis": "values"})
    kept = [r["key"] for r in rows if r["basis"] == "values" and r["status"] == "unchanged"]
    if len(kept) > 1 and joint_overlap(x, z, kept) < JOINT_KEPT:
        # each key's values are x's, but their combinations are not: the keys were redrawn one by one
        # (independent marginals, swaps), so no person's combination reaches z as it was
        for r in rows:
            if r["key"] in kept:
                r["status"], r["basis"] = "perturbed", "values (combinations redrawn)"
    return pd.DataFrame(rows, columns=["key", "status", "changed", "not_covered", "basis"])


#: share of z's key combinations that must be x's (as multisets) for keys read by their values to
#: count as reaching the release unchanged together
JOINT_KEPT = 0.95


def joint_overlap(x: pd.DataFrame, z: pd.DataFrame, keys: list[str]) -> float:
    """The share of z's records whose combination of ``keys`` is matched by a record of x, each record
    of x matching once (multiset overlap: Σ min(count in x, count in z) / len(z))."""
    if len(z) == 0:
        return 1.0
    hx = pd.util.hash_pandas_object(x[keys].reset_index(drop=True).astype(object), index=False)
    hz = pd.util.hash_pandas_object(z[keys].reset_index(drop=True).astype(object), index=False)
    both = pd.concat([hx.value_counts().rename("x"), hz.value_counts().rename("z")], axis=1).fillna(0)
    return float(np.minimum(both["x"], both["z"]).sum() / len(z))


# ------------------------------------------------- the keys a measure reads from its context
def infer_quasi_identifiers(schema: Any, df: pd.DataFrame | None = None) -> list[str]:
    """Quasi-identifiers guessed from the roles when none are declared: the categorical
    attributes that are not the class, not sensitive and not the weight, and (given ``df``)
    not nearly unique (fewer distinct values than half the records, so a free-text or code
    column is not taken for a key). At most 12 are taken, in column order.

    Numeric attributes are left out: a released numeric value is compared by value, and a
    perturbed one rarely equals another record's, so every record would look unique. The
    guess stands for an intruder who knows a person's categorical facts (sex, race, job,
    ...); declare the quasi-identifiers for any other intruder.
    """
    skip = {schema.class_column, schema.weight, *schema.sensitive, *schema.identifiers}
    cand = [c for c in schema.categorical if c not in skip]
    if df is None:
        return cand[:12]
    from ppdm.metrics._common import is_dask

    present = [c for c in cand if c in df.columns]
    if is_dask(df):  # counted partition by partition, in one pass
        import dask

        from ppdm.metrics._dask import partition_lengths

        distinct = dict(zip(present, dask.compute(*[df[c].nunique(dropna=True) for c in present]), strict=True))
        n = sum(partition_lengths(df))
    else:
        distinct = {c: df[c].nunique(dropna=True) for c in present}
        n = len(df)
    return [c for c in cand if not (c in distinct and distinct[c] * 2 > n)][:12]


def context_keys(ctx: EvaluationContext, measure: str) -> list[str]:
    """The quasi-identifiers of an evaluation: the ``keys`` option, else the schema's, else
    (option ``infer_keys``, on by default) :func:`infer_quasi_identifiers`. The keys used and
    where they came from are kept on the result (``keys``, ``key_source``)."""
    keys = ctx.options.get(f"{measure}.keys", ctx.options.get("keys")) or ctx.schema.quasi_identifiers
    source = "declared"
    if isinstance(keys, str):
        keys = [k.strip() for k in keys.replace(";", ",").split(",") if k.strip()]
    if not keys and str(ctx.options.get("infer_keys", True)).lower() not in ("false", "0", "no"):
        keys = infer_quasi_identifiers(ctx.schema, ctx.z)
        source = "inferred"
    if not keys:
        raise MeasureNotApplicable(f"{measure} needs quasi-identifiers (key variables) and none could be inferred "
                                   f"(no categorical attribute besides the class); {HOW_TO_DECLARE}")
    ctx.cache["key_source"] = source
    return list(keys)


def declared_weight(ctx: EvaluationContext, measure: str) -> str | None:
    """The sampling-weight column a measure reads (its own option, the general one, the schema's),
    or None; refuses one that is in neither table. Shared by the in-memory and partitioned readers."""
    w = ctx.options.get(f"{measure}.weight", ctx.options.get("weight", ctx.schema.weight))
    if w is not None and w not in ctx.x.columns and w not in ctx.z.columns:
        raise SchemaError(f"{measure}: weight column {w!r} is in neither the original nor the released table")
    return w


def context_weight(ctx: EvaluationContext, measure: str) -> tuple[pd.DataFrame, pd.DataFrame, str | None]:
    """x and z with the sampling-weight column of the schema (``None`` when there is none).

    A release keeps its records in the order of x (every technique does), so when z lacks
    the weight column the weights of x are used for z, record for record.
    """
    w = declared_weight(ctx, measure)
    x, z = ctx.x, ctx.z
    if w is None:
        return x, z, None
    if w not in z.columns:
        if len(z) != len(x):
            raise SchemaError(f"{measure}: the released table has no weight column {w!r}, and its records "
                              "do not match the original's one to one")
        z = z.assign(**{w: x[w].to_numpy()})
    if w not in x.columns:
        x = x.assign(**{w: z[w].to_numpy()}) if len(x) == len(z) else x
    return x, z, w


def _context_frequencies(
    ctx: EvaluationContext, table: str, df: pd.DataFrame, keys: list[str], weight: str | None = None,
    blanks: str = DEFAULT_READING,
) -> KeyFrequencies:
    """fk/Fk of x or z on ``keys``, computed once per evaluation: k-anonymity, sample uniques
    and re-identification risk all count the same key combinations."""
    name = f"key_frequencies:{table}:{weight}:{blanks}:" + "\x1f".join(keys)
    if name not in ctx.cache:
        ctx.cache[name] = key_frequencies(df, keys, weight, blanks=blanks)
    return ctx.cache[name]


def context_blanks(ctx: EvaluationContext, measure: str) -> str:
    """How a key-variable measure of an evaluation reads a blank: its ``blanks`` option
    (``-p k_anonymity.blanks=strict``), else a plain ``blanks`` option shared by every key-variable
    measure, else :data:`ppdm.data.blanks.DEFAULT_READING` (sdcMicro's wildcard)."""
    return check_reading(_opt(ctx, measure, "blanks", ctx.options.get("blanks")))


def _opt(ctx: EvaluationContext, measure: str, name: str, default: Any) -> Any:
    """A measure option given as ``measure.name`` or ``{measure: {name: ...}}``. Plain ``name`` is
    not read: ``k`` and ``l`` mean other things to other measures (IDR's interval width)."""
    nested = ctx.options.get(measure)
    if isinstance(nested, dict) and name in nested:
        return nested[name]
    return ctx.options.get(f"{measure}.{name}", default)


def _truthy(v: Any) -> bool:
    if isinstance(v, str):
        return v.strip().lower() in ("1", "true", "yes", "on")
    return bool(v)


def context_hierarchies(ctx: EvaluationContext) -> dict[str, Any]:
    """The schema's category hierarchies (``{column: {original: [labels, fine to coarse]}}``), if any."""
    return dict(getattr(ctx.schema, "hierarchies", None) or {})


def context_key_status(ctx: EvaluationContext, keys: list[str]) -> pd.DataFrame:
    """:func:`key_status` of the evaluation's quasi-identifiers, computed once per evaluation
    (partition pair by partition pair for partitioned tables)."""
    name = "key_status:" + "\x1f".join(keys)
    if name not in ctx.cache:
        from ppdm.metrics._common import is_dask

        if is_dask(ctx.x) or is_dask(ctx.z):
            ctx.cache[name] = key_status_parts(ctx.x, ctx.z, keys, context_hierarchies(ctx))
        else:
            ctx.cache[name] = key_status(ctx.x, ctx.z, keys, paired=ctx.is_paired,
                                         hierarchies=context_hierarchies(ctx))
    return ctx.cache[name]


def judged_keys(ctx: EvaluationContext, measure: str) -> tuple[list[str], list[str]]:
    """The quasi-identifiers a key-variable measure judges the release on, and those it leaves out.

    Key frequencies speak of re-identification only for an intruder who can find a person's
    known values in the release: on keys that reach z unchanged or generalised
    (:func:`key_status`). A perturbed key is left out here — the intruder's chance on it is
    what ``qi_matching`` measures. With every key perturbed the measure does not apply
    (:class:`MeasureNotApplicable`, naming the keys). The option ``all_keys=true`` counts
    every key as it is released (the release's own uniqueness, as sdcMicro would on z).
    """
    keys = context_keys(ctx, measure)
    if _truthy(_opt(ctx, measure, "all_keys", False)):
        return keys, []
    st = context_key_status(ctx, keys)
    perturbed = [k for k, v in zip(st["key"], st["status"], strict=True) if v == "perturbed"]
    kept = [k for k in keys if k not in perturbed]
    if not kept:
        how = ", ".join(f"{k} ({c:.1%} of records changed)" if np.isfinite(c) else k
                        for k, c in zip(st["key"], st["changed"], strict=True))
        raise ScenarioNotApplicable(
            # the measure's own name left out and what varies said first, so that reports give the shared
            # reason once for all key-variable measures and every run
            f"all quasi-identifiers are perturbed, {how}: key frequencies judge only unchanged or generalised "
            f"ones — qi_matching judges this intruder (-p <measure>.all_keys=true computes it anyway)")
    return kept, perturbed


def lookup_keys(ctx: EvaluationContext, measure: str, sensitive: list[str]) -> tuple[list[str], list[str]]:
    """:func:`judged_keys` less the ``sensitive`` attributes, for a measure of what an intruder
    learns: a sensitive attribute is what they learn, never what they look a person up by.
    With no key left the measure does not apply (:class:`ScenarioNotApplicable`)."""
    keys, perturbed = judged_keys(ctx, measure)
    keys = [k for k in keys if k not in sensitive]
    if not keys:
        raise ScenarioNotApplicable("every quasi-identifier left to look a person up by is perturbed or sensitive")
    return keys, perturbed


def _finish(res: Any, ctx: EvaluationContext, perturbed: list[str]) -> Any:
    res.key_source = ctx.cache.get("key_source", "")
    res.perturbed_keys = list(perturbed)
    return res


# ------------------------------------------------- key status of partitioned tables
def key_status_parts(x: Any, z: Any, keys: list[str], hierarchies: dict[str, Any]) -> pd.DataFrame:
    """:func:`ppdm.metrics.keyvar.key_status` of partitioned tables (record pairs partition by
    partition): the same table as in memory."""

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
