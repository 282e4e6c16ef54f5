"""What a searched differentially private release really spends (``ppdm recommend``).

A search fits many releases on the same training records, measures each, keeps the best and
publishes it. The ε a differentially private winner can claim must cover everything the
search did with the private records x (training and control split): every trial, the
numbers the choice was made from, and the release published. This module says how that
holds and counts the total.

**Neighbouring tables.** The search splits x by position into training and control records
(a split drawn independently of the values). Tables that differ in one record at the same
position (*replace-one* neighbours, of the same, public size) give training splits that
differ in at most one record, and control splits likewise; under add/remove-one neighbours
the split itself would move. The whole search's guarantee is therefore stated for replace-one
neighbours. A release that is ε-differentially private under add/remove-one neighbours is
2ε-differentially private under replace-one (a replacement is a removal and an addition:
group privacy, Dwork & Roth 2014, *The Algorithmic Foundations of Differential Privacy*,
Theorem 2.2), so such a draw is counted twice its ε; a release made with
``neighbouring="replace"`` counts its ε once (:func:`counted_epsilon`).

**Composition.** Every differentially private mechanism run on x counts by **basic
composition** (Dwork & Roth 2014, Theorem 3.16 with δ = 0): mechanisms of ε₁, …, ε_k are
together (ε₁ + … + ε_k)-differentially private, also when each is chosen from the outputs of
those before (adaptive composition, §3.5.2). The search is such a chain: the sampler proposes
each trial's technique and parameters (its ε included) from what earlier trials output, and
the choice is made from the same outputs, so the claim is the sum over the draws actually
made (for pure ε-DP the privacy loss of every outcome is at most that sum). The terms:

* every trial of a differentially private technique, whatever became of it (one that failed
  may have read the records first, so its ε counts: this can only overstate the total);
* every trial's **scores** (below), at the scoring ε ``ε_s`` (:data:`DEFAULT_SCORE_EPSILON`);
* a fresh draw of the release, made only when the release is refitted on the whole table
  (``refit``) or when the winner's release could not be made again exactly.

**Decisions read noisy scores only.** A trial of a differentially private technique is
judged by the utility measures of the policy, each released through the **Laplace
mechanism** (Dwork & Roth 2014, Definition 3.1 and Theorem 3.6): the score plus
Laplace(Δ·L/ε_s) noise, where Δ is its ℓ1-sensitivity under replace-one neighbours given the
release (the release itself is already counted) and L the number of utility measures, so one
trial's scores together spend ε_s. Whether it meets the policy, its rank, the winner, and
what the sampler and the racing of techniques learn from it are functions of these noisy
scores, the parameters and the ε alone: post-processing (Dwork & Roth 2014, Proposition 2.1).
The sensitivities (:func:`score_rule`):

* ``prediction_accuracy``: the share of the control split's |H| records that Ψz, a model
  trained on the release alone, classifies correctly (a record it cannot route counts as
  wrong). Each control record adds at most 1/|H|, so Δ = 1/|H|; |H| is public (a fixed share
  of the public size). Its loss is 1 − the noisy share. The paper's comparison with Ψx is
  left out: Ψx is fitted on the training records and one record can change it entirely.
* every other utility measure with a bounded range [lo, hi]: its value clipped to the range,
  Δ = hi − lo (no two tables can give values further apart). Valid for any such measure, but
  the noise is then as wide as the range times L/ε_s.
* a measure without a bounded range cannot score a differentially private trial
  (:func:`score_rule` raises): the differentially private techniques are left out, as below.

**Scores too noisy to choose by are not used.** A score whose Laplace scale Δ·L/ε_s exceeds
:data:`MAX_SCORE_NOISE` of its measure's range (:func:`score_noise`) would rank the trials by
its noise: at ε_s = 0.1 a range-wide sensitivity gives a scale ten times the range, and a
search that "chooses" by it reports whichever draw the noise favoured, however poor. Such a
search leaves its differentially private techniques out and says why, also when the policy
names them, instead of choosing blind; with no other technique left it refuses to start.
prediction_accuracy on a control split of 500 records or more stays inside the limit at 0.1.

**Risk lines do not decide a differentially private release.** Risk measured against x
(linkage, copies, attacks) has no sensitivity that can be bounded, so reading it to accept
or reject a draw would be a choice no ε covers. For a differentially private release ε *is*
the risk claim, and the policy's ε line judges the total (:func:`judge_epsilon`, the
library's single judge, never one draw's ε). Risk lines are still measured on the published
release and given to the owner privately as "measured, not used for the decision". The
release check's data-dependent refusals (copies of x) do not reject a differentially private
draw either: they are recorded as warnings in the owner's log.

**The release** is the winning trial's own release, made again from its seed (no new draw:
nothing more is spent, and it is never rejected by a measurement). Only a refitted release
(on the whole table) is a fresh draw, counted, and not measured for acceptance.

**Why not private selection.** Liu & Talwar 2019 (*Private Selection from Private
Candidates*, STOC: about 3ε for a geometrically distributed number of runs) and Papernot &
Steinke 2022 (*Hyperparameter Tuning with Renyi Differential Privacy*, ICLR: a truncated
negative binomial or Poisson number of runs) bound the cost of the best of many runs
independently of their number, but assume each run is an independent draw of one fixed
mechanism (random search) and that the number of runs is random with the stated law.
ppdm's search is adaptive (TPE proposes each trial from the earlier ones) and is stopped by
a trial or time budget, outside both theorems' assumptions; basic composition holds as is.

**Adaptively chosen ε: a privacy filter.** Basic composition as stated above fixes every
εᵢ before the search; here the sampler chooses each trial's ε (and whether a differentially
private trial runs at all) from earlier noisy outputs, so the realised sum ε₁ + … + ε_k is
itself a function of the outputs. For pure ε-DP it bounds the privacy loss of every outcome
(each step's loss is at most the εᵢ chosen from the outputs before it), but that is an
*ex-post* bound (Ligett, Neel, Roth, Waggoner & Wu 2017, *Accuracy First*, NeurIPS; Rogers,
Roth, Ullman & Vadhan 2016, *Privacy Odometers and Filters: Pay-as-you-Go Composition*,
NeurIPS, their "privacy odometer" use), not ε-DP for an ε fixed in advance. With the policy's ε
line ε ≤ B the search is instead a **privacy filter** (Rogers et al. 2016: a stopping rule
that halts before a budget fixed in advance is exceeded; their basic-composition filter, with
δ = 0 for pure DP, continues while ε₁ + … + εᵢ ≤ B): B is fixed before the search, and a
mechanism runs only if the spent sum plus its own ε stays ≤ B (:class:`PrivacyFilter`), so the
whole search is B-differentially private whatever the sampler chose, and the total spent S ≤ B
by construction. A differentially private trial is charged up front at its release's counted
ε plus its scoring ε (:func:`trial_cost`); one that would not fit is not run. Without an ε line
the total is stated as the ex-post bound it is (:data:`EX_POST`).

**Mixed searches.** Trials of techniques without a guarantee are measured exactly against x
and judged by every risk line. When a differentially private release wins a search that also
tried such techniques, the choice over them, and the settings the sampler proposed after
them, depend on those exact measurements: :data:`NOT_COVERED` says so wherever the total is
stated. A search of differentially private techniques alone is covered in full.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeGuard

import numpy as np

from ppdm.errors import ParameterError
from ppdm.metrics.judgement import LineJudgement, Measured, judge_line

#: the ε each differentially private trial's scores spend in all (``--score-epsilon``)
DEFAULT_SCORE_EPSILON = 0.1
#: how the total is reached, as the provenance and the report say it
COMPOSITION = ("basic composition over replace-one neighbours: the sum of the ε of every differentially private "
               "release drawn from the records and of every trial's Laplace-noised scores")
CITATION = ("Dwork & Roth 2014, The Algorithmic Foundations of Differential Privacy: Theorem 3.16 (composition), "
            "Theorem 3.6 (Laplace mechanism), Theorem 2.2 (group privacy), Proposition 2.1 (post-processing)")
NEIGHBOURS = "replace-one: tables of the same, public size that differ in one record"
#: what the total does not cover in a search that also tried techniques without a guarantee
NOT_COVERED = ("{n} trial(s) of techniques without a differential-privacy guarantee were measured exactly against "
               "the training and control records; choosing this release over them, and the settings the sampler "
               "proposed after them, depend on those measurements, which no ε covers. The total covers the "
               "differentially private trials, their scores and the release")
#: the privacy filter that makes the sum a guarantee fixed in advance (an ε line: budget B)
FILTER_CITATION = ("Rogers, Roth, Ullman & Vadhan 2016, Privacy Odometers and Filters: Pay-as-you-Go Composition "
                   "(NeurIPS), the basic-composition privacy filter with δ = 0")
FILTER = ("ε budget {budget:g} fixed before the search (privacy filter, " + FILTER_CITATION + "): a differentially "
          "private mechanism ran only if the total spent plus its ε stayed within the budget; spent {spent:.6g} ≤ "
          "{budget:g}")
#: what the total is without an ε line: the realised sum of adaptively chosen ε
EX_POST = ("no ε budget was fixed before the search: the total is the realised sum of ε chosen adaptively by the "
           "sampler from earlier outputs, an ex-post bound on the privacy loss of this outcome (Ligett et al. 2017, "
           "Accuracy First; Rogers et al. 2016, Privacy Odometers and Filters), not an ε-DP guarantee fixed in "
           "advance; set the policy's ε line for one")
#: why a risk line does not judge a differentially private trial (its reason, in words)
NOT_USED = ("measured, not used for the decision: a differentially private release is judged by its ε (the "
            "policy's ε line on the total), not by measurements on the records, which no ε covers")
NOT_USED_TRIAL = ("not used for the decision: a differentially private trial is judged by its ε and its noisy "
                  "utility scores, not by measurements on the records, which no ε covers")


@dataclass(frozen=True)
class Draw:
    """One differentially private mechanism run on the records: ``what`` names it
    (``"trial 3"``, ``"scores of trial 3"``, ``"release draw 1"``), ``epsilon`` is what it
    spent under replace-one neighbours, ``kind`` ``"release"`` or ``"scores"``, ``note`` how
    ``epsilon`` was reached when it is not the release's own ε."""

    what: str
    technique: str
    epsilon: float
    kind: str = "release"
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = {"what": self.what, "technique": self.technique, "epsilon": self.epsilon, "kind": self.kind}
        if self.note:
            out["note"] = self.note
        return out


