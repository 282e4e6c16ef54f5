"""The parts of a risk policy (:mod:`ppdm.experiments.policy`): its risk lines, ε line, utility
terms and allowed techniques, and the checked :class:`Policy` they make, with its canonical
form and fingerprint. Reading and checking a policy file is :mod:`ppdm.experiments.policy`'s.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ppdm.experiments.evaluation import load_all_measures
from ppdm.metrics.base import MEASURES

POLICY_FORMAT = "ppdm.policy"
POLICY_VERSION = 1

#: what the risk axis of the front may be besides a measure name
RISK_AXIS_MAX = "max"


# ----------------------------------------------------------------------------- lines
@dataclass(frozen=True)
class RiskLine:
    """One line of a policy: measure ``measure`` (with ``options``) must be at most
    (``direction="lower"``) or at least (``"higher"``) ``threshold``, interval included."""

    measure: str
    threshold: float
    direction: str
    options: Mapping[str, Any] = field(default_factory=dict)
    group: str | None = None  # the policy word it came from ("attacks"), if any

    @property
    def op(self) -> str:
        return "≤" if self.direction == "lower" else "≥"

    def text(self) -> str:
        """The line as a reader would write it, e.g. ``k_anonymity (k=5) ≤ 0.01``."""
        opts = f" ({', '.join(f'{k}={v}' for k, v in self.options.items())})" if self.options else ""
        return f"{self.measure}{opts} {self.op} {self.threshold:g}"

    def to_dict(self) -> dict[str, Any]:
        key = "at_most" if self.direction == "lower" else "at_least"
        out: dict[str, Any] = {"measure": self.measure, key: self.threshold, "direction": self.direction,
                               "options": dict(self.options), "text": self.text()}
        if self.group:
            out["group"] = self.group
        return out


@dataclass(frozen=True)
class EpsilonLine:
    """A differentially private technique may spend at most ``at_most``; with ``required``
    only such techniques are searched."""

    at_most: float
    required: bool = False

    def text(self) -> str:
        return f"ε ≤ {self.at_most:g}" + (" (differential privacy required)" if self.required else "")


@dataclass(frozen=True)
class UtilityTerm:
    """A utility measure of the policy with its weight (weights) or tolerance (priority), and
    ``at_most``: the most loss of it a release may have (``None``: any), a line every release
    must meet as it meets the risk lines."""

    measure: str
    weight: float = 1.0
    tolerance: float = 0.0
    options: Mapping[str, Any] = field(default_factory=dict)
    at_most: float | None = None

    def ceiling_text(self) -> str:
        """The ceiling as a line, e.g. ``auc loss ≤ 0.01``."""
        return f"{self.measure} loss ≤ {self.at_most:g}"


@dataclass(frozen=True)
class ParamOverride:
    """A policy's change to one parameter of a technique's search space: a fixed value, a
    range (``low``/``high``, ``log``) or a list of ``choices``."""

    kind: str  # "fixed", "range" or "choices"
    value: Any = None
    low: float | None = None
    high: float | None = None
    log: bool | None = None
    choices: tuple[Any, ...] = ()

    def to_dict(self) -> Any:
        if self.kind == "fixed":
            return {"fixed": self.value}
        if self.kind == "choices":
            return {"choices": list(self.choices)}
        out: dict[str, Any] = {"low": self.low, "high": self.high}
        if self.log is not None:
            out["log"] = self.log
        return out


@dataclass(frozen=True)
class TechniqueChoice:
    """A technique the policy allows, with its parameter overrides."""

    name: str
    overrides: Mapping[str, ParamOverride] = field(default_factory=dict)


@dataclass(frozen=True)
class Policy:
    """A checked risk policy (see the module docstring).

    ``risk`` are the lines every release must meet; ``utility`` the measures whose loss a
    search minimises, combined by ``mode`` (``"weights"``: the weighted sum; ``"priority"``:
    the first measure decides, the next breaks near-ties within the first's tolerance, ...);
    ``techniques`` the allowed techniques (``None``: every technique that fits the table);
    ``risk_axis`` the risk shown across the front (``"max"``: the largest upper interval end
    among the share-valued lines, or a measure of the lines); ``ruled_out`` the intruder
    scenarios the owner excludes (their lines are not judged, see :meth:`rules_out`).
    """

    risk: tuple[RiskLine, ...]
    utility: tuple[UtilityTerm, ...]
    mode: str = "weights"
    epsilon: EpsilonLine | None = None
    techniques: tuple[TechniqueChoice, ...] | None = None
    risk_axis: str = RISK_AXIS_MAX
    name: str | None = None
    description: str | None = None
    source: str | None = None  # the file it was read from, for messages and provenance
    ruled_out: tuple[str, ...] = ()  # intruder scenarios the owner rules out (keys of SCENARIOS)

    # ------------------------------------------------------------------ views
    def rules_out(self, measure: str) -> bool:
        """Whether the risk line of ``measure`` is left unjudged: the intruder scenario its measure
        models is one the policy rules out."""
        if not self.ruled_out:
            return False
        spec = MEASURES.get(measure) or load_all_measures().get(measure)  # registered once the policy was read
        return spec is not None and spec.scenario in self.ruled_out

    def measure_options(self) -> dict[str, dict[str, Any]]:
        """Options of every measure of the policy, by measure (``EvaluationContext.options``)."""
        out: dict[str, dict[str, Any]] = {}
        for line in self.risk:
            if line.options:
                out[line.measure] = dict(line.options)
        for term in self.utility:
            if term.options:
                out[term.measure] = dict(term.options)
        return out

    def measures(self) -> list[str]:
        """Every measure the policy needs, risk lines first, each once."""
        names = [line.measure for line in self.risk] + [t.measure for t in self.utility]
        return list(dict.fromkeys(names))

    def to_dict(self) -> dict[str, Any]:
        """The policy in its canonical form (what a policy file would hold, every short form
        written out); :func:`parse_policy` reads it back to an equal policy."""
        risk: dict[str, Any] = {}
        for line in self.risk:
            key = "at_most" if line.direction == "lower" else "at_least"
            entry: dict[str, Any] = {key: line.threshold}
            if line.options:
                entry["options"] = dict(line.options)
            risk[line.measure] = entry
        out: dict[str, Any] = {"format": POLICY_FORMAT, "version": POLICY_VERSION}
        if self.name is not None:
            out["name"] = self.name
        if self.description is not None:
            out["description"] = self.description
        out["risk"] = risk
        if self.ruled_out:  # only when given, so that the fingerprint of every other policy stays the same
            out["rule_out"] = list(self.ruled_out)
        if self.epsilon is not None:
            out["epsilon"] = {"at_most": self.epsilon.at_most, "required": self.epsilon.required}
        if self.mode == "weights":
            utility: dict[str, Any] = {"weights": {t.measure: t.weight for t in self.utility}}
        else:
            utility = {"priority": [t.measure for t in self.utility]}
            tol = {t.measure: t.tolerance for t in self.utility if t.tolerance}
            if tol:
                utility["tolerance"] = tol
        opts = {t.measure: dict(t.options) for t in self.utility if t.options}
        if opts:
            utility["options"] = opts
        ceilings = {t.measure: t.at_most for t in self.utility if t.at_most is not None}
        if ceilings:  # only when given, so that the fingerprint of every other policy stays the same
            utility["at_most"] = ceilings
        out["utility"] = utility
        if self.techniques is not None:
            out["techniques"] = {t.name: {p: o.to_dict() for p, o in t.overrides.items()} or None
                                 for t in self.techniques}
        out["risk_axis"] = self.risk_axis
        return out

    def sha256(self) -> str:
        """A fingerprint of the canonical form (a study holds it, so a resumed search runs
        under the same policy)."""
        text = json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), default=str)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def lines_text(self) -> list[str]:
        out = [line.text() for line in self.risk]
        if self.epsilon is not None:
            out.append(self.epsilon.text())
        return out + [t.ceiling_text() for t in self.utility if t.at_most is not None]

    def utility_text(self) -> str:
        if self.mode == "weights":
            return " + ".join(f"{t.weight:g}·{t.measure}" for t in self.utility)
        return ", then ".join(t.measure + (f" (within {t.tolerance:g})" if t.tolerance else "")
                              for t in self.utility)

