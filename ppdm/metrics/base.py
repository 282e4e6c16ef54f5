"""What every measure returns and how the CLI finds measures by name.

Measures are plain functions ``measure(x, z, ...) -> SomeResult`` where the result
is a dataclass deriving from :class:`MeasureResult`: ``value`` is the headline
number the paper reports, other fields carry per-rule / per-attribute detail
(pandas DataFrames are fine; :meth:`MeasureResult.to_dict` makes them JSON-ready).

For ``ppdm evaluate`` each measure also registers an adapter taking an
:class:`EvaluationContext` under its snake_case name (``rule_accuracy``, ``il1s``...),
with what a reader needs to judge its value: the kind (utility or risk), which direction
is better, the range of the value, what a good value means and, where one is documented,
the threshold an evaluation's verdict uses. Measures are registered here and found by
name through :mod:`ppdm.experiments.evaluation`, which imports every module that
registers them (:mod:`ppdm.metrics` and :mod:`ppdm.attacks`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypedDict, Unpack

import numpy as np
import pandas as pd

from ppdm.data.schema import Schema


def _jsonable(v: Any) -> Any:
    if isinstance(v, pd.DataFrame):
        return [{str(k): _jsonable(x) for k, x in row.items()} for row in v.to_dict(orient="records")]
    if isinstance(v, pd.Series):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, set, frozenset)):
        return [_jsonable(x) for x in v]
    if isinstance(v, np.ndarray):
        return [_jsonable(x) for x in v.tolist()]
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {f.name: _jsonable(getattr(v, f.name)) for f in dataclasses.fields(v)}
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    return str(v)


@dataclass
class MeasureResult:
    """Base of every measure's result: ``value`` is the paper's headline number.

    ``record_level`` names fields that hold one row per record (an attack's estimate of
    every record, a per-record score): they stay available to library users but are left
    out of :meth:`to_dict` and :meth:`details`, so reports and JSON carry aggregates only.
    """

    value: float

    record_level: ClassVar[tuple[str, ...]] = ()

    def _public_fields(self, records: bool) -> list[dataclasses.Field]:
        return [f for f in dataclasses.fields(self) if records or f.name not in self.record_level]

    def to_dict(self, *, records: bool = False) -> dict[str, Any]:
        """A JSON-ready dict of the fields (DataFrames become lists of records); record-level
        fields only with ``records=True``."""
        return {f.name: _jsonable(getattr(self, f.name)) for f in self._public_fields(records)}

    def details(self) -> dict[str, pd.DataFrame]:
        """Tables of per-rule / per-attribute detail, by name (no record-level table)."""
        return {f.name: getattr(self, f.name) for f in self._public_fields(False)
                if isinstance(getattr(self, f.name), pd.DataFrame)}

    def scalars(self) -> dict[str, Any]:
        """The single-valued fields besides ``value`` (numbers, text, flags), by name."""
        out: dict[str, Any] = {}
        for f in self._public_fields(False):
            v = getattr(self, f.name)
            if f.name != "value" and (isinstance(v, (int, float, str, bool, np.generic)) or v is None):
                out[f.name] = _jsonable(v)
        return out


#: records of a Dask ``x`` that CART finds Ψx in, by default
RULE_SAMPLE_ROWS = 100_000


@dataclass
class EvaluationContext:
    """Everything a measure may need when called by name from ``ppdm evaluate``.

    ``x`` is the original table, ``z`` the anonymized one, ``test`` an optional
    held-out table t (pandas DataFrames, or, for tables larger than memory, Dask DataFrames
    partitioned alike: see :mod:`ppdm.metrics.out_of_core`); ``control`` an optional control set of original records that
    were not used to make ``z`` (attack-based risk, Giomi et al. 2023); ``rules`` is
    Ψx (built lazily from ``x`` by CART when absent); ``options`` carries measure
    parameters from the command line.

    ``paired`` says whether row i of ``z`` is the release of row i of ``x`` (a technique
    keeps rows in order; a shuffled release is re-paired through its private pairing before
    measures run). Record-paired measures (record linkage, intruder matching, which
    quasi-identifiers reach ``z`` unchanged) trust row positions only when it is true and the
    tables have as many rows; otherwise they use their pairing-free forms.
    """

    x: pd.DataFrame
    z: pd.DataFrame
    schema: Schema
    test: pd.DataFrame | None = None
    control: pd.DataFrame | None = None
    rules: Any = None
    random_state: int | None = 0
    options: dict[str, Any] = field(default_factory=dict)
    cache: dict[Hashable, Any] = field(default_factory=dict)
    paired: bool = True
    #: z is synthetic: its records are not made from particular records of x (DPCube), so no released
    #: record has an own original to be linked to; copies and near-copies judge the intruder who holds x
    synthetic: bool = False

    @property
    def is_paired(self) -> bool:
        """Whether row positions pair ``x`` and ``z`` record for record (``paired`` and as many rows)."""
        if not self.paired:
            return False
        if any(type(t).__module__.startswith("dask") for t in (self.x, self.z)):
            return True  # partitioned tables: a record-paired measure checks the partitions' lengths
        return len(self.x) == len(self.z)

    def get_rules(self):
        """Ψx: the given rules, or CART rules found in ``x`` (paper 000 §7); for a Dask ``x``,
        in a uniform random sample of ``options["rule_rows"]`` of its records (default
        :data:`RULE_SAMPLE_ROWS`)."""
        if self.rules is None:
            from ppdm.trees.cart import rules_from_cart

            x = self.x
            if type(x).__module__.startswith("dask"):
                from ppdm.metrics._dask import sample_pairs

                k = int(self.options.get("rule_rows", RULE_SAMPLE_ROWS))
                x, _, _ = sample_pairs(x, None, k, int(self.random_state or 0))
            self.rules = rules_from_cart(x, self.schema, random_state=self.random_state)
        return self.rules


MeasureFn = Callable[[EvaluationContext], MeasureResult]


KINDS = ("utility", "risk", "combined")  # combined: a score mixing information loss and risk
DIRECTIONS = ("higher", "lower")

#: the intruder scenarios the risk measures model (docs/measures.md, "Intruder scenarios")
SCENARIOS: dict[str, str] = {
    "quasi-identifiers": "an intruder who knows some people's quasi-identifiers and looks for them in the release",
    "originals": "an intruder who holds the original records, with every attribute the release shares with them, "
                 "and links the release to them: exact joins first, then by distance",
    "sensitive": "an intruder who learns a sensitive attribute from the group of records sharing a person's "
                 "quasi-identifiers (attribute disclosure)",
    "control": "an attacker who attacks the release, measured against a control set of people left out of it",
}
#: why record-to-record measures (record linkage, intruder matching) leave a synthetic release to the
#: pairing-free ones
SYNTHETIC_NOTE = ("z is synthetic: its records are not made from particular originals, so none has its own to "
                  "be found; verbatim_copies and nearest_record_distance judge the intruder who holds x")
#: the scenario of each registered risk measure that models one (a registration may also name it)
SCENARIO_OF: dict[str, str] = {
    **{m: "quasi-identifiers" for m in ("k_anonymity", "k_anonymity_intruder", "sample_uniques", "reidentification_risk",
                                        "suda2", "qi_matching", "release_check")},
    **{m: "sensitive" for m in ("attribute_disclosure", "l_diversity")},
    **{m: "originals" for m in ("record_linkage", "ddr", "idr", "sers")},
    **{m: "control" for m in ("singling_out_univariate", "singling_out_multivariate", "linkability",
                              "inference")},
}


@dataclass(frozen=True)
class MeasureSpec:
    """A registered measure and what a reader needs to judge its value.

    ``direction`` says which values are better ("higher" or "lower"; for a risk measure,
    better protected) or ``None`` when neither is (the text in ``meaning`` then says how to
    read the value); ``value_range`` bounds ``value`` with the default options (``None`` =
    unbounded on that side); ``meaning`` says in plain words what a good value is;
    ``threshold`` is the level an evaluation's verdict holds the value to (``None``: the
    measure is shown but not judged). Thresholds are listed in docs/measures.md.
    """

    name: str
    fn: MeasureFn
    kind: str  # "utility", "risk" or "combined"
    description: str
    needs_class: bool = True
    default: bool = False  # part of the default ``ppdm evaluate`` set
    requires: tuple[str, ...] = ()  # options without which it cannot run; left out of "all"
    direction: str | None = None  # "higher" or "lower" is better (for risk: better protected); None: neither
    value_range: tuple[float | None, float | None] = (None, None)  # bounds of ``value``; None = unbounded
    meaning: str = ""
    threshold: float | None = None
    out_of_core: bool = False  # fn computes the measure exactly when x and z are Dask DataFrames
    scenario: str | None = None  # the intruder scenario it models (a key of SCENARIOS), if any
    paired: bool = False  # compares each released record with its own original by row position only
    #: the option names ``fn`` reads from ``EvaluationContext.options`` (as ``name.key``, ``{name: {key: ...}}``
    #: or a plain ``key``); ``None``: not declared, so any option is accepted for it
    options: tuple[str, ...] | None = None
    #: a schema field (``"edit_rules"``) the measure judges: in the default set only when the schema declares it
    declared_by: str | None = None

    def within(self, value: float) -> bool | None:
        """Whether ``value`` meets ``threshold`` in this measure's direction (``None`` when
        the measure has no threshold or direction, or the value is missing)."""
        if self.threshold is None or self.direction is None or value is None or not math.isfinite(value):
            return None
        return value <= self.threshold if self.direction == "lower" else value >= self.threshold

    def info(self) -> dict[str, Any]:
        """Everything about the measure except its function, JSON-ready."""
        return {"kind": self.kind, "direction": self.direction, "range": list(self.value_range),
                "threshold": self.threshold, "default": self.default, "needs_class": self.needs_class,
                "requires": list(self.requires), "description": self.description, "meaning": self.meaning,
                "out_of_core": self.out_of_core, "scenario": self.scenario,
                "paired": self.paired}


def result_not_judged(result: Any) -> str | None:
    """Why a verdict does not hold this result to its measure's threshold (the intruder scenario
    the measure models does not apply to this release), or ``None`` when it does."""
    why = getattr(result, "not_judged", None)
    if why is None and getattr(result, "result", None) is not None:  # a sampled measure's own result
        why = getattr(result.result, "not_judged", None)
    return str(why) if why else None


def result_interval(result: Any) -> tuple[float, float] | None:
    """The confidence interval (low, high) a result carries for its ``value`` — an attack's,
    a sampled measure's — or ``None`` when it has none (an exact value)."""
    lo, hi = getattr(result, "ci_low", None), getattr(result, "ci_high", None)
    try:
        lo, hi = float(lo), float(hi)  # type: ignore[arg-type]  # None or a non-number raises, caught below
    except (TypeError, ValueError):
        return None
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return None
    return (min(lo, hi), max(lo, hi))


