"""The release that meets a risk policy at the least loss of utility (``ppdm recommend``).

A data owner states a :class:`~ppdm.experiments.policy.Policy` — risk lines every release
must meet, the utility measures that decide among those that do, the techniques allowed —
and :func:`recommend` searches techniques × parameters for the best release:

1. The table is split once into a **training split**, from which every trial's release is
   made, and a **control split** of held-out records (``holdout``, half by default, as
   ``ppdm anonymize --holdout`` does): the attacks' control set (Giomi et al. 2023) and the
   test records of the prediction measures.
2. An Optuna study searches the techniques' declared parameter ranges
   (:mod:`ppdm.anonymize.search_space`, narrowed or widened by the policy): a conditional
   search space (a technique, then its own parameters), a multi-objective TPE sampler
   minimising (risk, utility loss), and one named constraint per policy line, so the sampler
   learns where the policy is met. Studies are stored in SQLite and can be resumed.
3. Each **trial** makes its release on the training split through
   :func:`ppdm.experiments.release.release` (roles, identifiers, rounding, release check),
   measures every risk line against the control split with its confidence interval and judges
   it with :func:`ppdm.metrics.base.judge` — a line is met only when the whole interval is
   within it — and measures the policy's utility. A trial of a differentially private
   technique is judged differently: by its ε and by Laplace-noised utility scores alone, never
   by exact measurements on the records, so that the ε its release claims covers the whole
   search (:mod:`ppdm.experiments.recommend.accounting`).
4. Among the trials that met every line, the **front** holds those no other trial beats on
   both risk and utility loss; the **winner** loses the least utility (weights), or wins on
   the policy's priority order.
5. A differentially private winner's **recommended release** is its trial's own release
   (made again from its seed; a fresh draw, counted, with ``refit=True``), published when the
   policy's ε line meets the total the search spent. Any other winner's technique and
   parameters make the **recommended release** with a fresh seed
   (OS entropy unless a seed is given): by default on the training split again, measured
   against the control split like every trial, and kept only when it meets the policy itself
   (a new draw of a random technique is a new release); with ``refit=True`` on the whole
   table, whose risk then cannot be measured against a control set (see
   ``docs/recommend.md``).

When no trial meets the policy, :attr:`RecommendResult.unmet` says which lines no trial met
and how close the best came, and no release is made. Trials run in this process
(``n_jobs=1``), in worker processes, or on any :class:`concurrent.futures.Executor` such as a
Dask cluster's (``distributed.Client.get_executor()``). A time budget and a trial budget are
honoured; progress goes to :mod:`ppdm.progress`.

The study file is private, like the control set: it holds the seed of the hold-out split,
so with the original table it tells who is in the release.
"""

from __future__ import annotations

import json
import math
import os
import re
import secrets
import time
import warnings
from collections.abc import Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from ppdm import progress
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
from ppdm.data.provenance import table_sha256
from ppdm.data.roles import Roles, resolve_schema
from ppdm.data.schema import Schema
from ppdm.errors import ParameterError, PPDMError
from ppdm.experiments.evaluation import load_all_measures, run_measure
from ppdm.experiments.policy import RISK_AXIS_MAX, Policy, RiskLine, load_policy, parse_policy
from ppdm.experiments.recommend.accounting import (
    DEFAULT_SCORE_EPSILON,
    EX_POST,
    NOT_USED,
    NOT_USED_TRIAL,
    Accounting,
    PrivacyFilter,
    add_release,
    counted_epsilon,
    epsilon_of,
    judge_epsilon,
    neighbouring_of,
    noisy_scores,
    over_budget,
    provenance_privacy,
    risk_of_epsilon,
    score_rule,
    search_accounting,
    searched_privacy,
    trial_cost,
)
from ppdm.experiments.recommend.pairing import pair_with_table
from ppdm.experiments.recommend.repeats import MeasuredReleases, release_digest
from ppdm.experiments.recommend.study import make_private
from ppdm.experiments.release import Release, ReleaseRefused, holdout_mask, release, save_release
from ppdm.metrics.base import SCENARIOS, EvaluationContext, result_not_judged
from ppdm.metrics.judgement import NOT_MEASURED_MARGIN, judge_line, read_entry, result_lower_bound
from ppdm.metrics.release_check import GateOptions

STUDY_NAME = "ppdm-recommend"
STUDY_FORMAT = "ppdm.recommend-study"
#: 2: differentially private trials are judged by noisy scores (an older study's were judged by exact values)
STUDY_VERSION = 2
#: trials when neither a trial budget nor a time budget is given
DEFAULT_TRIALS = 100
#: default share of the records held out as the control split
DEFAULT_HOLDOUT = 0.5
#: fresh draws of the winner tried before the next-ranked release is tried
FINAL_DRAWS = 3
#: releases of the ranking tried for the recommended release
FINAL_CANDIDATES = 5
#: consecutive suggestions of deterministic settings already tried after which the space counts as exhausted
EXHAUSTED_AFTER = 50
#: racing: once a release has met the policy, a technique with this many trials of its own, none
#: meeting it, is set aside, and each later trial's technique is drawn among the others
RACE_AFTER = 4
#: racing: the share of the releases meeting the policy, the least utility loss first, that count
#: for their technique's chance of being drawn
ELITE_SHARE = 0.25
#: seconds of a time budget kept for writing the release and the report (at most this share of it)
RESERVE_SECONDS = 3.0
RESERVE_SHARE = 0.05
_NOT_MEASURED = NOT_MEASURED_MARGIN
#: objective values a trial that could not be measured is told with (its constraints are all violated)
PENALTY = (10.0, 1e6)  # constraint value of a line whose measure could not be computed


# ------------------------------------------------------------------------ durations
def parse_duration(value: Any, what: str = "budget") -> float:
    """Seconds from ``600``, ``"90s"``, ``"10m"``, ``"1.5h"`` or ``"1h30m"``; a budget of zero or
    less, or text that is not a duration, raises :class:`ParameterError`."""
    if isinstance(value, bool):
        raise ParameterError(f"{what} must be a duration such as 90s, 10m or 1h, got {value!r}")
    if isinstance(value, (int, float, np.integer, np.floating)):
        seconds = float(value)
    else:
        text = str(value).strip().lower().replace(" ", "")
        if re.fullmatch(r"\d+(\.\d+)?", text):
            seconds = float(text)
        else:
            parts = re.findall(r"(\d+(?:\.\d+)?)([hms])", text)
            if not parts or "".join(n + u for n, u in parts) != text:
                raise ParameterError(f"{what} must be a duration such as 90s, 10m or 1h30m, got {value!r}")
            seconds = sum(float(n) * {"h": 3600, "m": 60, "s": 1}[u] for n, u in parts)
    if not math.isfinite(seconds) or seconds <= 0:
        raise ParameterError(f"{what} must be more than zero, got {value!r}")
    return seconds


# ---------------------------------------------------------------------- search spaces
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


def _cheapest(ts: TechniqueSpace, score_epsilon: float) -> float | None:
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
        if not ts.active(p, chosen):
            continue
        if isinstance(dist, Choice):
            v: Any = dist.values[int(rng.integers(len(dist.values)))]
        elif isinstance(dist, Integer):
            hi = dist.high_for(n_records)
            if dist.log:  # each whole number gets the stretch of the log scale that rounds to it
                drawn = math.exp(rng.uniform(math.log(max(dist.low - 0.5, 1e-9)), math.log(hi + 0.5)))
                v = int(np.clip(round(drawn), dist.low, hi))
            else:
                v = int(rng.integers(dist.low, hi + 1))
        else:
            v = float(math.exp(rng.uniform(math.log(dist.low), math.log(dist.high))) if dist.log
                      else rng.uniform(dist.low, dist.high))
        chosen[p] = v
        out[f"{ts.name}:{p}"] = v
    return out


def _untried(spaces: Sequence[TechniqueSpace], rng: np.random.Generator, n_records: int, seen: Mapping[str, int],
             draws: int = 200) -> dict[str, Any] | None:
    """A random setting that is not a deterministic setting already tried, or ``None``."""
    for _ in range(draws):
        setting = random_setting(spaces, rng, n_records)
        ts = next(s for s in spaces if s.name == setting["technique"])
        params = {**ts.fixed, **{k.split(":", 1)[1]: v for k, v in setting.items() if k != "technique"}}
        if not ts.deterministic or _key(ts.name, params) not in seen:
            return setting
    return None


# ------------------------------------------------------------------- trial evaluation
@dataclass
class SearchData:
    """What every trial needs: the two splits, the schema, Ψx, the measures and their seed."""

    train: pd.DataFrame
    control: pd.DataFrame
    schema: Schema
    rules: Any
    measures: tuple[str, ...]
    options: dict[str, Any]
    measure_seed: int
    input_info: dict[str, Any]
    #: the policy's risk lines as ``(measure, threshold, direction)``: a trial stops measuring
    #: risk once one of them misses (see :func:`measure_release`)
    lines: tuple[tuple[str, float, str], ...] = ()
    #: positions of the control split's records in the table (the rest, in order, is the training split)
    held: np.ndarray | None = None
    #: the policy's utility measures, which score a differentially private trial (with Laplace noise)
    utility: tuple[str, ...] = ()
    #: the ε each differentially private trial's scores spend (:mod:`ppdm.experiments.recommend.accounting`)
    score_epsilon: float = DEFAULT_SCORE_EPSILON
    #: whether the search has a differentially private technique: every trial's utility loss is then
    #: taken on the scale its noisy scores are (see :func:`utility_losses`)
    private_search: bool = False


@dataclass
class TrialJob:
    """One release to make and measure: technique, parameters and the seed of its draws."""

    number: int
    technique: str
    params: dict[str, Any]
    seed: int | None
    #: fingerprints of the releases already measured (a deterministic technique's trial; see
    #: :mod:`ppdm.experiments.recommend.repeats`), or ``None`` for a trial that is always measured
    known: frozenset[str] | None = None


#: risk measures a trial measures last, the slowest first to be spared when a cheaper line misses
MEASURED_LAST = ("linkability", "inference", "singling_out_multivariate")


def measure_order(measures: Sequence[str]) -> list[str]:
    """The order a trial measures in: utility first (every trial's loss is known), then the
    risk measures, the slowest (:data:`MEASURED_LAST`) last."""
    registry = load_all_measures()
    utility = [m for m in measures if registry[m].kind != "risk"]
    risk = [m for m in measures if registry[m].kind == "risk"]
    return utility + sorted(risk, key=lambda m: MEASURED_LAST.index(m) + 1 if m in MEASURED_LAST else 0)


