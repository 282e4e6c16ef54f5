"""``ppdm evaluate``: measure an anonymized table z against the original x.

Measures are found by name through :mod:`ppdm.experiments.evaluation`, so every measure
any module of :mod:`ppdm.metrics` or :mod:`ppdm.attacks` registers works here without
change. A measure the table does not allow is reported as skipped with its reason; the
others still run.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ppdm.cli.app import (
    CategoricalOpt,
    ClassOpt,
    DateOpt,
    DecimalOpt,
    EngineOpt,
    IdOpt,
    MeasureSeedOpt,
    MissingKeepOpt,
    OtherOpt,
    QiOpt,
    SchemaOpt,
    SensitiveOpt,
    SepOpt,
    WeightOpt,
    _missing,
    app,
)
from ppdm.cli.common import (
    BUILTIN,
    console,
    err_console,
    load_original,
    measurement_seed,
    print_json,
    report_drawn_seed,
    roles_from_options,
)
from ppdm.errors import ParameterError, PPDMError, SchemaError

if TYPE_CHECKING:
    import pandas as pd

    from ppdm.data.schema import Schema


def load_like(spec: str, x: pd.DataFrame, schema: Schema, missing: str, what: str,
              sep: str | None = None, ignore: list[str] | None = None, decimal: str | None = None) -> pd.DataFrame:
    """Read table ``spec`` (path or builtin:NAME) and check it has exactly the columns of x.

    Columns are put in x's order (``ignore``d ones, x's identifiers, are dropped first),
    read with x's schema and given x's dtypes (a code read as text in one table and as a
    number in the other would never compare equal); the table is validated against x's schema.
    """
    from ppdm.data.io import align_dtypes

    if spec.startswith(BUILTIN):
        from ppdm.data.datasets import load

        df, _ = load(spec[len(BUILTIN):])
    else:
        from ppdm.data.io import read_table

        df = read_table(spec, sep=sep, schema=schema, decimal=decimal)
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
        raise SchemaError(f"the {what} table {spec!r} does not have the columns of the original: it {' and '.join(parts)}")
    df = align_dtypes(df[list(x.columns)], x, f"the {what} table {spec!r}")
    df, dropped = schema.validate(df, missing=missing)  # type: ignore[arg-type]
    if dropped:
        err_console.print(f"[yellow]dropped {dropped} incomplete row(s) from {spec}[/yellow]")
        df = df.reset_index(drop=True)
    return df


def _load_rules(path: Path, x: pd.DataFrame, schema: Schema):
    from ppdm.rules.core import RuleSet

    rs = RuleSet.load(path)
    cls = schema.class_column
    if rs.class_column is not None and cls is not None and rs.class_column != cls:
        raise PPDMError(f"the rule file {str(path)!r} predicts {rs.class_column!r}, but the class column is {cls!r}")
    if len(rs) == 0:
        raise PPDMError(f"the rule file {str(path)!r} holds no rule")
    for i, r in enumerate(rs):
        for a in r.attributes:
            if a not in x.columns:
                raise PPDMError(f"rule {i} of {str(path)!r} tests attribute {a!r}, which the table does not have")
    return RuleSet(rs.rules, rs.class_column or cls)


def _provenance(spec: str) -> dict[str, Any] | None:
    """The provenance sidecar of release ``spec`` (a file), or None."""
    if spec.startswith(BUILTIN):
        return None
    from ppdm.data.provenance import read_provenance

    return read_provenance(spec)


def _without_identifiers(x: pd.DataFrame, schema: Schema,
                         provenance: dict[str, Any] | None) -> tuple[pd.DataFrame, Schema, list[str]]:
    """x without its identifier columns (declared, or named as removed by the release's
    provenance): a release does not carry them, and they are never compared."""
    from ppdm.experiments.evaluation import without_identifiers

    return without_identifiers(x, schema, (provenance or {}).get("removed_identifiers") or [])


def _recoded_view(x: pd.DataFrame, schema: Schema, provenance: dict[str, Any] | None) -> tuple[Any, Any, Any]:
    """A release whose columns were recoded (its provenance's output schema, ``ppdm anonymize -m
    recode``) is compared on its own categories: those columns of x become the labels that stand
    for their values (:func:`ppdm.data.generalization.generalise`), categorical in the schema of
    the evaluation. Returns ``(x, schema, f)``, ``f`` doing the same to the test and control sets."""
    from dataclasses import replace

    from ppdm.data.generalization import generalise
    from ppdm.data.schema import Schema

    out = ((provenance or {}).get("output") or {}).get("schema")
    if not out:
        return x, schema, lambda df: df
    released = Schema.from_dict(out)
    cols = [c for c in x.columns if c in released.categorical and c != schema.class_column
            and (c in schema.numeric or released.categories.get(c) != schema.categories.get(c)
                 or released.hierarchies.get(c) != schema.hierarchies.get(c))]
    if not cols:
        return x, schema, lambda df: df

    def labels(c: str) -> list[Any]:
        return list(released.categories.get(c) or [])

    def recode(df: pd.DataFrame) -> pd.DataFrame:
        df = df.copy()
        for c in cols:
            if c in df.columns:
                df[c] = generalise(df[c], labels(c), ancestors=released.hierarchies.get(c)).to_numpy()
        return df

    sch = replace(schema, numeric=[c for c in schema.numeric if c not in cols],
                  categorical=[*schema.categorical, *[c for c in cols if c not in schema.categorical]],
                  integer=[c for c in schema.integer if c not in cols],
                  bounds={c: b for c, b in schema.bounds.items() if c not in cols},
                  dates={c: f for c, f in schema.dates.items() if c not in cols},
                  categories={**schema.categories, **{c: labels(c) for c in cols if labels(c)}},
                  hierarchies={**schema.hierarchies, **{c: h for c, h in released.hierarchies.items() if c in cols}})
    return recode(x), sch, recode


def _provenance_control(anonymized: str, provenance: dict[str, Any] | None) -> str | None:
    """The control set a release's provenance names (``holdout.control``, written by
    ``ppdm anonymize --holdout``), as a path beside the release; None when there is none."""
    name = ((provenance or {}).get("holdout") or {}).get("control")
    if not name:
        return None
    path = Path(anonymized).parent / Path(str(name)).name
    if not path.is_file():
        err_console.print(f"note: the provenance names the control set {str(path)!r}, which is absent; the attacks "
                          "are skipped", highlight=False, markup=False)
        return None
    err_console.print(f"control set: {path} (held out before anonymizing, named by the provenance)",
                      highlight=False, markup=False)
    return str(path)


def _show_provenance(provenance: dict[str, Any] | None, original: str) -> None:
    if provenance is None:
        return
    from ppdm.data.provenance import describe, file_sha256

    err_console.print(f"provenance of z: {describe(provenance)}", highlight=False, markup=False, soft_wrap=True)
    inp = provenance.get("input") or {}
    recorded = inp.get("sha256")
    if recorded and inp.get("partitions") and not original.startswith(BUILTIN):
        from ppdm.data.partitions import dataset_files
        from ppdm.experiments.out_of_core import dataset_sha256

        same = dataset_sha256(dataset_files(original)) == recorded
    else:
        same = not (recorded and not original.startswith(BUILTIN) and Path(original).is_file()
                    and file_sha256(original) != recorded)
    if not same:
        err_console.print("note: --original is not the file z was made from (its sha256 differs from the "
                          "provenance's)", highlight=False, markup=False)


def _check_named_keys(specs: list[Any], schema: Schema, options: dict[str, Any]) -> None:
    """Measures named with --measures that need quasi-identifiers get declared ones: nothing
    is inferred for a measure the user asked for by name (the default set infers them)."""
    from ppdm.metrics.keyvar import KEY_VARIABLE_MEASURES

    need = [s.name for s in specs if s.name in KEY_VARIABLE_MEASURES and not options.get(f"{s.name}.keys")
            and not (isinstance(options.get(s.name), dict) and options[s.name].get("keys"))]
    if need and not schema.quasi_identifiers and not options.get("keys"):
        raise ParameterError(f"measure(s) {', '.join(need)} need quasi-identifiers: declare them with --qi A,B, "
                             "with quasi_identifiers in a --schema file, or with --param keys=A,B")


def _thresholds(items: list[str] | None, names: list[str]) -> dict[str, float]:
    """``--threshold NAME=VALUE`` options as a dict, checked against the evaluated measures."""
    out: dict[str, float] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise ParameterError(f"--threshold expects NAME=VALUE, got {item!r}")
        if name not in names:
            raise ParameterError(f"--threshold names {name!r}, which is not among the evaluated measures")
        try:
            out[name] = float(value)
        except ValueError:
            raise ParameterError(f"--threshold {name} must be a number, got {value.strip()!r}") from None
    return out


def _summary(details: dict[str, Any]) -> str:
    """One line of context for the table: the scores behind a difference."""
    parts = []
    for name in ("accuracy_x", "accuracy_z", "score_x", "score_z", "n_used", "n_rules", "pos_label", "average",
                 "test_source", "original", "key_source", "ci_low", "ci_high", "ceiling"):
        v = details.get(name)
        if v is not None:
            parts.append(f"{name}={v:.4f}" if isinstance(v, float) else f"{name}={v}")
    if details.get("sample_size") is not None:
        # a measure of a partitioned table computed on a sample says so, with its interval
        lo, hi = details.get("ci_low"), details.get("ci_high")
        ci = (f", {100 * details.get('confidence', 0.95):.0f}% CI [{lo:.4g}, {hi:.4g}]"
              if isinstance(lo, float) and isinstance(hi, float) else ", no interval")
        parts.append(f"sample of {details['sample_size']} of {details.get('population')} records{ci}")
    return ", ".join(parts)


@app.command(short_help="Judge a release z against x: risk, utility, every measure.")
def evaluate(
    original: Annotated[str, typer.Option(
        "--original", "-x", help="Original table x (path, Parquet dataset folder, glob, or builtin:NAME).")],
    anonymized: Annotated[str, typer.Option(
        "--anonymized", "-z", help="Anonymized table z (path, Parquet dataset folder, glob, or builtin:NAME).")],
    class_column: ClassOpt = None,
    rules: Annotated[Path | None, typer.Option("--rules", "-r", help="Rule file Ψx (default: CART rules of x).")] = None,
    test: Annotated[str | None, typer.Option("--test", "-t", help="Test table t for model measures (default: hold out 1/3 of x).")] = None,
    control: Annotated[str | None, typer.Option("--control", help="Control set: original records not used to make z, for the attacks (default: the hold-out named by z's provenance).")] = None,
    measures: Annotated[str | None, typer.Option("--measures", "-m", help="Comma list of measure names, or 'all' (default: the default set).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON document (docs/ppdm.schema.json) instead of tables.")] = False,
    param: Annotated[list[str] | None, typer.Option("--param", "-p", help="Measure option key=value (repeatable), e.g. average=weighted.")] = None,
    threshold: Annotated[list[str] | None, typer.Option("--threshold", help="Threshold of a measure for the verdicts, NAME=VALUE (repeatable).")] = None,
    html: Annotated[Path | None, typer.Option("--html", help="Also write a self-contained HTML report.")] = None,
    verbose: Annotated[bool, typer.Option(
        "--verbose", "-v", help="Also print every measure's details, the per-key and per-rule tables and the rule "
                                "texts (default: a one-screen summary).")] = False,
    seed: MeasureSeedOpt = None,
    missing: MissingKeepOpt = "error",
    schema: SchemaOpt = None,
    sep: SepOpt = None,
    decimal: DecimalOpt = None,
    identifiers: IdOpt = None,
    quasi_identifiers: QiOpt = None,
    sensitive: SensitiveOpt = None,
    weight: WeightOpt = None,
    other: OtherOpt = None,
    categorical: CategoricalOpt = None,
    date: DateOpt = None,
    engine: EngineOpt = "auto",
    blocksize: Annotated[str | None, typer.Option(
        "--blocksize", help="With dask: bytes of CSV per partition of x (default: as the release's provenance "
                            "records, else 64MB).")] = None,
    sample_rows: Annotated[int, typer.Option(
        "--sample-rows", help="With dask: records of the sample that measures without an exact out-of-core "
                              "form are computed on.")] = 20_000,
) -> None:
    """Measure what an anonymized table z keeps of x and how exposed its records are.

    Prints a risk verdict and a utility verdict, then every measure (rule retention, model
    performance, information loss, disclosure risk, ...). A measure the table does not
    allow is reported as skipped with its reason. The provenance file written beside z by
    'ppdm anonymize' (z.provenance.json) is read when present.
    """
    from ppdm.cli.progress import progress_bar
    from ppdm.experiments.compare import dataset_summary
    from ppdm.experiments.evaluation import measurement_context, resolve_measures, run_measure
    from ppdm.report.evaluation import evaluation_document
    from ppdm.utils import parse_params

    miss = _missing(missing, keep=True)
    seed_value, drawn = measurement_seed(seed)
    if html is not None:
        from ppdm.data.io import check_output_path

        check_output_path(html, inputs=tuple(Path(s) for s in (original, anonymized, test, control)
                                             if s is not None and not s.startswith(BUILTIN)))
    specs = resolve_measures(measures)
    options = parse_params(param)
    limits = _thresholds(threshold, [s.name for s in specs])
    provenance = _provenance(anonymized)
    roles = roles_from_options(identifiers, quasi_identifiers, sensitive, weight, other)
    from ppdm.data.partitions import wants_dask

    if wants_dask(original, engine) or wants_dask(anonymized, engine):
        _evaluate_datasets(original, anonymized, test, class_column=class_column, schema=schema, sep=sep, roles=roles,
                           missing=miss, categorical=categorical, date=date, blocksize=blocksize,
                           provenance=provenance, specs=specs, options=options, rules=rules, seed_value=seed_value,
                           drawn=drawn, sample_rows=sample_rows, html=html, json_out=json_out,
                           thresholds=limits, named=measures is not None and measures.strip() != "all",
                           verbose=verbose, decimal=decimal)
        return
    x, sch, ids = load_original(original, class_column, schema_path=schema, missing=miss, sep=sep, roles=roles,
                                categorical=categorical, dates=date, provenance=provenance, decimal=decimal)
    x, sch, recode = _recoded_view(x, sch, provenance)
    z = load_like(anonymized, x, sch, miss, "anonymized", sep, ids, decimal=decimal)
    t = recode(load_like(test, x, sch, miss, "test", sep, ids, decimal=decimal)) if test is not None else None
    control = control if control is not None else _provenance_control(anonymized, provenance)
    c = recode(load_like(control, x, sch, miss, "control", sep, ids, decimal=decimal)) if control is not None else None
    if c is not None and len(x) == len(z) + len(c) and len(z) != len(x):
        from ppdm.experiments.release import without_held_out

        # a release made with --holdout: x's other records are the ones it was made from
        x = without_held_out(x, c)
    # measures compute on numbers (dates on their time axis, missing cells as NaN): the same
    # working form as compare's
    ctx = measurement_context(x, z, sch, test=t, control=c, random_state=seed_value, options=options)
    x, z, t, c = ctx.x, ctx.z, ctx.test, ctx.control
    if sch.class_column is None:
        needing = [s.name for s in specs if s.needs_class]
        named = measures is not None and measures.strip() != "all"
        if needing and (named or len(needing) == len(specs)):
            raise SchemaError(f"measure(s) {', '.join(needing)} need a class column; name it with --class")
    if measures is not None and measures.strip() != "all":
        _check_named_keys(specs, sch, options)
    if sch.weight is not None and any(s.name == "reidentification_risk" for s in specs):
        from ppdm.metrics.keyvar import check_weights

        # sampling weights are wrong for every record they belong to: refused before any measure
        check_weights(x, sch.weight if sch.weight in x.columns else None, measure="the sampling weights")
    rs = _load_rules(rules, x, sch) if rules is not None else None
    if rs is None and sch.class_column is not None and ({"min_leaf_frac", "max_depth"} & set(options)):
        from ppdm.trees.cart import rules_from_cart

        cart = {k: options[k] for k in ("min_leaf_frac", "max_depth") if k in options}
        rs = rules_from_cart(x, sch, random_state=seed_value, **cart)
    ctx.rules = rs

    outcomes = {}
    with progress_bar("evaluating", total=len(specs)) as step:
        for spec in specs:
            step(0, description=f"computing {spec.name}")
            outcomes[spec.name] = run_measure(spec, ctx)
            step()

    def size(df: pd.DataFrame | None, source: str | None) -> dict[str, Any] | None:
        return None if df is None else {"source": source, "rows": int(len(df)), "columns": int(df.shape[1])}

    inputs = {"original": size(x, original), "anonymized": size(z, anonymized), "test": size(t, test),
              "control": size(c, control),
              "rules": str(rules) if rules is not None else None, "class_column": sch.class_column,
              "seed": seed_value, "options": options}
    doc = evaluation_document(outcomes, provenance=provenance, inputs=inputs,
                              dataset=dataset_summary(x, sch, original), thresholds=limits)
    if html is not None:
        from ppdm.report.html import write_evaluation_html

        write_evaluation_html(doc, html, subtitle=f"x = {original}, z = {anonymized}" + (f", t = {test}" if test else "")
                              + f"; measurement seed {seed_value}")
        err_console.print(f"wrote {html}")
    _show_provenance(provenance, original)
    report_drawn_seed(seed_value, drawn)
    if json_out:
        print_json(doc)
        return
    _print_evaluation(doc, verbose=verbose)


def _evaluate_datasets(original: str, anonymized: str, test: str | None, *, class_column: str | None,
                       schema: Path | None, sep: str | None, roles: Any, missing: str, categorical: list[str] | None,
                       date: list[str] | None, blocksize: str | None, provenance: dict[str, Any] | None,
                       specs: list, options: dict[str, Any], rules: Path | None, seed_value: int, drawn: bool,
                       sample_rows: int, html: Path | None, json_out: bool,
                       thresholds: dict[str, float], named: bool, verbose: bool = False,
                       decimal: str | None = None) -> None:
    """Tables larger than memory: exact measures partition by partition, the others on a sample."""
    from dataclasses import replace

    from ppdm.cli.common import parse_date_options, stage_progress
    from ppdm.data.partitions import BLOCKSIZE, open_dataset
    from ppdm.data.roles import resolve_schema, split_names
    from ppdm.data.schema import Schema
    from ppdm.metrics._dask import partition_lengths, working_parts
    from ppdm.metrics.base import EvaluationContext
    from ppdm.metrics.out_of_core import SampledResult, evaluate_measure

    cats, dates = split_names(categorical), parse_date_options(date)
    if (cats or dates) and schema is not None:
        raise PPDMError("give column types either in the schema (--schema) or with --categorical/--date, not both")
    if original.startswith(BUILTIN) or anonymized.startswith(BUILTIN):
        raise PPDMError("a shipped dataset (builtin:NAME) is evaluated in memory; give files for a partitioned "
                        "evaluation")
    recorded = ((provenance or {}).get("input") or {}).get("blocksize")
    block = blocksize or recorded or BLOCKSIZE
    loaded = Schema.load(schema) if schema is not None else None
    xds = open_dataset(original, sep=sep, schema=loaded, categorical=cats, dates=dates, blocksize=block,
                       decimal=decimal)
    head = xds.head
    head.attrs["date_formats"] = dict(xds.date_formats)
    sch = resolve_schema(head, schema=loaded, class_column=class_column, roles=roles, detect=False,
                         what="the schema" if schema is None else f"schema file {str(schema)!r}")
    x, sch, ids = _without_identifiers(xds.data, sch, provenance)
    zds = open_dataset(anonymized, sep=sep, schema=sch, blocksize=block, decimal=decimal)
    cols, want = zds.columns, [str(c) for c in x.columns]
    if set(cols) - set(ids) != set(want):
        lacks = [c for c in want if c not in cols]
        extra = [c for c in cols if c not in want and c not in ids]
        raise SchemaError(f"the anonymized table {anonymized!r} does not have the columns of the original: it "
                          + " and ".join(([f"lacks {', '.join(map(repr, lacks))}"] if lacks else [])
                                         + ([f"has extra {', '.join(map(repr, extra))}"] if extra else [])))
    from ppdm.data.io import align_dtypes

    like = x._meta[want]
    # z read with x's types, column by column (a code read as text in one and as a number in the other never matches)
    z = zds.data[want].map_partitions(align_dtypes, like, f"the anonymized table {anonymized!r}", meta=like)
    if missing == "drop":
        keep = sch.columns
        x = x.dropna(subset=keep)
        z = z.dropna(subset=keep)
    elif missing == "error":
        _refuse_missing_lazily(x, sch, original)
        _refuse_missing_lazily(z, sch, anonymized)
    t = None
    if test is not None:
        t = working_parts(open_dataset(test, sep=sep, schema=sch, blocksize=block, decimal=decimal).data[want],
                          sch.numeric)
    if sch.class_column is None:
        needing = [s.name for s in specs if s.needs_class]
        if needing and (named or len(needing) == len(specs)):
            raise SchemaError(f"measure(s) {', '.join(needing)} need a class column; name it with --class")
    x, z = working_parts(x, sch.numeric), working_parts(z, sch.numeric)
    rs = _load_rules(rules, head, sch) if rules is not None else None
    ctx = EvaluationContext(x=x, z=z, schema=sch, test=t, rules=rs, random_state=seed_value, options=dict(options))
    from ppdm.cli.progress import progress_bar
    from ppdm.data.partitions import reporting
    from ppdm.experiments.evaluation import run_measure
    from ppdm.report.evaluation import evaluation_document

    def run(spec: Any) -> Any:
        # the measure exactly out of core, or on the declared sample; skipped like in memory
        return run_measure(replace(spec, fn=lambda c: evaluate_measure(spec, c, sample_rows=sample_rows)), ctx)

    outcomes: dict[str, Any] = {}
    with progress_bar("evaluating", total=len(specs)) as step, reporting(stage_progress()):
        for spec in specs:
            step(0, description=f"computing {spec.name}")
            outcomes[spec.name] = replace(run(spec), spec=spec)
            step()
    # a measure with an exact form may still attack a sample past some size (record linkage,
    # intruder matching): it then says so with its sample size
    def drew_sample(res: Any) -> bool:
        n, pop = getattr(res, "sample_size", None), getattr(res, "population", None)
        return isinstance(res, SampledResult) or bool(n and pop and n < pop)

    how = {name: ("sample" if drew_sample(o.result) else "exact") for name, o in outcomes.items() if not o.skipped}
    rows_x, rows_z = sum(partition_lengths(x)), sum(partition_lengths(z))
    inputs = {"original": {"source": original, "rows": rows_x, "columns": len(want), "partitions": x.npartitions},
              "anonymized": {"source": anonymized, "rows": rows_z, "columns": len(want), "partitions": z.npartitions},
              "test": None if t is None else {"source": test, "rows": sum(partition_lengths(t)), "columns": len(want)},
              "rules": str(rules) if rules is not None else None, "class_column": sch.class_column,
              "seed": seed_value, "options": options, "sample_rows": sample_rows}
    doc = evaluation_document(outcomes, provenance=provenance, inputs=inputs,
                              dataset=_dataset_summary(x, sch, original, rows_x), thresholds=thresholds)
    for name, h in how.items():
        doc["measures"][name]["out_of_core"] = h
    if html is not None:
        from ppdm.report.html import write_evaluation_html

        write_evaluation_html(doc, html, subtitle=f"x = {original}, z = {anonymized} ({x.npartitions} partitions); "
                                                  f"measurement seed {seed_value}")
        err_console.print(f"wrote {html}")
    _show_provenance(provenance, original)
    report_drawn_seed(seed_value, drawn)
    if json_out:
        print_json(doc)
        return
    _print_evaluation(doc, verbose=verbose)
    sampled = [n for n, h in how.items() if h == "sample"]
    if sampled:
        err_console.print(f"computed on a sample of at most {sample_rows} records (with a confidence interval in "
                          f"--json): {', '.join(sampled)}; every other measure is exact", highlight=False,
                          soft_wrap=True)


def _dataset_summary(x: Any, sch: Schema, name: str, rows: int) -> dict[str, Any]:
    """Rows, columns, roles and class counts of a partitioned x, counted partition by partition."""
    from ppdm.data.partitions import read_partition, run_partitions

    info: dict[str, Any] = {"name": name, "rows": int(rows), "columns": int(len(x.columns)),
                            "numeric": list(sch.numeric), "categorical": list(sch.categorical),
                            "class_column": sch.class_column, "partitions": int(x.npartitions)}
    cls = sch.class_column
    if cls is not None:
        parts = run_partitions(lambda i: read_partition(x, i)[cls].value_counts(), x.npartitions, name="ppdm-classes")
        import pandas as pd

        counts = pd.concat(parts).groupby(level=0, sort=False).sum().sort_values(ascending=False, kind="stable")
        info["class_counts"] = {str(k): int(v) for k, v in counts.items()}
    return info


def _refuse_missing_lazily(df: Any, sch: Schema, spec: str) -> None:
    """--missing error for a partitioned table: one pass counting missing cells per column."""
    from ppdm.data.partitions import read_partition, run_partitions

    cols = [c for c in sch.columns if c in df.columns]
    counts = run_partitions(lambda i: read_partition(df, i)[cols].isna().sum().to_dict(), df.npartitions,
                            name="ppdm-missing")
    for i, c in enumerate(counts):
        bad = [k for k, v in c.items() if v]
        if bad:
            raise SchemaError(f"column {bad[0]!r} of {spec!r} has a missing value in partition {i}; drop those rows "
                              "with --missing drop, or keep the missing cells where techniques and measures treat "
                              "them with --missing keep")


def _print_evaluation(doc: dict[str, Any], *, verbose: bool = False) -> None:
    """The evaluation on the terminal: a summary a data owner reads in one screen (the two
    verdicts, the drivers of risk, one line per measure, why some were skipped), and with
    ``verbose`` every measure's details, the per-key and per-rule tables and the rule texts."""
    from rich.text import Text

    from ppdm.cli.tables import print_table
    from ppdm.report.evaluation import fmt_number
    from ppdm.report.summary import group_reasons, measure_rows, plain_columns, risk_drivers, status_class

    style = {"good": "green", "bad": "bold red"}
    for v in doc["summary"].values():
        console.print(Text(v["sentence"], style=style.get(status_class(v["status"]), "yellow")))
    drivers = risk_drivers(doc)
    if drivers is not None:
        console.print(Text("Drivers of risk: ", style="bold") + Text(drivers.sentence))
    rows = measure_rows(doc)
    colour = {"good": "green", "bad": "red"}
    print_table(console, None, ["measure", "kind", "value", "threshold", "status"],
                [[r["name"], r["kind"], r["value"], r["threshold"], r["status"]] for r in rows],
                right=["value"], compact=True,
                styles={4: [colour.get(status_class(r["status"]), "") for r in rows]})
    skipped = [(r["name"], r["reason"] or "") for r in rows if r["status"] == "skipped"]
    for names, reason in group_reasons(skipped):
        console.print(Text(f"{', '.join(names)} skipped: {reason}", style="yellow"))
    for name, m in doc["measures"].items():
        if m.get("not_judged"):  # computed, but the intruder scenario it models does not apply
            console.print(Text(f"{name} not judged: {m['not_judged']}", style="dim"))
    if not verbose:
        extra = " and the rule texts" if doc["tables"].get("per_rule") else ""
        console.print(Text(f"--verbose shows every measure's details, the per-key and per-rule tables{extra}; "
                           "--html FILE writes the full report.", style="dim"))
        return
    details = [[name, m["kind"], fmt_number(m["value"]) if m["status"] != "skipped" else "skipped",
                {"higher": "higher", "lower": "lower"}.get(m.get("direction") or "", "neither"),
                _summary(m.get("details") or {})] for name, m in doc["measures"].items()]
    print_table(console, "details of every measure", ["measure", "kind", "value", "better", "details"], details,
                right=["value"])
    if drivers is not None:
        print_table(console, f"key variables ({', '.join(drivers.measures)})", plain_columns(drivers.table["columns"]),
                    [[fmt_number(c) if isinstance(c, float) else str(c) for c in r] for r in drivers.table["rows"]],
                    right=plain_columns(drivers.table["columns"][1:]))
    per_rule = doc["tables"].get("per_rule")
    if per_rule is None:
        return
    cols = per_rule["columns"]

    def col(row: list[Any], name: str) -> Any:
        return row[cols.index(name)] if name in cols else None

    body = []
    for row in per_rule["rows"]:
        flags = [f for f, key in (("flipped", "flipped"), ("empty in z", "zero_support_z"),
                                  ("discounted", "discounted")) if col(row, key)]
        body.append([str(col(row, "rule_index")), str(col(row, "support_x")), str(col(row, "support_z")),
                     fmt_number(col(row, "chi2")), str(col(row, "predicted_x")), str(col(row, "predicted_z")),
                     ", ".join(flags) or "no"])
    print_table(console, "rules Ψx in x and z (per rule; texts below)",
                ["#", "support x", "support z", "χ²", "majority x", "majority z", "flags"], body,
                right=["#", "support x", "support z", "χ²"])
    for row in per_rule["rows"]:
        console.print(Text(f"{col(row, 'rule_index'):>3}: {col(row, 'rule')} → {col(row, 'consequent')}"),
                      soft_wrap=True)