@dataclass
class Accounting:
    """The ε a search spent on the records: every term (:class:`Draw`), the trials without a
    guarantee, and the total by basic composition."""

    draws: list[Draw] = field(default_factory=list)
    not_private: list[str] = field(default_factory=list)
    #: the ε budget fixed before the search (the policy's ε line), or ``None``: ex-post total
    budget: float | None = None

    @property
    def total(self) -> float:
        """ε₁ + … + ε_k over every term (Dwork & Roth 2014, Theorem 3.16 with δ = 0)."""
        return math.fsum(d.epsilon for d in self.draws)

    def add(self, what: str, technique: str, epsilon: float, kind: str = "release", note: str | None = None) -> None:
        self.draws.append(Draw(what, technique, float(epsilon), kind, note))

    def sum_text(self) -> str:
        """``"0.3 + 0.1 + 0.5 = 0.9"``: the sum as a reader can redo it."""
        if not self.draws:
            return "0"
        terms = " + ".join(f"{d.epsilon:.6g}" for d in self.draws)
        return f"{terms} = {self.total:.6g}"

    def adaptivity(self) -> str:
        """How the total holds although the sampler chose each ε adaptively: within a budget
        fixed in advance (:data:`FILTER`), or as an ex-post bound (:data:`EX_POST`)."""
        if self.budget is None:
            return EX_POST
        return FILTER.format(budget=self.budget, spent=self.total)

    def not_covered(self) -> str | None:
        """What the total does not cover (trials without a guarantee in the same search), or ``None``."""
        return NOT_COVERED.format(n=len(self.not_private)) if self.not_private else None

    def to_dict(self) -> dict[str, Any]:
        out = {"epsilon_total": self.total, "composition": COMPOSITION, "citation": CITATION,
               "neighbouring": NEIGHBOURS, "sum": self.sum_text(), "draws": [d.to_dict() for d in self.draws],
               "trials": sum(1 for d in self.draws if d.what.startswith("trial")),
               "scored_trials": sum(1 for d in self.draws if d.kind == "scores"),
               "release_draws": sum(1 for d in self.draws if d.what.startswith("release draw")),
               "trials_without_guarantee": len(self.not_private),
               "decisions": "made from the noisy scores, the parameters and the ε alone (post-processing)",
               "budget": self.budget, "adaptive": self.adaptivity()}
        if self.not_private:
            out["not_covered"] = self.not_covered()
        return out


