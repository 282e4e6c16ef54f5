"""What a searched differentially private release spends, and that nothing unaccounted decides it.

Every differentially private trial counts (twice its ε when stated for add/remove-one
neighbours: the search's guarantee is for replace-one neighbours), so does each trial's
Laplace-noised scores (``--score-epsilon``), and a fresh draw of the release when one is made;
the provenance states the total and the terms, and the policy's ε line judges the total. The
choice among differentially private trials reads their noisy scores only: exact measurements
on the records (risk lines, exact utility) do not decide it."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from ppdm.cli.app import app
from ppdm.data.schema import Schema
from ppdm.errors import ParameterError
from ppdm.experiments import recommend as rmod
from ppdm.experiments.evaluation import load_all_measures
from ppdm.experiments.policy import parse_policy
from ppdm.experiments.recommend import accounting as racc
from ppdm.experiments.recommend import measure as rmeasure
from ppdm.experiments.recommend import trials as rtrials
from ppdm.experiments.recommend.accounting import (
    NOT_USED,
    Accounting,
    PrivacyFilter,
    counted_epsilon,
    epsilon_of,
    judge_epsilon,
    noisy_scores,
    over_budget,
    risk_of_epsilon,
    score_rule,
    search_accounting,
    trial_cost,
)

runner = CliRunner()


def _table(n: int = 60, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a = rng.normal(50, 10, n).round(2)
    return pd.DataFrame({"a": a, "b": rng.normal(5, 2, n).round(2),
                         "label": np.where(a + rng.normal(0, 5, n) > 50, "yes", "no")})


def _schema(x: pd.DataFrame) -> Schema:
    # DPCube needs a declared domain: bounds and categories that are public, not read from x
    return dataclasses.replace(Schema.infer(x, "label"), bounds={"a": (0.0, 100.0), "b": (-5.0, 15.0)},
                               categories={"label": ["no", "yes"]})


@pytest.fixture
def d(tmp_path: Path) -> Path:
    # 2400 records hold 600 out as the control split: prediction_accuracy's scores at ε_s = 0.1 then
    # have noise of scale 1/(600 · 0.1) ≈ 0.017, narrow enough to choose by (accounting.MAX_SCORE_NOISE)
    x = _table(2400)
    x.to_csv(tmp_path / "x.csv", index=False)
    (tmp_path / "schema.json").write_text(json.dumps(_schema(x).to_dict()))
    return tmp_path


def _policy(d: Path, cap: float) -> Path:
    # every trial at ε = 0.5 for replace-one neighbours: each counts its own ε once
    pol = {"risk": {"verbatim_copies": 0.2}, "utility": {"weights": {"prediction_accuracy": 1}},
           "techniques": {"dpcube": {"epsilon": 0.5, "neighbouring": "replace"}}, "epsilon": cap}
    path = d / "policy.json"
    path.write_text(json.dumps(pol))
    return path


def _run(d: Path, cap: float, *extra: str):
    return runner.invoke(app, ["recommend", str(d / "x.csv"), "--class", "label", "--schema", str(d / "schema.json"),
                               "--out", str(d / "z.csv"), "--policy", str(_policy(d, cap)), "--trials", "3",
                               "--seed", "5", "--experiment-seed", "--json", *extra])


def test_the_provenance_states_the_total_term_by_term_and_the_epsilon_line_judges_it(d: Path) -> None:
    # by hand: three trials at ε = 0.5 (replace-one: counted once) and their scores at ε_s = 0.1 each;
    # the release is the winning trial's own, so no further draw: 3·0.5 + 3·0.1 = 1.8, the cap itself
    r = _run(d, 1.8, "--score-epsilon", "0.1", "--report", str(d / "r.html"))
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    prov = json.loads((d / "z.provenance.json").read_text())
    search = prov["privacy"]["search"]
    assert [(e["what"], e["epsilon"]) for e in search["draws"]] == [
        ("trial 0", 0.5), ("scores of trial 0", 0.1), ("trial 1", 0.5), ("scores of trial 1", 0.1),
        ("trial 2", 0.5), ("scores of trial 2", 0.1)]
    total = 0.5 + 0.1 + 0.5 + 0.1 + 0.5 + 0.1
    assert prov["privacy"]["epsilon"] == pytest.approx(total) and prov["privacy"]["epsilon_spent"] == pytest.approx(total)
    assert search["epsilon_total"] == pytest.approx(1.8) and search["sum"] == "0.5 + 0.1 + 0.5 + 0.1 + 0.5 + 0.1 = 1.8"
    assert search["trials"] == 3 and search["scored_trials"] == 3 and search["release_draws"] == 0
    assert prov["privacy"]["epsilon_of_this_draw"] == pytest.approx(0.5)
    assert "not_covered" not in search  # a search of differentially private techniques alone is covered in full
    assert "Theorem 3.16" in search["citation"] and "replace-one" in search["neighbouring"]
    assert "1.8-differentially private" in prov["privacy"]["guarantee"]
    # the ε line judged the total, at the cap itself: meets
    eps_line = next(ln for ln in doc["release"]["measured"]["lines"] if ln["measure"] == "epsilon")
    assert eps_line["verdict"] == "meets" and eps_line["value"] == pytest.approx(1.8)
    # the risk line was measured on the release for the owner, and said not to decide it
    risk_line = next(ln for ln in doc["release"]["measured"]["lines"] if ln["measure"] == "verbatim_copies")
    assert risk_line["verdict"] == "not applicable" and risk_line["reason"] == NOT_USED
    assert risk_line["value"] is not None
    html = (d / "r.html").read_text()
    assert "ε (the whole search)" in html and search["sum"] in html and "scores of trial 2" in html
    assert "the budget fixed before the search" in html and "privacy filter" in html  # the claim is the budget
    # one count of what became of the trials, in --json and the report
    assert doc["study"]["outcomes"] == {"met": 3, "missed": 0, "failed": 0, "stopped": 0, "repeat": 0}
    assert "3 met the policy, 0 missed it, 0 failed" in html


def test_with_an_epsilon_line_the_search_is_a_privacy_filter_and_never_spends_more(d: Path) -> None:
    # by hand: ε ≤ 1.0 fixed before the search; each trial at ε = 0.5 (replace-one: once) plus its scores at
    # 0.1 costs 0.6. Trial 0: 0 + 0.6 = 0.6 ≤ 1.0, run. Trial 1: 0.6 + 0.6 = 1.2 > 1.0, not run; the search
    # stops (ε is fixed, so nothing differentially private fits any more) although --trials 3 asked for three
    r = _run(d, 1.0, "--score-epsilon", "0.1")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    prov = json.loads((d / "z.provenance.json").read_text())["privacy"]
    search = prov["search"]
    terms = [(e["what"], e["epsilon"]) for e in search["draws"]]
    assert terms == [("trial 0", 0.5), ("scores of trial 0", 0.1)]
    # the guarantee is the budget fixed in advance; what was spent (data-dependent) is stated beside it
    assert prov["epsilon"] == 1.0 and prov["epsilon_spent"] == pytest.approx(0.6)
    assert "1-differentially private" in prov["guarantee"] and "spent 0.6 ≤ 1" in prov["guarantee"]
    spent = math.fsum(e for _, e in terms)
    assert spent == pytest.approx(0.6) and spent <= 1.0
    assert search["epsilon_total"] == pytest.approx(0.6) and search["budget"] == 1.0
    assert "fixed before the search (privacy filter" in search["adaptive"] and "Rogers" in search["adaptive"]
    assert "spent 0.6 ≤ 1" in search["adaptive"] and "ex-post" not in search["adaptive"]
    skipped = next(t for t in doc["trials"] if t["number"] == 1)
    assert skipped["outcome"] == "stopped" and skipped["ran"] is False
    assert skipped["why"].startswith("ε budget") and "not run" in skipped["why"]
    assert [t["number"] for t in doc["trials"]] == [0, 1]  # no DP trial proposed after it
    assert doc["study"]["stopped_by"] == "ε budget"
    assert doc["study"]["outcomes"] == {"met": 1, "missed": 0, "failed": 0, "stopped": 1, "repeat": 0}


def test_without_an_epsilon_line_the_total_is_stated_as_ex_post(d: Path) -> None:
    pol = {"risk": {"verbatim_copies": 0.2}, "utility": {"weights": {"prediction_accuracy": 1}},
           "techniques": {"dpcube": {"epsilon": 0.5, "neighbouring": "replace"}}}
    (d / "policy.json").write_text(json.dumps(pol))
    r = runner.invoke(app, ["recommend", str(d / "x.csv"), "--class", "label", "--schema", str(d / "schema.json"),
                            "--out", str(d / "z.csv"), "--policy", str(d / "policy.json"), "--trials", "1",
                            "--seed", "5", "--experiment-seed", "--json"])
    assert r.exit_code == 0, r.output
    prov = json.loads((d / "z.provenance.json").read_text())["privacy"]
    assert prov["search"]["budget"] is None and "ex-post" in prov["search"]["adaptive"]
    assert "ex-post" in prov["guarantee"] and "privacy filter" not in prov["guarantee"]
    assert any("ex-post" in n for n in json.loads(r.stdout)["notes"])


def test_privacy_filter_by_hand() -> None:
    # B = 1.0; terms 0.5 + 0.1 charged: 0.6. Another 0.3 + 0.1 → 1.0 ≤ 1.0 fits (the line's own edge);
    # then 0.05 + 0.1 → 1.15 does not; nothing is charged by asking
    f = PrivacyFilter(1.0)
    f.charge(0.5, 0.1)
    assert f.spent == pytest.approx(0.6) and f.room == pytest.approx(0.4)
    assert f.fits(0.3, 0.1)
    f.charge(0.3, 0.1)
    assert not f.fits(0.05, 0.1) and f.spent == pytest.approx(1.0)
    assert "not run" in f.why_not(0.05, 0.1)
    # a DPCube trial at ε = 0.2 for add/remove neighbours is charged 2 × 0.2, plus its scores
    assert trial_cost("dpcube", {"epsilon": 0.2}, 0.1) == (0.4, 0.1)
    assert trial_cost("dpcube", {"epsilon": 0.2, "neighbouring": "replace"}, 0.1) == (0.2, 0.1)
    assert trial_cost("mdav", {"k": 5}, 0.1) is None


def test_the_sampler_ε_range_is_capped_at_what_remains() -> None:
    import optuna

    x = _table()
    spaces, _ = rmod.build_spaces(parse_policy({"risk": {"verbatim_copies": 0.2}, "techniques": ["dpcube"], "epsilon": 1.0,
                                                 "utility": {"weights": {"prediction_accuracy": 1}}}), _schema(x), len(x))
    ts = spaces[0]
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    for _ in range(20):
        # room 0.3 for the release's counted ε; DPCube's default add/remove neighbours count twice: ε ≤ 0.15
        _, params = rmod.suggest(study.ask(), spaces, len(x), room=0.3)
        assert ts.params["epsilon"].low <= params["epsilon"] <= 0.15
    # a room below the range's low end leaves the range as it is (the filter then refuses the trial)
    _, params = rmod.suggest(study.ask(), spaces, len(x), room=0.001)
    assert params["epsilon"] >= ts.params["epsilon"].low


def test_the_choice_among_dp_trials_reads_the_noisy_scores_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The attacker: exact measurements that would pick one trial and reject every release.

    Every exact measurement is replaced: the risk line's measure is made to miss its line on
    every release, and the exact accuracy ranks the trials in one order. The noisy scores are
    replaced by ones ranking them in the opposite order. A search that read exact values would
    release nothing (every risk line missed) or the exact best; this one releases the trial the
    noisy scores prefer, and its ranking follows the scores alone."""
    x = _table()
    exact_of: dict[int, float] = {}

    def fake_measures(z, data, out_schema=None, *, stop_on_miss=False, utility_only=False,  # type: ignore[no-untyped-def]
                      provenance=None):
        k = len(exact_of)
        exact_of[k] = 0.9 - 0.2 * k  # exact accuracy: the first trial best, then worse and worse
        out = {"prediction_accuracy": {"value": 0.0, "ci_low": None, "ci_high": None, "correct": 27 - 6 * k}}
        if not utility_only:
            out["verbatim_copies"] = {"value": 1.0, "ci_low": 1.0, "ci_high": 1.0}  # far above the line
        return out

    seen: list[dict] = []

    def fake_scores(entries, measures, control_rows, score_epsilon, rng):  # type: ignore[no-untyped-def]
        seen.append(dict(entries))
        k = len(seen) - 1
        # the noisy scores reverse the exact order: the last trial scores best
        return {"epsilon": score_epsilon, "neighbouring": "replace",
                "measures": {m: {"loss": 0.5 - 0.1 * k} for m in measures}}

    monkeypatch.setattr(rmeasure, "measure_release", fake_measures)
    monkeypatch.setattr(racc, "noisy_scores", fake_scores)
    pol = {"risk": {"verbatim_copies": 0.2}, "utility": {"weights": {"prediction_accuracy": 1}},
           "techniques": {"dpcube": {"epsilon": 0.5, "neighbouring": "replace"}}}
    res = rmod.recommend(x, pol, schema=_schema(x), n_trials=3, random_state=1, score_epsilon=5.0)
    assert len(seen) == 3  # each trial's exact entries went to the scoring, and nowhere else on the way
    by_number = sorted(res.trials, key=lambda t: t.number)
    assert [t.utility_loss for t in by_number] == pytest.approx([0.5, 0.4, 0.3])  # the noisy scores, not exact
    assert all(t.feasible for t in by_number)  # the exact risk (1.0 > 0.2) rejected none
    assert [t.number for t in res.ranking] == [2, 1, 0]  # the exact order would be [0, 1, 2]
    assert res.release is not None and res.chosen is not None and res.chosen.number == 2
    # the verification's line is shown with the exact value, and said not to decide
    line = next(v for v in res.verification.lines if v.measure == "verbatim_copies")  # type: ignore[union-attr]
    assert line.value == 1.0 and line.met and line.reason == NOT_USED


