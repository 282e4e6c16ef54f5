"""``ppdm evaluate``: measure an anonymized table z against the original x.

This module parses the options, reads x and prints; the evaluation itself is the library's
one entry point, :func:`ppdm.experiments.evaluate.evaluate` (pairing through the private log,
the control set, the recoded view, the measures and the verdicts), for tables in memory and
for tables read with Dask alike (:func:`~ppdm.experiments.evaluate.partitioned` decides), so a
library user gets the same numbers and verdicts. The release is handed to it as
:func:`~ppdm.experiments.evaluate.checked_release` returns it: its provenance and private log
read, and the log checked against x's and z's files, before x is read.
Measures are found by name through :mod:`ppdm.experiments.evaluation`, so every measure
any module of :mod:`ppdm.metrics` or :mod:`ppdm.attacks` registers works here without
change. A measure the table does not allow is reported as skipped with its reason; the
others still run.
"""

from __future__ import annotations

from dataclasses import replace
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
    SchedulerOpt,
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
    load_input,
    measurement_seed,
    print_json,
    report_drawn_seed,
    roles_from_options,
    settle_imports,
    use_scheduler,
)
from ppdm.errors import ParameterError

if TYPE_CHECKING:
    from ppdm.data.schema import Schema
    from ppdm.experiments.evaluate_common import CheckedRelease, EvaluateOptions
    from ppdm.experiments.pairing import Pairing


def _note(line: str) -> None:
    """A note of the library about the tables it read (rows dropped, where the control set came from)."""
    if line.startswith("dropped "):
        err_console.print(f"[yellow]{line}[/yellow]")
    else:
        err_console.print(line, highlight=False, markup=False)


