"""One judge for every verdict: ``ppdm evaluate``, ``ppdm compare`` and ``ppdm recommend``.

A measured value is held to a threshold here and nowhere else. The evaluation's verdicts
(risk LOW / HIGH / UNCERTAIN, utility KEPT / REDUCED / UNCERTAIN) and a risk policy's lines
both go through :func:`judge_line`, so the same outcome gets the same judgement whichever
command asks.

A line's state is one of:

* ``meets`` — the value, and its whole confidence interval when it has one, is within the
  threshold;
* ``misses`` — the value (the whole interval) is past it;
* ``uncertain`` — the interval straddles the threshold, or the value only bounds the risk
  from below (a pairing-free form that sees verbatim copies only): a lower bound within the
  threshold says nothing about the risk, so it never meets; it misses only when the bound
  itself is past the threshold;
* ``not measured`` — the measure could not be computed (the reason says what would let it
  run: a control set, the private log, a class column);
* ``not applicable`` — the intruder scenario the measure models does not act on this release
  (key frequencies of perturbed quasi-identifiers); another measure judges that intruder.

A value printed in percent (a measure option ``percent=true``) is read as the share it
stands for, in :func:`read_entry` only. A measure whose value is that of its worst part (the
worst column of ``column_fidelity``, the worst sensitive attribute of ``attribute_disclosure``)
names the part in its details' ``worst``, and the verdict sentence says it ("column_fidelity =
0.02 at charges"), so a destroyed column is named where the verdict is read.

Risk verdicts judge intruder *scenarios* (:data:`ppdm.metrics.base.SCENARIOS`): the verdict
is the worst of them. A risk measure that could not be measured leaves the verdict
UNCERTAIN, never LOW, and so does a scenario no measure was asked for (an evaluation narrowed
with ``--measures``); an owner who rules a scenario out (for example, no intruder can hold
the original records) says so explicitly, and the verdict sentence names the exclusion.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ppdm.metrics.base import SCENARIOS, judge

MEETS = "meets"
MISSES = "misses"
UNCERTAIN = "uncertain"
NOT_MEASURED = "not measured"
NOT_APPLICABLE = "not applicable"
#: every state a judged line can be in
STATES = (MEETS, MISSES, UNCERTAIN, NOT_MEASURED, NOT_APPLICABLE)

#: the margin of a line that was not measured (a search's sampler reads it as far outside)
NOT_MEASURED_MARGIN = 1.0

#: short names of the intruder scenarios, as verdict sentences say them
SCENARIO_WORDS: dict[str, str] = {
    "originals": "who holds x's records",
    "quasi-identifiers": "who knows the quasi-identifiers",
    "sensitive": "who learns a sensitive attribute",
    "control": "attacks against a control set",
}


def result_lower_bound(result: Any) -> str | None:
    """What would settle a result that only bounds the risk from below (its ``lower_bound``
    text: the private log, a control set), or ``None`` when its value is the risk itself."""
    why = getattr(result, "lower_bound", None)
    if why is None and getattr(result, "result", None) is not None:  # a sampled measure's own result
        why = getattr(result.result, "lower_bound", None)
    return str(why) if why else None


# ----------------------------------------------------------------------- what was measured
@dataclass(frozen=True)
class Measured:
    """One measure's outcome as the judge reads it.

    ``value`` and ``interval`` are on the measure's own scale divided by ``scale`` (a
    percentage is read as a share); ``reason`` says why it was not computed, ``not_judged``
    why its scenario does not apply, ``lower_bound`` what would settle a value that only bounds
    the risk from below; ``after_miss`` marks a measure a search left out because another line
    had already missed.
    """

    name: str
    value: float | None = None
    interval: tuple[float, float] | None = None
    reason: str | None = None
    not_judged: str | None = None
    lower_bound: str | None = None
    scale: float = 1.0
    after_miss: bool = False
    at: str | None = None


def _finite(v: Any) -> bool:
    try:
        return v is not None and not isinstance(v, bool) and math.isfinite(float(v))
    except (TypeError, ValueError):
        return False


def read_entry(name: str, entry: Mapping[str, Any]) -> Measured:
    """:class:`Measured` from an evaluation document's measure entry or a search's trial entry
    (``interval`` or ``ci_low``/``ci_high``; ``not_judged`` or ``not_applicable``)."""
    details = entry.get("details") or {}
    scale = 100.0 if details.get("percent") is True or entry.get("percent") is True else 1.0
    value = float(entry["value"]) / scale if _finite(entry.get("value")) else None
    iv = entry.get("interval")
    if iv is None and _finite(entry.get("ci_low")) and _finite(entry.get("ci_high")):
        iv = (entry["ci_low"], entry["ci_high"])
    interval = None
    if iv is not None and all(_finite(v) for v in iv):
        lo, hi = sorted(float(v) / scale for v in iv)
        interval = (lo, hi)
    not_judged = entry.get("not_judged")
    if not not_judged and entry.get("not_applicable"):
        not_judged = entry.get("reason") or "the intruder scenario it models does not apply to this release"
    worst = details.get("worst")
    return Measured(name, value, interval, entry.get("reason"), str(not_judged) if not_judged else None,
                    entry.get("lower_bound") or None, scale, bool(entry.get("skipped")),
                    worst if isinstance(worst, str) and worst else None)


# ------------------------------------------------------------------------------- one line
@dataclass
class LineJudgement:
    """One measure held to one threshold: its state (one of :data:`STATES`), the value and
    interval on the measure's own scale, and ``margin``: how far inside (≤ 0) or outside (> 0)
    the threshold the worst end of the interval lies, in units of ``span`` (the measure's range);
    ``at`` names the part (a column, a pair) whose value it is, when the measure names one."""

    measure: str
    state: str
    threshold: float
    direction: str
    value: float | None = None
    interval: tuple[float, float] | None = None
    margin: float = 0.0
    reason: str | None = None
    scenario: str | None = None
    lower_bound: bool = False
    scale: float = 1.0
    at: str | None = None

    @property
    def met(self) -> bool:
        return self.state in (MEETS, NOT_APPLICABLE)

    def to_dict(self) -> dict[str, Any]:
        return {"measure": self.measure, "value": self.value, "threshold": self.threshold * self.scale,
                "direction": self.direction, "interval": list(self.interval) if self.interval else None,
                "judgement": self.state, "meets": self.state == MEETS, "scenario": self.scenario,
                "lower_bound": self.lower_bound, "reason": self.reason, "at": self.at}


def judge_line(m: Measured, threshold: float, direction: str, *, span: float = 1.0,
               scenario: str | None = None) -> LineJudgement:
    """Hold ``m`` to ``threshold`` (a share when the measure prints percent) in ``direction``."""
    unscale = m.scale

    def line(state: str, margin: float, reason: str | None = None) -> LineJudgement:
        return LineJudgement(m.name, state, float(threshold), direction,
                             None if m.value is None else m.value * unscale,
                             None if m.interval is None else (m.interval[0] * unscale, m.interval[1] * unscale),
                             margin, reason, scenario, bool(m.lower_bound), unscale, m.at)

    if m.not_judged:
        return line(NOT_APPLICABLE, 0.0, m.not_judged)
    if m.value is None:
        # a line left out after another missed adds nothing to the excess a search's sampler sees
        return line(NOT_MEASURED, 0.0 if m.after_miss else NOT_MEASURED_MARGIN, m.reason or "not computed")
    state = judge(m.value, threshold, direction, m.interval)
    lo, hi = m.interval if m.interval is not None else (m.value, m.value)
    if direction == "lower":
        margin = (max(hi, m.value) - threshold) / span
    else:
        margin = (threshold - min(lo, m.value)) / span
    if m.lower_bound and state != MISSES:
        # a lower bound within the threshold says nothing about the risk above it
        return line(UNCERTAIN, max(margin, 0.0), f"only a lower bound: {m.lower_bound}")
    return line(str(state), margin)


def span_of(value_range: tuple[float | None, float | None], threshold: float) -> float:
    """The unit margins are measured in: the measure's range, or the threshold's size."""
    lo, hi = value_range
    if lo is not None and hi is not None and hi > lo:
        return float(hi - lo)
    return max(1.0, abs(threshold))


#: the allowance of a line that allows nothing (a threshold of 0), as a share of its measure's range
ALLOWANCE_FLOOR = 0.01


def allowance(value_range: tuple[float | None, float | None], threshold: float, direction: str) -> float:
    """The unit a search measures a line's margin in: what the line allows — the threshold itself
    for a measure better when lower (a risk, a utility loss), the room from the threshold to the
    top of the range for one better when higher — or, when that is nothing (k_anonymity ≤ 0),
    :data:`ALLOWANCE_FLOOR` of the range. A release over an AUC-loss cap of 0.0012 by 0.002 then misses by 1.7 allowances, not
    by 0.002 of AUC's range: on the range's scale a small cap's miss looked negligible beside a
    risk line's, and a search's sampler kept drawing a technique that never met the cap."""
    width = span_of(value_range, threshold)
    hi = value_range[1]
    room = abs(threshold) if direction == "lower" or hi is None else float(hi) - threshold
    return room if room > 0 else ALLOWANCE_FLOOR * width


# -------------------------------------------------------------------------------- verdicts
#: verdict words per topic: title, good status, bad status
_WORDS = {"risk": ("Disclosure risk", "low", "high"), "utility": ("Utility", "kept", "reduced")}
#: the attacks that compare what a release tells about its own people with what it tells about
#: a control set (Giomi et al. 2023): the one list, used by the verdicts and by policies' ``attacks``
ATTACKS = ("singling_out_univariate", "singling_out_multivariate", "linkability", "inference")


@dataclass
class Verdict:
    """One sentence on risk or utility, with the numbers and thresholds behind it.

    ``judged`` lists the lines held to their thresholds, ``not_judged`` the measures whose
    scenario does not apply, ``not_measured`` those that could not be computed (a risk
    verdict is never LOW while one is missing), ``scenarios`` the intruder scenarios judged and
    ``ruled_out`` those the owner excluded, ``unasked`` those no measure of the evaluation
    models (a risk verdict is never LOW while one is left: :func:`unasked_scenarios`).
    """

    topic: str
    status: str
    sentence: str
    judged: list[dict[str, Any]] = field(default_factory=list)
    not_judged: list[dict[str, Any]] = field(default_factory=list)
    not_measured: list[dict[str, Any]] = field(default_factory=list)
    scenarios: list[str] = field(default_factory=list)
    ruled_out: list[str] = field(default_factory=list)
    unasked: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "sentence": self.sentence, "judged": self.judged,
                "not_judged": self.not_judged, "not_measured": self.not_measured,
                "scenarios": self.scenarios, "ruled_out": self.ruled_out, "unasked_scenarios": self.unasked}


def fmt_number(v: Any, digits: int = 4) -> str:
    """A number with ``digits`` significant digits; missing values as a dash."""
    if v is None:
        return "—"
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    if not math.isfinite(f):
        return "—"
    return f"{f:.{digits}g}"

#: a measure that judges each intruder scenario, for the hint of a verdict that left one out
SCENARIO_HINT: dict[str, str] = {
    "originals": "record_linkage",
    "quasi-identifiers": "k_anonymity_intruder",
    "sensitive": "attribute_disclosure",
    "control": "linkability",
}


def _op(direction: str) -> str:
    return "≤" if direction == "lower" else "≥"


def _join(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def _advice(uncertain: list[LineJudgement], measures: Mapping[str, Mapping[str, Any]]) -> str:
    """How to settle lines whose interval straddles their threshold, or that only bound the risk."""
    ways = []
    bounds = [j for j in uncertain if j.lower_bound]
    if bounds:
        ways.append("the release's private log (--private) for the exact value of " + _join([j.measure for j in bounds]))
    straddle = [j for j in uncertain if not j.lower_bound]
    attacks = [j.measure for j in straddle if j.measure in ATTACKS]
    if attacks:
        ways.append(f"more attacks (-p {attacks[0]}.n_attacks=N) or a bigger control set (--holdout, --control)")
    sampled = [j.measure for j in straddle if j.measure not in ATTACKS
               and (measures[j.measure].get("details") or {}).get("sample_size") is not None]
    if sampled:
        ways.append("a bigger sample (--sample-rows, or -p NAME.sample=N)")
    if straddle and not attacks and not sampled:
        ways.append("more records or repeated measurement")
    return "to settle it: " + " or ".join(ways)


def _show(j: LineJudgement, should: bool) -> str:
    rule = f"{_op(j.direction)} {fmt_number(j.threshold * j.scale)}"
    ci = f" [{fmt_number(j.interval[0], 3)}, {fmt_number(j.interval[1], 3)}]" if j.interval else ""
    bound = " (a lower bound)" if j.lower_bound else ""
    at = f" at {j.at}" if j.at else ""
    return f"{j.measure} = {fmt_number(j.value)}{ci}{bound}{at} ({'should be ' if should else ''}{rule})"


def judge_measures(topic: str, measures: Mapping[str, Mapping[str, Any]],
                   ruled_out: Iterable[str] = ()) -> list[LineJudgement]:
    """Every measure of ``topic`` with a threshold and a direction held to it, except risk measures
    whose scenario is in ``ruled_out``."""
    out: list[LineJudgement] = []
    ruled = set(ruled_out)
    for name, m in measures.items():
        if m.get("kind") != topic or m.get("threshold") is None or m.get("direction") not in ("higher", "lower"):
            continue
        if topic == "risk" and m.get("scenario") in ruled:
            continue
        meas = read_entry(name, m)
        # thresholds are shares; a value printed in percent was read as its share
        out.append(judge_line(meas, float(m["threshold"]), m["direction"],
                              span=span_of(tuple(m.get("range") or (None, None)), float(m["threshold"])),
                              scenario=m.get("scenario")))
    return out


def verdict(topic: str, measures: Mapping[str, Mapping[str, Any]], *, ruled_out: Iterable[str] = ()) -> Verdict:
    """The verdict on ``topic`` ("risk" or "utility") from an evaluation document's measures.

    Bad ("high" risk, utility "reduced") when a judged line misses; "uncertain" when none
    misses but some straddle their threshold, only bound the risk from below, or (for risk)
    could not be measured — with what would settle it; good ("low", "kept") only when every
    line meets its threshold. Lines whose scenario does not apply are named, not judged; the
    scenarios in ``ruled_out`` are left out and named in the sentence.
    """
    title, good, bad = _WORDS[topic]
    ruled = sorted(set(ruled_out)) if topic == "risk" else []
    lines = judge_measures(topic, measures, ruled)
    absent = unasked_scenarios(measures, ruled) if topic == "risk" else []
    unjudged: list[dict[str, Any]] = [{"measure": j.measure, "reason": j.reason} for j in lines if j.state == NOT_APPLICABLE]
    missing = [j for j in lines if j.state == NOT_MEASURED]
    judged = [j for j in lines if j.state in (MEETS, MISSES, UNCERTAIN)]
    order = list(SCENARIO_WORDS)
    scenarios = sorted({j.scenario for j in judged if j.scenario},
                       key=lambda s: order.index(s) if s in order else len(order))
    ruled_text = ("; ruled out by the owner: " + _join([SCENARIO_WORDS.get(s, s) for s in ruled])) if ruled else ""
    missing_dicts = [{"measure": j.measure, "reason": j.reason} for j in missing]
    # utility keeps its old reading of a skipped measure: listed, not judged
    blocking = missing if topic == "risk" else []
    absent_text = ("; intruders not judged (no measure of theirs was asked for): " + _join(
        [f"{SCENARIO_WORDS.get(s, s)} (add --measures {SCENARIO_HINT.get(s, '…')} or --rule-out {s})"
         for s in absent])) if absent else ""
    if not judged:
        why = (f"{_join([j.measure for j in missing])} could not be computed (see below)" if missing
               else f"no {topic} measure with a threshold was computed")
        if unjudged and not missing:
            why = f"{_join([u['measure'] for u in unjudged])} do not apply to this release"
        hint = " (add e.g. --measures ddr,idr)" if topic == "risk" and not missing else ""
        return Verdict(topic, "not judged", f"{title} was not judged: {why}{hint}{absent_text}{ruled_text}.", [],
                       unjudged, missing_dicts, [], ruled, absent)
    misses = [j for j in judged if j.state == MISSES]
    unsure = [j for j in judged if j.state == UNCERTAIN]
    meets = [j for j in judged if j.state == MEETS]
    k = len(judged)
    if misses:
        head = f"{title} is {bad.upper()}: {len(misses)} of {k} judged {topic} measures miss their threshold"
        tail = " — " + _join([_show(j, True) for j in misses])
        if unsure:
            tail += "; uncertain: " + _join([_show(j, False) for j in unsure])
        status = bad
    elif unsure or blocking or absent:
        parts = []
        if unsure:
            parts.append(f"{len(unsure)} of {k} judged straddle their threshold or only bound the risk from below")
        if blocking:
            parts.append(f"{len(blocking)} could not be measured")
        if absent:
            parts.append(f"{len(absent)} intruder scenario{'s' if len(absent) > 1 else ''} went unjudged")
        head = f"{title} is UNCERTAIN: no judged {topic} measure misses its threshold, but " + " and ".join(parts)
        tail = ""
        if unsure:
            tail += " — " + _join([_show(j, False) for j in unsure]) + "; " + _advice(unsure, measures)
        if blocking:
            tail += ("; not measured: " if unsure else " — not measured: ") + _join(
                [f"{j.measure} ({_short(j.reason)})" for j in blocking])
        status = UNCERTAIN
    else:
        head = f"{title} is {good.upper()}: every judged {topic} measure meets its threshold"
        tail = ""
        status = good
    if meets:
        tail += ("; within: " if misses or unsure or blocking else " — ") + _join([_show(j, False) for j in meets])
    if topic == "risk" and scenarios:
        tail += "; intruders judged: " + _join([SCENARIO_WORDS.get(s, s) for s in scenarios])
    return Verdict(topic, status, head + tail + absent_text + ruled_text + ".", [j.to_dict() for j in judged],
                   unjudged, missing_dicts, scenarios, ruled, absent)


def unasked_scenarios(measures: Mapping[str, Mapping[str, Any]], ruled_out: Iterable[str] = ()) -> list[str]:
    """The intruder scenarios (:data:`ppdm.metrics.base.SCENARIOS`) that no risk measure of
    ``measures`` models and the owner did not rule out: a subset of measures
    (``--measures``) that leaves one out says nothing about that intruder, so the risk
    verdict cannot be LOW. A scenario whose measures were asked for but do not apply (no
    sensitive attribute declared) or could not run counts as asked for: those states are
    judged on their own."""
    asked = {m.get("scenario") for m in measures.values() if m.get("kind") == "risk"}
    ruled = set(ruled_out)
    return [s for s in SCENARIOS if s not in asked and s not in ruled]


def _short(reason: str | None) -> str:
    """The first clause of a skip reason, for a verdict sentence."""
    text = " ".join(str(reason or "not computed").split())
    for sep in (": ", "; "):
        if sep in text:
            text = text.split(sep)[0]
    return text


def verdicts(measures: Mapping[str, Mapping[str, Any]], *, ruled_out: Iterable[str] = ()) -> dict[str, Verdict]:
    """Risk and utility verdicts of an evaluation document's ``measures``."""
    return {"risk": verdict("risk", measures, ruled_out=ruled_out), "utility": verdict("utility", measures)}


def check_scenarios(names: Iterable[str]) -> list[str]:
    """Scenario names an owner rules out, checked against :data:`ppdm.metrics.base.SCENARIOS`."""
    from ppdm.errors import ParameterError
    from ppdm.utils import unknown_name

    out = []
    for n in names:
        n = str(n).strip()
        if not n:
            continue
        if n not in SCENARIOS:
            raise ParameterError(unknown_name("intruder scenario", n, sorted(SCENARIOS)))
        out.append(n)
    return out


__all__ = ["MEETS", "MISSES", "NOT_APPLICABLE", "NOT_MEASURED", "SCENARIO_WORDS", "STATES", "UNCERTAIN",
           "LineJudgement", "Measured", "Verdict", "check_scenarios", "fmt_number", "judge_line", "judge_measures",
           "read_entry", "result_lower_bound", "span_of", "allowance", "unasked_scenarios", "verdict", "verdicts"]
