"""``ppdm reproduce dp-experiment``: rule retention of DPCube releases as ε shrinks (paper 000 §8.4)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ppdm.cli.app import ClassOpt, DecimalOpt, ExperimentSeedOpt, ParamOpt, SchemaOpt, SepOpt
from ppdm.cli.cmd_reproduce import reproduce_app
from ppdm.cli.common import console, load_input, research_seed_note
from ppdm.errors import ParameterError


def _numbers(values: list[str] | None, name: str) -> list[float] | None:
    """``["1,0.5", "0.1"]`` → ``[1.0, 0.5, 0.1]`` (comma lists and repeated options both work)."""
    if not values:
        return None
    out: list[float] = []
    for chunk in values:
        for tok in chunk.split(","):
            tok = tok.strip()
            if not tok:
                continue
            try:
                out.append(float(tok))
            except ValueError:
                raise ParameterError(f"{name} takes numbers, got {tok!r}") from None
    if not out:
        raise ParameterError(f"{name} names no value")
    return out


@reproduce_app.command("dp-experiment", short_help="DPCube releases per privacy budget (paper 000).")
def dp_experiment(
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for the CSV/Markdown tables and the PNG figure.")],
    epsilons: Annotated[list[str] | None, typer.Option(
        "--epsilons", "-e", help="Privacy budgets, comma-separated or repeated (default: 1.0 … 0.001).")] = None,
    repeats: Annotated[int, typer.Option("--repeats", "-r", help="Anonymizations per fold and level (paper: 10).")] = 10,
    folds: Annotated[int, typer.Option("--folds", help="Cross-validation folds (paper: 10).")] = 10,
    noise_levels: Annotated[list[str] | None, typer.Option(
        "--noise-levels", help="UN/GN levels for comparison, fractions (default 0.1,0.2,0.3).")] = None,
    measures: Annotated[str | None, typer.Option(
        "--measures", "-m", help="Comma list of measure names (default: the paper's six).")] = None,
    data: Annotated[str, typer.Option("--data", help="Table (CSV/Parquet) or builtin:NAME.")] = "builtin:banknote",
    class_column: ClassOpt = None,
    param: ParamOpt = None,
    seed: ExperimentSeedOpt = 0,
    schema: SchemaOpt = None,
    sep: SepOpt = None,
    decimal: DecimalOpt = None,
) -> None:
    """DPCube releases per privacy budget: Rule Accuracy, RSD, RLD and model measures per
    epsilon (paper 000 §8.4).

    DPCube's domain is the public one the schema declares (a shipped dataset's metadata
    or --schema with 'bounds' and 'categories'), never one read from the records."""
    from ppdm.cli.progress import progress_bar
    from ppdm.experiments.dp_retention import (
        DEFAULT_DPCUBE_PARAMS,
        DEFAULT_EPSILONS,
        DEFAULT_MEASURES,
        DEFAULT_NOISE_LEVELS,
        count_runs,
        run_dp_retention,
        write_outputs,
    )
    from ppdm.utils import parse_params

    eps = _numbers(epsilons, "--epsilons") or list(DEFAULT_EPSILONS)
    noise = _numbers(noise_levels, "--noise-levels")
    noise = list(DEFAULT_NOISE_LEVELS) if noise is None else noise
    params = {**DEFAULT_DPCUBE_PARAMS, **parse_params(param)}
    if out.exists() and not out.is_dir():
        raise ParameterError(f"--out {str(out)!r} exists and is not a folder")
    x, sch, _ = load_input(data, class_column, schema_path=schema, sep=sep, decimal=decimal)
    research_seed_note(seed)
    total = count_runs(len(eps), len(noise), repeats, folds)
    with progress_bar("anonymizing and measuring", total=total) as step:
        result = run_dp_retention(
            x, sch, epsilons=eps, noise_levels=noise, repeats=repeats, folds=folds,
            measures=measures or DEFAULT_MEASURES, dpcube_params=params, random_state=seed,
            dataset=data.removeprefix("builtin:"), progress=step,
        )
    paths = write_outputs(result, out)
    console.print(result.to_markdown())
    for p in paths:
        console.print(f"wrote {p}")
