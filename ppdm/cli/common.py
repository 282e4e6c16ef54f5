"""Shared pieces of the command-line interface: loading inputs, printing, errors."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import typer
from rich.console import Console

from ppdm.data.io import read_table
from ppdm.data.schema import MissingPolicy, Schema
from ppdm.errors import PPDMError

console = Console()
err_console = Console(stderr=True, soft_wrap=True)  # one message, one line

BUILTIN = "builtin:"


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
