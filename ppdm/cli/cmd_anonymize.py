"""``ppdm anonymize``: make a release z of a table x with one technique.

The command runs :func:`ppdm.experiments.release.release` (roles, identifier screening,
hold-out, the technique, the release check, the shuffle) and
:func:`~ppdm.experiments.release.save_release` (the table, its public provenance, the
owner's private log, the control set and the technique's sidecars, all or nothing).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ppdm.cli.app import (
    BlocksizeOpt,
    ClassOpt,
    EngineOpt,
    ExperimentFlagOpt,
    MissingKeepOpt,
    ParamOpt,
    SchedulerOpt,
    SeedOpt,
    _missing,
    app,
)
from ppdm.cli.common import (
    BUILTIN,
    console,
    err_console,
    release_seed,
    settle_imports,
    use_scheduler,
)
from ppdm.cli.options import TableOptions, table_options
from ppdm.errors import PPDMError

if TYPE_CHECKING:
    from ppdm.experiments.release import ReleaseOptions
    from ppdm.metrics.release_check import GateOptions


@app.command(short_help="Anonymize a table into a release z, with its release check.")
@table_options
def anonymize(
    data: Annotated[str, typer.Argument(
        help="Input table (CSV/Parquet), a Parquet dataset folder, a glob of files, or builtin:NAME.")],
    method: Annotated[str, typer.Option("--method", "-m", help="Technique name (see 'ppdm methods').")],
    out: Annotated[Path, typer.Option(
        "--out", "-o", help="Release table (.csv or .parquet; a Parquet dataset folder for a partitioned input), "
                            "written atomically with <stem>.provenance.json (public) and <stem>.private.json "
                            "(private: keep it with x).")],
    class_column: ClassOpt = None,
    param: ParamOpt = None,
    seed: SeedOpt = None,
    experiment_seed: ExperimentFlagOpt = False,
    missing: MissingKeepOpt = "error",
    table: TableOptions = TableOptions(),
    keep_identifiers: Annotated[bool, typer.Option(
        "--keep-identifiers", help="Keep identifier columns in the release, unchanged (default: removed).")] = False,
    allow_unchanged: Annotated[bool, typer.Option(
        "--allow-unchanged", help="Write the release even if the check finds the original records in it.")] = False,
    allow_verbatim: Annotated[bool, typer.Option(
        "--allow-verbatim", help="Write the release even if more records than the gate allows come out unchanged "
                                 "while their original is unique in x on its quasi-identifiers.")] = False,
    allow_untouched_keys: Annotated[bool, typer.Option(
        "--allow-untouched-keys", help="Write the release even if quasi-identifiers no technique touched make most "
                                       "records unique.")] = False,
    allow_pass_through: Annotated[list[str] | None, typer.Option(
        "--allow-pass-through", help="Pass-through column(s) (the weight, or a column left unchanged) declared safe "
                                     "although they single records out (comma list, repeatable).")] = None,
    gate: Annotated[list[str] | None, typer.Option(
        "--gate", help="A threshold of the release gate, NAME=SHARE (repeatable): unchanged, verbatim_unique, "
                       "untouched_unique, pass_through_distinct, untouched_column_unique, warn_verbatim, "
                       "warn_unchanged_keys, warn_untouched_unique, warn_pass_through_unique, untouched_share, "
                       "near_verbatim.")] = None,
    decimals: Annotated[str | None, typer.Option(
        "--decimals", help="Decimals of float columns in the release: one number for all, or col=n pairs "
                           "(default: as many as each column had in the input).")] = None,
    engine: EngineOpt = "auto",
    blocksize: BlocksizeOpt = "64MB",
    fit_rows: Annotated[int, typer.Option(
        "--fit-rows", help="With dask: records of the random sample the technique is fitted on.")] = 100_000,
    scheduler: SchedulerOpt = None,
    then: Annotated[list[str] | None, typer.Option(
        "--then", help="A further technique applied to the release of the one before (repeatable; docs/sdc.md). "
        "Give a step's parameters as -p METHOD.name=value.")] = None,
    holdout: Annotated[float | None, typer.Option(
        "--holdout", help="Hold out this fraction of the records before anonymizing, as the attacks' control set "
        "(<out stem>.control.csv; keep it private, with x).")] = None,
    keep_order: Annotated[bool, typer.Option(
        "--keep-order", help="Keep the input's row order in the release instead of shuffling it; anyone who knows "
                             "that order can then pair released rows with people (only for a release that stays "
                             "with you).")] = False,
    domain_from_data: Annotated[bool, typer.Option(
        "--domain-from-data", help="A differentially private technique (dpcube) reads what the schema does not "
        "declare (types, bounds, categories) from the data: the release is then NOT differentially private, and "
        "its report says so.")] = False,
) -> None:
    """Anonymize a table with one technique and write the release z, its provenance and its release check."""
    import warnings

    from ppdm.anonymize.registry import get_technique, make_technique
    from ppdm.data.io import check_output_path, check_output_table
    from ppdm.data.partitions import wants_dask
    from ppdm.data.provenance import check_sidecars_free, private_path, provenance_path
    from ppdm.experiments.release import control_path, release, save_release
    from ppdm.utils import parse_params

    random_state = release_seed(seed, experiment_seed)
    schema = table.schema
    use_scheduler(scheduler)  # the partitioned passes run on its workers
    from ppdm.experiments.release import ReleaseOptions
    from ppdm.metrics.release_check import GateOptions

    # the gate's thresholds and overrides travel as one object down to the check
    gate_options = GateOptions.of(
        _gate_options(gate), allow_unchanged=allow_unchanged, allow_verbatim=allow_verbatim,
        allow_untouched_keys=allow_untouched_keys, allow_pass_through=allow_pass_through)
    get_technique(method)  # an unknown name is the first thing to say, before the table is read
    settle_imports()  # the technique's module is imported: before any table is read
    if wants_dask(data, engine):
        dask_params: dict[str, Any] = {}
        _declared_domain(method, dask_params, domain_from_data, declared=schema is not None, data=data,
                         class_column=class_column)
        param = [*(param or []), *(f"{k}={v}" for k, v in dask_params.items())]
        if holdout is not None:
            raise PPDMError("--holdout is not available for a partitioned input; hold records out with "
                            "--control on ppdm evaluate instead")
        read = _DatasetInput(data, class_column=class_column, missing=missing, table=table, blocksize=blocksize)
        made = ReleaseOptions(roles=table.roles(),
                              keep_identifiers=keep_identifiers, shuffle=not keep_order)
        _anonymize_dataset(read, [method, *(then or [])], out, param=param, random_state=random_state,
                           options=made, gate_options=gate_options, decimals=decimals, fit_rows=fit_rows)
        return
    src = None if data.startswith(BUILTIN) else Path(data)
    # every output is checked before any work: format, folder, and never one of the inputs
    check_output_table(out, inputs=(src, schema))
    check_output_path(provenance_path(out), inputs=(src, schema))
    check_output_path(private_path(out), inputs=(src, schema))
    check_sidecars_free(out)  # before any work: z.parquet must not replace z.csv's private log
    if holdout is not None:
        check_output_path(control_path(out), inputs=(src, schema))
    params = parse_params(param)
    _declared_domain(method, params, domain_from_data, declared=schema is not None or data.startswith(BUILTIN),
                     data=data, class_column=class_column)
    x, sch, dropped = table.load(data, class_column, missing=_missing(missing, keep=True), detect=True)
    from ppdm.data.types import parse_decimals

    dec = parse_decimals(decimals, [c for c in sch.numeric if c not in sch.dates])
    tech = make_technique(method, class_column=sch.class_column, random_state=random_state, schema=sch,
                          params=params) if not then else _composition([method, *then], params, sch, random_state)
    info = {"source": data, "sha256": _input_sha256(data), "rows": len(x) + dropped, "columns": x.shape[1],
            "missing": missing, "rows_dropped": dropped}
    from ppdm.cli.progress import progress_of_library

    # release() reports its steps (learn, release, check) and the technique its long loops (ppdm.progress)
    with progress_of_library(), warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        made = ReleaseOptions(keep_identifiers=keep_identifiers, detect_identifiers=False, input_info=info,
                              decimals=dec, holdout=holdout, shuffle=not keep_order)
        rel = release(x, tech, made, schema=sch, gate_options=gate_options)
    _report(rel, random_state)
    if rel.control is not None:
        console.print(f"held out {len(rel.control)} records before anonymizing as the control set "
                      f"{control_path(out).name}: original records, keep them private with x",
                      highlight=False, markup=False, soft_wrap=True)
    written = save_release(rel, out)
    _report_files(out, written, f"{len(rel.data)} rows × {rel.data.shape[1]} columns",
                  " then ".join([method, *(then or [])]), rel.shuffled, rel.pairing is not None)


def _report_files(out: Path, written: list[Path], size: str, method: str, shuffled: bool, paired: bool) -> None:
    """What was written, the public files apart from the owner's private ones."""
    from ppdm.data.provenance import private_path
    from ppdm.experiments.release import control_path

    secret = {private_path(out).name, control_path(out).name}
    public = [p.name for p in written[1:] if p.name not in secret]
    private = [p.name for p in written[1:] if p.name in secret]
    console.print(f"wrote {out} ({size}) with {method}, and "
                  f"{', '.join(public)}", highlight=False, markup=False, soft_wrap=True)
    order = ("rows shuffled" if shuffled else "rows in the input's order (--keep-order): anyone who knows that "
             "order can pair them with people")
    log = private_path(out).name
    what = "pairs the released rows with x's records" if paired else "records where the release came from"
    console.print(f"{order}; {log} {what}: keep {' and '.join(private)} private, with x, and never publish "
                  f"{'them' if len(private) > 1 else 'it'}",
                  highlight=False, markup=False, soft_wrap=True)


