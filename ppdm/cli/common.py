"""Shared pieces of the command-line interface: loading inputs, printing, errors.

Nothing heavy is imported at module level (pandas, NumPy, rich's console are loaded on
first use), so ``ppdm --help`` stays fast.
"""

from __future__ import annotations

import gc
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from ppdm.errors import PPDMError

if TYPE_CHECKING:
    import pandas as pd
    from rich.console import Console

    from ppdm.data.roles import Roles
    from ppdm.data.schema import MissingPolicy, Schema

BUILTIN = "builtin:"

#: whether this process is the command line itself (:func:`ppdm.cli.app.main`), which ends with its
#: command, rather than a program that calls the commands (Typer's test runner, a notebook)
_own_process = False


def mark_own_process() -> None:
    """Note that this process is the command line itself (see :func:`settle_imports`), and set its
    collector's thresholds.

    Importing pandas, scikit-learn and Numba makes about a million long-lived objects, and
    Python's default thresholds (700, 10, 10) walk them in full collections before a command
    starts its work (about 0.2 s of a small ``anonymize``). Collecting the youngest objects every
    10 000 allocations instead of 700 keeps those walks out of the start; cyclic garbage still
    goes within a few megabytes. A program that calls the commands keeps Python's defaults."""
    global _own_process
    _own_process = True
    gc.set_threshold(10_000, 10, 10)


def settle_imports() -> None:
    """Once a command has imported what it runs on (pandas, scikit-learn, Numba, the measures):
    in a process that is the command line itself, move every object made so far to the
    collector's permanent generation (``gc.freeze``).

    Those objects (modules, classes, functions, docstrings parsed by SciPy) live until the
    process ends, yet every full collection walks them again, and so does the interpreter's
    shutdown: on ``ppdm evaluate`` of adult that walking cost about half a CPU-second. Nothing
    computed changes. A program that only calls the commands keeps its collector as it was."""
    if _own_process:
        gc.freeze()


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
    sep: str | None = None,
    roles: Roles | None = None,
    detect: bool = False,
    categorical: list[str] | None = None,
    dates: list[str] | None = None,
    decimal: str | None = None,
) -> tuple[pd.DataFrame, Schema, int]:
    """Read ``spec`` (a path or ``builtin:NAME``) and its schema with the user's roles.

    Returns ``(table, schema, n_dropped)``; incomplete rows are handled by ``missing``.
    The types of a schema file, or of ``--categorical``/``--date`` (``categorical``,
    ``dates``), apply as the file is read; ``decimal`` is the decimal separator
    (``--decimal``). A schema file that leaves out columns of the table is refused; with
    ``detect``, so are undeclared columns that look like direct identifiers (for releases).
    """
    from ppdm.data.io import read_table
    from ppdm.data.roles import resolve_schema, split_names
    from ppdm.data.schema import Schema

    cats = split_names(categorical)
    date_formats = parse_date_options(dates)
    if (cats or date_formats) and (schema_path is not None or spec.startswith(BUILTIN)):
        raise PPDMError("give column types either in the schema (--schema, or a shipped dataset's) or with "
                        "--categorical/--date, not both")

    if spec.startswith(BUILTIN):
        from ppdm.data.datasets import load

        df, schema = load(spec[len(BUILTIN):])
        if class_column is not None and class_column != schema.class_column:
            schema = schema.with_class(class_column) if class_column in df.columns else _no_class(class_column, df)
        schema = resolve_schema(df, schema=schema, roles=roles, detect=detect, what="the dataset's schema")
    else:
        loaded = Schema.load(schema_path) if schema_path is not None else None
        df = read_table(spec, sep=sep, schema=loaded, categorical=cats, dates=date_formats, decimal=decimal)
        if loaded is not None:
            schema = resolve_schema(df, schema=loaded, class_column=class_column, roles=roles, detect=detect,
                                    what=f"schema file {str(schema_path)!r}")
        else:
            schema = resolve_schema(df, class_column=class_column, roles=roles, detect=detect)
    df, dropped = schema.validate(df, missing=missing)
    if dropped:
        err_console.print(f"[yellow]dropped {dropped} incomplete row(s) from {spec}[/yellow]")
        df = df.reset_index(drop=True)
    return df, schema, dropped


