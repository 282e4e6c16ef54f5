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
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable, Iterable
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
from ppdm.data.roles import Roles, pass_through_message, resolve_schema, screen_pass_through
from ppdm.data.schema import Schema
from ppdm.data.types import round_to_decimals, source_decimals, working_frame
from ppdm.errors import ParameterError, PPDMError, SchemaError
from ppdm.metrics.release_check import (
    GATE_OVERRIDES,
    Finding,
    GateOptions,
    GateThresholds,
    ReleaseCheck,
    gate,
    release_check,
)

#: share of records published unchanged on every column from which a release is refused (the default)
MAX_VERBATIM_SHARE = GateThresholds().unchanged
_COMMON = ("class_column", "schema", "random_state")
#: the release's own random streams (hold-out, shuffle), kept apart from the technique's draws
HOLDOUT_STREAM = 1
SHUFFLE_STREAM = 2
ROW_ORDER_SHUFFLED = "shuffled"
ROW_ORDER_KEPT = "as the input"


class ReleaseRefused(PPDMError):
    """The release gate refuses it: (almost) the original records, verbatim records unique in x,
    untouched quasi-identifiers that single records out, or a pass-through column that does."""


class ReleaseWarning(UserWarning):
    """The release gate finds a release weak, under its refusal line (the message names the
    column responsible and what would fix it)."""


@dataclass(kw_only=True)
class Release:
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
    pairing: np.ndarray | None = None
    control: pd.DataFrame | None = None
    held_out: np.ndarray | None = None
    shuffled: bool = True
    findings: list[dict[str, Any]] = field(default_factory=list)

    def in_input_order(self) -> tuple[pd.DataFrame, np.ndarray]:
        """``(z, positions)``: the released rows sorted back into the input's order, and the
        input positions they pair with (row ``k`` of z with row ``positions[k]`` of x).
        Refused for a synthetic release, which has no pairing."""
        if self.pairing is None:
            raise PPDMError("a synthetic release has no pairing with the input's records")
        order = np.argsort(self.pairing, kind="stable")
        return self.data.iloc[order].reset_index(drop=True), self.pairing[order]


def technique_record(technique: Any) -> dict[str, Any]:
    """Name, class and every parameter (defaults resolved) of a technique; no seed.

    A chain (:class:`~ppdm.anonymize.composition.Composition`, ``--then``) is named by its
    steps (``"recode then pram"``) and records each step as a technique record of its own
    under ``parameters.steps`` (with ``step``, its name in the chain), so that reports describe
    it in words and readers find each step's parameters (never a Python repr of a step, its
    schema or its hierarchies)."""
    from ppdm.anonymize.composition import Composition

    cls = f"{type(technique).__module__}.{type(technique).__name__}"
    if isinstance(technique, Composition):
        steps = [{"step": name, **technique_record(est)} for name, est in technique._named_steps()]
        return {"name": " then ".join(str(s["name"]) for s in steps), "class": cls, "parameters": {"steps": steps}}
    params = {k: v for k, v in technique.get_params(deep=False).items() if k not in _COMMON}
    return {"name": getattr(technique, "method_name", type(technique).__name__),
            "class": cls,
            "parameters": jsonable(params)}


def release_rng(random_state: Any, stream: int) -> np.random.Generator:
    """The generator of one of the release's own steps (:data:`HOLDOUT_STREAM`,
    :data:`SHUFFLE_STREAM`): operating-system entropy without a seed, else derived from the
    seed and the step, so that the step's draws are reproducible and independent of the
    technique's."""
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        return np.random.default_rng([int(random_state), stream])
    from ppdm.utils import check_random_state

    gen = check_random_state(random_state)
    return np.random.default_rng([*(int(v) for v in gen.integers(0, 2**63, size=2)), stream])


