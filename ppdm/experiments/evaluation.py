"""Evaluate one release: find measures by name and run them so that none aborts the rest.

Measures register themselves in :data:`ppdm.metrics.base.MEASURES` when their module is
imported. They live in two packages, :mod:`ppdm.metrics` and :mod:`ppdm.attacks` (attacks
may re-run a technique, so that package sits above the techniques); this module sits above
both, imports every module of each (:func:`load_all_measures`) and resolves names
(:func:`resolve_measures`), so no lower layer has to know a higher one.

:func:`run_measure` decides what happens when a measure fails:

* it raises :class:`~ppdm.errors.MeasureNotApplicable`, or another
  :class:`~ppdm.errors.PPDMError` that says the table does not allow it (a
  :class:`~ppdm.errors.SchemaError`: a single class in z, no numeric attribute, a constant
  column, ...): the measure is **skipped**, its value is missing and the message is kept
  as the reason; the other measures run;
* it raises :class:`~ppdm.errors.ParameterError`: a measure option given by the user is
  wrong; the evaluation stops (the command line exits with code 2) because only the user
  can fix it;
* anything else is a defect of ppdm, not of the table: the evaluation stops with the
  measure's name attached (the command line exits with code 1).

A measure that returns a result without a finite value (NaN, infinity) is skipped too, with
that reason, rather than reported as computed with no value.
"""

from __future__ import annotations

import importlib
import math
import pkgutil
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ppdm.errors import MeasureNotApplicable, ParameterError, PPDMError, ScenarioNotApplicable
from ppdm.metrics.base import MEASURES, EvaluationContext, MeasureResult, MeasureSpec
from ppdm.utils import unknown_name

if TYPE_CHECKING:
    import pandas as pd

    from ppdm.data.schema import Schema

#: packages whose modules register measures, in the order their measures are listed
MEASURE_PACKAGES = ("ppdm.metrics", "ppdm.attacks")


def load_all_measures() -> dict[str, MeasureSpec]:
    """Import every public module of :data:`MEASURE_PACKAGES` so each registers its measures;
    returns the registry."""
    for pkg_name in MEASURE_PACKAGES:
        pkg = importlib.import_module(pkg_name)
        for mod in sorted(m.name for m in pkgutil.iter_modules(pkg.__path__)):
            if not mod.startswith("_"):
                importlib.import_module(f"{pkg_name}.{mod}")
    return MEASURES


def resolve_measures(spec: str | None) -> list[MeasureSpec]:
    """``None`` → the default set; ``"all"`` → every measure that needs no extra option;
    else a comma list of names."""
    load_all_measures()
    if spec is None:
        return [m for m in MEASURES.values() if m.default]
    if spec.strip() == "all":
        return [m for m in MEASURES.values() if not m.requires]
    out = []
    for name in (s.strip() for s in spec.split(",")):
        if not name:
            continue
        if name not in MEASURES:
            raise ParameterError(unknown_name("measure", name, sorted(MEASURES)))
        out.append(MEASURES[name])
    if not out:
        raise ParameterError("no measure named in --measures")
    return out


def declared_in(specs: Iterable[MeasureSpec], schema: Schema) -> list[MeasureSpec]:
    """The default set for ``schema``: a measure that judges a schema declaration (``declared_by``,
    e.g. edit rules) is left out when the schema declares none, instead of being listed as skipped
    in every evaluation."""
    return [s for s in specs if s.declared_by is None or getattr(schema, s.declared_by, None)]


@dataclass
class MeasureOutcome:
    """What one measure gave on one release: its result, or the reason it was skipped."""

    spec: MeasureSpec
    result: MeasureResult | None = None
    reason: str | None = None
    #: skipped because the intruder scenario the measure models does not apply to the release
    not_applicable: bool = False

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def skipped(self) -> bool:
        return self.result is None

    @property
    def value(self) -> float:
        """The headline value; NaN when skipped or undefined."""
        if self.result is None:
            return math.nan
        v = getattr(self.result, "value", None)
        try:
            return math.nan if v is None else float(v)
        except (TypeError, ValueError):
            return math.nan


def skip_reason(error: BaseException) -> str | None:
    """The reason to report when ``error`` means the measure cannot be computed on this
    table, or ``None`` when the error must stop the evaluation (see the module docstring)."""
    if isinstance(error, MeasureNotApplicable):
        return str(error)
    if isinstance(error, PPDMError) and not isinstance(error, ParameterError):
        return str(error)
    return None


