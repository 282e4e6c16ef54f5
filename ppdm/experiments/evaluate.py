"""Evaluate one release in the library: what ``ppdm evaluate`` does, for a Python user.

:func:`evaluate` takes the original x and a release — the :class:`~ppdm.experiments.release.Release`
that :func:`~ppdm.experiments.release.release` returned, a release file written by
:func:`~ppdm.experiments.release.save_release` or ``ppdm anonymize`` (its sidecars
``<stem>.provenance.json`` and ``<stem>.private.json`` are read), or a bare DataFrame — and:

1. pairs z's shuffled rows with x's records through the release's private log
   (:mod:`ppdm.experiments.pairing`), so that a measure comparing each record with its own
   original compares one person's two records; a DataFrame is paired only when the user
   declares its rows to be x's in order (``pairing="position"``);
2. finds the control set of the attacks (the release's held-out records, or ``control``)
   and leaves those records out of x;
3. compares a recoded release on its own categories (:func:`recoded_view`);
4. runs the measures (:mod:`ppdm.experiments.evaluation`: a measure the tables do not allow
   is skipped with its reason) and judges risk and utility with the library's single judge
   (:func:`ppdm.metrics.judgement.verdicts`).

It returns an :class:`Evaluation`: the outcomes, the verdicts, the pairing used and
:meth:`Evaluation.document`, the JSON document ``ppdm evaluate --json`` prints
(:mod:`ppdm.experiments.document`). ``ppdm evaluate`` reads its files and calls
:func:`measure_release`, the part shared with this function.

A measure that compares records one by one, named by the caller while z's rows are not
paired with x's, raises :class:`~ppdm.errors.ParameterError` rather than comparing different
people; in the default set such a measure is skipped with that reason
(:data:`ppdm.experiments.evaluation.NOT_PAIRED`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ppdm.errors import ParameterError, PPDMError, SchemaError
from ppdm.experiments.evaluation import MeasureOutcome
from ppdm.experiments.pairing import Pairing
from ppdm.metrics.judgement import Verdict

if TYPE_CHECKING:
    import pandas as pd

    from ppdm.data.schema import Schema
    from ppdm.experiments.release import Release


@dataclass
class EvaluateOptions:
    """How :func:`evaluate` measures a release (the options of ``ppdm evaluate``).

    ``measures``: names (a list or a comma string), ``"all"``, or ``None`` for the default
    set; ``measure_options``: measure options by name (``{"k": 5}``, ``{"il1s.form": "mean"}``:
    ``--param``); ``thresholds``: a verdict threshold per measure name; ``pairing``:
    ``"auto"`` (through the release's private log when there is one), ``"position"`` (z's rows
    are x's, in order) or ``"none"``; ``private``: the private log of a release file kept
    elsewhere; ``control``: the attacks' control set (a DataFrame or a file; default: the
    release's held-out records); ``test``: a test table for model measures (DataFrame or
    file); ``rules``: the rule set Ψx (a :class:`~ppdm.rules.core.RuleSet` or a rule file;
    default: CART rules of x); ``missing``: the missing-value policy (``"error"``, ``"drop"``,
    ``"keep"``; default: as the release read x — its private log's policy, a library
    :class:`~ppdm.experiments.release.Release`'s cells as given — else ``"error"``); ``random_state``: the *measurement* seed (the draws of the measures — held-out
    test split, attacks — never the release's); ``sample_rows``: records of the sample that
    measures without an exact partitioned form use (``ppdm evaluate --engine dask``);
    ``ruled_out``: intruder scenarios (:data:`ppdm.metrics.base.SCENARIOS`) the owner rules
    out: the risk verdict leaves them out and its sentence names the exclusion.
    """

    measures: Sequence[str] | str | None = None
    measure_options: Mapping[str, Any] = field(default_factory=dict)
    thresholds: Mapping[str, float] = field(default_factory=dict)
    pairing: str = "auto"
    private: str | Path | None = None
    control: pd.DataFrame | str | Path | None = None
    test: pd.DataFrame | str | Path | None = None
    rules: Any = None
    missing: str | None = None
    random_state: int = 0
    sample_rows: int = 20_000
    ruled_out: Sequence[str] = ()

    @property
    def measure_spec(self) -> str | None:
        """``measures`` as :func:`ppdm.experiments.evaluation.resolve_measures` reads it."""
        if self.measures is None or isinstance(self.measures, str):
            return self.measures
        return ",".join(str(m) for m in self.measures)

    @property
    def named(self) -> bool:
        """Measures were named by the caller (not the default set, not ``"all"``)."""
        spec = self.measure_spec
        return spec is not None and spec.strip() != "all"


@dataclass
class Evaluation:
    """The evaluation of one release.

    ``outcomes`` maps each measure's name to its :class:`~ppdm.experiments.evaluation.MeasureOutcome`
    (``.value``, ``.result``, or ``.reason`` when skipped); ``verdicts`` holds the ``"risk"``
    and ``"utility"`` :class:`~ppdm.metrics.judgement.Verdict` (``.status``, ``.sentence``);
    ``pairing`` says how x and z were paired; ``rows_x`` and ``rows_z`` are the records
    measured (x without held-out records, z after the missing-value policy); ``notes`` what
    the owner should know about the inputs (where the control set came from, records left out).
    """

    outcomes: dict[str, MeasureOutcome]
    verdicts: dict[str, Verdict]
    pairing: Pairing
    rows_x: int
    rows_z: int
    notes: list[str] = field(default_factory=list)
    _document: dict[str, Any] = field(default_factory=dict, repr=False)

    def document(self) -> dict[str, Any]:
        """The JSON document ``ppdm evaluate --json`` prints (``docs/ppdm.schema.json``)."""
        return copy.deepcopy(self._document)


# ------------------------------------------------------------------------- the tables
def recoded_view(x: pd.DataFrame, schema: Schema,
                 provenance: Mapping[str, Any] | None) -> tuple[pd.DataFrame, Schema, Callable[[Any], Any]]:
    """A release whose columns were recoded (its provenance's output schema, ``ppdm anonymize -m
    recode``) is compared on its own categories: those columns of x become the labels that stand
    for their values (:func:`ppdm.data.generalization.generalise`), categorical in the schema of
    the evaluation. Returns ``(x, schema, f)``, ``f`` doing the same to the test and control sets."""
    from ppdm.data.generalization import recoded_view as view
    from ppdm.data.schema import Schema

    out = ((provenance or {}).get("output") or {}).get("schema")
    if not out:
        return x, schema, lambda df: df
    cols, recode, sch = view(schema, Schema.from_dict(out), list(x.columns), ages=ages_at(provenance, schema))
    if not cols:
        return x, schema, lambda df: df
    return recode(x), sch, recode


def ages_at(provenance: Mapping[str, Any] | None, schema: Schema) -> dict[str, float]:
    """The reference dates of date columns a recoding released as ages (its ``age_at``), from the
    parameters the provenance records, in a chain's steps too: days since 1970-01-01 by column,
    what :func:`ppdm.data.generalization.recoded_view` takes as ``ages``. One reading of the
    provenance for ``ppdm evaluate`` and for the trials of ``ppdm recommend``."""
    from ppdm.data.types import is_iso_date, parse_iso_date

    found: dict[str, float] = {}

    def visit(node: Any) -> None:
        if isinstance(node, Mapping):
            params = node.get("parameters")
            if node.get("name") == "recode" and isinstance(params, Mapping) and params.get("age_at") is not None:
                at = params["age_at"]
                for c in schema.dates:
                    v = at.get(c, at.get("*")) if isinstance(at, Mapping) else at
                    if is_iso_date(v):
                        found[c] = parse_iso_date(v, "age_at")
            for v in node.values():
                visit(v)
        elif isinstance(node, list):
            for v in node:
                visit(v)

    visit((provenance or {}).get("technique"))
    return found


def like_x(df: pd.DataFrame, x: pd.DataFrame, schema: Schema, missing: str, what: str,
           ignore: Sequence[str] = ()) -> tuple[pd.DataFrame, int]:
    """``df`` (z, a test or a control table) checked to have exactly the columns of x, put in
    x's column order with x's dtypes (a code read as text in one table and as a number in the
    other would never compare equal) and validated against ``schema`` with the missing-value
    policy; ``ignore``d columns (x's identifiers) are dropped first. Returns ``(df, rows dropped)``."""
    from ppdm.data.io import align_dtypes

    if ignore:
        df = df.drop(columns=[c for c in ignore if c in df.columns])
    cols, want = [str(c) for c in df.columns], [str(c) for c in x.columns]
    if set(cols) != set(want):
        lacks = [c for c in want if c not in cols]
        extra = [c for c in cols if c not in want]
        parts = []
        if lacks:
            parts.append(f"lacks {', '.join(map(repr, lacks))}")
        if extra:
            parts.append(f"has extra {', '.join(map(repr, extra))}")
        raise SchemaError(f"the {what} table does not have the columns of the original: it {' and '.join(parts)}")
    df = align_dtypes(df[list(x.columns)], x, f"the {what} table")
    df, dropped = schema.validate(df, missing=missing)  # type: ignore[arg-type]  # a policy name: the caller's or the log's
    if dropped:
        df = df.reset_index(drop=True)
    return df, int(dropped or 0)


def load_rules(rules: Any, x: pd.DataFrame, schema: Schema) -> Any:
    """The rule set Ψx to measure retention with: a :class:`~ppdm.rules.core.RuleSet` or a rule
    file, checked to predict the class column and to test only attributes of x."""
    from ppdm.rules.core import RuleSet

    where = "the rule set" if isinstance(rules, RuleSet) else f"the rule file {str(rules)!r}"
    rs = rules if isinstance(rules, RuleSet) else RuleSet.load(rules)
    cls = schema.class_column
    if rs.class_column is not None and cls is not None and rs.class_column != cls:
        raise PPDMError(f"{where} predicts {rs.class_column!r}, but the class column is {cls!r}")
    if len(rs) == 0:
        raise PPDMError(f"{where} holds no rule")
    for i, r in enumerate(rs):
        for a in r.attributes:
            if a not in x.columns:
                raise PPDMError(f"rule {i} of {where} tests attribute {a!r}, which the table does not have")
    return RuleSet(rs.rules, rs.class_column or cls)


def check_named_keys(specs: list[Any], schema: Schema, options: Mapping[str, Any]) -> None:
    """Measures named by the caller that need quasi-identifiers get declared ones: nothing
    is inferred for a measure asked for by name (the default set infers them)."""
    from ppdm.metrics.keyvar import KEY_VARIABLE_MEASURES

    need = [s.name for s in specs if s.name in KEY_VARIABLE_MEASURES and not options.get(f"{s.name}.keys")
            and not (isinstance(options.get(s.name), dict) and options[s.name].get("keys"))]
    if need and not schema.quasi_identifiers and not options.get("keys"):
        raise ParameterError(f"measure(s) {', '.join(need)} need quasi-identifiers: declare them with --qi A,B, "
                             "with quasi_identifiers in a --schema file, or with --param keys=A,B")


def check_class(specs: list[Any], schema: Schema, named: bool) -> None:
    """Measures that need a class column, named (or the only ones asked for) without one: refused."""
    if schema.class_column is None:
        needing = [s.name for s in specs if s.needs_class]
        if needing and (named or len(needing) == len(specs)):
            raise SchemaError(f"measure(s) {', '.join(needing)} need a class column; name it with --class")


def check_thresholds(thresholds: Mapping[str, Any], names: Sequence[str]) -> dict[str, float]:
    """Verdict thresholds by measure name, checked to name evaluated measures."""
    out: dict[str, float] = {}
    for name, value in thresholds.items():
        if name not in names:
            raise ParameterError(f"--threshold names {name!r}, which is not among the evaluated measures")
        try:
            out[name] = float(value)
        except (TypeError, ValueError):
            raise ParameterError(f"--threshold {name} must be a number, got {value!r}") from None
    return out


def check_paired(specs: list[Any], pairing: Pairing) -> None:
    """Record-by-record measures named by the caller while z's rows are not paired with x's:
    one clear error instead of comparing different people."""
    names = [s.name for s in specs if s.paired]
    if not names or pairing.paired:
        return
    verb = "compares" if len(names) == 1 else "compare"
    if pairing.mode == "synthetic":
        raise ParameterError(f"{', '.join(names)} {verb} each released record with its own original, but z is "
                             "synthetic: its records are not made from particular records of x")
    if pairing.private is not None:  # the release's pairing was there, and left out on purpose
        raise ParameterError(f"{', '.join(names)} {verb} each released record with its own original, but "
                             "pairing='none' leaves out the pairing the release's private log holds: use "
                             "pairing='auto'")
    raise ParameterError(f"{', '.join(names)} {verb} each released record with its own original, but z's rows are "
                         "not paired with x's: pass the Release (or the release file with its private log), or "
                         "pairing='position' when z's rows are x's in order")


# ------------------------------------------------------------------------ measuring
def measure_release(
    x: pd.DataFrame,
    z: pd.DataFrame,
    schema: Schema,
    *,
    pairing: Pairing,
    options: EvaluateOptions,
    test: pd.DataFrame | None = None,
    control: pd.DataFrame | None = None,
    provenance: Mapping[str, Any] | None = None,
    sources: Mapping[str, str | None] | None = None,
    rules_source: str | None = None,
    specs: list[Any] | None = None,
) -> Evaluation:
    """Measure z against x, in memory, as :func:`evaluate` and ``ppdm evaluate`` do.

    ``x``, ``z``, ``test`` and ``control`` are already in the evaluation's view (x without
    identifiers, recoded like the release, every table validated with ``schema``); ``pairing``
    says how to pair them (:func:`ppdm.experiments.pairing.pair_in_memory`). ``sources`` names
    the tables in the document (``original``, ``anonymized``, ``test``, ``control``)."""
    from ppdm import progress
    from ppdm.experiments.compare import dataset_summary
    from ppdm.experiments.document import evaluation_document
    from ppdm.experiments.evaluation import declared_in, measurement_context, resolve_measures, run_measure
    from ppdm.experiments.pairing import pair_in_memory, private_for_report
    from ppdm.metrics.judgement import check_scenarios, verdicts

    ruled = check_scenarios(options.ruled_out)
    specs = specs if specs is not None else resolve_measures(options.measure_spec)
    if options.measures is None:
        specs = declared_in(specs, schema)
    limits = check_thresholds(options.thresholds, [s.name for s in specs])
    opts = dict(options.measure_options)
    src = dict(sources or {})
    # control records leave x by identity (the private log's positions, or as a multiset), never by count
    x, z = pair_in_memory(x, z, control, pairing, options.missing)
    # measures compute on numbers (dates on their time axis, missing cells as NaN): the same
    # working form as compare's
    ctx = measurement_context(x, z, schema, test=test, control=control, random_state=options.random_state,
                              options=opts, paired=pairing.paired, synthetic=pairing.mode == "synthetic")
    x, z, t, c = ctx.x, ctx.z, ctx.test, ctx.control
    check_class(specs, schema, options.named)
    if options.named:
        check_named_keys(specs, schema, opts)
    if schema.weight is not None and any(s.name == "reidentification_risk" for s in specs):
        from ppdm.metrics.keyvar import check_weights

        # sampling weights are wrong for every record they belong to: refused before any measure
        check_weights(x, schema.weight if schema.weight in x.columns else None, measure="the sampling weights")
    rs = load_rules(options.rules, x, schema) if options.rules is not None else None
    if rs is None and schema.class_column is not None and ({"min_leaf_frac", "max_depth"} & set(opts)):
        from ppdm.trees.cart import rules_from_cart

        cart = {k: opts[k] for k in ("min_leaf_frac", "max_depth") if k in opts}
        rs = rules_from_cart(x, schema, random_state=options.random_state, **cart)
    ctx.rules = rs

    outcomes: dict[str, MeasureOutcome] = {}
    with progress.steps(len(specs), "evaluating") as step:
        for spec in specs:
            step(0, description=f"computing {spec.name}")
            outcomes[spec.name] = run_measure(spec, ctx)
            step()

    def size(df: pd.DataFrame | None, source: str | None) -> dict[str, Any] | None:
        return None if df is None else {"source": source, "rows": int(len(df)), "columns": int(df.shape[1])}

    rules_name = rules_source if rules_source is not None else (
        str(options.rules) if isinstance(options.rules, (str, Path)) else None)
    inputs = {"original": size(x, src.get("original")), "anonymized": size(z, src.get("anonymized")),
              "test": size(t, src.get("test")), "control": size(c, src.get("control")),
              "rules": rules_name, "class_column": schema.class_column,
              "seed": options.random_state, "options": opts, "pairing": pairing.mode}
    doc = evaluation_document(outcomes, provenance=provenance, inputs=inputs,
                              dataset=dataset_summary(x, schema, src.get("original")), thresholds=limits,
                              private=private_for_report(pairing), ruled_out=ruled)
    notes = list(pairing.notes)
    if pairing.dropped_pairs:
        notes.append(f"dropped {pairing.dropped_pairs} incomplete record pair(s) of x and z")
    return Evaluation(outcomes, verdicts(doc["measures"], ruled_out=ruled), pairing, int(len(x)), int(len(z)),
                      notes, doc)


def _table(spec: pd.DataFrame | str | Path, schema: Schema) -> tuple[pd.DataFrame, str | None]:
    """A table given as a DataFrame or a file (read with x's schema), and its file name."""
    import pandas as pd

    if isinstance(spec, pd.DataFrame):
        return spec, None
    from ppdm.data.io import read_table

    return read_table(spec, schema=schema), str(spec)


def evaluate(
    x: pd.DataFrame,
    z_or_release: Release | pd.DataFrame | str | Path,
    schema: Schema | None = None,
    *,
    options: EvaluateOptions | None = None,
) -> Evaluation:
    """Measure and judge release ``z_or_release`` of ``x``; see the module docstring.

    Parameters
    ----------
    x:
        The original table as it was given to :func:`~ppdm.experiments.release.release` (with
        its identifier columns, if any; they are never compared): the private log's pairing
        counts its rows.
    z_or_release:
        A :class:`~ppdm.experiments.release.Release` (paired through its private record, its
        held-out records the control set); a release file (its ``.provenance.json`` and
        ``.private.json`` are read when present, :func:`ppdm.data.provenance.private_path`); or a
        DataFrame, paired with x only with ``options.pairing="position"``.
    schema:
        Types and roles of x's columns; default: the release's schema, else inferred from x.
    options:
        :class:`EvaluateOptions` (default: the default measures, measurement seed 0).

    Raises
    ------
    ParameterError
        A record-by-record measure named while z is not paired with x, an unknown measure,
        scenario (``ruled_out``) or threshold name.
    SchemaError, PPDMError
        Tables that do not fit together, a private log that is not this release's.
    """
    import pandas as pd

    from ppdm.data.provenance import file_sha256, read_provenance
    from ppdm.experiments.evaluation import resolve_measures, without_identifiers
    from ppdm.experiments.pairing import (
        check_pairing_mode,
        check_private_input,
        pairing_of,
        private_control,
        read_private_log,
    )
    from ppdm.experiments.release import Release

    opts = options if options is not None else EvaluateOptions()
    check_pairing_mode(opts.pairing)
    if not isinstance(x, pd.DataFrame):
        raise PPDMError(f"evaluate expects x as a pandas DataFrame, got {type(x).__name__}")
    notes: list[str] = []
    control = opts.control
    z_source: str | None = None
    provenance: dict[str, Any] | None
    if isinstance(z_or_release, Release):
        rel = z_or_release
        if opts.pairing == "position":
            raise ParameterError("pairing='position' declares z's rows to be x's in order; a Release carries its own "
                                 "pairing (give pairing='auto', or 'none' to evaluate without it)")
        z, provenance = rel.data, rel.provenance
        schema = schema if schema is not None else rel.schema
        pair = pairing_of(rel.private or None, None, opts.pairing, provenance)
        inp = (rel.private or {}).get("input") or {}
        if inp.get("sha256") and inp.get("source") is None:
            from ppdm.data.provenance import table_sha256

            # a release made in the library records the hash of the DataFrame it was given
            check_private_input(rel.private, None, x_sha256=table_sha256(x), z_sha256=None,
                                pairs=pair.mode == "private log", x_name="x")
        if control is None:
            control = rel.control
    elif isinstance(z_or_release, (str, Path)):
        z_source = str(z_or_release)
        if not Path(z_source).is_file():
            raise PPDMError(f"release {z_source!r} is not a file (a partitioned release is evaluated with "
                            "ppdm evaluate --engine dask)")
        provenance = read_provenance(z_source)
        private, private_file = read_private_log(z_source, opts.private, opts.pairing)
        pair = pairing_of(private, private_file, opts.pairing, provenance)
        if private is not None:
            check_private_input(private, private_file, x_sha256=None, z_sha256=file_sha256(z_source),
                                pairs=pair.mode == "private log")
        if control is None:
            path, line = private_control(pair, z_source, provenance)
            control = path
            if line:
                notes.append(line)
        z = None
    elif isinstance(z_or_release, pd.DataFrame):
        z, provenance = z_or_release, None
        if opts.private is not None:
            raise ParameterError("a private log pairs a release file's rows; give the file, not a DataFrame")
        pair = pairing_of(None, None, opts.pairing)
        # a library user has no --private or --pairing to give: the pairing is said by check_paired
        pair.notes.clear()
    else:
        raise PPDMError(f"evaluate expects a Release, a DataFrame or a release file, got {type(z_or_release).__name__}")

    if schema is None:
        from ppdm.data.roles import resolve_schema

        schema = resolve_schema(x, detect=False)
    specs = resolve_measures(opts.measure_spec)
    if opts.named:
        check_paired(specs, pair)
    if opts.missing is None:
        # read x as the release read it: a blank the release kept is a blank, not a dropped record
        recorded = ((pair.private or {}).get("input") or {}).get("missing")
        opts = replace(opts, missing=recorded or ("keep" if isinstance(z_or_release, Release) else "error"))
    miss = opts.missing
    assert miss is not None  # filled in just above
    x, _ = schema.validate(x, missing=miss)  # type: ignore[arg-type]  # a policy name: the caller's or the log's
    x = x.reset_index(drop=True)
    x, sch, ids = without_identifiers(x, schema, (provenance or {}).get("removed_identifiers") or [])
    from ppdm.data.provenance import owner_view

    # the owner's view: the full output schema (recoding's merged categories) lives in the private log
    x, sch, recode = recoded_view(x, sch, owner_view(provenance, pair.private))
    if z is None:
        z, _ = _table(z_source, sch)  # type: ignore[arg-type]  # z is None only when z_source names a file
    # a paired z is read with its incomplete rows, so that the pairs are dropped together
    z, dropped = like_x(z, x, sch, "keep" if miss == "drop" and pair.paired else miss, "anonymized", ids)
    if dropped:
        notes.append(f"dropped {dropped} incomplete row(s) from z")
    sources: dict[str, str | None] = {"original": None, "anonymized": z_source, "test": None, "control": None}
    tables: dict[str, pd.DataFrame | None] = {}
    for what, given in (("test", opts.test), ("control", control)):
        if given is None:
            tables[what] = None
            continue
        df, sources[what] = _table(given, sch)
        df, dropped = like_x(df, x, sch, miss, what, ids)
        if dropped:
            notes.append(f"dropped {dropped} incomplete row(s) from the {what} table")
        tables[what] = recode(df)
    ev = measure_release(x, z, sch, pairing=pair, options=opts, test=tables["test"], control=tables["control"],
                         provenance=provenance, sources=sources, specs=specs)
    ev.notes[:0] = notes
    return ev


__all__ = ["EvaluateOptions", "Evaluation", "ages_at", "check_paired", "evaluate", "like_x", "load_rules", "measure_release",
           "recoded_view"]