def pairing_record(positions: np.ndarray, rows_of_x: int) -> dict[str, Any]:
    """The private log's pairing of one table: ``rows`` of z, ``rows_of_x`` (the length of the
    table the positions point into) and the encoded ``positions``."""
    return {"rows": int(len(positions)), "rows_of_x": int(rows_of_x), "positions": encode_positions(positions)}


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
        lines = []
        for w in caught:
            line = f"{w.category.__name__}: {' '.join(str(w.message).split())}"
            if line not in lines:
                lines.append(line)
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
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


@dataclass
class _Making:
    """How :func:`release` turns a technique's output into a checked z: typed by the output
    schema, rounded, compared with x. Kept so the strength search makes its tries the same way."""

    work: pd.DataFrame
    schema: Schema
    decimals: dict[str, int] | None
    declared_only: bool
    aligned: bool
    thresholds: GateThresholds

    def finish(self, tech: Any, z: pd.DataFrame) -> tuple[pd.DataFrame, Schema, dict[str, int], ReleaseCheck]:
        """(z rounded, its schema, the decimals, the release check) of the technique's output ``z``."""
        sch = self.schema
        # recoding releases some numeric columns as labels: z is typed by the technique's output schema
        out_sch = tech.output_schema() if hasattr(tech, "output_schema") else sch
        out_sch = replace(out_sch, identifiers=list(sch.identifiers))
        # decimals seen in x are a property of the records: a technique whose output may only
        # depend on the declared domain is rounded to the decimals asked for, never to x's
        seen = {} if self.declared_only else source_decimals(self.work, sch.numeric)
        dec = {**seen, **{c: int(d) for c, d in (self.decimals or {}).items()}}
        dec = {c: d for c, d in dec.items() if c in out_sch.numeric and c not in out_sch.dates}
        z = round_to_decimals(z, dec)
        check = release_check(working_frame(self.work, sch.numeric), working_frame(z, out_sch.numeric), out_sch,
                              record_aligned=self.aligned, thresholds=self.thresholds, decimals=dec)
        return z, out_sch, dec, check

    def check(self, technique: Any) -> ReleaseCheck:
        """The release check of a fresh fit of ``technique`` on the same records (warnings muted)."""
        tech = type(technique)(**technique.get_params(deep=False))
        tech.set_params(schema=replace(self.schema, identifiers=[]), class_column=self.schema.class_column)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            z = tech.fit_transform(self.work)
        return self.finish(tech, z)[3]


#: a refused release: at most this many stronger settings are tried ...
SEARCH_TRIES = 6
#: ... and no new one is started after this many seconds (nor after three times the release's own time,
#: when that is longer than 10 s)
SEARCH_SECONDS = 60.0


def stronger_values(now: float, direction: str, limit: float | None, tries: int = SEARCH_TRIES) -> list[float]:
    """Up to ``tries`` settings stronger than ``now``, weakest first: a geometric ladder up to
    ``limit`` (its last rung) or, without a limit, doubling ("increasing") or dividing by ten
    ("decreasing"); two significant digits, whole numbers for a whole-number parameter."""
    whole = isinstance(now, (int, np.integer)) and not isinstance(now, bool)
    v = float(now)
    if v <= 0 or not np.isfinite(v):
        return []
    if direction == "increasing":
        if limit is not None and float(limit) <= v:
            return []
        ratio = (float(limit) / v) ** (1 / tries) if limit is not None else 2.0
    elif direction == "decreasing":
        if limit is not None and float(limit) >= v:
            return []
        ratio = (float(limit) / v) ** (1 / tries) if limit is not None else 0.1
    else:
        raise ParameterError(f"a strength parameter grows 'increasing' or 'decreasing', not {direction!r}")
    out: list[float] = []
    for i in range(1, tries + 1):
        c = float(limit) if limit is not None and i == tries else v * ratio ** i
        c = float(round(c)) if whole else float(f"{c:.2g}")
        if (c > v if direction == "increasing" else c < v) and (not out or c != out[-1]):
            out.append(int(c) if whole else c)
    return out