def epsilon_of(technique: str, params: Mapping[str, Any], privacy: Mapping[str, Any] | None = None
               ) -> float | None:
    """The ε a release of ``technique`` with ``params`` spends by its own account: its privacy
    report's when it made one (``privacy``), else the value of the technique's ε parameter
    (given, or its default); ``None`` for a technique without one, or whose release says it
    is not differentially private (a domain read from the data)."""
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


def neighbouring_of(params: Mapping[str, Any], privacy: Mapping[str, Any] | None) -> str:
    """The neighbouring relation a release's ε is stated for: its report's, else its
    ``neighbouring`` parameter, else add/remove-one (DPCube's default, and the larger count)."""
    if isinstance(privacy, Mapping) and isinstance(privacy.get("neighbouring"), str):
        return str(privacy["neighbouring"])
    value = params.get("neighbouring")
    return value if isinstance(value, str) else "add-remove"


def counted_epsilon(eps: float, neighbouring: str) -> tuple[float, str | None]:
    """The ε a release counts under replace-one neighbours, and how: its own for
    ``"replace"``, twice it otherwise (group privacy of two, Dwork & Roth 2014, Theorem 2.2)."""
    if neighbouring == "replace":
        return float(eps), None
    return 2.0 * float(eps), (f"2 × {eps:.6g}: ε under add/remove-one neighbours, counted twice for replace-one "
                              "(group privacy)")