def measure_release(z: pd.DataFrame, data: SearchData, out_schema: Schema | None = None, *,
                    stop_on_miss: bool = False, utility_only: bool = False,
                    provenance: Mapping[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """Every measure of the policy on release ``z`` of the training split: value, confidence
    interval (``ci_low``/``ci_high`` when the measure gives one) or the reason it was skipped.

    With ``stop_on_miss`` (what a search's trials do) the measures are taken in
    :func:`measure_order`, and once a risk line of the policy (``data.lines``) misses — its
    whole interval beyond the threshold, by :func:`ppdm.metrics.base.judge` — the remaining
    risk measures are not taken: the release cannot meet the policy whatever they say. They
    are recorded with ``skipped`` naming the line that missed. A release that meets every line
    measured so far, and so every release that meets the policy, is measured in full; each
    measure uses the same seed whichever order it is taken in, so its value does not depend on
    the order. With ``utility_only`` (a differentially private trial, which no risk line
    judges) only the utility measures are taken.

    ``out_schema`` is the release's own schema when a technique recoded columns (numbers into
    interval labels, categories into coarser ones; ``Technique.output_schema``). Risk is then
    measured as an intruder who knows the recoding would: the training and control records are
    recoded the same way (:func:`ppdm.data.generalization.generalise`) and compared with z on z's
    categories, as ``ppdm evaluate`` does. Utility is measured against the original table, the
    same reference for every release of a search: an interval label is read as its midpoint (an
    open interval as its finite end) and a coarser category as a category the original does not
    have, so what the recoding removed counts as lost. ``provenance`` is the release's public
    record: a date column it released as ages (recoding's ``age_at``) is read as ages at the
    date it names before the labels, as ``ppdm evaluate`` reads it
    (:func:`ppdm.experiments.evaluate.ages_at`).
    """
    registry = load_all_measures()
    views = _recoded_views(z, data, out_schema, provenance)
    base = dict(rules=data.rules, random_state=data.measure_seed, options=dict(data.options))
    if views is None:
        ctx = _context(data.train, z, data.control, data.schema, base)
        risk_ctx = utility_ctx = ctx
    else:
        (xr, cr, sr), zu = views
        risk_ctx = _context(xr, z, cr, sr, base)
        utility_ctx = _context(data.train, zu, data.control, data.schema, base)
    out: dict[str, dict[str, Any]] = {}
    lines = {m: (t, d) for m, t, d in data.lines} if stop_on_miss else {}
    missed: str | None = None
    for name in (measure_order(data.measures) if stop_on_miss else data.measures):
        spec = registry[name]
        if utility_only and spec.kind == "risk":
            continue
        if missed is not None and spec.kind == "risk":
            out[name] = {"value": None, "ci_low": None, "ci_high": None, "skipped": missed,
                         "reason": f"not measured: the line on {missed} already misses"}
            continue
        res = run_measure(spec, risk_ctx if spec.kind == "risk" else utility_ctx)
        entry: dict[str, Any] = {"value": None, "ci_low": None, "ci_high": None}
        if res.skipped:
            entry["reason"] = res.reason
            if res.not_applicable:  # the intruder the measure models cannot act on this release
                entry["not_applicable"] = True
        else:
            v = res.value
            entry["value"] = float(v) if math.isfinite(v) else None
            lo, hi = getattr(res.result, "ci_low", None), getattr(res.result, "ci_high", None)
            if _finite(lo) and _finite(hi):
                entry["ci_low"], entry["ci_high"] = float(lo), float(hi)  # type: ignore[arg-type]  # _finite: float() works
            if entry["value"] is None:
                entry["reason"] = "the measure gave no value"
            why = result_not_judged(res.result) if spec.kind == "risk" else None
            if why:  # computed, but the intruder scenario it models does not apply to this release
                entry["not_judged"] = why
            bound = result_lower_bound(res.result) if spec.kind == "risk" else None
            if bound:  # a pairing-free value that only bounds the risk from below never meets a line
                entry["lower_bound"] = bound
            if (getattr(res.result, "percent", None) is True):
                entry["percent"] = True
            score_z = getattr(res.result, "score_z", None)
            if name == "prediction_accuracy" and score_z is not None and _finite(score_z):
                # the control records Ψz classifies correctly: the count a differentially private trial is scored by
                entry["correct"] = int(round(float(score_z) * int(getattr(res.result, "n_test", 0))))
        out[name] = entry
        if name in lines and entry["value"] is not None and not entry.get("not_applicable") \
                and not entry.get("not_judged"):
            if judge_line(read_entry(name, entry), lines[name][0], lines[name][1]).state == "misses":
                missed = name
    return {name: out[name] for name in data.measures if name in out}


def _context(x: pd.DataFrame, z: pd.DataFrame, control: pd.DataFrame, schema: Schema,
             base: Mapping[str, Any]) -> EvaluationContext:
    """The tables in the form measures compute on, as evaluate's (:func:`ppdm.data.types.working_frame`:
    a date on its time axis, a missing cell as NaN). A column of z holding text where x has
    numbers (labels no output schema explains) is left as it is: the measures say they cannot
    compare it."""
    from ppdm.data.types import working_frame

    text = {c for c in schema.numeric if c in z.columns
            and (pd.api.types.is_string_dtype(z[c]) or z[c].dtype == object)}
    return EvaluationContext(x=working_frame(x, schema.numeric), z=working_frame(z, [c for c in schema.numeric
                                                                                    if c not in text]),
                             schema=schema, test=working_frame(control, schema.numeric),
                             control=working_frame(control, schema.numeric), **base)


def _recoded_views(z: pd.DataFrame, data: SearchData, out_schema: Schema | None,
                   provenance: Mapping[str, Any] | None = None) -> Any:
    """``((x, control, schema) recoded for risk, z decoded for utility)``, or ``None`` when the
    release recoded no column (see :func:`measure_release`)."""
    if out_schema is None:
        return None
    sch = data.schema
    from ppdm.data.generalization import parse_interval, recoded_view
    from ppdm.experiments.evaluate import ages_at

    # a date released as ages is read as ages at the release's date, the one evaluate reads it at
    cols, recode, risk_schema = recoded_view(sch, out_schema, list(z.columns), ages=ages_at(provenance, sch))
    if not cols:
        return None

    def point(label: Any) -> float:
        if label is None or (isinstance(label, float) and math.isnan(label)):
            return math.nan
        iv = parse_interval(label)
        if iv is None:
            try:
                return float(label)  # a number kept as it was (top/bottom coding writes them as text)
            except (TypeError, ValueError):
                return math.nan
        lo, hi = iv.low, iv.high
        if math.isfinite(lo) and math.isfinite(hi):
            return (lo + hi) / 2
        return lo if math.isfinite(lo) else hi

    decoded = z.copy()
    for c in cols:
        if c in sch.numeric and c not in sch.dates:
            vals = pd.Series(z[c], dtype=object).to_numpy()
            decoded[c] = np.array([point(v) for v in vals], dtype=float)
        elif c in sch.dates:  # a month or a year of a date: its midpoint, measured on the time axis
            decoded[c] = _period_midpoints(z[c])
        else:
            decoded[c] = pd.Series(z[c], dtype=object).to_numpy()
    return (recode(data.train), recode(data.control), risk_schema), decoded


def _period_midpoints(labels: pd.Series) -> pd.Series:
    """The middle of each released period (``2021-03``: a month, ``2021``: a year) as a date;
    a label that is no period is missing."""
    def mid(v: Any) -> Any:
        text = str(v) if v is not None and not (isinstance(v, float) and math.isnan(v)) else ""
        if not re.fullmatch(r"\d{4}(-\d{2})?", text):
            return pd.NaT
        p = pd.Period(text, freq="M" if len(text) == 7 else "Y")
        return p.start_time + (p.end_time - p.start_time) / 2

    return pd.Series([mid(v) for v in pd.Series(labels, dtype=object)], index=labels.index, dtype="datetime64[ns]")


def _finite(v: Any) -> bool:
    try:
        return v is not None and math.isfinite(float(v))
    except (TypeError, ValueError):
        return False


def _technique(job: TrialJob, table: pd.DataFrame, schema: Schema) -> Any:
    """The technique of ``job``, with a named column set (``"unique-valued"``) resolved on the
    table the release is made from."""
    return build_technique(job.technique, resolve_column_sets(job.params, table, schema),
                           class_column=schema.class_column, schema=schema, random_state=job.seed)


#: the release check's refusals that read x's values; they do not decide a differentially private draw
_DATA_REFUSALS = ("unchanged", "verbatim_unique", "untouched_unique")


def private_technique(technique: str) -> bool:
    """Whether ``technique`` declares a differential-privacy ε (its search space names one)."""
    try:
        space = space_of(technique)
    except PPDMError:
        return False
    return isinstance(space, SearchSpace) and space.epsilon is not None


def make_release(job: TrialJob, table: pd.DataFrame, data: SearchData, input_info: dict[str, Any] | None = None
                 ) -> Release:
    """The release of ``job`` on ``table``, made as ``ppdm anonymize`` makes one.

    For a technique with an ε the release check's refusals that read x's values (copies of
    records, unique keys) are recorded as warnings in the owner's log instead of rejecting the
    draw: a rejection by exact measurements on x is a choice no ε covers
    (:mod:`ppdm.experiments.recommend.accounting`). A release of such a technique that turns
    out not differentially private (a domain read from the data) is refused as any other."""
    dp = private_technique(job.technique)
    opts = GateOptions(suggest=False, allow_unchanged=dp, allow_verbatim=dp, allow_untouched_keys=dp)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a trial's warnings are not the user's; the final release reports its own
        # a refused trial is one point of the search: no search of its own for a setting that passes
        rel = release(table, _technique(job, table, data.schema), schema=data.schema, detect_identifiers=False,
                      input_info=input_info or data.input_info, gate_options=opts)
    if dp and not (_privacy(rel.technique) or {}).get("differentially_private"):
        for f in rel.findings:
            if f.get("level") == "allowed" and f.get("rule") in _DATA_REFUSALS:
                raise ReleaseRefused(f"the release check refuses a release that is not differentially private: "
                                     f"{f.get('message')}")
    return rel


def measured_data(rel: Release) -> pd.DataFrame:
    """The release as a trial measures it: a published release is shuffled, and the search
    measures it paired with the records it was made from (the private pairing), never by row
    position; a synthetic release, made from no particular records, as it is."""
    return rel.data if rel.pairing is None else rel.in_input_order()[0]


def run_trial(job: TrialJob, data: SearchData) -> dict[str, Any]:
    """Make and measure one release; returns the trial's outcome as JSON-ready data.

    A technique or release that fails on the table (a :class:`PPDMError`, including a
    release refused as almost the original) gives an outcome with ``error``; any other
    exception is a defect of ppdm and is recorded as such (``internal``)."""
    start = time.perf_counter()
    out: dict[str, Any] = {"technique": job.technique, "params": _json(job.params), "measures": {},
                           "privacy": None, "check": None, "error": None, "internal": False}
    try:
        rel = make_release(job, data.train, data)
        out["privacy"] = _privacy(rel.technique)
        out["check"] = {"share_verbatim": float(rel.check.share_verbatim)}
        # measures pair z's records with x's: the release as published is shuffled
        z, out_schema = measured_data(rel), output_schema(rel.technique)
        if (out["privacy"] or {}).get("differentially_private"):
            # judged by Laplace-noised utility scores alone; the exact values stay in the owner's record
            out["measures"] = measure_release(z, data, out_schema, utility_only=True,
                                              provenance=rel.provenance)
            rng = np.random.default_rng(np.random.SeedSequence(int(job.seed or 0), spawn_key=(7,)))
            out["scores"] = noisy_scores(out["measures"], data.utility, len(data.control), data.score_epsilon, rng)
            # the winner's release is made again from its seed: its fingerprint tells it is the same
            out["scores"]["release_digest"] = release_digest(z, out_schema)
            return out
        if job.known is not None:
            out["release_digest"] = release_digest(z, out_schema)
            out["same_release"] = out["release_digest"] in job.known  # measured already: not again
        if not out.get("same_release"):
            out["measures"] = measure_release(z, data, out_schema, stop_on_miss=True,
                                              provenance=rel.provenance)
            if data.private_search:
                out["losses"] = _release_losses(out["measures"], len(data.control))
    except PPDMError as e:
        out["error"] = " ".join(str(e).split())
    except Exception as e:  # noqa: BLE001 - a defect is recorded and reported, the search goes on
        if os.environ.get("PPDM_DEBUG"):
            raise
        out["error"] = f"{type(e).__name__}: {' '.join(str(e).split())}"
        out["internal"] = True
    finally:
        out["seconds"] = time.perf_counter() - start
    return out


def _release_losses(measures: Mapping[str, Mapping[str, Any]], control_rows: int) -> dict[str, float]:
    """The losses that differ from the measure's own value in a search with differentially
    private trials, so every trial is ranked on one scale: ``prediction_accuracy`` as 1 − the
    share of control records Ψz classifies correctly (what a differentially private trial is
    scored by), not Ψx's accuracy minus Ψz's. Ψx's accuracy is the same for every trial, so the
    order among the other trials is unchanged."""
    e = measures.get("prediction_accuracy") or {}
    n_ok = e.get("correct")
    if n_ok is None or control_rows <= 0:
        return {}
    return {"prediction_accuracy": 1.0 - float(n_ok) / control_rows}


def output_schema(tech: Any) -> Schema | None:
    """The schema of a fitted technique's release when it declares one (recoding changes the
    type of the columns it recodes), else ``None``."""
    fn = getattr(tech, "output_schema", None)
    if not callable(fn):
        return None
    try:
        return fn()
    except Exception:  # noqa: BLE001 - a technique that cannot say keeps the input's schema
        return None


def _privacy(tech: Any) -> dict[str, Any] | None:
    rep = getattr(tech, "privacy_report_", None)
    if not isinstance(rep, Mapping):
        return None
    eps = rep.get("epsilon")
    nb = rep.get("neighbouring")
    out = {"differentially_private": bool(rep.get("differentially_private")),
           "epsilon": float(eps) if _finite(eps) else None}  # type: ignore[arg-type]  # _finite: float(eps) works
    if isinstance(nb, Mapping) and isinstance(nb.get("relation"), str):
        out["neighbouring"] = nb["relation"]  # what the ε is stated for (the accounting counts it)
    return out


def _json(v: Any) -> Any:
    return json.loads(json.dumps(v, default=_plain))


def _plain(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    return str(v)


# worker processes receive the search data once, through their initializer
_WORKER_DATA: SearchData | None = None


def _init_worker(data: SearchData) -> None:
    global _WORKER_DATA
    _WORKER_DATA = data


def _run_in_worker(job: TrialJob) -> dict[str, Any]:
    assert _WORKER_DATA is not None, "worker started without the search data"
    return run_trial(job, _WORKER_DATA)


def _run_with_data(job: TrialJob, data: SearchData) -> dict[str, Any]:
    return run_trial(job, data)


# -------------------------------------------------------------------------- judging
@dataclass
class LineVerdict:
    """One policy line on one release: ``verdict`` is meets / misses / uncertain (the interval
    straddles the threshold), not measured, not applicable (the intruder scenario the measure
    models does not apply to the release, and another line of the policy judges that scenario;
    ε for a technique without a differential-privacy guarantee) or not judged (no line of the
    policy on that scenario applies to the release: it does not meet the policy); ``margin``
    is how far inside (≤ 0) or outside (> 0) the threshold the worst end of the interval lies,
    in units of the measure's range."""

    line: str
    measure: str
    verdict: str
    value: float | None = None
    interval: tuple[float, float] | None = None
    margin: float = 0.0
    reason: str | None = None

    @property
    def met(self) -> bool:
        return self.verdict in ("meets", "not applicable")

    def to_dict(self) -> dict[str, Any]:
        return {"line": self.line, "measure": self.measure, "verdict": self.verdict, "value": self.value,
                "ci_low": None if self.interval is None else self.interval[0],
                "ci_high": None if self.interval is None else self.interval[1],
                "margin": self.margin, "reason": self.reason}


def skipped_line(v: LineVerdict | Mapping[str, Any]) -> bool:
    """Whether a line was left unmeasured because another line of the trial had already missed
    (:func:`measure_release` with ``stop_on_miss``): not met, but no evidence against it."""
    verdict, margin = (v.verdict, v.margin) if isinstance(v, LineVerdict) else (v.get("verdict"), v.get("margin"))
    return verdict == "not measured" and margin == 0.0


def _scale(line: RiskLine) -> float:
    spec = load_all_measures()[line.measure]
    lo, hi = spec.value_range
    if lo is not None and hi is not None and hi > lo:
        return float(hi - lo)
    return max(1.0, abs(line.threshold))


def judge_lines(outcome: Mapping[str, Any], policy: Policy) -> list[LineVerdict]:
    """Every line of ``policy`` on one trial's outcome (see :class:`LineVerdict`).

    A line is judged by the library's single judge (:func:`ppdm.metrics.judgement.judge_line`,
    the one ``ppdm evaluate``'s verdict uses): a value with an interval meets its threshold only
    when the whole interval does, a lower bound never meets, and "uncertain" does not meet it.
    It is judged only when the intruder scenario its measure models applies to the release:
    key-variable measures judge quasi-identifiers that reach the release unchanged or
    generalised, ``qi_matching`` perturbed ones. A line that does not apply is "not applicable"
    while another line of its scenario applies, and "not judged" (a miss) when none does, so a
    release cannot meet a policy by leaving its intruder unmeasured. A line whose scenario the
    policy rules out (``rule_out``) is "not applicable", ruled out by the policy, whatever its value."""
    out: list[LineVerdict] = []
    measures = outcome.get("measures") or {}
    registry = load_all_measures()
    scored = isinstance(outcome.get("scores"), Mapping)
    for line in policy.risk:
        if scored:
            # a differentially private release: its risk claim is ε; what was measured is shown, not judged
            meas = read_entry(line.measure, measures.get(line.measure) or {})
            out.append(LineVerdict(line.text(), line.measure, "not applicable", meas.value, meas.interval,
                                   reason=NOT_USED if meas.value is not None else NOT_USED_TRIAL))
            continue
        if policy.rules_out(line.measure):  # the owner excludes its intruder: shown, not judged
            out.append(LineVerdict(line.text(), line.measure, "not applicable", reason="ruled out by the policy"))
            continue
        m = measures.get(line.measure) or {}
        meas = read_entry(line.measure, m)
        if meas.value is None and not meas.not_judged and not meas.reason:
            meas = replace(meas, reason=outcome.get("error") or "not computed")
        j = judge_line(meas, line.threshold, line.direction, span=_scale(line))
        out.append(LineVerdict(line.text(), line.measure, j.state, j.value, j.interval, j.margin, j.reason))
    if not scored:
        _unjudged_scenarios(out, policy, registry)
    if policy.epsilon is not None:
        priv = outcome.get("privacy")
        text = policy.epsilon.text()
        if priv is None:
            if outcome.get("error"):
                out.append(LineVerdict(text, "epsilon", "not measured", margin=_NOT_MEASURED, reason=outcome["error"]))
            else:
                out.append(LineVerdict(text, "epsilon", "not applicable",
                                       reason="the technique makes no differential-privacy claim"))
        elif not priv.get("differentially_private") or priv.get("epsilon") is None:
            out.append(LineVerdict(text, "epsilon", "misses", margin=_NOT_MEASURED,
                                   reason="the release is not differentially private (its report says why: e.g. a "
                                          "domain read from the data)"))
        else:
            # a searched release is judged on what the whole search spent (accounting)
            total = priv.get("epsilon_total")
            j = judge_epsilon(float(priv["epsilon"] if total is None else total), policy.epsilon.at_most)
            why = None if total is None else f"total over {priv.get('draws')} draws: {priv.get('sum')}"
            out.append(LineVerdict(text, "epsilon", j.state, j.value, None, j.margin, why))
    return out


def _unjudged_scenarios(lines: list[LineVerdict], policy: Policy, registry: Mapping[str, Any]) -> None:
    """Turn the lines of a scenario none of whose lines applies into "not judged" misses."""
    by: dict[str, list[LineVerdict]] = {}
    for line, v in zip(policy.risk, lines, strict=False):
        scenario = registry[line.measure].scenario
        if scenario is not None and scenario not in policy.ruled_out:  # a ruled-out scenario needs no line
            by.setdefault(scenario, []).append(v)
    for scenario, vs in by.items():
        if any(v.verdict != "not applicable" for v in vs):
            continue
        names = {v.measure for v in vs}
        hint = ("add k_anonymity or reidentification_risk for releases that keep or generalise the "
                "quasi-identifiers" if names == {"qi_matching"} else
                "add qi_matching for releases that perturb the quasi-identifiers"
                if scenario == "quasi-identifiers" else "add a line whose measure applies to such releases")
        for v in vs:
            v.verdict, v.margin = "not judged", _NOT_MEASURED
            v.reason = (f"{v.reason}; no line of the policy judges {SCENARIOS.get(scenario, scenario)} on this "
                        f"release ({hint})")


def utility_losses(outcome: Mapping[str, Any], policy: Policy) -> dict[str, float | None]:
    """Each utility measure of the policy as a loss (lower is better): the value of a measure
    that is better when lower, the distance below the range's top (or minus the value) for one
    that is better when higher."""
    registry = load_all_measures()
    out: dict[str, float | None] = {}
    measures = outcome.get("measures") or {}
    scores = outcome.get("scores")
    if isinstance(scores, Mapping):  # a differentially private trial: its noisy scores, never the exact values
        for term in policy.utility:
            loss = ((scores.get("measures") or {}).get(term.measure) or {}).get("loss")
            out[term.measure] = None if loss is None else float(loss)
        return out
    given = outcome.get("losses")
    on_scale: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
    for term in policy.utility:
        if term.measure in on_scale and (measures.get(term.measure) or {}).get("value") is not None:
            out[term.measure] = float(on_scale[term.measure])
            continue
        v = (measures.get(term.measure) or {}).get("value")
        if v is None:
            out[term.measure] = None
            continue
        spec = registry[term.measure]
        if spec.direction == "lower":
            out[term.measure] = float(v)
        else:
            hi = spec.value_range[1]
            out[term.measure] = float(hi - v) if hi is not None else -float(v)
    return out


def utility_loss(losses: Mapping[str, float | None], policy: Policy) -> float | None:
    """The utility loss a search minimises: the weighted sum (weights), or the first measure's
    loss (priority order; the others break near-ties when the winner is chosen)."""
    if any(v is None for v in losses.values()):
        return None
    known = {k: v for k, v in losses.items() if v is not None}  # all of them: none is None
    if policy.mode == "weights":
        return float(sum(t.weight * float(known[t.measure]) for t in policy.utility))
    return float(known[policy.utility[0].measure])


def risk_value(lines: Sequence[LineVerdict], policy: Policy) -> float | None:
    """The risk shown across the front: with ``risk_axis="max"`` the largest worst interval end
    among lines of measures better when lower and valued in [0, 1] (shares of records or
    residual attack success), else the first line's; or the named measure's worst end. A
    measure better when higher is negated, so lower is always better. Lines that do not apply
    to the release are left out (the named measure's too: the largest of the others is shown)."""
    registry = load_all_measures()
    by = {v.measure: v for v in lines}
    # a line that does not apply to the release says nothing of its risk (see judge_lines)
    risk_lines = [ln for ln in policy.risk if ln.measure not in by or by[ln.measure].verdict != "not applicable"]

    def worst(line: RiskLine) -> float | None:
        v = by.get(line.measure)
        if v is None or v.value is None or v.verdict == "not judged":
            return None
        w = v.value if v.interval is None else (max(v.interval) if line.direction == "lower" else min(v.interval))
        w = max(w, v.value) if line.direction == "lower" else min(w, v.value)
        return float(w) if line.direction == "lower" else -float(w)

    if policy.risk_axis != RISK_AXIS_MAX:
        line = next((ln for ln in risk_lines if ln.measure == policy.risk_axis), None)
        if line is not None:
            return worst(line)
    # lines left unmeasured after another missed (see measure_release): the worst of those measured,
    # at least as high as the missed line's, stands for the release (which misses the policy anyway)
    skipped = {v.measure for v in lines if skipped_line(v)}
    if skipped and len(skipped) < len(risk_lines):
        risk_lines = [ln for ln in risk_lines if ln.measure not in skipped]
    shares = [ln for ln in risk_lines if ln.direction == "lower"
              and registry[ln.measure].value_range == (0.0, 1.0)]
    chosen = shares or risk_lines[:1]
    vals = [worst(ln) for ln in chosen]
    if any(v is None for v in vals):
        return None
    return max(vals)  # type: ignore[type-var]  # none is None (checked above)


# --------------------------------------------------------------------------- results
@dataclass
class TrialRecord:
    """One trial as the result reports it."""

    number: int
    technique: str
    params: dict[str, Any]
    state: str  # "complete", "failed", "stopped"
    measures: dict[str, dict[str, Any]]
    lines: list[LineVerdict]
    feasible: bool
    risk: float | None
    utility_loss: float | None
    utility: dict[str, float | None]
    seconds: float | None = None
    error: str | None = None
    internal: bool = False
    repeat_of: int | None = None
    privacy: dict[str, Any] | None = None
    #: a differentially private trial's Laplace-noised scores (``epsilon``, and per measure ``loss``,
    #: ``sensitivity``, ``scale``): what it was judged and ranked by
    scores: dict[str, Any] | None = None
    #: false for a trial the privacy filter did not run (its ε did not fit the budget): nothing spent
    ran: bool = True

    @property
    def label(self) -> str:
        inner = ", ".join(f"{k}={_short(v)}" for k, v in self.params.items())
        return f"{self.technique}({inner})" if inner else self.technique

    def failed_lines(self) -> list[LineVerdict]:
        return [v for v in self.lines if not v.met]

    @property
    def outcome(self) -> str:
        """What became of the trial, one word the screen, ``--json`` and the report share:
        ``met`` (met the policy), ``missed`` (measured, and missed a line or had no utility),
        ``failed`` (its technique or release failed), ``stopped`` (never finished), ``repeat``
        (a setting already tried)."""
        if self.repeat_of is not None:
            return "repeat"
        if self.state == "stopped":
            return "stopped"
        if self.error is not None or self.state == "failed":
            return "failed"
        return "met" if self.feasible else "missed"

    @property
    def why(self) -> str | None:
        """Why the trial did not meet the policy, in words (``None`` when it met it)."""
        out = self.outcome
        if out == "met":
            return None
        if out == "repeat":
            return f"the same release as trial {self.repeat_of}"
        if out in ("stopped", "failed"):
            return self.error or ("did not finish" if out == "stopped" else "failed")
        missed = [f"{v.line}: {v.verdict}" + (f" ({v.reason})" if v.reason and v.verdict != "misses" else "")
                  for v in self.failed_lines() if not skipped_line(v)]
        if missed:
            return "missed " + "; ".join(missed)
        gaps = [f"{m}: {(self.measures.get(m) or {}).get('reason') or 'no value'}"
                for m, loss in self.utility.items() if loss is None]
        return "its utility could not be measured (" + "; ".join(gaps) + ")" if gaps else "did not meet the policy"

    def to_dict(self) -> dict[str, Any]:
        return {"number": self.number, "technique": self.technique, "params": self.params, "label": self.label,
                "state": self.state, "feasible": self.feasible, "risk": self.risk, "utility_loss": self.utility_loss,
                "utility": self.utility, "measures": self.measures, "lines": [v.to_dict() for v in self.lines],
                "seconds": self.seconds, "error": self.error, "internal": self.internal, "repeat_of": self.repeat_of,
                "privacy": self.privacy, "scores": self.scores, "outcome": self.outcome, "why": self.why,
                "ran": self.ran}


def _short(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}"
    return repr(v) if isinstance(v, str) else str(v)


def record_of(number: int, outcome: Mapping[str, Any], policy: Policy, *, state: str = "complete",
              repeat_of: int | None = None) -> TrialRecord:
    """A :class:`TrialRecord` from a trial's outcome, judged against ``policy``."""
    lines = judge_lines(outcome, policy)
    losses = utility_losses(outcome, policy)
    loss = utility_loss(losses, policy)
    scores = outcome.get("scores") if isinstance(outcome.get("scores"), Mapping) else None
    risk = risk_value(lines, policy) if scores is None else _dp_risk(outcome)
    error = outcome.get("error")
    feasible = error is None and state == "complete" and all(v.met for v in lines) and loss is not None
    return TrialRecord(number, str(outcome.get("technique")), dict(outcome.get("params") or {}),
                       "failed" if error and state == "complete" else state, dict(outcome.get("measures") or {}),
                       lines, feasible, risk, loss, losses, outcome.get("seconds"), error,
                       bool(outcome.get("internal")), repeat_of, outcome.get("privacy"),
                       None if scores is None else dict(scores))


def _dp_risk(outcome: Mapping[str, Any]) -> float | None:
    """A differentially private trial's place on the risk axis: what its own ε allows a test of
    membership to gain (:func:`~ppdm.experiments.recommend.accounting.risk_of_epsilon`), from
    its parameters and ε only, never from measurements."""
    params = outcome.get("params") or {}
    priv = outcome.get("privacy")
    eps = epsilon_of(str(outcome.get("technique")), params, priv)
    if eps is None:
        return None
    return risk_of_epsilon(counted_epsilon(eps, neighbouring_of(params, priv))[0])


def pareto_front(records: Sequence[TrialRecord]) -> list[TrialRecord]:
    """The trials no other trial beats on both risk and utility loss (lower is better on both),
    by increasing risk; of trials at the same point, the earliest (see :mod:`ppdm.experiments._front`)."""
    from ppdm.experiments._front import pareto_front as front

    return front(sorted(records, key=lambda r: r.number), lambda r: r.risk, lambda r: r.utility_loss, ties="first")


def rank(records: Sequence[TrialRecord], policy: Policy) -> list[TrialRecord]:
    """The feasible trials, most preferred first: least utility loss (weights) or the priority
    order with its tolerances; ties go to the lower risk, then the earlier trial. A repeat of a
    deterministic setting is the same release as the trial it repeats and is left out."""
    feas = [r for r in records if r.feasible and r.repeat_of is None]
    if not feas:
        return []
    if policy.mode == "weights":
        return sorted(feas, key=lambda r: (r.utility_loss, r.risk if r.risk is not None else math.inf, r.number))
    names = [t.measure for t in policy.utility]

    def key(r: TrialRecord) -> tuple:
        return (*[r.utility[n] for n in names], r.risk if r.risk is not None else math.inf, r.number)

    # each measure in turn keeps the releases within its tolerance of the best; the last decides
    pool = list(feas)
    for t in policy.utility:
        best = min(r.utility[t.measure] for r in pool)  # type: ignore[type-var]  # a feasible record has its utility values
        pool = [r for r in pool if r.utility[t.measure] <= best + t.tolerance]  # type: ignore[operator]  # a feasible record has its utility values
    first = min(pool, key=lambda r: (*[r.utility[n] for n in names[::-1]],
                                     r.risk if r.risk is not None else math.inf, r.number))
    rest = sorted((r for r in feas if r is not first), key=key)
    return [first, *rest]


def unmet_report(records: Sequence[TrialRecord], policy: Policy) -> dict[str, Any]:
    """Why no trial met the policy: for every line, how many trials met it and the closest
    value any trial reached; the lines no trial met; and the trial that came closest to
    meeting every line (least total excess)."""
    measured = [r for r in records if r.lines and r.state in ("complete", "failed")]
    per_line = []
    for i, text in enumerate(measured[0].lines if measured else []):
        vs = [(r, r.lines[i]) for r in measured]
        met = [r.number for r, v in vs if v.met]
        cands = [(r, v) for r, v in vs if v.verdict not in ("not measured", "not applicable", "not judged")]
        closest = min(cands, key=lambda rv: (rv[1].margin, rv[0].number)) if cands else None
        per_line.append({
            "line": text.line, "measure": text.measure, "met_by": len(met), "of": len(vs),
            "skipped": sum(1 for _, v in vs if skipped_line(v)),
            "closest": None if closest is None else {"trial": closest[0].number, "label": closest[0].label,
                                                     **closest[1].to_dict()},
        })
    # a line every trial left unmeasured (another line missed first) is not known to be unmeetable
    never = [p["line"] for p in per_line if p["met_by"] == 0 and not (p["skipped"] and p["closest"] is None)]

    def excess(r: TrialRecord) -> float:
        return sum(max(0.0, v.margin) for v in r.lines)

    best = min(measured, key=lambda r: (excess(r), r.number)) if measured else None
    return {
        "lines": per_line,
        "never_met": never,
        "closest_trial": None if best is None else {
            "trial": best.number, "label": best.label, "excess": excess(best),
            "missed": [v.to_dict() for v in best.failed_lines() if not skipped_line(v)]},
        "trials": len(measured),
    }


@dataclass
class RecommendResult:
    """What :func:`recommend` found.

    ``trials`` every trial of the study (also those of earlier runs when resumed);
    ``reference`` the training split released unchanged (how much risk the policy removes);
    ``front`` the feasible trials no other beats on both risk and utility loss; ``ranking``
    the feasible trials, most preferred first; ``winner`` the first of the ranking (``None``
    when no trial met the policy; ``unmet`` then says why). ``release`` is the recommended
    release (a :class:`~ppdm.experiments.release.Release`, with the control split in
    ``control`` unless refitted) and ``verification`` its own measured figures; ``chosen``
    the trial whose technique and parameters made it (the winner, or the next of the
    ranking when fresh draws of the winner missed the policy); ``accounting`` the ε every
    differentially private draw of the search spent on the training records
    (:mod:`ppdm.experiments.recommend.accounting`), once a release was attempted.
    """

    policy: Policy
    trials: list[TrialRecord]
    reference: TrialRecord | None
    front: list[TrialRecord]
    ranking: list[TrialRecord]
    unmet: dict[str, Any] | None
    release: Release | None
    control: pd.DataFrame | None
    verification: TrialRecord | None
    chosen: TrialRecord | None
    refit: bool
    study: dict[str, Any]
    split: dict[str, Any]
    spaces: dict[str, dict[str, Any]]
    left_out: dict[str, str]
    notes: list[str] = field(default_factory=list)
    #: what the search spent on the training records in ε (every differentially private draw)
    accounting: Accounting | None = None

    @property
    def winner(self) -> TrialRecord | None:
        return self.ranking[0] if self.ranking else None

    @property
    def met(self) -> bool:
        """Whether a release meeting the policy was made."""
        return self.release is not None

    @property
    def feasible(self) -> list[TrialRecord]:
        return [r for r in self.trials if r.feasible]

    def outcomes(self) -> dict[str, int]:
        """How many trials met the policy, missed it, failed, were stopped or repeated a setting
        (:attr:`TrialRecord.outcome`): the one count every output shows."""
        out = {k: 0 for k in ("met", "missed", "failed", "stopped", "repeat")}
        for r in self.trials:
            out[r.outcome] += 1
        return out

    def save(self, out: str | Path) -> list[Path]:
        """Write the recommended release as ``ppdm anonymize`` does (table, provenance, the
        control split unless refitted, technique sidecars), all or nothing."""
        if self.release is None:
            raise PPDMError("no release met the policy, so there is nothing to write")
        from ppdm.experiments.release import control_path

        if self.control is not None:
            # the number of held-out records, with the release's, tells the size of x: it is the owner's
            # (the private log's hold-out record), never public
            self.release.provenance["holdout"] = {"fraction": self.split["holdout"],
                                                  "control": control_path(out).name}
        return save_release(self.release, out, self.control)


# ---------------------------------------------------------------------------- study
def _seed_of(root: int, *key: int) -> int:
    ss = np.random.SeedSequence(int(root), spawn_key=tuple(int(k) for k in key))
    return int(ss.generate_state(1, dtype=np.uint32)[0])


def _open_study(storage: Any, resume: bool, sampler: Any) -> tuple[Any, bool]:
    """The Optuna study in ``storage`` (created, or loaded with ``resume``) and whether it existed."""
    import optuna

    directions: list[Literal["minimize", "maximize"]] = ["minimize", "minimize"]
    if storage is None:
        return optuna.create_study(directions=directions, sampler=sampler, study_name=STUDY_NAME), False
    names = [s.study_name for s in optuna.get_all_study_summaries(storage)] if _storage_exists(storage) else []
    exists = STUDY_NAME in names
    if exists and not resume:
        raise ParameterError(f"the study file {_storage_label(storage)!r} already holds a search; continue it with "
                             "--resume (resume=True) or name another study file")
    if resume and not exists:
        raise ParameterError(f"--resume: the study file {_storage_label(storage)!r} holds no ppdm search to continue")
    if exists:
        return optuna.load_study(study_name=STUDY_NAME, storage=storage, sampler=sampler), True
    return optuna.create_study(directions=directions, sampler=sampler, study_name=STUDY_NAME, storage=storage), False


def study_storage(path: str | Path) -> str:
    """The Optuna storage URL of a study file (SQLite)."""
    return f"sqlite:///{Path(path).resolve()}"


def _storage_exists(storage: str) -> bool:
    if storage.startswith("sqlite:///"):
        p = Path(storage[len("sqlite:///"):])
        return p.is_file() and p.stat().st_size > 0
    return True


def _storage_label(storage: Any) -> str:
    if isinstance(storage, str) and storage.startswith("sqlite:///"):
        return storage[len("sqlite:///"):]
    return str(storage)


# ------------------------------------------------------------------------ the search
@dataclass
class _Running:
    trial: Any
    job: TrialJob
    started: float


class _Clock:
    """The search's time budget: trials start only while one is expected to finish in time,
    leaving ``reserve`` trial durations and a few seconds (:data:`RESERVE_SECONDS`, at most
    :data:`RESERVE_SHARE` of the budget) for the recommended release and the report."""

    def __init__(self, budget: float | None, start: float, reserve: int) -> None:
        self.budget, self.start, self.reserve = budget, start, reserve
        self.durations: list[float] = []
        self.fallback = 1.0

    def estimate(self) -> float:
        """The time a trial takes: the 75th percentile of the trials that ran (failures end early
        and would make it look short)."""
        return float(np.percentile(self.durations, 75)) if self.durations else self.fallback

    def deadline(self) -> float | None:
        if self.budget is None:
            return None
        return self.start + self.budget - self.reserve * self.estimate() - min(RESERVE_SECONDS,
                                                                               RESERVE_SHARE * self.budget)

    def can_start(self, now: float) -> bool:
        d = self.deadline()
        return d is None or now + self.estimate() <= d

    def fraction(self, now: float) -> float:
        return 0.0 if self.budget is None else min(1.0, (now - self.start) / self.budget)


def recommend(
    x: pd.DataFrame,
    policy: Policy | Mapping[str, Any] | str | Path,
    *,
    schema: Schema | None = None,
    class_column: str | None = None,
    quasi_identifiers: Sequence[str] | str | None = None,
    identifiers: Sequence[str] | str | None = None,
    sensitive: Sequence[str] | str | None = None,
    holdout: float = DEFAULT_HOLDOUT,
    refit: bool = False,
    study: str | Path | None = None,
    resume: bool = False,
    budget: float | str | None = None,
    n_trials: int | None = None,
    n_jobs: int = 1,
    executor: Executor | None = None,
    random_state: int | None = None,
    input_info: Mapping[str, Any] | None = None,
    started: float | None = None,
    score_epsilon: float = DEFAULT_SCORE_EPSILON,
) -> RecommendResult:
    """Search the policy's techniques × parameters for the release that meets every risk line
    at the least loss of utility, and make it (see the module docstring).

    Parameters
    ----------
    x:
        The original table (class column included; identifier columns are removed first).
    policy:
        A :class:`~ppdm.experiments.policy.Policy`, the content of a policy file as a dict, or
        the path of a policy file.
    schema, class_column, quasi_identifiers, identifiers, sensitive:
        Column types and roles, as for :func:`ppdm.experiments.release.release`. Key-variable
        measures of a policy need declared quasi-identifiers.
    holdout:
        Share of the records held out as the control split (0 < holdout < 1).
    refit:
        Make the recommended release on the whole table instead of the training split (no
        control set is left to measure it against; its figures are those of the training
        split's release).
    study:
        A study file (SQLite) or an Optuna storage URL; ``None`` keeps the study in memory.
    resume:
        Continue the search stored in ``study`` (same table, hold-out and policy).
    budget:
        Wall time of the whole call in seconds or as text (``"10m"``); trials start only while
        one is expected to end in time, and with worker processes a trial still running at the
        end is stopped.
    n_trials:
        Trials the study should hold in the end (earlier runs included). Without either
        budget, :data:`DEFAULT_TRIALS`.
    n_jobs:
        Trials run at once: 1 in this process, more in worker processes (``-1``: one per
        core). Ignored when ``executor`` is given.
    executor:
        A :class:`concurrent.futures.Executor` to run trials on, e.g. a Dask cluster's
        ``Client.get_executor()``; each trial then carries the search data with it.
    random_state:
        Seed of the split, the search and the recommended release (keep it secret, as for any
        release); ``None`` draws from the operating system, and the recommended release is then
        seeded from fresh entropy that is stored nowhere.
    input_info:
        ``source``, ``sha256``, ``rows``, ``columns`` of the input for the provenance.
    started:
        When the budget's clock started (a :func:`time.perf_counter` value; default: now), so a
        command can count the time it spent reading its input.
    score_epsilon:
        The ε each differentially private trial's utility scores spend (Laplace noise;
        :mod:`ppdm.experiments.recommend.accounting`), counted in the total the release claims.

    Returns
    -------
    RecommendResult
        With ``release`` ``None`` when no trial met the policy (``unmet`` says why).
    """
    import optuna

    start = time.perf_counter() if started is None else float(started)
    if not isinstance(x, pd.DataFrame):
        raise PPDMError(f"recommend expects a pandas DataFrame, got {type(x).__name__}")
    pol = _as_policy(policy)
    budget_s = None if budget is None else parse_duration(budget)
    if n_trials is not None and (isinstance(n_trials, bool) or not isinstance(n_trials, (int, np.integer))
                                 or n_trials < 1):
        raise ParameterError(f"the trial budget must be a whole number of at least 1, got {n_trials!r}")
    target = int(n_trials) if n_trials is not None else (DEFAULT_TRIALS if budget_s is None else None)
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, (int, np.integer)) or n_jobs == 0 or n_jobs < -1:
        raise ParameterError(f"n_jobs must be a positive number or -1 (one per core), got {n_jobs!r}")
    workers = (os.cpu_count() or 1) if n_jobs == -1 else int(n_jobs)
    if random_state is not None and (isinstance(random_state, bool) or not isinstance(random_state, (int, np.integer))
                                     or random_state < 0):
        raise ParameterError(f"random_state must be a non-negative whole number or None, got {random_state!r}")
    storage = None if study is None else (str(study) if "://" in str(study) else study_storage(study))
    if isinstance(score_epsilon, bool) or not isinstance(score_epsilon, (int, float, np.integer, np.floating)) \
            or not math.isfinite(float(score_epsilon)) or score_epsilon <= 0:
        raise ParameterError(f"score_epsilon must be a number above 0, got {score_epsilon!r}")

    table, sch, ids = _table(x, pol, schema, class_column, quasi_identifiers, identifiers, sensitive)
    spaces, left_out = build_spaces(pol, sch, int(round(len(table) * (1 - float(holdout)))), table)
    spaces, blunt = _check_scores(spaces, pol, left_out)

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    info = {"sha256": table_sha256(table), "rows": int(len(table)), "columns": int(table.shape[1]),
            "schema": sch.to_dict(), "holdout": float(holdout), "removed_identifiers": ids}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        sampler0 = _sampler(0, len(spaces))
        stu, existed = _open_study(storage, resume, sampler0)
    if study is not None and "://" not in str(study):
        make_private(study)  # it holds the split's seed: the owner's only
    attrs = stu.user_attrs
    if existed:
        _check_resume(attrs, pol, info)
        root = int(attrs["seed"])
    else:
        root = int(random_state) if random_state is not None else secrets.randbits(63)
    base_info = {"source": None, "sha256": table_sha256(x), "rows": int(len(x)), "columns": int(x.shape[1]),
                 **dict(input_info or {})}
    data = replace(_search_data(table, sch, pol, holdout, root, base_info), score_epsilon=float(score_epsilon),
                   private_search=any(s.epsilon is not None for s in spaces))
    train, control = data.train, data.control

    # the reference: the training split released unchanged; it also checks every measure runs here
    if existed and "reference" in attrs:
        ref_outcome = attrs["reference"]
    else:
        t0 = time.perf_counter()
        ref_outcome = {"technique": "original", "params": {}, "measures": measure_release(train, data),
                       "privacy": None, "check": None, "error": None, "internal": False}
        ref_outcome["seconds"] = time.perf_counter() - t0
        skipped = {n: m["reason"] for n, m in ref_outcome["measures"].items() if m.get("value") is None}
        if skipped:
            n, why = next(iter(skipped.items()))
            raise ParameterError(f"the policy's measure {n!r} cannot be computed on this table: {why}")
    reference = record_of(-1, ref_outcome, pol)
    reference.state = "reference"
    if not existed:
        stu.set_user_attr("ppdm", {"format": STUDY_FORMAT, "version": STUDY_VERSION, "ppdm_version": _version()})
        stu.set_user_attr("policy", pol.to_dict())
        stu.set_user_attr("policy_sha256", pol.sha256())
        stu.set_user_attr("data", info)
        stu.set_user_attr("seed", root)
        stu.set_user_attr("reference", ref_outcome)
    else:
        _fail_interrupted(stu)
    stu.sampler = _sampler(_seed_of(root, 3, len(stu.trials)), len(spaces))

    clock = _Clock(budget_s, start, 1)
    # before any trial has ended, a trial is taken to cost the reference's measures and half as much again
    clock.fallback = 1.5 * float(ref_outcome.get("seconds") or 1.0)
    clock.durations = [float(t.user_attrs["outcome"]["seconds"]) for t in stu.trials
                       if "outcome" in t.user_attrs and t.user_attrs["outcome"].get("seconds")
                       and not t.user_attrs["outcome"].get("error") and t.user_attrs.get("repeat_of") is None]
    before = len(stu.trials)
    stopped_by = _search(stu, spaces, data, pol, clock=clock, target=target, workers=workers, executor=executor,
                         root=root, n_records=len(train))

    records = _records(stu, pol)
    ranking = rank(records, pol)
    front = pareto_front([r for r in records if r.feasible])
    result = RecommendResult(
        policy=pol, trials=records, reference=reference, front=front, ranking=ranking, unmet=None, release=None,
        control=None, verification=None, chosen=None, refit=bool(refit),
        study={"name": STUDY_NAME, "storage": _storage_label(storage) if storage else None,
               "trials": len(records), "new_trials": len(records) - before, "resumed": existed,
               "stopped_by": stopped_by, "budget_seconds": budget_s, "trial_budget": target,
               "set_aside": race(stu, spaces)[0]},
        split={"holdout": float(holdout), "train_rows": int(len(train)), "control_rows": int(len(control)),
               "rows": int(len(table)), "removed_identifiers": ids},
        spaces={s.name: s.describe(len(train)) for s in spaces}, left_out=left_out)
    if blunt:
        result.notes.append(f"differentially private trials are scored on {', '.join(blunt)} with Laplace noise as wide "
                            "as the measure's range (its sensitivity is not known to be smaller): the choice among "
                            "them is close to blind; prediction_accuracy scores with noise of scale 1/(|control| · ε)")
    internal = [r for r in records if r.internal]
    if internal:
        result.notes.append(f"{len(internal)} trial(s) stopped on an internal error (a defect of ppdm, reported "
                            f"as such), e.g. trial {internal[0].number} ({internal[0].label}): {internal[0].error}")
    if not ranking:
        result.unmet = unmet_report(records, pol)
    else:
        _final(result, data, table, root, random_state is not None, base_info)
    result.study["seconds"] = time.perf_counter() - start
    result.study["outcomes"] = result.outcomes()
    return result


def _table(x: pd.DataFrame, pol: Policy, schema: Schema | None, class_column: str | None,
           quasi_identifiers: Any, identifiers: Any, sensitive: Any) -> tuple[pd.DataFrame, Schema, list[str]]:
    """The table a search works on (identifier columns out), its schema, and the identifiers."""
    roles = Roles.of(identifiers, quasi_identifiers, sensitive, None, None)
    sch = resolve_schema(x, schema=schema, class_column=class_column, roles=roles, detect=schema is None)
    ids = [c for c in sch.identifiers if c in x.columns]
    table = x.drop(columns=ids).reset_index(drop=True)
    sch = replace(sch, identifiers=[])
    table, _ = sch.validate(table, missing="keep")
    _check_policy_against_table(pol, sch)
    return table, sch, ids


def _search_data(table: pd.DataFrame, sch: Schema, pol: Policy, holdout: float, root: int,
                 base_info: Mapping[str, Any]) -> SearchData:
    """The splits and measurement settings of the search seeded by ``root``."""
    from ppdm.trees.cart import rules_from_cart

    # the split as hold_out draws it, keeping the positions for the release's private log
    mask = holdout_mask(len(table), holdout, np.random.default_rng(_seed_of(root, 0)))
    train, control = table.loc[~mask].reset_index(drop=True), table.loc[mask].reset_index(drop=True)
    measure_seed = _seed_of(root, 1)
    rules = None
    if sch.class_column is not None and any(load_all_measures()[m].needs_class for m in pol.measures()):
        rules = rules_from_cart(train, sch, random_state=measure_seed)
    options: dict[str, Any] = {"infer_keys": False, **pol.measure_options()}
    return SearchData(train, control, sch, rules, tuple(pol.measures()), options, measure_seed,
                      {**dict(base_info), "rows_used": int(len(train))},
                      tuple((ln.measure, float(ln.threshold), ln.direction) for ln in pol.risk
                            if not pol.rules_out(ln.measure)),  # a ruled-out line never stops a trial
                      np.flatnonzero(mask), tuple(t.measure for t in pol.utility))


def _check_scores(spaces: list[TechniqueSpace], pol: Policy, left_out: dict[str, str]
                  ) -> tuple[list[TechniqueSpace], list[str]]:
    """With a differentially private technique in the search, every utility measure of the
    policy must score its trials with a known sensitivity: otherwise the techniques are left
    out (``left_out`` says why), or, when the policy names them, the search is refused. Returns
    the spaces kept and the measures that score with their whole range as sensitivity (wide
    noise)."""
    if not any(s.epsilon is not None for s in spaces):
        return spaces, []
    try:
        rules = [score_rule(t.measure) for t in pol.utility]
    except ParameterError as e:
        if pol.techniques is not None:
            raise
        kept = [s for s in spaces if s.epsilon is None]
        for s in spaces:
            if s.epsilon is not None:
                left_out[s.name] = str(e)
        if not kept:
            raise
        return kept, []
    return spaces, [r.measure for r in rules if not r.tight]


def search_data(
    x: pd.DataFrame,
    policy: Policy | Mapping[str, Any] | str | Path,
    *,
    random_state: int,
    schema: Schema | None = None,
    class_column: str | None = None,
    quasi_identifiers: Sequence[str] | str | None = None,
    identifiers: Sequence[str] | str | None = None,
    sensitive: Sequence[str] | str | None = None,
    holdout: float = DEFAULT_HOLDOUT,
) -> SearchData:
    """The training and control splits, Ψx and measure settings that :func:`recommend` uses
    with the same arguments and seed, so a release made outside the search (a standard
    workflow) is measured exactly as the search measures its trials:
    ``measure_release(z, data)`` with ``z`` made from ``data.train``, then
    :func:`record_of` to judge it against a policy. The splits are private (original records)."""
    pol = _as_policy(policy)
    if isinstance(random_state, bool) or not isinstance(random_state, (int, np.integer)) or random_state < 0:
        raise ParameterError(f"random_state must be a non-negative whole number, got {random_state!r}")
    table, sch, _ = _table(x, pol, schema, class_column, quasi_identifiers, identifiers, sensitive)
    info = {"source": None, "sha256": table_sha256(x), "rows": int(len(x)), "columns": int(x.shape[1])}
    return _search_data(table, sch, pol, holdout, int(random_state), info)


def _version() -> str:
    from ppdm import __version__

    return __version__


def _as_policy(policy: Policy | Mapping[str, Any] | str | Path) -> Policy:
    if isinstance(policy, Policy):
        return policy
    if isinstance(policy, Mapping):
        return parse_policy(policy)
    if isinstance(policy, (str, Path)):
        return load_policy(policy)
    raise ParameterError(f"policy must be a Policy, a dict or the path of a policy file, got {type(policy).__name__}")


def _check_policy_against_table(pol: Policy, sch: Schema) -> None:
    from ppdm.metrics.keyvar import KEY_VARIABLE_MEASURES

    registry = load_all_measures()
    for name in pol.measures():
        if registry[name].needs_class and sch.class_column is None:
            raise ParameterError(f"the policy's measure {name!r} needs a class column; name it with "
                                 "class_column=... (CLI: --class)")
    for line in pol.risk:
        if line.measure in KEY_VARIABLE_MEASURES and not sch.quasi_identifiers and not line.options.get("keys"):
            raise ParameterError(f"the policy's line {line.text()!r} needs declared quasi-identifiers: declare them "
                                 "with quasi_identifiers=... (CLI: --qi) or in the schema")


def _check_resume(attrs: Mapping[str, Any], pol: Policy, info: Mapping[str, Any]) -> None:
    head = attrs.get("ppdm") or {}
    if head.get("format") != STUDY_FORMAT:
        raise ParameterError("the study file holds a study ppdm did not make; name another study file")
    if head.get("version") != STUDY_VERSION:
        raise ParameterError(f"the study was made by another version of ppdm's search (study version "
                             f"{head.get('version')!r}); start a new study")
    data = attrs.get("data") or {}
    if data.get("sha256") != info["sha256"] or data.get("schema") != info["schema"]:
        raise ParameterError("--resume: the study searched another table (or the same table with other column "
                             "roles); resume with the same input, or start a new study")
    if data.get("holdout") != info["holdout"]:
        raise ParameterError(f"--resume: the study held out {data.get('holdout')!r} of the records, not "
                             f"{info['holdout']!r}; resume with the same --holdout")
    if attrs.get("policy_sha256") != pol.sha256():
        raise ParameterError("--resume: the study ran under another policy; resume with the same policy, or start a "
                             "new study to search under this one")


def _fail_interrupted(stu: Any) -> None:
    """Trials left running by an interrupted run are closed as failed, saying so."""
    from optuna.trial import TrialState

    for t in stu.get_trials(deepcopy=False, states=(TrialState.RUNNING, TrialState.WAITING)):
        stu.tell(t.number, state=TrialState.FAIL)


def _sampler(seed: int, n_techniques: int) -> Any:
    import optuna

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return optuna.samplers.TPESampler(seed=seed, multivariate=True, group=True, constant_liar=True,
                                          n_startup_trials=max(8, n_techniques + 3))


def _key(technique: str, params: Mapping[str, Any]) -> str:
    return technique + json.dumps(_json(params), sort_keys=True)


def race(stu: Any, spaces: Sequence[TechniqueSpace]) -> tuple[dict[str, str], dict[str, int]]:
    """Which techniques a search has set aside (name → why) and the weight each other technique
    is drawn with, from the trials so far.

    Until some release meets the policy nothing is set aside (``({}, {})``: the sampler picks the
    technique). After that a technique is set aside once :data:`RACE_AFTER` of its own trials
    (repeats not counted) ran without one meeting the policy, and each remaining technique is
    drawn with weight 1 + the number of its releases among the best quarter (:data:`ELITE_SHARE`,
    by utility loss) of all releases that met the policy: the search spends its trials where the
    least utility has been lost within the policy, and still tries the techniques it knows
    little about. Counting the best releases rather than every release that met the policy
    keeps a technique that meets it often but loses more from drawing most trials. A technique
    is never set aside when it is the only one."""
    from optuna.trial import TrialState

    tried: dict[str, int] = {}
    met: dict[str, int] = {}
    losses: list[tuple[float, str]] = []
    for t in stu.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.FAIL)):
        o = t.user_attrs.get("outcome")
        if o is None or t.user_attrs.get("repeat_of") is not None:
            continue
        name = o.get("technique")
        tried[name] = tried.get(name, 0) + 1
        if t.state == TrialState.COMPLETE and t.constraints and all(v <= 0 for v in t.constraints.values()):
            met[name] = met.get(name, 0) + 1
            losses.append((float(t.values[1]), name))
    if not met or len(spaces) < 2:
        return {}, {}
    aside = {s.name: f"set aside after {tried[s.name]} trials, none meeting the policy, while other techniques "
             "met it" for s in spaces if not met.get(s.name) and tried.get(s.name, 0) >= RACE_AFTER}
    elite: dict[str, int] = {}
    for _, name in sorted(losses)[:max(1, math.ceil(ELITE_SHARE * len(losses)))]:
        elite[name] = elite.get(name, 0) + 1
    weights = {s.name: 1 + elite.get(s.name, 0) for s in spaces if s.name not in aside}
    return aside, weights


