"""``ppdm schema``: show the schema ppdm infers for a table and write it as an editable file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ppdm.cli.app import ClassOpt, app
from ppdm.cli.common import BUILTIN, console
from ppdm.cli.options import TableOptions, table_options


@app.command("schema", short_help="Show and write the columns' types and roles.")
@table_options
def schema_cmd(
    data: Annotated[str, typer.Argument(help="Input table (CSV/Parquet) or builtin:NAME.")],
    class_column: ClassOpt = None,
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", help="Schema file to write (default: <DATA stem>.schema.json beside DATA, or in the "
                            "current folder for builtin:NAME).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing schema file.")] = False,
    table: TableOptions = TableOptions(),
    domain_template: Annotated[bool, typer.Option(
        "--domain-template", help="Also write the public domain to fill in: 'bounds' [low, high] of every numeric "
        "attribute and 'categories' of every categorical attribute and the class, as empty placeholders (never "
        "read from the data). A differentially private release (dpcube) needs them.")] = False,
) -> None:
    """Print every column's type, role, number of distinct values, missing cells and share of unique
    values, and write the schema (types and roles) as a JSON file to edit and pass back with --schema.

    Columns that look like direct identifiers are written as identifiers and flagged; edit the
    file if one is an ordinary attribute. Columns that look like quasi-identifiers, a sensitive
    attribute or a sampling weight are suggested (printed, and kept under "_suggestions" in the
    file), never applied: declare them with --qi, --sensitive, --weight or in the file.
    """
    import json

    from ppdm.cli.tables import print_table
    from ppdm.data.io import atomic_write_text, check_output_path, read_table
    from ppdm.data.roles import Roles, apply_roles, identifier_reason, resolve_schema
    from ppdm.data.schema import Schema
    from ppdm.errors import PPDMError

    src = None if data.startswith(BUILTIN) else Path(data)
    schema = table.schema
    if out is None:
        stem = data[len(BUILTIN):] if src is None else _stem(src)
        out = Path(f"{stem}.schema.json") if src is None else src.with_name(f"{stem}.schema.json")
    check_output_path(out, inputs=(src, schema))
    if out.exists() and not force:
        raise PPDMError(f"schema file {str(out)!r} exists; pass --force to overwrite it, or --out another file")
    roles = table.roles()
    base: Schema | None  # the declared schema, when there is one
    if src is None:
        from ppdm.data.datasets import load

        df, base = load(data[len(BUILTIN):])
        if class_column is not None and class_column != base.class_column:
            base = base.with_class(class_column)
    else:
        from ppdm.cli.common import parse_date_options
        from ppdm.data.roles import split_names

        cats, dates = split_names(table.categorical), parse_date_options(table.date)
        if (cats or dates) and schema is not None:
            raise PPDMError("give column types either in the schema (--schema) or with --categorical/--date, not both")
        base = Schema.load(schema) if schema is not None else None
        df = read_table(src, sep=table.sep, schema=base, categorical=cats, dates=dates, decimal=table.decimal)
    sch = resolve_schema(df, schema=base, class_column=class_column, roles=roles, detect=False,
                         what="the schema" if schema is None else f"schema file {str(schema)!r}")
    declared = set(base.all_columns if base is not None else []) | set(roles.named())
    if sch.class_column:
        declared.add(sch.class_column)
    suspects = {c: identifier_reason(df[c]) for c in sch.attributes if c not in declared}
    suspects = {c: r for c, r in suspects.items() if r is not None}
    if suspects:
        sch = apply_roles(sch, Roles(identifiers=tuple(suspects)), list(df.columns))

    from ppdm.data.suggest import suggest_roles

    hints = suggest_roles(df, sch)
    rows = []
    about = {}
    n = len(df)
    for c in df.columns:
        s = df[c]
        distinct = int(s.nunique(dropna=True))
        unique_share = float((~s.duplicated(keep=False) & s.notna()).sum() / n) if n else 0.0
        kind = f"date ({sch.dates[c] or '%Y-%m-%d'})" if c in sch.dates else \
            ("numeric, whole" if c in sch.integer else "numeric") if c in sch.numeric else \
            "categorical" if c in sch.categorical or c == sch.class_column else str(s.dtype)
        note = f"looks like an identifier: {suspects[c]}" if c in suspects else ""
        for label, found in (("quasi-identifier", hints.quasi_identifiers), ("sensitive", hints.sensitive),
                             ("weight", hints.weight)):
            if str(c) in found:
                note = f"suggested {label}? {found[str(c)]}"
        missing = int(s.isna().sum())
        rows.append([str(c), kind, sch.role(c), str(distinct), _missing_text(missing, n),
                     f"{100 * unique_share:.1f}%", note])
        about[str(c)] = {"type": kind, "role": sch.role(c), "distinct": distinct, "missing": missing,
                         "unique_share": round(unique_share, 4), **({"note": note} if note else {})}
    print_table(console, f"schema of {data} ({len(df)} rows × {df.shape[1]} columns)",
                ["column", "type", "role", "distinct", "missing", "unique share", "note"], rows,
                right=("distinct", "missing", "unique share"))
    record = {"_comment": "ppdm schema: types and roles of every column; see docs/roles_and_release.md. "
                          "Keys starting with '_' are ignored.", **sch.to_dict(), "_columns": about,
              **({"_suggestions": {"_comment": "not applied: move a column into quasi_identifiers, sensitive or "
                                               "weight above if the suggestion is right", **hints.to_dict()}}
                 if hints else {})}
    if domain_template:
        record.update(_domain_template(sch))
    atomic_write_text(out, json.dumps(record, indent=2) + "\n")
    if suspects:
        console.print(f"written as identifiers (edit {out} if one is an ordinary attribute): "
                      f"{', '.join(suspects)}", highlight=False, markup=False)
    if hints:
        flags = [f"--qi {','.join(hints.quasi_identifiers)}" if hints.quasi_identifiers else "",
                 f"--sensitive {','.join(hints.sensitive)}" if hints.sensitive else "",
                 f"--weight {next(iter(hints.weight))}" if hints.weight else ""]
        console.print("suggested roles, NOT applied (only you know what an intruder may know): "
                      + " ".join(f for f in flags if f) + f"; check them, then pass these options or edit {out}",
                      highlight=False, markup=False, soft_wrap=True)
    if domain_template:
        console.print("fill in the placeholders of 'bounds' and 'categories' from the columns' public "
                      "documentation (not from the records) before using the file", highlight=False, markup=False)
    console.print(f"wrote {out}; use it with --schema {out}", highlight=False, markup=False)


def _domain_template(sch: Any) -> dict[str, Any]:
    """Placeholders for the public domain: declared bounds/categories are kept, the rest left
    empty (null bounds, no categories), so that nothing of the data enters the declaration."""
    from ppdm.data.schema import date_bounds

    # a date's bounds are written as dates (``"1900-01-01"``), as a data owner would fill them in
    bounds = {c: (date_bounds(sch.bounds[c]) if c in sch.dates else list(sch.bounds[c])) if c in sch.bounds
              else [None, None] for c in sch.numeric}
    cats = [*sch.categorical, *([sch.class_column] if sch.class_column else [])]
    categories = {c: list(sch.categories.get(c, [])) for c in cats}
    return {
        "_domain": "The public domain of a differentially private release: replace every null in 'bounds' by the "
                   "attribute's lowest and highest possible value (a date's as YYYY-MM-DD), and list every value a categorical attribute or "
                   "the class may take in 'categories', from documentation or a public standard - never from the "
                   "records. 'integer' names the whole-number attributes. Values outside the domain are clamped "
                   "(numbers) or dropped / sent to an 'other' cell (categories) when the release is made.",
        "bounds": bounds,
        "categories": categories,
    }


def _stem(p: Path) -> str:
    name = p.name
    for suf in (".csv.gz", ".csv", ".txt", ".parquet", ".pq"):
        if name.lower().endswith(suf):
            return name[: -len(suf)]
    return p.stem


def _missing_text(count: int, n: int) -> str:
    if count == 0:
        return "0"
    return f"{count} ({100 * count / n:.1f}%)" if n else str(count)