def _declared_domain(method: str, params: dict[str, Any], domain_from_data: bool, *, declared: bool, data: str,
                     class_column: str | None) -> None:
    """A technique whose guarantee needs a declared domain (DPCube) gets ``domain_from_data``
    from ``--domain-from-data``, and is refused when the column types would be inferred from
    the data (no schema file, not a shipped dataset) unless that flag is given."""
    from ppdm.anonymize.registry import get_technique, technique_params

    cls = get_technique(method)
    if not getattr(cls, "declared_domain_only", False):
        if domain_from_data:
            raise PPDMError(f"--domain-from-data applies to differentially private techniques; {method!r} reads "
                            "no domain")
        return
    if domain_from_data:
        if "domain_from_data" in technique_params(cls):
            params["domain_from_data"] = True
        return
    if params.get("domain_from_data"):
        return
    if not declared:
        cls_opt = f" --class {class_column}" if class_column else ""
        raise PPDMError(
            f"{method} needs a declared public domain (the types, bounds and categories of every column), and "
            f"without --schema they would be read from {data}; write a template with `ppdm schema {data}{cls_opt} "
            "--domain-template`, fill in 'bounds' and 'categories', and pass it with --schema (or add "
            "--domain-from-data to release without a differential privacy guarantee)"
        )


