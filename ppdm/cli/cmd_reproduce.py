"""``ppdm reproduce PAPER --out DIR``: regenerate a paper's result tables.

Each reproducible paper registers a function in :data:`REPRODUCTIONS` that takes the output
folder, the seed, the quick flag and a progress callback, and returns the files it wrote.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from ppdm.cli.app import app
from ppdm.cli.common import console
from ppdm.errors import PPDMError

Reproduction = Callable[[Path, int, bool, Callable[[int], Callable[[str], None]]], list[Path]]


def _rounding(out: Path, seed: int, quick: bool, start: Callable[[int], Callable[[str], None]]) -> list[Path]:
    """Paper 003 (rounding for SDC): Tables 1–8 and a trend summary."""
    from ppdm.experiments.rounding import Setup, default_measures, run_rounding, write_tables

    measures = default_measures()  # fail before any work when the measures are missing
    setup = Setup.quick(seed=seed) if quick else Setup(seed=seed)
    setup.advance = start(setup.steps())
    tables = run_rounding(setup, measures)
    return write_tables(tables, out)


REPRODUCTIONS: dict[str, Reproduction] = {"rounding": _rounding}


@app.command()
def reproduce(
    paper: Annotated[str, typer.Argument(help=f"Which paper's tables: {', '.join(sorted(REPRODUCTIONS))}.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for the CSV and Markdown tables.")],
    seed: Annotated[int, typer.Option("--seed", help="Random seed of data generation and randomized methods.")] = 0,
    quick: Annotated[bool, typer.Option("--quick", help="Small sizes, for a smoke run.")] = False,
) -> None:
    """Regenerate a paper's result tables (CSV + Markdown) into a folder."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    if paper not in REPRODUCTIONS:
        raise PPDMError(f"no reproduction named {paper!r}; available: {', '.join(sorted(REPRODUCTIONS))}")
    if out.exists() and not out.is_dir():
        raise PPDMError(f"--out {str(out)!r} exists and is not a folder")
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=False) as progress:
        task = progress.add_task(f"reproducing {paper}", total=None)

        def start(total: int) -> Callable[[str], None]:
            progress.update(task, total=total)

            def advance(msg: str) -> None:
                progress.update(task, advance=1, description=f"{paper}: {msg}")

            return advance

        files = REPRODUCTIONS[paper](out, seed, quick, start)
    console.print(f"wrote {len(files)} files into {out}")
