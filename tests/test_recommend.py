"""``ppdm.experiments.recommend``: the search finds the release an enumeration of the whole
space finds, a policy no release meets is answered with the lines no trial met, studies
resume from SQLite, budgets are honoured, and the recommended release is made and measured
like any release."""

from __future__ import annotations

import json
import math
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import optuna
import pandas as pd
import pytest

from ppdm.anonymize.base import Technique
from ppdm.anonymize.registry import TECHNIQUES, make_technique, register
from ppdm.anonymize.search_space import Choice, Integer, Real, SearchSpace
from ppdm.data.provenance import read_private, read_provenance
from ppdm.data.schema import Schema
from ppdm.errors import ParameterError
from ppdm.experiments.policy import parse_policy
from ppdm.experiments.recommend import (
    STUDY_NAME,
    LineVerdict,
    TrialRecord,
    build_spaces,
    judge_lines,
    measure_release,
    pareto_front,
    parse_duration,
    random_setting,
    rank,
    recommend,
    record_of,
    search_data,
    study_storage,
)
from ppdm.experiments.release import release, without_held_out
from ppdm.metrics.info_loss import sse_sst
from ppdm.metrics.linkage import record_linkage

ATTRS = ["a", "b", "c"]
#: what record linkage links on: every attribute the release shares with x, the class included
LINKED = [*ATTRS, "label"]


