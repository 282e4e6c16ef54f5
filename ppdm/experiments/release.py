"""Making a release the safe way: roles → anonymize → release check → shuffle → two records.

:func:`release` is what ``ppdm anonymize`` runs, so a library user gets the same
guarantees as the command line:

1. the columns' roles are settled (:func:`ppdm.data.roles.resolve_schema`): columns a
   given schema leaves out are refused, and undeclared columns that look like direct
   identifiers are refused, naming them;
2. with ``holdout``, a random share of the records is set aside as the control set of the
   attacks before anything else sees the table;
3. identifier columns are taken out of the table *before* the technique sees it, so no
   technique can fit a model on them, and they stay out of the release unless
   ``keep_identifiers=True`` (then they are put back unchanged);
4. the technique runs; its Python warnings are collected (and passed on); its numeric
   output is rounded to the decimals the original columns were written with (or those
   asked for), so no float noise such as ``0.5720000000000001`` is published;
5. the release check (:mod:`ppdm.metrics.release_check`) compares z with x — record by
   record and as multisets, so that a row-permuted copy is a copy — and the **gate**
   (:func:`ppdm.metrics.release_check.gate`) refuses a release that is (almost) the original,
   one with verbatim or near-verbatim records unique in x, one whose untouched
   quasi-identifiers make most records unique, or one with an untouched column that singles
   records out alone, each unless its ``allow_...`` argument says otherwise — differentially
   private releases included, the refusal naming ε — and names a setting of the technique's
   strength parameter found to pass on the same table (:func:`passing_strength`); it warns,
   naming the column responsible and a technique or parameter that would fix it, when a
   release is weak but under the refusal line (:class:`~ppdm.metrics.release_check.GateOptions`
   carries the thresholds and the overrides as one object); pass-through columns (the weight)
   that tell records apart are refused before any work;
6. the rows of z are **shuffled** (``shuffle=True``, the default): a release in the
   input's order would let anyone who knows that order pair each released row with its
   person. Techniques themselves keep the order (scikit-learn's contract); the shuffle is
   part of making a release. The pairing is kept for the owner only;
7. two records are assembled: the public provenance (:func:`ppdm.data.provenance.build_provenance`)
   and the owner's private log (:func:`ppdm.data.provenance.build_private`: input, release
   check, the pairing of z's rows with x's, the held-out rows).

:func:`save_release` writes the table, its public ``.provenance.json``, its private
``.private.json``, the control set and the technique's own sidecars, all or nothing.

``Release.data`` is z **as published**, i.e. shuffled; ``Release.pairing[j]`` is the row of
``x`` (as given to :func:`release`) that row ``j`` of ``Release.data`` was made from, and
:meth:`Release.in_input_order` gives z back in x's order for measures that compare records
one by one.

About seeds: a technique built with ``random_state=None`` draws from the operating
system's entropy, and so do the hold-out and the shuffle. With a known seed anyone can
regenerate the random draws and undo much of the perturbation, so a seed is a secret kept
with x; only the private log says whether one was given. An explicit seed makes the whole
release (hold-out, technique, shuffle) byte-identical from run to run.

The gate's refusals, warnings and advice (:mod:`ppdm.experiments._release_gate`), the search
for a setting that passes (:mod:`ppdm.experiments._release_search`) and what a release records
of how it was made, with the hold-out (:mod:`ppdm.experiments._release_records`), live in
private modules; every name of theirs is importable from here.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ppdm import progress
from ppdm.data.codes import codes_read_as_numbers
from ppdm.data.provenance import (
    build_private,
    build_provenance,
    check_sidecars_free,
    encode_positions,
    file_sha256,
    jsonable,
    private_path,
    private_text,
    provenance_path,
    provenance_text,
    table_sha256,
)
from ppdm.data.roles import Roles, resolve_schema
from ppdm.data.schema import Schema
from ppdm.data.types import working_frame
from ppdm.errors import ParameterError, PPDMError, SchemaError
from ppdm.experiments._release_gate import (  # noqa: F401  (re-exported: the public path stays this module)
    _COLUMN_TECHNIQUES,
    _FIXES,
    ReleaseRefused,
    ReleaseWarning,
    _dp_preface,
    _epsilon_text,
    _screen_pass_through,
    fix_advice,
    gate_setup,
    judge_release,
)
from ppdm.experiments._release_records import (  # noqa: F401  (re-exported: the public path stays this module)
    _COMMON,
    _owner_only,
    control_path,
    hold_out,
    holdout_mask,
    pairing_record,
    public_output_schema,
    release_rng,
    replay_warnings,
    technique_record,
    without_held_out,
)
from ppdm.experiments._release_search import (  # noqa: F401  (re-exported: the public path stays this module)
    SEARCH_SECONDS,
    SEARCH_TRIES,
    _Making,
    _search_one,
    _with,
    passing_strength,
    stronger_values,
)
from ppdm.metrics.release_check import (
    GateOptions,
    GateThresholds,
    ReleaseCheck,
    release_check,
)

#: share of records published unchanged on every column from which a release is refused (the default)
MAX_VERBATIM_SHARE = GateThresholds().unchanged
#: the release's own random streams (hold-out, shuffle), kept apart from the technique's draws
HOLDOUT_STREAM = 1
SHUFFLE_STREAM = 2
ROW_ORDER_SHUFFLED = "shuffled"
ROW_ORDER_KEPT = "as the input"


@dataclass(kw_only=True)
class ReleaseRecord:
    """What every release records of how it was made, in memory (:class:`Release`) or written as
    partitions (:class:`ppdm.experiments.out_of_core.DatasetRelease`): the fields are described
    on :class:`Release`."""

    technique: Any
    schema: Schema
    check: ReleaseCheck
    removed_identifiers: list[str]
    kept_identifiers: list[str]
    seeded: bool
    warnings: list[str] = field(default_factory=list)
    provenance: dict[str, Any] = field(default_factory=dict)
    decimals: dict[str, int] = field(default_factory=dict)
    private: dict[str, Any] = field(default_factory=dict)
    findings: list[dict[str, Any]] = field(default_factory=list)


@dataclass(kw_only=True)
class Release(ReleaseRecord):
    """A release and everything known about how it was made (built by name: its fields are many).

    ``data`` is z as it is published — shuffled unless ``shuffle=False``, identifiers
    removed unless kept; ``technique`` the fitted technique, ``schema`` the full schema
    with roles, ``check`` the release check, ``warnings`` the technique's warnings as
    ``"Category: message"`` lines, ``provenance`` the public record and ``private`` the
    owner's private log :func:`save_release` writes beside the table; ``decimals`` the
    number of decimals each float column was rounded to.

    ``pairing[j]`` is the position in the input table of the record row ``j`` of ``data``
    was made from (``None`` for a synthetic release, whose records are not made from
    particular ones); ``control`` the records held out as the control set (``None``
    without ``holdout``) and ``held_out`` their positions in the input table. ``findings``
    are the gate's warnings and the refusals an ``allow_...`` argument overrode
    (:meth:`ppdm.metrics.release_check.Finding.to_dict`, the message with its advice).
    """

    data: pd.DataFrame
    pairing: np.ndarray | None = None
    control: pd.DataFrame | None = None
    held_out: np.ndarray | None = None
    shuffled: bool = True

    def in_input_order(self) -> tuple[pd.DataFrame, np.ndarray]:
        """``(z, positions)``: the released rows sorted back into the input's order, and the
        input positions they pair with (row ``k`` of z with row ``positions[k]`` of x).
        Refused for a synthetic release, which has no pairing."""
        if self.pairing is None:
            raise PPDMError("a synthetic release has no pairing with the input's records")
        order = np.argsort(self.pairing, kind="stable")
        return self.data.iloc[order].reset_index(drop=True), self.pairing[order]


#: the keyword arguments of :func:`release` that go to the gate (:func:`gate_setup`), not to :class:`ReleaseOptions`
GATE_SETTINGS = ("allow_unchanged", "allow_verbatim", "allow_untouched_keys", "allow_pass_through", "gate_thresholds")
#: the role keyword arguments :meth:`ReleaseOptions.of` gathers into one :class:`~ppdm.data.roles.Roles`
_ROLE_SETTINGS = ("identifiers", "quasi_identifiers", "sensitive", "weight", "other")


@dataclass(frozen=True)
class ReleaseOptions:
    """How :func:`release` makes a release, apart from the technique, the schema and the gate
    (:class:`~ppdm.metrics.release_check.GateOptions`): one object rather than a dozen keyword
    arguments. The fields are :func:`release`'s parameters of the same names; ``roles`` holds
    the roles declared for some columns (identifiers, quasi-identifiers, sensitive, weight, other)."""

    roles: Roles = field(default_factory=Roles)
    keep_identifiers: bool = False
    detect_identifiers: bool = True
    input_info: dict[str, Any] | None = None
    decimals: dict[str, int] | None = None
    holdout: float | None = None
    shuffle: bool = True

    @classmethod
    def of(cls, options: ReleaseOptions | None = None, **settings: Any) -> ReleaseOptions:
        """Options from ``options`` (defaults when ``None``) with ``settings`` by name: the
        fields, or the roles one by one (``quasi_identifiers="a,b"``, which replace those roles
        of ``options``). An unknown name is refused."""
        base = options if options is not None else cls()
        if not isinstance(base, ReleaseOptions):
            raise ParameterError(f"release options must be a ReleaseOptions, got {type(base).__name__}")
        fields = set(cls.__dataclass_fields__)
        unknown = [k for k in settings if k not in fields and k not in _ROLE_SETTINGS]
        if unknown:
            raise ParameterError(f"release() has no setting {', '.join(map(repr, unknown))}")
        out = {k: v for k, v in settings.items() if k in fields}
        if "roles" in out and out["roles"] is None:
            out["roles"] = Roles()
        roles = {k: v for k, v in settings.items() if k in _ROLE_SETTINGS}
        if roles:
            if "roles" in out:
                raise ParameterError("give the roles either as roles=Roles(...) or one by one, not both")
            old = out.get("roles", base.roles)
            out["roles"] = Roles.of(**{k: roles.get(k, getattr(old, k)) for k in _ROLE_SETTINGS})
        return replace(base, **out)


def release(
    x: pd.DataFrame,
    technique: Any,
    options: ReleaseOptions | None = None,
    *,
    schema: Schema | None = None,
    gate_options: GateOptions | None = None,
    **settings: Any,
) -> Release:
    """Anonymize ``x`` with ``technique`` (an unfitted ppdm technique) into a checked release.

    Parameters
    ----------
    x:
        The original table, with any identifier and weight columns, as read (after the
        missing-value policy): the pairing counts its rows from 0.
    technique:
        E.g. ``make_technique("gadp", class_column="y")``; its ``schema`` is used when
        ``schema`` is not given. A new instance with the same parameters is fitted; the
        one given is not modified. Its ``random_state`` also seeds the hold-out and the
        shuffle (operating-system entropy when ``None``).
    options:
        How the release is made (:class:`ReleaseOptions`: the roles, identifiers kept or
        screened, decimals, hold-out, shuffle); ``settings`` given by name (the fields below)
        replace those of ``options``.
    schema:
        Types and roles of every column; every column it names counts as declared.
        Without it the types are inferred and only the role arguments declare columns.
    gate_options:
        Everything the gate is told as one object (:class:`~ppdm.metrics.release_check.GateOptions`:
        thresholds and overrides; what ``ppdm anonymize`` passes); the ``allow_...`` settings
        add to it, and ``gate_thresholds`` may not be given with it.
    identifiers, quasi_identifiers, sensitive, weight, other:
        Roles declared for some columns (names or comma lists); ``other`` marks ordinary
        attributes so that identifier screening accepts them.
    keep_identifiers:
        Put the identifier columns back into the release unchanged (default: removed).
    allow_unchanged:
        Release even when the check finds (numerically almost) the original records.
    allow_verbatim:
        Release even when more than ``verbatim_unique`` of the records come out unchanged
        while their original is unique in x on its quasi-identifiers.
    allow_untouched_keys:
        Release even when the quasi-identifiers no technique touched make more than
        ``untouched_unique`` of the original records unique.
    allow_pass_through:
        Pass-through columns (the weight) declared safe although nearly unique per record.
    gate_thresholds:
        The gate's thresholds (:class:`~ppdm.metrics.release_check.GateThresholds`, or a dict of
        some of them by name).
    detect_identifiers:
        Refuse undeclared columns that look like direct identifiers (default).
    input_info:
        ``source``, ``sha256``, ``rows``, ``columns``, ``missing``, ``rows_dropped`` of the
        input for the private log; by default the table's own shape and content hash.
    decimals:
        Decimals of float attributes in the release, by column. Columns left out get as
        many as the column had in ``x`` (:func:`ppdm.data.types.decimals_of`: the fewest
        that reproduce every value); a column that needs full precision is not rounded.
    holdout:
        Hold out this fraction of the records first, as the attacks' control set
        (``Release.control``, written by :func:`save_release`); see :func:`holdout_mask`.
    shuffle:
        Shuffle the released rows (default). ``False`` keeps the input's order, so anyone
        who knows that order can pair released rows with people: only for a release that
        stays with the owner.

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
        The gate refuses the release (see the module docstring); the message names the
        columns, a way to fix it and the ``allow_...`` argument that releases it anyway.
    """
    if not isinstance(x, pd.DataFrame):
        raise PPDMError(f"release expects a pandas DataFrame, got {type(x).__name__}")
    gate_settings = {k: settings.pop(k) for k in GATE_SETTINGS if k in settings}
    ropts = ReleaseOptions.of(options, **settings)
    opts = gate_setup(gate_options, gate_settings.pop("gate_thresholds", None), **gate_settings)
    keep_identifiers, input_info, decimals = ropts.keep_identifiers, ropts.input_info, ropts.decimals
    holdout, shuffle = ropts.holdout, ropts.shuffle
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
    sch = resolve_schema(x, schema=given, class_column=technique.class_column, roles=ropts.roles,
                         detect=ropts.detect_identifiers)
    ids = [c for c in sch.identifiers if c in x.columns]
    thresholds = opts.thresholds
    passing = _screen_pass_through(x, sch, opts)
    aligned = technique._keeps_rows()
    if keep_identifiers and ids and not aligned:
        raise PPDMError(f"{type(technique).__name__} releases synthetic records, which have no identifiers to keep; "
                        "drop keep_identifiers (CLI: --keep-identifiers)")
    n = len(x)
    if holdout is not None:
        held_mask = holdout_mask(n, holdout, release_rng(technique.random_state, HOLDOUT_STREAM))
        used, held = np.flatnonzero(~held_mask), np.flatnonzero(held_mask)
        xr = x.iloc[used].reset_index(drop=True)
    else:
        used, held = np.arange(n), None
        xr = x
    work = xr.drop(columns=ids)
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
            # one pass: a chain fits each step on the release of the one before, and that release
            # is z (fit, then transform, would make every step's release twice)
            started = time.monotonic()
            z = tech.fit_transform(work)
            step(2, description=f"{name}: checking the release")
        lines = replay_warnings(caught)
        made = _Making(work, sch, decimals, declared_only and not from_data, aligned, thresholds)
        z, out_sch, dec, check = made.finish(tech, z)
        took = time.monotonic() - started
        step(1)
    # a differentially private release is judged like any other: its guarantee bounds what any
    # record tells, but at a large ε it is met by copying x, and such a release must not pass as
    # private. Whether it is refused depends on x: the refusal goes to the owner only (nothing is
    # written), and an owner who accepts it says so with the allow_... argument
    findings = passing + judge_release(check, opts, technique_record(tech), sch,
                                       privacy=getattr(tech, "privacy_report_", None),
                                       search=(lambda cols: passing_strength(technique, made, opts, took, cols))
                                       if opts.suggest else None)
    if keep_identifiers and ids:
        z = z.copy()
        for c in ids:
            z[c] = xr[c].to_numpy()
        z = z[[c for c in x.columns]]
        check = release_check(working_frame(xr, sch.numeric).reset_index(drop=True),
                              working_frame(z, out_sch.numeric).reset_index(drop=True), out_sch,
                              columns=list(z.columns), thresholds=thresholds, decimals=dec)
    # the published order says nothing about x's: a fresh permutation (from the seed when one is given)
    order = release_rng(technique.random_state, SHUFFLE_STREAM).permutation(len(z)) if shuffle else None
    if order is not None:
        z = z.iloc[order].reset_index(drop=True)
    pairing = (used if order is None else used[order]) if aligned else None
    seeded = technique.random_state is not None
    info = dict(input_info or {})
    info.setdefault("source", None)
    info.setdefault("sha256", table_sha256(x))
    info.setdefault("columns", x.shape[1])
    info.setdefault("missing", None)
    info.setdefault("rows_dropped", 0)
    info.setdefault("rows", n + int(info["rows_dropped"] or 0))
    info["rows_kept"] = n
    info["rows_used"] = len(used)
    removed = [] if keep_identifiers else ids
    control = None
    hold_record = None
    if held is not None:
        control = x.iloc[held].drop(columns=removed).reset_index(drop=True)
        hold_record = {"fraction": float(holdout), "rows": len(held), "control": None,  # type: ignore[arg-type]  # held is set only with holdout
                       "positions": encode_positions(held)}
    record = build_provenance(
        technique=technique_record(tech),
        schema=sch.to_dict(),
        removed_identifiers=removed,
        privacy=getattr(tech, "privacy_report_", None),
        kept_identifiers=ids if keep_identifiers else [],
        output={"row_order": ROW_ORDER_SHUFFLED if shuffle else ROW_ORDER_KEPT, "decimals": dec,
                "date_formats": {c: f for c, f in out_sch.dates.items() if c in z.columns},
                **({"schema": public_output_schema(out_sch, sch, z)} if out_sch.to_dict() != sch.to_dict() else {})},
    )
    private = build_private(
        input_info=info,
        release_check=check,
        pairing=pairing_record(pairing, n) if pairing is not None else None,
        holdout=hold_record,
        technique=getattr(tech, "private_report_", None),
        warnings=lines,
        seeded=seeded,
        gate={"thresholds": jsonable(thresholds), "findings": findings},
        # the release's schema in full (with what recoding learnt from x): evaluate reads x with it
        **({"output_schema": out_sch.to_dict()} if out_sch.to_dict() != sch.to_dict() else {}),
    )
    return Release(data=z, technique=tech, schema=sch, check=check, removed_identifiers=removed,
                   kept_identifiers=ids if keep_identifiers else [], seeded=seeded, warnings=lines,
                   provenance=record, decimals=dec, private=private, pairing=pairing, control=control,
                   held_out=held, shuffled=bool(shuffle), findings=findings)


def save_release(rel: Release, out: str | Path, control: pd.DataFrame | None = None) -> list[Path]:
    """Write a release: the table, its public provenance, the owner's private log, the control
    set (``rel.control``, or ``control`` when given) and the technique's sidecars.

    Public: ``out`` and ``<stem>.provenance.json`` (:func:`ppdm.data.provenance.provenance_path`).
    Private, for the owner only (written readable by the owner alone): ``<stem>.private.json``
    (:func:`ppdm.data.provenance.private_path`) and ``<stem>.control<suffix>``
    (:func:`control_path`).

    All or nothing: if any of them cannot be written, those already written are removed
    again, so a release never appears without its provenance and private log. Returns the
    paths written (the release first).
    """
    from ppdm.data.io import atomic_path, check_output_table, write_table

    out = check_output_table(out)
    check_sidecars_free(out)
    prov = provenance_path(out)
    priv = private_path(out)
    ctrl = control if control is not None else rel.control
    written: list[Path] = []
    try:
        with atomic_path(prov) as tmp_prov:
            tmp_prov.write_text(provenance_text(rel.provenance), encoding="utf-8")
            write_table(rel.data, out, date_formats=rel.schema.dates)
            written.append(out)
        written.append(prov)
        private = dict(rel.private)
        private["release"] = out.name
        private["release_sha256"] = file_sha256(out)
        if ctrl is not None:
            cpath = control_path(out)
            write_table(ctrl, cpath, date_formats=rel.schema.dates)
            written.append(cpath)
            _owner_only(cpath)
            hold = dict(private.get("holdout") or {"fraction": None, "rows": len(ctrl), "positions": None})
            hold["control"] = cpath.name
            private["holdout"] = hold
        with atomic_path(priv) as tmp_priv:
            tmp_priv.write_text(private_text(private), encoding="utf-8")
            _owner_only(tmp_priv)
        written.append(priv)
        rel.private = private
        extra = getattr(rel.technique, "write_sidecars", None)
        if callable(extra):
            written.extend(Path(p) for p in (extra(out) or []))
    except BaseException:
        for p in written:
            Path(p).unlink(missing_ok=True)
        raise
    # the release first, then the public record, then the owner's files
    return written



# the public classes defined in the private siblings belong to this module's API: their reprs and
# tracebacks name it
for _cls in (ReleaseRefused, ReleaseWarning):
    _cls.__module__ = __name__