def _search(stu: Any, spaces: Sequence[TechniqueSpace], data: SearchData, pol: Policy, *, clock: _Clock,
            target: int | None, workers: int, executor: Executor | None, root: int, n_records: int) -> str:
    """Run trials until a budget is spent; returns what stopped the search."""
    from optuna.trial import TrialState

    det = {s.name for s in spaces if s.deterministic}
    seen: dict[str, int] = {}
    measured = MeasuredReleases()  # a setting that makes a release already measured is not measured again
    measured.load(stu.trials)
    for t in stu.trials:
        o = t.user_attrs.get("outcome")
        if (o is not None and t.state == TrialState.COMPLETE and o.get("technique") in det
                and t.user_attrs.get("repeat_of") is None and not o.get("internal")):
            seen.setdefault(_key(o["technique"], o.get("params") or {}), t.number)

    def finished() -> int:
        return sum(1 for t in stu.get_trials(deepcopy=False) if t.state in (TrialState.COMPLETE, TrialState.FAIL))

    done0 = finished()
    total_units = 1000
    own_pool = None
    running: dict[Future, _Running] = {}
    repeats = 0
    fresh: dict[str, Any] | None = None  # a random untried setting for the next trial, after a repeat
    stopped_by = "trial budget"
    # with an ε line the search is a privacy filter: its budget is fixed now, before any trial, and a
    # differentially private trial runs only if what is charged so far plus its own ε stays within it
    # (running trials are charged when they start; a resumed study's trials count from the start)
    flt = PrivacyFilter(pol.epsilon.at_most) if pol.epsilon is not None and any(
        s.epsilon is not None for s in spaces) else None
    if flt is not None:
        flt.charge(*(d.epsilon for d in search_accounting(_records(stu, pol)).draws))
    plain = sorted(s.name for s in spaces if s.epsilon is None)
    skips = 0  # trials in a row the filter did not run
    spent_out = False
    parallel = executor is not None or workers > 1
    if parallel and executor is None:
        own_pool = _process_pool(workers, data)
    pool = executor if executor is not None else own_pool
    slots = workers if executor is None else _executor_slots(executor, workers)

    with progress.steps(total_units, "searching") as step:
        shown = 0

        def report(text: str) -> None:
            nonlocal shown
            now = time.perf_counter()
            frac = clock.fraction(now)
            if target is not None:
                frac = max(frac, min(1.0, (finished() - done0) / max(1, target - done0)))
            units = int(frac * total_units)
            step(max(0, units - shown), description=text)
            shown = max(shown, units)

        def tell(trial: Any, job: TrialJob, outcome: dict[str, Any], repeat_of: int | None = None) -> None:
            same = measured.repeat_of(outcome)
            if same is not None:  # its release is one measured already: that trial's measures are its own
                prev = stu.get_trials(deepcopy=False)[same].user_attrs["outcome"]
                outcome = {**prev, "technique": job.technique, "params": _json(job.params),
                           "seconds": outcome.get("seconds"), "release_digest": outcome.get("release_digest")}
                repeat_of = same
            measured.note(trial.number, outcome, repeat_of)
            trial.set_user_attr("outcome", outcome)
            if repeat_of is not None:
                trial.set_user_attr("repeat_of", repeat_of)
            rec = record_of(trial.number, outcome, pol, repeat_of=repeat_of)
            for v in rec.lines:
                trial.set_constraint(_constraint_name(v), float(v.margin))
            if repeat_of is not None:
                # the same release told twice would count double in the sampler's model of what is good
                stu.tell(trial, state=TrialState.FAIL)
            elif rec.error is None and rec.risk is not None and rec.utility_loss is not None:
                stu.tell(trial, [float(rec.risk), float(rec.utility_loss)])
            else:
                # a failure Optuna would ignore; told as the worst outcome (every constraint violated),
                # the sampler learns to avoid techniques and settings that do not run on this table
                stu.tell(trial, list(PENALTY))
            if job.technique in det and not outcome.get("internal"):
                seen.setdefault(_key(job.technique, job.params), trial.number if repeat_of is None else repeat_of)
            if repeat_of is None and outcome.get("seconds") and not outcome.get("error"):
                clock.durations.append(float(outcome["seconds"]))
            n_ok = sum(1 for t in stu.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
                       if all(v <= 0 for v in t.constraints.values()))
            report(f"trial {trial.number + 1} · {n_ok} met the policy")

        try:
            while True:
                while (len(running) < slots
                       and (target is None or finished() + len(running) < target)
                       and clock.can_start(time.perf_counter())
                       and repeats < EXHAUSTED_AFTER and skips < EXHAUSTED_AFTER):
                    # once a trial did not fit: does any differentially private setting still fit? (what is
                    # spent only grows, so once none does, none will)
                    spent_out = spent_out or (skips > 0 and flt is not None and all(
                        c is None or not flt.fits(c) for c in (_cheapest(s, data.score_epsilon) for s in spaces
                                                               if s.epsilon is not None)))
                    if spent_out and not plain:  # nothing differentially private fits any more, nor is there else
                        skips = EXHAUSTED_AFTER
                        break
                    if spent_out:  # the search stops proposing differentially private trials
                        rng = np.random.default_rng(_seed_of(root, 7, len(stu.trials)))
                        stu.enqueue_trial({"technique": plain[int(rng.integers(len(plain)))]})
                    elif fresh is not None:
                        # enqueued only now, so a setting never waits in the study beyond the budget
                        stu.enqueue_trial(fresh)
                        fresh = None
                    else:
                        aside, weights = race(stu, spaces)
                        if aside:  # the technique is drawn here; the sampler still draws its parameters
                            names = sorted(weights)
                            w = np.array([weights[n] for n in names], dtype=float)
                            rng = np.random.default_rng(_seed_of(root, 6, len(stu.trials)))
                            stu.enqueue_trial({"technique": names[int(rng.choice(len(names), p=w / w.sum()))]})
                    trial = stu.ask()
                    room = None if flt is None else flt.room - data.score_epsilon
                    ts, params = suggest(trial, spaces, n_records, room)
                    job = TrialJob(trial.number, ts.name, params, _seed_of(root, 2, trial.number),
                                   measured.known() if ts.deterministic else None)
                    trial.set_user_attr("job", {"technique": ts.name, "params": _json(params)})
                    cost = None if flt is None else trial_cost(ts.name, params, data.score_epsilon)
                    if cost is not None and flt is not None and not flt.fits(*cost):
                        # not run: it reads nothing, spends nothing, and the sampler learns nothing from it
                        trial.set_user_attr("stopped", flt.why_not(*cost))
                        trial.set_user_attr("not_run", True)
                        stu.tell(trial, state=TrialState.FAIL)
                        skips += 1
                        continue
                    if cost is not None and flt is not None:
                        flt.charge(*cost)
                    skips = 0
                    k = _key(ts.name, params)
                    if ts.deterministic and k in seen:
                        prev = stu.get_trials(deepcopy=False)[seen[k]].user_attrs["outcome"]
                        repeats += 1
                        tell(trial, job, {**prev, "seconds": 0.0}, repeat_of=seen[k])
                        # the sampler is stuck on what it knows: the next trial explores a setting not
                        # tried yet, drawn at random (none found in many draws: the space is spent)
                        rng = np.random.default_rng(_seed_of(root, 5, trial.number))
                        racing = race(stu, spaces)[0]
                        fresh = _untried([s for s in spaces if s.name not in racing], rng, n_records, seen)
                        if fresh is None:
                            repeats = EXHAUSTED_AFTER
                        continue
                    repeats = 0
                    if pool is None:
                        tell(trial, job, run_trial(job, data))
                    else:
                        fut = pool.submit(_run_in_worker, job) if own_pool is not None else \
                            pool.submit(_run_with_data, job, data)
                        running[fut] = _Running(trial, job, time.perf_counter())
                if skips >= EXHAUSTED_AFTER and not running:
                    stopped_by = "ε budget"
                    break
                if repeats >= EXHAUSTED_AFTER and not running:
                    stopped_by = "search space exhausted"
                    break
                if not running:
                    if target is not None and finished() >= target:
                        stopped_by = "trial budget"
                    else:
                        stopped_by = "time budget"
                    break
                deadline = clock.deadline()
                timeout = None if deadline is None else max(0.0, deadline - time.perf_counter())
                done, _ = wait(list(running), timeout=timeout, return_when=FIRST_COMPLETED)
                if not done:
                    stopped_by = "time budget"
                    for fut, r in running.items():
                        fut.cancel()
                        r.trial.set_user_attr("stopped", "still running when the time budget ran out")
                        stu.tell(r.trial, state=TrialState.FAIL)
                    running.clear()
                    _stop(own_pool, kill=True)
                    own_pool = None
                    break
                for fut in done:
                    r = running.pop(fut)
                    try:
                        outcome = fut.result()
                    except Exception as e:  # noqa: BLE001 - a lost worker is recorded as an internal error
                        outcome = {"technique": r.job.technique, "params": _json(r.job.params), "measures": {},
                                   "privacy": None, "check": None, "internal": True,
                                   "error": f"{type(e).__name__}: {' '.join(str(e).split())}",
                                   "seconds": time.perf_counter() - r.started}
                    tell(r.trial, r.job, outcome)
        finally:
            for fut in running:
                fut.cancel()
            if own_pool is not None:
                _stop(own_pool, kill=bool(running))
    return stopped_by