def passing_strength(technique: Any, making: _Making, options: GateOptions, took: float = 0.0,
                     columns: Iterable[str] = ()) -> tuple[Any, str]:
    """A setting of one of the technique's protective parameters that passes the gate on this
    table (:meth:`ppdm.anonymize.base.Technique.strength_settings`: its ``strength_param`` and
    its ``other_strength_params``, e.g. the Framework's ``sigma_frac`` and ``p_cat``).

    The parameters that change the kind of attribute the refusal names (``columns``: categorical
    or numeric) are tried first, then the others, until one passes. For each, a coarse ladder of
    :func:`stronger_values` (three rungs up to the parameter's limit, else doubling or dividing
    by ten) until one passes, then halving the step (geometric midpoints) between the last that
    failed and the first that passed — at most :data:`SEARCH_TRIES` tries per parameter, all
    started within :data:`SEARCH_SECONDS` in all. Returns ``(("p_cat", 0.46), "p_cat ≥ 0.46
    passes on this table (now 0.1)")``, or ``(None, what was tried)`` when none passed, or
    ``(None, "")`` for a technique without such a parameter. Each try is a full release of the
    same records with the same seed, never published."""
    settings = technique.strength_settings() if hasattr(technique, "strength_settings") else []
    settings = [s for s in settings
                if not isinstance(s[3], bool) and isinstance(s[3], (int, float, np.integer, np.floating))]
    if not settings:
        return None, ""
    cols = set(columns)
    sch = making.schema
    kinds = {"categorical" if c in sch.categorical or c == sch.class_column else "numeric" for c in cols}
    # a stable sort: the parameters that change the refused columns' kind first, else the declared order
    settings.sort(key=lambda s: 0 if s[4] == "all" or s[4] in kinds else 1)
    budget = min(SEARCH_SECONDS, max(3 * took, 10.0))
    start = time.monotonic()
    said: list[str] = []
    for name, direction, limit, now, _ in settings:
        if said and time.monotonic() - start > budget:
            said.append(f"{name} not tried (the search stopped after {time.monotonic() - start:.0f} s)")
            continue
        strong, text = _search_one(technique, making, options, name, direction, limit, now, start, budget)
        if strong is not None:
            return (name, strong), text
        said.append(text)
    return None, "; ".join(said)


def _search_one(technique: Any, making: _Making, options: GateOptions, name: str, direction: str,
                limit: float | None, now: Any, start: float, budget: float) -> tuple[Any, str]:
    """:func:`passing_strength` on one parameter: the value that passes (or ``None``) and what to say."""
    whole = isinstance(now, (int, np.integer))
    ladder = stronger_values(now, direction, limit, tries=3 if limit is not None else SEARCH_TRIES)
    if not ladder:
        return None, f"{name} is at its strongest ({now:g}) and does not pass on this table"
    tried: list[str] = []

    def passes(v: float) -> bool:
        tried.append(f"{v:g}")
        try:
            check = making.check(_with(technique, name, v))
        except PPDMError:
            return False
        return not any(f.level == "refuse" and not options.allows(f) for f in gate(check, options.thresholds))

    def out_of_time() -> bool:
        return len(tried) >= SEARCH_TRIES or (bool(tried) and time.monotonic() - start > budget)

    weak, strong = float(now), None
    for v in ladder:
        if out_of_time():
            break
        if passes(v):
            strong = v
            break
        weak = v
    while strong is not None and not out_of_time():
        mid = float(np.sqrt(weak * float(strong)))
        mid = round(mid) if whole else float(f"{mid:.2g}")
        if mid in (weak, strong) or f"{mid:g}" in tried:
            break
        if passes(mid):
            strong = mid
        else:
            weak = mid
    if strong is not None:
        return strong, f"{name} {'≥' if direction == 'increasing' else '≤'} {strong:g} passes on this table (now {now:g})"
    stopped = f"; the search stopped after {time.monotonic() - start:.0f} s" if len(tried) < len(ladder) else ""
    if not tried:
        return None, f"{name} not tried{stopped}"
    return None, f"none of {name} = {', '.join(tried)} passes on this table (now {now:g}{stopped})"