def test_judging_a_dp_trial_ignores_its_exact_values() -> None:
    # two outcomes with the same noisy scores and opposite exact values judge and rank the same
    pol = parse_policy({"risk": {"verbatim_copies": 0.2}, "utility": {"weights": {"prediction_accuracy": 1}}})
    scores = {"epsilon": 0.1, "measures": {"prediction_accuracy": {"loss": 0.25}}}
    base = {"technique": "dpcube", "params": {"epsilon": 1.0, "neighbouring": "replace"}, "error": None,
            "privacy": {"differentially_private": True, "epsilon": 1.0, "neighbouring": "replace"}, "scores": scores}
    good = {**base, "measures": {"prediction_accuracy": {"value": 0.0}, "verbatim_copies": {"value": 0.0}}}
    bad = {**base, "measures": {"prediction_accuracy": {"value": 1.0}, "verbatim_copies": {"value": 1.0}}}
    a, b = rmod.record_of(0, good, pol), rmod.record_of(1, bad, pol)
    assert a.feasible and b.feasible and a.utility_loss == b.utility_loss == 0.25
    # the risk axis: tanh(ε/2) from the ε alone, tanh(0.5) = 0.46212
    assert a.risk == b.risk == pytest.approx(math.tanh(0.5))
    assert [v.verdict for v in a.lines] == [v.verdict for v in b.lines] == ["not applicable"]