#: why a measure comparing records one by one is skipped when z is not paired with x
NOT_PAIRED = ("compares each released record with its own original, but z's rows are not paired with x's: give "
              "the release's private log (--private), or declare z's rows to be x's in order with --pairing position")


def run_measure(spec: MeasureSpec, ctx: EvaluationContext) -> MeasureOutcome:
    """Run one measure; a table that does not allow it gives a skipped outcome."""
    if spec.needs_class and ctx.schema.class_column is None:
        return MeasureOutcome(spec, None, "needs a class column (name it with --class)")
    missing = [o for o in spec.requires if o not in ctx.options]
    if missing:
        return MeasureOutcome(spec, None, f"needs the option {missing[0]} (--param {missing[0]}=...)")
    if spec.paired and not ctx.is_paired:
        return MeasureOutcome(spec, None, NOT_PAIRED)
    try:
        res = spec.fn(ctx)
    except Exception as e:
        reason = skip_reason(e)
        if reason is None:
            if not isinstance(e, PPDMError):
                e.add_note(f"while computing measure {spec.name!r}")
            raise
        return MeasureOutcome(spec, None, " ".join(reason.split()) or type(e).__name__,
                              not_applicable=isinstance(e, ScenarioNotApplicable))
    value = getattr(res, "value", None)
    if not _is_number(value):
        # a result without a number is no measurement: say so instead of "computed, value null"
        return MeasureOutcome(spec, None, f"{spec.name} gives no finite value on these tables "
                                          f"(it came out as {value!r})")
    return MeasureOutcome(spec, res, None)


def _is_number(value: Any) -> bool:
    try:
        return value is not None and not isinstance(value, bool) and math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def evaluate_measures(
    ctx: EvaluationContext,
    specs: Iterable[MeasureSpec],
    *,
    on_measure: Callable[[MeasureSpec], Any] | None = None,
) -> dict[str, MeasureOutcome]:
    """Run every measure of ``specs`` on ``ctx`` (see :func:`run_measure`), in order.

    ``on_measure(spec)`` is called before each measure (progress reporting)."""
    out: dict[str, MeasureOutcome] = {}
    for spec in specs:
        if on_measure is not None:
            on_measure(spec)
        out[spec.name] = run_measure(spec, ctx)
    return out


# ------------------------------------------------------------- the options given
#: options the evaluation itself reads, whichever measures run: the records CART finds Ψx in for a
#: partitioned x (:meth:`ppdm.metrics.base.EvaluationContext.get_rules`) and the CART settings
#: ``ppdm evaluate`` finds Ψx with
EVALUATION_OPTIONS = ("rule_rows", "min_leaf_frac", "max_depth")


def unknown_option(what: str, name: str, known: Iterable[str]) -> str:
    """One line naming an unknown option, a close known name when there is one, and every known one."""
    known = sorted(set(known))
    if not known:
        return f"{what} {name!r} is unknown: it takes no options"
    msg = unknown_name(what, name, known)
    return msg if "; known:" in msg else f"{msg} (known: {', '.join(known)})"


def check_measure_options(specs: Iterable[MeasureSpec], options: Mapping[str, Any]) -> None:
    """Refuse an option no evaluated measure reads, before any measure runs.

    ``NAME.key`` (or ``{NAME: {key: ...}}``) must name a measure of ``specs`` and one of the
    options it declares (:attr:`MeasureSpec.options`); a plain ``key`` must be declared by at
    least one measure of ``specs`` or be an option of the evaluation itself
    (:data:`EVALUATION_OPTIONS`). A measure registered without ``options`` (``None``) declares
    nothing: any ``NAME.key`` is accepted for it, and so is any plain key while it is evaluated
    (it may read it). A typo would otherwise be ignored silently: the measure runs with its
    default and the report looks as if the option had been applied.

    Raises :class:`~ppdm.errors.ParameterError` naming the option and the known ones.
    """
    specs = list(specs)
    by_name = {s.name: s for s in specs}
    open_ended = any(s.options is None for s in specs)
    plain = set(EVALUATION_OPTIONS).union(*(s.options or () for s in specs))

    def check_one(measure: str, key: str, shown: str) -> None:
        spec = by_name.get(measure)
        if spec is None:
            load_all_measures()
            if measure in MEASURES:
                raise ParameterError(f"option {shown!r} is for measure {measure!r}, which this evaluation does not "
                                     "run; add it to the measures (--measures)")
            raise ParameterError(f"option {shown!r}: " + unknown_name("measure", measure, sorted(MEASURES)))
        if spec.options is not None and key not in spec.options:
            raise ParameterError(unknown_option(f"{measure} option", key, spec.options))

    for key, value in options.items():
        key = str(key)
        if "." in key:
            measure, sub = key.split(".", 1)
            check_one(measure, sub, key)
        elif isinstance(value, Mapping) and (key in by_name or key in MEASURES):
            for sub in value:
                check_one(key, str(sub), f"{key}.{sub}")
        elif key not in plain and not open_ended:
            raise ParameterError(unknown_option("option", key, plain))