def _with(technique: Any, name: str, value: Any) -> Any:
    """A new, unfitted technique like ``technique`` with ``name`` set to ``value``."""
    return type(technique)(**{**technique.get_params(deep=False), name: value})


def public_output_schema(out: Schema, given: Schema, z: pd.DataFrame | None = None) -> dict[str, Any]:
    """The release's schema as the public provenance may state it: nothing learnt from x that z
    does not show.

    A technique's output schema may name categories of x: recoding's hierarchy maps every
    original category to its label (with ``min_count``, the rare ones merged into "Other", some
    held by one person and absent from z), and its declared categories could list labels no
    released record has. Public are the hierarchies the given schema declared (the user's) and,
    per column, the categories the given schema declared or that z holds (all of them when z is
    not at hand, e.g. a partitioned release: recoding's labels, each the label of some record).
    The full schema goes to the private log (``output_schema``).
    """
    d = out.to_dict()
    d["hierarchies"] = {c: h for c, h in given.to_dict().get("hierarchies", {}).items()
                        if c in d.get("hierarchies", {})}
    if z is not None:
        declared = given.categories
        cats = {}
        for c, values in d.get("categories", {}).items():
            if c in z.columns and list(values) != list(declared.get(c, [])):
                present = {str(v) for v in pd.unique(z[c].dropna())}
                mine = {str(v) for v in declared.get(c, [])}
                values = [v for v in values if str(v) in present or str(v) in mine]
            cats[c] = values
        d["categories"] = cats
    return d


#: what a technique offers to fix a weak release: name → (parameter, how, what it does)
_FIXES: dict[str, list[tuple[str, str]]] = {
    "uniform-noise": [("level", "raise level (now {level}): each value is replaced with probability level")],
    "gaussian-noise": [("level", "raise level (now {level}): each value is changed with probability level")],
    "random-technique": [("p_rt", "raise p_rt (now {p_rt}): each value is perturbed with probability p_rt")],
    "framework": [("p_cat", "raise p_cat (now {p_cat}) for categorical attributes, or sigma_frac (now "
                            "{sigma_frac}) for numeric ones")],
    "forest-framework": [("sigma_frac", "raise sigma_frac (now {sigma_frac}) for numeric attributes, and keep "
                                        "swap_prob (now {swap_prob}) high for categorical ones")],
    "mdav": [("k", "raise k (now {k})")],
    "rounding": [("c", "use coarser rounding sets: fewer points per attribute (a smaller c) or larger groups "
                       "(a larger k)")],
    "random-substitution": [("gamma", "perturb more (a smaller gamma, now {gamma})")],
    "gadp": [("confidential", "declare them confidential (confidential=[...]) so GADP redraws them")],
    # techniques that change part of a record by design: the target that passes is a chain
    "top-bottom-coding": [("top", "compose top and bottom coding (it codes only the values beyond top={top}, "
                                  "bottom={bottom}) with a technique that changes every record: --method "
                                  "top-bottom-coding --then recode passes on the shipped tables")],
    "local-suppression": [("k", "generalise the keys first and blank only what stays rare: --method recode --then "
                                "local-suppression")],
    "pram": [("pd", "recode the attributes pram leaves as they are into intervals first: --method recode --then "
                    "pram passes on the shipped tables; or post-randomise more (a smaller pd, now {pd}, and a larger "
                    "alpha, now {alpha})")],
    "dpcube": [("epsilon", "lower epsilon (now {epsilon})")],
}
#: techniques that change only the attributes named in their columns= parameter (all numeric ones by default)
_COLUMN_TECHNIQUES = {"mdav", "rounding", "random-substitution"}