def test_scores_by_hand() -> None:
    class NoNoise:
        def laplace(self, loc: float, scale: float) -> float:
            self.scale = scale
            return 0.0

    # 50 control records, 40 classified correctly: accuracy 0.8, loss 0.2; alone it gets all of ε_s = 0.1,
    # sensitivity 1/50, noise scale (1/50)/0.1 = 0.2
    rng = NoNoise()
    out = noisy_scores({"prediction_accuracy": {"value": 0.05, "correct": 40}}, ["prediction_accuracy"], 50, 0.1,
                       rng)  # type: ignore[arg-type]
    pa = out["measures"]["prediction_accuracy"]
    assert pa["loss"] == pytest.approx(0.2) and pa["sensitivity"] == pytest.approx(0.02)
    assert pa["scale"] == pytest.approx(0.2) and rng.scale == pytest.approx(0.2) and out["epsilon"] == 0.1
    # with a second measure each gets ε_s/2 = 0.05: accuracy's scale (1/50)/0.05 = 0.4; column_fidelity in [0, 1]
    # (better when higher), clipped, sensitivity 1 (its range), scale 1/0.05 = 20, loss 1 − 0.7 = 0.3
    out = noisy_scores({"prediction_accuracy": {"correct": 40}, "column_fidelity": {"value": 0.7}},
                       ["prediction_accuracy", "column_fidelity"], 50, 0.1, NoNoise())  # type: ignore[arg-type]
    assert out["measures"]["prediction_accuracy"]["scale"] == pytest.approx(0.4)
    cf = out["measures"]["column_fidelity"]
    assert cf["scale"] == pytest.approx(20.0) and cf["loss"] == pytest.approx(0.3)
    # real noise: Laplace with that scale (mean absolute deviation = scale)
    dev = [noisy_scores({"prediction_accuracy": {"correct": 40}}, ["prediction_accuracy"], 50, 0.1,
                        np.random.default_rng(i))["measures"]["prediction_accuracy"]["loss"] - 0.2 for i in range(400)]
    assert np.mean(np.abs(dev)) == pytest.approx(0.2, rel=0.2)
    assert score_rule("prediction_accuracy").tight and not score_rule("correlation_difference").tight
    with pytest.raises(ParameterError, match="no bounded range"):
        score_rule("sse_sst")


