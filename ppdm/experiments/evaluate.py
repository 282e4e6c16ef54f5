"""Evaluate one release in the library: what ``ppdm evaluate`` does, for a Python user.

:func:`evaluate` is the one entry point, for tables in memory and for tables larger than
memory: :func:`partitioned` decides, in one place, which of the two the inputs call for, and
a partitioned x or release (a :class:`~ppdm.data.partitions.Dataset`, a
:class:`~ppdm.experiments.out_of_core.DatasetRelease`, a dataset folder or glob, or
``EvaluateOptions(engine="dask")``) is measured partition by partition
(:mod:`ppdm.experiments.evaluate_partitioned`, imported only then, so that an evaluation in
memory never imports Dask). In memory, :func:`evaluate` takes the original x and a release — the :class:`~ppdm.experiments.release.Release`
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
(:mod:`ppdm.experiments.document`). ``ppdm evaluate`` goes through :func:`evaluate` too: it
reads the release's provenance and private log with :func:`checked_release` (the log checked
against x's and z's files before x is read), reads x, and hands the
:class:`~ppdm.experiments.evaluate_common.CheckedRelease` to :func:`evaluate`, which reads z,
the test and the control set as the command's options say
(:class:`~ppdm.experiments.evaluate_common.TableReading`); :func:`measure_release` is the
step every in-memory evaluation ends with.

A measure that compares records one by one, named by the caller while z's rows are not
paired with x's, raises :class:`~ppdm.errors.ParameterError` rather than comparing different
people; in the default set such a measure is skipped with that reason
(:data:`ppdm.experiments.evaluation.NOT_PAIRED`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ppdm.errors import ParameterError, PPDMError
from ppdm.experiments.evaluate_common import (
    CheckedRelease,
    EvaluateOptions,
    Evaluation,
    TableReading,
    ages_at,
    check_class,
    check_named_keys,
    check_paired,
    check_thresholds,
    like_x,
    load_rules,
    recoded_view,
)
from ppdm.experiments.evaluation import MeasureOutcome
from ppdm.experiments.pairing import Pairing

if TYPE_CHECKING:
    import pandas as pd

    from ppdm.data.schema import Schema
    from ppdm.experiments.release import Release

#: how a shipped dataset is named where a file may be given
BUILTIN = "builtin:"


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
        if options.on_note is not None:
            options.on_note(notes[-1])
    return Evaluation(outcomes, verdicts(doc["measures"], ruled_out=ruled), pairing, int(len(x)), int(len(z)),
                      notes, doc, dict(provenance) if provenance is not None else None)


def _table(spec: pd.DataFrame | str | Path, schema: Schema,
           reading: TableReading | None = None) -> tuple[pd.DataFrame, str | None]:
    """A table given as a DataFrame, a file (read with x's schema and ``reading``'s ``sep`` and
    ``decimal``) or a shipped dataset (``builtin:NAME``), and its name (None for a DataFrame)."""
    import pandas as pd

    if isinstance(spec, pd.DataFrame):
        return spec, None
    if str(spec).startswith(BUILTIN):
        from ppdm.data.datasets import load

        return load(str(spec)[len(BUILTIN):])[0], str(spec)
    from ppdm.data.io import read_table

    rd = reading if reading is not None else TableReading()
    return read_table(spec, sep=rd.sep, schema=schema, decimal=rd.decimal), str(spec)


def _like_x(spec: pd.DataFrame | str | Path, x: pd.DataFrame, schema: Schema, missing: str, what: str,
            ids: list[str], reading: TableReading | None,
            note: Callable[[str], None]) -> tuple[pd.DataFrame, str | None]:
    """Table ``spec`` (z, the test or the control set) read (:func:`_table`) and put in x's form
    (:func:`like_x`); the rows it drops are told to ``note``, and a file is named in both."""
    df, name = _table(spec, schema, reading)
    df, dropped = like_x(df, x, schema, missing, what, ids, name=name)
    if dropped:
        where = name if name is not None else "z" if what == "anonymized" else f"the {what} table"
        note(f"dropped {dropped} incomplete row(s) from {where}")
    return df, name


# ------------------------------------------------------------------------ release files
def _x_sha256(private: Mapping[str, Any], original: str) -> str | None:
    """The SHA-256 of x read from ``original`` as the private log records it (a file's, a
    shipped dataset's or a partitioned dataset's), or None when x is none of those."""
    from ppdm.data.provenance import input_sha256

    if (private.get("input") or {}).get("partitions") and not original.startswith(BUILTIN):
        from ppdm.data.partitions import dataset_files
        from ppdm.experiments.out_of_core import dataset_sha256

        return dataset_sha256(dataset_files(original))
    if original.startswith(BUILTIN) or Path(original).is_file():
        return input_sha256(original)
    return None


def _z_sha256(release: str) -> str | None:
    """The SHA-256 of release z as the private log records it (a file's, a dataset folder's),
    or None when z is neither."""
    if Path(release).is_dir():
        from ppdm.data.partitions import dataset_files
        from ppdm.experiments.out_of_core import dataset_sha256

        return dataset_sha256(dataset_files(release))
    if Path(release).is_file():
        from ppdm.data.provenance import file_sha256

        return file_sha256(release)
    return None


def checked_release(
    path: str | Path,
    original: str | None = None,
    *,
    private: str | Path | None = None,
    pairing: str = "auto",
    reading: TableReading | None = None,
) -> CheckedRelease:
    """Release ``path`` (a file, a Parquet dataset folder, a glob, or ``builtin:NAME``) with its
    provenance and private log read (``private``, else ``<stem>.private.json`` beside it;
    :func:`ppdm.experiments.pairing.read_private_log`), paired as ``pairing`` asks
    (:func:`ppdm.experiments.pairing.pairing_of`, its notes kept for the caller), and the log
    checked to be these tables' (:func:`ppdm.experiments.pairing.check_private_input`): x, read
    from ``original`` (a file, a dataset folder or ``builtin:NAME``), has the hash the log
    records, and z, when its recorded pairing is used, is the release as written. A table
    whose hash cannot be taken (a glob) is not the one recorded; ``original=None`` leaves x's
    hash unchecked. ``ppdm evaluate`` calls this before reading x, and hands the result to
    :func:`evaluate`.

    Raises
    ------
    PPDMError
        The private log is not x's or z's.
    """
    from ppdm.data.provenance import read_provenance
    from ppdm.experiments.pairing import check_private_input, pairing_of, read_private_log

    name = str(path)
    builtin = name.startswith(BUILTIN)
    provenance = None if builtin else read_provenance(name)
    log, log_file = read_private_log(None if builtin else name, private, pairing)
    pair = pairing_of(log, log_file, pairing, provenance)
    if log is not None:
        pairs = pair.mode == "private log"
        # hashed only when the log records a hash to check against (a partitioned table is many files)
        x_sha = ((_x_sha256(log, original) or "") if original is not None and (log.get("input") or {}).get("sha256")
                 else None)
        z_sha = (_z_sha256(name) or "") if log.get("release_sha256") and pairs and not builtin else None
        check_private_input(log, log_file, x_sha256=x_sha, z_sha256=z_sha, pairs=pairs)
    return CheckedRelease(name, provenance, pair, reading if reading is not None else TableReading(), original)


def _is_dask(obj: Any) -> bool:
    """A Dask collection, told by its module so that asking never imports Dask."""
    return type(obj).__module__.split(".")[0] in ("dask", "dask_expr")


def partitioned(x: Any, z_or_release: Any, engine: str = "auto") -> bool:
    """Whether :func:`evaluate` measures ``z_or_release`` against ``x`` partition by partition
    (:mod:`ppdm.experiments.evaluate_partitioned`) rather than in memory: the one place that
    decides, for the library and for ``ppdm evaluate``.

    Partitioned: ``engine="dask"``; x a :class:`~ppdm.data.partitions.Dataset` or a Dask
    DataFrame; the release a :class:`~ppdm.experiments.out_of_core.DatasetRelease` or a Dask
    DataFrame; a path (or a :class:`~ppdm.experiments.evaluate_common.CheckedRelease`'s path)
    that names several files (a folder, a glob), or, when x is not already
    in memory, a file Dask reads by default (:func:`ppdm.data.partitions.wants_dask`).
    ``engine="pandas"`` with a partitioned input raises."""
    import sys

    from ppdm.data.partitions import Dataset, check_engine, wants_dask

    check_engine(engine)
    if isinstance(z_or_release, CheckedRelease):
        z_or_release = z_or_release.path  # decided as for its path
    # a DatasetRelease exists only once its module was imported: asking through sys.modules
    # keeps an evaluation in memory from importing the partitioned machinery
    out_of_core = sys.modules.get("ppdm.experiments.out_of_core")
    given = out_of_core is not None and isinstance(z_or_release, out_of_core.DatasetRelease)
    if isinstance(x, Dataset) or _is_dask(x) or _is_dask(z_or_release) or given:
        if engine == "pandas":
            raise PPDMError("engine='pandas' evaluates in memory, but the table given is partitioned; use engine "
                            "'auto' or 'dask'")
        return True
    if isinstance(x, (str, Path)):  # files, read as ppdm evaluate reads them (--engine)
        return any(wants_dask(str(v), engine) for v in (x, z_or_release) if isinstance(v, (str, Path)))
    if engine == "dask":
        return True
    # x in memory: a release of several files (a folder, a glob) is partitioned, a large single file is read whole
    z = z_or_release
    return isinstance(z, (str, Path)) and not Path(z).is_file() and wants_dask(str(z), engine)


def evaluate(
    x: Any,
    z_or_release: Any,
    schema: Schema | None = None,
    *,
    options: EvaluateOptions | None = None,
) -> Evaluation:
    """Measure and judge release ``z_or_release`` of ``x``, in memory or partition by
    partition (:func:`partitioned` decides); see the module docstring.

    Parameters
    ----------
    x:
        The original table as it was given to :func:`~ppdm.experiments.release.release` (with
        its identifier columns, if any; they are never compared): the private log's pairing
        counts its rows. A pandas DataFrame in memory; for a partitioned evaluation a
        :class:`~ppdm.data.partitions.Dataset` (as
        :func:`~ppdm.data.partitions.open_dataset` read it) or its path (a folder, a glob, a file).
    z_or_release:
        A :class:`~ppdm.experiments.release.Release` (paired through its private record, its
        held-out records the control set); a release file (its ``.provenance.json`` and
        ``.private.json`` are read when present, :func:`ppdm.data.provenance.private_path`); or a
        DataFrame, paired with x only with ``options.pairing="position"``; or the
        :class:`~ppdm.experiments.evaluate_common.CheckedRelease` that :func:`checked_release`
        returned (``ppdm evaluate``'s way: a file, ``builtin:NAME`` or a partitioned release's
        files, read as its ``reading`` says; its ``options.private`` and ``options.pairing``
        already applied). Partitioned: the
        :class:`~ppdm.experiments.out_of_core.DatasetRelease` that
        :func:`~ppdm.experiments.out_of_core.release_dataset` returned, or the release's folder
        (:func:`ppdm.experiments.evaluate_partitioned._evaluate_partitioned` says how it is paired).
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
    opts = options if options is not None else EvaluateOptions()
    if partitioned(x, z_or_release, opts.engine):
        from ppdm.experiments.evaluate_partitioned import _evaluate_partitioned

        return _evaluate_partitioned(x, z_or_release, schema, opts)
    return _evaluate_in_memory(x, z_or_release, schema, opts)


def _evaluate_in_memory(x: pd.DataFrame, z_or_release: Release | CheckedRelease | pd.DataFrame | str | Path,
                        schema: Schema | None, opts: EvaluateOptions) -> Evaluation:
    """:func:`evaluate` of tables in memory."""
    import pandas as pd

    from ppdm.experiments.evaluation import resolve_measures, without_identifiers
    from ppdm.experiments.pairing import check_pairing_mode, check_private_input, pairing_of, private_control
    from ppdm.experiments.release import Release

    check_pairing_mode(opts.pairing)
    if not isinstance(x, pd.DataFrame):
        raise PPDMError(f"evaluate expects x as a pandas DataFrame, got {type(x).__name__}")
    control = opts.control
    file: CheckedRelease | None = None  # a release file: z, the test and the control set read as it says
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
    elif isinstance(z_or_release, (str, Path, CheckedRelease)):
        if isinstance(z_or_release, CheckedRelease):
            file = z_or_release  # read and checked by the caller (ppdm evaluate), with x's file
        else:
            if not Path(z_or_release).is_file():
                raise PPDMError(f"release {str(z_or_release)!r} is not a file (a partitioned release is given as its "
                                "folder or its DatasetRelease)")
            file = checked_release(z_or_release, private=opts.private, pairing=opts.pairing)
        provenance = dict(file.provenance) if file.provenance is not None else None
        pair = file.pairing
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
    if opts.named and not isinstance(z_or_release, CheckedRelease):
        # ppdm evaluate reports such a measure skipped, with its reason, among the others
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
    reading = file.reading if file is not None else None
    notes: list[str] = []  # in the order found: z's, the test set's, the control set's

    def note(line: str) -> None:
        notes.append(line)
        if opts.on_note is not None:
            opts.on_note(line)  # as found: a later refusal does not hide it
    # a paired z is read with its incomplete rows, so that the pairs are dropped together
    z, z_source = _like_x(z if z is not None else file.path,  # type: ignore[union-attr]  # z None: a file
                          x, sch, "keep" if miss == "drop" and pair.paired else miss, "anonymized", ids, reading, note)
    sources: dict[str, str | None] = {"original": file.original if file is not None else None,
                                      "anonymized": z_source, "test": None, "control": None}
    tables: dict[str, pd.DataFrame | None] = {"test": None, "control": None}
    if opts.test is not None:
        t, sources["test"] = _like_x(opts.test, x, sch, miss, "test", ids, reading, note)
        tables["test"] = recode(t)
    if control is None and file is not None and not file.path.startswith(BUILTIN):
        # the release's held-out records, beside its private log (or a version-1 provenance's)
        found, line = private_control(pair, file.path, provenance)
        control = found
        if line:
            note(line)
    if control is not None:
        c, sources["control"] = _like_x(control, x, sch, miss, "control", ids, reading, note)
        tables["control"] = recode(c)
    ev = measure_release(x, z, sch, pairing=pair, options=opts, test=tables["test"], control=tables["control"],
                         provenance=provenance, sources=sources, specs=specs)
    ev.notes[:0] = notes
    return ev


__all__ = ["CheckedRelease", "EvaluateOptions", "Evaluation", "TableReading", "ages_at", "check_class",
           "check_named_keys", "check_paired", "check_thresholds", "checked_release", "evaluate", "like_x",
           "load_rules", "measure_release", "partitioned", "recoded_view"]
