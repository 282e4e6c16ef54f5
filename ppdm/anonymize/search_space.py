"""What a search may try with each technique: the declared ranges of its parameters.

Every registered technique declares a class attribute ``search_space``: either a
:class:`SearchSpace` (the parameters a search varies, their ranges, the conditions under
which a parameter matters, what the table must offer) or :class:`NotSearchable` with the
reason a search should not try it. ``ppdm recommend``
(:mod:`ppdm.experiments.recommend`) reads nothing else about a technique, so a new
technique becomes searchable by declaring, for example::

    search_space = SearchSpace({"level": Real(0.01, 0.5, log=True)})

The ranges are where a data owner would look, not every value the technique accepts:
a policy file may narrow or widen them, or fix a parameter
(``docs/recommend.md``). Nothing here imports an optimisation library; the search turns
these declarations into its own distributions.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ppdm.data.schema import Schema
from ppdm.errors import ParameterError

#: what a technique may need from the table (``SearchSpace.needs``)
NEEDS = {
    "numeric": "a numeric attribute",
    "categorical": "a categorical attribute",
    "class": "a class column",
    "keys": "declared quasi-identifiers",
    "sensitive": "declared sensitive attributes",
    "unique-valued": "a numeric attribute on which many records have a value of their own",
    "numeric-keys": "a numeric quasi-identifier other than a date",
    "date-keys": "a date quasi-identifier",
}

#: records unique on one numeric attribute alone, above this share, make it ``"unique-valued"``
#: (the share at which the release gate warns about a pass-through column, see
#: :class:`ppdm.metrics.release_check.GateThresholds`)
UNIQUE_VALUED_SHARE = 0.05
#: named column sets a search space may offer for a technique's ``columns`` parameter, resolved on
#: the table a release is made from (:func:`resolve_column_sets`)
COLUMN_SETS = {
    "unique-valued": "the numeric attributes, other than the keys, the class and the weight, on which more than "
                     f"{UNIQUE_VALUED_SHARE:.0%} of the records have a value no other record has: what lets "
                     "an intruder single a record out from one value (a register weight, an exact income)",
}


@dataclass(frozen=True)
class Real:
    """A real parameter in ``[low, high]``; ``log`` samples its logarithm uniformly (for
    parameters whose effect is multiplicative, such as a noise level or a privacy budget)."""

    low: float
    high: float
    log: bool = False

    def __post_init__(self) -> None:
        _check_bounds(self.low, self.high, self.log)

    def describe(self) -> str:
        return f"{_num(self.low)} to {_num(self.high)}" + (" (log scale)" if self.log else "")


@dataclass(frozen=True)
class Integer:
    """A whole-number parameter in ``[low, high]``; ``log`` as for :class:`Real`.

    ``at_most_share`` caps ``high`` at that share of the records the technique is fitted on
    (a group size k of MDAV can be at most half the records)."""

    low: int
    high: int
    log: bool = False
    at_most_share: float | None = None

    def __post_init__(self) -> None:
        for v in (self.low, self.high):
            if isinstance(v, bool) or not isinstance(v, int):
                raise ParameterError(f"an Integer range needs whole numbers, got {v!r}")
        _check_bounds(self.low, self.high, self.log)
        if self.at_most_share is not None and not 0 < self.at_most_share <= 1:
            raise ParameterError(f"at_most_share must lie in (0, 1], got {self.at_most_share!r}")

    def high_for(self, n_records: int | None) -> int:
        """The upper end for a table of ``n_records`` records (never below ``low``)."""
        if self.at_most_share is None or n_records is None:
            return self.high
        return max(self.low, min(self.high, int(math.floor(self.at_most_share * n_records))))

    def describe(self) -> str:
        cap = f", at most {self.at_most_share:g} of the records" if self.at_most_share is not None else ""
        return f"{self.low} to {self.high}" + (" (log scale)" if self.log else "") + cap


@dataclass(frozen=True)
class Choice:
    """A parameter taking one of ``values`` (text, numbers, booleans or ``None``)."""

    values: tuple[Any, ...]

    def __post_init__(self) -> None:
        vals = tuple(self.values)
        if not vals:
            raise ParameterError("a Choice needs at least one value")
        for v in vals:
            if not (v is None or isinstance(v, (str, int, float, bool))):
                raise ParameterError(f"a Choice holds text, numbers, booleans or None, got {v!r}")
        if len(set(map(repr, vals))) != len(vals):
            raise ParameterError(f"a Choice lists a value twice: {vals!r}")
        object.__setattr__(self, "values", vals)

    def describe(self) -> str:
        return "one of " + ", ".join(map(repr, self.values))


Param = Real | Integer | Choice


@dataclass(frozen=True)
class SearchSpace:
    """The parameters a search varies for one technique.

    Parameters
    ----------
    params:
        Parameter name → :class:`Real`, :class:`Integer` or :class:`Choice`, in the order
        they are drawn (a parameter named in ``when`` is drawn before those depending on it).
    when:
        Parameter name → ``{other parameter: allowed values}``: the parameter is varied only
        when the other one takes one of those values (otherwise the technique's default is
        used), e.g. ``{"p_class": {"class_mode": ("probabilistic",)}}``.
    fixed:
        Parameters every trial sets to the same value (a setting the search must not
        change, such as the neighbouring relation of a differential-privacy guarantee).
    needs:
        What the table must offer for the technique to fit it: any of ``"numeric"``,
        ``"categorical"`` (attributes of that type), ``"class"`` (a class column), ``"keys"``
        (declared quasi-identifiers), ``"sensitive"`` (declared sensitive attributes other than
        the keys). A technique that does not fit is left out of a search.
    epsilon:
        The parameter that is the ε of the technique's differential-privacy guarantee; a
        policy's ε cap bounds it.
    deterministic:
        The release is a function of the table and the parameters alone (no random draw), so
        a search never needs to try the same parameters twice.
    guarantees:
        Parameter name → ``(measure, option)``: the parameter is the guarantee a risk measure
        checks with that option (local suppression's ``k`` is the ``k`` of ``k_anonymity``).
        When a policy requires the measure to be 0 at option value K, values below K cannot
        meet it, so the search starts the parameter's range at K.
    value_bounds:
        Parameter name → measure: the parameter is a bound the release guarantees on the
        measure's value itself (generalization's ``l`` is the fewest distinct sensitive values
        ``l_diversity`` measures, its ``t`` the largest distance ``t_closeness`` measures). A
        policy line on that measure in its better direction at L leaves the search the values
        that guarantee it (at least L, or at most L), and L itself.
    value_needs:
        Parameter name → ``{choice value: need}``: a value of a :class:`Choice` that only a
        table offering the need (a key of ``needs``' vocabulary) allows, e.g. local
        suppression's ``importance="class"``; a search drops it on other tables.
    param_needs:
        Parameter name → need: the parameter only acts on a table offering the need, and a
        search leaves it at the technique's default on other tables (recoding's number of
        intervals cuts numeric keys; on a table whose keys are dates and categories the
        technique refuses it as a parameter it would ignore).
    """

    params: Mapping[str, Param] = field(default_factory=dict)
    when: Mapping[str, Mapping[str, tuple[Any, ...]]] = field(default_factory=dict)
    fixed: Mapping[str, Any] = field(default_factory=dict)
    needs: tuple[str, ...] = ()
    epsilon: str | None = None
    deterministic: bool = False
    guarantees: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    value_needs: Mapping[str, Mapping[Any, str]] = field(default_factory=dict)
    value_bounds: Mapping[str, str] = field(default_factory=dict)
    param_needs: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", dict(self.params))
        object.__setattr__(self, "when", {k: {o: tuple(v) for o, v in dict(c).items()}
                                          for k, c in dict(self.when).items()})
        object.__setattr__(self, "fixed", dict(self.fixed))
        object.__setattr__(self, "needs", tuple(self.needs))
        for name, p in self.params.items():
            if not isinstance(p, (Real, Integer, Choice)):
                raise ParameterError(f"search space parameter {name!r} must be a Real, Integer or Choice, got {p!r}")
        bad = [n for n in self.needs if n not in NEEDS]
        if bad:
            raise ParameterError(f"unknown need {bad[0]!r}; known: {', '.join(NEEDS)}")
        object.__setattr__(self, "value_needs", {k: dict(v) for k, v in dict(self.value_needs).items()})
        for name, per in self.value_needs.items():
            choice = self.params.get(name)
            if not isinstance(choice, Choice) or any(v not in choice.values for v in per):
                raise ParameterError(f"value needs of {name!r} must name values of a Choice the space varies")
            bad = [n for n in per.values() if n not in NEEDS]
            if bad:
                raise ParameterError(f"unknown need {bad[0]!r}; known: {', '.join(NEEDS)}")
        order = list(self.params)
        for name, cond in self.when.items():
            if name not in self.params:
                raise ParameterError(f"condition on {name!r}, which the search space does not vary")
            for other in cond:
                if other not in self.params and other not in self.fixed:
                    raise ParameterError(f"condition of {name!r} names {other!r}, which is neither varied nor fixed")
                if other in self.params and order.index(other) > order.index(name):
                    raise ParameterError(f"{other!r} must come before {name!r}, whose condition names it")
        object.__setattr__(self, "guarantees", {k: (str(m), str(o)) for k, (m, o) in dict(self.guarantees).items()})
        bad = [k for k in self.guarantees if not isinstance(self.params.get(k), (Integer, Real))]
        if bad:
            raise ParameterError(f"guarantee on {bad[0]!r}, which the search space does not vary over a range")
        object.__setattr__(self, "value_bounds", {k: str(m) for k, m in dict(self.value_bounds).items()})
        object.__setattr__(self, "param_needs", {k: str(n) for k, n in dict(self.param_needs).items()})
        bad = [k for k, n in self.param_needs.items() if k not in self.params or n not in NEEDS]
        if bad:
            raise ParameterError(f"the need of {bad[0]!r} must name a parameter the space varies and a known need")
        bad = [k for k in self.value_bounds if k not in self.params]
        if bad:
            raise ParameterError(f"value bound on {bad[0]!r}, which the search space does not vary")
        both = sorted(set(self.params) & set(self.fixed))
        if both:
            raise ParameterError(f"parameter {both[0]!r} is both varied and fixed")
        if self.epsilon is not None and self.epsilon not in self.params and self.epsilon not in self.fixed:
            raise ParameterError(f"the ε parameter {self.epsilon!r} is neither varied nor fixed")

    def active(self, name: str, chosen: Mapping[str, Any]) -> bool:
        """Whether parameter ``name`` is varied given the values ``chosen`` so far."""
        cond = self.when.get(name)
        if not cond:
            return True
        for other, allowed in cond.items():
            value = chosen.get(other, self.fixed.get(other))
            if not any(_same(value, a) for a in allowed):
                return False
        return True

    def missing_need(self, schema: Schema) -> str | None:
        """Why the technique does not fit a table with ``schema`` (``None``: it fits)."""
        have = _offers(schema)
        lacking = [NEEDS[n] for n in self.needs if not have[n]]
        return f"needs {' and '.join(lacking)}" if lacking else None

    def fitting(self, schema: Schema, table: Any = None) -> SearchSpace:
        """This space without the choice values the table with ``schema`` does not allow
        (``value_needs``) and without the parameters that would not act on it (``param_needs``);
        a choice left with one value becomes fixed. Needs that depend on the
        values (``"unique-valued"``) are judged on ``table`` when it is given, and assumed met
        otherwise."""
        have = _offers(schema, table)
        params = dict(self.params)
        fixed = dict(self.fixed)
        for name, per in self.value_needs.items():
            p = params[name]
            assert isinstance(p, Choice)
            keep = tuple(v for v in p.values if have.get(per.get(v, ""), True))
            if keep == p.values:
                continue
            del params[name]
            if len(keep) > 1:
                params[name] = Choice(keep)
            elif keep:
                fixed[name] = keep[0]
        for name, need in self.param_needs.items():
            if not have.get(need, True):
                params.pop(name, None)
        if params == self.params:
            return self
        order = [n for n in self.params if n in params]
        when = {n: c for n, c in self.when.items() if n in params}
        return SearchSpace({n: params[n] for n in order}, when=when, fixed=fixed, needs=self.needs,
                           epsilon=self.epsilon, deterministic=self.deterministic,
                           guarantees={n: g for n, g in self.guarantees.items() if n in params},
                           value_needs={n: v for n, v in self.value_needs.items() if n in params},
                           value_bounds={n: m for n, m in self.value_bounds.items() if n in params},
                           param_needs={n: m for n, m in self.param_needs.items() if n in params})

    def describe(self) -> dict[str, str]:
        """Each varied parameter with its range in words (for listings and reports)."""
        out = {}
        for name, p in self.params.items():
            text = p.describe()
            cond = self.when.get(name)
            if cond:
                text += " when " + " and ".join(f"{o} is {' or '.join(map(repr, v))}" for o, v in cond.items())
            out[name] = text
        return out


@dataclass(frozen=True)
class NotSearchable:
    """Declares that a search does not try this technique, and why."""

    reason: str

    def __post_init__(self) -> None:
        if not str(self.reason).strip():
            raise ParameterError("NotSearchable needs a reason")


def search_space_of(cls: type) -> SearchSpace | NotSearchable:
    """The ``search_space`` a technique class declares; a technique without one is refused,
    naming it (every registered technique must declare one)."""
    space = getattr(cls, "search_space", None)
    if not isinstance(space, (SearchSpace, NotSearchable)):
        name = getattr(cls, "method_name", cls.__name__)
        raise ParameterError(f"technique {name!r} declares no search_space (a SearchSpace, or NotSearchable with "
                             "the reason it is not searched)")
    return space


# --------------------------------------------------------------------------- chains
#: how a chain of techniques is written: each step on the release of the one before
CHAIN_SEP = ">"
#: the chains a search tries by default, when their techniques are registered and fit the table:
#: the statistics office's workflow of recoding key variables and suppressing what stays rare,
#: with or without microaggregation of the numeric attributes the recoding leaves as numbers
#: (sdcMicro's advice for continuous variables; local suppression comes last, so its k holds)
DEFAULT_CHAINS = ("recode>local-suppression", "recode>mdav>local-suppression")


def chain_steps(name: str) -> list[str]:
    """The techniques of ``name`` in order (one for a plain technique name)."""
    return [part.strip() for part in str(name).split(CHAIN_SEP)]


def canonical_name(name: str) -> str:
    """``"recode > local-suppression"`` as ``"recode>local-suppression"``."""
    return CHAIN_SEP.join(chain_steps(name))


def _offers(schema: Schema, table: Any = None) -> dict[str, bool]:
    return {
        "numeric": bool([c for c in schema.numeric if c != schema.class_column]),
        "categorical": bool([c for c in schema.categorical if c != schema.class_column]),
        "class": schema.class_column is not None,
        "keys": bool(schema.quasi_identifiers),
        "sensitive": bool([c for c in schema.sensitive if c not in schema.quasi_identifiers]),
        "unique-valued": True if table is None else bool(unique_valued(table, schema)),
        "numeric-keys": bool([c for c in schema.quasi_identifiers if c in schema.numeric and c not in schema.dates]),
        "date-keys": bool([c for c in schema.quasi_identifiers if c in schema.dates]),
    }


def unique_valued(table: Any, schema: Schema) -> list[str]:
    """The ``"unique-valued"`` column set of ``table`` (see :data:`COLUMN_SETS`), in table order.

    A value is counted once per record that has it; a missing value is never unique."""
    skip = {schema.class_column, schema.weight, *schema.quasi_identifiers}
    out = []
    n = len(table)
    for c in schema.numeric:
        if c in skip or c not in table.columns or not n:
            continue
        counts = table[c].value_counts(dropna=True)
        if int((counts == 1).sum()) > UNIQUE_VALUED_SHARE * n:
            out.append(c)
    return out


def resolve_column_sets(params: Mapping[str, Any], table: Any, schema: Schema) -> dict[str, Any]:
    """``params`` with every ``columns`` (or chain ``step.columns``) parameter that names a
    column set (:data:`COLUMN_SETS`) replaced by that set's columns on ``table``. A set that is
    empty on the table is refused: the technique would have nothing to work on."""
    out = dict(params)
    for name, value in params.items():
        if name.rsplit(".", 1)[-1] != "columns" or not isinstance(value, str) or value not in COLUMN_SETS:
            continue
        cols = unique_valued(table, schema)
        if not cols:
            raise ParameterError(f"{name}={value!r}: the table has no such column ({COLUMN_SETS[value]})")
        out[name] = cols
    return out


def space_of(name: str) -> SearchSpace | NotSearchable:
    """The search space of a technique or of a chain of techniques (``"recode>local-suppression"``).

    A chain's parameters are its steps' parameters named ``step.param``; it needs what any step
    needs, is deterministic when every step is, and is not searched when a step is not. An
    unknown technique raises :class:`ParameterError`."""
    from ppdm.anonymize.registry import get_technique

    steps = chain_steps(name)
    if len(steps) == 1:
        return search_space_of(get_technique(steps[0]))
    if len(set(steps)) != len(steps):
        raise ParameterError(f"chain {name!r} names a technique twice")
    params: dict[str, Param] = {}
    when: dict[str, dict[str, tuple[Any, ...]]] = {}
    fixed: dict[str, Any] = {}
    guarantees: dict[str, tuple[str, str]] = {}
    value_needs: dict[str, dict[Any, str]] = {}
    value_bounds: dict[str, str] = {}
    param_needs: dict[str, str] = {}
    needs: list[str] = []
    eps = None
    det = True
    for step in steps:
        sp = search_space_of(get_technique(step))
        if isinstance(sp, NotSearchable):
            return NotSearchable(f"its step {step!r} is not searched: {sp.reason}")
        params.update({f"{step}.{p}": d for p, d in sp.params.items()})
        fixed.update({f"{step}.{p}": v for p, v in sp.fixed.items()})
        when.update({f"{step}.{p}": {f"{step}.{o}": v for o, v in c.items()} for p, c in sp.when.items()})
        guarantees.update({f"{step}.{p}": g for p, g in sp.guarantees.items()})
        value_needs.update({f"{step}.{p}": dict(v) for p, v in sp.value_needs.items()})
        value_bounds.update({f"{step}.{p}": m for p, m in sp.value_bounds.items()})
        param_needs.update({f"{step}.{p}": n for p, n in sp.param_needs.items()})
        needs.extend(n for n in sp.needs if n not in needs)
        if sp.epsilon is not None and eps is None:
            eps = f"{step}.{sp.epsilon}"
        det = det and sp.deterministic
    return SearchSpace(params, when=when, fixed=fixed, needs=tuple(needs), epsilon=eps, deterministic=det,
                       guarantees=guarantees, value_needs=value_needs, value_bounds=value_bounds,
                       param_needs=param_needs)


def parameters_of(name: str) -> dict[str, Any]:
    """Every parameter of a technique (or ``step.param`` of a chain) with its default."""
    from ppdm.anonymize.registry import get_technique, technique_params

    steps = chain_steps(name)
    if len(steps) == 1:
        return technique_params(get_technique(steps[0]))
    return {f"{step}.{p}": v for step in steps for p, v in technique_params(get_technique(step)).items()}


def build_technique(name: str, params: Mapping[str, Any] | None = None, *, class_column: str | None = None,
                    schema: Any = None, random_state: Any = None) -> Any:
    """The technique (or the composition of a chain's techniques, each on the release of the one
    before) with ``params`` (``step.param`` for a chain), unfitted."""
    from ppdm.anonymize.registry import make_technique

    steps = chain_steps(name)
    if len(steps) == 1:
        return make_technique(steps[0], class_column=class_column, schema=schema, random_state=random_state,
                              params=dict(params or {}))
    from ppdm.anonymize.composition import make_composition

    return make_composition(steps, params=dict(params or {}), class_column=class_column, schema=schema,
                            random_state=random_state)


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b if isinstance(a, bool) or isinstance(b, bool) else a == b


def _num(v: float) -> str:
    return f"{v:g}"


def _check_bounds(low: float, high: float, log: bool) -> None:
    for v in (low, high):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ParameterError(f"a range needs finite numbers, got {v!r}")
    if low > high:
        raise ParameterError(f"a range's low end {low!r} is above its high end {high!r}")
    if log and low <= 0:
        raise ParameterError(f"a log-scale range must stay above 0, got low={low!r}")


__all__ = ["CHAIN_SEP", "COLUMN_SETS", "Choice", "DEFAULT_CHAINS", "Integer", "NEEDS", "NotSearchable", "Param", "Real", "SearchSpace",
           "build_technique", "canonical_name", "chain_steps", "parameters_of", "resolve_column_sets", "search_space_of", "space_of",
           "unique_valued"]
