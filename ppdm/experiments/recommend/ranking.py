"""Trials of ``ppdm recommend`` as records (:class:`TrialRecord`), the front of the trials no
other beats on risk and utility loss, the ranking that picks the winner, and why no trial met
the policy (:func:`unmet_report`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ppdm.experiments.policy import Policy
from ppdm.experiments.recommend.accounting import (
    counted_epsilon,
    epsilon_of,
    neighbouring_of,
    risk_of_epsilon,
)
from ppdm.experiments.recommend.judging import (
    LineVerdict,
    judge_lines,
    risk_value,
    skipped_line,
    utility_loss,
    utility_losses,
)


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
    #: a differentially private trial's exact utility losses, for the owner's eyes only: never read by a
    #: decision (``utility`` holds the noisy scores it was judged by), never shown as what it was judged by
    measured_utility: dict[str, float | None] | None = None

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
                "ran": self.ran, "measured_utility": self.measured_utility}


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
                       None if scores is None else dict(scores),
                       measured_utility=None if scores is None else utility_losses({**outcome, "scores": None}, policy))


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


def excess(margins: Iterable[float]) -> float:
    """How far a trial lies outside the policy: the sum of its lines' margins beyond what the lines
    allow (0 when it meets every line)."""
    return sum(max(0.0, m) for m in margins)


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

    best = min(measured, key=lambda r: (excess(v.margin for v in r.lines), r.number)) if measured else None
    return {
        "lines": per_line,
        "never_met": never,
        "closest_trial": None if best is None else {
            "trial": best.number, "label": best.label, "excess": excess(v.margin for v in best.lines),
            "missed": [v.to_dict() for v in best.failed_lines() if not skipped_line(v)]},
        "trials": len(measured),
    }
