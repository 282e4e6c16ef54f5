"""``ppdm evaluate``: measure an anonymized table z against the original x.

Measures are found by name through :mod:`ppdm.experiments.evaluation`, so every measure
any module of :mod:`ppdm.metrics` or :mod:`ppdm.attacks` registers works here without
change. A measure the table does not allow is reported as skipped with its reason; the
others still run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ppdm.cli.app import (
    CategoricalOpt,
    ClassOpt,
    DateOpt,
    DecimalOpt,
    EngineOpt,
    IdOpt,
    MeasureSeedOpt,
    MissingKeepOpt,
    OtherOpt,
    QiOpt,
    SchemaOpt,
    SensitiveOpt,
    SepOpt,
    WeightOpt,
    _missing,
    app,
)
from ppdm.cli.common import (
    BUILTIN,
    console,
    err_console,
    load_original,
    measurement_seed,
    print_json,
    report_drawn_seed,
    roles_from_options,
)
from ppdm.errors import ParameterError, PPDMError, SchemaError

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from ppdm.data.schema import Schema


def load_like(spec: str, x: pd.DataFrame, schema: Schema, missing: str, what: str,
              sep: str | None = None, ignore: list[str] | None = None, decimal: str | None = None) -> pd.DataFrame:
    """Read table ``spec`` (path or builtin:NAME) and check it has exactly the columns of x.

    Columns are put in x's order (``ignore``d ones, x's identifiers, are dropped first),
    read with x's schema and given x's dtypes (a code read as text in one table and as a
    number in the other would never compare equal); the table is validated against x's schema.
    """
    from ppdm.data.io import align_dtypes

    if spec.startswith(BUILTIN):
        from ppdm.data.datasets import load

        df, _ = load(spec[len(BUILTIN):])
    else:
        from ppdm.data.io import read_table

        df = read_table(spec, sep=sep, schema=schema, decimal=decimal)
    if ignore:
        df = df.drop(columns=[c for c in ignore if c in df.columns])
    cols, want = [str(c) for c in df.columns], [str(c) for c in x.columns]
    if set(cols) != set(want):
        lacks = [c for c in want if c not in cols]
        extra = [c for c in cols if c not in want]
        parts = []
        if lacks:
            parts.append(f"lacks {', '.join(map(repr, lacks))}")
        if extra:
            parts.append(f"has extra {', '.join(map(repr, extra))}")
        raise SchemaError(f"the {what} table {spec!r} does not have the columns of the original: it {' and '.join(parts)}")
    df = align_dtypes(df[list(x.columns)], x, f"the {what} table {spec!r}")
    df, dropped = schema.validate(df, missing=missing)  # type: ignore[arg-type]
    if dropped:
        err_console.print(f"[yellow]dropped {dropped} incomplete row(s) from {spec}[/yellow]")
        df = df.reset_index(drop=True)
    return df


def _load_rules(path: Path, x: pd.DataFrame, schema: Schema):
    from ppdm.rules.core import RuleSet

    rs = RuleSet.load(path)
    cls = schema.class_column
    if rs.class_column is not None and cls is not None and rs.class_column != cls:
        raise PPDMError(f"the rule file {str(path)!r} predicts {rs.class_column!r}, but the class column is {cls!r}")
    if len(rs) == 0:
        raise PPDMError(f"the rule file {str(path)!r} holds no rule")
    for i, r in enumerate(rs):
        for a in r.attributes:
            if a not in x.columns:
                raise PPDMError(f"rule {i} of {str(path)!r} tests attribute {a!r}, which the table does not have")
    return RuleSet(rs.rules, rs.class_column or cls)


def _provenance(spec: str) -> dict[str, Any] | None:
    """The provenance sidecar of release ``spec`` (a file), or None."""
    if spec.startswith(BUILTIN):
        return None
    from ppdm.data.provenance import read_provenance

    return read_provenance(spec)


def _without_identifiers(x: pd.DataFrame, schema: Schema,
                         provenance: dict[str, Any] | None) -> tuple[pd.DataFrame, Schema, list[str]]:
    """x without its identifier columns (declared, or named as removed by the release's
    provenance): a release does not carry them, and they are never compared."""
    from ppdm.experiments.evaluation import without_identifiers

    return without_identifiers(x, schema, (provenance or {}).get("removed_identifiers") or [])


def _recoded_view(x: pd.DataFrame, schema: Schema, provenance: dict[str, Any] | None) -> tuple[Any, Any, Any]:
    """A release whose columns were recoded (its provenance's output schema, ``ppdm anonymize -m
    recode``) is compared on its own categories: those columns of x become the labels that stand
    for their values (:func:`ppdm.data.generalization.generalise`), categorical in the schema of
    the evaluation. Returns ``(x, schema, f)``, ``f`` doing the same to the test and control sets."""
    from dataclasses import replace

    from ppdm.data.generalization import generalise
    from ppdm.data.schema import Schema

    out = ((provenance or {}).get("output") or {}).get("schema")
    if not out:
        return x, schema, lambda df: df
    released = Schema.from_dict(out)
    cols = [c for c in x.columns if c in released.categorical and c != schema.class_column
            and (c in schema.numeric or released.categories.get(c) != schema.categories.get(c)
                 or released.hierarchies.get(c) != schema.hierarchies.get(c))]
    if not cols:
        return x, schema, lambda df: df

    def labels(c: str) -> list[Any]:
        return list(released.categories.get(c) or [])

    def recode(df: pd.DataFrame) -> pd.DataFrame:
        df = df.copy()
        for c in cols:
            if c in df.columns:
                df[c] = generalise(df[c], labels(c), ancestors=released.hierarchies.get(c)).to_numpy()
        return df

    sch = replace(schema, numeric=[c for c in schema.numeric if c not in cols],
                  categorical=[*schema.categorical, *[c for c in cols if c not in schema.categorical]],
                  integer=[c for c in schema.integer if c not in cols],
                  bounds={c: b for c, b in schema.bounds.items() if c not in cols},
                  dates={c: f for c, f in schema.dates.items() if c not in cols},
                  categories={**schema.categories, **{c: labels(c) for c in cols if labels(c)}},
                  hierarchies={**schema.hierarchies, **{c: h for c, h in released.hierarchies.items() if c in cols}})
    return recode(x), sch, recode


PAIRINGS = ("auto", "position", "none")


@dataclass
class Pairing:
    """How x and z were paired for an evaluation, and from what.

    ``mode`` is ``"private log"`` (z re-paired with x through the release's private log),
    ``"position"`` (the owner declared z's rows to be x's, in order), ``"none"`` (no pairing:
    record-by-record measures use their pairing-free forms) or ``"synthetic"`` (z's records
    are not made from particular records of x).
    """

    mode: str
    private: dict[str, Any] | None = None
    private_file: Path | None = None
    control: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def paired(self) -> bool:
        return self.mode in ("private log", "position")


def _read_private_log(anonymized: str, given: Path | None, pairing: str) -> tuple[dict[str, Any] | None, Path | None]:
    """The private log of release ``anonymized`` (``given``, or the one beside it) and its path."""
    from ppdm.data.provenance import private_path, read_private

    if pairing not in PAIRINGS:
        raise ParameterError(f"--pairing must be one of {', '.join(PAIRINGS)}, got {pairing!r}")
    if given is not None:
        if pairing == "position":
            raise ParameterError("--pairing position declares z's rows to be x's in order; it cannot be used with "
                                 "the private log given by --private")
        return read_private(anonymized, given), Path(given)
    if anonymized.startswith(BUILTIN) or pairing == "position":
        return None, None
    record = read_private(anonymized)
    return (record, private_path(anonymized)) if record is not None else (None, None)


def _check_private_input(private: dict[str, Any], path: Path, original: str, anonymized: str,
                         pairs: bool = True) -> None:
    """The private log belongs to these files: x is the input z was made from (same SHA-256) and
    (when its pairing is used, ``pairs``) z is the release as written (same SHA-256), so its
    recorded pairing applies."""
    from ppdm.cli.common import input_sha256
    from ppdm.data.partitions import dataset_files
    from ppdm.experiments.out_of_core import dataset_sha256

    inp = private.get("input") or {}
    recorded = inp.get("sha256")
    if recorded:
        if inp.get("partitions") and not original.startswith(BUILTIN):
            got = dataset_sha256(dataset_files(original))
        elif original.startswith(BUILTIN) or Path(original).is_file():
            got = input_sha256(original)
        else:
            got = None
        if got != recorded:
            raise PPDMError(f"--original is not the table z was made from: its sha256 differs from the one the "
                            f"private log {str(path)!r} records, so z's rows cannot be paired with its records; give "
                            "that table, or evaluate without the pairing (--pairing none)")
    made = private.get("release_sha256")
    if made and pairs and not anonymized.startswith(BUILTIN):
        if Path(anonymized).is_dir():
            got_z = dataset_sha256(dataset_files(anonymized))
        elif Path(anonymized).is_file():
            from ppdm.data.provenance import file_sha256

            got_z = file_sha256(anonymized)
        else:
            got_z = None
        if got_z != made:
            raise PPDMError(f"z is not the release the private log {str(path)!r} was written for (its sha256 "
                            "differs): its rows may no longer be in the order the pairing records; evaluate it "
                            "without the pairing (--pairing none)")


def _kept_rows(private: dict[str, Any], n: int, path: Path) -> None:
    inp = private.get("input") or {}
    kept = inp.get("rows_kept")
    if isinstance(kept, int) and kept != n:
        how = inp.get("missing")
        hint = f" --missing {how}" if how else " the same --missing policy"
        raise PPDMError(f"the private log {str(path)!r} pairs z with the {kept} records x had after its missing-value "
                        f"policy, but x has {n} here; read x as the release did, with{hint}")


def _positions(obj: Any, what: str, n_x: int, n: int | None = None, path: Path | None = None) -> np.ndarray:
    import numpy as np

    from ppdm.data.provenance import decode_positions

    pos = decode_positions(obj, what)
    where = f" in {str(path)!r}" if path is not None else ""
    if n is not None and len(pos) != n:
        raise PPDMError(f"the {what}{where} has {len(pos)} rows but z has {n}; the private log is not z's")
    if len(pos) and (int(pos.max()) >= n_x or len(np.unique(pos)) != len(pos)):
        raise PPDMError(f"the {what}{where} does not point into x's {n_x} records one to one; the private log is "
                        "damaged or not z's")
    return pos


def _pair_in_memory(x: pd.DataFrame, z: pd.DataFrame, c: pd.DataFrame | None, pairing: Pairing,
                    missing: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """x and z paired as ``pairing`` says: through the private log (z's rows put in x's order,
    held-out records left out of x by their positions), by position, or not at all (control
    records left out of x as a multiset)."""
    import numpy as np

    from ppdm.experiments.release import without_held_out

    private, path = pairing.private, pairing.private_file
    if private is not None:
        _kept_rows(private, len(x), path)  # type: ignore[arg-type]
        hold = private.get("holdout") or {}
        held = (_positions(hold["positions"], "held-out positions", len(x), path=path)
                if isinstance(hold, dict) and hold.get("positions") else None)
        rec = private.get("pairing")
        if rec is not None and rec.get("counted") == "as read" and (private.get("input") or {}).get("rows_dropped"):
            raise PPDMError("the private log pairs this partitioned release with x's rows as read, before the "
                            "incomplete ones were left out; evaluate it partition by partition (--engine dask)")
        if rec is not None and pairing.mode == "private log":
            pos = _positions(rec.get("positions"), "pairing", len(x), len(z), path)
            order = np.argsort(pos, kind="stable")
            # row k of each table now holds one person: x's records in their order, z's rows beside them
            z = z.iloc[order].reset_index(drop=True)
            x = x.iloc[pos[order]].reset_index(drop=True)
        elif held is not None:
            keep = np.ones(len(x), dtype=bool)
            keep[held] = False
            x = x.loc[keep].reset_index(drop=True)
    elif c is not None:
        # control records are, by definition, not among those z was made from: each one found in x
        # leaves it (as a multiset, so which of two equal copies goes does not matter)
        try:
            left = without_held_out(x, c)
        except PPDMError:
            pairing.notes.append(f"the control set holds records that are not in x, so no record of x is taken "
                                 f"out as held out ({len(c)} control records)")
        else:
            if len(left):
                x = left
            else:
                pairing.notes.append("the control set holds every record of x, so none is taken out as held out")
    if pairing.mode == "position" and len(x) != len(z):
        # each measure that pairs records says so when it is skipped; the others still run
        pairing.notes.append(f"--pairing position, but x has {len(x)} records and z {len(z)}: measures that "
                             "compare records one by one cannot run")
    if missing == "drop" and pairing.paired:
        # a record is left out when it is incomplete in either table, so the pairs stay pairs
        incomplete = x.isna().any(axis=1).to_numpy() | z.isna().any(axis=1).to_numpy()
        if incomplete.any():
            err_console.print(f"[yellow]dropped {int(incomplete.sum())} incomplete record pair(s) of x and z"
                              "[/yellow]")
            x = x.loc[~incomplete].reset_index(drop=True)
            z = z.loc[~incomplete].reset_index(drop=True)
    return x, z


def _private_control(pairing: Pairing, anonymized: str, provenance: dict[str, Any] | None) -> str | None:
    """The control set the private log names (beside it), or a version-1 provenance's hold-out
    (beside z); None when there is none."""
    if pairing.private is not None:
        name = (pairing.private.get("holdout") or {}).get("control")
        base = pairing.private_file.parent if pairing.private_file is not None else Path(anonymized).parent
        what = "the private log"
    else:
        name = ((provenance or {}).get("holdout") or {}).get("control")
        base = Path(anonymized).parent
        what = "the provenance"
    if not name:
        return None
    path = base / Path(str(name)).name
    if not path.is_file():
        err_console.print(f"note: {what} names the control set {str(path)!r}, which is absent; the attacks "
                          "are skipped", highlight=False, markup=False)
        return None
    err_console.print(f"control set: {path} (held out before anonymizing, named by {what})",
                      highlight=False, markup=False)
    return str(path)


def _show_provenance(provenance: dict[str, Any] | None, original: str, pairing: Pairing | None = None) -> None:
    from ppdm.data.provenance import describe, describe_private, file_sha256

    if provenance is not None:
        err_console.print(f"provenance of z: {describe(provenance)}", highlight=False, markup=False, soft_wrap=True)
    if pairing is not None and pairing.private is not None:
        err_console.print(f"private log {pairing.private_file}: {describe_private(pairing.private)}",
                          highlight=False, markup=False, soft_wrap=True)
    if pairing is not None:
        for note in pairing.notes:
            err_console.print(f"note: {note}", highlight=False, markup=False, soft_wrap=True)
    if provenance is None or (pairing is not None and pairing.private is not None):
        return
    inp = provenance.get("input") or {}  # a version-1 record, written before the private log existed
    recorded = inp.get("sha256")
    if recorded and inp.get("partitions") and not original.startswith(BUILTIN):
        from ppdm.data.partitions import dataset_files
        from ppdm.experiments.out_of_core import dataset_sha256

        same = dataset_sha256(dataset_files(original)) == recorded
    else:
        same = not (recorded and not original.startswith(BUILTIN) and Path(original).is_file()
                    and file_sha256(original) != recorded)
    if not same:
        err_console.print("note: --original is not the file z was made from (its sha256 differs from the "
                          "provenance's)", highlight=False, markup=False)


def _pairing_of(private: dict[str, Any] | None, private_file: Path | None, pairing: str,
                provenance: dict[str, Any] | None) -> Pairing:
    if private is not None:
        if private.get("pairing") is None:
            return Pairing("synthetic", private, private_file)
        if pairing == "none":
            return Pairing("none", private, private_file)
        return Pairing("private log", private, private_file)
    if pairing == "position":
        return Pairing("position")
    notes = []
    if pairing == "auto":
        # never trust row positions in a file the owner did not pair: pairing-free forms only
        notes.append("z has no private log (give it with --private, or declare z's rows to be x's in order with "
                     "--pairing position): measures that compare each record with its own original are skipped, "
                     "and the release check looks records up among all of x")
    return Pairing("none", notes=notes)


def _check_named_keys(specs: list[Any], schema: Schema, options: dict[str, Any]) -> None:
    """Measures named with --measures that need quasi-identifiers get declared ones: nothing
    is inferred for a measure the user asked for by name (the default set infers them)."""
    from ppdm.metrics.keyvar import KEY_VARIABLE_MEASURES

    need = [s.name for s in specs if s.name in KEY_VARIABLE_MEASURES and not options.get(f"{s.name}.keys")
            and not (isinstance(options.get(s.name), dict) and options[s.name].get("keys"))]
    if need and not schema.quasi_identifiers and not options.get("keys"):
        raise ParameterError(f"measure(s) {', '.join(need)} need quasi-identifiers: declare them with --qi A,B, "
                             "with quasi_identifiers in a --schema file, or with --param keys=A,B")


def _thresholds(items: list[str] | None, names: list[str]) -> dict[str, float]:
    """``--threshold NAME=VALUE`` options as a dict, checked against the evaluated measures."""
    out: dict[str, float] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise ParameterError(f"--threshold expects NAME=VALUE, got {item!r}")
        if name not in names:
            raise ParameterError(f"--threshold names {name!r}, which is not among the evaluated measures")
        try:
            out[name] = float(value)
        except ValueError:
            raise ParameterError(f"--threshold {name} must be a number, got {value.strip()!r}") from None
    return out


def _summary(details: dict[str, Any]) -> str:
    """One line of context for the table: the scores behind a difference."""
    parts = []
    for name in ("accuracy_x", "accuracy_z", "score_x", "score_z", "n_used", "n_rules", "pos_label", "average",
                 "test_source", "original", "key_source", "ci_low", "ci_high", "ceiling"):
        v = details.get(name)
        if v is not None:
            parts.append(f"{name}={v:.4f}" if isinstance(v, float) else f"{name}={v}")
    if details.get("sample_size") is not None:
        # a measure of a partitioned table computed on a sample says so, with its interval
        lo, hi = details.get("ci_low"), details.get("ci_high")
        ci = (f", {100 * details.get('confidence', 0.95):.0f}% CI [{lo:.4g}, {hi:.4g}]"
              if isinstance(lo, float) and isinstance(hi, float) else ", no interval")
        parts.append(f"sample of {details['sample_size']} of {details.get('population')} records{ci}")
    return ", ".join(parts)


@app.command(short_help="Judge a release z against x: risk, utility, every measure.")
def evaluate(
    original: Annotated[str, typer.Option(
        "--original", "-x", help="Original table x (path, Parquet dataset folder, glob, or builtin:NAME).")],
    anonymized: Annotated[str, typer.Option(
        "--anonymized", "-z", help="Anonymized table z (path, Parquet dataset folder, glob, or builtin:NAME).")],
    class_column: ClassOpt = None,
    rules: Annotated[Path | None, typer.Option("--rules", "-r", help="Rule file Ψx (default: CART rules of x).")] = None,
    test: Annotated[str | None, typer.Option("--test", "-t", help="Test table t for model measures (default: hold out 1/3 of x).")] = None,
    control: Annotated[str | None, typer.Option("--control", help="Control set: original records not used to make z, for the attacks (default: the hold-out named by z's private log).")] = None,
    private: Annotated[Path | None, typer.Option("--private", help="z's private log, which pairs its rows with x's records (default: <z stem>.private.json beside z, when there).")] = None,
    pairing: Annotated[str, typer.Option("--pairing", help="How z's rows pair with x's: 'auto' (through the private log when there is one), 'position' (you declare z's rows to be x's, in order: a release made elsewhere that kept the order) or 'none' (record-by-record measures use pairing-free forms).")] = "auto",
    measures: Annotated[str | None, typer.Option("--measures", "-m", help="Comma list of measure names, or 'all' (default: the default set).")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="Print one JSON document (docs/ppdm.schema.json) instead of tables.")] = False,
    param: Annotated[list[str] | None, typer.Option("--param", "-p", help="Measure option key=value (repeatable), e.g. average=weighted.")] = None,
    threshold: Annotated[list[str] | None, typer.Option("--threshold", help="Threshold of a measure for the verdicts, NAME=VALUE (repeatable).")] = None,
    html: Annotated[Path | None, typer.Option("--html", help="Also write a self-contained HTML report.")] = None,
    verbose: Annotated[bool, typer.Option(
        "--verbose", "-v", help="Also print every measure's details, the per-key and per-rule tables and the rule "
                                "texts (default: a one-screen summary).")] = False,
    seed: MeasureSeedOpt = None,
    missing: MissingKeepOpt = "error",
    schema: SchemaOpt = None,
    sep: SepOpt = None,
    decimal: DecimalOpt = None,
    identifiers: IdOpt = None,
    quasi_identifiers: QiOpt = None,
    sensitive: SensitiveOpt = None,
    weight: WeightOpt = None,
    other: OtherOpt = None,
    categorical: CategoricalOpt = None,
    date: DateOpt = None,
    engine: EngineOpt = "auto",
    blocksize: Annotated[str | None, typer.Option(
        "--blocksize", help="With dask: bytes of CSV per partition of x (default: as the release's provenance "
                            "records, else 64MB).")] = None,
    sample_rows: Annotated[int, typer.Option(
        "--sample-rows", help="With dask: records of the sample that measures without an exact out-of-core "
                              "form are computed on.")] = 20_000,
) -> None:
    """Measure what an anonymized table z keeps of x and how exposed its records are.

    Prints a risk verdict and a utility verdict, then every measure (rule retention, model
    performance, information loss, disclosure risk, ...). A measure the table does not
    allow is reported as skipped with its reason. The provenance file written beside z by
    'ppdm anonymize' (z.provenance.json) is read when present, and so is its private log
    (z.private.json), which pairs z's shuffled rows with x's records and names the control set.
    """
    from ppdm.cli.progress import progress_bar
    from ppdm.experiments.compare import dataset_summary
    from ppdm.experiments.evaluation import measurement_context, resolve_measures, run_measure
    from ppdm.report.evaluation import evaluation_document
    from ppdm.utils import parse_params

    miss = _missing(missing, keep=True)
    seed_value, drawn = measurement_seed(seed)
    if html is not None:
        from ppdm.data.io import check_output_path

        check_output_path(html, inputs=tuple(Path(s) for s in (original, anonymized, test, control,
                                                               str(private) if private else None)
                                             if s is not None and not s.startswith(BUILTIN)))
    specs = resolve_measures(measures)
    options = parse_params(param)
    limits = _thresholds(threshold, [s.name for s in specs])
    provenance = _provenance(anonymized)
    private_log, private_file = _read_private_log(anonymized, private, pairing)
    pair = _pairing_of(private_log, private_file, pairing, provenance)
    if private_log is not None:
        _check_private_input(private_log, private_file, original, anonymized,  # type: ignore[arg-type]
                             pairs=pair.mode == "private log")
    roles = roles_from_options(identifiers, quasi_identifiers, sensitive, weight, other)
    from ppdm.data.partitions import wants_dask

    if wants_dask(original, engine) or wants_dask(anonymized, engine):
        _evaluate_datasets(original, anonymized, test, class_column=class_column, schema=schema, sep=sep, roles=roles,
                           missing=miss, categorical=categorical, date=date, blocksize=blocksize,
                           provenance=provenance, pair=pair, specs=specs, options=options, rules=rules,
                           seed_value=seed_value,
                           drawn=drawn, sample_rows=sample_rows, html=html, json_out=json_out,
                           thresholds=limits, named=measures is not None and measures.strip() != "all",
                           verbose=verbose, decimal=decimal)
        return
    x, sch, ids = load_original(original, class_column, schema_path=schema, missing=miss, sep=sep, roles=roles,
                                categorical=categorical, dates=date, provenance=provenance, decimal=decimal)
    from ppdm.data.provenance import owner_view

    x, sch, recode = _recoded_view(x, sch, owner_view(provenance, private_log))
    # a paired z is read with its incomplete rows, so that the pairs are dropped together
    z = load_like(anonymized, x, sch, "keep" if miss == "drop" and pair.paired else miss, "anonymized", sep, ids,
                  decimal=decimal)
    t = recode(load_like(test, x, sch, miss, "test", sep, ids, decimal=decimal)) if test is not None else None
    control = control if control is not None else _private_control(pair, anonymized, provenance)
    c = recode(load_like(control, x, sch, miss, "control", sep, ids, decimal=decimal)) if control is not None else None
    # control records leave x by identity (the private log's positions, or as a multiset), never by count
    x, z = _pair_in_memory(x, z, c, pair, miss)
    # measures compute on numbers (dates on their time axis, missing cells as NaN): the same
    # working form as compare's
    ctx = measurement_context(x, z, sch, test=t, control=c, random_state=seed_value, options=options,
                              paired=pair.paired)
    x, z, t, c = ctx.x, ctx.z, ctx.test, ctx.control
    if sch.class_column is None:
        needing = [s.name for s in specs if s.needs_class]
        named = measures is not None and measures.strip() != "all"
        if needing and (named or len(needing) == len(specs)):
            raise SchemaError(f"measure(s) {', '.join(needing)} need a class column; name it with --class")
    if measures is not None and measures.strip() != "all":
        _check_named_keys(specs, sch, options)
    if sch.weight is not None and any(s.name == "reidentification_risk" for s in specs):
        from ppdm.metrics.keyvar import check_weights

        # sampling weights are wrong for every record they belong to: refused before any measure
        check_weights(x, sch.weight if sch.weight in x.columns else None, measure="the sampling weights")
    rs = _load_rules(rules, x, sch) if rules is not None else None
    if rs is None and sch.class_column is not None and ({"min_leaf_frac", "max_depth"} & set(options)):
        from ppdm.trees.cart import rules_from_cart

        cart = {k: options[k] for k in ("min_leaf_frac", "max_depth") if k in options}
        rs = rules_from_cart(x, sch, random_state=seed_value, **cart)
    ctx.rules = rs

    outcomes = {}
    with progress_bar("evaluating", total=len(specs)) as step:
        for spec in specs:
            step(0, description=f"computing {spec.name}")
            outcomes[spec.name] = run_measure(spec, ctx)
            step()

    def size(df: pd.DataFrame | None, source: str | None) -> dict[str, Any] | None:
        return None if df is None else {"source": source, "rows": int(len(df)), "columns": int(df.shape[1])}

    inputs = {"original": size(x, original), "anonymized": size(z, anonymized), "test": size(t, test),
              "control": size(c, control),
              "rules": str(rules) if rules is not None else None, "class_column": sch.class_column,
              "seed": seed_value, "options": options, "pairing": pair.mode}
    doc = evaluation_document(outcomes, provenance=provenance, inputs=inputs,
                              dataset=dataset_summary(x, sch, original), thresholds=limits,
                              private=_private_for_report(pair))
    if html is not None:
        from ppdm.report.html import write_evaluation_html

        write_evaluation_html(doc, html, subtitle=f"x = {original}, z = {anonymized}" + (f", t = {test}" if test else "")
                              + f"; measurement seed {seed_value}")
        err_console.print(f"wrote {html}")
    _show_provenance(provenance, original, pair)
    report_drawn_seed(seed_value, drawn)
    if json_out:
        print_json(doc)
        return
    _print_evaluation(doc, verbose=verbose)


def _private_for_report(pair: Pairing) -> dict[str, Any] | None:
    """What the report may show of the private log it was given: no pairing, no positions."""
    if pair.private is None:
        return None
    from ppdm.data.provenance import private_summary

    return {**private_summary(pair.private), "file": str(pair.private_file)}


def _evaluate_datasets(original: str, anonymized: str, test: str | None, *, class_column: str | None,
                       schema: Path | None, sep: str | None, roles: Any, missing: str, categorical: list[str] | None,
                       date: list[str] | None, blocksize: str | None, provenance: dict[str, Any] | None,
                       pair: Pairing, specs: list, options: dict[str, Any], rules: Path | None, seed_value: int, drawn: bool,
                       sample_rows: int, html: Path | None, json_out: bool,
                       thresholds: dict[str, float], named: bool, verbose: bool = False,
                       decimal: str | None = None) -> None:
    """Tables larger than memory: exact measures partition by partition, the others on a sample."""
    from dataclasses import replace

    from ppdm.cli.common import parse_date_options, stage_progress
    from ppdm.data.partitions import BLOCKSIZE, open_dataset
    from ppdm.data.roles import resolve_schema, split_names
    from ppdm.data.schema import Schema
    from ppdm.metrics._dask import partition_lengths, working_parts
    from ppdm.metrics.base import EvaluationContext
    from ppdm.metrics.out_of_core import SampledResult, evaluate_measure

    cats, dates = split_names(categorical), parse_date_options(date)
    if (cats or dates) and schema is not None:
        raise PPDMError("give column types either in the schema (--schema) or with --categorical/--date, not both")
    if original.startswith(BUILTIN) or anonymized.startswith(BUILTIN):
        raise PPDMError("a shipped dataset (builtin:NAME) is evaluated in memory; give files for a partitioned "
                        "evaluation")
    recorded = ((pair.private or provenance or {}).get("input") or {}).get("blocksize")
    block = blocksize or recorded or BLOCKSIZE
    loaded = Schema.load(schema) if schema is not None else None
    xds = open_dataset(original, sep=sep, schema=loaded, categorical=cats, dates=dates, blocksize=block,
                       decimal=decimal)
    head = xds.head
    head.attrs["date_formats"] = dict(xds.date_formats)
    sch = resolve_schema(head, schema=loaded, class_column=class_column, roles=roles, detect=False,
                         what="the schema" if schema is None else f"schema file {str(schema)!r}")
    x, sch, ids = _without_identifiers(xds.data, sch, provenance)
    zds = open_dataset(anonymized, sep=sep, schema=sch, blocksize=block, decimal=decimal)
    cols, want = zds.columns, [str(c) for c in x.columns]
    if set(cols) - set(ids) != set(want):
        lacks = [c for c in want if c not in cols]
        extra = [c for c in cols if c not in want and c not in ids]
        raise SchemaError(f"the anonymized table {anonymized!r} does not have the columns of the original: it "
                          + " and ".join(([f"lacks {', '.join(map(repr, lacks))}"] if lacks else [])
                                         + ([f"has extra {', '.join(map(repr, extra))}"] if extra else [])))
    from ppdm.data.io import align_dtypes

    like = x._meta[want]
    # z read with x's types, column by column (a code read as text in one and as a number in the other never matches)
    z = zds.data[want].map_partitions(align_dtypes, like, f"the anonymized table {anonymized!r}", meta=like)
    if pair.mode == "private log":
        x, z = _repair_partitions(x, z, pair, missing)
    if missing == "drop":
        keep = sch.columns
        x = x.dropna(subset=keep)
        z = z.dropna(subset=keep)
    elif missing == "error":
        _refuse_missing_lazily(x, sch, original)
        _refuse_missing_lazily(z, sch, anonymized)
    t = None
    if test is not None:
        t = working_parts(open_dataset(test, sep=sep, schema=sch, blocksize=block, decimal=decimal).data[want],
                          sch.numeric)
    if sch.class_column is None:
        needing = [s.name for s in specs if s.needs_class]
        if needing and (named or len(needing) == len(specs)):
            raise SchemaError(f"measure(s) {', '.join(needing)} need a class column; name it with --class")
    x, z = working_parts(x, sch.numeric), working_parts(z, sch.numeric)
    rs = _load_rules(rules, head, sch) if rules is not None else None
    ctx = EvaluationContext(x=x, z=z, schema=sch, test=t, rules=rs, random_state=seed_value, options=dict(options),
                            paired=pair.paired)
    from ppdm.cli.progress import progress_bar
    from ppdm.data.partitions import reporting
    from ppdm.experiments.evaluation import run_measure
    from ppdm.report.evaluation import evaluation_document

    def run(spec: Any) -> Any:
        # the measure exactly out of core, or on the declared sample; skipped like in memory
        return run_measure(replace(spec, fn=lambda c: evaluate_measure(spec, c, sample_rows=sample_rows)), ctx)

    outcomes: dict[str, Any] = {}
    with progress_bar("evaluating", total=len(specs)) as step, reporting(stage_progress()):
        for spec in specs:
            step(0, description=f"computing {spec.name}")
            outcomes[spec.name] = replace(run(spec), spec=spec)
            step()
    # a measure with an exact form may still attack a sample past some size (record linkage,
    # intruder matching): it then says so with its sample size
    def drew_sample(res: Any) -> bool:
        n, pop = getattr(res, "sample_size", None), getattr(res, "population", None)
        return isinstance(res, SampledResult) or bool(n and pop and n < pop)

    how = {name: ("sample" if drew_sample(o.result) else "exact") for name, o in outcomes.items() if not o.skipped}
    rows_x, rows_z = sum(partition_lengths(x)), sum(partition_lengths(z))
    inputs = {"original": {"source": original, "rows": rows_x, "columns": len(want), "partitions": x.npartitions},
              "anonymized": {"source": anonymized, "rows": rows_z, "columns": len(want), "partitions": z.npartitions},
              "test": None if t is None else {"source": test, "rows": sum(partition_lengths(t)), "columns": len(want)},
              "rules": str(rules) if rules is not None else None, "class_column": sch.class_column,
              "seed": seed_value, "options": options, "sample_rows": sample_rows, "pairing": pair.mode}
    doc = evaluation_document(outcomes, provenance=provenance, inputs=inputs,
                              dataset=_dataset_summary(x, sch, original, rows_x), thresholds=thresholds,
                              private=_private_for_report(pair))
    for name, h in how.items():
        doc["measures"][name]["out_of_core"] = h
    if html is not None:
        from ppdm.report.html import write_evaluation_html

        write_evaluation_html(doc, html, subtitle=f"x = {original}, z = {anonymized} ({x.npartitions} partitions); "
                                                  f"measurement seed {seed_value}")
        err_console.print(f"wrote {html}")
    _show_provenance(provenance, original, pair)
    report_drawn_seed(seed_value, drawn)
    if json_out:
        print_json(doc)
        return
    _print_evaluation(doc, verbose=verbose)
    sampled = [n for n, h in how.items() if h == "sample"]
    if sampled:
        err_console.print(f"computed on a sample of at most {sample_rows} records (with a confidence interval in "
                          f"--json): {', '.join(sampled)}; every other measure is exact", highlight=False,
                          soft_wrap=True)


def _repair_partitions(x: Any, z: Any, pair: Pairing, missing: str) -> tuple[Any, Any]:
    """x and z of a partitioned evaluation paired through the private log.

    A partitioned release was shuffled partition by partition: each of z's partitions is put
    back in the order of x's. A release made in memory was shuffled as a whole (and may have
    held records out): every row gets its position in x, and Dask moves z's rows to x's
    partitions by position (a shuffle of z, never a whole table in one place)."""
    import numpy as np

    from ppdm.data.provenance import decode_positions
    from ppdm.metrics._dask import partition_lengths

    private = pair.private or {}
    if missing != "drop" and (private.get("input") or {}).get("rows_dropped"):
        raise PPDMError(f"the private log {str(pair.private_file)!r} pairs z with the records x had after leaving "
                        "out incomplete ones; read x the same way (--missing drop)")
    rec = private.get("pairing") or {}
    parts = rec.get("partitions")
    if isinstance(parts, list):
        if len(parts) != z.npartitions or len(parts) != x.npartitions:
            raise PPDMError(f"the private log pairs {len(parts)} partitions, but x has {x.npartitions} and z "
                            f"{z.npartitions}; read x with the block size the release was made with (--blocksize)")
        orders = [decode_positions(p.get("positions"), f"pairing of partition {i}") for i, p in enumerate(parts)]
        return x, z.map_partitions(_unshuffle_part, _array_parts(orders), str(pair.private_file), meta=z._meta,
                                   align_dataframes=False)
    # a partitioned release counts x's rows as read, before the missing-value policy, like x here
    as_read = rec.get("counted") == "as read"
    if missing == "drop" and (private.get("input") or {}).get("rows_dropped") and not as_read:
        raise PPDMError("a release made in memory from a table with incomplete records is evaluated in memory: "
                        "leave out --engine dask")
    lx = partition_lengths(x)
    n_x = int(sum(lx))
    _kept_rows({"input": {**(private.get("input") or {}), "rows_kept": rec.get("rows_of_x")}} if as_read else private,
               n_x, pair.private_file)  # type: ignore[arg-type]
    lz = partition_lengths(z)
    pos = _positions(rec.get("positions"), "pairing", n_x, int(sum(lz)), pair.private_file)
    key = "__ppdm_position__"
    xo = np.concatenate([[0], np.cumsum(lx)]).astype(np.int64)
    zo = np.concatenate([[0], np.cumsum(lz)]).astype(np.int64)
    xpos = _array_parts([np.arange(xo[i], xo[i + 1]) for i in range(len(lx))])
    zpos = _array_parts([pos[zo[i]:zo[i + 1]] for i in range(len(lz))])
    x = x.map_partitions(_with_position, xpos, key, meta=x._meta.assign(**{key: np.int64(0)}), align_dataframes=False)
    hold = private.get("holdout") or {}
    if isinstance(hold, dict) and hold.get("positions"):
        held = _positions(hold["positions"], "held-out positions", n_x, path=pair.private_file)
        x = x.map_partitions(_without_positions, held, key, meta=x._meta)
    z = z.map_partitions(_with_position, zpos, key, meta=z._meta.assign(**{key: np.int64(0)}), align_dataframes=False)
    # z's rows go to the partition of x that holds their original, sorted by position like x's
    divisions = tuple(int(v) for v in xo[:-1]) + (max(n_x - 1, 0),)
    z = z.set_index(key, divisions=divisions).reset_index(drop=True)
    x = x.drop(columns=key)
    z = z.map_partitions(lambda p: p.reset_index(drop=True), meta=z._meta)
    return x, z


def _array_parts(arrays: list[Any]) -> Any:
    """A Dask DataFrame with one column ``p`` and one partition per array: per-partition data
    that travels beside another table's partitions (``map_partitions(..., align_dataframes=False)``)."""
    import dask.dataframe as dd
    import numpy as np
    import pandas as pd

    meta = pd.DataFrame({"p": np.array([], dtype=np.int64)})
    return dd.from_map(lambda a: pd.DataFrame({"p": np.asarray(a, dtype=np.int64)}), arrays, meta=meta,
                       enforce_metadata=False)