def _show_provenance(provenance: dict[str, Any] | None, original: str, pairing: Pairing | None = None) -> None:
    from ppdm.data.provenance import describe, describe_private, file_sha256

    if provenance is not None:
        err_console.print(f"provenance of z: {describe(provenance)}", highlight=False, markup=False, soft_wrap=True)
    if pairing is not None and pairing.private is not None:
        err_console.print(f"private log {pairing.private_file}: {describe_private(pairing.private)}",
                          highlight=False, markup=False, soft_wrap=True)
    if pairing is not None:
        for note in pairing.notes:
            err_console.print(f"note: {note}", highlight=False, markup=False, soft_wrap=True)
    if provenance is None or (pairing is not None and pairing.private is not None):
        return
    inp = provenance.get("input") or {}  # a version-1 record, written before the private log existed
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
                 "test_source", "original", "key_source", "ci_low", "ci_high", "ceiling", "pair_share", "range_share",
                 "x_share", "z_share"):
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
    test: Annotated[str | None, typer.Option("--test", "-t", help="Test table t for model measures (default: the control set when there is one, else hold out 1/3 of x).")] = None,
    control: Annotated[str | None, typer.Option("--control", help="Control set: original records not used to make z, for the attacks (default: the hold-out named by z's private log).")] = None,
    private: Annotated[Path | None, typer.Option("--private", help="z's private log, which pairs its rows with x's records (default: <z stem>.private.json beside z, when there).")] = None,
    pairing: Annotated[str, typer.Option("--pairing", help="How z's rows pair with x's: 'auto' (through the private log when there is one), 'position' (you declare z's rows to be x's, in order: a release made elsewhere that kept the order) or 'none' (record-by-record measures use pairing-free forms).")] = "auto",
    measures: Annotated[str | None, typer.Option("--measures", "-m", help="Comma list of measure names, or 'all' (default: the default set).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON document (docs/ppdm.schema.json) instead of tables.")] = False,
    param: Annotated[list[str] | None, typer.Option("--param", "-p", help="Measure option key=value (repeatable), e.g. average=weighted.")] = None,
    threshold: Annotated[list[str] | None, typer.Option("--threshold", help="Threshold of a measure for the verdicts, NAME=VALUE (repeatable).")] = None,
    rule_out: Annotated[list[str] | None, typer.Option(
        "--rule-out", help="An intruder scenario you rule out for this release (repeatable): quasi-identifiers, "
                           "originals, sensitive or control. The risk verdict leaves its measures out and its "
                           "sentence names the exclusion.")] = None,
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
    scheduler: SchedulerOpt = None,
) -> None:
    """Measure what an anonymized table z keeps of x and how exposed its records are.

    Prints a risk verdict and a utility verdict, then every measure (rule retention, model
    performance, information loss, disclosure risk, ...). A measure the table does not
    allow is reported as skipped with its reason. The provenance file written beside z by
    'ppdm anonymize' (z.provenance.json) is read when present, and so is its private log
    (z.private.json), which pairs z's shuffled rows with x's records and names the control set.
    """
    from ppdm.cli.progress import progress_of_library
    from ppdm.experiments.evaluate import EvaluateOptions, checked_release, evaluate, partitioned
    from ppdm.experiments.evaluation import resolve_measures
    from ppdm.metrics.judgement import check_scenarios
    from ppdm.utils import parse_params

    miss = _missing(missing, keep=True)
    use_scheduler(scheduler)  # the partitioned passes run on its workers
    seed_value, drawn = measurement_seed(seed)
    if html is not None:
        from ppdm.data.io import check_output_path

        check_output_path(html, inputs=tuple(Path(s) for s in (original, anonymized, test, control,
                                                               str(private) if private else None)
                                             if s is not None and not s.startswith(BUILTIN)))
    specs = resolve_measures(measures)
    settle_imports()  # every measure's module is imported: before any table is read
    options = parse_params(param)
    from ppdm.experiments.evaluation import check_measure_options

    check_measure_options(specs, options)  # a mistyped option would otherwise be ignored, silently
    limits = _thresholds(threshold, [s.name for s in specs])
    ruled = check_scenarios(rule_out or [])
    opts = EvaluateOptions(measures=measures, measure_options=options, thresholds=limits, pairing=pairing,
                           rules=rules, missing=miss, random_state=seed_value, sample_rows=sample_rows,
                           ruled_out=ruled, engine=engine)
    from ppdm.experiments.evaluate import TableReading

    # z's provenance and private log, the log checked against x's and z's files before x is read
    release = checked_release(anonymized, original, private=private, pairing=pairing,
                              reading=TableReading(sep=sep, decimal=decimal))
    roles = roles_from_options(identifiers, quasi_identifiers, sensitive, weight, other)
    if partitioned(original, anonymized, engine):
        from ppdm.cli.common import parse_date_options
        from ppdm.data.roles import split_names
        from ppdm.data.schema import Schema

        # x read partition by partition too: its types and roles travel with the release's reading
        reading = replace(release.reading, categorical=split_names(categorical), dates=parse_date_options(date),
                          blocksize=blocksize, class_column=class_column, roles=roles,
                          schema_name=str(schema) if schema is not None else None)
        _evaluate_datasets(original, replace(release, reading=reading),
                           Schema.load(schema) if schema is not None else None,
                           replace(opts, test=test), drawn=drawn, html=html, json_out=json_out, verbose=verbose)
        return
    x, sch, _ = load_input(original, class_column, schema_path=schema, missing=miss, sep=sep, roles=roles,
                           categorical=categorical, dates=date, decimal=decimal)
    with progress_of_library():
        # the library reads z, the test and the control set (the log's, when not given) like x,
        # and tells what it finds as it finds it (rows dropped, where the control set came from)
        ev = evaluate(x, release, sch, options=replace(opts, test=test, control=control, on_note=_note))
    doc = ev.document()
    if html is not None:
        from ppdm.report.html import write_evaluation_html

        write_evaluation_html(doc, html, subtitle=f"x = {original}, z = {anonymized}" + (f", t = {test}" if test else "")
                              + f"; measurement seed {seed_value}")
        err_console.print(f"wrote {html}")
    _show_provenance(ev.provenance, original, ev.pairing)
    report_drawn_seed(seed_value, drawn)
    if json_out:
        print_json(doc)
        return
    _print_evaluation(doc, verbose=verbose)