#: outcomes of holding a measured value (and its interval) to a threshold
JUDGEMENTS = ("meets", "misses", "uncertain")


def judge(value: float | None, threshold: float, direction: str,
          interval: tuple[float, float] | None = None) -> str | None:
    """Hold ``value`` to ``threshold`` in ``direction`` ("lower"/"higher" is better).

    Without an interval the value decides: "meets" or "misses". With a confidence
    ``interval`` (low, high) the whole interval must be on one side: "meets" when every
    value in it meets the threshold, "misses" when none does, and "uncertain" when the
    interval straddles the threshold (more measurement, such as more attacks or a larger
    control set, would settle it). ``None`` when the value is missing.
    """
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be 'higher' or 'lower', got {direction!r}")
    if value is None or not math.isfinite(float(value)):
        return None

    def ok(v: float) -> bool:
        return v <= threshold if direction == "lower" else v >= threshold

    if interval is None or not all(v is not None and math.isfinite(float(v)) for v in interval):
        return "meets" if ok(float(value)) else "misses"
    lo, hi = sorted(float(v) for v in interval)
    best, worst = (lo, hi) if direction == "lower" else (hi, lo)
    if ok(worst):
        return "meets"
    if not ok(best):
        return "misses"
    return "uncertain"


MEASURES: dict[str, MeasureSpec] = {}


