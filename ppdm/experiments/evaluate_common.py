"""What the evaluation of a release in memory (:mod:`ppdm.experiments.evaluate`) and partition
by partition (:mod:`ppdm.experiments.evaluate_partitioned`) share: the options
(:class:`EvaluateOptions`), the result (:class:`Evaluation`), how the release's files are read
(:class:`TableReading`) and a release file whose private log was already checked against x
(:class:`CheckedRelease`), the recoded view of x and the checks of the inputs. :func:`ppdm.experiments.evaluate.evaluate` is the one entry point and
re-exports these names; they live here so that the two implementations depend on this
module and not on each other.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ppdm.errors import ParameterError, PPDMError, SchemaError
from ppdm.experiments.evaluation import MeasureOutcome
from ppdm.experiments.pairing import Pairing
from ppdm.metrics.judgement import Verdict

if TYPE_CHECKING:
    import pandas as pd

    from ppdm.data.roles import Roles
    from ppdm.data.schema import Schema


@dataclass
class EvaluateOptions:
    """How :func:`evaluate` measures a release (the options of ``ppdm evaluate``).

    ``measures``: names (a list or a comma string), ``"all"``, or ``None`` for the default
    set; ``measure_options``: measure options by name (``{"k": 5}``, ``{"il1s.form": "mean"}``:
    ``--param``); ``thresholds``: a verdict threshold per measure name; ``pairing``:
    ``"auto"`` (through the release's private log when there is one), ``"position"`` (z's rows
    are x's, in order) or ``"none"``; ``private``: the private log of a release file kept
    elsewhere; ``control``: the attacks' control set (a DataFrame or a file; default: the
    release's held-out records); ``test``: a test table for model measures (DataFrame or
    file); ``rules``: the rule set Ψx (a :class:`~ppdm.rules.core.RuleSet` or a rule file;
    default: CART rules of x); ``missing``: the missing-value policy (``"error"``, ``"drop"``,
    ``"keep"``; default: as the release read x — its private log's policy, a library
    :class:`~ppdm.experiments.release.Release`'s cells as given — else ``"error"``); ``random_state``: the *measurement* seed (the draws of the measures — held-out
    test split, attacks — never the release's); ``sample_rows``: records of the sample that
    measures without an exact partitioned form use (``ppdm evaluate --engine dask``);
    ``ruled_out``: intruder scenarios (:data:`ppdm.metrics.base.SCENARIOS`) the owner rules
    out: the risk verdict leaves them out and its sentence names the exclusion; ``engine``:
    ``"auto"`` (partition by partition when the inputs are partitioned, :func:`partitioned`),
    ``"pandas"`` (in memory) or ``"dask"`` (partition by partition, x and z read from files:
    ``ppdm evaluate --engine dask``); ``on_note``: called with each note about the inputs
    (:attr:`Evaluation.notes` other than the pairing's: rows dropped, where the control set came
    from) as an evaluation in memory finds it, so that a caller shows it even when a later step
    refuses the tables (``ppdm evaluate`` prints them so).
    """

    measures: Sequence[str] | str | None = None
    measure_options: Mapping[str, Any] = field(default_factory=dict)
    thresholds: Mapping[str, float] = field(default_factory=dict)
    pairing: str = "auto"
    private: str | Path | None = None
    control: pd.DataFrame | str | Path | None = None
    test: pd.DataFrame | str | Path | None = None
    rules: Any = None
    missing: str | None = None
    random_state: int = 0
    sample_rows: int = 20_000
    ruled_out: Sequence[str] = ()
    engine: str = "auto"
    on_note: Callable[[str], None] | None = None

    @property
    def measure_spec(self) -> str | None:
        """``measures`` as :func:`ppdm.experiments.evaluation.resolve_measures` reads it."""
        if self.measures is None or isinstance(self.measures, str):
            return self.measures
        return ",".join(str(m) for m in self.measures)

    @property
    def named(self) -> bool:
        """Measures were named by the caller (not the default set, not ``"all"``)."""
        spec = self.measure_spec
        return spec is not None and spec.strip() != "all"


@dataclass
class Evaluation:
    """The evaluation of one release.

    ``outcomes`` maps each measure's name to its :class:`~ppdm.experiments.evaluation.MeasureOutcome`
    (``.value``, ``.result``, or ``.reason`` when skipped); ``verdicts`` holds the ``"risk"``
    and ``"utility"`` :class:`~ppdm.metrics.judgement.Verdict` (``.status``, ``.sentence``);
    ``pairing`` says how x and z were paired; ``rows_x`` and ``rows_z`` are the records
    measured (x without held-out records, z after the missing-value policy); ``notes`` what
    the owner should know about the inputs (where the control set came from, records left out),
    in the order they were found, then the pairing's own notes (``pairing.notes``);
    ``provenance`` the release's public provenance record, when it has one.
    """

    outcomes: dict[str, MeasureOutcome]
    verdicts: dict[str, Verdict]
    pairing: Pairing
    rows_x: int
    rows_z: int
    notes: list[str] = field(default_factory=list)
    _document: dict[str, Any] = field(default_factory=dict, repr=False)
    provenance: dict[str, Any] | None = field(default=None, repr=False)

    def document(self) -> dict[str, Any]:
        """The JSON document ``ppdm evaluate --json`` prints (``docs/ppdm.schema.json``)."""
        return copy.deepcopy(self._document)


# -------------------------------------------------------------------- release files
@dataclass(frozen=True)
class TableReading:
    """How an evaluation reads the files it is given (``ppdm evaluate``'s reading options):
    ``sep`` and ``decimal`` as :func:`ppdm.data.io.read_table`, for z, the test and the control
    set in memory and for every file of a partitioned evaluation; for a partitioned x also
    ``categorical`` and ``dates`` (the column types of x, not with a schema), ``blocksize``
    (bytes of CSV per partition; default: the one the release records, else 64MB),
    ``class_column`` and ``roles`` (the roles of x's columns) and ``schema_name`` (the schema
    file, for messages). x in memory is read by the caller."""

    sep: str | None = None
    decimal: str | None = None
    categorical: Sequence[str] = ()
    dates: Mapping[str, str | None] | None = None
    blocksize: Any = None
    class_column: str | None = None
    roles: Roles | None = None
    schema_name: str | None = None


@dataclass(frozen=True)
class CheckedRelease:
    """A release file (or ``builtin:NAME``, or a partitioned release's files) whose provenance
    and private log were read and checked against x before x was read
    (:func:`ppdm.experiments.evaluate.checked_release`, as ``ppdm evaluate`` does), handed so
    to :func:`ppdm.experiments.evaluate.evaluate`: ``path`` the release's files, ``provenance``
    its public record, ``pairing`` the pairing found, ``reading`` how its files (and the test
    and control sets) are read, ``original`` the file x was read from (it names x in the
    document).

    It is evaluated as ``ppdm evaluate`` evaluates, in memory or partition by partition
    (:func:`ppdm.experiments.evaluate.partitioned` decides from ``path`` as for a path): the
    pairing as given, its notes kept for the caller to print, and a record-by-record measure it
    cannot pair reported skipped with its reason, where a library call naming it raises."""

    path: str
    provenance: Mapping[str, Any] | None
    pairing: Pairing
    reading: TableReading = field(default_factory=TableReading)
    original: str | None = None


# ------------------------------------------------------------------------- the tables
def recoded_view(x: pd.DataFrame, schema: Schema,
                 provenance: Mapping[str, Any] | None) -> tuple[pd.DataFrame, Schema, Callable[[Any], Any]]:
    """A release whose columns were recoded (its provenance's output schema, ``ppdm anonymize -m
    recode``) is compared on its own categories: those columns of x become the labels that stand
    for their values (:func:`ppdm.data.generalization.generalise`), categorical in the schema of
    the evaluation. Returns ``(x, schema, f)``, ``f`` doing the same to the test and control sets."""
    from ppdm.data.generalization import recoded_view as view
    from ppdm.data.schema import Schema

    out = ((provenance or {}).get("output") or {}).get("schema")
    if not out:
        return x, schema, lambda df: df
    cols, recode, sch = view(schema, Schema.from_dict(out), list(x.columns), ages=ages_at(provenance, schema))
    if not cols:
        return x, schema, lambda df: df
    return recode(x), sch, recode


def ages_at(provenance: Mapping[str, Any] | None, schema: Schema) -> dict[str, float]:
    """The reference dates of date columns a recoding released as ages (its ``age_at``), from the
    parameters the provenance records, in a chain's steps too: days since 1970-01-01 by column,
    what :func:`ppdm.data.generalization.recoded_view` takes as ``ages``. One reading of the
    provenance for ``ppdm evaluate`` and for the trials of ``ppdm recommend``."""
    from ppdm.data.types import is_iso_date, parse_iso_date

    found: dict[str, float] = {}

    def visit(node: Any) -> None:
        if isinstance(node, Mapping):
            params = node.get("parameters")
            if node.get("name") == "recode" and isinstance(params, Mapping) and params.get("age_at") is not None:
                at = params["age_at"]
                for c in schema.dates:
                    v = at.get(c, at.get("*")) if isinstance(at, Mapping) else at
                    if is_iso_date(v):
                        found[c] = parse_iso_date(v, "age_at")
            for v in node.values():
                visit(v)
        elif isinstance(node, list):
            for v in node:
                visit(v)

    visit((provenance or {}).get("technique"))
    return found


def like_x(df: pd.DataFrame, x: pd.DataFrame, schema: Schema, missing: str, what: str,
           ignore: Sequence[str] = (), name: str | None = None) -> tuple[pd.DataFrame, int]:
    """``df`` (z, a test or a control table) checked to have exactly the columns of x, put in
    x's column order with x's dtypes (a code read as text in one table and as a number in the
    other would never compare equal) and validated against ``schema`` with the missing-value
    policy; ``ignore``d columns (x's identifiers) are dropped first; ``name`` (a file's) is said in
    its errors. Returns ``(df, rows dropped)``."""
    from ppdm.data.io import align_dtypes

    label = f"the {what} table" + (f" {name!r}" if name is not None else "")

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
        raise SchemaError(f"{label} does not have the columns of the original: it {' and '.join(parts)}")
    df = align_dtypes(df[list(x.columns)], x, label)
    df, dropped = schema.validate(df, missing=missing)  # type: ignore[arg-type]  # a policy name: the caller's or the log's
    if dropped:
        df = df.reset_index(drop=True)
    return df, int(dropped or 0)


def load_rules(rules: Any, x: pd.DataFrame, schema: Schema) -> Any:
    """The rule set Ψx to measure retention with: a :class:`~ppdm.rules.core.RuleSet` or a rule
    file, checked to predict the class column and to test only attributes of x."""
    from ppdm.rules.core import RuleSet

    where = "the rule set" if isinstance(rules, RuleSet) else f"the rule file {str(rules)!r}"
    rs = rules if isinstance(rules, RuleSet) else RuleSet.load(rules)
    cls = schema.class_column
    if rs.class_column is not None and cls is not None and rs.class_column != cls:
        raise PPDMError(f"{where} predicts {rs.class_column!r}, but the class column is {cls!r}")
    if len(rs) == 0:
        raise PPDMError(f"{where} holds no rule")
    for i, r in enumerate(rs):
        for a in r.attributes:
            if a not in x.columns:
                raise PPDMError(f"rule {i} of {where} tests attribute {a!r}, which the table does not have")
    return RuleSet(rs.rules, rs.class_column or cls)


def check_named_keys(specs: list[Any], schema: Schema, options: Mapping[str, Any]) -> None:
    """Measures named by the caller that need quasi-identifiers get declared ones: nothing
    is inferred for a measure asked for by name (the default set infers them)."""
    from ppdm.metrics.keyvar import KEY_VARIABLE_MEASURES

    need = [s.name for s in specs if s.name in KEY_VARIABLE_MEASURES and not options.get(f"{s.name}.keys")
            and not (isinstance(options.get(s.name), dict) and options[s.name].get("keys"))]
    if need and not schema.quasi_identifiers and not options.get("keys"):
        raise ParameterError(f"measure(s) {', '.join(need)} need quasi-identifiers: declare them with --qi A,B, "
                             "with quasi_identifiers in a --schema file, or with --param keys=A,B")


def check_class(specs: list[Any], schema: Schema, named: bool) -> None:
    """Measures that need a class column, named (or the only ones asked for) without one: refused."""
    if schema.class_column is None:
        needing = [s.name for s in specs if s.needs_class]
        if needing and (named or len(needing) == len(specs)):
            raise SchemaError(f"measure(s) {', '.join(needing)} need a class column; name it with --class")


def check_thresholds(thresholds: Mapping[str, Any], names: Sequence[str]) -> dict[str, float]:
    """Verdict thresholds by measure name, checked to name evaluated measures."""
    out: dict[str, float] = {}
    for name, value in thresholds.items():
        if name not in names:
            raise ParameterError(f"--threshold names {name!r}, which is not among the evaluated measures")
        try:
            out[name] = float(value)
        except (TypeError, ValueError):
            raise ParameterError(f"--threshold {name} must be a number, got {value!r}") from None
    return out


def check_paired(specs: list[Any], pairing: Pairing) -> None:
    """Record-by-record measures named by the caller while z's rows are not paired with x's:
    one clear error instead of comparing different people."""
    names = [s.name for s in specs if s.paired]
    if not names or pairing.paired:
        return
    verb = "compares" if len(names) == 1 else "compare"
    if pairing.mode == "synthetic":
        raise ParameterError(f"{', '.join(names)} {verb} each released record with its own original, but z is "
                             "synthetic: its records are not made from particular records of x")
    if pairing.private is not None:  # the release's pairing was there, and left out on purpose
        raise ParameterError(f"{', '.join(names)} {verb} each released record with its own original, but "
                             "pairing='none' leaves out the pairing the release's private log holds: use "
                             "pairing='auto'")
    raise ParameterError(f"{', '.join(names)} {verb} each released record with its own original, but z's rows are "
                         "not paired with x's: pass the Release (or the release file with its private log), or "
                         "pairing='position' when z's rows are x's in order")


__all__ = ["CheckedRelease", "EvaluateOptions", "Evaluation", "TableReading", "ages_at", "check_class", "check_named_keys", "check_paired", "check_thresholds", "like_x", "load_rules", "recoded_view"]