def test_accounting_by_hand() -> None:
    # trials: dpcube at 0.5 for add/remove neighbours, scored at 0.1 (counts 2·0.5 + 0.1); dpcube refused before
    # its report (ε from its parameter, 0.25 for replace-one, not scored: 0.25); a repeat (no release); MDAV
    trials = [SimpleNamespace(number=0, technique="dpcube", params={"epsilon": 0.5}, repeat_of=None,
                              privacy={"differentially_private": True, "epsilon": 0.5, "neighbouring": "add-remove"},
                              scores={"epsilon": 0.1}),
              SimpleNamespace(number=1, technique="dpcube", params={"epsilon": 0.25, "neighbouring": "replace"},
                              repeat_of=None, privacy=None, scores=None),
              SimpleNamespace(number=2, technique="mdav", params={"k": 3}, repeat_of=None, privacy=None, scores=None),
              SimpleNamespace(number=3, technique="mdav", params={"k": 3}, repeat_of=2, privacy=None, scores=None)]
    acc = search_accounting(trials)
    assert [(x.what, x.epsilon) for x in acc.draws] == [("trial 0", 1.0), ("scores of trial 0", 0.1),
                                                         ("trial 1", 0.25)]
    assert acc.draws[0].note and "2 × 0.5" in acc.draws[0].note
    assert acc.not_private == ["trial 2"] and acc.total == pytest.approx(1.35)
    assert acc.sum_text() == "1 + 0.1 + 0.25 = 1.35"
    # a search with a trial without a guarantee says what its total does not cover
    assert "1 trial(s) of techniques without" in acc.to_dict()["not_covered"]
    assert "not_covered" not in search_accounting(trials[:2]).to_dict()
    assert counted_epsilon(0.3, "replace") == (0.3, None) and counted_epsilon(0.3, "add-remove")[0] == 0.6
    # a release whose domain was read from the data is not differentially private: it spends no claimable ε
    assert epsilon_of("dpcube", {"epsilon": 1.0}, {"differentially_private": False, "epsilon": 1.0}) is None
    # one more draw at 0.5 makes 1.85: within ε ≤ 1.85 (the cap itself meets), past ε ≤ 1.8
    assert over_budget(acc, 0.5, 1.85) is None and over_budget(acc, 0.5, None) is None
    assert "1.85" in over_budget(acc, 0.5, 1.8)  # type: ignore[operator]
    j = judge_epsilon(1.25, 1.0)
    assert j.state == "misses" and j.margin == pytest.approx(0.25)  # (1.25 - 1) / 1
    assert judge_epsilon(0.75, 1.0).state == "meets"
    assert Accounting().total == 0.0
    # ε = ln 3: (3 − 1)/(3 + 1) = 0.5
    assert risk_of_epsilon(math.log(3)) == pytest.approx(0.5)


