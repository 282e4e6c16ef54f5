"""The ``ppdm`` command: a thin layer over the library.

Exit codes: 0 success, 2 bad input or parameters (one message, no traceback),
1 internal error.

Command modules import pandas, NumPy, scikit-learn and the rest of ppdm inside their
command functions, so ``ppdm --help`` loads none of them; help is plain text.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from typer.core import TyperGroup

from ppdm.cli.common import console, err_console, mark_own_process, one_line, settle_imports
from ppdm.errors import PPDMError

if TYPE_CHECKING:
    from ppdm.data.schema import MissingPolicy

#: the order ``ppdm --help`` lists the commands in: the user's verbs first
COMMAND_ORDER = ("anonymize", "evaluate", "compare", "recommend", "schema", "report", "methods", "measures", "rules",
                 "tree", "reconstruct", "reproduce")


class Interrupted(KeyboardInterrupt):
    """Raised in the main thread when the process receives SIGTERM, so that every pending
    cleanup (atomic writes, all-or-nothing releases) runs as it does for Ctrl-C."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _terminate(signum: int, frame: object) -> None:
    signal.signal(signum, signal.SIG_IGN)  # a second signal must not cut the cleanup short
    raise Interrupted(signum)


@contextlib.contextmanager
def _signals_raise() -> Iterator[None]:
    """While a command runs, SIGTERM raises :class:`Interrupted` (SIGINT raises
    KeyboardInterrupt by default); the previous handler is put back afterwards."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers (a command run from a worker thread)
        return
    before = signal.signal(signal.SIGTERM, _terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


def _interrupted(e: KeyboardInterrupt) -> int:
    """Remove every temporary file still in use and say so; the exit code of the signal."""
    from ppdm.data.atomic import remove_temporaries

    remove_temporaries()
    signum = getattr(e, "signum", signal.SIGINT)
    err_console.print(f"[bold red]interrupted[/bold red] by {signal.Signals(signum).name}: stopped; no partial "
                      "output or temporary file is left", highlight=False)
    return 128 + int(signum)


class _ErrorMappingGroup(TyperGroup):
    """Maps errors to exit codes for every command, also under Typer's test runner:
    :class:`PPDMError` → 2 with one line, anything unexpected → 1 (traceback with PPDM_DEBUG=1),
    SIGTERM and SIGINT → 128 + the signal's number after removing temporary files."""

    def list_commands(self, ctx):
        names = list(self.commands)
        rank = {n: i for i, n in enumerate(COMMAND_ORDER)}
        return sorted(names, key=lambda n: (rank.get(n, len(rank)), n))

    def invoke(self, ctx):
        try:
            with _signals_raise():
                return super().invoke(ctx)
        except KeyboardInterrupt as e:
            raise typer.Exit(_interrupted(e)) from None
        except PPDMError as e:
            err_console.print(f"[bold red]error:[/bold red] {one_line(e)}", highlight=False)
            raise typer.Exit(2) from None
        except (typer.Exit, typer.Abort):
            raise
        except typer.BadParameter as e:
            # a bad option value (--seed abc) is one line like any other bad input, not a usage box
            err_console.print(f"[bold red]error:[/bold red] {one_line(e.format_message())}", highlight=False)
            raise typer.Exit(2) from None
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
    help="Privacy-preserving publishing of tabular microdata: anonymize a table, evaluate the release, "
    "compare techniques. 'ppdm reproduce' reruns the papers' experiments.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

ClassOpt = Annotated[str | None, typer.Option("--class", "-c", help="Class (label) column.")]
SeedOpt = Annotated[str | None, typer.Option(
    "--seed", help="Seed of the release's random draws (default: fresh OS entropy): a secret of at least 2^64 "
                   "(anyone who knows or guesses it can redo the draws and undo the release; keep it with x). "
                   "A smaller seed needs --experiment-seed.")]
ExperimentFlagOpt = Annotated[bool, typer.Option(
    "--experiment-seed", help="Accept a --seed below 2^64: this run is a reproducible experiment, not a release to "
                              "publish (such a seed can be brute-forced).")]
