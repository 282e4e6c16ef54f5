"""What a searched differentially private release really spends (``ppdm recommend``).

A search fits many releases on the same training records, measures each, keeps the best and
draws the recommended release again, possibly several times. Each differentially private
draw spends its ε on those records, whether or not it is published: the ε a searched release
can claim is the total over every draw, not the ε of the one published.

The total is reached by **basic composition** (Dwork & Roth 2014, *The Algorithmic
Foundations of Differential Privacy*, Theorem 3.14 for two mechanisms and Theorem 3.16 for
k): releases of ε₁, …, ε_k from the same records are together (ε₁ + … + ε_k)-differentially
private, also when each is chosen after seeing the ones before. Every draw counts:

* every trial of a technique with an ε, whatever became of it (a trial that failed or was
  refused by the release check may have read the records before it stopped, so its ε is
  counted, which can only overstate the total);
* every draw of the recommended release, those discarded because they missed the policy or
  were refused included, and the one published.

Trials of techniques without a differential-privacy guarantee are listed apart: they spend
no ε, but they read the same records. So does the choice itself: the search judges every
draw by exact measurements on the training and control records, which basic composition
does not bound (only a choice that reads the releases alone is post-processing, Dwork &
Roth 2014, Proposition 2.1). The total is therefore what the releases drawn spend, and the
provenance says which choice was made on top of it; the documentation
(``docs/recommend.md``, "Privacy accounting") states both.

The policy's ε line judges the total through the library's single judge
(:func:`ppdm.metrics.judgement.judge_line`), never one draw's ε.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from ppdm.metrics.judgement import LineJudgement, Measured, judge_line

#: how the total is reached, as the provenance and the report say it
COMPOSITION = "basic composition: the sum of the ε of every differentially private release drawn from the " \
              "training records"
CITATION = "Dwork & Roth 2014, The Algorithmic Foundations of Differential Privacy, Theorems 3.14 and 3.16"
#: what the total does not bound, said wherever the total is
NOT_COVERED = ("the choice among the draws reads exact measurements on the training and control records; basic "
               "composition bounds the draws, not what that choice reveals (a choice reading the releases alone "
               "would be post-processing, Dwork & Roth 2014, Proposition 2.1)")


@dataclass(frozen=True)
class Draw:
    """One differentially private release drawn from the training records: ``what`` names it
    (``"trial 3"``, ``"release draw 1"``), ``epsilon`` is what it spent."""

    what: str
    technique: str
    epsilon: float

    def to_dict(self) -> dict[str, Any]:
        return {"what": self.what, "technique": self.technique, "epsilon": self.epsilon}


@dataclass
class Accounting:
    """The ε a search spent on its training records: every draw (:class:`Draw`) and the
    trials without a guarantee, and the total by basic composition."""

    draws: list[Draw] = field(default_factory=list)
    not_private: list[str] = field(default_factory=list)

    @property
    def total(self) -> float:
        """ε₁ + … + ε_k over every draw (Dwork & Roth 2014, Theorem 3.16 with δ = 0)."""
        return math.fsum(d.epsilon for d in self.draws)

    def add(self, what: str, technique: str, epsilon: float) -> None:
        self.draws.append(Draw(what, technique, float(epsilon)))

    def sum_text(self) -> str:
        """``"0.3 + 0.5 + 0.5 = 1.3"``: the sum as a reader can redo it."""
        if not self.draws:
            return "0"
        terms = " + ".join(f"{d.epsilon:.6g}" for d in self.draws)
        return f"{terms} = {self.total:.6g}"

    def to_dict(self) -> dict[str, Any]:
        return {"epsilon_total": self.total, "composition": COMPOSITION, "citation": CITATION,
                "sum": self.sum_text(), "draws": [d.to_dict() for d in self.draws],
                "trials": sum(1 for d in self.draws if d.what.startswith("trial")),
                "release_draws": sum(1 for d in self.draws if not d.what.startswith("trial")),
                "trials_without_guarantee": len(self.not_private), "not_covered": NOT_COVERED}


def epsilon_of(technique: str, params: Mapping[str, Any], privacy: Mapping[str, Any] | None = None
               ) -> float | None:
    """The ε a release of ``technique`` with ``params`` spends: its privacy report's when it
    made one (``privacy``), else the value of the technique's ε parameter (given, or its
    default); ``None`` for a technique without one, or whose release says it is not
    differentially private (a domain read from the data)."""
    from ppdm.anonymize.search_space import SearchSpace, parameters_of, space_of

    if isinstance(privacy, Mapping):
        if not privacy.get("differentially_private"):
            return None
        eps = privacy.get("epsilon")
        if _number(eps):
            return float(eps)
    from ppdm.errors import PPDMError

    try:
        space = space_of(technique)
    except PPDMError:  # a trial stopped before it said what it ran ("?"): no ε is known to be spent
        return None
    name = space.epsilon if isinstance(space, SearchSpace) else None
    if name is None:
        return None
    value = params.get(name, parameters_of(technique).get(name))
    return float(value) if _number(value) else None


def _number(v: Any) -> TypeGuard[float]:
    """Whether ``v`` is a finite int or float (a bool is not a number here); narrows ``v`` for mypy."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v))


