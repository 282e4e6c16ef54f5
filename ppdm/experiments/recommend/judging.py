"""The policy's lines on one trial of ``ppdm recommend``.

Every line is held to its threshold by the library's single judge,
:func:`ppdm.metrics.judgement.judge_line` (the one ``ppdm evaluate``'s verdicts use); this module
only reads a trial's outcome into that judge's terms, applies the policy's scenario rules
(a line whose intruder does not act on the release; scenarios ruled out) and the ε line
(:func:`ppdm.experiments.recommend.accounting.judge_epsilon`, the same judge), and reads the
utility losses and the risk value the search minimises, and holds each loss to its ceiling
(``utility.at_most``) when the policy sets one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ppdm.experiments.evaluation import load_all_measures
from ppdm.experiments.policy import RISK_AXIS_MAX, Policy, RiskLine
from ppdm.experiments.recommend.accounting import NOT_USED, NOT_USED_TRIAL, judge_epsilon
from ppdm.metrics.base import SCENARIOS
from ppdm.metrics.judgement import NOT_MEASURED_MARGIN, Measured, allowance, judge_line, read_entry

_NOT_MEASURED = NOT_MEASURED_MARGIN


@dataclass
class LineVerdict:
    """One policy line on one release: ``verdict`` is meets / misses / uncertain (the interval
    straddles the threshold), not measured, not applicable (the intruder scenario the measure
    models does not apply to the release, and another line of the policy judges that scenario;
    ε for a technique without a differential-privacy guarantee) or not judged (no line of the
    policy on that scenario applies to the release: it does not meet the policy); ``margin``
    is how far inside (≤ 0) or outside (> 0) the threshold the worst end of the interval lies,
    in units of what the line allows (:func:`ppdm.metrics.judgement.allowance`)."""

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
        j = judge_line(meas, line.threshold, line.direction,
                       span=allowance(registry[line.measure].value_range, line.threshold, line.direction))
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
    out += _ceiling_lines(outcome, policy, registry)
    return out


def _ceiling_lines(outcome: Mapping[str, Any], policy: Policy, registry: Mapping[str, Any]) -> list[LineVerdict]:
    """The policy's utility ceilings (``utility.at_most``) on one trial: each loss, as the search
    ranks by it (:func:`utility_losses`), held to its ceiling by the same judge as the risk lines."""
    if all(t.at_most is None for t in policy.utility):
        return []
    losses = utility_losses(outcome, policy)
    measures = outcome.get("measures") or {}
    out = []
    for t in policy.utility:
        if t.at_most is None:
            continue
        entry = measures.get(t.measure) or {}
        meas = Measured(t.measure, losses.get(t.measure),
                        reason=entry.get("reason") or outcome.get("error") or "not computed",
                        after_miss=bool(entry.get("skipped")))
        j = judge_line(meas, t.at_most, "lower", span=allowance(registry[t.measure].value_range, t.at_most, "lower"))
        out.append(LineVerdict(t.ceiling_text(), t.measure, j.state, j.value, None, j.margin, j.reason))
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
        out[term.measure] = None if v is None else loss_of(registry[term.measure], float(v))
    return out


def loss_of(spec: Any, value: float) -> float:
    """A utility measure's value as a loss (lower is better): the value of a measure better
    when lower, the distance below the range's top (or minus the value) for one better when higher."""
    if spec.direction == "lower":
        return float(value)
    hi = spec.value_range[1]
    return float(hi - value) if hi is not None else -float(value)


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
