"""The search spaces of ``ppdm recommend``: each technique's declared parameter ranges
(:mod:`ppdm.anonymize.search_space`) after the policy's changes, checked at their ends before
the search starts, and the draws a trial's setting comes from (:func:`suggest` through Optuna,
:func:`random_setting` when the sampler keeps proposing settings already tried).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ppdm.anonymize.registry import TECHNIQUES, _load_all
from ppdm.anonymize.search_space import (
    DEFAULT_CHAINS,
    Choice,
    Integer,
    NotSearchable,
    Param,
    Real,
    SearchSpace,
    build_technique,
    chain_steps,
    parameters_of,
    resolve_column_sets,
    space_of,
)
from ppdm.data.schema import Schema
from ppdm.errors import ParameterError, PPDMError
from ppdm.experiments.evaluation import load_all_measures
from ppdm.experiments.policy import Policy, RiskLine
from ppdm.experiments.recommend.accounting import trial_cost
from ppdm.experiments.recommend.common import setting_key


@dataclass(frozen=True)
class TechniqueSpace:
    """One technique of a search: its parameter distributions after the policy's changes."""

    name: str
    params: Mapping[str, Param]
    fixed: Mapping[str, Any]
    when: Mapping[str, Mapping[str, tuple[Any, ...]]]
    defaults: Mapping[str, Any]
    deterministic: bool
    epsilon: str | None

    def active(self, param: str, chosen: Mapping[str, Any]) -> bool:
        for other, allowed in (self.when.get(param) or {}).items():
            value = chosen.get(other, self.fixed.get(other, self.defaults.get(other)))
            if not any(value == a and type(value) is type(a) for a in allowed):
                return False
        return True

    def describe(self, n_records: int | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, p in self.params.items():
            if isinstance(p, Integer):
                text = f"{p.low} to {p.high_for(n_records)}" + (" (log scale)" if p.log else "")
            else:
                text = p.describe()
            cond = self.when.get(name)
            if cond:
                text += " when " + " and ".join(f"{o} is {' or '.join(map(repr, v))}" for o, v in cond.items())
            out[name] = text
        for name, v in self.fixed.items():
            out[name] = f"fixed at {v!r}"
        return out


def build_spaces(policy: Policy, schema: Schema, n_records: int, table: pd.DataFrame | None = None
                 ) -> tuple[list[TechniqueSpace], dict[str, str]]:
    """The techniques a search tries and their parameter distributions, and the techniques
    left out with the reason (not searchable, does not fit the table, not differentially
    private under a policy that requires it). Every setting at the ends of every range is
    checked by the technique before any work, so an impossible range fails here. With
    ``table``, choices that depend on its values (a ``"unique-valued"`` column set the table
    does not have) are dropped."""
    _load_all()
    explicit = policy.techniques is not None
    chains = [c for c in DEFAULT_CHAINS if all(step in TECHNIQUES for step in chain_steps(c))]
    choices = policy.techniques if policy.techniques is not None else [_Plain(n) for n in [*sorted(TECHNIQUES), *chains]]
    spaces: list[TechniqueSpace] = []
    left_out: dict[str, str] = {}
    for choice in choices:
        space = space_of(choice.name)
        if isinstance(space, NotSearchable):
            left_out[choice.name] = f"not searched: {space.reason}"
            continue
        why = space.missing_need(schema)
        if why is None and policy.epsilon is not None and policy.epsilon.required and space.epsilon is None:
            why = "not differentially private, and the policy requires differential privacy"
        if why is not None:
            if explicit:
                raise ParameterError(f"the policy allows technique {choice.name!r}, but it does not fit this table: {why}")
            left_out[choice.name] = why
            continue
        space = space.fitting(schema, table)  # e.g. no importance="class" without a class column
        params: dict[str, Param] = dict(space.params)
        fixed: dict[str, Any] = dict(space.fixed)
        for pname, over in choice.overrides.items():
            params.pop(pname, None)
            fixed.pop(pname, None)
            if over.kind == "fixed":
                fixed[pname] = over.value
            elif over.kind == "choices":
                params[pname] = Choice(tuple(over.choices))
            else:
                declared = space.params.get(pname)
                whole = isinstance(declared, Integer) or (declared is None and isinstance(over.low, int)
                                                          and isinstance(over.high, int))
                log = over.log if over.log is not None else bool(getattr(declared, "log", False))
                try:
                    params[pname] = (Integer(int(over.low), int(over.high), log) if whole  # type: ignore[arg-type]  # a range override has both ends set
                                     else Real(float(over.low), float(over.high), log))  # type: ignore[arg-type]  # a range override has both ends set
                except ParameterError as e:
                    raise ParameterError(f"the policy's range of {choice.name}.{pname}: {e}") from None
        when = {p: c for p, c in space.when.items() if p in params}
        params = _raise_to_guarantees(params, space, policy, choice.overrides)
        if policy.epsilon is not None and space.epsilon is not None:
            params, fixed = _cap_epsilon(choice.name, space.epsilon, params, fixed, policy.epsilon.at_most)
        # the declared order first (conditions name earlier parameters), then the policy's additions
        order = [p for p in space.params if p in params] + [p for p in params if p not in space.params]
        ts = TechniqueSpace(choice.name, {p: params[p] for p in order}, fixed, when, parameters_of(choice.name),
                            space.deterministic, space.epsilon)
        _check_space(ts, schema, n_records, table)
        spaces.append(ts)
    if not spaces:
        reasons = "; ".join(f"{n}: {r}" for n, r in left_out.items())
        raise ParameterError(f"no technique of the policy fits this table ({reasons})")
    return spaces, left_out


@dataclass(frozen=True)
class _Plain:
    name: str
    overrides: Mapping[str, Any] = field(default_factory=dict)


def _raise_to_guarantees(params: dict[str, Param], space: SearchSpace, policy: Policy,
                         overrides: Mapping[str, Any]) -> dict[str, Param]:
    """A parameter that is a measure's guarantee starts at the value a policy line requiring that
    measure to be 0 names (local suppression's k at the k of a ``k_anonymity`` line at 0), and a
    parameter that bounds a measure's value is kept to the values that guarantee the policy's
    lines on that measure (generalization's l and t by ``l_diversity`` and ``t_closeness`` lines,
    :func:`_bound_to_lines`); a range the policy set itself is left as it is."""
    out = dict(params)
    for pname, (measure, option) in space.guarantees.items():
        dist = out.get(pname)
        if pname in overrides or not isinstance(dist, (Integer, Real)):
            continue
        need = [ln.options.get(option) for ln in policy.risk if ln.measure == measure and ln.direction == "lower"
                and ln.threshold == 0 and isinstance(ln.options.get(option), (int, float))
                and not isinstance(ln.options.get(option), bool)]
        if not need:
            continue
        low: float = max(need)  # type: ignore[type-var, assignment]  # need holds numbers only (filtered above)
        if isinstance(dist, Integer):
            low = int(math.ceil(low))
            out[pname] = Integer(max(dist.low, low), max(dist.high, low), dist.log, None if low > dist.high
                                 else dist.at_most_share)
        else:
            out[pname] = Real(max(dist.low, float(low)), max(dist.high, float(low)), dist.log)
    registry = load_all_measures()
    for pname, measure in space.value_bounds.items():
        dist = out.get(pname)
        if pname not in overrides and dist is not None:
            out[pname] = _bound_to_lines(dist, registry[measure], [ln for ln in policy.risk if ln.measure == measure])
    return out


def _bound_to_lines(dist: Param, spec: Any, lines: Sequence[RiskLine]) -> Param:
    """``dist``, a parameter that bounds measure ``spec``'s value (``SearchSpace.value_bounds``),
    kept to the values that guarantee every line in the measure's better direction: with
    ``l_diversity ≥ 3`` generalization's ``l`` takes 3 or more (a release asked for fewer, or for
    none, meets the line only by chance), with ``t_closeness ≤ 0.2`` its ``t`` 0.2 or less. The
    line's threshold is one of the values, as a k_anonymity line's k starts local suppression's
    range. A line every release meets (at the worst end of the measure's range) changes nothing;
    so does a choice holding no number (the table offers no sensitive attribute: the values that
    would need one were dropped)."""
    higher = spec.direction == "higher"
    worst = spec.value_range[0 if higher else 1]
    need = [float(ln.threshold) for ln in lines if ln.direction == spec.direction
            and (worst is None or (ln.threshold > worst if higher else ln.threshold < worst))]
    if not need:
        return dist
    bound = max(need) if higher else min(need)
    if isinstance(dist, Choice):
        nums = [v for v in dist.values if isinstance(v, (int, float)) and not isinstance(v, bool)]
        if not nums:
            return dist
        whole = all(isinstance(v, int) for v in nums)
        b: float = math.ceil(bound - 1e-9) if higher and whole else math.floor(bound + 1e-9) if whole else bound
        kept = [v for v in nums if (v >= b if higher else v <= b) and v != b]
        return Choice((int(b) if whole else float(b), *kept))
    if isinstance(dist, Integer):
        b = math.ceil(bound - 1e-9) if higher else math.floor(bound + 1e-9)
        return (Integer(max(dist.low, int(b)), max(dist.high, int(b)), dist.log) if higher
                else Integer(min(dist.low, int(b)), min(dist.high, int(b)), dist.log))
    return (Real(max(dist.low, bound), max(dist.high, bound), dist.log) if higher
            else Real(min(dist.low, bound), min(dist.high, bound), dist.log))


def _cap_epsilon(name: str, param: str, params: dict[str, Param], fixed: dict[str, Any],
                 cap: float) -> tuple[dict[str, Param], dict[str, Any]]:
    """The policy's ε cap applied to a differentially private technique's ε parameter."""
    if param in fixed:
        v = fixed[param]
        if not isinstance(v, (int, float)) or isinstance(v, bool) or v > cap:
            raise ParameterError(f"the policy caps ε at {cap:g}, but fixes {name}.{param} at {v!r}")
        return params, fixed
    dist = params.get(param)
    if isinstance(dist, Choice):
        over = [v for v in dist.values if not isinstance(v, (int, float)) or isinstance(v, bool) or v > cap]
        if over:
            raise ParameterError(f"the policy caps ε at {cap:g}, but {name}.{param} may take {over[0]!r}")
    elif isinstance(dist, (Real, Integer)):
        if dist.low > cap:
            raise ParameterError(f"the policy caps ε at {cap:g}, but the range of {name}.{param} starts at "
                                 f"{dist.low:g}")
        params = dict(params)
        params[param] = Real(float(dist.low), float(min(dist.high, cap)), dist.log)
    return params, fixed


def _check_space(ts: TechniqueSpace, schema: Schema, n_records: int, table: pd.DataFrame | None = None) -> None:
    """Build the technique at the ends of every range and with every choice, so a setting the
    technique refuses is found before the search starts."""
    ends: dict[str, list[Any]] = {}
    for p, dist in ts.params.items():
        if isinstance(dist, Choice):
            ends[p] = list(dist.values)
        elif isinstance(dist, Integer):
            ends[p] = [dist.low, dist.high_for(n_records)]
        else:
            ends[p] = [dist.low, dist.high]
    # every parameter at its first value, then each one in turn at its other values
    base = {p: v[0] for p, v in ends.items()}
    settings = [base] + [{**base, p: v} for p, vs in ends.items() for v in vs[1:]]
    for s in settings:
        params = {**ts.fixed, **s}
        try:
            if table is not None:
                params = resolve_column_sets(params, table, schema)
            tech = build_technique(ts.name, params, class_column=schema.class_column, schema=schema, random_state=0)
            tech._validate_params()
        except PPDMError as e:
            shown = ", ".join(f"{k}={v!r}" for k, v in params.items())
            raise ParameterError(f"technique {ts.name!r} refuses {shown or 'its defaults'}: {e}") from None


def suggest(trial: Any, spaces: Sequence[TechniqueSpace], n_records: int, room: float | None = None
            ) -> tuple[TechniqueSpace, dict[str, Any]]:
    """Draw a technique and then its own parameters from an Optuna trial (the parameters of
    technique T are named ``T:param``, so every technique has its own distributions). With
    ``room`` (what a privacy filter leaves for a release's ε counted for replace-one
    neighbours), a differentially private technique's ε range is capped so that it fits, when
    the range reaches that low; the filter still checks the setting drawn."""
    name = trial.suggest_categorical("technique", [s.name for s in spaces])
    ts = next(s for s in spaces if s.name == name)
    chosen: dict[str, Any] = {}
    for p, dist in ts.params.items():
        if not ts.active(p, chosen):
            continue
        key = f"{name}:{p}"
        if isinstance(dist, Choice):
            chosen[p] = trial.suggest_categorical(key, list(dist.values))
        elif isinstance(dist, Integer):
            chosen[p] = int(trial.suggest_int(key, dist.low, dist.high_for(n_records), log=dist.log))
        else:
            high = dist.high
            if room is not None and p == ts.epsilon:
                # counted twice unless stated for replace-one neighbours (not known yet: the larger count)
                twice = chosen.get("neighbouring", ts.fixed.get("neighbouring", ts.defaults.get("neighbouring")))
                fit = room / (1.0 if twice == "replace" else 2.0) * (1.0 - 1e-9)  # a hair under: rounding
                if dist.low <= fit < high:
                    high = fit
            chosen[p] = float(trial.suggest_float(key, dist.low, high, log=dist.log))
    return ts, {**ts.fixed, **chosen}


def cheapest_cost(ts: TechniqueSpace, score_epsilon: float) -> float | None:
    """The least a trial of ``ts`` can be charged (its smallest ε, counted once when it can be
    stated for replace-one neighbours, plus its scores); ``None`` without an ε."""
    if ts.epsilon is None:
        return None
    dist = ts.params.get(ts.epsilon)
    if ts.epsilon in ts.fixed or dist is None:
        eps = ts.fixed.get(ts.epsilon, ts.defaults.get(ts.epsilon))
    elif isinstance(dist, Choice):
        eps = min((v for v in dist.values if isinstance(v, (int, float)) and not isinstance(v, bool)), default=None)
    else:
        eps = dist.low
    nb = ts.params.get("neighbouring")
    replace_ok = (isinstance(nb, Choice) and "replace" in nb.values) or \
        ts.fixed.get("neighbouring", ts.defaults.get("neighbouring")) == "replace"
    terms = trial_cost(ts.name, {ts.epsilon: eps, "neighbouring": "replace" if replace_ok else "add-remove"},
                       score_epsilon) if isinstance(eps, (int, float)) else None
    return None if terms is None else math.fsum(terms)


def random_setting(spaces: Sequence[TechniqueSpace], rng: np.random.Generator, n_records: int) -> dict[str, Any]:
    """A technique and its parameters drawn uniformly (log-uniformly on log scales), named as
    :func:`suggest` names them: what a search tries when its sampler keeps proposing settings
    it has tried."""
    ts = spaces[int(rng.integers(len(spaces)))]
    out: dict[str, Any] = {"technique": ts.name}
    chosen: dict[str, Any] = {}
    for p, dist in ts.params.items():
        if ts.active(p, chosen):
            chosen[p] = out[f"{ts.name}:{p}"] = _draw(dist, rng, n_records)
    return out


def neighbour_setting(ts: TechniqueSpace, params: Mapping[str, Any], rng: np.random.Generator,
                      n_records: int) -> dict[str, Any] | None:
    """A setting of ``ts`` one step from ``params``: one of its searched parameters drawn again,
    the others kept (a parameter that only the changed one makes active is drawn), named as
    :func:`suggest` names them; ``None`` when ``ts`` searches nothing.

    A choice takes another of its values; a number is drawn within a fifth of its range (of its
    logarithm on a log scale) around its value. This is the one-exchange neighbourhood of local
    search in algorithm configuration (SMAC; Hutter, Hoos & Leyton-Brown 2011): it reaches
    a setting that differs from a good one in a single choice, such as another mode of the last
    step of a chain, which a sampler that models each region by its best trials rarely proposes."""
    active = [p for p in ts.params if p in params and ts.active(p, params)]
    if not active:
        return None
    change = active[int(rng.integers(len(active)))]
    out: dict[str, Any] = {"technique": ts.name}
    chosen: dict[str, Any] = {}
    for p, dist in ts.params.items():
        if not ts.active(p, chosen):
            continue
        if p == change:
            v: Any = _step(dist, params[p], rng, n_records)
        elif p in params:
            v = params[p]
        else:
            v = _draw(dist, rng, n_records)
        chosen[p] = out[f"{ts.name}:{p}"] = v
    return out


#: how far a neighbour's number lies from its setting's at most, as a share of its range
NEIGHBOUR_SPAN = 0.2


def _step(dist: Param, value: Any, rng: np.random.Generator, n_records: int) -> Any:
    if isinstance(dist, Choice):
        others = [v for v in dist.values if not (v == value and type(v) is type(value))]
        return others[int(rng.integers(len(others)))] if others else value
    lo, hi = (dist.low, dist.high_for(n_records)) if isinstance(dist, Integer) else (dist.low, dist.high)
    to, back = (math.log, math.exp) if dist.log and lo > 0 else (float, float)
    a, b = to(lo), to(hi)
    c = to(min(max(value, lo), hi))
    w = NEIGHBOUR_SPAN * (b - a)
    drawn = back(rng.uniform(max(a, c - w), min(b, c + w)))
    if isinstance(dist, Integer):
        v = int(np.clip(round(drawn), lo, hi))
        if v == value and hi > lo:  # a whole number moves at least one step
            v = value + 1 if (value < hi and (value == lo or rng.random() < 0.5)) else value - 1
        return v
    return float(min(max(drawn, lo), hi))


def _draw(dist: Param, rng: np.random.Generator, n_records: int) -> Any:
    if isinstance(dist, Choice):
        return dist.values[int(rng.integers(len(dist.values)))]
    if isinstance(dist, Integer):
        hi = dist.high_for(n_records)
        if dist.log:  # each whole number gets the stretch of the log scale that rounds to it
            drawn = math.exp(rng.uniform(math.log(max(dist.low - 0.5, 1e-9)), math.log(hi + 0.5)))
            return int(np.clip(round(drawn), dist.low, hi))
        return int(rng.integers(dist.low, hi + 1))
    return float(math.exp(rng.uniform(math.log(dist.low), math.log(dist.high))) if dist.log
                 else rng.uniform(dist.low, dist.high))


def setting_params(ts: TechniqueSpace, setting: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters a setting named as :func:`suggest` names them gives its technique, the
    technique's fixed ones included."""
    return {**ts.fixed, **{k.split(":", 1)[1]: v for k, v in setting.items() if k != "technique"}}


def untried_setting(spaces: Sequence[TechniqueSpace], rng: np.random.Generator, n_records: int, seen: Mapping[str, int],
             draws: int = 200) -> dict[str, Any] | None:
    """A random setting that is not a deterministic setting already tried, or ``None``."""
    for _ in range(draws):
        setting = random_setting(spaces, rng, n_records)
        ts = next(s for s in spaces if s.name == setting["technique"])
        if not ts.deterministic or setting_key(ts.name, setting_params(ts, setting)) not in seen:
            return setting
    return None
