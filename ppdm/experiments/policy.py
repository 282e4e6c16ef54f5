"""A risk policy: the disclosure-risk levels a release must meet and the utility that decides
among the releases that meet them.

A policy is a small YAML or JSON file (JSON Schema: ``docs/policy.schema.json``; guide:
``docs/recommend.md``) or the same content given as flags on the command line::

    name: statistics office standard
    risk:                                    # every line must be met, intervals included
      record_linkage: 0.05                   # a number: at most (or at least) this, in the measure's direction
      k_anonymity: {at_most: 0.01, options: {k: 5}}
      attacks: {at_most: 0.05}               # every attack with a control set
    rule_out: [originals]                    # no intruder can hold the original records
    epsilon: 1.0                             # a differentially private technique spends at most ε = 1
    utility:
      weights: {auc: 1, rule_accuracy: 1}    # or  priority: [auc, rule_accuracy]
      at_most: {auc: 0.02}                   # a line too: no release may lose more AUC than this
    techniques: [mdav, gaussian-noise]       # default: every technique that fits the table

Risk lines name registered measures (:mod:`ppdm.metrics`, :mod:`ppdm.attacks`) and are
judged with :func:`ppdm.metrics.judgement.judge_line`: a line is met only when the whole confidence
interval of the measured value is within the threshold. Every name and number is checked
when the policy is read: an unknown measure or technique, a utility measure in the risk
lines, an option the measure does not read, a threshold outside the measure's range or the
wrong direction raise :class:`~ppdm.errors.ParameterError` with one sentence naming the problem.

``rule_out`` names intruder scenarios (:data:`ppdm.metrics.base.SCENARIOS`) the owner excludes
explicitly: risk lines whose measure models one are shown but not judged ("not applicable",
ruled out by the policy), as ``ppdm evaluate --rule-out`` leaves them out of its verdict.

The policy's parts (:class:`RiskLine`, :class:`Policy`, ...) live in
:mod:`ppdm.experiments.policy_model` and are re-exported here; this module reads and checks.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ppdm.errors import ParameterError
from ppdm.experiments.evaluation import load_all_measures, unknown_option
from ppdm.experiments.policy_model import (
    POLICY_FORMAT,
    POLICY_VERSION,
    RISK_AXIS_MAX,
    EpsilonLine,
    ParamOverride,
    Policy,
    RiskLine,
    TechniqueChoice,
    UtilityTerm,
)
from ppdm.metrics.base import MeasureSpec
from ppdm.metrics.judgement import ATTACKS
from ppdm.utils import loads_json

#: the policy word ``attacks`` stands for all the attacks against a control set (metrics.judgement.ATTACKS)
GROUPS = {"attacks": ATTACKS}

_TOP_KEYS = ("format", "version", "name", "description", "risk", "rule_out", "epsilon", "utility", "techniques",
             "risk_axis")


# ----------------------------------------------------------------------------- reading
def load_policy(path: str | Path) -> Policy:
    """Read and check a policy file (YAML for ``.yaml``/``.yml``, JSON for ``.json``; any
    other name is read as JSON, then as YAML)."""
    p = Path(path)
    where = f"policy file {str(p)!r}"
    if not p.is_file():
        raise ParameterError(f"{where} does not exist")
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ParameterError(f"{where} cannot be read: {e}") from None
    suffix = p.suffix.lower()
    data: Any
    if suffix == ".json":
        data = loads_json(text, where, ParameterError)
    elif suffix in (".yaml", ".yml"):
        data = _read_yaml(text, where)
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError:
            data = _read_yaml(text, where)
    return parse_policy(data, where=where, source=str(p))


def _read_yaml(text: str, where: str) -> Any:
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ParameterError(f"{where} is not valid YAML: {' '.join(str(e).split())}") from None


def parse_policy(data: Any, *, where: str = "the policy", source: str | None = None) -> Policy:
    """Check ``data`` (the content of a policy file, or a dict built from flags) and return
    the :class:`Policy`; every problem raises :class:`ParameterError` naming it."""
    registry = load_all_measures()
    if not isinstance(data, Mapping):
        raise ParameterError(f"{where} must be a mapping with 'risk' and 'utility', got {_kind(data)}")
    unknown = [k for k in data if k not in _TOP_KEYS]
    if unknown:
        raise ParameterError(f"{where} has an unknown entry {unknown[0]!r}; known: {', '.join(_TOP_KEYS)}")
    fmt = data.get("format", POLICY_FORMAT)
    if fmt != POLICY_FORMAT:
        raise ParameterError(f"{where}: 'format' must be {POLICY_FORMAT!r}, got {fmt!r}")
    version = data.get("version", POLICY_VERSION)
    if version != POLICY_VERSION or isinstance(version, bool):
        raise ParameterError(f"{where}: this ppdm reads policy version {POLICY_VERSION}, got {version!r}")
    name = _text_or_none(data.get("name"), "name", where)
    description = _text_or_none(data.get("description"), "description", where)
    if "risk" not in data:
        raise ParameterError(f"{where} has no 'risk' lines: name at least one risk measure and its threshold")
    risk = _risk_lines(data["risk"], registry, where)
    ruled_out = _rule_out(data.get("rule_out"), risk, registry, where)
    epsilon = _epsilon(data.get("epsilon"), where)
    if "utility" not in data:
        raise ParameterError(f"{where} has no 'utility': name the utility measure(s) the search keeps, "
                             "e.g. utility: {weights: {auc: 1}}")
    mode, utility = _utility(data["utility"], registry, where)
    techniques = _techniques(data.get("techniques"), where)
    if epsilon is not None and epsilon.required and techniques is not None:
        from ppdm.anonymize.search_space import SearchSpace, space_of

        dp = [t.name for t in techniques if isinstance(sp := space_of(t.name), SearchSpace) and sp.epsilon]
        if not dp:
            raise ParameterError(f"{where} requires differential privacy but allows no differentially private "
                                 "technique (e.g. dpcube)")
    axis = data.get("risk_axis", RISK_AXIS_MAX)
    if not isinstance(axis, str) or (axis != RISK_AXIS_MAX and axis not in {line.measure for line in risk}):
        raise ParameterError(f"{where}: risk_axis must be {RISK_AXIS_MAX!r} or a measure of the risk lines "
                             f"({', '.join(line.measure for line in risk)}), got {axis!r}")
    return Policy(tuple(risk), tuple(utility), mode, epsilon, techniques, axis, name, description, source,
                  ruled_out)


def _rule_out(raw: Any, risk: list[RiskLine], registry: Mapping[str, MeasureSpec], where: str) -> tuple[str, ...]:
    """The intruder scenarios ``rule_out`` names, checked; a policy that rules out the scenario of
    every risk line would judge nothing, so it is refused."""
    from ppdm.metrics.judgement import check_scenarios

    if raw is None:
        return ()
    if isinstance(raw, str) or not isinstance(raw, Sequence) or not all(isinstance(s, str) for s in raw):
        raise ParameterError(f"{where}: 'rule_out' must list intruder scenarios, e.g. rule_out: [originals], "
                             f"got {_kind(raw)}")
    try:
        ruled = tuple(dict.fromkeys(check_scenarios(raw)))
    except ParameterError as e:
        raise ParameterError(f"{where}: rule_out: {e}") from None
    if ruled and all(registry[ln.measure].scenario in ruled for ln in risk):
        raise ParameterError(f"{where}: rule_out ({', '.join(ruled)}) rules out the scenario of every risk line, "
                             "so the policy would judge nothing; keep a line on a scenario that is not ruled out")
    return ruled


def _check_options(spec: MeasureSpec, options: Mapping[str, Any], label: str, where: str) -> None:
    """Refuse an option the measure does not read (it would be ignored, silently)."""
    if spec.options is None:  # the measure declares nothing: any option is accepted
        return
    bad = [k for k in options if k not in spec.options]
    if bad:
        raise ParameterError(f"{where}: {label}: {unknown_option(f'{spec.name} option', bad[0], spec.options)}")


def _kind(v: Any) -> str:
    return "nothing" if v is None else f"{type(v).__name__} {v!r}" if isinstance(v, (int, float, str)) else type(v).__name__


def _text_or_none(v: Any, key: str, where: str) -> str | None:
    if v is None:
        return None
    if not isinstance(v, str):
        raise ParameterError(f"{where}: {key!r} must be text, got {_kind(v)}")
    return v


def _number(v: Any, what: str, where: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(float(v)):
        raise ParameterError(f"{where}: {what} must be a finite number, got {_kind(v)}")
    return float(v)


def _options(v: Any, what: str, where: str) -> dict[str, Any]:
    if v is None:
        return {}
    if not isinstance(v, Mapping) or not all(isinstance(k, str) for k in v):
        raise ParameterError(f"{where}: the options of {what} must be a mapping of option names to values")
    return dict(v)


def _spec(name: Any, registry: Mapping[str, MeasureSpec], where: str, kind: str) -> MeasureSpec:
    if not isinstance(name, str) or name not in registry:
        known = sorted(n for n, m in registry.items() if m.kind == kind)
        extra = f", or {', '.join(GROUPS)}" if kind == "risk" else ""
        raise ParameterError(f"{where} names an unknown {kind} measure {name!r}; known: {', '.join(known)}{extra}")
    spec = registry[name]
    if spec.kind != kind:
        hint = f"; list it under {spec.kind!r}" if spec.kind in ("utility", "risk") else ""
        raise ParameterError(f"{where}: {name!r} is a {spec.kind} measure, not a {kind} measure{hint}")
    if spec.direction not in ("higher", "lower"):
        raise ParameterError(f"{where}: {name!r} has no better direction (neither higher nor lower is better), so "
                             "it cannot be held to a threshold or minimised")
    return spec


def _risk_lines(raw: Any, registry: Mapping[str, MeasureSpec], where: str) -> list[RiskLine]:
    if not isinstance(raw, Mapping) or not raw:
        raise ParameterError(f"{where}: 'risk' must map risk measures to thresholds, e.g. "
                             "risk: {record_linkage: 0.05}")
    lines: list[RiskLine] = []
    for name, spec_raw in raw.items():
        members = GROUPS.get(name, (name,))
        group = name if name in GROUPS else None
        for member in members:
            spec = _spec(member, registry, where, "risk")
            lines.append(_risk_line(member, spec, spec_raw, group, where))
    seen: set[str] = set()
    for line in lines:
        if line.measure in seen:
            via = " (also through 'attacks')" if any(ln.group and ln.measure == line.measure for ln in lines) else ""
            raise ParameterError(f"{where} holds {line.measure!r} to two thresholds{via}; keep one")
        seen.add(line.measure)
    return lines


def _risk_line(name: str, spec: MeasureSpec, raw: Any, group: str | None, where: str) -> RiskLine:
    label = f"risk line {group or name!r}"
    options: dict[str, Any] = {}
    if isinstance(raw, Mapping):
        keys = set(raw)
        bad = sorted(keys - {"at_most", "at_least", "options"})
        if bad:
            raise ParameterError(f"{where}: {label} has an unknown entry {bad[0]!r}; use at_most or at_least "
                                 "(and options)")
        bounds = [k for k in ("at_most", "at_least") if k in raw]
        if len(bounds) != 1:
            raise ParameterError(f"{where}: {label} needs exactly one of at_most and at_least")
        direction = "lower" if bounds[0] == "at_most" else "higher"
        threshold = _number(raw[bounds[0]], f"the threshold of {label}", where)
        if direction != spec.direction:
            want = "at_most" if spec.direction == "lower" else "at_least"
            better = "lower" if spec.direction == "lower" else "higher"
            raise ParameterError(f"{where}: {name!r} is better when {better}, so {label} must use {want}, "
                                 f"not {bounds[0]}")
        if group is not None and raw.get("options"):
            raise ParameterError(f"{where}: {label} stands for several measures and takes no options; "
                                 "give each measure its own line to set options")
        options = _options(raw.get("options"), label, where)
        _check_options(spec, options, label, where)
    else:
        threshold = _number(raw, f"the threshold of {label}", where)
        direction = str(spec.direction)
    lo, hi = spec.value_range
    if (lo is not None and threshold < lo) or (hi is not None and threshold > hi):
        shown = f"[{'−∞' if lo is None else f'{lo:g}'}, {'∞' if hi is None else f'{hi:g}'}]"
        raise ParameterError(f"{where}: the threshold {threshold:g} of {label} is outside the values {name!r} "
                             f"can take, {shown}")
    missing = [o for o in spec.requires if o not in options]
    if missing:
        raise ParameterError(f"{where}: {name!r} needs the option {missing[0]!r}, which a search cannot supply for "
                             "each release; leave it out of the policy")
    return RiskLine(name, threshold, direction, options, group)


def _epsilon(raw: Any, where: str) -> EpsilonLine | None:
    if raw is None:
        return None
    required = False
    if isinstance(raw, Mapping):
        bad = sorted(set(raw) - {"at_most", "required"})
        if bad or "at_most" not in raw:
            raise ParameterError(f"{where}: 'epsilon' must be a number or {{at_most: ε, required: true|false}}")
        required = raw.get("required", False)
        if not isinstance(required, bool):
            raise ParameterError(f"{where}: epsilon.required must be true or false, got {_kind(required)}")
        raw = raw["at_most"]
    eps = _number(raw, "epsilon", where)
    if eps <= 0:
        raise ParameterError(f"{where}: epsilon must be above 0 (the privacy budget of a differentially private "
                             f"release), got {eps:g}")
    return EpsilonLine(eps, required)


def _utility(raw: Any, registry: Mapping[str, MeasureSpec], where: str) -> tuple[str, list[UtilityTerm]]:
    if not isinstance(raw, Mapping):
        raise ParameterError(f"{where}: 'utility' must hold weights ({{weights: {{auc: 1}}}}) or a priority "
                             "order ({priority: [auc, rule_accuracy]})")
    bad = sorted(set(raw) - {"weights", "priority", "tolerance", "options", "at_most"})
    if bad:
        raise ParameterError(f"{where}: 'utility' has an unknown entry {bad[0]!r}; use weights or priority "
                             "(with tolerance), options and at_most")
    if ("weights" in raw) == ("priority" in raw):
        raise ParameterError(f"{where}: 'utility' needs exactly one of weights and priority")
    opts_raw = raw.get("options") or {}
    if not isinstance(opts_raw, Mapping):
        raise ParameterError(f"{where}: utility.options must map measures to their options")
    terms: list[UtilityTerm] = []
    if "weights" in raw:
        mode = "weights"
        if "tolerance" in raw:
            raise ParameterError(f"{where}: utility.tolerance applies to a priority order, not to weights")
        weights = raw["weights"]
        if not isinstance(weights, Mapping) or not weights:
            raise ParameterError(f"{where}: utility.weights must map utility measures to weights, e.g. {{auc: 1}}")
        for name, w in weights.items():
            _spec(name, registry, where, "utility")
            weight = _number(w, f"the weight of {name!r}", where)
            if weight <= 0:
                raise ParameterError(f"{where}: the weight of {name!r} must be above 0, got {weight:g}")
            terms.append(UtilityTerm(name, weight, 0.0, _options(opts_raw.get(name), repr(name), where)))
    else:
        mode = "priority"
        order = raw["priority"]
        if isinstance(order, str):
            order = [order]
        if not isinstance(order, Sequence) or not order:
            raise ParameterError(f"{where}: utility.priority must list utility measures, most important first")
        tol = raw.get("tolerance") or {}
        if not isinstance(tol, Mapping):
            raise ParameterError(f"{where}: utility.tolerance must map measures of the priority to tolerances")
        stray = [k for k in tol if k not in order]
        if stray:
            raise ParameterError(f"{where}: utility.tolerance names {stray[0]!r}, which is not in the priority")
        for name in order:
            _spec(name, registry, where, "utility")
            t = _number(tol.get(name, 0.0), f"the tolerance of {name!r}", where)
            if t < 0:
                raise ParameterError(f"{where}: the tolerance of {name!r} must be 0 or more, got {t:g}")
            terms.append(UtilityTerm(name, 1.0, t, _options(opts_raw.get(name), repr(name), where)))
    for term in terms:
        _check_options(registry[term.measure], term.options, f"the utility options of {term.measure!r}", where)
    names = [t.measure for t in terms]
    dup = [n for n in names if names.count(n) > 1]
    if dup:
        raise ParameterError(f"{where}: utility lists {dup[0]!r} twice")
    stray = [k for k in opts_raw if k not in names]
    if stray:
        raise ParameterError(f"{where}: utility.options names {stray[0]!r}, which is not a utility measure of the "
                             "policy")
    return mode, _ceilings(raw.get("at_most"), terms, where)


def _ceilings(raw: Any, terms: list[UtilityTerm], where: str) -> list[UtilityTerm]:
    """``utility.at_most``: the most loss of each named utility measure a release may have."""
    if raw is None:
        return terms
    if not isinstance(raw, Mapping) or not raw:
        raise ParameterError(f"{where}: utility.at_most must map utility measures of the policy to the most loss "
                             "a release may have, e.g. {auc: 0.02}")
    names = [t.measure for t in terms]
    stray = [k for k in raw if k not in names]
    if stray:
        raise ParameterError(f"{where}: utility.at_most names {stray[0]!r}, which is not a utility measure of the "
                             "policy (list it under weights or priority too)")
    return [replace(t, at_most=_number(raw[t.measure], f"the most loss of {t.measure!r}", where))
            if t.measure in raw else t for t in terms]


def _techniques(raw: Any, where: str) -> tuple[TechniqueChoice, ...] | None:
    if raw is None:
        return None
    from ppdm.anonymize.search_space import NotSearchable, canonical_name, parameters_of, space_of

    items: list[tuple[Any, Any]] = []
    if isinstance(raw, Mapping):
        items = list(raw.items())
    elif isinstance(raw, Sequence) and not isinstance(raw, str):
        for entry in raw:
            if isinstance(entry, str):
                items.append((entry, None))
            elif isinstance(entry, Mapping) and len(entry) == 1:
                items.append(next(iter(entry.items())))
            else:
                raise ParameterError(f"{where}: each entry of 'techniques' is a name or {{name: {{parameter: ...}}}}, "
                                     f"got {_kind(entry)}")
    else:
        raise ParameterError(f"{where}: 'techniques' must list technique names, got {_kind(raw)}")
    if not items:
        raise ParameterError(f"{where}: 'techniques' is empty; leave it out to allow every technique that fits")
    out: list[TechniqueChoice] = []
    for name, over in items:
        if not isinstance(name, str):
            raise ParameterError(f"{where}: a technique name must be text, got {_kind(name)}")
        name = canonical_name(name)
        try:
            space = space_of(name)
        except ParameterError as e:
            raise ParameterError(f"{where}: {e}") from None
        if isinstance(space, NotSearchable):
            raise ParameterError(f"{where}: technique {name!r} is not searched: {space.reason}")
        if over is not None and not isinstance(over, Mapping):
            raise ParameterError(f"{where}: the parameters of {name!r} must be a mapping, got {_kind(over)}")
        allowed = parameters_of(name)
        overrides: dict[str, ParamOverride] = {}
        for param, spec in (over or {}).items():
            if param not in allowed:
                raise ParameterError(f"{where}: technique {name!r} has no parameter {param!r}; its parameters: "
                                     f"{', '.join(allowed) or 'none'}")
            overrides[param] = _override(spec, f"{name}.{param}", where)
        out.append(TechniqueChoice(name, overrides))
    names = [t.name for t in out]
    dup = [n for n in names if names.count(n) > 1]
    if dup:
        raise ParameterError(f"{where}: technique {dup[0]!r} is listed twice")
    return tuple(out)


def _override(spec: Any, what: str, where: str) -> ParamOverride:
    if isinstance(spec, Mapping):
        keys = set(spec)
        if keys == {"fixed"}:
            return ParamOverride("fixed", value=spec["fixed"])
        if keys == {"choices"}:
            ch = spec["choices"]
            if not isinstance(ch, Sequence) or isinstance(ch, str) or not ch:
                raise ParameterError(f"{where}: {what}.choices must list at least one value")
            for v in ch:
                if not (v is None or isinstance(v, (str, int, float, bool))):
                    raise ParameterError(f"{where}: {what}.choices holds text, numbers, booleans or null, got "
                                         f"{_kind(v)}")
            return ParamOverride("choices", choices=tuple(ch))
        if {"low", "high"} <= keys and keys <= {"low", "high", "log"}:
            low = _number(spec["low"], f"{what}.low", where)
            high = _number(spec["high"], f"{what}.high", where)
            if low > high:
                raise ParameterError(f"{where}: {what} has low {low:g} above high {high:g}")
            log = spec.get("log")
            if log is not None and not isinstance(log, bool):
                raise ParameterError(f"{where}: {what}.log must be true or false")
            if log and low <= 0:
                raise ParameterError(f"{where}: {what} is searched on a log scale, so low must be above 0")
            whole = all(isinstance(spec[k], int) and not isinstance(spec[k], bool) for k in ("low", "high"))
            return ParamOverride("range", low=int(low) if whole else low, high=int(high) if whole else high, log=log)
        if keys & {"low", "high", "log", "choices", "fixed"}:
            raise ParameterError(f"{where}: {what} must be a value, {{low: a, high: b}}, {{choices: [...]}} or "
                                 "{fixed: value}")
    return ParamOverride("fixed", value=spec)


__all__ = ["ATTACKS", "EpsilonLine", "POLICY_FORMAT", "POLICY_VERSION", "ParamOverride", "Policy", "RiskLine",
           "TechniqueChoice", "UtilityTerm", "load_policy", "parse_policy"]
