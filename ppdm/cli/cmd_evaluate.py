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
    ClassOpt,
    IdOpt,
    MeasureSeedOpt,
    MissingOpt,
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
    load_input,
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
              sep: str | None = None, ignore: list[str] | None = None) -> pd.DataFrame:
    """Read table ``spec`` (path or builtin:NAME) and check it has exactly the columns of x.

    Columns are put in x's order (``ignore``d ones, x's identifiers, are dropped first);
    the table is validated against x's schema.
    """
    if spec.startswith(BUILTIN):
        from ppdm.data.datasets import load

        df, _ = load(spec[len(BUILTIN):])
    else:
        from ppdm.data.io import read_table

        df = read_table(spec, sep=sep)
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
    df = df[list(x.columns)]
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
    from dataclasses import replace

    from ppdm.data.roles import Roles, apply_roles

    named = set(schema.identifiers) | set((provenance or {}).get("removed_identifiers") or [])
    drop = [str(c) for c in x.columns if c in named]
    if not drop:
        return x, schema, []
    sch = apply_roles(schema, Roles(identifiers=tuple(c for c in drop if c not in schema.identifiers)),
                      list(x.columns))
    return x.drop(columns=drop), replace(sch, identifiers=[]), drop


def _show_provenance(provenance: dict[str, Any] | None, original: str) -> None:
    if provenance is None:
        return
    from ppdm.data.provenance import describe, file_sha256

    err_console.print(f"provenance of z: {describe(provenance)}", highlight=False, markup=False, soft_wrap=True)
    recorded = (provenance.get("input") or {}).get("sha256")
    if recorded and not original.startswith(BUILTIN) and Path(original).is_file() \
            and file_sha256(original) != recorded:
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
                 "test_source", "ceiling"):
        v = details.get(name)
        if v is not None:
            parts.append(f"{name}={v:.4f}" if isinstance(v, float) else f"{name}={v}")
    return ", ".join(parts)


@app.command(short_help="Judge a release z against x: risk, utility, every measure.")
def evaluate(
    original: Annotated[str, typer.Option("--original", "-x", help="Original table x (path or builtin:NAME).")],
    anonymized: Annotated[str, typer.Option("--anonymized", "-z", help="Anonymized table z (path or builtin:NAME).")],
    class_column: ClassOpt = None,
    rules: Annotated[Path | None, typer.Option("--rules", "-r", help="Rule file Ψx (default: CART rules of x).")] = None,
    test: Annotated[str | None, typer.Option("--test", "-t", help="Test table t for model measures (default: hold out 1/3 of x).")] = None,
    measures: Annotated[str | None, typer.Option("--measures", "-m", help="Comma list of measure names, or 'all' (default: the default set).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON document (docs/ppdm.schema.json) instead of tables.")] = False,
    param: Annotated[list[str] | None, typer.Option("--param", "-p", help="Measure option key=value (repeatable), e.g. average=weighted.")] = None,
    threshold: Annotated[list[str] | None, typer.Option("--threshold", help="Threshold of a measure for the verdicts, NAME=VALUE (repeatable).")] = None,
    html: Annotated[Path | None, typer.Option("--html", help="Also write a self-contained HTML report.")] = None,
    seed: MeasureSeedOpt = None,
    missing: MissingOpt = "error",
    schema: SchemaOpt = None,
    sep: SepOpt = None,
    identifiers: IdOpt = None,
    quasi_identifiers: QiOpt = None,
    sensitive: SensitiveOpt = None,
    weight: WeightOpt = None,
    other: OtherOpt = None,
) -> None:
    """Measure what an anonymized table z keeps of x and how exposed its records are.

    Prints a risk verdict and a utility verdict, then every measure (rule retention, model
    performance, information loss, disclosure risk, ...). A measure the table does not
    allow is reported as skipped with its reason. The provenance file written beside z by
    'ppdm anonymize' (z.provenance.json) is read when present.
    """
    from ppdm.cli.progress import progress_bar
    from ppdm.experiments.compare import dataset_summary
    from ppdm.experiments.evaluation import resolve_measures, run_measure
    from ppdm.metrics.base import EvaluationContext
    from ppdm.report.evaluation import evaluation_document
    from ppdm.utils import parse_params

    miss = _missing(missing)
    seed_value, drawn = measurement_seed(seed)
    if html is not None:
        from ppdm.data.io import check_output_path

        check_output_path(html, inputs=tuple(Path(s) for s in (original, anonymized, test)
                                             if s is not None and not s.startswith(BUILTIN)))
    specs = resolve_measures(measures)
    options = parse_params(param)
    limits = _thresholds(threshold, [s.name for s in specs])
    provenance = _provenance(anonymized)
    roles = roles_from_options(identifiers, quasi_identifiers, sensitive, weight, other)
    x, sch, _ = load_input(original, class_column, schema_path=schema, missing=miss, sep=sep, roles=roles)
    x, sch, ids = _without_identifiers(x, sch, provenance)
    z = load_like(anonymized, x, sch, miss, "anonymized", sep, ids)
    t = load_like(test, x, sch, miss, "test", sep, ids) if test is not None else None
    if sch.class_column is None:
        needing = [s.name for s in specs if s.needs_class]
        named = measures is not None and measures.strip() != "all"
        if needing and (named or len(needing) == len(specs)):
            raise SchemaError(f"measure(s) {', '.join(needing)} need a class column; name it with --class")
    rs = _load_rules(rules, x, sch) if rules is not None else None
    if rs is None and sch.class_column is not None and ({"min_leaf_frac", "max_depth"} & set(options)):
        from ppdm.trees.cart import rules_from_cart

        cart = {k: options[k] for k in ("min_leaf_frac", "max_depth") if k in options}
        rs = rules_from_cart(x, sch, random_state=seed_value, **cart)
    ctx = EvaluationContext(x=x, z=z, schema=sch, test=t, rules=rs, random_state=seed_value, options=options)

    outcomes = {}
    with progress_bar("evaluating", total=len(specs)) as step:
        for spec in specs:
            step(0, description=f"computing {spec.name}")
            outcomes[spec.name] = run_measure(spec, ctx)
            step()

    def size(df: pd.DataFrame | None, source: str | None) -> dict[str, Any] | None:
        return None if df is None else {"source": source, "rows": int(len(df)), "columns": int(df.shape[1])}

    inputs = {"original": size(x, original), "anonymized": size(z, anonymized), "test": size(t, test),
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
    _print_evaluation(doc)


def _print_evaluation(doc: dict[str, Any]) -> None:
    from rich.text import Text

    from ppdm.cli.tables import print_table
    from ppdm.report.evaluation import fmt_number

    for v in doc["summary"].values():
        style = {"low": "green", "kept": "green", "high": "bold red", "reduced": "bold red"}.get(v["status"], "yellow")
        console.print(Text(v["sentence"], style=style))
    rows, skipped = [], []
    for name, m in doc["measures"].items():
        if m["status"] == "skipped":
            skipped.append((name, m["reason"]))
            value = "skipped"
        else:
            value = fmt_number(m["value"])
        better = {"higher": "higher", "lower": "lower"}.get(m.get("direction") or "", "neither")
        rows.append([name, m["kind"], value, better, _summary(m.get("details") or {})])
    print_table(console, "ppdm evaluate", ["measure", "kind", "value", "better", "details"], rows, right=["value"])
    for name, reason in skipped:
        console.print(Text(f"{name} skipped: {reason}", style="yellow"))
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