def trial_cost(technique: str, params: Mapping[str, Any], score_epsilon: float) -> tuple[float, float] | None:
    """What a differentially private trial of ``technique`` with ``params`` is charged before it
    runs, as the two terms the accounting counts: its release's ε for replace-one neighbours
    (:func:`counted_epsilon`) and the scoring ε of its noisy scores; ``None`` for a technique
    without an ε (nothing spent)."""
    eps = epsilon_of(technique, params)
    if eps is None:
        return None
    return counted_epsilon(eps, neighbouring_of(params, None))[0], float(score_epsilon)


@dataclass
class PrivacyFilter:
    """The basic-composition privacy filter for pure ε-DP (Rogers, Roth, Ullman & Vadhan 2016):
    ``budget`` B is fixed before the search, and a mechanism is run only when :meth:`fits`
    says the terms already ``charged`` plus its own stay ≤ B (by :func:`judge_epsilon`, the
    same judge as the ε line, on the same sum), so the total is at most B whatever ε the
    sampler chose."""

    budget: float
    charged: list[float] = field(default_factory=list)

    @property
    def spent(self) -> float:
        return math.fsum(self.charged)

    @property
    def room(self) -> float:
        """What is left of the budget (never below 0)."""
        return max(0.0, float(self.budget) - self.spent)

    def fits(self, *terms: float) -> bool:
        return judge_epsilon(math.fsum([*self.charged, *map(float, terms)]), self.budget).met

    def charge(self, *terms: float) -> None:
        self.charged.extend(map(float, terms))

    def why_not(self, *terms: float) -> str:
        """Why a mechanism of ``terms`` is not run, in one line (the trial's outcome says it)."""
        return (f"ε budget: its ε of {math.fsum(terms):.4g} (release counted for replace-one neighbours, plus its "
                f"scores) does not fit in the budget ε ≤ {self.budget:g} fixed before the search ({self.spent:.4g} "
                "spent); not run (privacy filter)")