def fix_advice(tech: dict[str, Any], columns: list[str], schema: Schema) -> str:
    """A technique or parameter that would change ``columns`` (names only, no value of a record)."""
    if not columns:
        return ""
    name = str(tech.get("name"))
    params = tech.get("parameters") or {}
    names = ", ".join(columns)
    cats = [c for c in columns if c in schema.categorical or c == schema.class_column]
    nums = [c for c in columns if c not in cats]
    given = params.get("columns")
    if name in _COLUMN_TECHNIQUES and given is not None and any(c not in given for c in columns):
        return f"add {names} to columns= ({name} changes only the columns it is given), or generalise them (recode)"
    if name in ("mdav", "rounding", "gadp") and cats:
        return (f"{name} does not change categorical attributes: generalise {', '.join(cats)} (recode) or perturb "
                "them (random-substitution, or pram), e.g. composed before this technique")
    for _, text in _FIXES.get(name, []):
        try:
            return f"to change {names}, " + text.format(**{k: v for k, v in params.items()})
        except (KeyError, IndexError, ValueError):
            break
    if nums and not cats:
        return f"perturb {names} (gaussian-noise) or aggregate them (mdav with them in columns=)"
    return f"generalise {names} (recode) or perturb them (random-substitution, pram)"


def gate_setup(options: GateOptions | None = None, thresholds: GateThresholds | dict[str, float] | None = None,
               **allow: Any) -> GateOptions:
    """The one :class:`~ppdm.metrics.release_check.GateOptions` of a release, from the options
    object, or the thresholds, and the ``allow_...`` arguments (which add to the object's)."""
    if options is not None and thresholds is not None:
        raise ParameterError("give the gate's thresholds either in gate_options or as gate_thresholds, not both")
    if options is not None and not isinstance(options, GateOptions):
        raise ParameterError(f"gate_options must be a GateOptions, got {type(options).__name__}")
    return GateOptions.of(options if options is not None else thresholds, **allow)


def _epsilon_text(eps: float) -> str:
    """ε as a short number: 1e6 rather than 1e+06."""
    return f"{eps:g}".replace("e+0", "e").replace("e+", "e").replace("e-0", "e-")


def _dp_preface(check: ReleaseCheck, privacy: dict[str, Any] | None, rule: str) -> str:
    """For a refused differentially private release: what its ε copies of x."""
    if not isinstance(privacy, dict) or not privacy.get("differentially_private"):
        return ""
    try:
        eps = _epsilon_text(float(privacy.get("epsilon")))  # type: ignore[arg-type]  # a DP release records its epsilon; else caught below
    except (TypeError, ValueError):
        eps = "?"
    if rule in ("unchanged", "verbatim_unique"):
        unique = max(check.unique_in_x_all, 1)
        return (f"ε = {eps} copies {100 * check.records_verbatim_unique / unique:.1f}% of x's unique records "
                f"verbatim ({check.records_verbatim_unique} of {check.unique_in_x_all}), differentially private or "
                "not; ")
    return f"ε = {eps}, differentially private or not: "


def judge_release(check: ReleaseCheck, options: GateOptions, tech: dict[str, Any], schema: Schema, *,
                  privacy: dict[str, Any] | None = None,
                  search: Callable[[list[str]], tuple[Any, str]] | None = None) -> list[dict[str, Any]]:
    """The gate on a release check: raise :class:`ReleaseRefused` for the first refusal
    ``options`` do not allow, emit a :class:`ReleaseWarning` for each warning (and each allowed
    refusal), and return them all as dicts with their full message.

    ``privacy`` is the technique's ``privacy_report_``: a differentially private release is
    judged like any other, and its refusal names ε. ``search`` (:func:`passing_strength`), called
    only on a refusal with the refused finding's columns, names a stronger setting of the
    technique that passes on this table (replacing the general advice) or says what was tried."""
    out = []
    for f in gate(check, options.thresholds):
        advice = fix_advice(tech, f.columns, schema)
        text = f.message + (f"; {advice}" if advice else "")
        if f.level == "refuse":
            lib, cli = GATE_OVERRIDES[f.rule]
            if not options.allows(f):
                value, found = search(list(f.columns)) if search is not None else (None, "")
                # a setting that passes replaces the general advice; what was tried in vain adds to it
                text = f"{f.message}; {found}" if value is not None else text + (f"; {found}" if found else "")
                raise ReleaseRefused(f"{_dp_preface(check, privacy, f.rule)}{text}; change the technique or its "
                                     f"parameters, or release it anyway with {lib} (CLI: {cli})")
            text = f"released although {text} ({cli.split()[0]})"
            level = "allowed"
        else:
            level = "warn"
        warnings.warn(text, ReleaseWarning, stacklevel=3)
        out.append({**Finding(f.rule, level, f.share, f.threshold, f.columns, text).to_dict()})
    return out


