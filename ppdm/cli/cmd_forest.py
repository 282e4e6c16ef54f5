"""``ppdm reproduce forest-experiment``: paper 004 Fig. 2 (prediction accuracy after FF, F, GADP, RT)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ppdm.cli.app import ExperimentSeedOpt
from ppdm.cli.cmd_reproduce import reproduce_app
from ppdm.cli.common import console, research_seed_note
from ppdm.errors import ParameterError


def _split(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


@reproduce_app.command("forest-experiment", short_help="Forests on perturbed data (paper 004).")
def forest_experiment(
    out: Annotated[Path, typer.Option("--out", "-o", help="Folder for runs.csv, summary.csv and summary.md.")],
    datasets: Annotated[str, typer.Option("--datasets", help="Comma-separated shipped datasets.")] = (
        "wine,wbc,credit,cmc,abalone"
    ),
    folds: Annotated[int, typer.Option("--folds", help="Cross-validation folds (paper: 10).")] = 10,
    repeats: Annotated[int, typer.Option("--repeats", help="Perturbations per training fold (paper: 10).")] = 10,
    learner: Annotated[str, typer.Option("--learner", help="'sysfor' (paper 004) or 'cart' (quick check).")] = (
        "sysfor"
    ),
    techniques: Annotated[str, typer.Option("--techniques", help="Comma-separated subset of FF,F,GADP,RT.")] = (
        "FF,F,GADP,RT"
    ),
    seed: ExperimentSeedOpt = 0,
) -> None:
    """Forests on perturbed data: accuracy of forests built from data perturbed by Forest
    Framework, Framework, GADP and RT (paper 004 Fig. 2)."""
    from ppdm.cli.progress import progress_bar
    from ppdm.data.datasets import names
    from ppdm.data.io import atomic_write_text, write_table
    from ppdm.experiments.forest_framework import LEARNERS, TECHNIQUES, count_steps, run_forest_experiment

    ds = _split(datasets)
    known = set(names())
    for d in ds:
        if d not in known:
            raise ParameterError(f"unknown dataset {d!r}; shipped datasets: {', '.join(sorted(known))}")
    techs = _split(techniques)
    for t in techs:
        if t not in TECHNIQUES:
            raise ParameterError(f"unknown technique {t!r}; choose from {', '.join(TECHNIQUES)}")
    if learner not in LEARNERS:
        raise ParameterError(f"--learner must be one of {', '.join(LEARNERS)}, got {learner!r}")
    if out.exists() and not out.is_dir():
        raise ParameterError(f"--out {str(out)!r} exists and is not a folder")
    research_seed_note(seed)
    with progress_bar("forest experiment", total=count_steps(len(ds), folds, repeats, len(techs))) as step:
        res = run_forest_experiment(ds, folds=folds, repeats=repeats, learner=learner, techniques=techs, seed=seed,
                                    on_step=lambda what: step(1, description=what))
    out.mkdir(parents=True, exist_ok=True)
    write_table(res.runs, out / "runs.csv")
    write_table(res.summary.reset_index(), out / "summary.csv")
    head = (f"Prediction accuracy (%) of forests built from perturbed training folds; learner: {res.learner}; "
            f"{folds}-fold CV × {repeats} perturbations per fold; seed {seed}.\n\n")
    atomic_write_text(out / "summary.md", head + res.to_markdown())
    console.print(head + res.to_markdown())
    console.print(f"wrote {out / 'runs.csv'}, {out / 'summary.csv'}, {out / 'summary.md'}")
