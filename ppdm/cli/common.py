"""Shared pieces of the command-line interface: loading inputs, printing, errors.

Nothing heavy is imported at module level (pandas, NumPy, rich's console are loaded on
first use), so ``ppdm --help`` stays fast.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from ppdm.errors import PPDMError

if TYPE_CHECKING:
    import pandas as pd
    from rich.console import Console

    from ppdm.data.schema import MissingPolicy, Schema

BUILTIN = "builtin:"


class _LazyConsole:
    """A rich console made on first use (importing rich's console costs a tenth of a second)."""

    def __init__(self, **kwargs: Any) -> None:
        self._kwargs = kwargs
        self._console: Console | None = None

    @property
    def real(self) -> Console:
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._kwargs)
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    # special methods are looked up on the type, so they are forwarded one by one
    def __enter__(self) -> Console:
        return self.real.__enter__()

    def __exit__(self, *exc: Any) -> None:
        self.real.__exit__(*exc)


console: Any = _LazyConsole()
err_console: Any = _LazyConsole(stderr=True, soft_wrap=True)  # one message, one line


def load_input(
    spec: str,
    class_column: str | None,
    *,
    schema_path: Path | None = None,
    missing: MissingPolicy = "error",
) -> tuple[pd.DataFrame, Schema, int]:
    """Read ``spec`` (a path or ``builtin:NAME``) and its schema.

    Returns ``(table, schema, n_dropped)``; incomplete rows are handled by ``missing``.
    """
    from ppdm.data.io import read_table
    from ppdm.data.schema import Schema

    if spec.startswith(BUILTIN):
        from ppdm.data.datasets import load

        df, schema = load(spec[len(BUILTIN):])
        if class_column is not None and class_column != schema.class_column:
            schema = schema.with_class(class_column) if class_column in df.columns else _no_class(class_column, df)
    else:
        df = read_table(spec)
        if schema_path is not None:
            schema = Schema.load(schema_path)
            if class_column is not None:
                schema = schema.with_class(class_column)
        else:
            schema = Schema.infer(df, class_column)
    df, dropped = schema.validate(df, missing=missing)
    if dropped:
        err_console.print(f"[yellow]dropped {dropped} incomplete row(s) from {spec}[/yellow]")
        df = df.reset_index(drop=True)
    return df, schema, dropped


def _no_class(name: str, df: pd.DataFrame) -> Schema:
    raise PPDMError(f"class column {name!r} is not in the table (columns: {', '.join(map(str, df.columns))})")


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, default=str) + "\n")


def one_line(message: object) -> str:
    """``message`` (text or an exception) on one line, rich markup characters escaped."""
    from rich.markup import escape

    text = " ".join(str(message).split())
    return escape(text or type(message).__name__)


def fail(message: str) -> None:
    """Print one error line and exit with code 2 (bad input)."""
    err_console.print(f"[bold red]error:[/bold red] {one_line(message)}", highlight=False)
    raise typer.Exit(2)
