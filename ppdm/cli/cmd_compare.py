"""``ppdm compare`` (cross-validated comparison of techniques) and ``ppdm report`` (HTML)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

import typer

from ppdm.cli.app import (
    ClassOpt,
    MeasureSeedOpt,
    MissingKeepOpt,
    SchedulerOpt,
    _missing,
    app,
)
from ppdm.cli.common import (
    BUILTIN,
    console,
    err_console,
    fail,
    measurement_seed,
    report_drawn_seed,
    use_scheduler,
)
from ppdm.cli.options import TableOptions, table_options
from ppdm.errors import PPDMError


def _print_summary(result, title: str) -> None:
    """The mean ± sd table; labels are never cut (the table wraps or turns vertical)."""
    from ppdm.cli.tables import print_table
    from ppdm.experiments.compare import best_releases, measure_header, not_applicable
    from ppdm.report.evaluation import fmt_number

    s = result.summary()
    best = best_releases(result)
    na = not_applicable(result.meta)
    rows, dim = [], []
    for i, lab in enumerate(result.labels):
        cells = [lab]
        for m in result.measures:
            if (lab, m) in na:
                cells.append(na[(lab, m)])
                continue
            row = s[(s["label"] == lab) & (s["measure"] == m)].iloc[0]
            sd = float(row["std"])
            text = fmt_number(row["mean"]) if not math.isfinite(sd) else f"{fmt_number(row['mean'])} ± {fmt_number(sd, 3)}"
            cells.append(text + (" (best)" if best[m].label == lab else ""))
        rows.append(cells)
        if lab == "original":
            dim.append(i)
    headers = [measure_header(m, result.meta) for m in result.measures]
    print_table(console, title, ["technique", *headers], rows, right=headers, dim_rows=dim)


def _print_verdicts(result) -> None:
    """One row per technique setting: its risk and utility verdicts on the means (as the report)."""
    from ppdm.cli.tables import print_table
    from ppdm.report.summary import TechniqueVerdict, comparison_verdicts, status_class

    colour = {"good": "green", "bad": "red"}
    verdicts = comparison_verdicts(result)
    rows = [[v.label, f"{v.risk['status']}: {TechniqueVerdict.short(v.risk)}".rstrip(": "),
             f"{v.utility['status']}: {TechniqueVerdict.short(v.utility)}".rstrip(": ")] for v in verdicts]
    print_table(console, "verdicts on the means (thresholds of docs/measures.md)", ["technique", "risk", "utility"],
                rows, compact=True, dim_rows=[i for i, v in enumerate(verdicts) if v.baseline],
                styles={1: [colour.get(status_class(v.risk["status"]), "") for v in verdicts],
                        2: [colour.get(status_class(v.utility["status"]), "") for v in verdicts]})


@app.command("compare", short_help="Compare techniques and sweeps by cross-validation.")
@table_options
def compare_cmd(
    data: Annotated[str, typer.Argument(help="Input table (CSV/Parquet) or builtin:NAME.")],
    class_column: ClassOpt = None,
    technique: Annotated[list[str] | None, typer.Option(
        "--technique", "-t", help="NAME or NAME:key=value,key=value (repeatable).")] = None,
    sweep: Annotated[list[str] | None, typer.Option(
        "--sweep", help="NAME:key=v1,v2,v3 — one technique per value; several swept keys give a grid "
                        "(repeatable).")] = None,
    measures: Annotated[str | None, typer.Option(
        "--measures", help="Comma list of measures, or 'all' (default: the default set).")] = None,
    param: Annotated[list[str] | None, typer.Option(
        "--param", "-p", help="Measure option key=value (repeatable), e.g. average=macro.")] = None,
    cv: Annotated[int, typer.Option("--cv", help="Number of cross-validation folds.")] = 10,
    repeats: Annotated[int, typer.Option("--repeats", help="Anonymizations per fold and technique.")] = 1,
    seed: MeasureSeedOpt = None,
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", help="Folder for results.csv, summary.csv, correlations.csv, meta.json (all or nothing).")] = None,
    report: Annotated[bool, typer.Option("--report", help="Also write report.html into --out.")] = False,
    title: Annotated[str | None, typer.Option("--title", help="Title of the HTML report.")] = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", help="Parallel workers (results do not depend on it).")] = 1,
    scheduler: SchedulerOpt = None,
    missing: MissingKeepOpt = "error",
    table: TableOptions = TableOptions(),
) -> None:
    """Compare techniques and parameter sweeps by cross-validation on every measure.

    Prints mean ± sd per technique and measure, marking a release "(best)" only when it
    changes the data and beats every other release beyond the 95 % confidence interval of
    the paired fold differences. With --out and --report the HTML report adds the
    risk–utility map and the effective parameters of every technique.
    """
    from ppdm.cli.progress import progress_bar
    from ppdm.experiments.compare import compare, parse_technique
    from ppdm.utils import parse_params

    try:
        seed_value, drawn = measurement_seed(seed)
        options = parse_params(param)
        specs = []
        for t in technique or []:
            specs.extend(parse_technique(t))
        for s in sweep or []:
            specs.extend(parse_technique(s, allow_sweep=True))
        if not specs:
            raise PPDMError("name at least one --technique or --sweep")
        if report and out is None:
            raise PPDMError("--report needs --out DIR to write report.html into")
        if out is not None and out.exists() and not out.is_dir():
            raise PPDMError(f"--out {str(out)!r} exists and is not a folder")
        if jobs == 0 or jobs < -1:
            raise PPDMError(f"--jobs must be a positive number or -1 (all cores), got {jobs}")
        # on a cluster the folds' tasks go to its workers (joblib's Dask backend); results do not change
        client = use_scheduler(scheduler)
        provenance = None
        if not data.startswith(BUILTIN):
            from ppdm.data.provenance import read_provenance

            provenance = read_provenance(data)
        # the table as evaluate reads it: types, roles, missing cells, identifiers left out;
        # undeclared columns that look like identifiers are refused, as by anonymize
        miss = _missing(missing, keep=True)
        x, sch, ids = table.load_original(data, class_column, missing=miss, provenance=provenance, detect=True)
        name = data[len(BUILTIN):] if data.startswith(BUILTIN) else Path(data).name
        with progress_bar("comparing") as task:

            def progress(done: int, total: int, what: str) -> None:
                if task.total != total:
                    task.reset(total)
                task(1, description=what)

            with _parallel_backend(client):
                result = compare(x, sch, specs, measures, cv=cv, repeats=repeats, random_state=seed_value,
                                 n_jobs=-1 if client is not None and jobs == 1 else jobs, progress=progress,
                                 dataset_name=name, measure_options=options, missing=miss)
        if provenance is not None:
            result.meta["provenance"] = provenance
        result.meta["removed_identifiers"] = [*ids, *result.meta.get("removed_identifiers", [])]
        extra = {}
        if report:
            from ppdm.report.html import render_html

            extra["report.html"] = render_html(result, title=title or f"ppdm comparison on {name}")
        if out is not None:
            result.save(out, extra=extra)
    except PPDMError as e:
        fail(str(e))
        return
    if provenance is not None:
        from ppdm.data.provenance import describe

        err_console.print(f"provenance of {name}: {describe(provenance)}", highlight=False, markup=False,
                          soft_wrap=True)
    report_drawn_seed(seed_value, drawn)
    for note in result.meta.get("notes", []):
        err_console.print(f"[yellow]note:[/yellow] {note}", highlight=False)
    _print_verdicts(result)
    _print_summary(result, f"{name}: mean ± sd over {cv} folds × {repeats} repeat(s)")
    if out is not None:
        files = ["results.csv", "summary.csv", "correlations.csv", "meta.json", *extra]
        console.print(f"wrote {', '.join(files)} to {out}")


@app.command("report", short_help="Render the HTML report of a saved comparison.")
def report_cmd(
    results_dir: Annotated[Path, typer.Argument(help="Folder written by 'ppdm compare --out'.")],
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", help="HTML file to write (default: RESULTS_DIR/report.html).")] = None,
    title: Annotated[str | None, typer.Option("--title", help="Title of the report.")] = None,
) -> None:
    """Render the HTML report of a saved comparison."""
    from ppdm.experiments.compare import ComparisonResult
    from ppdm.report.html import render_html, write_html

    try:
        result = ComparisonResult.load(results_dir)
        name = result.meta.get("dataset", {}).get("name")
        html = render_html(result, title=title or (f"ppdm comparison on {name}" if name else "ppdm comparison"))
        target = out if out is not None else results_dir / "report.html"
        write_html(html, target)
    except PPDMError as e:
        fail(str(e))
        return
    console.print(f"wrote {target}")


def _parallel_backend(client: object) -> Any:
    """joblib's Dask backend while ``client`` (``--scheduler``) is connected, else nothing."""
    import contextlib

    if client is None:
        return contextlib.nullcontext()
    from joblib import parallel_config

    return parallel_config(backend="dask")