def test_a_dp_search_scored_by_an_unbounded_measure_is_refused() -> None:
    x = _table()
    pol = {"risk": {"verbatim_copies": 0.2}, "utility": {"weights": {"sse_sst": 1}}, "techniques": {"dpcube": None}}
    with pytest.raises(ParameterError, match="'sse_sst' has no bounded range"):
        rmod.recommend(x, pol, schema=_schema(x), n_trials=1, random_state=0)


def test_the_release_check_does_not_reject_a_dp_draw_by_reading_x() -> None:
    """DPCube at ε = 10⁶ copies every record of a small categorical table: ``ppdm anonymize``
    refuses it (tests/test_release_gate.py). In a search the refusal would be a choice made by
    reading x exactly, which no ε covers: the draw is kept, its ε (10⁶, the risk claim) judged
    by the policy's ε line, and the refusal goes to the owner's log as an allowed finding. A
    release of the same technique that is not differentially private is refused as any other."""
    rng = np.random.default_rng(0)
    vals = [f"v{i:02d}" for i in range(20)]
    idx = rng.choice(20 ** 3, 60, replace=False)
    x = pd.DataFrame({"c1": [vals[i // 400] for i in idx], "c2": [vals[(i // 20) % 20] for i in idx],
                      "c3": [vals[i % 20] for i in idx], "y": rng.integers(0, 2, 60)})
    sch = Schema([], ["c1", "c2", "c3"], "y", categories={"c1": vals, "c2": vals, "c3": vals, "y": [0, 1]})
    data = SimpleNamespace(schema=sch, input_info={"source": None})
    rel = rmod.make_release(rmod.TrialJob(0, "dpcube", {"epsilon": 1e6}, 1), x, data)  # type: ignore[arg-type]
    assert rel.technique.privacy_report_["differentially_private"]
    assert [f["level"] for f in rel.findings if f["rule"] == "unchanged"] == ["allowed"]
    assert rel.private["gate"]["findings"] and "findings" not in json.dumps(rel.provenance)
    # the same copy from a domain read from the data: not differentially private, refused
    from ppdm.experiments.release import ReleaseRefused

    bare = Schema([], ["c1", "c2", "c3"], "y")
    data = SimpleNamespace(schema=bare, input_info={"source": None})
    with pytest.raises(ReleaseRefused, match="not differentially private"):
        rmod.make_release(rmod.TrialJob(0, "dpcube", {"epsilon": 1e6, "domain_from_data": True}, 1), x,
                          data)  # type: ignore[arg-type]


def test_a_mixed_search_ranks_every_trial_on_the_noisy_scores_scale() -> None:
    # a trial without a guarantee: Ψx 0.85, Ψz 0.8 on 50 control records (40 correct), value 0.05; in a search with
    # a differentially private technique its loss is 1 − 40/50 = 0.2, the scale a DP trial's score is on
    pol = parse_policy({"risk": {"record_linkage": 0.5}, "utility": {"weights": {"prediction_accuracy": 1}}})
    measures = {"prediction_accuracy": {"value": 0.05, "correct": 40}, "record_linkage": {"value": 0.1}}
    assert rtrials.release_losses(measures, 50) == {"prediction_accuracy": pytest.approx(0.2)}
    plain = {"technique": "mdav", "params": {"k": 3}, "error": None, "measures": measures}
    assert rmod.record_of(0, plain, pol).utility_loss == pytest.approx(0.05)
    mixed = {**plain, "losses": rtrials.release_losses(measures, 50)}
    assert rmod.record_of(0, mixed, pol).utility_loss == pytest.approx(0.2)


def test_scores_too_noisy_to_choose_by_leave_the_dp_techniques_out() -> None:
    # by hand: prediction_accuracy's sensitivity is 1/|H|; with |H| = 600, ε_s = 0.1 and two utility
    # measures each gets 0.05, so the scale is (1/600)/0.05 = 1/30 ≈ 0.0333, 3.3 % of its range (1)
    scale, share = racc.score_noise("prediction_accuracy", 600, 0.1, 2)
    assert scale == pytest.approx(1 / 30) and share == pytest.approx(1 / 30)
    # a measure scored by its whole range [lo, hi]: scale (hi − lo)/(ε_s/L), i.e. 10 ranges at ε_s = 0.1
    lo, hi = (float(b) for b in load_all_measures()["rule_accuracy"].value_range)
    assert racc.score_noise("rule_accuracy", 600, 0.1, 1) == pytest.approx(((hi - lo) / 0.1, 10.0))
    # a search whose DPCube trials would be ranked by such noise leaves DPCube out (a search with
    # nothing else is refused) and says which score budget would make the scores usable
    x = _table(2400)
    pol = {"risk": {"verbatim_copies": 0.5}, "utility": {"weights": {"rule_accuracy": 1}},
           "techniques": {"dpcube": {"epsilon": 0.5, "neighbouring": "replace"}, "mdav": None}}
    res = rmod.recommend(x, pol, schema=_schema(x), n_trials=2, random_state=0)
    assert {t.technique for t in res.trials} == {"mdav"}
    why = res.left_out["dpcube"]
    assert "rule_accuracy" in why and "more than the 2%" in why and "--score-epsilon) of at least 50" in why
    with pytest.raises(ParameterError, match="more than the 2%"):
        rmod.recommend(x, {**pol, "techniques": {"dpcube": None}}, schema=_schema(x), n_trials=1, random_state=0)
