"""``ppdm reproduce substitution ...``: the random-substitution experiments of paper 001 §5."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from ppdm.cli.app import ExperimentSeedOpt
from ppdm.cli.cmd_reproduce import reproduce_app
from ppdm.cli.common import console, fail, research_seed_note
from ppdm.errors import ParameterError, PPDMError

substitution = typer.Typer(
    name="substitution",
    short_help="Random substitution experiments (paper 001).",
    help="Random substitution experiments (Dowd, Xu & Zhang 2006): estimation error and tree accuracy.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
reproduce_app.add_typer(substitution, name="substitution")

OutOpt = Annotated[Path, typer.Option("--out", "-o", help="Folder for the tables (CSV, Markdown) and PNG plots.")]
GammaOpt = Annotated[str | None, typer.Option("--gammas", help="Comma list of γ (default 2,3,...,21).")]
NOpt = Annotated[str | None, typer.Option("--ns", help="Comma list of N (default 5,10,15,20,30,...,100).")]
RepOpt = Annotated[int, typer.Option("--repeats", help="Perturbations per grid cell, averaged (paper: 5).")]
QuickOpt = Annotated[bool, typer.Option("--quick", help="A small grid (γ ∈ {2,5,10,21}, N ∈ {5,20,50,100}, 2 repeats).")]


def _numbers(text: str | None, cast: type, name: str) -> list | None:
    if text is None:
        return None
    try:
        vals = [cast(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise ParameterError(f"{name} must be a comma-separated list of numbers, got {text!r}") from None
    if not vals:
        raise ParameterError(f"{name} is empty")
    return vals


def _grid(gammas: str | None, ns: str | None, repeats: int, quick: bool) -> dict:
    from ppdm.experiments.random_substitution import GAMMAS, NS

    g = _numbers(gammas, float, "--gammas") or ([2, 5, 10, 21] if quick else list(GAMMAS))
    n = _numbers(ns, int, "--ns") or ([5, 20, 50, 100] if quick else list(NS))
    return {"gammas": g, "ns": n, "repeats": min(repeats, 2) if quick else repeats}


def _run(total: int, label: str, seed: int, experiment: Callable[[Any], Any],
         report: Callable[[Any, Path], list[Path]], out: Path) -> None:
    """Run ``experiment(progress)`` (``total`` steps) under a progress bar, write its ``report``
    into ``out`` and say where; both experiments do this the same way."""
    from ppdm.cli.progress import progress_bar

    research_seed_note(seed)
    with progress_bar(label, total=total) as step:
        result = experiment(step)
    paths = report(result, out)
    console.print(f"wrote {', '.join(str(p) for p in paths)}")


@substitution.command("error-experiment", short_help="Estimation error over gamma and N (paper 001).")
def error_experiment_cmd(
    out: OutOpt,
    gammas: GammaOpt = None,
    ns: NOpt = None,
    repeats: RepOpt = 5,
    records: Annotated[int, typer.Option("--records", help="Records per synthetic dataset.")] = 10_000,
    seed: ExperimentSeedOpt = 0,
    quick: QuickOpt = False,
) -> None:
    """Estimation error E over γ × N on the plateau and triangles datasets, with and without
    the error-reduction heuristic (001 §5.1, Fig. 2)."""
    from ppdm.experiments.random_substitution import error_experiment, error_report

    try:
        grid = _grid(gammas, ns, repeats, quick)
        if records < 1:
            raise ParameterError(f"--records must be positive, got {records}")
        _run(2 * len(grid["gammas"]) * len(grid["ns"]), "estimation error", seed, lambda p: error_experiment(
            n_records=records, random_state=seed, progress=p, **grid), error_report, out)
    except PPDMError as e:
        fail(str(e))


@substitution.command("tree-experiment", short_help="Trees on reconstructed data (paper 001).")
def tree_experiment_cmd(
    out: OutOpt,
    datasets: Annotated[str, typer.Option("--datasets", help="Comma list of shipped datasets with a class.")] = "wine,wbc,banknote",
    gammas: GammaOpt = None,
    ns: NOpt = None,
    repeats: RepOpt = 5,
    test_fraction: Annotated[float, typer.Option("--test-fraction", help="Share of records held out for testing.")] = 0.3,
    seed: ExperimentSeedOpt = 0,
    quick: QuickOpt = False,
) -> None:
    """Accuracy of trees learned from MR-reconstructed data vs γ, N and H(M) (001 §5.2,
    Figs. 4–5). The learner is ppdm's C4.5 when available, else an entropy CART."""
    from ppdm.data.datasets import names
    from ppdm.experiments.random_substitution import tree_experiment, tree_report

    try:
        grid = _grid(gammas, ns, repeats, quick)
        ds = [d.strip() for d in datasets.split(",") if d.strip()]
        unknown = [d for d in ds if d not in names()]
        if not ds or unknown:
            raise ParameterError(f"unknown dataset {unknown[0] if unknown else '(none)'}; shipped: {', '.join(names())}")
        _run(len(ds) * len(grid["gammas"]) * len(grid["ns"]), "tree accuracy", seed, lambda p: tree_experiment(
            datasets=ds, test_fraction=test_fraction, random_state=seed, progress=p, **grid), tree_report, out)
    except PPDMError as e:
        fail(str(e))
