"""``ppdm anonymize``: make a release z of a table x with one technique.

The command runs :func:`ppdm.experiments.release.release` (roles, identifier screening,
the technique, the release check) and :func:`~ppdm.experiments.release.save_release`
(the table, its provenance sidecar and the technique's sidecars, all or nothing).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ppdm.cli.app import (
    CategoricalOpt,
    ClassOpt,
    DateOpt,
    IdOpt,
    MissingKeepOpt,
    OtherOpt,
    ParamOpt,
    QiOpt,
    SchemaOpt,
    SeedOpt,
    SensitiveOpt,
    SepOpt,
    WeightOpt,
    _missing,
    app,
)
from ppdm.cli.common import BUILTIN, console, err_console, load_input, parse_seed, roles_from_options


@app.command()
def anonymize(
    data: Annotated[str, typer.Argument(help="Input table (CSV/Parquet) or builtin:NAME.")],
    method: Annotated[str, typer.Option("--method", "-m", help="Technique name (see `ppdm methods`).")],
    out: Annotated[Path, typer.Option(
        "--out", "-o", help="Release table (.csv or .parquet), written atomically with <stem>.provenance.json.")],
    class_column: ClassOpt = None,
    param: ParamOpt = None,
    seed: SeedOpt = None,
    missing: MissingKeepOpt = "error",
    schema: SchemaOpt = None,
    sep: SepOpt = None,
    identifiers: IdOpt = None,
    quasi_identifiers: QiOpt = None,
    sensitive: SensitiveOpt = None,
    weight: WeightOpt = None,
    other: OtherOpt = None,
    keep_identifiers: Annotated[bool, typer.Option(
        "--keep-identifiers", help="Keep identifier columns in the release, unchanged (default: removed).")] = False,
    allow_unchanged: Annotated[bool, typer.Option(
        "--allow-unchanged", help="Write the release even if the check finds the original records in it.")] = False,
    categorical: CategoricalOpt = None,
    date: DateOpt = None,
    decimals: Annotated[str | None, typer.Option(
        "--decimals", help="Decimals of float columns in the release: one number for all, or col=n pairs "
                           "(default: as many as each column had in the input).")] = None,
) -> None:
    """Anonymize a table with one technique and write the release z, its provenance and its release check."""
    import warnings

    from ppdm.anonymize.registry import make_technique
    from ppdm.data.io import check_output_path, check_output_table
    from ppdm.data.provenance import provenance_path
    from ppdm.experiments.release import release, save_release
    from ppdm.utils import parse_params

    random_state = parse_seed(seed)
    src = None if data.startswith(BUILTIN) else Path(data)
    # every output is checked before any work: format, folder, and never one of the inputs
    check_output_table(out, inputs=(src, schema))
    check_output_path(provenance_path(out), inputs=(src, schema))
    params = parse_params(param)
    roles = roles_from_options(identifiers, quasi_identifiers, sensitive, weight, other)
    x, sch, dropped = load_input(data, class_column, schema_path=schema, missing=_missing(missing, keep=True),
                                 sep=sep, roles=roles, detect=True, categorical=categorical, dates=date)
    from ppdm.data.types import parse_decimals

    dec = parse_decimals(decimals, [c for c in sch.numeric if c not in sch.dates])
    tech = make_technique(method, class_column=sch.class_column, random_state=random_state, schema=sch,
                          params=params)
    info = {"source": data, "sha256": _input_sha256(data), "rows": len(x) + dropped, "columns": x.shape[1],
            "rows_used": len(x)}
    with console.status(f"anonymizing {len(x)} records with {method}…"), warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        rel = release(x, tech, schema=sch, keep_identifiers=keep_identifiers, allow_unchanged=allow_unchanged,
                      detect_identifiers=False, input_info=info, decimals=dec)
    for line in rel.warnings:
        err_console.print(f"[yellow]warning:[/yellow] {line}", highlight=False, markup=True, soft_wrap=True)
    if rel.removed_identifiers:
        console.print(f"removed identifier column(s) {', '.join(rel.removed_identifiers)} from the release "
                      "(keep them with --keep-identifiers)", highlight=False, markup=False, soft_wrap=True)
    elif rel.kept_identifiers:
        console.print(f"kept identifier column(s) {', '.join(rel.kept_identifiers)} in the release, unchanged",
                      highlight=False, markup=False, soft_wrap=True)
    console.print("release check:", highlight=False)
    for line in rel.check.summary_lines():
        console.print(f"  {line}", highlight=False, markup=False, soft_wrap=True)
    if random_state is not None:
        console.print("seeded: anyone who knows the seed can redo the random draws and undo much of the release; "
                      "keep it secret, with x (it is not stored)", highlight=False, soft_wrap=True)
    written = save_release(rel, out)
    z = rel.data
    console.print(f"wrote {out} ({len(z)} rows × {z.shape[1]} columns) with {method}, and "
                  f"{', '.join(p.name for p in written[1:])}", highlight=False, markup=False, soft_wrap=True)


def _input_sha256(spec: str) -> str:
    from ppdm.data.provenance import file_sha256

    if spec.startswith(BUILTIN):
        from importlib import resources

        name = spec[len(BUILTIN):]
        with resources.as_file(resources.files("ppdm.data").joinpath(f"builtin/{name}.csv.gz")) as p:
            return file_sha256(p)
    return file_sha256(spec)