def _composition(methods: list[str], params: dict[str, Any], schema: Any, random_state: int | None) -> Any:
    from ppdm.anonymize.composition import make_composition

    return make_composition(methods, params=params, class_column=schema.class_column, random_state=random_state,
                            schema=schema)


def _report(rel: Any, random_state: int | None) -> None:
    """Warnings, identifiers and the release check, as printed for every release."""
    from rich.markup import escape

    for line in rel.warnings:
        err_console.print(f"[yellow]warning:[/yellow] {escape(line)}", highlight=False, markup=True, soft_wrap=True)
    for finding in rel.findings:
        err_console.print(f"[yellow]warning:[/yellow] {escape(finding['message'])}", highlight=False, markup=True,
                          soft_wrap=True)
    if rel.removed_identifiers:
        console.print(f"removed identifier column(s) {', '.join(rel.removed_identifiers)} from the release "
                      "(keep them with --keep-identifiers)", highlight=False, markup=False, soft_wrap=True)
    elif rel.kept_identifiers:
        console.print(f"kept identifier column(s) {', '.join(rel.kept_identifiers)} in the release, unchanged",
                      highlight=False, markup=False, soft_wrap=True)
    privacy = getattr(rel.technique, "privacy_report_", None)
    if isinstance(privacy, dict) and privacy.get("guarantee"):
        console.print(f"privacy: {privacy['guarantee']}", highlight=False, markup=False, soft_wrap=True)
    # the check compares z with x: for the owner's eyes only (a DP release never writes it beside z)
    console.print("release check (for you, not published):" if isinstance(privacy, dict) else "release check:",
                  highlight=False)
    for line in rel.check.summary_lines():
        console.print(f"  {line}", highlight=False, markup=False, soft_wrap=True)
    if random_state is not None:
        console.print("seeded: anyone who knows the seed can redo the random draws and undo much of the release; "
                      "keep it secret, with x (it is not stored)", highlight=False, soft_wrap=True)