def load_original(
    spec: str,
    class_column: str | None,
    *,
    provenance: dict[str, Any] | None = None,
    **read: Any,
) -> tuple[pd.DataFrame, Schema, list[str]]:
    """The original table x as ``ppdm evaluate`` and ``ppdm compare`` measure it.

    Read with its types and the user's roles (``read``: the keyword options of
    :func:`load_input`, which ``--schema``, ``--categorical``, ``--date``, ``--id``, ``--qi``,
    ``--sensitive``, ``--weight``, ``--other`` and ``--missing`` set; taken as they are, so the
    two readings cannot drift apart), then without its identifier columns, declared or named
    as removed by a release's ``provenance``. Returns ``(x, schema, identifiers)``.
    """
    from ppdm.experiments.evaluation import without_identifiers

    x, schema, _ = load_input(spec, class_column, **read)
    return without_identifiers(x, schema, (provenance or {}).get("removed_identifiers") or [])


def stage_progress() -> Any:
    """A callback ``(stage, done, total)`` for partitioned work (:mod:`ppdm.data.partitions`,
    :func:`ppdm.experiments.out_of_core.release_dataset`) that reports each stage's partitions
    to :mod:`ppdm.progress`, so a command's progress bar shows them with the time left."""
    from ppdm import progress

    labels = {"scan": "scanning", "sample": "sampling", "release": "releasing", "mix": "mixing records across parts",
              "check": "checking"}
    open_: dict[str, Any] = {}

    def report(stage: str, done: int, total: int) -> None:
        task = open_.get(stage)
        if task is None:
            what = labels.get(stage, stage.removeprefix("ppdm-").replace("-", " "))
            task = open_[stage] = progress.steps(total, f"{what}: partitions")
        if done > task.done:
            task(done - task.done)
        if done >= total:
            task.close()
            del open_[stage]

    return report


def use_scheduler(address: str | None) -> Any:
    """Connect this command to the Dask scheduler at ``address`` (``--scheduler``) and return
    the ``distributed.Client``, or ``None`` without an address. The client becomes the default
    one, so every partitioned pass (:func:`ppdm.data.partitions.run_partitions`) and every Dask
    computation of the command runs on the cluster's workers; it is closed when the command
    ends. The same seed gives the same release and measures as the local scheduler (each
    partition draws from a generator seeded by the release's seed and its number)."""
    if address is None:
        return None
    if not address.strip():
        raise PPDMError("--scheduler needs an address, e.g. tcp://host:8786")
    try:
        from distributed import Client
    except ImportError:
        raise PPDMError("--scheduler needs the 'distributed' package (pip install 'ppdm[cluster]')") from None
    import copy

    import dask

    # a default client points dask's configuration at it; closing the client does not always point it
    # back, and a later computation in the same process would then ask for a scheduler that is gone
    saved = copy.deepcopy(dask.config.config)
    try:
        client = Client(address, set_as_default=True)
    except (OSError, TimeoutError) as e:
        raise PPDMError(f"cannot reach the Dask scheduler {address!r}: {one_line(e)}") from None

    def close() -> None:
        try:
            client.close()
        finally:
            dask.config.config.clear()
            dask.config.config.update(saved)

    import click

    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.call_on_close(close)
    else:  # called outside a command (a library user): closed when the interpreter exits
        import atexit

        atexit.register(close)
    return client


def parse_date_options(values: list[str] | None) -> dict[str, str | None]:
    """``--date`` values (``col`` or ``col=FORMAT``, comma lists allowed) as ``{col: format}``."""
    out: dict[str, str | None] = {}
    for v in values or []:
        for part in ([v] if "=" in v and "%" in v else str(v).split(",")):
            part = part.strip()
            if not part:
                continue
            name, _, fmt = part.partition("=")
            name, fmt = name.strip(), fmt.strip()
            if fmt and "%" not in fmt:
                raise PPDMError(f"--date {part!r}: the format must be a strftime format such as '%Y-%m-%d'")
            out[name] = fmt or None
    return out