# ------------------------------------------------------------- the tables measured
def without_identifiers(
    x: pd.DataFrame, schema: Schema, removed: Iterable[str] = ()
) -> tuple[pd.DataFrame, Schema, list[str]]:
    """``x`` without its identifier columns, the schema without them, and their names.

    The identifiers are the schema's and any column named in ``removed`` (the identifiers
    a release's provenance says were removed from it). A release never carries them, a
    technique never sees them (:func:`ppdm.experiments.release.release`), and no measure
    compares them: ``ppdm evaluate`` and ``ppdm compare`` both measure the table without
    them.
    """
    from dataclasses import replace

    from ppdm.data.roles import Roles, apply_roles

    named = set(schema.identifiers) | {str(c) for c in removed}
    drop = [str(c) for c in x.columns if c in named]
    if not drop:
        return x, schema, []
    sch = apply_roles(schema, Roles(identifiers=tuple(c for c in drop if c not in schema.identifiers)),
                      list(x.columns))
    return x.drop(columns=drop), replace(sch, identifiers=[]), drop


def measurement_context(
    x: pd.DataFrame,
    z: pd.DataFrame,
    schema: Schema,
    *,
    test: pd.DataFrame | None = None,
    control: pd.DataFrame | None = None,
    rules: Any = None,
    random_state: int | None = 0,
    options: dict[str, Any] | None = None,
    paired: bool = True,
    synthetic: bool = False,
) -> EvaluationContext:
    """The context every measure of ``ppdm evaluate`` and ``ppdm compare`` computes on.

    Techniques take a table as it was read (dates as dates, codes as text, nullable whole
    numbers); measures compute on numbers. Each table is put in that working form here
    (:func:`ppdm.data.types.working_frame`: a date on its time axis, days since
    1970-01-01; a missing cell as NaN), so a date column is measured as the number it
    stands for by every measure, whichever command asked. ``paired`` says whether row i of
    ``z`` was made from row i of ``x`` (:attr:`EvaluationContext.paired`).
    """
    from ppdm.data.types import working_frame

    def work(df: pd.DataFrame | None) -> pd.DataFrame | None:
        return None if df is None else working_frame(df, schema.numeric)

    return EvaluationContext(x=work(x), z=work(z), schema=schema, test=work(test), control=work(control),  # type: ignore[arg-type]  # x and z are frames, so work returns frames
                             rules=rules, random_state=random_state, options=dict(options or {}),
                             paired=bool(paired), synthetic=bool(synthetic))


def group_reasons(items: Iterable[tuple[str, str]], *, min_shared: int = 30) -> list[tuple[list[str], str]]:
    """``(name, reason)`` pairs grouped so that a reason is said once.

    Equal reasons are grouped; so are reasons that differ only in how they begin (each
    measure naming itself, then the same words: ``inference (income) needs a control set
    ...``, ``linkability needs a control set ...``) when the shared ending is at least
    ``min_shared`` characters long — then the shared ending is the reason given.
    """
    groups: list[tuple[list[str], str]] = []
    for name, reason in items:
        reason = " ".join(str(reason).split())
        for i, (names, text) in enumerate(groups):
            common = text if text == reason else _common_ending(text, reason)
            if text == reason or len(common) >= min_shared:
                groups[i] = ([*names, name], common)
                break
        else:
            groups.append(([name], reason))
    return groups


def _common_ending(a: str, b: str) -> str:
    """The longest ending of ``a`` and ``b`` that starts at a word."""
    n = 0
    while n < min(len(a), len(b)) and a[-1 - n] == b[-1 - n]:
        n += 1
    tail = a[len(a) - n:]
    if n < len(a) and n < len(b) and not tail.startswith(" "):
        cut = tail.find(" ")
        tail = "" if cut < 0 else tail[cut:]
    # a shared ending that starts inside what differs (a percentage's words) is said from the
    # next clause on, so the reason given reads as a sentence
    if n < len(a) and n < len(b):
        clause = tail.find(": ")
        if clause > 0 and tail[:clause].count(")") > tail[:clause].count("("):
            tail = tail[clause + 2:]
    return tail.strip()