def _with_position(part: pd.DataFrame, positions: pd.DataFrame, key: str) -> pd.DataFrame:
    return part.assign(**{key: positions["p"].to_numpy()})


def _without_positions(part: pd.DataFrame, held: Any, key: str) -> pd.DataFrame:
    import numpy as np

    return part.loc[~np.isin(part[key].to_numpy(), held)]


def _unshuffle_part(part: pd.DataFrame, order: pd.DataFrame, source: str) -> pd.DataFrame:
    import numpy as np

    pos = order["p"].to_numpy()
    if len(pos) != len(part) or (len(pos) and (int(pos.max()) >= len(part) or len(np.unique(pos)) != len(pos))):
        raise PPDMError(f"a partition's pairing in the private log {source!r} does not fit z's partition "
                        f"({len(part)} rows); the private log is not z's")
    return part.iloc[np.argsort(pos, kind="stable")].reset_index(drop=True)


def _dataset_summary(x: Any, sch: Schema, name: str, rows: int) -> dict[str, Any]:
    """Rows, columns, roles and class counts of a partitioned x, counted partition by partition."""
    from ppdm.data.partitions import read_partition, run_partitions

    info: dict[str, Any] = {"name": name, "rows": int(rows), "columns": int(len(x.columns)),
                            "numeric": list(sch.numeric), "categorical": list(sch.categorical),
                            "class_column": sch.class_column, "partitions": int(x.npartitions)}
    cls = sch.class_column
    if cls is not None:
        parts = run_partitions(lambda i: read_partition(x, i)[cls].value_counts(), x.npartitions, name="ppdm-classes")
        import pandas as pd

        counts = pd.concat(parts).groupby(level=0, sort=False).sum().sort_values(ascending=False, kind="stable")
        info["class_counts"] = {str(k): int(v) for k, v in counts.items()}
    return info