MeasureSeedOpt = Annotated[str | None, typer.Option(
    "--seed", help="Measurement seed: the seed of the measurement's own draws (splits, tie-breaking), not of "
                   "any release; default: drawn from OS entropy and printed, so the run can be repeated.")]
ExperimentSeedOpt = Annotated[int, typer.Option(
    "--seed", help="Fixed seed of this research run (default 0): anyone can regenerate its draws.")]
ParamOpt = Annotated[list[str] | None, typer.Option("--param", "-p", help="Technique parameter key=value (repeatable).")]
MissingOpt = Annotated[str, typer.Option("--missing", help="Incomplete rows: 'error' (default) or 'drop'.")]
MissingKeepOpt = Annotated[str, typer.Option(
    "--missing", help="Missing cells: 'error' (default: refuse), 'drop' (leave out incomplete rows) or 'keep' "
                      "(techniques and measures treat them as docs/missing_values.md says).")]
CategoricalOpt = Annotated[list[str] | None, typer.Option(
    "--categorical", help="Categorical column(s) (comma list, repeatable), read as text exactly as written: "
                          "codes keep their leading zeros.")]
EngineOpt = Annotated[str, typer.Option(
    "--engine", help="'pandas' (in memory), 'dask' (partition by partition) or 'auto' (default: dask for a folder, "
                     "a glob or a file over 1 GiB).")]
BlocksizeOpt = Annotated[str, typer.Option(
    "--blocksize", help="With dask: bytes of CSV per partition (e.g. 64MB, the default).")]
SchedulerOpt = Annotated[str | None, typer.Option(
    "--scheduler", help="Address of a Dask scheduler (tcp://host:8786): the command's partitioned work and parallel "
                        "tasks run on its workers (needs pip install 'ppdm[cluster]'; docs/scale.md).")]
DateOpt = Annotated[list[str] | None, typer.Option(
    "--date", help="Date column(s), each optionally with its strftime format: --date visit or "
                   "--date 'visit=%d/%m/%Y' (default: detected).")]
SchemaOpt = Annotated[Path | None, typer.Option(
    "--schema", help="Schema JSON file: types and roles of every column (see docs/roles_and_release.md).")]
SepOpt = Annotated[str | None, typer.Option("--sep", help="CSV field separator (default ','; e.g. ';', 'tab', '|').")]
DecimalOpt = Annotated[str | None, typer.Option(
    "--decimal", help="Decimal separator of the numbers in a CSV file: '.' or ','. Default: numbers written like "
                      "30,83 are read as numbers when --sep is ';', and refused otherwise.")]
IdOpt = Annotated[list[str] | None, typer.Option(
    "--id", help="Identifier column(s) (comma list, repeatable): never modelled, removed from a release.")]
QiOpt = Annotated[list[str] | None, typer.Option(
    "--qi", help="Quasi-identifier column(s): attributes an intruder may know and link on.")]
SensitiveOpt = Annotated[list[str] | None, typer.Option("--sensitive", help="Sensitive column(s).")]
WeightOpt = Annotated[str | None, typer.Option("--weight", help="Sampling-weight column (not an attribute).")]
OtherOpt = Annotated[list[str] | None, typer.Option(
    "--other", help="Ordinary attribute column(s): declared so, they are not screened as identifiers.")]


def _missing(value: str, *, keep: bool = False) -> MissingPolicy:
    allowed: tuple[MissingPolicy, ...] = ("error", "drop", "keep") if keep else ("error", "drop")
    if value not in allowed:
        raise PPDMError(f"--missing must be {', '.join(repr(a) for a in allowed[:-1])} or {allowed[-1]!r}, "
                        f"got {value!r}")
    return allowed[allowed.index(value)]  # the value checked above, typed as a policy