def tiny(n: int = 60, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a = rng.normal(50, 10, n).round(2)
    return pd.DataFrame({"a": a, "b": rng.normal(5, 2, n).round(2), "c": rng.gamma(2, 3, n).round(2),
                         "label": np.where(a + rng.normal(0, 5, n) > 50, "yes", "no")})


X = tiny()
SCHEMA = Schema.infer(X, "label")
#: MDAV and rounding are deterministic: every setting has one release, so the optimum is well defined
POLICY = {"risk": {"record_linkage": 0.1}, "utility": {"weights": {"sse_sst": 1}},
          "techniques": {"mdav": {"k": {"low": 2, "high": 30}, "columns": None},
                         "rounding": {"method": "optimal", "encoding": "nearest", "k": {"low": 2, "high": 30}}}}
#: settings of POLICY's space
SPACE = [(t, k) for t in ("mdav", "rounding") for k in range(2, 31)]


def enumerate_space(train: pd.DataFrame) -> dict[tuple[str, int], tuple[float, float]]:
    """(technique, k) → (record linkage, SSE/SST) of every setting, by the measures themselves."""
    out = {}
    for tech, k in SPACE:
        params = {"k": k, **({"method": "optimal"} if tech == "rounding" else {})}
        z = release(train, make_technique(tech, class_column="label", schema=SCHEMA, params=params),
                    schema=SCHEMA).in_input_order()[0]  # paired with train, as the measures need
        out[(tech, k)] = (record_linkage(train[LINKED], z[LINKED]).value, sse_sst(train[ATTRS], z[ATTRS]).value)
    return out


# each seed is a 40-trial search (about 10 CPU-s): the default run keeps one, the slow run both.
# The search is a heuristic: in 40 trials it found the enumeration's optimum for 7 of the seeds 0-11
# (5 before it explored neighbours); these two seeds find it, and a change that makes the search
# worse around an optimum shows here
@pytest.mark.parametrize("seed", [2, pytest.param(4, marks=pytest.mark.slow)])
def test_the_search_finds_the_optimum_an_enumeration_finds(seed: int) -> None:
    res = recommend(X, POLICY, schema=SCHEMA, n_trials=40, random_state=seed)
    train = without_held_out(X, res.control)
    assert len(train) == res.split["train_rows"] == 30 and len(res.control) == 30
    table = enumerate_space(train)
    feasible = {s: v for s, v in table.items() if v[0] <= 0.1}
    best = min(feasible, key=lambda s: feasible[s][1])
    # the optimum is not an end of a range, and the search tried fewer settings than there are
    assert best[1] not in (2, 30)
    assert len({(t.technique, t.params["k"]) for t in res.trials}) < len(SPACE)
    w = res.winner
    assert w is not None and (w.technique, w.params["k"]) == best
    assert w.utility_loss == pytest.approx(feasible[best][1], rel=1e-12)
    assert w.lines[0].value == pytest.approx(feasible[best][0], rel=1e-12)
    # every trial's figures are the enumeration's
    for t in res.trials:
        k = (t.technique, t.params["k"])
        assert (t.lines[0].value, t.utility_loss) == pytest.approx(table[k], rel=1e-12)
        assert t.feasible == (table[k][0] <= 0.1)
    # the front: feasible, and none beaten on both risk and loss
    front = {(t.technique, t.params["k"]) for t in res.front}
    for s in front:
        assert s in feasible
        assert not any(v[0] <= feasible[s][0] and v[1] <= feasible[s][1] and v != feasible[s]
                       for v in feasible.values())
    # the recommended release is that setting, made again and measured itself (MDAV draws nothing)
    assert res.chosen is w and res.verification is not None and res.verification.feasible
    assert res.verification.utility_loss == pytest.approx(w.utility_loss, rel=1e-12)
    assert res.release is not None and len(res.release.data) == 30
    assert res.release.provenance["technique"]["name"] == best[0]
    assert "seeded" not in res.release.provenance and res.release.private["seeded"] is True
    # a release made outside the search is measured exactly as the search measures its trials
    data = search_data(X, POLICY, schema=SCHEMA, random_state=seed)
    assert data.control.equals(res.control) and data.train.equals(train)
    z = release(data.train, make_technique(w.technique, class_column="label", schema=SCHEMA, params=w.params),
                schema=SCHEMA).in_input_order()[0]
    outside = record_of(-1, {"measures": measure_release(z, data)}, parse_policy(POLICY))
    assert outside.measures == w.measures and outside.feasible


def test_nothing_meets_the_policy() -> None:
    pol = {"risk": {"record_linkage": 0.0, "singling_out_univariate": 0.5}, "utility": {"weights": {"sse_sst": 1}},
           "techniques": {"mdav": {"k": {"low": 2, "high": 4}}, "gaussian-noise": None}}
    res = recommend(X, pol, schema=SCHEMA, n_trials=8, random_state=1)
    assert res.release is None and res.winner is None and res.control is None and not res.front
    un = res.unmet
    assert un is not None and un["never_met"] == ["record_linkage ≤ 0"]
    line = next(e for e in un["lines"] if e["line"] == "record_linkage ≤ 0")
    # the closest value any trial reached on the line no trial met
    values = [t.lines[0].value for t in res.trials if t.lines[0].value is not None]
    assert line["met_by"] == 0 and line["closest"]["value"] == pytest.approx(min(values))
    assert un["closest_trial"]["missed"][0]["line"] == "record_linkage ≤ 0"
    with pytest.raises(Exception, match="nothing to write"):
        res.save("z.csv")


def test_a_study_resumes_from_sqlite(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    first = recommend(X, POLICY, schema=SCHEMA, study=db, n_trials=5, random_state=3)
    assert first.study["trials"] == 5 and first.study["new_trials"] == 5 and not first.study["resumed"]
    # the study can be opened and inspected with Optuna itself
    stu = optuna.load_study(study_name=STUDY_NAME, storage=study_storage(db))
    assert len(stu.trials) == 5 and stu.user_attrs["policy_sha256"] == parse_policy(POLICY).sha256()
    assert all("outcome" in t.user_attrs for t in stu.trials)
    with pytest.raises(ParameterError, match="already holds a search; continue it with --resume"):
        recommend(X, POLICY, schema=SCHEMA, study=db, n_trials=5)
    second = recommend(X, POLICY, schema=SCHEMA, study=db, resume=True, n_trials=9)
    assert second.study["trials"] == 9 and second.study["new_trials"] == 4 and second.study["resumed"]
    # the first five trials are kept as they were, on the same split
    for a, b in zip(first.trials, second.trials[:5], strict=True):
        assert (a.number, a.label, a.utility_loss, a.risk) == (b.number, b.label, b.utility_loss, b.risk)
    assert second.control.equals(first.control)
    # a study holding all the trials asked for runs none and answers from what it holds
    third = recommend(X, POLICY, schema=SCHEMA, study=db, resume=True, n_trials=9)
    assert third.study["new_trials"] == 0 and third.winner.number == second.winner.number


def test_resume_refuses_another_policy_table_or_holdout(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    recommend(X, POLICY, schema=SCHEMA, study=db, n_trials=2, random_state=3)
    other = {**POLICY, "risk": {"record_linkage": 0.2}}
    with pytest.raises(ParameterError, match="ran under another policy"):
        recommend(X, other, schema=SCHEMA, study=db, resume=True, n_trials=3)
    with pytest.raises(ParameterError, match="searched another table"):
        recommend(tiny(seed=9), POLICY, schema=SCHEMA, study=db, resume=True, n_trials=3)
    with pytest.raises(ParameterError, match="held out 0.5 of the records, not 0.4"):
        recommend(X, POLICY, schema=SCHEMA, study=db, resume=True, n_trials=3, holdout=0.4)
    with pytest.raises(ParameterError, match="holds no ppdm search to continue"):
        recommend(X, POLICY, schema=SCHEMA, study=tmp_path / "none.db", resume=True, n_trials=3)


def test_trials_left_running_by_an_interrupted_run_are_closed(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    recommend(X, POLICY, schema=SCHEMA, study=db, n_trials=2, random_state=3)
    stu = optuna.load_study(study_name=STUDY_NAME, storage=study_storage(db))
    stu.ask()  # a run that was killed mid-trial leaves it running
    res = recommend(X, POLICY, schema=SCHEMA, study=db, resume=True, n_trials=4)
    stopped = [t for t in res.trials if t.state == "stopped"]
    assert [t.number for t in stopped] == [2] and "interrupted" in stopped[0].error
    assert len(res.trials) == 4 and not stopped[0].feasible  # the trial budget counts the study's trials


def test_the_same_seed_gives_the_same_search_and_release(tmp_path: Path) -> None:
    # a line MDAV meets from k = 6 on (linking on the class too), so that there is a release to compare
    pol = {**POLICY, "risk": {"record_linkage": 0.2},
           "techniques": {"mdav": {"k": {"low": 2, "high": 12}}, "gaussian-noise": None}}
    runs = [recommend(X, pol, schema=SCHEMA, n_trials=12, random_state=7) for _ in range(2)]
    assert [t.to_dict() | {"seconds": None} for t in runs[0].trials] == \
        [t.to_dict() | {"seconds": None} for t in runs[1].trials]
    files = []
    for i, r in enumerate(runs):
        r.release.provenance["created"] = "fixed"  # the only field that records the time
        (tmp_path / str(i)).mkdir()
        files.append(r.save(tmp_path / str(i) / "z.csv"))
    for a, b in zip(*files, strict=True):
        if a.name.endswith(".private.json"):  # the owner's private file records when it was written
            assert {**json.loads(a.read_text()), "created": None} == {**json.loads(b.read_text()), "created": None}
            continue
        assert a.read_bytes() == b.read_bytes()


def test_the_recommended_release_is_written_like_any_release(tmp_path: Path) -> None:
    # no seed: the search and the release draw from the OS; MDAV with k ≥ 2 always meets this line
    pol = {**POLICY, "risk": {"record_linkage": 0.6}, "techniques": {"mdav": {"k": {"low": 2, "high": 12}}}}
    res = recommend(X, pol, schema=SCHEMA, study=tmp_path / "s.db", n_trials=10)
    written = res.save(tmp_path / "z.csv")
    assert [p.name for p in written] == ["z.csv", "z.provenance.json", "z.control.csv", "z.private.json"]
    prov = read_provenance(tmp_path / "z.csv")
    rec = prov["recommendation"]
    assert rec["policy"]["sha256"] == parse_policy(pol).sha256() and rec["policy"]["lines"] == [
        "record_linkage ≤ 0.6"]
    assert rec["study"] == {"name": STUDY_NAME, "file": "s.db", "trial": res.chosen.number, "trials": 10}
    # a fresh seed from the OS, stored nowhere; only the private log says that no seed was given
    assert rec["refit"] is False and "seeded" not in prov and read_private(tmp_path / "z.csv")["seeded"] is False
    # the split's sizes are counts of x: the owner's
    assert prov["holdout"] == {"fraction": 0.5, "control": "z.control.csv"}
    assert read_private(tmp_path / "z.csv")["holdout"]["rows"] == 30
    assert pd.read_csv(tmp_path / "z.control.csv").shape == (30, 4)
    # the study keeps no seed of the release: the final draw is not derived from the study's seed
    stu = optuna.load_study(study_name=STUDY_NAME, storage=study_storage(tmp_path / "s.db"))
    assert set(stu.user_attrs) == {"ppdm", "policy", "policy_sha256", "data", "seed", "reference"}


def test_refit_releases_the_whole_table_with_the_trial_figures(tmp_path: Path) -> None:
    res = recommend(X, {**POLICY, "risk": {"record_linkage": 0.3}}, schema=SCHEMA, n_trials=10, refit=True,
                    random_state=2)
    assert res.release is not None and len(res.release.data) == 60 and res.control is None
    assert res.verification is res.chosen
    written = res.save(tmp_path / "z.csv")
    assert [p.name for p in written] == ["z.csv", "z.provenance.json", "z.private.json"]
    rec = read_provenance(tmp_path / "z.csv")["recommendation"]
    assert rec["refit"] is True and "refitted on all the records" in rec["meets_policy"]
    # how many records the split held is the owner's to know
    assert read_private(tmp_path / "z.csv")["recommendation"]["split"]["rows"] == 60
    assert "refitted on all 60" not in rec["meets_policy"]


def test_a_fresh_draw_that_misses_the_policy_is_not_released() -> None:
    # uniform noise at a level that sometimes meets and sometimes misses a tight linkage line:
    # whatever is released was measured against the control split and met the policy
    pol = {"risk": {"record_linkage": 0.2}, "utility": {"weights": {"sse_sst": 1}},
           "techniques": {"uniform-noise": {"level": {"low": 0.3, "high": 0.9}}}}
    for seed in range(3):
        res = recommend(X, pol, schema=SCHEMA, n_trials=6, random_state=seed)
        if res.release is not None:
            assert res.verification.feasible
            z = res.release.in_input_order()[0]  # published shuffled; paired with x through the private pairing
            assert record_linkage(without_held_out(X, res.control)[LINKED], z[LINKED]).value <= 0.2
            assert res.verification.lines[0].value == pytest.approx(
                record_linkage(without_held_out(X, res.control)[LINKED], z[LINKED]).value)


def test_trials_in_worker_processes_and_on_an_executor() -> None:
    pol = {**POLICY, "techniques": {"mdav": {"k": {"low": 2, "high": 12}}}}
    seq = recommend(X, pol, schema=SCHEMA, n_trials=4, random_state=5)
    par = recommend(X, pol, schema=SCHEMA, n_trials=4, random_state=5, n_jobs=2)
    with ThreadPoolExecutor(2) as ex:
        other = recommend(X, pol, schema=SCHEMA, n_trials=4, random_state=5, executor=ex)
    for res in (par, other):
        assert len(res.trials) == 4 and all(t.error is None for t in res.trials)
        # the split and the measures do not depend on where trials run: the same k gives the same figures
        by_k = {t.params["k"]: t.utility_loss for t in seq.trials}
        for t in res.trials:
            if t.params["k"] in by_k:
                assert t.utility_loss == pytest.approx(by_k[t.params["k"]], rel=1e-12)


# a technique that takes its time, to hold a trial past the deadline (registered only while a
# test uses it, so no other test meets it among the registered techniques)
class _Sleepy(Technique):
    """Sleeps, then changes nothing much (a test technique)."""

    search_space: ClassVar = SearchSpace({"seconds": Real(0.2, 0.3)})

    def __init__(self, seconds: float = 0.2, class_column=None, schema=None, random_state=None) -> None:
        self.seconds = seconds
        self.class_column = class_column
        self.schema = schema
        self.random_state = random_state

    def _transform(self, df: pd.DataFrame, schema: Schema, rng: np.random.Generator) -> pd.DataFrame:
        time.sleep(self.seconds)
        for c in schema.numeric:
            df[c] = df[c] + rng.normal(0, df[c].std(), len(df))
        return df


@pytest.fixture
def sleepy():
    register("test-sleepy")(_Sleepy)
    yield
    TECHNIQUES.pop("test-sleepy", None)


def test_the_clock_starts_a_trial_only_while_one_can_end_in_time() -> None:
    from ppdm.experiments.recommend.search import Clock as _Clock

    clock = _Clock(10.0, 0.0, 1)
    clock.durations = [1.0, 2.0, 2.0, 6.0]  # the 75th percentile is the estimate: 3
    # 10 s less one trial for the recommended release, less 5 % of the budget for the files
    assert clock.deadline() == pytest.approx(10 - 3 - 0.5)
    assert clock.can_start(3.4) and not clock.can_start(3.6)
    assert clock.fraction(5.0) == 0.5
    assert _Clock(None, 0.0, 1).can_start(1e9)
    assert _Clock(600.0, 0.0, 1).deadline() == pytest.approx(600 - 1 - 3)  # at most 3 s for the files


def test_a_time_budget_is_honoured(sleepy: Any) -> None:
    pol = {"risk": {"record_linkage": 0.5}, "utility": {"weights": {"sse_sst": 1}},
           "techniques": {"test-sleepy": {"seconds": {"low": 0.3, "high": 0.4}}}}
    start = time.perf_counter()
    res = recommend(X, pol, schema=SCHEMA, budget=10.0, random_state=0)
    took = time.perf_counter() - start
    assert res.study["stopped_by"] == "time budget"
    assert took <= 10.0 + 1.0  # the budget, plus what a trial in this process cannot be stopped in
    assert len(res.trials) >= 3


def test_a_trial_running_at_the_deadline_is_stopped(sleepy: Any) -> None:
    pol = {"risk": {"record_linkage": 0.5}, "utility": {"weights": {"sse_sst": 1}},
           "techniques": {"test-sleepy": {"seconds": {"low": 9.0, "high": 9.5}}}}
    ex = ThreadPoolExecutor(1)
    try:
        start = time.perf_counter()
        res = recommend(X, pol, schema=SCHEMA, budget=7.0, executor=ex, random_state=0)
        took = time.perf_counter() - start
    finally:
        ex.shutdown(wait=False)  # the sleeping trial ends on its own; the search did not wait for it
    assert took <= 7.0 + 0.5
    assert res.study["stopped_by"] == "time budget" and res.release is None
    assert [t.state for t in res.trials] == ["stopped"] and "time budget" in res.trials[0].error


def test_budgets_and_arguments_are_checked() -> None:
    for bad in (0, -5, "0s", "abc", "10 minutes", True):
        with pytest.raises(ParameterError):
            recommend(X, POLICY, schema=SCHEMA, budget=bad)
    with pytest.raises(ParameterError, match="trial budget must be a whole number of at least 1"):
        recommend(X, POLICY, schema=SCHEMA, n_trials=0)
    with pytest.raises(ParameterError, match="n_jobs"):
        recommend(X, POLICY, schema=SCHEMA, n_jobs=0)
    with pytest.raises(ParameterError, match="holdout must be a fraction strictly between 0 and 1"):
        recommend(X, POLICY, schema=SCHEMA, holdout=1.0, n_trials=1)
    assert parse_duration("10m") == 600 and parse_duration("1h30m") == 5400 and parse_duration("90") == 90
    assert parse_duration("1.5h") == 5400 and parse_duration(2.5) == 2.5


def test_the_table_must_allow_the_policy() -> None:
    keys = {"risk": {"k_anonymity": {"at_most": 0.01, "options": {"k": 5}}}, "utility": {"weights": {"sse_sst": 1}}}
    with pytest.raises(ParameterError, match="needs declared quasi-identifiers"):
        recommend(X, keys, schema=SCHEMA, n_trials=1)
    no_class = X.drop(columns="label")
    with pytest.raises(ParameterError, match="'auc' needs a class column"):
        recommend(no_class, {"risk": {"record_linkage": 0.1}, "utility": {"weights": {"auc": 1}}}, n_trials=1)
    with pytest.raises(ParameterError, match="allows technique 'framework', but it does not fit this table: "
                                             "needs a class column"):
        recommend(no_class, {"risk": {"record_linkage": 0.1}, "utility": {"weights": {"sse_sst": 1}},
                             "techniques": ["framework"]}, n_trials=1)
    # a measure that cannot be computed on the table is named before the search starts
    with pytest.raises(ParameterError, match="'l_diversity' cannot be computed on this table"):
        recommend(X.assign(c=X["c"].astype(str)), {"risk": {"l_diversity": {"at_least": 2}},
                                                   "utility": {"weights": {"sse_sst": 1}}},
                  quasi_identifiers="c", n_trials=1)


def test_search_spaces_follow_the_policy() -> None:
    pol = parse_policy({"risk": {"record_linkage": 0.1}, "utility": {"weights": {"sse_sst": 1}}, "epsilon": 1.0})
    spaces, left = build_spaces(pol, SCHEMA, 100)
    by = {s.name: s for s in spaces}
    assert by["dpcube"].params["epsilon"] == Real(0.01, 1.0, log=True)  # the policy's ε caps the range
    assert by["mdav"].params["k"] == Integer(2, 100, log=True, at_most_share=0.5)
    assert by["mdav"].describe(100)["k"] == "2 to 50 (log scale)"
    no_class = Schema(numeric=["a", "b"])
    spaces, left = build_spaces(pol, no_class, 100)
    assert left["framework"] == "needs a class column" and left["forest-framework"] == "needs a class column"
    required = parse_policy({"risk": {"record_linkage": 0.1}, "utility": {"weights": {"sse_sst": 1}},
                             "epsilon": {"at_most": 0.5, "required": True}})
    spaces, left = build_spaces(required, SCHEMA, 100)
    assert [s.name for s in spaces] == ["dpcube"] and "requires differential privacy" in left["mdav"]
    too_much = parse_policy({"risk": {"record_linkage": 0.1}, "utility": {"weights": {"sse_sst": 1}},
                             "epsilon": 1.0, "techniques": {"dpcube": {"epsilon": 2.0}}})
    with pytest.raises(ParameterError, match="caps ε at 1, but fixes dpcube.epsilon at 2.0"):
        build_spaces(too_much, SCHEMA, 100)
    impossible = parse_policy({"risk": {"record_linkage": 0.1}, "utility": {"weights": {"sse_sst": 1}},
                               "techniques": {"gaussian-noise": {"level": {"low": 0.5, "high": 2.0}}}})
    with pytest.raises(ParameterError, match="'gaussian-noise' refuses level=2.0: level must lie in"):
        build_spaces(impossible, SCHEMA, 100)


def _rec(n: int, risk: float, loss: float, feasible: bool = True, **utility: float) -> TrialRecord:
    return TrialRecord(n, "t", {}, "complete", {}, [], feasible, risk, loss, dict(utility) or {"u": loss})


def test_pareto_front_by_hand() -> None:
    recs = [_rec(0, 0.3, 0.1), _rec(1, 0.1, 0.5), _rec(2, 0.2, 0.2), _rec(3, 0.2, 0.3), _rec(4, 0.4, 0.1),
            _rec(5, 0.1, 0.5)]
    # 3 is beaten by 2; 4 by 0; 5 ties 1 and comes later
    assert [r.number for r in pareto_front(recs)] == [1, 2, 0]


def test_ranking_by_weights_and_by_priority() -> None:
    pol_w = parse_policy({"risk": {"record_linkage": 0.1}, "utility": {"weights": {"auc": 1, "rule_accuracy": 1}}})
    recs = [_rec(0, 0.05, 0.30, auc=0.1, rule_accuracy=0.2), _rec(1, 0.02, 0.30, auc=0.2, rule_accuracy=0.1),
            _rec(2, 0.01, 0.25, False, auc=0.0, rule_accuracy=0.25), _rec(3, 0.09, 0.28, auc=0.13,
                                                                          rule_accuracy=0.15)]
    assert [r.number for r in rank(recs, pol_w)] == [3, 1, 0]  # least loss; equal loss: lower risk
    pol_p = parse_policy({"risk": {"record_linkage": 0.1},
                          "utility": {"priority": ["auc", "rule_accuracy"], "tolerance": {"auc": 0.05}}})
    for r in recs:
        r.utility_loss = r.utility["auc"]
    # auc first: 0.1 is best; 0.13 lies within 0.05 of it, and rule accuracy then prefers trial 3
    assert [r.number for r in rank(recs, pol_p)][0] == 3
    pol_p0 = parse_policy({"risk": {"record_linkage": 0.1}, "utility": {"priority": ["auc", "rule_accuracy"]}})
    assert [r.number for r in rank(recs, pol_p0)] == [0, 3, 1]


def test_lines_are_met_only_when_the_interval_is_within() -> None:
    pol = parse_policy({"risk": {"linkability": 0.05, "record_linkage": 0.1, "l_diversity": {"at_least": 2}},
                        "utility": {"weights": {"sse_sst": 1}}, "epsilon": 1.0})
    outcome = {"measures": {"linkability": {"value": 0.03, "ci_low": 0.01, "ci_high": 0.06},
                            "record_linkage": {"value": 0.1, "ci_low": None, "ci_high": None},
                            "l_diversity": {"value": None, "ci_low": None, "ci_high": None,
                                            "reason": "no sensitive attribute"}},
               "privacy": {"differentially_private": False, "epsilon": 0.5}, "error": None}
    lines = {v.measure: v for v in judge_lines(outcome, pol)}
    assert lines["linkability"].verdict == "uncertain" and not lines["linkability"].met
    assert lines["linkability"].margin == pytest.approx(0.2)  # worst end 0.06 over 0.05, by 0.01 / 0.05
    assert lines["record_linkage"].verdict == "meets" and lines["record_linkage"].margin == 0  # at the threshold
    assert lines["l_diversity"].verdict == "not measured" and "no sensitive" in lines["l_diversity"].reason
    assert lines["epsilon"].verdict == "misses" and "not differentially private" in lines["epsilon"].reason
    outcome["privacy"] = None
    assert {v.measure: v for v in judge_lines(outcome, pol)}["epsilon"].verdict == "not applicable"
    outcome["privacy"] = {"differentially_private": True, "epsilon": 0.5}
    eps = {v.measure: v for v in judge_lines(outcome, pol)}["epsilon"]
    assert eps.verdict == "meets" and eps.met and eps.margin == pytest.approx(-0.5)
    assert isinstance(eps, LineVerdict) and math.isfinite(eps.margin)


def test_outputs_hold_no_record(tmp_path: Path) -> None:
    from ppdm.report.recommend import recommendation_document, render_recommendation_html

    x = X.copy()
    planted = [31415.926535, 27182.818284]
    x.loc[[3, 9], "b"] = planted
    res = recommend(x, POLICY, schema=SCHEMA, n_trials=6, random_state=0)
    doc = recommendation_document(res)
    text = json.dumps(doc) + render_recommendation_html(doc, plots=False)
    for v in planted:
        assert str(v) not in text and f"{v:.4g}" not in text


def test_when_fresh_draws_of_the_winner_miss_the_next_in_rank_is_released(monkeypatch: Any) -> None:
    from ppdm.experiments.recommend import measure as M
    from ppdm.experiments.recommend import trials as T
    from ppdm.report.recommend import recommendation_document

    made, refused = T.make_release, []

    def make(job: Any, table: Any, data: Any, info: Any = None) -> Any:
        rel = made(job, table, data, info)
        if job.number == -1:  # the recommended release, not a trial
            rel.data.attrs["final"] = (job.technique, job.params.get("k"))
        return rel

    measured = M.measure_release

    def measure(z: Any, data: Any, out_schema: Any = None, **kw: Any) -> Any:
        out = measured(z, data, out_schema, **kw)
        final = z.attrs.get("final")
        if final is not None and (not refused or refused[0] == final):
            refused.append(final)
            out["record_linkage"] = {**out["record_linkage"], "value": 1.0}  # this draw misses the line
        return out

    monkeypatch.setattr(T, "make_release", make)
    monkeypatch.setattr(M, "measure_release", measure)
    res = recommend(X, POLICY, schema=SCHEMA, n_trials=30, random_state=2)  # a seed whose search meets it twice
    assert len(res.ranking) >= 2 and res.chosen is res.ranking[1]
    assert refused == [(res.winner.technique, res.winner.params["k"])]  # MDAV draws nothing: one try is enough
    assert res.verification.feasible and "missed the policy" in res.notes[0]
    doc = recommendation_document(res)
    assert doc["winner"] == res.winner.number and doc["chosen"] == res.chosen.number
    assert "but fresh draws of it missed the policy; the release was made with the next in rank" in doc["why"][0]


def test_a_recoded_release_is_judged_on_its_labels_and_costed_against_the_original() -> None:
    from ppdm.anonymize.search_space import build_technique
    from ppdm.data.generalization import generalise
    from ppdm.experiments.recommend import output_schema

    rng = np.random.default_rng(3)
    x = pd.DataFrame({"age": rng.integers(18, 90, 80), "hours": rng.integers(10, 60, 80),
                      "sex": rng.choice(["f", "m"], 80), "label": rng.choice(["yes", "no"], 80)})
    pol = {"risk": {"record_linkage": 0.5}, "utility": {"weights": {"sse_sst": 1}}}
    data = search_data(x, pol, class_column="label", quasi_identifiers="age,sex", random_state=0)
    # hours passes unchanged and alone singles out 45 % of the records: declared safe, the point here is the measures
    with warnings.catch_warnings():  # the gate's warning is not the point (it is tested in test_release_gate)
        warnings.simplefilter("ignore", UserWarning)
        rel = release(data.train, build_technique("recode", {"columns": ["age"], "breaks": [0, 40, 100]},
                                                  class_column="label", schema=data.schema), schema=data.schema,
                      allow_pass_through="hours")
    out = output_schema(rel.technique)
    assert out.categories["age"] == ["(0,40]", "(40,100]"]
    zr = rel.in_input_order()[0]  # the published release is shuffled; measures pair it with x
    got = measure_release(zr, data, out)
    # risk: the intruder holding x recodes the ages the same way and links on the labels and on
    # every other attribute (not only the declared keys age and sex)
    xr = data.train.assign(age=generalise(data.train["age"], out.categories["age"]).to_numpy())
    z = zr.assign(age=zr["age"].astype(object))
    assert got["record_linkage"]["value"] == pytest.approx(
        record_linkage(xr, z[xr.columns], numeric=["hours"], categorical=["age", "sex", "label"]).value)
    # utility: against the original, each label read as its midpoint (20 and 70)
    mid = np.where(data.train["age"] <= 40, 20.0, 70.0)
    num = ["age", "hours"]
    assert got["sse_sst"]["value"] == pytest.approx(
        sse_sst(data.train[num].astype(float), data.train[num].assign(age=mid).astype(float)).value)
    # without the release's schema the labels would not be understood: the views are what make it measurable
    assert measure_release(zr, data, None)["sse_sst"]["value"] is None


def test_a_guarantee_starts_the_range_at_what_the_policy_requires() -> None:
    keys = Schema.infer(X.assign(c=np.where(X["a"] > 50, "p", "q")), "label")
    keys = Schema(numeric=["a", "b"], categorical=["c"], class_column="label", quasi_identifiers=["c"])
    need = parse_policy({"risk": {"k_anonymity": {"at_most": 0, "options": {"k": 6}}},
                         "utility": {"weights": {"sse_sst": 1}}, "techniques": ["local-suppression"]})
    (ls,), _ = build_spaces(need, keys, 100)
    assert ls.params["k"] == Integer(6, 20, log=True)  # k below 6 cannot make every record 6-anonymous
    (chain,), _ = build_spaces(parse_policy({**need.to_dict(), "techniques": ["recode > local-suppression"]}),
                               keys, 100)
    assert chain.params["local-suppression.k"] == Integer(6, 20, log=True)
    # a share of violations allowed, or a range the policy sets itself, is left as it is
    some = parse_policy({"risk": {"k_anonymity": {"at_most": 0.01, "options": {"k": 6}}},
                         "utility": {"weights": {"sse_sst": 1}}, "techniques": ["local-suppression"]})
    assert build_spaces(some, keys, 100)[0][0].params["k"] == Integer(2, 20, log=True)
    own = parse_policy({**need.to_dict(), "techniques": {"local-suppression": {"k": {"low": 3, "high": 8}}}})
    assert build_spaces(own, keys, 100)[0][0].params["k"] == Integer(3, 8, log=True)


def test_l_diversity_and_t_closeness_lines_bound_generalizations_l_and_t() -> None:
    sens = Schema(numeric=["a"], categorical=["c", "s"], quasi_identifiers=["a", "c"], sensitive=["s"])

    def space(risk: dict[str, Any], techniques: Any = ("generalize",), schema: Schema = sens) -> Any:
        pol = parse_policy({"risk": risk, "utility": {"weights": {"sse_sst": 1}}, "techniques": list(techniques)
                            if not isinstance(techniques, dict) else techniques})
        return build_spaces(pol, schema, 100)[0][0]

    # declared: l one of None, 2, 3; t one of None, 0.5, 0.3, 0.2, 0.15
    assert space({"k_anonymity": 0.5}).params["l"] == Choice((None, 2, 3))
    # l ≥ 3: no l (None) nor 2 guarantees it; l ≥ 2.5 means 3 distinct values, l ≥ 5 asks beyond the range
    assert space({"l_diversity": {"at_least": 3}}).params["l"] == Choice((3,))
    assert space({"l_diversity": {"at_least": 2.5}}).params["l"] == Choice((3,))
    assert space({"l_diversity": {"at_least": 2}}).params["l"] == Choice((2, 3))
    assert space({"l_diversity": {"at_least": 5}}).params["l"] == Choice((5,))
    # t ≤ 0.25: the line's own value first, then the tighter ones declared (0.2, 0.15)
    got = space({"t_closeness": {"at_most": 0.25}, "l_diversity": {"at_least": 2}})
    assert got.params["t"] == Choice((0.25, 0.2, 0.15)) and got.params["l"] == Choice((2, 3))
    assert space({"t_closeness": 0.1}).params["t"] == Choice((0.1,))
    # lines every release meets (l ≥ 1, t ≤ 1) leave the choices as declared
    met = space({"l_diversity": {"at_least": 1}, "t_closeness": {"at_most": 1}})
    assert met.params["l"] == Choice((None, 2, 3)) and met.params["t"] == Choice((None, 0.5, 0.3, 0.2, 0.15))
    # in a chain, named by step; a range the policy sets itself is left as it is
    chain = space({"l_diversity": {"at_least": 3}}, ["generalize > local-suppression"])
    assert chain.params["generalize.l"] == Choice((3,))
    own = space({"l_diversity": {"at_least": 3}}, {"generalize": {"l": {"choices": [None, 2]}}})
    assert own.params["l"] == Choice((None, 2))
    # no sensitive attribute declared: l and t are fixed at None (no l_diversity to guarantee), untouched
    plain = Schema(numeric=["a"], categorical=["c", "s"], quasi_identifiers=["a", "c"])
    assert "l" not in space({"k_anonymity": 0.5}, schema=plain).params


class _Broken(Technique):
    """Refuses every table (a test technique)."""

    search_space: ClassVar = SearchSpace({"level": Real(0.1, 0.9)})

    def __init__(self, level: float = 0.5, class_column=None, schema=None, random_state=None) -> None:
        self.level = level
        self.class_column = class_column
        self.schema = schema
        self.random_state = random_state

    def _transform(self, df: pd.DataFrame, schema: Schema, rng: np.random.Generator) -> pd.DataFrame:
        raise ParameterError("this technique refuses every table")


def test_a_technique_that_fails_teaches_the_sampler_to_avoid_it() -> None:
    register("test-broken")(_Broken)
    try:
        pol = {"risk": {"record_linkage": 0.6}, "utility": {"weights": {"sse_sst": 1}},
               "techniques": {"test-broken": None, "uniform-noise": {"level": {"low": 0.9, "high": 1.0}}}}
        res = recommend(X, pol, schema=SCHEMA, n_trials=30, random_state=1)
    finally:
        TECHNIQUES.pop("test-broken", None)
    broken = [t for t in res.trials if t.technique == "test-broken"]
    assert broken and all(t.state == "failed" and "refuses every table" in t.error for t in broken)
    # told as the worst outcome, the failing family is drawn far less than the other once the start is over
    later = [t.technique for t in res.trials[10:]]
    assert later.count("test-broken") <= 5 < later.count("uniform-noise")


def test_random_settings_stay_in_the_spaces_and_follow_their_conditions() -> None:
    pol = parse_policy({"risk": {"record_linkage": 0.1}, "utility": {"weights": {"sse_sst": 1}},
                        "techniques": {"mdav": {"k": {"low": 3, "high": 9}},
                                       "gaussian-noise": {"level": {"low": 0.05, "high": 0.2}},
                                       "random-substitution": None}})
    spaces, _ = build_spaces(pol, SCHEMA, 60)
    by = {s.name: s for s in spaces}
    rng = np.random.default_rng(3)
    drawn = [random_setting(spaces, rng, 60) for _ in range(300)]
    assert {d["technique"] for d in drawn} == set(by)
    for d in drawn:
        ts = by[d["technique"]]
        chosen = {k.split(":", 1)[1]: v for k, v in d.items() if k != "technique"}
        # named as suggest() names them, every active parameter drawn and only those
        assert all(k.startswith(f"{ts.name}:") for k in d if k != "technique")
        assert set(chosen) == {p for p in ts.params if ts.active(p, chosen)}
        for p, v in chosen.items():
            dist = ts.params[p]
            if isinstance(dist, Integer):
                assert isinstance(v, int) and dist.low <= v <= dist.high_for(60)
            elif isinstance(dist, Real):
                assert dist.low <= v <= dist.high
            else:
                assert v in dist.values
    ks = {d["mdav:k"] for d in drawn if d["technique"] == "mdav"}
    assert ks == set(range(3, 10))  # every whole number of a log range can be drawn, the ends included


def test_a_spent_space_stops_the_search() -> None:
    pol = {"risk": {"record_linkage": 0.5}, "utility": {"weights": {"sse_sst": 1}},
           "techniques": {"mdav": {"k": {"low": 2, "high": 4}, "columns": None}}}
    res = recommend(X, pol, schema=SCHEMA, n_trials=200, random_state=2)
    assert res.study["stopped_by"] == "search space exhausted"
    made = [t for t in res.trials if t.repeat_of is None]
    # each of the three settings made once; repeats cost nothing and point at the trial they repeat
    assert sorted(t.params["k"] for t in made) == [2, 3, 4]
    assert len(res.trials) < 200
    assert all(res.trials[t.repeat_of].params == t.params for t in res.trials if t.repeat_of is not None)


def test_each_line_judges_only_the_intruder_its_measure_models() -> None:
    pol = parse_policy({"risk": {"k_anonymity": 0.01, "reidentification_risk": 0.05, "qi_matching": 0.05,
                                 "record_linkage": 0.1}, "utility": {"weights": {"sse_sst": 1}}})
    skipped = {"value": None, "ci_low": None, "ci_high": None, "not_applicable": True,
               "reason": "k_anonymity judges a release on quasi-identifiers that reach it unchanged or generalised, "
                         "and every one is perturbed"}
    # every key perturbed: the key-variable lines do not apply, intruder matching judges the release
    noise = {"measures": {"k_anonymity": skipped, "reidentification_risk": skipped,
                          "qi_matching": {"value": 0.03, "ci_low": 0.02, "ci_high": 0.04},
                          "record_linkage": {"value": 0.08, "ci_low": None, "ci_high": None}}, "error": None}
    lines = {v.measure: v for v in judge_lines(noise, pol)}
    assert lines["k_anonymity"].verdict == "not applicable" and lines["k_anonymity"].met
    assert lines["qi_matching"].verdict == "meets"
    rec = record_of(0, {**noise, "measures": {**noise["measures"], "sse_sst": {"value": 0.2}}}, pol)
    assert rec.feasible and rec.risk == pytest.approx(0.08)
    # no key perturbed: intruder matching is computed but does not judge, however high it is
    kept = {"measures": {"k_anonymity": {"value": 0.0}, "reidentification_risk": {"value": 0.04},
                         "qi_matching": {"value": 0.9, "ci_low": None, "ci_high": None,
                                         "not_judged": "every quasi-identifier reaches the release unchanged"},
                         "record_linkage": {"value": 0.02}, "sse_sst": {"value": 0.1}}, "error": None}
    rec = record_of(1, kept, pol)
    qi = next(v for v in rec.lines if v.measure == "qi_matching")
    assert qi.verdict == "not applicable" and qi.value == 0.9 and "unchanged" in qi.reason
    assert rec.feasible and rec.risk == pytest.approx(0.04)  # the front's risk leaves the 0.9 out
    # ... while an applicable line that is uncertain still keeps the release out
    kept["measures"]["record_linkage"] = {"value": 0.05, "ci_low": 0.01, "ci_high": 0.2}
    assert not record_of(2, kept, pol).feasible
    # a policy with key-variable lines only: a noise release leaves its intruder unjudged and misses
    keyvar = parse_policy({"risk": {"k_anonymity": 0.01, "reidentification_risk": 0.05, "record_linkage": 0.1},
                           "utility": {"weights": {"sse_sst": 1}}})
    rec = record_of(3, {**noise, "measures": {**noise["measures"], "sse_sst": {"value": 0.2}}}, keyvar)
    k = next(v for v in rec.lines if v.measure == "k_anonymity")
    assert k.verdict == "not judged" and not k.met and "add qi_matching" in k.reason
    assert not rec.feasible and rec.risk is None
    un = next(e for e in rec.failed_lines() if e.measure == "reidentification_risk")
    assert un.margin > 0


KEYED = tiny(80, seed=4).assign(g=lambda d: np.where(d["b"] > 5, "hi", "lo"))
KEYED_SCHEMA = Schema.infer(KEYED, "label")


def test_releases_are_measured_on_the_scenarios_that_apply() -> None:
    pol = {"risk": {"k_anonymity": {"at_most": 0.5, "options": {"k": 2}}, "qi_matching": 0.9},
           "utility": {"weights": {"sse_sst": 1}}}
    data = search_data(KEYED, pol, schema=KEYED_SCHEMA, quasi_identifiers=["a", "g"], random_state=0)
    # the keys as they were: key-variable risk judges, intruder matching does not
    same = measure_release(data.train.copy(), data)
    assert same["k_anonymity"]["value"] is not None and "not_judged" not in same["k_anonymity"]
    assert same["qi_matching"]["value"] is not None and same["qi_matching"]["not_judged"]
    # every key perturbed: key-variable risk does not apply, intruder matching judges
    z = data.train.copy()
    z["a"] = z["a"] + 0.37
    z["g"] = np.where(z["g"] == "hi", "lo", "hi")
    moved = measure_release(z, data)
    assert moved["k_anonymity"]["value"] is None and moved["k_anonymity"]["not_applicable"]
    assert "perturbed" in moved["k_anonymity"]["reason"]
    assert moved["qi_matching"]["value"] is not None and "not_judged" not in moved["qi_matching"]


def test_a_noise_release_meets_a_key_variable_policy_only_through_intruder_matching() -> None:
    keyvar = {"risk": {"k_anonymity": {"at_most": 0.0, "options": {"k": 2}}}, "utility": {"weights": {"sse_sst": 1}},
              "techniques": {"gaussian-noise": {"level": {"low": 0.95, "high": 1.0}}}}
    res = recommend(KEYED, keyvar, schema=KEYED_SCHEMA, quasi_identifiers=["a", "b", "c"], n_trials=4,
                    random_state=0)
    assert res.winner is None and res.unmet is not None
    assert all(t.lines[0].verdict == "not judged" for t in res.trials)
    with_matching = {**keyvar, "risk": {**keyvar["risk"], "qi_matching": 1.0}}
    res = recommend(KEYED, with_matching, schema=KEYED_SCHEMA, quasi_identifiers=["a", "b", "c"], n_trials=4,
                    random_state=0)
    assert res.winner is not None and res.winner.lines[0].verdict == "not applicable"
    assert res.winner.lines[1].verdict == "meets"


def test_a_trial_stops_measuring_risk_once_a_line_misses() -> None:
    from ppdm.experiments.recommend import measure_order

    pol = {"risk": {"record_linkage": 0.01, "singling_out_multivariate": 1.0, "inference": 1.0},
           "utility": {"weights": {"sse_sst": 1}}}
    data = search_data(X, pol, schema=SCHEMA, random_state=0)
    assert measure_order(data.measures) == ["sse_sst", "record_linkage", "inference", "singling_out_multivariate"]
    z = release(data.train, make_technique("mdav", class_column="label", schema=SCHEMA, params={"k": 2}),
                schema=SCHEMA).in_input_order()[0]
    full = measure_release(z, data)
    assert full["record_linkage"]["value"] > 0.01  # k = 2 leaves half the records linkable
    part = measure_release(z, data, stop_on_miss=True)
    # record linkage misses: the slow attacks are not taken, utility is, and the values taken are the same
    assert part["singling_out_multivariate"]["value"] is None and part["inference"]["skipped"] == "record_linkage"
    assert part["sse_sst"]["value"] == full["sse_sst"]["value"]
    assert part["record_linkage"]["value"] == full["record_linkage"]["value"]
    policy = parse_policy(pol)
    rec = record_of(0, {"technique": "mdav", "params": {}, "measures": part}, policy)
    assert not rec.feasible and rec.utility_loss == full["sse_sst"]["value"]
    by = {v.measure: v for v in rec.lines}
    assert by["record_linkage"].verdict == "misses" and by["inference"].verdict == "not measured"
    assert by["inference"].margin == 0.0 and rec.risk is not None
    # a release that meets every line measured so far is measured in full
    loose = search_data(X, {**pol, "risk": {**pol["risk"], "record_linkage": 1.0}}, schema=SCHEMA, random_state=0)
    every = measure_release(z, loose, stop_on_miss=True)
    assert all(every[m]["value"] is not None for m in loose.measures)
    assert every["singling_out_multivariate"]["value"] == full["singling_out_multivariate"]["value"]


def test_a_trial_over_a_utility_ceiling_spares_its_risk_measures() -> None:
    """A utility loss above the policy's ceiling is measured first and ends the trial's
    measurement as a risk line's miss does: the risk measures are not taken."""
    pol = {"risk": {"record_linkage": 1.0, "inference": 1.0}, "utility": {"weights": {"sse_sst": 1}}}
    z = None
    for cap, spared in ((0.0, True), (10.0, False)):
        data = search_data(X, {**pol, "utility": {**pol["utility"], "at_most": {"sse_sst": cap}}}, schema=SCHEMA,
                           random_state=0)
        assert data.ceilings == (("sse_sst", cap),)
        if z is None:
            z = release(data.train, make_technique("mdav", class_column="label", schema=SCHEMA, params={"k": 2}),
                        schema=SCHEMA).in_input_order()[0]
        got = measure_release(z, data, stop_on_miss=True)
        assert got["sse_sst"]["value"] > 0  # MDAV with k = 2 moves the records
        assert (got["inference"].get("skipped") == "sse_sst loss") is spared
        assert (got["record_linkage"]["value"] is None) is spared
        rec = record_of(0, {"technique": "mdav", "params": {}, "measures": got}, parse_policy(
            {**pol, "utility": {**pol["utility"], "at_most": {"sse_sst": cap}}}))
        assert rec.feasible is not spared


def test_a_synthetic_release_is_measured_as_it_is() -> None:
    """DPCube's records are made from no particular originals (no pairing): its trials are
    measured on the release as it is, not refused for want of a pairing."""
    import dataclasses

    sch = dataclasses.replace(
        SCHEMA, bounds={c: (float(X[c].min()) - 1, float(X[c].max()) + 1) for c in SCHEMA.numeric},
        categories={c: sorted(map(str, X[c].unique())) for c in [*SCHEMA.categorical, SCHEMA.class_column]})
    pol = {"risk": {"record_linkage": 0.6}, "utility": {"weights": {"prediction_accuracy": 1}},
           "techniques": {"dpcube": None}}
    # the tiny table's control split is small: scores narrow enough to choose by need a wide score budget
    res = recommend(X, pol, schema=sch, n_trials=3, random_state=0, score_epsilon=50.0)
    assert res.trials and all(t.state == "complete" and t.error is None for t in res.trials)



def test_a_dp_winner_keeps_the_size_of_x_out_of_its_public_record(tmp_path: Path) -> None:
    import dataclasses

    sch = dataclasses.replace(
        SCHEMA, bounds={c: (float(X[c].min()) - 1, float(X[c].max()) + 1) for c in SCHEMA.numeric},
        categories={c: sorted(map(str, X[c].unique())) for c in [*SCHEMA.categorical, SCHEMA.class_column]})
    pol = {"risk": {"record_linkage": 0.6}, "utility": {"weights": {"prediction_accuracy": 1}},
           "techniques": {"dpcube": None}}
    # the tiny table's control split is small: scores narrow enough to choose by need a wide score budget
    res = recommend(X, pol, schema=sch, n_trials=3, random_state=0, score_epsilon=50.0)
    assert res.release is not None
    res.save(tmp_path / "z.csv")
    prov = read_provenance(tmp_path / "z.csv")
    assert prov["holdout"] == {"fraction": 0.5, "control": "z.control.csv"}
    assert json.loads((tmp_path / "z.private.json").read_text())["holdout"]["rows"] == 30


def test_racing_sets_aside_a_technique_that_never_meets_the_policy() -> None:
    from ppdm.experiments.recommend import RACE_AFTER

    # top and bottom coding leaves almost every value as it is: record linkage stays far above 0.1,
    # while MDAV with a large enough k meets it
    pol = {"risk": {"record_linkage": 0.1}, "utility": {"weights": {"sse_sst": 1}},
           "techniques": {"mdav": {"k": {"low": 2, "high": 30}, "columns": None}, "top-bottom-coding": None}}
    res = recommend(X, pol, schema=SCHEMA, n_trials=40, random_state=3)
    made = [t for t in res.trials if t.repeat_of is None]
    assert not any(t.feasible for t in made if t.technique == "top-bottom-coding")
    assert any(t.feasible for t in made if t.technique == "mdav")
    assert list(res.study["set_aside"]) == ["top-bottom-coding"]
    assert "none meeting the policy" in res.study["set_aside"]["top-bottom-coding"]
    # no trial of the losing technique starts once a release met the policy and it had RACE_AFTER trials
    met, coded = False, 0
    for t in sorted(made, key=lambda t: t.number):
        if t.technique == "top-bottom-coding":
            assert not (met and coded >= RACE_AFTER), f"trial {t.number} ran a technique set aside"
            coded += 1
        met = met or t.feasible
    assert coded >= RACE_AFTER
    # the rest of the search went to the technique that meets the policy
    assert sum(t.technique == "mdav" for t in made) > len(made) / 2


def test_racing_weights_by_hand() -> None:
    import optuna

    from ppdm.experiments.recommend import race
    from ppdm.experiments.recommend.search import RACE_EXCESS

    class _S:
        def __init__(self, name: str) -> None:
            self.name = name

    spaces = [_S(n) for n in "ABCD"]
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    stu = optuna.create_study(directions=["minimize", "minimize"])

    def add(name: str, loss: float, met: bool, miss: float = 1.5) -> None:
        t = stu.ask()
        t.suggest_categorical("technique", list("ABCD"))
        t.set_user_attr("outcome", {"technique": name})
        t.set_constraint("record_linkage", -0.1 if met else miss)
        stu.tell(t, [0.5, loss])

    for _ in range(5):
        add("A", 0.1, False)
    add("D", 0.1, False)
    assert race(stu, spaces) == ({}, {})  # nothing met the policy yet: the sampler picks
    add("D", 0.1, False)
    for loss in (1.0, 2.0, 3.0, 4.0):
        add("B", loss, True)
    for loss in (0.5, 5.0, 6.0, 7.0):
        add("C", loss, True)
    aside, weights = race(stu, spaces)
    # A: 5 trials, none met; D: 2 trials, still in the race. 8 releases met the policy: K is a
    # quarter, 2, and B and C, which both met it, get it alike whatever their losses
    assert list(aside) == ["A"] and "after 5 trials" in aside["A"]
    assert weights == {"B": 3, "C": 3, "D": 1}
    # C meets the policy four more times: K = ⌈12/4⌉ = 3, still the same for both
    for loss in (8.0, 9.0, 9.5, 9.9):
        add("C", loss, True)
    assert race(stu, spaces)[1] == {"B": 4, "C": 4, "D": 1}
    add("D", 0.1, True)  # D meets it with its third trial: it joins at K = ⌈13/4⌉ = 4
    assert race(stu, spaces)[1] == {"B": 5, "C": 5, "D": 5}
    add("A", 0.1, False)  # a sixth miss of A's changes nothing
    assert race(stu, spaces)[0] == {"A": "set aside after 6 trials, none meeting the policy, while other "
                                          "techniques met it"}
    # a miss by less than RACE_EXCESS allowances in all keeps A in the race, at weight 1
    add("A", 0.1, False, miss=RACE_EXCESS - 0.01)
    aside, weights = race(stu, spaces)
    assert aside == {} and weights["A"] == 1
    assert race(stu, spaces[:1]) == ({}, {})  # one technique is never set aside


def test_each_family_counts_its_trials_as_the_outcomes_do() -> None:
    """A family's sentence counts met/missed/failed/stopped as RecommendResult.outcomes() does:
    a trial that missed on its utility alone is a miss, never "missed <line> in 0 of N"."""
    from ppdm.experiments.recommend import RecommendResult
    from ppdm.report.recommend import recommendation_document

    pol = parse_policy({"risk": {"record_linkage": 0.1}, "utility": {"weights": {"sse_sst": 1}}})
    no_sse = {"value": None, "reason": "dates could not be compared"}

    def rec(n: int, tech: str, rl: float | None, sse: Any = None, **kw: Any) -> Any:
        m = {} if rl is None else {"record_linkage": {"value": rl}, "sse_sst": sse or {"value": 0.2}}
        return record_of(n, {"technique": tech, "params": {"k": n}, "error": kw.pop("error", None), "measures": m},
                         pol, **kw)

    recs = [rec(0, "mdav", 0.3), rec(1, "mdav", 0.01, no_sse), rec(2, "mdav", 0.02, no_sse),
            rec(3, "mdav", None, error="column 'd' is not numeric"),
            rec(4, "mdav", None, error="still running when the time budget ran out", state="stopped"),
            rec(5, "mdav", 0.3, repeat_of=0), rec(6, "recode", 0.05), rec(7, "recode", 0.5),
            rec(8, "pram", None, error="no categorical column"), rec(9, "noise", 0.01, no_sse)]
    res = RecommendResult(pol, recs, None, [], [], None, None, None, None, None, False, {"trials": len(recs)}, {},
                          {"mdav": {}, "recode": {}, "pram": {}, "noise": {}, "swap": {}}, {})
    fams = {f["technique"]: f for f in recommendation_document(res)["families"]}
    counts = res.outcomes()  # by hand: met 6; missed 0, 1, 2, 7, 9; failed 3, 8; stopped 4; repeat 5
    assert counts == {"met": 1, "missed": 5, "failed": 2, "stopped": 1, "repeat": 1}
    for k in ("met", "missed", "failed", "stopped"):
        assert sum(f[k] for f in fams.values()) == counts[k], k
    assert sum(f["repeats"] for f in fams.values()) == counts["repeat"]
    mdav = fams["mdav"]
    assert (mdav["trials"], mdav["ran"], mdav["missed"], mdav["failed"], mdav["stopped"]) == (5, 3, 3, 1, 1)
    assert mdav["verdict"] == ("rejected: 3 of 5 trial(s) missed the policy, most often record_linkage ≤ 0.1 "
                               "(missed in 1 of 3 measured; closest: 0.01, trial 1); 2 met every line: its utility "
                               "could not be measured (sse_sst: dates could not be compared); 1 failed to run, "
                               "1 stopped unfinished")
    # every trial missed on its utility: said so, never "missed record_linkage ≤ 0.1 in 0 of 1"
    assert fams["noise"]["verdict"] == ("rejected: 1 of 1 trial(s) missed the policy; 1 met every line: its utility "
                                        "could not be measured (sse_sst: dates could not be compared)")
    assert fams["recode"]["verdict"].endswith("(trial 6); 1 missed it")
    assert fams["pram"]["verdict"] == "every trial failed to run: no categorical column"
    assert fams["swap"]["verdict"] == "not tried (the search ended first)"


def test_every_trial_says_what_became_of_it_and_why() -> None:
    """One word per trial (met, missed, failed, stopped, repeat), a reason for every one that did
    not meet the policy, and one count of them that the screen, --json and the report share."""
    from ppdm.cli.cmd_recommend import failure_lines, outcome_summary
    from ppdm.experiments.recommend import RecommendResult

    pol = parse_policy({"risk": {"record_linkage": 0.1}, "utility": {"weights": {"sse_sst": 1}}})
    met = record_of(0, {"technique": "mdav", "params": {"k": 5}, "error": None,
                        "measures": {"record_linkage": {"value": 0.05}, "sse_sst": {"value": 0.2}}}, pol)
    missed = record_of(1, {"technique": "mdav", "params": {"k": 2}, "error": None,
                           "measures": {"record_linkage": {"value": 0.3}, "sse_sst": {"value": 0.1}}}, pol)
    no_utility = record_of(2, {"technique": "mdav", "params": {"k": 9}, "error": None,
                               "measures": {"record_linkage": {"value": 0.01},
                                            "sse_sst": {"value": None, "reason": "dates could not be compared"}}}, pol)
    failed = record_of(3, {"technique": "recode", "params": {}, "error": "column 'd' is not numeric",
                           "measures": {}}, pol)
    failed2 = record_of(4, {"technique": "recode", "params": {}, "error": "column 'd' is not numeric",
                            "measures": {}}, pol)
    repeat = record_of(5, {"technique": "mdav", "params": {"k": 5}, "error": None,
                           "measures": {"record_linkage": {"value": 0.05}, "sse_sst": {"value": 0.2}}}, pol,
                       repeat_of=0)
    stopped = record_of(6, {"technique": "mdav", "params": {}, "error": "still running when the time budget ran out",
                            "measures": {}}, pol, state="stopped")
    recs = [met, missed, no_utility, failed, failed2, repeat, stopped]
    assert [r.outcome for r in recs] == ["met", "missed", "missed", "failed", "failed", "repeat", "stopped"]
    assert met.why is None and missed.why == "missed record_linkage ≤ 0.1: misses"
    assert no_utility.why == "its utility could not be measured (sse_sst: dates could not be compared)"
    assert failed.why == "column 'd' is not numeric" and repeat.why == "the same release as trial 0"
    assert failed.to_dict()["outcome"] == "failed" and failed.to_dict()["why"] == failed.why
    res = RecommendResult(pol, recs, None, [], [], None, None, None, None, None, False, {}, {}, {}, {})
    counts = res.outcomes()
    assert counts == {"met": 1, "missed": 2, "failed": 2, "stopped": 1, "repeat": 1}
    assert sum(counts.values()) == len(recs)  # every trial counted once
    assert outcome_summary({"outcomes": counts}) == ("1 met the policy, 2 missed it, 2 failed, 1 stopped unfinished, "
                                                     "1 repeated a setting already tried")
    assert failure_lines([r.to_dict() for r in recs]) == [
        "2 trial(s) (3, 4): column 'd' is not numeric",
        "1 trial(s) (6): still running when the time budget ran out"]
