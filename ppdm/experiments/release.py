"""Making a release the safe way: roles → anonymize → release check → provenance.

:func:`release` is what ``ppdm anonymize`` runs, so a library user gets the same
guarantees as the command line:

1. the columns' roles are settled (:func:`ppdm.data.roles.resolve_schema`): columns a
   given schema leaves out are refused, and undeclared columns that look like direct
   identifiers are refused, naming them;
2. identifier columns are taken out of the table *before* the technique sees it, so no
   technique can fit a model on them, and they stay out of the release unless
   ``keep_identifiers=True`` (then they are put back unchanged);
3. the technique runs; its Python warnings are collected (and passed on); its numeric
   output is rounded to the decimals the original columns were written with (or those
   asked for), so no float noise such as ``0.5720000000000001`` is published;
4. the release check (:mod:`ppdm.metrics.release_check`) compares z with x, and a
   release in which at least :data:`MAX_VERBATIM_SHARE` of the records come out unchanged
   on every column is refused unless ``allow_unchanged=True``;
5. the provenance record (:mod:`ppdm.data.provenance`) is assembled.

:func:`save_release` writes the table, its ``.provenance.json`` sidecar and the
technique's own sidecars, all or nothing.

About seeds: a technique built with ``random_state=None`` draws from the operating
system's entropy. With a known seed anyone can regenerate the random draws and undo much
of the perturbation, so a seed is a secret kept with x; the provenance only says whether
one was given.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ppdm import progress
from ppdm.data.codes import codes_read_as_numbers
from ppdm.data.provenance import (
    build_provenance,
    jsonable,
    private_path,
    private_text,
    provenance_path,
    provenance_text,
    table_sha256,
)
from ppdm.data.roles import Roles, resolve_schema
from ppdm.data.schema import Schema
from ppdm.data.types import round_to_decimals, source_decimals, working_frame
from ppdm.errors import ParameterError, PPDMError, SchemaError
from ppdm.metrics.release_check import ReleaseCheck, release_check

#: share of records published unchanged on every column from which a release is refused
MAX_VERBATIM_SHARE = 0.95
_COMMON = ("class_column", "schema", "random_state")


class ReleaseRefused(PPDMError):
    """The release would publish (numerically almost) the original records."""


@dataclass
class Release:
    """A release and everything known about how it was made.

    ``data`` is z as it is published (identifiers removed unless kept), ``technique``
    the fitted technique, ``schema`` the full schema with roles, ``check`` the release
    check, ``warnings`` the technique's warnings as ``"Category: message"`` lines and
    ``provenance`` the record :func:`save_release` writes beside the table; ``decimals``
    the number of decimals each float column was rounded to.
    """

    data: pd.DataFrame
    technique: Any
    schema: Schema
    check: ReleaseCheck
    removed_identifiers: list[str]
    kept_identifiers: list[str]
    seeded: bool
    warnings: list[str] = field(default_factory=list)
    provenance: dict[str, Any] = field(default_factory=dict)
    decimals: dict[str, int] = field(default_factory=dict)
    #: the owner's private log (:func:`ppdm.data.provenance.private_path`): counts, hash and
    #: check of x that the public provenance of a differentially private release leaves out
    private: dict[str, Any] = field(default_factory=dict)


def technique_record(technique: Any) -> dict[str, Any]:
    """Name, class and every parameter (defaults resolved) of a technique; no seed."""
    params = {k: v for k, v in technique.get_params(deep=False).items() if k not in _COMMON}
    return {"name": getattr(technique, "method_name", type(technique).__name__),
            "class": f"{type(technique).__module__}.{type(technique).__name__}",
            "parameters": jsonable(params)}


def release(
    x: pd.DataFrame,
    technique: Any,
    *,
    schema: Schema | None = None,
    identifiers: Iterable[str] | str | None = None,
    quasi_identifiers: Iterable[str] | str | None = None,
    sensitive: Iterable[str] | str | None = None,
    weight: str | None = None,
    other: Iterable[str] | str | None = None,
    keep_identifiers: bool = False,
    allow_unchanged: bool = False,
    detect_identifiers: bool = True,
    input_info: dict[str, Any] | None = None,
    decimals: dict[str, int] | None = None,
) -> Release:
    """Anonymize ``x`` with ``technique`` (an unfitted ppdm technique) into a checked release.

    Parameters
    ----------
    x:
        The original table, with any identifier and weight columns.
    technique:
        E.g. ``make_technique("gadp", class_column="y")``; its ``schema`` is used when
        ``schema`` is not given. A new instance with the same parameters is fitted; the
        one given is not modified.
    schema:
        Types and roles of every column; every column it names counts as declared.
        Without it the types are inferred and only the role arguments declare columns.
    identifiers, quasi_identifiers, sensitive, weight, other:
        Roles declared for some columns (names or comma lists); ``other`` marks ordinary
        attributes so that identifier screening accepts them.
    keep_identifiers:
        Put the identifier columns back into the release unchanged (default: removed).
    allow_unchanged:
        Release even when the check finds (numerically almost) the original records.
    detect_identifiers:
        Refuse undeclared columns that look like direct identifiers (default).
    input_info:
        ``source``, ``sha256``, ``rows``, ``columns`` of the input for the provenance;
        by default the table's own shape and content hash.
    decimals:
        Decimals of float attributes in the release, by column. Columns left out get as
        many as the column had in ``x`` (:func:`ppdm.data.types.decimals_of`: the fewest
        that reproduce every value); a column that needs full precision is not rounded.

    Codes written with digits (zip codes, municipality codes) must reach this function as
    text: read the file with :func:`ppdm.data.read_table`, which keeps ``01562`` as text, or
    declare the column categorical. ``pandas.read_csv`` makes them integers, and a technique
    then treats them as quantities (MDAV averages zip codes). A numeric attribute named like
    a code gets a warning (:func:`ppdm.data.codes.codes_read_as_numbers`), recorded with the
    release's other warnings.

    Raises
    ------
    SchemaError
        Columns without a role, suspected identifiers, bad tables (as the technique).
    ReleaseRefused
        At least ``MAX_VERBATIM_SHARE`` of the records come out unchanged on every column.
    """
    if not isinstance(x, pd.DataFrame):
        raise PPDMError(f"release expects a pandas DataFrame, got {type(x).__name__}")
    from ppdm.anonymize.composition import as_technique

    technique = as_technique(technique)  # a scikit-learn Pipeline of techniques: one composition
    given = schema if schema is not None else technique.schema
    if given is not None and not isinstance(given, Schema):
        given = Schema.from_dict(dict(given))
    declared_only = bool(getattr(technique, "declared_domain_only", False))
    # a release the technique itself declares not differentially private follows x's decimals
    from_data = bool(getattr(technique, "domain_from_data", False))
    if given is None and declared_only and not from_data:
        # a differentially private technique takes its types from a declaration, never from x's dtypes
        given = technique.declared_schema(list(map(str, x.columns)))
        if given is None:
            raise SchemaError(
                f"{type(technique).__name__} needs a declared schema (types, bounds and categories of every "
                "column), and none was given; pass schema=... (CLI: --schema; `ppdm schema DATA --domain-template` "
                "writes one to fill in), or domain_from_data=True to release without a differential privacy "
                "guarantee"
            )
    roles = Roles.of(identifiers, quasi_identifiers, sensitive, weight, other)
    sch = resolve_schema(x, schema=given, class_column=technique.class_column, roles=roles,
                         detect=detect_identifiers)
    ids = [c for c in sch.identifiers if c in x.columns]
    aligned = technique._keeps_rows()
    if keep_identifiers and ids and not aligned:
        raise PPDMError(f"{type(technique).__name__} releases synthetic records, which have no identifiers to keep; "
                        "drop keep_identifiers (CLI: --keep-identifiers)")
    work = x.drop(columns=ids)
    # the technique never sees an identifier: its schema has none and its table lacks them. A new
    # instance with the same parameter objects (sklearn's clone would unfit a fitted tree= given)
    tech = type(technique)(**technique.get_params(deep=False))
    tech.set_params(schema=replace(sch, identifiers=[]), class_column=sch.class_column)
    name = getattr(tech, "method_name", type(tech).__name__)
    with progress.steps(3, f"{name}: learning from {len(work)} records") as step:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            codes = codes_read_as_numbers(work, sch)  # e.g. zip codes read by pandas.read_csv
            for code in codes:
                warnings.warn(code.message(), UserWarning, stacklevel=2)
            tech.fit(work)
            step(1, description=f"{name}: releasing z")
            z = tech.transform(work)
            step(1, description=f"{name}: checking the release")
        lines = []
        for w in caught:
            line = f"{w.category.__name__}: {' '.join(str(w.message).split())}"
            if line not in lines:
                lines.append(line)
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        # recoding releases some numeric columns as labels: z is typed by the technique's output schema
        out_sch = tech.output_schema() if hasattr(tech, "output_schema") else sch
        out_sch = replace(out_sch, identifiers=list(sch.identifiers))
        # decimals seen in x are a property of the records: a technique whose output may only
        # depend on the declared domain is rounded to the decimals asked for, never to x's
        seen = {} if declared_only and not from_data else source_decimals(work, sch.numeric)
        dec = {**seen, **{c: int(d) for c, d in (decimals or {}).items()}}
        dec = {c: d for c, d in dec.items() if c in out_sch.numeric and c not in out_sch.dates}
        z = round_to_decimals(z, dec)
        check = release_check(working_frame(work, sch.numeric), working_frame(z, out_sch.numeric), out_sch,
                              record_aligned=aligned)
        step(1)
    privacy = getattr(tech, "privacy_report_", None)
    # a differentially private release may hold records equal to originals (small domains): its
    # guarantee covers them, and refusing it would make whether a release exists depend on x
    dp_release = isinstance(privacy, dict) and bool(privacy.get("differentially_private"))
    if check.share_verbatim >= MAX_VERBATIM_SHARE and not allow_unchanged and not dp_release:
        raise ReleaseRefused(
            f"the release is almost the original: {100 * check.share_verbatim:.1f}% of the records "
            f"({check.records_verbatim} of {check.n_records}) come out unchanged on every column "
            f"(refused from {100 * MAX_VERBATIM_SHARE:.0f}%); change the technique or its parameters, or "
            "release it anyway with allow_unchanged=True (CLI: --allow-unchanged)"
        )
    if keep_identifiers and ids:
        z = z.copy()
        for c in ids:
            z[c] = x[c].to_numpy()
        z = z[[c for c in x.columns]]
        check = release_check(working_frame(x, sch.numeric).reset_index(drop=True),
                              working_frame(z, out_sch.numeric).reset_index(drop=True), out_sch, columns=list(z.columns))
    seeded = technique.random_state is not None
    info = dict(input_info or {})
    info.setdefault("source", None)
    info.setdefault("sha256", table_sha256(x))
    info.setdefault("rows", len(x))
    info.setdefault("columns", x.shape[1])
    info.setdefault("rows_used", len(x))
    removed = [] if keep_identifiers else ids
    private: dict[str, Any] = {}
    public_info, public_check, public_lines = info, check, lines
    if declared_only:
        # any count, hash or check of x would undo the noisy count and more: they go to the
        # owner's private log, the public record keeps what made the release
        private = {"input": dict(info), "release_check": check,
                   "technique": getattr(tech, "private_report_", None)}
        public_info = {k: v for k, v in info.items() if k not in ("sha256", "rows", "rows_used", "fit_rows")}
        public_check = None
        # warnings read from x's records (how many values of a code look truncated) are counts of x too
        of_x = {f"UserWarning: {' '.join(code.message().split())}" for code in codes}
        public_lines = [line for line in lines if line not in of_x]
        if len(public_lines) < len(lines):
            private["warnings"] = [line for line in lines if line in of_x]
    record = build_provenance(
        technique=technique_record(tech),
        seeded=seeded,
        input_info=public_info,
        schema=sch.to_dict(),
        removed_identifiers=removed,
        release_check=public_check,
        privacy=privacy,
        kept_identifiers=ids if keep_identifiers else [],
        warnings=public_lines,
        output={"decimals": dec, "date_formats": {c: f for c, f in out_sch.dates.items() if c in z.columns},
                **({"schema": out_sch.to_dict()} if out_sch.to_dict() != sch.to_dict() else {})},
    )
    return Release(z, tech, sch, check, removed, ids if keep_identifiers else [], seeded, lines, record, dec,
                   private)


def hold_out(x: pd.DataFrame, fraction: float, random_state: Any = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Split ``x`` before anonymizing: (records to release, control set).

    The control set is a simple random sample of ``round(fraction · n)`` records (at least
    one, and at least one left to release), kept in the order of ``x``; the attacks of
    :mod:`ppdm.attacks` compare what the release tells about the released people with what
    it tells about these (Giomi et al. 2023 §3). The split is drawn from ``random_state``
    (OS entropy when ``None``).
    """
    from ppdm.utils import check_random_state

    try:
        f = float(fraction)
    except (TypeError, ValueError):
        raise ParameterError(f"holdout must be a fraction between 0 and 1, got {fraction!r}") from None
    if not 0.0 < f < 1.0:
        raise ParameterError(f"holdout must be a fraction strictly between 0 and 1, got {fraction!r}")
    n = len(x)
    k = int(round(f * n))
    if n < 2 or k < 1 or k >= n:
        raise ParameterError(f"holdout={f:g} of {n} records leaves no control record or no record to release")
    rng = check_random_state(random_state)
    mask = np.zeros(n, dtype=bool)
    mask[rng.choice(n, size=k, replace=False)] = True
    return x.loc[~mask].reset_index(drop=True), x.loc[mask].reset_index(drop=True)