def _evaluate_datasets(original: str, release: CheckedRelease, schema: Schema | None, opts: EvaluateOptions, *,
                       drawn: bool, html: Path | None, json_out: bool, verbose: bool = False) -> None:
    """Tables larger than memory, through the library's one entry point
    (:func:`ppdm.experiments.evaluate.evaluate`, partitioned): exact measures partition by
    partition, the others on a sample; this prints."""
    from ppdm.cli.common import stage_progress
    from ppdm.cli.progress import progress_of_library
    from ppdm.data.partitions import reporting
    from ppdm.experiments.evaluate import evaluate
    from ppdm.experiments.evaluate_partitioned import sampled_measures

    with progress_of_library(), reporting(stage_progress()):
        ev = evaluate(original, release, schema, options=opts)
    anonymized, provenance, pair = release.path, release.provenance, release.pairing
    doc = ev.document()
    parts = doc["inputs"]["original"]["partitions"]
    if html is not None:
        from ppdm.report.html import write_evaluation_html

        write_evaluation_html(doc, html, subtitle=f"x = {original}, z = {anonymized} ({parts} partitions)"
                                                  f"; measurement seed {opts.random_state}")
        err_console.print(f"wrote {html}")
    _show_provenance(dict(provenance) if provenance is not None else None, original, pair)
    report_drawn_seed(opts.random_state, drawn)
    if json_out:
        print_json(doc)
        return
    _print_evaluation(doc, verbose=verbose)
    sampled = sampled_measures(ev)
    if sampled:
        err_console.print(f"computed on a sample of at most {opts.sample_rows} records (with a confidence interval "
                          f"in --json): {', '.join(sampled)}; every other measure is exact", highlight=False,
                          soft_wrap=True)


def _print_evaluation(doc: dict[str, Any], *, verbose: bool = False) -> None:
    """The evaluation on the terminal: a summary a data owner reads in one screen (the two
    verdicts, the drivers of risk, one line per measure, why some were skipped), and with
    ``verbose`` every measure's details, the per-key and per-rule tables and the rule texts."""
    from rich.text import Text

    from ppdm.cli.tables import print_table
    from ppdm.report.evaluation import fmt_number
    from ppdm.report.summary import (
        fidelity_summary,
        group_reasons,
        linkage_drivers,
        measure_rows,
        plain_columns,
        plausibility_drivers,
        risk_drivers,
        status_class,
    )

    style = {"good": "green", "bad": "bold red"}
    for v in doc["summary"].values():
        console.print(Text(v["sentence"], style=style.get(status_class(v["status"]), "yellow")))
    linked = linkage_drivers(doc)
    if linked is not None:  # the intruder who holds x's records: the verbatim columns they join on
        console.print(Text("Drivers of risk: ", style="bold") + Text(linked))
    drivers = risk_drivers(doc)
    if drivers is not None:
        console.print(Text("Drivers of risk: ", style="bold") + Text(drivers.sentence))
    fidelity = fidelity_summary(doc)
    if fidelity is not None and not fidelity.all_meet:
        # which columns and pairs z keeps worst (names and scores, never a record); when all meet
        # their threshold, the verdict's "at ..." names the worst of each and the screen stays short
        console.print(Text("Distribution fidelity: ", style="bold") + Text(fidelity.sentence()))
    implausible = plausibility_drivers(doc)
    if implausible is not None:  # the worst combinations, by labels and counts
        console.print(Text("Implausible records: ", style="bold") + Text(implausible))
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
        if m.get("not_judged") and m.get("status") != "skipped":  # computed, but its scenario does not apply
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
