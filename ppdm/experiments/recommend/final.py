"""The recommended release of ``ppdm recommend``: made from the winner's technique and
parameters (or the next in rank when fresh draws of the winner miss the policy), measured and
kept only when it meets the policy; a differentially private winner publishes its own trial's
release when the ε line meets what the whole search spent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from ppdm import progress
from ppdm.anonymize.search_space import SearchSpace, space_of
from ppdm.errors import PPDMError
from ppdm.experiments.recommend import measure, trials
from ppdm.experiments.recommend.accounting import (
    EX_POST,
    Accounting,
    add_release,
    counted_epsilon,
    epsilon_of,
    judge_epsilon,
    neighbouring_of,
    over_budget,
    provenance_privacy,
    search_accounting,
    searched_privacy,
)
from ppdm.experiments.recommend.common import seed_of
from ppdm.experiments.recommend.measure import SearchData
from ppdm.experiments.recommend.pairing import pair_with_table
from ppdm.experiments.recommend.ranking import TrialRecord, record_of
from ppdm.experiments.recommend.repeats import release_digest
from ppdm.experiments.recommend.result import RecommendResult
from ppdm.experiments.recommend.trials import (
    TrialJob,
    measured_data,
    output_schema,
    privacy_of,
    release_losses,
)
from ppdm.experiments.release import Release, ReleaseRefused

#: fresh draws of the winner tried before the next-ranked release is tried
FINAL_DRAWS = 3
#: releases of the ranking tried for the recommended release
FINAL_CANDIDATES = 5


def make_final(result: RecommendResult, data: SearchData, table: pd.DataFrame, root: int, seeded: bool,
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
                seed = seed_of(root, 4, attempt) if seeded else None
                attempt += 1
                job = TrialJob(-1, cand.technique, dict(cand.params), seed)
                source = table if result.refit else data.train
                info = {**base_info, "rows_used": int(len(source))}
                if eps is not None:  # spent once the technique has read the records, published or not
                    add_release(acc, f"release draw {attempt}", cand.technique, cand.params, cand.privacy)
                try:
                    rel = trials.make_release(job, source, data, info)
                except ReleaseRefused as e:  # a fresh draw the release gate refuses is not released either
                    tried.append(f"{cand.label}: refused by the release check ({' '.join(str(e).split())[:160]})")
                    continue
                step(1, description=f"measuring the recommended release ({cand.label})")
                privacy = searched_privacy(privacy_of(rel.technique), acc)
                if result.refit and (privacy or {}).get("epsilon_total") is None:
                    verification = cand
                elif result.refit:  # the trial's figures, its ε line judged on what the search spent
                    outcome = {"technique": cand.technique, "params": cand.params, "measures": cand.measures,
                               "privacy": privacy, "error": None, "internal": False}
                    verification = replace(record_of(cand.number, outcome, pol), state=cand.state,
                                           seconds=cand.seconds)
                else:
                    got = measure.measure_release(measured_data(rel), data, output_schema(rel.technique),
                                          provenance=rel.provenance)
                    outcome = {"technique": cand.technique, "params": cand.params, "measures": got,
                               "privacy": privacy,
                               "check": {"share_verbatim": float(rel.check.share_verbatim)}, "error": None,
                               "internal": False}
                    if data.private_search:  # on the scale the trials were ranked on
                        outcome["losses"] = release_losses(got, len(data.control))
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
        job = TrialJob(-1, cand.technique, dict(cand.params), seed_of(root, 4, 0) if seeded else None)
        source = table
    else:
        job = TrialJob(cand.number, cand.technique, dict(cand.params), seed_of(root, 2, cand.number))
        source = data.train
    with progress.steps(None, "making the recommended release") as step:
        try:
            rel = trials.make_release(job, source, data, {**base_info, "rows_used": int(len(source))})
        except PPDMError as e:
            if result.refit:  # it read the whole table before it stopped
                add_release(acc, "release draw 1", cand.technique, cand.params, cand.privacy)
            tried.append(f"{cand.label}: {' '.join(str(e).split())[:200]}")
            _unmet_final(result, tried, acc, cap)
            return
        z, out_schema = measured_data(rel), output_schema(rel.technique)
        own = privacy_of(rel.technique)
        if result.refit or release_digest(z, out_schema) != (cand.scores or {}).get("release_digest"):
            add_release(acc, "release draw 1", cand.technique, cand.params, own)
            if not result.refit:
                result.notes.append("the winning trial's release could not be made again exactly; a fresh draw "
                                    "of its setting was published, and its ε is counted")
        step(1, description=f"measuring the recommended release ({cand.label}) for the owner")
        outcome = {"technique": cand.technique, "params": cand.params, "privacy": searched_privacy(own, acc),
                   "scores": cand.scores, "error": None, "internal": False,
                   "measures": cand.measures if result.refit else measure.measure_release(z, data, out_schema,
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