def _number(v: Any) -> TypeGuard[float]:
    """Whether ``v`` is a finite int or float (a bool is not a number here); narrows ``v`` for mypy."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v))


def add_release(acc: Accounting, what: str, technique: str, params: Mapping[str, Any],
                privacy: Mapping[str, Any] | None) -> float | None:
    """Count one differentially private release in ``acc`` (under replace-one neighbours);
    returns what it counted, or ``None`` for a release without a guarantee."""
    eps = epsilon_of(technique, params, privacy)
    if eps is None:
        return None
    counted, note = counted_epsilon(eps, neighbouring_of(params, privacy))
    acc.add(what, technique, counted, "release", note)
    return counted


def search_accounting(trials: Iterable[Any]) -> Accounting:
    """What a search's trials spent (records with ``number``, ``technique``, ``params``,
    ``privacy``, ``repeat_of``, ``scores`` and optionally ``ran``): each trial of a technique
    with an ε is a draw and, when it was scored, its scores a second term; a repeat of a
    setting already tried made no release, nor did a trial the privacy filter did not run
    (``ran`` false); other trials are listed as without a guarantee."""
    acc = Accounting()
    for t in sorted(trials, key=lambda t: t.number):
        if t.repeat_of is not None or not getattr(t, "ran", True):  # a trial the filter did not run spent nothing
            continue
        if add_release(acc, f"trial {t.number}", t.technique, t.params, t.privacy) is None:
            acc.not_private.append(f"trial {t.number}")
            continue
        scores = getattr(t, "scores", None)
        if isinstance(scores, Mapping) and _number(scores.get("epsilon")):
            acc.add(f"scores of trial {t.number}", t.technique, float(scores["epsilon"]), "scores",
                    "Laplace-noised utility scores")
    return acc


# --------------------------------------------------------------------------- scores
@dataclass(frozen=True)
class ScoreRule:
    """How a utility measure scores a differentially private trial: ``what`` in words,
    ``tight`` whether its sensitivity is a per-record one (1/|H|) rather than its range."""

    measure: str
    what: str
    tight: bool


def score_rule(measure: str) -> ScoreRule:
    """The rule a utility measure scores differentially private trials by; raises
    :class:`ParameterError` for a measure whose range is not bounded (no sensitivity)."""
    from ppdm.experiments.evaluation import load_all_measures

    if measure == "prediction_accuracy":
        return ScoreRule(measure, "the share of the control records a model trained on the release alone classifies "
                                  "correctly; sensitivity 1/|H|", True)
    lo, hi = load_all_measures()[measure].value_range
    if lo is None or hi is None or not hi > lo:
        raise ParameterError(f"the policy's utility measure {measure!r} has no bounded range, so its sensitivity is "
                             "unknown and it cannot score a differentially private trial with an ε that covers it; "
                             "use measures with a bounded range (prediction_accuracy is the most precise), or leave "
                             "the differentially private techniques out")
    return ScoreRule(measure, f"the value clipped to [{lo:g}, {hi:g}]; sensitivity {hi - lo:g}, its range (a blunt "
                              "bound: the noise is wide)", False)


#: the widest Laplace scale a differentially private trial's score may have, as a share of its
#: measure's range, for the search to choose by it (see "Scores too noisy to choose by")
MAX_SCORE_NOISE = 0.02


def score_noise(measure: str, control_rows: int, score_epsilon: float, n_measures: int) -> tuple[float, float]:
    """The Laplace scale a differentially private trial's score on ``measure`` carries, and
    that scale as a share of the measure's range: Δ·L/ε_s with Δ = 1/|H| for
    prediction_accuracy (range 1) and the range for the others (:func:`score_rule`)."""
    from ppdm.experiments.evaluation import load_all_measures

    rule = score_rule(measure)
    share = float(score_epsilon) / max(1, int(n_measures))
    if rule.tight:
        scale = (1.0 / max(1, int(control_rows))) / share
        return scale, scale
    lo, hi = (float(b) for b in load_all_measures()[measure].value_range if b is not None)
    scale = (hi - lo) / share
    return scale, scale / (hi - lo)


def noisy_scores(entries: Mapping[str, Mapping[str, Any]], measures: Sequence[str], control_rows: int,
                 score_epsilon: float, rng: np.random.Generator) -> dict[str, Any]:
    """The Laplace-noised scores of one differentially private trial (Dwork & Roth 2014,
    Theorem 3.6): each of the ``measures`` gets ε_s / L and noise of scale Δ·L/ε_s. ``entries``
    are the trial's exact measure entries (:func:`ppdm.experiments.recommend.measure_release`);
    the exact values are read here and nowhere else on the way to a decision. Each score is
    returned as a *loss* (lower is better), the search's currency: 1 − the noisy share for
    ``prediction_accuracy``, the noisy value (or the range's top minus it) for the others."""
    from ppdm.experiments.evaluation import load_all_measures

    registry = load_all_measures()
    share = float(score_epsilon) / max(1, len(measures))
    out: dict[str, Any] = {}
    for m in measures:
        rule = score_rule(m)
        e = entries.get(m) or {}
        if rule.tight:
            n_ok = e.get("correct")  # records of the control split Ψz classifies correctly
            exact = (float(n_ok) / control_rows) if _number(n_ok) and control_rows > 0 else None
            sens = 1.0 / max(1, control_rows)
            lo, hi, direction = 0.0, 1.0, "higher"
        else:
            lo, hi = (float(b) for b in registry[m].value_range if b is not None)  # bounded: score_rule checked
            v = e.get("value")
            exact = min(hi, max(lo, float(v))) if _number(v) else None
            sens = hi - lo
            direction = str(registry[m].direction or "lower")
        scale = sens / share
        if exact is None:  # not computed on this release: no score (the trial cannot be ranked)
            out[m] = {"loss": None, "sensitivity": sens, "scale": scale, "epsilon": share, "rule": rule.what}
            continue
        noisy = exact + float(rng.laplace(0.0, scale))
        loss = (hi - noisy) if direction == "higher" else noisy
        out[m] = {"loss": float(loss), "noisy": float(noisy), "sensitivity": sens, "scale": scale,
                  "epsilon": share, "rule": rule.what}
    return {"epsilon": float(score_epsilon), "neighbouring": "replace", "measures": out}


def risk_of_epsilon(eps: float) -> float:
    """The most any test of whether one person's record is among the training records can
    gain (true minus false positive rate) from an ε-differentially private release:
    (e^ε − 1)/(e^ε + 1) = tanh(ε/2), from the hypothesis-testing view of ε-DP (Kairouz, Oh &
    Viswanath 2015, *The Composition Theorem for Differential Privacy*, Theorem 2.1: every
    test has P_FA + e^ε P_MD ≥ 1 and e^ε P_FA + P_MD ≥ 1). A differentially private trial's
    place on the risk axis, in [0, 1) like the shares other trials are placed by."""
    return float(math.tanh(float(eps) / 2.0))


# ---------------------------------------------------------------------- the ε line
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
    return (f"another draw at ε = {epsilon:.4g} would bring the total spent on the records to {after:.4g} "
            f"({acc.total:.4g} over {len(acc.draws)} earlier term(s)), more than the policy's ε ≤ {cap:g}")


def searched_privacy(privacy: Mapping[str, Any] | None, acc: Accounting) -> dict[str, Any] | None:
    """A draw's privacy outcome (``differentially_private``, ``epsilon``) with what the search
    spent in all (``epsilon_total``, ``draws``, ``sum``), which the policy's ε line judges;
    unchanged for a release without a guarantee."""
    if not isinstance(privacy, Mapping) or not privacy.get("differentially_private"):
        return None if privacy is None else dict(privacy)
    return {**privacy, "epsilon_total": acc.total, "draws": len(acc.draws), "sum": acc.sum_text()}


def provenance_privacy(privacy: Mapping[str, Any], acc: Accounting) -> dict[str, Any]:
    """A searched release's public privacy record: its ε is the guarantee — the budget fixed
    before the search when there was one (a privacy filter: what was spent is data-dependent,
    the budget is not), else the realised total, stated as ex-post — and ``epsilon_spent`` the
    total; the draw's own ε is kept as ``epsilon_of_this_draw`` (its ``phases`` add up to
    that), and ``search`` says how the total was reached, term by term."""
    out = dict(privacy)
    out["epsilon_of_this_draw"] = privacy.get("epsilon")
    claim = acc.total if acc.budget is None else float(acc.budget)
    out["epsilon"] = claim
    out["epsilon_spent"] = acc.total
    out["search"] = acc.to_dict()
    own = privacy.get("guarantee")
    gap = acc.not_covered()
    out["guarantee"] = (f"With the search that chose it, the release is {claim:.6g}-differentially private for "
                        f"{NEIGHBOURS}, by basic composition over {len(acc.draws)} terms ({acc.sum_text()}): every "
                        "differentially private trial on the records, each trial's Laplace-noised scores, and any "
                        "fresh draw of the release; the choice was made from the noisy scores alone "
                        f"({CITATION}); {acc.adaptivity()}." + (f" Not covered: {gap}." if gap else "")
                        + (f" This draw alone: {own}" if own else ""))
    return out


def summary(acc: Accounting) -> str:
    """One line on what a search spent, for the screen and the report."""
    scored = sum(1 for d in acc.draws if d.kind == "scores")
    trials = sum(1 for d in acc.draws if d.kind == "release" and d.what.startswith("trial"))
    text = (f"ε spent on the records: {acc.sum_text()} ({trials} differentially private trial(s), {scored} trial "
            f"score(s), {sum(1 for d in acc.draws if d.what.startswith('release draw'))} fresh draw(s) of the release), "
            f"by basic composition for replace-one neighbours; the release claims the total; {acc.adaptivity()}")
    gap = acc.not_covered()
    return text + (f". Not covered: {gap}" if gap else "")


__all__ = ["CITATION", "COMPOSITION", "DEFAULT_SCORE_EPSILON", "EX_POST", "FILTER", "FILTER_CITATION", "NEIGHBOURS",
           "MAX_SCORE_NOISE", "NOT_COVERED", "NOT_USED", "NOT_USED_TRIAL", "Accounting", "Draw", "PrivacyFilter", "ScoreRule",
           "add_release", "counted_epsilon", "epsilon_of",
           "judge_epsilon", "neighbouring_of", "noisy_scores", "over_budget", "provenance_privacy", "risk_of_epsilon",
           "score_noise", "score_rule", "search_accounting", "searched_privacy", "summary", "trial_cost"]