@dataclass(frozen=True)
class _DatasetInput:
    """How ``ppdm anonymize`` reads a partitioned input: the options of the command that say so."""

    data: str
    class_column: str | None
    missing: str
    table: TableOptions
    blocksize: str


def _anonymize_dataset(read: _DatasetInput, methods: list[str], out: Path, *, param: list[str] | None,
                       random_state: int | None, options: ReleaseOptions, gate_options: GateOptions, decimals: str | None,
                       fit_rows: int) -> None:
    """A partitioned input: fit on a sample, release partition by partition into a Parquet dataset
    (a ``--then`` chain fitted step by step on the sample, then applied to every partition)."""
    import warnings

    from ppdm.anonymize.registry import make_technique
    from ppdm.cli.common import parse_date_options, stage_progress
    from ppdm.data.partitions import check_output_dataset, dataset_files, open_dataset
    from ppdm.data.roles import split_names
    from ppdm.data.schema import Schema
    from ppdm.data.types import parse_decimals
    from ppdm.experiments.out_of_core import release_dataset
    from ppdm.utils import parse_params

    def pd_float(s: Any) -> bool:
        import pandas as pd

        return bool(pd.api.types.is_float_dtype(s))

    data, schema, class_column, method, then = read.data, read.table.schema, read.class_column, methods[0], methods[1:]
    check_output_dataset(out, inputs=[str(f) for f in dataset_files(data)] + ([str(schema)] if schema else []))
    cats, dates = split_names(read.table.categorical), parse_date_options(read.table.date)
    if (cats or dates) and schema is not None:
        raise PPDMError("give column types either in the schema (--schema) or with --categorical/--date, not both")
    loaded = Schema.load(schema) if schema is not None else None
    ds = open_dataset(data, sep=read.table.sep, schema=loaded, categorical=cats, dates=dates, blocksize=read.blocksize,
                      decimal=read.table.decimal)
    base = loaded.with_class(class_column) if loaded is not None and class_column is not None else loaded
    cls = class_column if class_column else (base.class_column if base else None)
    if then:
        from ppdm.anonymize.composition import make_composition

        tech = make_composition([method, *then], params=parse_params(param), class_column=cls,
                                random_state=random_state)
    else:
        tech = make_technique(method, class_column=cls, random_state=random_state, schema=None,
                              params=parse_params(param))
    dec = parse_decimals(decimals, [c for c in ds.columns if pd_float(ds.head[c])])
    from ppdm.cli.progress import progress_bar

    with progress_bar(f"releasing {ds.npartitions} partitions with {method}"), warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        rel = release_dataset(ds, tech, out, schema=base, roles=options.roles,
                              keep_identifiers=options.keep_identifiers, missing=_missing(read.missing, keep=True),
                              fit_rows=fit_rows, decimals=dec, progress=stage_progress(), shuffle=options.shuffle,
                              input_info={"missing": read.missing}, gate_options=gate_options)
    _report(rel, random_state)
    _report_files(out, rel.written, f"{rel.n_records} rows in {rel.n_partitions} partitions, fitted on a sample of "
                  f"{rel.fit_rows}", " then ".join(methods), options.shuffle, True)


def _gate_options(items: list[str] | None) -> dict[str, float] | None:
    """``--gate NAME=SHARE`` options as the thresholds release() takes (checked there)."""
    if not items:
        return None
    from ppdm.errors import ParameterError

    out: dict[str, float] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise ParameterError(f"--gate expects NAME=SHARE, got {item!r}")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            raise ParameterError(f"--gate {name.strip()} must be a number, got {value.strip()!r}") from None
    from ppdm.metrics.release_check import GateThresholds

    GateThresholds.of(out)  # names and ranges refused before any work
    return out


def _input_sha256(spec: str) -> str:
    from ppdm.data.provenance import input_sha256

    return input_sha256(spec)
