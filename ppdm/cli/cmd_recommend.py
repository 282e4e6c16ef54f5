"""``ppdm recommend``: the release that meets a risk policy at the least loss of utility.

A thin layer over :func:`ppdm.experiments.recommend.recommend`: it reads the table and the
policy (a file, or flags), checks every output before any work, shows the search's progress,
prints the front and the answer, and writes the recommended release like ``ppdm anonymize``.
Exit code 3 when no release meets the policy (nothing is written but the study and the
report, which say why).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from ppdm.cli.app import (
    ClassOpt,
    ExperimentFlagOpt,
    MissingKeepOpt,
    _missing,
    app,
)
from ppdm.cli.common import BUILTIN, console, err_console, release_seed
from ppdm.cli.options import TableOptions, table_options
from ppdm.errors import PPDMError

#: exit code when the search finds no release that meets the policy
EXIT_UNMET = 3


def _pairs(values: list[str] | None, option: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for v in values or []:
        for part in str(v).split(","):
            part = part.strip()
            if not part:
                continue
            name, sep, value = part.partition("=")
            if not sep or not name.strip() or not value.strip():
                raise PPDMError(f"{option} {part!r}: expected NAME=VALUE")
            out[name.strip()] = value.strip()
    return out


def policy_from_flags(at_most: list[str] | None, at_least: list[str] | None, options: list[str] | None,
                      epsilon: str | None, weights: list[str] | None, priority: str | None,
                      techniques: str | None, max_loss: list[str] | None = None) -> dict[str, Any]:
    """The policy the flags describe, as the content of a policy file."""
    from ppdm.utils import parse_value

    risk: dict[str, Any] = {}
    for key, flag, values in (("at_most", "--max", at_most), ("at_least", "--min", at_least)):
        for name, value in _pairs(values, flag).items():
            if name in risk:
                raise PPDMError(f"{flag} {name}: the measure is held to two thresholds; keep one")
            risk[name] = {key: parse_value(value)}
    for key, value in _pairs(options, "--option").items():
        measure, dot, opt = key.partition(".")
        if not dot or not opt:
            raise PPDMError(f"--option {key}={value}: expected MEASURE.OPTION=VALUE, e.g. k_anonymity.k=5")
        if measure not in risk:
            raise PPDMError(f"--option {key}: {measure!r} has no --max/--min line to take the option")
        risk[measure].setdefault("options", {})[opt] = parse_value(value)
    policy: dict[str, Any] = {"risk": risk}
    if epsilon is not None:
        policy["epsilon"] = parse_value(epsilon)
    if weights and priority:
        raise PPDMError("give the utility either as --utility weights or as --priority, not both")
    if weights:
        policy["utility"] = {"weights": {k: parse_value(v) for k, v in _pairs(weights, "--utility").items()}}
    elif priority:
        policy["utility"] = {"priority": [p.strip() for p in priority.split(",") if p.strip()]}
    if max_loss:
        if "utility" not in policy:
            raise PPDMError("--max-loss caps a utility measure of --utility or --priority; give those too")
        policy["utility"]["at_most"] = {k: parse_value(v) for k, v in _pairs(max_loss, "--max-loss").items()}
    if techniques:
        policy["techniques"] = [t.strip() for t in techniques.split(",") if t.strip()]
    return policy


@app.command(short_help="Find the release that meets a risk policy at the least loss of utility.")
@table_options
def recommend(
    data: Annotated[str, typer.Argument(help="Input table (CSV/Parquet) or builtin:NAME.")],
    out: Annotated[Path, typer.Option(
        "--out", "-o", help="The recommended release (.csv or .parquet), written with <stem>.provenance.json "
                            "and, unless --refit, the control split <stem>.control.csv.")],
    policy: Annotated[Path | None, typer.Option(
        "--policy", help="Policy file (YAML or JSON, docs/policy.schema.json). Or give the policy as flags.")] = None,
    at_most: Annotated[list[str] | None, typer.Option(
        "--max", help="Risk line NAME=VALUE: the measure must be at most VALUE, interval included (repeatable; "
                      "'attacks' stands for every attack).")] = None,
    at_least: Annotated[list[str] | None, typer.Option(
        "--min", help="Risk line NAME=VALUE for a measure better when higher (e.g. l_diversity=2).")] = None,
    option: Annotated[list[str] | None, typer.Option(
        "--option", help="Option of a risk line's measure, MEASURE.OPTION=VALUE (e.g. k_anonymity.k=5).")] = None,
    epsilon: Annotated[str | None, typer.Option(
        "--epsilon", help="A differentially private release may claim at most this ε, the total over the whole "
                          "search (every trial, its scores and the release).")] = None,
    score_epsilon: Annotated[float, typer.Option(
        "--score-epsilon", help="The ε each differentially private trial's noisy utility scores spend (counted in "
                                "the total; default 0.1).")] = 0.1,
    utility: Annotated[list[str] | None, typer.Option(
        "--utility", help="Utility measure and weight NAME=WEIGHT (repeatable, e.g. auc=1,rule_accuracy=1).")] = None,
    priority: Annotated[str | None, typer.Option(
        "--priority", help="Utility measures in priority order (comma list), instead of weights.")] = None,
    max_loss: Annotated[list[str] | None, typer.Option(
        "--max-loss", help="Utility line NAME=VALUE: no release may lose more of that utility measure (repeatable, "
                           "e.g. auc=0.02).")] = None,
    techniques: Annotated[str | None, typer.Option(
        "--techniques", help="Techniques allowed (comma list; default: every technique that fits the table).")] = None,
    class_column: ClassOpt = None,
    table: TableOptions = TableOptions(),
    missing: MissingKeepOpt = "error",
    study: Annotated[Path | None, typer.Option(
        "--study", help="Study file (SQLite; default <out stem>.study.db). Private: it holds the seed of the "
                        "hold-out split.")] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Continue the search stored in the study file.")] = False,
    budget: Annotated[str | None, typer.Option(
        "--budget", help="Wall time of the whole command, e.g. 90s, 10m, 1h30m.")] = None,
    trials: Annotated[int | None, typer.Option(
        "--trials", help="Trials the study should hold in the end (default 100 when no --budget is given).")] = None,
    jobs: Annotated[int, typer.Option(
        "--jobs", "-j", help="Trials run at once (worker processes; -1: one per core).")] = 1,
    scheduler: Annotated[str | None, typer.Option(
        "--scheduler", help="Address of a Dask scheduler (tcp://host:8786) to run the trials on.")] = None,
    holdout: Annotated[float, typer.Option(
        "--holdout", help="Share of the records held out as the control split (default 0.5).")] = 0.5,
    refit: Annotated[bool, typer.Option(
        "--refit", help="Make the recommended release from the whole table (its risk is then that measured on "
                        "the training split's release; no control split is written).")] = False,
    seed: Annotated[str | None, typer.Option(
        "--seed", help="Seed of the split, the search and the release (default: OS entropy): a secret of at least "
                       "2^64 (anyone who knows or guesses it can redo the release's draws); a smaller seed needs "
                       "--experiment-seed.")] = None,
    experiment_seed: ExperimentFlagOpt = False,
    report: Annotated[Path | None, typer.Option("--report", help="Also write the HTML report.")] = None,
    json_out: Annotated[bool, typer.Option(
        "--json", help="Print one JSON document (docs/ppdm.schema.json) instead of tables.")] = False,
) -> None:
    """Search techniques × parameters for the release that meets a risk policy at the least loss of utility.

    Every trial makes a release from the training split and is measured against the
    held-out control split; a policy line is met only when the whole confidence interval is
    within it. Writes the recommended release like 'ppdm anonymize' (exit 0), or writes no
    release and exits with code 3 when no trial meets the policy.
    """
    import time
    import warnings

    started = time.perf_counter()
    from ppdm.data.io import check_output_path, check_output_table
    from ppdm.data.provenance import check_sidecars_free, provenance_path
    from ppdm.experiments.policy import load_policy, parse_policy
    from ppdm.experiments.recommend import RecommendOptions, parse_duration
    from ppdm.experiments.recommend import recommend as run
    from ppdm.experiments.release import control_path

    random_state = release_seed(seed, experiment_seed)
    flags = any([at_most, at_least, option, epsilon is not None, utility, priority, techniques, max_loss])
    if policy is not None and flags:
        raise PPDMError("give the policy either as a file (--policy) or as flags (--max, --utility, ...), not both")
    if policy is None and not flags:
        raise PPDMError("give a policy: --policy FILE, or flags such as --max record_linkage=0.05 --utility auc=1")
    pol = load_policy(policy) if policy is not None else parse_policy(
        policy_from_flags(at_most, at_least, option, epsilon, utility, priority, techniques, max_loss),
        where="the flags")
    budget_s = parse_duration(budget, "--budget") if budget is not None else None
    if trials is not None and trials < 1:
        raise PPDMError(f"--trials must be at least 1, got {trials}")
    if jobs == 0 or jobs < -1:
        raise PPDMError(f"--jobs must be a positive number or -1 (one per core), got {jobs}")
    if not 0.0 < holdout < 1.0:
        raise PPDMError(f"--holdout must lie strictly between 0 and 1, got {holdout!r}")
    src = None if data.startswith(BUILTIN) else Path(data)
    study_path = study if study is not None else _study_path(out)
    inputs = (src, table.schema, policy)
    # every output is checked before any work: format, folder, and never one of the inputs
    check_output_table(out, inputs=inputs)
    check_output_path(provenance_path(out), inputs=inputs)
    check_sidecars_free(out)
    if not refit:
        check_output_path(control_path(out), inputs=inputs)
    check_output_path(study_path, inputs=inputs)
    if report is not None:
        check_output_path(report, inputs=(*inputs, out, study_path))
    if study_path.exists() and not resume:
        raise PPDMError(f"the study file {str(study_path)!r} exists; continue its search with --resume, or name "
                        "another file with --study")
    if resume and not study_path.exists():
        raise PPDMError(f"--resume: the study file {str(study_path)!r} does not exist")
    x, sch, dropped = table.load(data, class_column, missing=_missing(missing, keep=True), detect=True)
    executor = _dask_executor(scheduler) if scheduler else None
    from ppdm.cli.cmd_anonymize import _input_sha256

    info = {"source": data, "sha256": _input_sha256(data), "rows": len(x) + dropped, "columns": x.shape[1],
            "missing": missing, "rows_dropped": dropped}
    from ppdm.cli.progress import progress_of_library
    from ppdm.experiments.recommend.study import discard_if_empty, make_private

    options = RecommendOptions(schema=sch, holdout=holdout, refit=refit, study=study_path, resume=resume,
                               budget=budget_s, n_trials=trials, n_jobs=jobs, executor=executor,
                               random_state=random_state, input_info=info, started=started,
                               score_epsilon=score_epsilon)
    new_study = not study_path.exists()
    try:
        if new_study:
            make_private(study_path)  # the owner's only from its first byte: it holds the split's seed
        with progress_of_library(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = run(x, pol, options)
    except BaseException:
        if new_study:  # a refused or failed run leaves no study that blocks the next one (unless trials ran)
            discard_if_empty(study_path)
        raise
    make_private(study_path)
    written: list[Path] = []
    if result.release is not None:
        written = result.save(out)
    from ppdm.report.recommend import recommendation_document, write_recommendation_html

    inputs_doc = {"source": data, "rows": len(x), "dropped": dropped, "class_column": sch.class_column,
                  "quasi_identifiers": list(sch.quasi_identifiers), "policy": str(policy) if policy else None,
                  "study": str(study_path)}
    doc = recommendation_document(result, inputs=inputs_doc, written=[str(p) for p in written])
    if report is not None:
        name = data[len(BUILTIN):] if data.startswith(BUILTIN) else Path(data).name
        write_recommendation_html(doc, report, title=f"ppdm recommendation for {name}")
    if json_out:
        from ppdm.cli.common import print_json

        print_json(doc)
    else:
        _print(doc, result, random_state)
        if report is not None:
            console.print(f"wrote the report {report}", highlight=False, markup=False, soft_wrap=True)
    if result.release is None:
        raise typer.Exit(EXIT_UNMET)


def _study_path(out: Path) -> Path:
    name = out.name
    for suffix in (".csv.gz", ".csv", ".parquet", ".pq"):
        if name.lower().endswith(suffix):
            return out.with_name(name[: -len(suffix)] + ".study.db")
    return out.with_name(f"{out.stem}.study.db")


def _dask_executor(address: str) -> Any:
    from ppdm.cli.common import use_scheduler

    return use_scheduler(address).get_executor()


def outcome_summary(study: dict[str, Any]) -> str:
    """``"3 met the policy, 5 missed it, 2 failed"``: the one count of what became of the trials
    (``study.outcomes``; :meth:`ppdm.experiments.recommend.RecommendResult.outcomes`)."""
    o = study.get("outcomes") or {}
    parts = [f"{o.get('met', 0)} met the policy", f"{o.get('missed', 0)} missed it", f"{o.get('failed', 0)} failed"]
    if o.get("stopped"):
        parts.append(f"{o['stopped']} stopped unfinished")
    if o.get("repeat"):
        parts.append(f"{o['repeat']} repeated a setting already tried")
    return ", ".join(parts)


def failure_lines(trials: list[dict[str, Any]], most: int = 5) -> list[str]:
    """Why trials failed, one line per distinct reason with how many trials and which: every
    failed trial is accounted for (the last line counts the reasons not shown)."""
    by: dict[str, list[int]] = {}
    for t in trials:
        if t.get("outcome") in ("failed", "stopped"):
            by.setdefault(str(t.get("why") or t.get("error") or "no reason recorded"), []).append(int(t["number"]))
    out = []
    for why, numbers in sorted(by.items(), key=lambda kv: (-len(kv[1]), kv[1][0]))[:most]:
        shown = ", ".join(map(str, numbers[:5])) + (", …" if len(numbers) > 5 else "")
        out.append(f"{len(numbers)} trial(s) ({shown}): {why}")
    rest = sorted(by.items(), key=lambda kv: (-len(kv[1]), kv[1][0]))[most:]
    if rest:
        out.append(f"{sum(len(n) for _, n in rest)} more trial(s) failed for {len(rest)} other reason(s): see --json "
                   "or the report")
    return out


def _print(doc: dict[str, Any], result: Any, random_state: int | None) -> None:
    """The search, the front and the answer, as the terminal shows them."""
    from rich.markup import escape

    from ppdm.cli.tables import print_table
    from ppdm.report.evaluation import fmt_number
    from ppdm.report.recommend import line_text

    st = doc["study"]
    console.print(f"search: {st['trials']} trial(s) ({st['new_trials']} in this run): {outcome_summary(st)}; stopped "
                  f"by the {st['stopped_by']} after {st.get('seconds', 0):.0f} s; study {st.get('storage')} (private: "
                  "it holds the seed of the split; keep it with x)", highlight=False, markup=False, soft_wrap=True)
    for text in failure_lines(doc["trials"]):
        err_console.print(f"[yellow]failed:[/yellow] {escape(text)}", highlight=False, soft_wrap=True)
    aside = st.get("set_aside") or {}
    if aside and (st.get("outcomes") or {}).get("met"):
        console.print(f"set aside once other techniques met the policy: {', '.join(sorted(aside))}",
                      highlight=False, markup=False, soft_wrap=True)
    for note in doc.get("notes") or []:
        err_console.print(f"[yellow]note:[/yellow] {escape(note)}", highlight=False, soft_wrap=True)
    front = [t for t in doc["trials"] if t["number"] in set(doc["front"])]
    if front:
        front.sort(key=lambda t: (t["risk"], t["utility_loss"]))
        names = [t.measure for t in result.policy.utility]
        rows = [[str(t["number"]), t["label"] + (" (recommended)" if t["number"] == doc["chosen"] else ""),
                 fmt_number(t["risk"]), fmt_number(t["utility_loss"]), *[fmt_number(t["utility"].get(n)) for n in names]]
                for t in front]
        print_table(console, "the front: releases that met the policy, none beaten on both risk and utility loss",
                    ["trial", "release", "risk", "utility loss", *names], rows,
                    right=["trial", "risk", "utility loss", *names])
    for fam in doc["families"]:
        if fam["met"] == 0:
            console.print(f"{fam['technique']}: {fam['verdict']}", highlight=False, markup=False, soft_wrap=True)
    if doc["outcome"] != "met":
        for s in doc["why"]:
            err_console.print(f"[bold red]{escape(s)}[/bold red]", highlight=False, soft_wrap=True)
        err_console.print("no release written (exit code 3)", highlight=False)
        return
    for s in doc["why"][:-1] if not result.refit else doc["why"]:
        console.print(s, highlight=False, markup=False, soft_wrap=True)
    rel = result.release
    from rich.markup import escape as esc

    for line in rel.warnings:
        err_console.print(f"[yellow]warning:[/yellow] {esc(line)}", highlight=False, soft_wrap=True)
    if not result.refit:
        console.print("the recommended release, measured against the control split:", highlight=False)
        for ln in (doc["release"]["measured"] or {}).get("lines", []):
            console.print(f"  {line_text(ln)}", highlight=False, markup=False, soft_wrap=True)
    if result.accounting is not None and (doc["release"].get("epsilon") is not None):
        from ppdm.experiments.recommend.accounting import summary

        console.print(summary(result.accounting), highlight=False, markup=False, soft_wrap=True)
    console.print("release check:", highlight=False)
    for line in rel.check.summary_lines():
        console.print(f"  {line}", highlight=False, markup=False, soft_wrap=True)
    if random_state is not None:
        console.print("seeded: anyone who knows the seed can redo the random draws and undo much of the release; "
                      "keep it secret, with x (it is not stored)", highlight=False, soft_wrap=True)
    files = doc["release"]["files"]
    console.print(f"wrote {files[0]} ({len(rel.data)} rows × {rel.data.shape[1]} columns) with "
                  f"{result.chosen.label}, and {', '.join(Path(f).name for f in files[1:])}",
                  highlight=False, markup=False, soft_wrap=True)
    if result.control is not None:
        console.print(f"the control split ({len(result.control)} original records) is beside it: keep it private, "
                      "with x", highlight=False, markup=False, soft_wrap=True)
