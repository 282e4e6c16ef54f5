"""The release check: how much of a release z is still the original x — and the gate on it.

Run after every anonymization (``ppdm anonymize``, :func:`ppdm.experiments.release.release`)
and kept in the release's private log; also a measure of ``ppdm evaluate``. It compares z
with x in two ways:

* **record by record**, when the pairing of z's rows with x's is known (at ``anonymize``,
  before the rows are shuffled; at ``evaluate`` through the release's private log): a cell
  is unchanged when it equals its own original;
* **as multisets**, always: a released record is a *copy* when it equals some record of x on
  every compared column, each record of x matched at most once. A row-permuted copy of x is
  a copy in full, whatever the pairing says. Without a pairing (a file the owner did not
  pair) this is the only form: every count below is then taken among all of x.

It reports:

* the share of records whose quasi-identifiers come out unchanged (``value``; all
  attributes when no quasi-identifier is declared): an intruder who knows a person's
  quasi-identifiers finds them in z exactly as in x (without a pairing: the share of z's
  records whose quasi-identifiers occur in x, matched one to one);
* the records published as they were (``records_verbatim``: the larger of those equal to
  their own original and the copies), and among them those whose original is unique in x on
  its quasi-identifiers (``records_verbatim_unique``): such a record is found and fully
  disclosed by anyone who knows the quasi-identifiers;
* per column, the share of unchanged cells (without a pairing: of z's values matched one to
  one with x's values of the column, an upper bound) and the columns no technique touched;
* per quasi-identifier (``per_key``), whether it passed untouched, its distinct values and
  the share of x's records it makes unique alone, and for the untouched ones together the
  share of x's records they make unique (``untouched_keys_unique``);
* the number of records unique on their quasi-identifiers in z (sample uniques).

:func:`gate` turns the check into refusals and warnings (:class:`GateThresholds`).

A numeric cell counts as unchanged when it moved by at most ``tolerance`` (default
10⁻⁶) times the column's standard deviation in x: a release that differs from x only
in the last digits is numerically the original. Categorical cells must be equal;
a missing value in both tables counts as unchanged. Copies are exact equality of the
values as compared (numbers as float64, everything else as text).

The per-cell rules (:mod:`ppdm.metrics._release_check_cells`), the records' hashes
(:mod:`ppdm.metrics._release_check_hashes`), the result (:mod:`ppdm.metrics._release_check_result`),
the gate (:mod:`ppdm.metrics._release_check_gate`) and the check of partitioned tables
(:mod:`ppdm.metrics._release_check_parts`) live in private modules; every name of theirs is
importable from here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ppdm.data.schema import Schema
from ppdm.errors import SchemaError
from ppdm.metrics._common import column_moments, merge_moments  # noqa: F401  (also used from here)
from ppdm.metrics._release_check_cells import (  # noqa: F401  (re-exported: the public path stays this module)
    NEAR_TOLERANCE,
    TOLERANCE,
    UNTOUCHED_SHARE,
    _compared_columns,
    _is_numeric,
    _narrow_intervals,
    _numeric_set,
    check_columns,
    column_kinds,
    column_spread,
    near_cells,
    release_decimals,
    unchanged_cells,
)
from ppdm.metrics._release_check_gate import (  # noqa: F401  (re-exported: the public path stays this module)
    GATE_OVERRIDES,
    Finding,
    GateOptions,
    GateThresholds,
    _responsible_keys,
    _restorable_findings,
    _top_unchanged,
    _untouched_note,
    gate,
)
from ppdm.metrics._release_check_hashes import (  # noqa: F401  (re-exported: the public path stays this module)
    FOUND_BELOW,
    KeyCounts,
    _cell_hashes,
    _compute,
    _not_found,
    _RowHashes,
    _unique_mask,
    _unique_share,
    candidates_in,
    dask_copies,
    found_by_values,
    multiset_matches,
    qi_hashes,
)
from ppdm.metrics._release_check_parts import (  # noqa: F401  (re-exported: the public path stays this module)
    CheckPart,
    _release_check_dask_unpaired,
    check_partition,
    release_check_dask,
    release_check_from_parts,
)
from ppdm.metrics._release_check_result import (  # noqa: F401  (re-exported: the public path stays this module)
    PER_KEY_COLUMNS,
    ReleaseCheck,
    _pct,
)
from ppdm.metrics.base import EvaluationContext, register_measure


def release_check(
    x: pd.DataFrame,
    z: pd.DataFrame,
    schema: Schema,
    *,
    columns: Sequence[str] | None = None,
    tolerance: float = TOLERANCE,
    record_aligned: bool = True,
    thresholds: GateThresholds | dict[str, Any] | None = None,
    decimals: dict[str, int] | None = None,
) -> ReleaseCheck:
    """Compare a release ``z`` with the original ``x`` (see the module docstring).

    ``thresholds`` (:class:`GateThresholds`) give the share of unchanged cells from which a
    column counts as untouched (``untouched_share``) and the near-verbatim tolerance
    (``near_verbatim``); ``decimals`` the decimals z's numeric columns were rounded to (by
    default read from z, :func:`release_decimals`).

    ``columns`` are the columns compared (default: every column of z that x has);
    the quasi-identifiers are ``schema.quasi_identifiers``, or all of the schema's
    attributes when none is declared.

    ``record_aligned=True`` says that row ``i`` of z was made from row ``i`` of x (the pairing
    known): records are compared with their own originals, and as multisets besides. With
    ``record_aligned=False`` (a synthetic release with its own number of records, or a z whose
    rows the owner did not pair with x's) every count is taken among all of x, records and
    values matched one to one (exact equality).
    """
    if len(x) == 0 or len(z) == 0:
        raise SchemaError("the release check needs at least one record in x and in z")
    cols, qi, declared = _compared_columns(x, z, schema, columns)
    if record_aligned and len(x) != len(z):
        raise SchemaError(f"the release check compares records one by one: x has {len(x)} rows, z has {len(z)}")
    t = GateThresholds.of(thresholds)
    xv, zv = x.reset_index(drop=True), z.reset_index(drop=True)
    numeric = _numeric_set(schema)
    kinds = {c: _is_numeric(c, schema, numeric, xv, zv) for c in cols}
    hx, hz = _RowHashes(xv, kinds), _RowHashes(zv, kinds)
    n = len(zv)
    same: dict[str, np.ndarray] = {}
    near_all = np.ones(n, dtype=bool) if record_aligned else np.zeros(n, dtype=bool)
    dec = release_decimals(zv, kinds) if decimals is None and record_aligned else dict(decimals or {})
    rows: list[dict[str, Any]] = []
    for c in cols:
        if record_aligned:
            same[c] = unchanged_cells(xv[c], zv[c], kinds[c], tolerance)
            near_all &= same[c] | near_cells(xv[c], zv[c], kinds[c], t.near_verbatim, decimals=dec.get(c))
            share = float(same[c].mean())
        else:
            share = multiset_matches(hx.of([c]), hz.of([c])) / n
        role = schema.role(c) if c in schema.all_columns else "not in the schema"
        rows.append({"column": c, "role": role, "kind": "numeric" if kinds[c] else "categorical",
                     "share_unchanged": share, "touched": bool(share < 1.0)})
    per_column = pd.DataFrame(rows, columns=["column", "role", "kind", "share_unchanged", "touched"])
    untouched = [r["column"] for r in rows if not r["touched"]]
    # copies among all of x: the multiset intersection of whole records
    full_x, full_z = hx.of(cols), hz.of(cols)
    copied = multiset_matches(full_x, full_z)
    qi_x = hx.of(qi) if qi else np.zeros(len(xv), dtype=np.uint64)
    unique_x = _unique_mask(qi_x) if qi else np.zeros(len(xv), dtype=bool)
    # verbatim and unique is judged on all compared columns: a record unique in x on its
    # quasi-identifiers is unique on all of them, and one unique only on all of them is still a
    # true record of one person in full (at most one copy matches it)
    unique_all = _unique_mask(full_x)
    has_copy = np.isin(full_x, full_z)
    if record_aligned:
        all_same = np.ones(n, dtype=bool)
        for c in cols:
            all_same &= same[c]
        qi_same = np.ones(n, dtype=bool)
        for c in qi:
            qi_same &= same[c]
        paired = int(all_same.sum())
        records_unchanged = int(qi_same.sum()) if qi else n
        exact = (all_same | has_copy) & unique_all
        exact &= found_by_values(xv, zv, cols, hx, hz, exact)
        verbatim_unique = int(exact.sum())
        near_unique = int((exact | (near_all & ~all_same & ~has_copy & unique_all)).sum())
    else:
        paired = 0
        records_unchanged = multiset_matches(qi_x, hz.of(qi)) if qi else n
        exact = has_copy & unique_all
        verbatim_unique = near_unique = int((exact & found_by_values(xv, zv, cols, hx, hz, exact)).sum())
    verbatim = max(paired, copied)
    # without a pairing a column's values matched as multisets say nothing of a record keeping
    # its own: only a column matched in full counts as untouched there
    share_untouched = t.untouched_share if record_aligned else 1.0
    keys = _per_key(xv, hx, qi, per_column, share_untouched)
    untouched_keys = [str(r.column) for r in keys.itertuples() if r.untouched]  # names are str already
    alone = ({r["column"]: _unique_share(hx.of([r["column"]])) for r in rows
              if r["share_unchanged"] >= share_untouched} if record_aligned else {})
    return ReleaseCheck(
        value=records_unchanged / n if qi else 1.0,
        n_records=n,
        quasi_identifiers=qi,
        quasi_identifiers_declared=declared,
        records_unchanged=records_unchanged,
        records_verbatim=verbatim,
        share_verbatim=verbatim / n,
        unique_in_z=int(_unique_mask(hz.of(qi)).sum()) if qi else 0,
        untouched_columns=untouched,
        tolerance=float(tolerance),
        per_column=per_column,
        record_aligned=bool(record_aligned),
        records_copied=copied,
        records_verbatim_paired=paired,
        records_verbatim_unique=verbatim_unique,
        share_verbatim_unique=verbatim_unique / n,
        unique_in_x=int(unique_x.sum()),
        untouched_keys=untouched_keys,
        untouched_keys_unique=_unique_share(hx.of(untouched_keys)) if untouched_keys else 0.0,
        per_key=keys,
        untouched_share=float(share_untouched),
        near_tolerance=float(t.near_verbatim),
        records_near_verbatim=int(near_all.sum()),
        records_near_verbatim_unique=near_unique,
        share_near_verbatim_unique=near_unique / n,
        unique_in_x_all=int(unique_all.sum()),
        untouched_alone=alone,
        restorable_keys=_restorable_keys(xv, zv, qi, cols, record_aligned),
    )


def _restorable_keys(x: pd.DataFrame, z: pd.DataFrame, qi: list[str], columns: list[str],
                     paired: bool) -> pd.DataFrame:
    """The pairs (key, compared column) where the column gives a blanked or recoded key back
    (:func:`ppdm.metrics.restorable.restorable_pairs`), for the ``warn_restorable_key`` finding."""
    from ppdm.metrics.restorable import restorable_pairs  # loaded only when a check runs

    return restorable_pairs(x, z, qi, columns, paired=paired)[0] if qi else pd.DataFrame()


def _per_key(xv: pd.DataFrame, hx: _RowHashes, qi: Sequence[str], per_column: pd.DataFrame,
             untouched_share: float = UNTOUCHED_SHARE) -> pd.DataFrame:
    """The per-quasi-identifier table (see :class:`ReleaseCheck`); a key is untouched from
    ``untouched_share`` of unchanged cells."""
    share = dict(zip(per_column["column"], per_column["share_unchanged"], strict=True))
    untouched = [c for c in qi if share.get(c, 0.0) >= untouched_share]
    together = _unique_share(hx.of(untouched)) if untouched else 0.0
    rows = []
    for c in qi:
        drop = float("nan")
        if c in untouched:
            rest = [k for k in untouched if k != c]
            drop = together - (_unique_share(hx.of(rest)) if rest else 0.0)
        rows.append({"column": c, "share_unchanged": float(share.get(c, 0.0)), "untouched": c in untouched,
                     "distinct_x": int(xv[c].nunique(dropna=False)), "unique_alone": _unique_share(hx.of([c])),
                     "unique_drop": drop})
    return pd.DataFrame(rows, columns=PER_KEY_COLUMNS)


@register_measure(
    "release_check",
    kind="risk",
    options=(),
    description="share of records whose quasi-identifiers (all attributes if none declared) are unchanged in z "
                "(without a pairing: occur in x), with verbatim records and copies as multisets",
    needs_class=False,
    direction="lower",
    value_range=(0.0, 1.0),
    meaning="The share of released records whose quasi-identifiers (all attributes when none are declared) "
    "are exactly their original values, so an intruder who knows them finds the person unchanged; 0 is best.",
    threshold=0.05,
    out_of_core=True,
)
def _release_check_measure(ctx: EvaluationContext) -> ReleaseCheck:
    from ppdm.metrics._common import is_dask

    if is_dask(ctx.x) or is_dask(ctx.z):
        return release_check_dask(ctx.x, ctx.z, ctx.schema, record_aligned=ctx.paired)
    return release_check(ctx.x, ctx.z, ctx.schema, record_aligned=ctx.paired and len(ctx.x) == len(ctx.z))


# the public classes defined in the private siblings belong to this module's API: their reprs and
# tracebacks name it
for _cls in (ReleaseCheck, GateOptions, GateThresholds, Finding, CheckPart):
    _cls.__module__ = __name__