def roles_from_options(
    identifiers: list[str] | None = None,
    quasi_identifiers: list[str] | None = None,
    sensitive: list[str] | None = None,
    weight: str | None = None,
    other: list[str] | None = None,
) -> Roles:
    """The roles set by ``--id``, ``--qi``, ``--sensitive``, ``--weight`` and ``--other``."""
    from ppdm.data.roles import Roles

    return Roles.of(identifiers, quasi_identifiers, sensitive, weight, other)


def parse_seed(text: str | None, option: str = "--seed") -> int | None:
    """``--seed`` as a non-negative whole number, or ``None`` when not given."""
    if text is None:
        return None
    t = text.strip()
    if not t.isdigit():
        raise PPDMError(f"{option} must be a non-negative whole number, got {text!r}")
    return int(t)


#: the smallest seed a release accepts without --experiment-seed: 2^64 seeds cannot be tried one by one
RELEASE_SEED_MIN = 2**64
WEAK_SEED_MESSAGE = ("a seed below 2^64 can be brute-forced and undoes the release; give a 64-bit secret seed, or "
                     "--experiment-seed for a reproducible experiment")


def release_seed(text: str | None, experiment: bool) -> int | None:
    """The seed of a release (``--seed``), or ``None`` for OS entropy.

    Whoever finds a release's seed replays its draws and undoes it, and a seed below 2^64 can
    be found by trying them all against the release (the draws it predicts either match or
    not). Such a seed is refused unless ``experiment`` (``--experiment-seed``) marks the run as
    a reproducible experiment rather than a release to publish.
    """
    seed = parse_seed(text)
    if seed is not None and seed < RELEASE_SEED_MIN and not experiment:
        raise PPDMError(WEAK_SEED_MESSAGE)
    return seed


def measurement_seed(text: str | None) -> tuple[int, bool]:
    """The seed of a measurement and whether it was drawn: ``--seed`` when given, else drawn
    from the operating system's entropy, to be reported with :func:`report_drawn_seed` so the
    measurement can be repeated (a measurement is not a release: its seed protects nobody
    and is worth keeping)."""
    seed = parse_seed(text)
    if seed is not None:
        return seed, False
    import secrets

    return secrets.randbits(32), True


def report_drawn_seed(seed: int, drawn: bool) -> None:
    """After a successful measurement: say which seed was drawn, so the run can be repeated."""
    if drawn:
        err_console.print(f"seed {seed} drawn from OS entropy (repeat this run with --seed {seed})",
                          highlight=False)


def research_seed_note(seed: int) -> None:
    """Say that a research run uses a fixed, public seed (it is not a release)."""
    err_console.print(f"fixed seed {seed}: a research run that anyone can repeat draw for draw "
                      "(not a way to make a release)", highlight=False)


def _no_class(name: str, df: pd.DataFrame) -> Schema:
    raise PPDMError(f"class column {name!r} is not in the table (columns: {', '.join(map(str, df.columns))})")


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, default=str) + "\n")


def cli_wording(text: str) -> str:
    """Library messages name a keyword argument and its option, ``class_column=... (CLI:
    --class)``; on the command line only the option is shown (``--class``)."""
    import re

    return re.sub(r"\S+ \(CLI: ([^)]+)\)", r"\1", text)


def one_line(message: object) -> str:
    """``message`` (text or an exception) on one line in the command line's words, rich
    markup characters escaped."""
    from rich.markup import escape

    text = cli_wording(" ".join(str(message).split()))
    return escape(text or type(message).__name__)


def fail(message: str) -> None:
    """Print one error line and exit with code 2 (bad input)."""
    err_console.print(f"[bold red]error:[/bold red] {one_line(message)}", highlight=False)
    raise typer.Exit(2)