def search_accounting(trials: Iterable[Any]) -> Accounting:
    """What a search's trials spent (records with ``number``, ``technique``, ``params``,
    ``privacy`` and ``repeat_of``): each trial of a technique with an ε is a draw; a repeat of a
    setting already tried made no release; other trials are listed as without a guarantee."""
    acc = Accounting()
    for t in sorted(trials, key=lambda t: t.number):
        if t.repeat_of is not None:
            continue
        eps = epsilon_of(t.technique, t.params, t.privacy)
        if eps is None:
            acc.not_private.append(f"trial {t.number}")
        else:
            acc.add(f"trial {t.number}", t.technique, eps)
    return acc


def judge_epsilon(epsilon: float, cap: float) -> LineJudgement:
    """The policy's ε line (``ε ≤ cap``) on a total, by the library's single judge; the margin
    is in units of the cap."""
    return judge_line(Measured("epsilon", value=float(epsilon)), float(cap), "lower", span=max(float(cap), 1e-12))


def over_budget(acc: Accounting, epsilon: float, cap: float | None) -> str | None:
    """Why one more draw at ``epsilon`` is not made (its total would miss a cap), or ``None``."""
    if cap is None:
        return None
    after = acc.total + float(epsilon)
    if judge_epsilon(after, cap).met:
        return None
    return (f"another draw at ε = {epsilon:.4g} would bring the total spent on the training records to "
            f"{after:.4g} ({acc.total:.4g} over {len(acc.draws)} earlier draw(s)), more than the policy's "
            f"ε ≤ {cap:g}")


def searched_privacy(privacy: Mapping[str, Any] | None, acc: Accounting) -> dict[str, Any] | None:
    """A draw's privacy outcome (``differentially_private``, ``epsilon``) with what the search
    spent in all (``epsilon_total``, ``draws``, ``sum``), which the policy's ε line judges;
    unchanged for a release without a guarantee."""
    if not isinstance(privacy, Mapping) or not privacy.get("differentially_private"):
        return None if privacy is None else dict(privacy)
    return {**privacy, "epsilon_total": acc.total, "draws": len(acc.draws), "sum": acc.sum_text()}


def provenance_privacy(privacy: Mapping[str, Any], acc: Accounting) -> dict[str, Any]:
    """A searched release's public privacy record: its ε is the total (and so is what it
    spent), the draw's own ε is kept as ``epsilon_of_this_draw`` (its ``phases`` add up to
    that), and ``search`` says how the total was reached."""
    out = dict(privacy)
    out["epsilon_of_this_draw"] = privacy.get("epsilon")
    out["epsilon"] = acc.total
    out["epsilon_spent"] = acc.total
    out["search"] = acc.to_dict()
    own = privacy.get("guarantee")
    out["guarantee"] = (f"With the search that chose it, the release is {acc.total:.6g}-differentially private by "
                        f"basic composition over the {len(acc.draws)} differentially private releases drawn from "
                        f"the training records ({acc.sum_text()}; {CITATION}); not covered: {NOT_COVERED}."
                        + (f" This draw alone: {own}" if own else ""))
    return out


def summary(acc: Accounting) -> str:
    """One line on what a search spent, for the screen and the report."""
    return (f"ε spent on the training records: {acc.sum_text()} over {len(acc.draws)} differentially private "
            f"draw(s) ({sum(1 for d in acc.draws if d.what.startswith('trial'))} trial(s) and the release's draws), "
            f"by basic composition ({CITATION}); the release claims the total")


__all__ = ["CITATION", "COMPOSITION", "NOT_COVERED", "Accounting", "Draw", "epsilon_of", "judge_epsilon",
           "over_budget", "provenance_privacy", "search_accounting", "searched_privacy", "summary"]