def without_held_out(x: pd.DataFrame, control: pd.DataFrame) -> pd.DataFrame:
    """``x`` without the records of ``control`` (as a multiset: each control record removes
    one equal record of x), in x's order: the records a release made with a hold-out was
    made from. Refuses a control record that ``x`` does not hold."""
    cols = list(x.columns)
    key = "__ppdm_occurrence__"
    left = x.reset_index(drop=True).assign(**{key: 0})
    left[key] = left.groupby(cols, dropna=False, sort=False).cumcount()
    right = control[cols].reset_index(drop=True).assign(**{key: 0})
    right[key] = right.groupby(cols, dropna=False, sort=False).cumcount()
    hit = left.merge(right, on=[*cols, key], how="left", indicator=True)["_merge"].to_numpy() == "both"
    if int(hit.sum()) != len(control):
        raise PPDMError(f"{len(control) - int(hit.sum())} record(s) of the control set are not in the original "
                        "table, so it was not held out of this original")
    return x.loc[~hit].reset_index(drop=True)


def control_path(out: str | Path) -> Path:
    """Where the control set of release ``out`` goes: ``<out stem>.control<suffix>``."""
    out = Path(out)
    for suffix in (".csv.gz", ".csv", ".parquet", ".pq"):
        if out.name.lower().endswith(suffix):
            return out.with_name(out.name[: -len(suffix)] + ".control" + out.name[-len(suffix):])
    return out.with_name(f"{out.stem}.control{out.suffix}")


def save_release(rel: Release, out: str | Path, control: pd.DataFrame | None = None) -> list[Path]:
    """Write the release table, its provenance sidecar and the technique's sidecars (and,
    given, the control set held out before anonymizing, at :func:`control_path`).

    All or nothing: if any of them cannot be written, those already written are removed
    again, so a release never appears without its provenance. Returns the paths written.
    """
    from ppdm.data.io import atomic_path, atomic_write_text, check_output_table, write_table

    out = check_output_table(out)
    prov = provenance_path(out)
    written: list[Path] = []
    try:
        with atomic_path(prov) as tmp_prov:
            tmp_prov.write_text(provenance_text(rel.provenance), encoding="utf-8")
            write_table(rel.data, out, date_formats=rel.schema.dates)
            written.append(out)
        written.append(prov)
        if rel.private:
            written.append(atomic_write_text(private_path(out), private_text(rel.private)))
        if control is not None:
            write_table(control, control_path(out), date_formats=rel.schema.dates)
            written.append(control_path(out))
        extra = getattr(rel.technique, "write_sidecars", None)
        if callable(extra):
            written.extend(Path(p) for p in (extra(out) or []))
    except BaseException:
        for p in written:
            Path(p).unlink(missing_ok=True)
        raise
    return written