def _constraint_name(v: LineVerdict) -> str:
    return v.measure


def _process_pool(workers: int, data: SearchData) -> Executor:
    """Worker processes that each receive the search data once; one thread each for the
    numerical libraries, so the workers share the cores instead of fighting over them."""
    from joblib.externals.loky.process_executor import ProcessPoolExecutor

    one = {k: "1" for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")}
    return ProcessPoolExecutor(max_workers=workers, initializer=_init_worker, initargs=(data,), env=one)


def _executor_slots(executor: Executor, workers: int) -> int:
    """How many trials to keep running on a given executor: its worker threads when it says
    (a Dask cluster's), else ``workers``."""
    client = getattr(executor, "_client", None)
    if client is not None and hasattr(client, "nthreads"):
        try:
            return max(1, int(sum(client.nthreads().values())))
        except Exception:  # noqa: BLE001 - the count is a hint
            return max(1, workers)
    return max(1, workers)


def _stop(pool: Executor | None, *, kill: bool) -> None:
    """Shut down the search's own worker processes; ``kill`` stops trials still running."""
    if pool is not None:
        pool.shutdown(wait=not kill, kill_workers=kill)  # type: ignore[call-arg]  # loky's executor takes kill_workers; Executor's stub does not


def _records(stu: Any, pol: Policy) -> list[TrialRecord]:
    from optuna.trial import TrialState

    out = []
    for t in stu.get_trials(deepcopy=False):
        o = t.user_attrs.get("outcome")
        if o is None:
            job = t.user_attrs.get("job") or {}
            reason = t.user_attrs.get("stopped") or "did not finish (the run that started it was interrupted)"
            o = {"technique": job.get("technique", "?"), "params": job.get("params") or {}, "measures": {},
                 "privacy": None, "check": None, "error": reason, "internal": False, "seconds": None}
            state = "stopped"
        else:
            # a repeat is told to Optuna as failed (so it does not count twice) but is the trial it repeats
            state = "complete" if t.state == TrialState.COMPLETE or t.user_attrs.get("repeat_of") is not None \
                else "failed"
        rec = record_of(t.number, o, pol, state=state, repeat_of=t.user_attrs.get("repeat_of"))
        rec.ran = not t.user_attrs.get("not_run")
        out.append(rec)
    return out


def _final(result: RecommendResult, data: SearchData, table: pd.DataFrame, root: int, seeded: bool,
           base_info: Mapping[str, Any]) -> None:
    """Make the recommended release. A differentially private winner publishes its own trial's
    release (:func:`_final_private`). Otherwise the release is drawn with a fresh seed; by
    default measured against the control split and kept only when it meets the policy itself.
    Every differentially private draw is added to what the search spent
    (:mod:`ppdm.experiments.recommend.accounting`), and a draw that would take the total past
    the policy's ε is not made."""
    pol = result.policy
    acc = result.accounting = search_accounting(result.trials)
    cap = pol.epsilon.at_most if pol.epsilon is not None else None
    acc.budget = cap  # fixed before the search: the filter kept the trials within it, and the draws below too
    if cap is None and acc.draws:
        result.notes.append(f"ε: {EX_POST}")
    attempt = 0
    tried: list[str] = []
    with progress.steps(None, "making the recommended release") as step:
        for cand in result.ranking[:FINAL_CANDIDATES]:
            if cand.scores is not None:  # never redrawn, never rejected by a measurement: decided by the ε line alone
                _final_private(result, data, table, root, seeded, base_info, cand, tried)
                return
            draws = 1 if _deterministic(cand.technique, result) else FINAL_DRAWS
            eps = epsilon_of(cand.technique, cand.params, cand.privacy)
            for _ in range(draws):
                over = None if eps is None else over_budget(acc, eps, cap)
                if over is not None:
                    tried.append(f"{cand.label}: not drawn: {over}")
                    break
                seed = _seed_of(root, 4, attempt) if seeded else None
                attempt += 1
                job = TrialJob(-1, cand.technique, dict(cand.params), seed)
                source = table if result.refit else data.train
                info = {**base_info, "rows_used": int(len(source))}
                if eps is not None:  # spent once the technique has read the records, published or not
                    add_release(acc, f"release draw {attempt}", cand.technique, cand.params, cand.privacy)
                try:
                    rel = make_release(job, source, data, info)
                except ReleaseRefused as e:  # a fresh draw the release gate refuses is not released either
                    tried.append(f"{cand.label}: refused by the release check ({' '.join(str(e).split())[:160]})")
                    continue
                step(1, description=f"measuring the recommended release ({cand.label})")
                privacy = searched_privacy(_privacy(rel.technique), acc)
                if result.refit and (privacy or {}).get("epsilon_total") is None:
                    verification = cand
                elif result.refit:  # the trial's figures, its ε line judged on what the search spent
                    outcome = {"technique": cand.technique, "params": cand.params, "measures": cand.measures,
                               "privacy": privacy, "error": None, "internal": False}
                    verification = replace(record_of(cand.number, outcome, pol), state=cand.state,
                                           seconds=cand.seconds)
                else:
                    got = measure_release(measured_data(rel), data, output_schema(rel.technique),
                                          provenance=rel.provenance)
                    outcome = {"technique": cand.technique, "params": cand.params, "measures": got,
                               "privacy": privacy,
                               "check": {"share_verbatim": float(rel.check.share_verbatim)}, "error": None,
                               "internal": False}
                    if data.private_search:  # on the scale the trials were ranked on
                        outcome["losses"] = _release_losses(got, len(data.control))
                    verification = record_of(-1, outcome, pol)
                    verification.state = "release"
                if not verification.feasible:
                    missed = [f"{v.line} {v.verdict}" for v in verification.failed_lines()]
                    tried.append(f"{cand.label}: " + (", ".join(missed) or "its utility could not be measured"))
                    continue
                if not result.refit and data.held is not None:  # the owner's log pairs z with the whole table
                    rel.private = pair_with_table(rel.private, rel.pairing, data.held, len(table),
                                                  result.split["holdout"])
                _attach(rel, result, cand, verification, seeded)
                result.release, result.verification, result.chosen = rel, verification, cand
                result.control = None if result.refit else data.control
                if cand is not result.winner:
                    result.notes.append(f"fresh draws of the winner, trial {result.winner.number} "  # type: ignore[union-attr]  # a candidate other than the winner means a winner exists
                                        f"({result.winner.label}), missed the policy; the release was made with "  # type: ignore[union-attr]  # a candidate other than the winner means a winner exists
                                        f"the next-ranked trial {cand.number} ({cand.label}) instead")
                return
    _unmet_final(result, tried, acc, cap)


def _final_private(result: RecommendResult, data: SearchData, table: pd.DataFrame, root: int, seeded: bool,
                   base_info: Mapping[str, Any], cand: TrialRecord, tried: list[str]) -> None:
    """The recommended release of a differentially private winner, chosen by noisy scores.

    Without ``refit`` it is the winning trial's own release, made again from the trial's seed
    on the training split: the draw the total already counts (its fingerprint is checked; a
    release that differs is counted as a fresh draw). With ``refit`` it is a fresh draw on the
    whole table, counted. Either way it is never rejected or redrawn by a measurement on the
    records: it is published when the policy's ε line meets the total, and its risk and
    utility are measured against the control split for the owner only ("measured, not used
    for the decision")."""
    pol = result.policy
    acc = result.accounting
    assert acc is not None
    cap = pol.epsilon.at_most if pol.epsilon is not None else None
    if result.refit:
        eps = epsilon_of(cand.technique, cand.params, cand.privacy)
        over = None if eps is None else over_budget(acc, counted_epsilon(eps, neighbouring_of(cand.params,
                                                                                               cand.privacy))[0], cap)
        if over is not None:
            tried.append(f"{cand.label}: not drawn: {over}")
            _unmet_final(result, tried, acc, cap)
            return
        job = TrialJob(-1, cand.technique, dict(cand.params), _seed_of(root, 4, 0) if seeded else None)
        source = table
    else:
        job = TrialJob(cand.number, cand.technique, dict(cand.params), _seed_of(root, 2, cand.number))
        source = data.train
    with progress.steps(None, "making the recommended release") as step:
        try:
            rel = make_release(job, source, data, {**base_info, "rows_used": int(len(source))})
        except PPDMError as e:
            if result.refit:  # it read the whole table before it stopped
                add_release(acc, "release draw 1", cand.technique, cand.params, cand.privacy)
            tried.append(f"{cand.label}: {' '.join(str(e).split())[:200]}")
            _unmet_final(result, tried, acc, cap)
            return
        z, out_schema = measured_data(rel), output_schema(rel.technique)
        own = _privacy(rel.technique)
        if result.refit or release_digest(z, out_schema) != (cand.scores or {}).get("release_digest"):
            add_release(acc, "release draw 1", cand.technique, cand.params, own)
            if not result.refit:
                result.notes.append("the winning trial's release could not be made again exactly; a fresh draw "
                                    "of its setting was published, and its ε is counted")
        step(1, description=f"measuring the recommended release ({cand.label}) for the owner")
        outcome = {"technique": cand.technique, "params": cand.params, "privacy": searched_privacy(own, acc),
                   "scores": cand.scores, "error": None, "internal": False,
                   "measures": cand.measures if result.refit else measure_release(z, data, out_schema,
                                                                                  provenance=rel.provenance),
                   "check": {"share_verbatim": float(rel.check.share_verbatim)}}
        verification = record_of(cand.number if result.refit else -1, outcome, pol)
        verification.state = "release"
    if not verification.feasible:  # only the ε line can miss here: it judges the total
        missed = [f"{v.line} {v.verdict}" for v in verification.failed_lines()]
        tried.append(f"{cand.label}: " + (", ".join(missed) or "its scores are missing"))
        _unmet_final(result, tried, acc, cap)
        return
    if not result.refit and data.held is not None:
        rel.private = pair_with_table(rel.private, rel.pairing, data.held, len(table), result.split["holdout"])
    _attach(rel, result, cand, verification, seeded)
    result.release, result.verification, result.chosen = rel, verification, cand
    result.control = None if result.refit else data.control


def _unmet_final(result: RecommendResult, tried: list[str], acc: Accounting, cap: float | None) -> None:
    """No release: trials met the policy but no release of the best could be published."""
    result.unmet = {"lines": [], "never_met": [], "closest_trial": None, "trials": len(result.trials),
                    "final_draws": tried,
                    "note": "trials met the policy, but fresh draws of the best releases did not; the margins are "
                            "too thin for a release to meet the policy reliably"}
    if acc.draws and cap is not None and (not judge_epsilon(acc.total, cap).met
                                          or any(": not drawn: " in t for t in tried)):
        result.unmet["note"] = (f"trials met the policy, but the search spent ε = {acc.total:.4g} on the records "
                                f"({acc.sum_text()}) and the policy allows ε ≤ {cap:g} in all; fewer trials, a "
                                "smaller ε per trial or a smaller --score-epsilon leave room for the release")


def _deterministic(technique: str, result: RecommendResult) -> bool:
    space = space_of(technique)
    return isinstance(space, SearchSpace) and space.deterministic


def _attach(rel: Release, result: RecommendResult, cand: TrialRecord, verification: TrialRecord,
            seeded: bool) -> None:
    """What the provenance says about the recommendation: the policy, the study and the trial;
    the measured figures go to the owner's private record when the release has one."""
    pol = result.policy
    rec: dict[str, Any] = {
        "policy": {"name": pol.name, "source": Path(pol.source).name if pol.source else None,
                   "sha256": pol.sha256(), "lines": pol.lines_text(), "utility": pol.utility_text()},
        "study": {"name": result.study["name"],
                  "file": Path(result.study["storage"]).name if result.study.get("storage") else None,
                  "trial": cand.number, "trials": len(result.trials)},
        "refit": result.refit,
        "meets_policy": "measured on this release against the control split" if not result.refit else
                        "measured on a release of the same technique and parameters made from the training split "
                        "against the control split; this release was refitted on all the records",
    }
    priv = rel.provenance.get("privacy")
    if result.accounting is not None and isinstance(priv, dict) and priv.get("differentially_private"):
        # the release's ε covers the whole search's draws on the same records, not its own draw alone
        rel.provenance["privacy"] = provenance_privacy(priv, result.accounting)
        rec["epsilon"] = result.accounting.to_dict()
    rel.provenance["recommendation"] = rec
    private = getattr(rel, "private", None)
    if isinstance(private, dict):
        # the split's sizes are counts of x: the owner's only
        private["recommendation"] = {"lines": [v.to_dict() for v in verification.lines],
                                     "utility": verification.utility,
                                     "split": {k: result.split.get(k) for k in ("rows", "train_rows", "control_rows")}}