def _refuse_missing_lazily(df: Any, sch: Schema, spec: str) -> None:
    """--missing error for a partitioned table: one pass counting missing cells per column."""
    from ppdm.data.partitions import read_partition, run_partitions

    cols = [c for c in sch.columns if c in df.columns]
    counts = run_partitions(lambda i: read_partition(df, i)[cols].isna().sum().to_dict(), df.npartitions,
                            name="ppdm-missing")
    for i, c in enumerate(counts):
        bad = [k for k, v in c.items() if v]
        if bad:
            raise SchemaError(f"column {bad[0]!r} of {spec!r} has a missing value in partition {i}; drop those rows "
                              "with --missing drop, or keep the missing cells where techniques and measures treat "
                              "them with --missing keep")


def _print_evaluation(doc: dict[str, Any], *, verbose: bool = False) -> None:
    """The evaluation on the terminal: a summary a data owner reads in one screen (the two
    verdicts, the drivers of risk, one line per measure, why some were skipped), and with
    ``verbose`` every measure's details, the per-key and per-rule tables and the rule texts."""
    from rich.text import Text

    from ppdm.cli.tables import print_table
    from ppdm.report.evaluation import fmt_number
    from ppdm.report.summary import group_reasons, measure_rows, plain_columns, risk_drivers, status_class

    style = {"good": "green", "bad": "bold red"}
    for v in doc["summary"].values():
        console.print(Text(v["sentence"], style=style.get(status_class(v["status"]), "yellow")))
    drivers = risk_drivers(doc)
    if drivers is not None:
        console.print(Text("Drivers of risk: ", style="bold") + Text(drivers.sentence))
    rows = measure_rows(doc)
    colour = {"good": "green", "bad": "red"}
    print_table(console, None, ["measure", "kind", "value", "threshold", "status"],
                [[r["name"], r["kind"], r["value"], r["threshold"], r["status"]] for r in rows],
                right=["value"], compact=True,
                styles={4: [colour.get(status_class(r["status"]), "") for r in rows]})
    skipped = [(r["name"], r["reason"] or "") for r in rows if r["status"] == "skipped"]
    for names, reason in group_reasons(skipped):
        console.print(Text(f"{', '.join(names)} skipped: {reason}", style="yellow"))
    for name, m in doc["measures"].items():
        if m.get("not_judged"):  # computed, but the intruder scenario it models does not apply
            console.print(Text(f"{name} not judged: {m['not_judged']}", style="dim"))
    if not verbose:
        extra = " and the rule texts" if doc["tables"].get("per_rule") else ""
        console.print(Text(f"--verbose shows every measure's details, the per-key and per-rule tables{extra}; "
                           "--html FILE writes the full report.", style="dim"))
        return
    details = [[name, m["kind"], fmt_number(m["value"]) if m["status"] != "skipped" else "skipped",
                {"higher": "higher", "lower": "lower"}.get(m.get("direction") or "", "neither"),
                _summary(m.get("details") or {})] for name, m in doc["measures"].items()]
    print_table(console, "details of every measure", ["measure", "kind", "value", "better", "details"], details,
                right=["value"])
    if drivers is not None:
        print_table(console, f"key variables ({', '.join(drivers.measures)})", plain_columns(drivers.table["columns"]),
                    [[fmt_number(c) if isinstance(c, float) else str(c) for c in r] for r in drivers.table["rows"]],
                    right=plain_columns(drivers.table["columns"][1:]))
    per_rule = doc["tables"].get("per_rule")
    if per_rule is None:
        return
    cols = per_rule["columns"]

    def col(row: list[Any], name: str) -> Any:
        return row[cols.index(name)] if name in cols else None

    body = []
    for row in per_rule["rows"]:
        flags = [f for f, key in (("flipped", "flipped"), ("empty in z", "zero_support_z"),
                                  ("discounted", "discounted")) if col(row, key)]
        body.append([str(col(row, "rule_index")), str(col(row, "support_x")), str(col(row, "support_z")),
                     fmt_number(col(row, "chi2")), str(col(row, "predicted_x")), str(col(row, "predicted_z")),
                     ", ".join(flags) or "no"])
    print_table(console, "rules Ψx in x and z (per rule; texts below)",
                ["#", "support x", "support z", "χ²", "majority x", "majority z", "flags"], body,
                right=["#", "support x", "support z", "χ²"])
    for row in per_rule["rows"]:
        console.print(Text(f"{col(row, 'rule_index'):>3}: {col(row, 'rule')} → {col(row, 'consequent')}"),
                      soft_wrap=True)
