"""``ppdm reproduce retention-experiment``: rule retention as toy noise grows (paper 000 §8.2)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ppdm.cli.app import ClassOpt, DecimalOpt, ExperimentSeedOpt, MissingOpt, SchemaOpt, SepOpt, _missing
from ppdm.cli.cmd_reproduce import reproduce_app
from ppdm.cli.common import console, load_input, research_seed_note
from ppdm.errors import ParameterError


def _levels(text: str) -> list[float]:
    try:
        levels = [float(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise ParameterError(f"--levels expects numbers separated by commas, got {text!r}") from None
    if not levels or any(not 0 <= v <= 1 for v in levels):
        raise ParameterError(f"--levels must be fractions in [0, 1], got {text!r}")
    return levels


@reproduce_app.command("retention-experiment", short_help="Rule retention as noise grows (paper 000).")
def retention_experiment(
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for runs.csv, summary.csv, summary.md, rules.txt.")],
    data: Annotated[str, typer.Option("--data", "-d", help="Table x (path or builtin:NAME).")] = "builtin:adult",
    class_column: ClassOpt = None,
    noise: Annotated[str, typer.Option("--noise", help="Noise technique: uniform-noise or gaussian-noise.")] = "uniform-noise",
    levels: Annotated[str, typer.Option("--levels", help="Noise levels (fractions), comma separated.")] = "0,0.1,0.2,0.3",
    repetitions: Annotated[int, typer.Option("--repetitions", "-n", help="Noisy copies of x per level.")] = 10,
    seed: ExperimentSeedOpt = 0,
    missing: MissingOpt = "drop",
    schema: SchemaOpt = None,
    sep: SepOpt = None,
    decimal: DecimalOpt = None,
) -> None:
    """Rule retention under noise: mean Rule Accuracy, RSD and RLD of the CART rules of x on
    noisy copies of x, per noise level (paper 000 §8.2).

    The defaults reproduce the adult table of docs/retention.md (complete records only:
    30162; 36 rules; uniform noise 0, 10, 20, 30 %; 10 repetitions).
    """
    from ppdm.cli.progress import progress_bar
    from ppdm.experiments.retention import run_retention_experiment

    if noise not in ("uniform-noise", "gaussian-noise"):
        raise ParameterError(f"--noise must be uniform-noise or gaussian-noise, got {noise!r}")
    lv = _levels(levels)
    research_seed_note(seed)
    x, sch, _ = load_input(data, class_column, schema_path=schema, missing=_missing(missing), sep=sep,
                           decimal=decimal)
    with progress_bar(f"{noise} on {data}", total=len(lv) * repetitions) as step:
        exp = run_retention_experiment(x, sch, noise=noise, levels=lv, repetitions=repetitions, seed=seed,
                                       progress=step)
    exp.save(out)
    console.print(f"{data}: {exp.n_records} records, {len(exp.rules)} rules, {noise}, {repetitions} repetitions",
                  highlight=False, emoji=False, markup=False)
    console.print(exp.markdown(), highlight=False, soft_wrap=True)
    console.print(f"wrote runs.csv, summary.csv, summary.md and rules.txt to {out}", emoji=False, markup=False)