class MeasureTraits(TypedDict, total=False):
    """What :func:`register_measure` may say of a measure besides its name, kind and description,
    as one typed group of keywords (each optional; the default in brackets, the meaning in
    :class:`MeasureSpec`): ``needs_class`` (True), ``default`` (False), ``requires`` (()),
    ``direction`` (None), ``value_range`` ((None, None)), ``meaning`` (""), ``threshold`` (None),
    ``out_of_core`` (False), ``scenario`` (None), ``paired`` (False), ``options`` (None) and
    ``declared_by`` (None). A type checker holds every call of :func:`register_measure` to these
    names and types; at run time an unknown name is refused as a wrong keyword argument."""

    needs_class: bool
    default: bool
    requires: tuple[str, ...]
    direction: str | None
    value_range: tuple[float | None, float | None]
    meaning: str
    threshold: float | None
    out_of_core: bool
    scenario: str | None
    paired: bool
    options: tuple[str, ...] | list[str] | None
    declared_by: str | None


def register_measure(name: str, *, kind: str, description: str,
                     **traits: Unpack[MeasureTraits]) -> Callable[[MeasureFn], MeasureFn]:
    """Decorator registering ``fn(ctx) -> MeasureResult`` under ``name``; the ``traits`` are the
    keywords of :class:`MeasureTraits` (one group rather than a dozen parameters).

    ``requires`` names options the measure cannot run without (e.g. the perturbation
    matrices of an attack); such a measure runs only when named, never as part of ``all``.
    ``direction`` says whether a higher or a lower ``value`` is better ("higher"/"lower";
    for a risk measure, better protected), ``value_range`` the bounds of ``value``,
    ``meaning`` what a good value means and ``threshold`` the level an evaluation's
    verdict holds the value to (see :class:`MeasureSpec`). ``out_of_core=True`` declares
    that ``fn`` computes the measure exactly, partition by partition, when the context's
    tables are Dask DataFrames; any other measure is computed on a random sample of the
    records, with a confidence interval (:mod:`ppdm.metrics.out_of_core`). ``scenario`` names
    the intruder scenario a risk measure models (a key of :data:`SCENARIOS`; default from
    :data:`SCENARIO_OF`). ``paired=True``
    declares that ``fn`` compares each released record with its own original by row position
    and has no pairing-free form; an evaluation whose z is not paired with x
    (:attr:`EvaluationContext.is_paired`) skips it, saying so, rather than trust row positions.
    ``options`` names every option ``fn`` reads from the context (``ppdm evaluate -p``, a policy
    line's ``options``): an evaluation refuses any other option given for the measure
    (:func:`ppdm.experiments.evaluation.check_measure_options`); ``None`` declares nothing and
    accepts any option. ``declared_by`` names a schema field the measure judges (``"edit_rules"``):
    a default measure then joins the default set only when the schema declares that field
    (:func:`ppdm.experiments.evaluation.declared_in`); named, it runs and is skipped without it.

    A measure that cannot be computed on the table it is given (no numeric attribute, a
    single class in t, ...) raises :class:`ppdm.errors.MeasureNotApplicable`; evaluations
    report it as skipped with that reason.
    """
    unknown = [k for k in traits if k not in MeasureTraits.__annotations__]
    if unknown:  # what Python says of a wrong keyword, as when the traits were parameters
        raise TypeError(f"register_measure() got an unexpected keyword argument {unknown[0]!r}")
    needs_class = traits.get("needs_class", True)
    default = traits.get("default", False)
    requires = traits.get("requires", ())
    direction = traits.get("direction")
    value_range = traits.get("value_range", (None, None))
    meaning = traits.get("meaning", "")
    threshold = traits.get("threshold")
    out_of_core = traits.get("out_of_core", False)
    scenario = traits.get("scenario")
    paired = traits.get("paired", False)
    options = traits.get("options")
    declared_by = traits.get("declared_by")
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if direction not in (None, *DIRECTIONS):
        raise ValueError(f"direction must be 'higher', 'lower' or None, got {direction!r}")
    lo, hi = value_range
    if lo is not None and hi is not None and lo > hi:
        raise ValueError(f"value_range of {name!r} is empty: {value_range!r}")
    if threshold is not None and direction is None:
        raise ValueError(f"measure {name!r} has a threshold but no direction to hold it to")
    scenario = scenario or SCENARIO_OF.get(name)
    if scenario is not None and scenario not in SCENARIOS:
        raise ValueError(f"scenario of {name!r} must be one of {sorted(SCENARIOS)}, got {scenario!r}")

    if isinstance(options, str):
        raise ValueError(f"options of {name!r} must be a tuple of option names, not the text {options!r}")
    declared = None if options is None else tuple(dict.fromkeys(str(o) for o in options))
    missing = [o for o in requires if declared is not None and o not in declared]
    if missing:
        raise ValueError(f"measure {name!r} requires the option {missing[0]!r} but does not declare it in options")

    def deco(fn: MeasureFn) -> MeasureFn:
        MEASURES[name] = MeasureSpec(name, fn, kind, description, needs_class, default, tuple(requires),
                                     direction, (lo, hi), meaning, threshold, bool(out_of_core), scenario,
                                     bool(paired), declared, declared_by)
        return fn

    return deco
