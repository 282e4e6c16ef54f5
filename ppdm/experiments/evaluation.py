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
"""

from __future__ import annotations

import importlib
import math
import pkgutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from ppdm.errors import MeasureNotApplicable, ParameterError, PPDMError
from ppdm.metrics.base import MEASURES, EvaluationContext, MeasureResult, MeasureSpec

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
            raise ParameterError(f"unknown measure {name!r}; known: {', '.join(sorted(MEASURES))}")
        out.append(MEASURES[name])
    if not out:
        raise ParameterError("no measure named in --measures")
    return out


@dataclass
class MeasureOutcome:
    """What one measure gave on one release: its result, or the reason it was skipped."""

    spec: MeasureSpec
    result: MeasureResult | None = None
    reason: str | None = None

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
    if spec.paired and not getattr(ctx, "paired", True):
        return MeasureOutcome(spec, None, NOT_PAIRED)
    try:
        res = spec.fn(ctx)
    except Exception as e:
        reason = skip_reason(e)
        if reason is None:
            if not isinstance(e, PPDMError):
                e.add_note(f"while computing measure {spec.name!r}")
            raise
        return MeasureOutcome(spec, None, " ".join(reason.split()) or type(e).__name__)
    return MeasureOutcome(spec, res, None)


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