def _screen_pass_through(x: pd.DataFrame, sch: Schema, options: GateOptions) -> list[dict[str, Any]]:
    """Refuse a pass-through column nearly unique per record unless declared safe; warn when
    it still singles some records out."""
    thresholds = options.thresholds
    safe = set(options.allow_pass_through)
    unknown = [c for c in safe if c not in x.columns]
    if unknown:
        raise ParameterError(f"allow_pass_through names {', '.join(map(repr, unknown))}, not a column of the table")
    out = []
    for sc in screen_pass_through(x, sch):
        if sc.distinct >= thresholds.pass_through_distinct and sc.records:
            if sc.column not in safe:
                raise ReleaseRefused(pass_through_message(sc, thresholds.pass_through_distinct))
            text = (f"released although column {sc.column!r} passes into the release unchanged with "
                    f"{100 * sc.distinct:.1f}% distinct values (--allow-pass-through {sc.column})")
            level, rule, share, cut = "allowed", "pass_through_distinct", sc.distinct, thresholds.pass_through_distinct
        elif sc.unique > thresholds.warn_pass_through_unique and sc.column not in safe:
            text = (f"column {sc.column!r} passes into the release unchanged and its value alone singles out "
                    f"{100 * sc.unique:.1f}% of the records (warned above "
                    f"{100 * thresholds.warn_pass_through_unique:.0f}%): joining on it finds them; round or group "
                    "the weights, or perturb them")
            level, rule, share, cut = "warn", "warn_pass_through_unique", sc.unique, thresholds.warn_pass_through_unique
        else:
            continue
        warnings.warn(text, ReleaseWarning, stacklevel=3)
        out.append(Finding(rule, level, share, cut, [sc.column], text).to_dict())
    return out


def holdout_mask(n: int, fraction: float, rng: np.random.Generator) -> np.ndarray:
    """Which of ``n`` records to hold out: a simple random sample of ``round(fraction · n)``
    (at least one, and at least one left to release), drawn from ``rng``."""
    try:
        f = float(fraction)
    except (TypeError, ValueError):
        raise ParameterError(f"holdout must be a fraction between 0 and 1, got {fraction!r}") from None
    if not 0.0 < f < 1.0:
        raise ParameterError(f"holdout must be a fraction strictly between 0 and 1, got {fraction!r}")
    k = int(round(f * n))
    if n < 2 or k < 1 or k >= n:
        raise ParameterError(f"holdout={f:g} of {n} records leaves no control record or no record to release")
    mask = np.zeros(n, dtype=bool)
    mask[rng.choice(n, size=k, replace=False)] = True
    return mask


def hold_out(x: pd.DataFrame, fraction: float, random_state: Any = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Split ``x`` before anonymizing: (records to release, control set).

    The control set is a simple random sample of ``round(fraction · n)`` records (at least
    one, and at least one left to release), kept in the order of ``x``; the attacks of
    :mod:`ppdm.attacks` compare what the release tells about the released people with what
    it tells about these (Giomi et al. 2023 §3). The split is drawn from ``random_state``
    (OS entropy when ``None``). :func:`release` with ``holdout=`` does this itself and keeps
    the held-out positions in the private log.
    """
    from ppdm.utils import check_random_state

    mask = holdout_mask(len(x), fraction, check_random_state(random_state))
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


def _owner_only(path: Path) -> None:
    """Make a private file readable and writable by its owner only (where the system allows)."""
    try:
        os.chmod(path, 0o600)
    except OSError:
        pass
