"""The ``ppdm`` command: a thin layer over the library.

Exit codes: 0 success, 2 bad input or parameters (one message, no traceback),
1 internal error.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer
from typer.core import TyperGroup

from ppdm.cli.common import console, err_console, load_input, one_line
from ppdm.errors import PPDMError


class _ErrorMappingGroup(TyperGroup):
    """Maps errors to exit codes for every command, also under Typer's test runner:
    :class:`PPDMError` → 2 with one line, anything unexpected → 1 (traceback with PPDM_DEBUG=1)."""

    def invoke(self, ctx):  # type: ignore[no-untyped-def]
        try:
            return super().invoke(ctx)
        except PPDMError as e:
            err_console.print(f"[bold red]error:[/bold red] {one_line(e)}", highlight=False)
            raise typer.Exit(2) from None
        except (typer.Exit, typer.Abort):
            raise
        except Exception as e:
            # usage errors of the command-line parser carry their own exit code
            if hasattr(e, "exit_code") or os.environ.get("PPDM_DEBUG"):
                raise
            err_console.print(
                f"[bold red]internal error:[/bold red] {type(e).__name__}: {one_line(e)} "
                "(set PPDM_DEBUG=1 for a traceback)",
                highlight=False,
            )
            raise typer.Exit(1) from None


app = typer.Typer(
    cls=_ErrorMappingGroup,
    name="ppdm",
    help="Privacy-preserving publishing of tabular microdata: anonymize, evaluate, compare.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

ClassOpt = Annotated[str | None, typer.Option("--class", "-c", help="Class (label) column.")]
SeedOpt = Annotated[int, typer.Option("--seed", help="Random seed; the same seed gives identical output.")]
ParamOpt = Annotated[list[str] | None, typer.Option("--param", "-p", help="Technique parameter key=value (repeatable).")]
MissingOpt = Annotated[str, typer.Option("--missing", help="Incomplete rows: 'error' (default) or 'drop'.")]
SchemaOpt = Annotated[Path | None, typer.Option("--schema", help="Schema JSON naming numeric/categorical/class columns.")]


def _missing(value: str) -> str:
    if value not in ("error", "drop"):
        raise PPDMError(f"--missing must be 'error' or 'drop', got {value!r}")
    return value


@app.command()
def methods() -> None:
    """List the anonymization techniques and their parameters."""
    from rich.table import Table

    from ppdm.anonymize.registry import TECHNIQUES, _load_all, technique_params

    _load_all()
    table = Table(title="ppdm techniques (use with: ppdm anonymize --method NAME --param key=value)")
    table.add_column("method")
    table.add_column("class")
    table.add_column("parameters (default)")
    table.add_column("what it does")
    for name in sorted(TECHNIQUES):
        cls = TECHNIQUES[name]
        params = ", ".join(f"{k}={v!r}" for k, v in technique_params(cls).items())
        doc = (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else ""
        table.add_row(name, cls.__name__, params, doc)
    console.print(table)


@app.command()
def anonymize(
    data: Annotated[str, typer.Argument(help="Input table (CSV/Parquet) or builtin:NAME.")],
    method: Annotated[str, typer.Option("--method", "-m", help="Technique name (see `ppdm methods`).")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Output table (.csv or .parquet), written atomically.")],
    class_column: ClassOpt = None,
    param: ParamOpt = None,
    seed: SeedOpt = 0,
    missing: MissingOpt = "error",
    schema: SchemaOpt = None,
) -> None:
    """Anonymize a table with one technique and write the release z."""
    from ppdm.anonymize.registry import make_technique
    from ppdm.data.io import write_table
    from ppdm.utils import parse_params

    params = parse_params(param)
    x, sch, _ = load_input(data, class_column, schema_path=schema, missing=_missing(missing))
    tech = make_technique(method, class_column=sch.class_column, random_state=seed, schema=sch, params=params)
    with console.status(f"anonymizing {len(x)} records with {method}…"):
        z = tech.fit_transform(x)
    write_table(z, out)
    extra = getattr(tech, "write_sidecars", None)
    if callable(extra):
        try:
            extra(out)
        except BaseException:
            # a release without its sidecar is a partial output: take it back
            out.unlink(missing_ok=True)
            raise
    console.print(f"wrote {out} ({len(z)} rows × {z.shape[1]} columns) with {method}")


def _register_commands() -> None:
    # each command family lives in its own module and adds itself to ``app``
    import importlib
    import pkgutil

    import ppdm.cli as pkg

    for mod in sorted(m.name for m in pkgutil.iter_modules(pkg.__path__)):
        if mod.startswith("cmd_"):
            importlib.import_module(f"ppdm.cli.{mod}")


_register_commands()


def main() -> None:
    """Entry point (exit codes are set by :class:`_ErrorMappingGroup`)."""
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
