"""``ppdm reproduce PAPER --out DIR``: regenerate a paper's result tables; the group also
holds the single experiments (``ppdm reproduce retention-experiment`` ...).

Each reproducible paper registers a function in :data:`REPRODUCTIONS` that takes the output
folder, the seed, the quick flag and a progress callback, and returns the files it wrote:
``retention`` (paper 000), ``random-substitution`` (paper 001), ``rounding`` (paper 003),
``forest-framework`` (paper 004) and ``all`` (each of them into ``DIR/<paper>``). The
functions only choose settings and call the experiment modules of :mod:`ppdm.experiments`.
docs/reproduce.md lists the commands, their run times and the docs holding the tables.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer
from typer.core import TyperGroup

from ppdm.cli.app import ExperimentSeedOpt, app
from ppdm.cli.common import console, research_seed_note
from ppdm.errors import PPDMError

Reproduction = Callable[[Path, int, bool, Callable[[int], Callable[[str], None]]], list[Path]]


Start = Callable[[int], Callable[[str], None]]

# §7.1 of paper 000 raises UN/GN from 0 % to 30 %
_NOISE_LEVELS = (0.0, 0.1, 0.2, 0.3)
_DP_NOISE_LEVELS = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3)
# perturbations per training fold in the full paper-004 run (paper 004 §7: 10); with every
# release also scored by EDUDS, EDUSC and SERS the run takes about 11 minutes on two shared
# cores (docs/reproduce.md)
FOREST_REPEATS = 10


def _rounding(out: Path, seed: int, quick: bool, start: Start) -> list[Path]:
    """Paper 003 (rounding for SDC): Tables 1–8 and a trend summary."""
    from ppdm.experiments.rounding import Setup, default_measures, run_rounding, write_tables

    measures = default_measures()  # fail before any work when the measures are missing
    setup = Setup.quick(seed=seed) if quick else Setup(seed=seed)
    setup.advance = start(setup.steps())
    tables = run_rounding(setup, measures)
    return write_tables(tables, out)


def _retention(out: Path, seed: int, quick: bool, start: Start) -> list[Path]:
    """Paper 000 (rule retention): UN/GN retention tables on adult (§8.2, Fig. 4), the DPCube
    ε sweep on Banknotes (§8.4, Fig. 5) and the correlations of the six measures (§8.3, Table 6)."""
    from ppdm.data.io import atomic_write_text, write_table
    from ppdm.datasets import load
    from ppdm.experiments import dp_retention as dp
    from ppdm.experiments.retention import run_retention_experiment

    adult, s_adult = load("adult", missing="drop")
    bank, s_bank = load("banknote")
    levels: tuple[float, ...]
    eps: tuple[float, ...]
    noise: tuple[float, ...]
    if quick:
        adult = adult.sample(1500, random_state=seed).reset_index(drop=True)
        levels, reps = (0.0, 0.1, 0.3), 2
        eps, noise, dp_reps, folds = (1.0, 0.05), (0.1, 0.3), 1, 2
    else:
        levels, reps = _NOISE_LEVELS, 10
        eps, noise, dp_reps, folds = dp.DEFAULT_EPSILONS, _DP_NOISE_LEVELS, 10, 10
    advance = start(2 * len(levels) * reps + dp.count_runs(len(eps), len(noise), dp_reps, folds))
    files: list[Path] = []
    parts = [f"# Paper 000: rule retention (seed {seed}{', quick run' if quick else ''})", ""]
    for noise_name in ("uniform-noise", "gaussian-noise"):
        exp = run_retention_experiment(adult, s_adult, noise=noise_name, levels=levels, repetitions=reps, seed=seed,
                                       progress=lambda n=noise_name: advance(f"adult {n}"))  # type: ignore[misc]  # mypy cannot type a lambda's default
        files += exp.save(out / f"adult_{noise_name}")
        parts += [f"## adult, {noise_name} ({exp.n_records} records, {len(exp.rules)} rules, {reps} copies per level)",
                  "", exp.markdown()]
    res = dp.run_dp_retention(bank, s_bank, epsilons=eps, noise_levels=noise, repeats=dp_reps, folds=folds,
                              random_state=seed, dataset="banknote", progress=lambda: advance("banknote DPCube/UN/GN"))
    files += dp.write_outputs(res, out / "banknote_dp")
    corr = dp.measure_correlations(res)
    corr_md = dp.correlations_markdown(corr)
    files.append(write_table(corr, out / "correlations.csv"))
    files.append(atomic_write_text(out / "correlations.md", corr_md))
    parts += ["## banknote: DPCube ε sweep with UN/GN for comparison", "", res.to_markdown(),
              "## Pearson correlations of the measures (differences from the training fold; r (p))", "", corr_md]
    files.append(atomic_write_text(out / "retention.md", "\n".join(parts)))
    return files


def _forest_framework(out: Path, seed: int, quick: bool, start: Start) -> list[Path]:
    """Paper 004 (Forest Framework): Fig. 2 accuracies and EDUDS/EDUSC/SERS (Figs. 3–4, Table 4)
    of FF, F, GADP and RT releases, with SysFor forests."""
    from ppdm.experiments.forest_framework import (
        PAPER_DATASETS,
        count_steps,
        run_forest_experiment,
        write_outputs,
    )

    datasets, folds, repeats = (("wbc",), 2, 1) if quick else (PAPER_DATASETS, 10, FOREST_REPEATS)
    advance = start(count_steps(len(datasets), folds, repeats))
    res = run_forest_experiment(datasets, folds=folds, repeats=repeats, seed=seed, structure=True, on_step=advance)
    head = (f"Learner: {res.learner}; {folds}-fold CV × {repeats} perturbations per training fold; seed {seed}."
            "\n\n")
    return write_outputs(res, out, header=head)


def _random_substitution(out: Path, seed: int, quick: bool, start: Start) -> list[Path]:
    """Paper 001 (random substitution): estimation error (§5.1, Fig. 2) and tree accuracy on
    reconstructed data (§5.2, Figs. 4–5)."""
    from ppdm.experiments import random_substitution as rs

    gammas: tuple[int, ...]
    ns: tuple[int, ...]
    datasets: tuple[str, ...]
    if quick:
        gammas, ns, repeats, records, datasets = (2, 10), (5, 50), 1, 2000, ("wbc",)
    else:
        gammas, ns, repeats, records, datasets = rs.GAMMAS, rs.NS, 5, 10_000, rs.TREE_DATASETS
    n_err = 2 * len(gammas) * len(ns)
    advance = start(n_err + len(datasets) * len(gammas) * len(ns))

    def ticks(label: str) -> Callable[[int], None]:
        def tick(k: int) -> None:
            for _ in range(k):
                advance(label)

        return tick

    err = rs.error_experiment(gammas=gammas, ns=ns, n_records=records, repeats=repeats, random_state=seed,
                              progress=ticks("estimation error"))
    files = rs.error_report(err, out)
    tree = rs.tree_experiment(datasets=datasets, gammas=gammas, ns=ns, repeats=repeats, random_state=seed,
                              progress=ticks("tree accuracy"))
    return files + rs.tree_report(tree, out)


def _all(out: Path, seed: int, quick: bool, start: Start) -> list[Path]:
    """Every paper above, each into ``out / <paper>``."""
    files: list[Path] = []
    for name, fn in REPRODUCTIONS.items():
        if fn is not _all:
            files += fn(out / name, seed, quick, start)
    return files


REPRODUCTIONS: dict[str, Reproduction] = {
    "retention": _retention,
    "random-substitution": _random_substitution,
    "rounding": _rounding,
    "forest-framework": _forest_framework,
    "all": _all,
}


class _ReproduceGroup(TyperGroup):
    """``ppdm reproduce``: the papers first, then the single experiments; an unknown name is
    refused with the list of known ones."""

    def list_commands(self, ctx):
        names = list(self.commands)
        return [n for n in REPRODUCTIONS if n in names] + [n for n in names if n not in REPRODUCTIONS]

    def resolve_command(self, ctx, args):
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            raise PPDMError(
                f"no reproduction named {args[0]!r}; papers: {', '.join(REPRODUCTIONS)}; "
                f"experiments: {', '.join(n for n in self.commands if n not in REPRODUCTIONS)}"
            )
        return super().resolve_command(ctx, args)


reproduce_app = typer.Typer(
    cls=_ReproduceGroup,
    name="reproduce",
    help="Rerun the papers' experiments. 'ppdm reproduce PAPER --out DIR' regenerates a paper's result tables "
    "(CSV + Markdown); the *-experiment commands run one experiment with settings of your own.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(reproduce_app, name="reproduce")

OutOpt = Annotated[Path, typer.Option("--out", "-o", help="Folder for the CSV and Markdown tables.")]
QuickOpt = Annotated[bool, typer.Option("--quick", help="Small sizes, for a smoke run.")]


def run_reproduction(paper: str, out: Path, seed: int, quick: bool) -> None:
    """Regenerate the tables of ``paper`` into ``out`` with a progress bar."""
    from ppdm.cli.progress import progress_bar

    if paper not in REPRODUCTIONS:
        raise PPDMError(f"no reproduction named {paper!r}; available: {', '.join(sorted(REPRODUCTIONS))}")
    if out.exists() and not out.is_dir():
        raise PPDMError(f"--out {str(out)!r} exists and is not a folder")
    research_seed_note(seed)
    with progress_bar(f"reproducing {paper}") as task:

        def start(total: int) -> Callable[[str], None]:
            task.reset(total)  # `all` starts one bar per paper

            def advance(msg: str) -> None:
                task(1, description=f"{paper}: {msg}")

            return advance

        files = REPRODUCTIONS[paper](out, seed, quick, start)
    console.print(f"wrote {len(files)} files into {out}")


PAPER_HELP = {
    "retention": "Paper 000: rule retention under uniform and Gaussian noise on adult (Fig. 4), the DPCube "
    "epsilon sweep on Banknotes (Fig. 5) and the correlations of the six measures (Table 6).",
    "random-substitution": "Paper 001: estimation error of random substitution (Fig. 2) and accuracy of trees "
    "learned from reconstructed data (Figs. 4-5).",
    "rounding": "Paper 003: rounding for statistical disclosure control, Tables 1-8 and the IL/DR trends.",
    "forest-framework": "Paper 004: accuracy (Fig. 2), EDUDS, EDUSC and SERS (Figs. 3-4, Table 4) of Forest "
    "Framework, Framework, GADP and the random technique.",
    "all": "Every paper above, each into its own folder OUT/PAPER.",
}


PAPER_SHORT_HELP = {
    "retention": "Paper 000: rule retention under noise and DPCube.",
    "random-substitution": "Paper 001: random substitution and reconstruction.",
    "rounding": "Paper 003: rounding for disclosure control.",
    "forest-framework": "Paper 004: Forest Framework against F, GADP, RT.",
    "all": "Every paper, each into its own folder.",
}


def _paper_command(paper: str) -> None:
    def command(out: OutOpt, seed: ExperimentSeedOpt = 0, quick: QuickOpt = False) -> None:
        run_reproduction(paper, out, seed, quick)

    command.__doc__ = PAPER_HELP[paper] + "\n\nWrites CSV and Markdown tables (and plots) into --out."
    reproduce_app.command(paper, short_help=PAPER_SHORT_HELP[paper])(command)


for _name in REPRODUCTIONS:
    _paper_command(_name)