@app.command(short_help="List the techniques and their parameters.")
def methods(
    json_out: Annotated[bool, typer.Option("--json", help="Print the techniques and parameters as JSON.")] = False,
) -> None:
    """List the anonymization techniques and their parameters with defaults."""
    from ppdm.anonymize.registry import TECHNIQUES, _load_all, technique_params

    _load_all()
    if json_out:
        import json

        from ppdm.cli.common import print_json
        from ppdm.report.evaluation import json_header

        def plain(params: dict) -> dict:
            return json.loads(json.dumps(params, default=str))

        print_json({**json_header("methods"), "methods": {
            name: {"class": cls.__name__, "description": _first_line(cls.__doc__),
                   "parameters": plain(technique_params(cls)), "missing": cls.missing_policy,  # type: ignore[attr-defined]  # a registered Technique
                   "search_space": _search_space_text(cls)}
            for name, cls in sorted(TECHNIQUES.items())
        }})
        return
    console.print("[bold]ppdm techniques[/bold] (ppdm anonymize DATA --method NAME --param key=value)\n")
    for name in sorted(TECHNIQUES):
        cls = TECHNIQUES[name]
        console.print(f"[bold cyan]{name}[/bold cyan] ({cls.__name__}): {_first_line(cls.__doc__)} "
                      f"(missing cells: {cls.missing_policy})", highlight=False)  # type: ignore[attr-defined]  # a registered Technique
        params = "  ".join(f"{k}={v!r}" for k, v in technique_params(cls).items())
        console.print(f"    {params or '(no parameters)'}", highlight=False, soft_wrap=False)
        space = _search_space_text(cls)
        searched = ("; ".join(f"{k} {v}" for k, v in space.items()) or "its defaults") if isinstance(space, dict) \
            else f"not searched: {space}"
        console.print(f"    ppdm recommend tries: {searched}", highlight=False, markup=False, soft_wrap=True)


@app.command(short_help="List the measures and which direction is better.")
def measures(
    json_out: Annotated[bool, typer.Option("--json", help="Print the measures as JSON.")] = False,
) -> None:
    """List the measures 'ppdm evaluate --measures' knows, with which direction is better."""
    from ppdm.cli.tables import print_table
    from ppdm.experiments.evaluation import load_all_measures

    registry = load_all_measures()
    if json_out:
        from ppdm.cli.common import print_json
        from ppdm.report.evaluation import json_header

        # the options it reads (null: declares none, accepts any) — for this listing, not every evaluation document
        print_json({**json_header("measures"), "measures": {
            name: {**m.info(), "options": None if m.options is None else list(m.options)}
            for name, m in registry.items()}})
        return
    rows = []
    for m in registry.values():
        better = {"higher": "higher", "lower": "lower"}.get(m.direction or "", "neither")
        # the options it reads (-p NAME.option=value); "any" for a measure that declares none
        opts = "any" if m.options is None else ", ".join(m.options) or "—"
        rows.append([m.name, m.kind, better, "yes" if m.default else "", opts,
                     m.description + (f" (needs option {', '.join(m.requires)})" if m.requires else "")])
    print_table(console, "ppdm measures (ppdm evaluate --measures a,b,c | all; -p NAME.option=value)",
                ["measure", "kind", "better", "default", "options", "description"], rows)


def _search_space_text(cls: type) -> dict[str, str] | str:
    """What ``ppdm recommend`` varies for a technique (parameter → range in words), or why it
    does not search it."""
    from ppdm.anonymize.search_space import NotSearchable, search_space_of

    space = search_space_of(cls)
    if isinstance(space, NotSearchable):
        return space.reason
    return {**space.describe(), **{k: f"fixed at {v!r}" for k, v in space.fixed.items()}}


def _first_line(doc: str | None) -> str:
    return (doc or "").strip().splitlines()[0] if doc and doc.strip() else ""


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
    # OpenMP (scikit-learn's compiled estimators) lets idle threads spin waiting for the
    # slowest thread of each loop by default: on a shared or loaded machine that burns CPU time for
    # nothing (about a second of ``ppdm evaluate`` on adult). Waiting passively costs a few
    # microseconds per loop. Set before any OpenMP runtime loads (the commands import Numba
    # and scikit-learn inside their functions); a value the user set wins.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    mark_own_process()  # the collector's settings of the command line's own process (ppdm.cli.common)
    try:
        app()
    finally:
        # the command is done and its files are written and closed: what it made lives until the
        # interpreter ends, so the shutdown's last collection need not walk it (about 0.3 s)
        settle_imports()


if __name__ == "__main__":  # pragma: no cover
    main()
