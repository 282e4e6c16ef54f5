"""Releases built to make the risk verdict wrong in the dangerous direction: each is the original
table or nearly so, and none may be called LOW — with or without quasi-identifiers, in x's
order or shuffled, with or without the release's pairing. Safe releases (fresh draws that
copy nobody) must not be called HIGH either.

Every case runs the default risk measures through the same path as ``ppdm evaluate``
(measurement context → measures → evaluation document → the library's single judge), on a
4000-record sample of adult (complete cases) or on a shipped numeric table.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd
import pytest

from ppdm.data.schema import Schema
from ppdm.datasets import load
from ppdm.experiments.evaluation import (
    evaluate_measures,
    load_all_measures,
    measurement_context,
    resolve_measures,
)
from ppdm.report.evaluation import evaluation_document

load_all_measures()
RISK = [s for s in resolve_measures(None) if s.kind == "risk"]


@pytest.fixture(scope="module")
def adult() -> tuple[pd.DataFrame, Schema]:
    x, sch = load("adult", missing="drop")
    x = x.sample(4000, random_state=5).reset_index(drop=True)
    return x, sch


def risk_verdict(x: pd.DataFrame, z: pd.DataFrame, sch: Schema, *, paired: bool,
                 qi: list[str] | None = None, sensitive: list[str] | None = None) -> dict[str, Any]:
    if qi is not None or sensitive is not None:
        sch = replace(sch, quasi_identifiers=list(qi or []), sensitive=list(sensitive or []))
    ctx = measurement_context(x, z, sch, random_state=0, paired=paired)
    doc = evaluation_document(evaluate_measures(ctx, RISK))
    return doc["summary"]["risk"] | {"measures": doc["measures"]}


def all_but_redrawn(x: pd.DataFrame, kept: tuple[str, ...], seed: int = 1) -> pd.DataFrame:
    """x with every column but ``kept`` permuted on its own (each column's values, nobody's record)."""
    rng = np.random.default_rng(seed)
    z = x.copy()
    for c in x.columns:
        if c not in kept:
            z[c] = rng.permutation(z[c].to_numpy())
    return z


def shuffled(df: pd.DataFrame, seed: int = 1) -> pd.DataFrame:
    return df.sample(frac=1.0, random_state=seed).reset_index(drop=True)


# --------------------------------------------------------------------- z is x
@pytest.mark.parametrize("qi", [None, ["age", "sex", "race"]])
@pytest.mark.parametrize("order", ["x's order", "shuffled"])
def test_the_original_itself_is_high(adult, qi, order) -> None:
    x, sch = adult
    z = x.copy() if order == "x's order" else shuffled(x)
    for paired in ([True, False] if order == "x's order" else [False]):
        v = risk_verdict(x, z, sch, paired=paired, qi=qi)
        assert v["status"] == "high", (order, paired, qi, v["sentence"])


def test_one_column_redrawn_and_the_rest_verbatim_is_high(adult) -> None:
    """Only age redrawn at random: the intruder who holds x links on the 14 columns left as they were,
    however narrow the declared quasi-identifiers."""
    x, sch = adult
    z = x.copy()
    z["age"] = np.random.default_rng(0).permutation(z["age"].to_numpy())
    v = risk_verdict(x, z, sch, paired=True, qi=["age", "sex", "race"])
    assert v["status"] == "high", v["sentence"]
    assert v["measures"]["record_linkage"]["value"] > 0.9


def test_two_verbatim_columns_joined_exactly_are_high(adult) -> None:
    """Every column but fnlwgt and income redrawn: nearest-neighbour distance drowns the two exact
    columns in noise, an exact join on them re-identifies most records."""
    x, sch = adult
    z = all_but_redrawn(x, ("fnlwgt", "income"))
    v = risk_verdict(x, z, sch, paired=True)
    assert v["status"] == "high", v["sentence"]
    assert v["measures"]["record_linkage"]["value"] > 0.5


# ------------------------------------------------------------ near copies, unpaired
def _noisy(x: pd.DataFrame, sch: Schema, frac: float, seed: int = 2) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    z = x.copy()
    for c in sch.numeric:
        v = z[c].to_numpy(dtype=float)
        z[c] = v + rng.normal(0.0, frac * float(np.std(v)), len(v))
    return z


@pytest.mark.parametrize("name,frac", [("tarragona", 0.01), ("banknote", 0.0005)])
def test_tiny_noise_on_every_column_is_not_low_without_the_pairing(name, frac) -> None:
    x, sch = load(name)
    z = shuffled(_noisy(x, sch, frac))
    v = risk_verdict(x, z, sch, paired=False)
    assert v["status"] != "low", v["sentence"]


def test_all_but_one_column_verbatim_is_not_low_without_the_pairing(adult) -> None:
    x, sch = adult
    z = x.copy()
    z["hours_per_week"] = np.random.default_rng(3).permutation(z["hours_per_week"].to_numpy())
    v = risk_verdict(x, shuffled(z), sch, paired=False)
    assert v["status"] != "low", v["sentence"]


def test_synthetic_data_with_near_copies_is_not_low(adult) -> None:
    """A 'synthetic' table of independent marginals that hides 10 % near-copies of real records
    (fnlwgt + 1)."""
    x, sch = adult
    rng = np.random.default_rng(4)
    z = x.apply(lambda s: pd.Series(rng.permutation(s.to_numpy()), name=s.name))
    take = rng.choice(len(x), len(x) // 10, replace=False)
    near = x.iloc[take].copy()
    near["fnlwgt"] = near["fnlwgt"] + 1
    z.iloc[take] = near.to_numpy()
    z = z.astype(x.dtypes.to_dict())
    v = risk_verdict(x, shuffled(z), sch, paired=False)
    assert v["status"] != "low", v["sentence"]


def test_microaggregation_with_k_two_is_not_low_without_the_pairing() -> None:
    from ppdm.anonymize import make_technique

    x, sch = load("tarragona")
    z = make_technique("mdav", params={"k": 2}, schema=sch, random_state=0).fit_transform(x)
    v = risk_verdict(x, shuffled(z), sch, paired=False)
    assert v["status"] != "low", v["sentence"]


# ----------------------------------------------------------- attribute disclosure
def test_a_sensitive_attribute_a_key_gives_away_is_high(adult) -> None:
    """education_num is a one-to-one code of education: every group sharing the keys holds one
    education (l = 1)."""
    x, sch = adult
    z = x.copy()
    z["fnlwgt"] = np.random.default_rng(5).permutation(z["fnlwgt"].to_numpy())
    v = risk_verdict(x, z, sch, paired=True, qi=["sex", "race", "education_num"], sensitive=["education"])
    assert v["status"] == "high", v["sentence"]
    assert v["measures"]["attribute_disclosure"]["value"] == 1.0


def test_without_a_sensitive_attribute_attribute_disclosure_is_not_judged(adult) -> None:
    x, sch = adult
    v = risk_verdict(x, x, sch, paired=True)
    assert v["measures"]["attribute_disclosure"]["status"] == "skipped"
    assert "attribute_disclosure" not in {j["measure"] for j in v["judged"]}


# -------------------------------------------------------------------- safe releases
def test_fresh_draws_are_not_high(adult) -> None:
    """Independent marginals (each column redrawn on its own) and draws uniform over each column's
    domain copy nobody: never HIGH for the intruder who holds x, paired or not."""
    x, sch = adult
    rng = np.random.default_rng(6)
    marginals = x.apply(lambda s: pd.Series(rng.permutation(s.to_numpy()), name=s.name))
    uniform = x.copy()
    for c in x.columns:
        if c in sch.numeric:
            lo, hi = float(x[c].min()), float(x[c].max())
            v = rng.uniform(lo, hi, len(x))
            uniform[c] = np.round(v) if c in sch.integer else v
        else:
            uniform[c] = rng.choice(pd.unique(x[c]), len(x))
    uniform = uniform.astype(x.dtypes.to_dict())
    for z in (marginals, uniform):
        for paired in (True, False):
            v = risk_verdict(x, z, sch, paired=paired, qi=[])
            originals = [j for j in v["judged"] if j["scenario"] == "originals"]
            assert originals and v["status"] != "high", v["sentence"]


def test_keys_redrawn_one_by_one_are_read_as_perturbed_without_the_pairing() -> None:
    """Hand-computed: x's (sex, race) combinations are fa, fb, ma, mb; z keeps each column's values but
    pairs them as fa, fa, mb, mb — two of four combinations are x's (Σ min = 1 + 0 + 0 + 1 = 2), an
    overlap of 0.5 < 0.95, so both keys count as perturbed; z = x shuffled keeps them unchanged."""
    from ppdm.metrics.keyvar import joint_overlap, key_status

    x = pd.DataFrame({"sex": list("ffmm"), "race": list("abab")})
    z = pd.DataFrame({"sex": list("ffmm"), "race": list("aabb")})
    assert joint_overlap(x, z, ["sex", "race"]) == 0.5
    st = key_status(x, z, ["sex", "race"], paired=False)
    assert st["status"].tolist() == ["perturbed", "perturbed"]
    st = key_status(x, x.iloc[[3, 1, 0, 2]], ["sex", "race"], paired=False)
    assert st["status"].tolist() == ["unchanged", "unchanged"]


def test_the_drivers_of_risk_name_the_columns_an_exact_join_uses(adult) -> None:
    """A HIGH from the intruder who holds x names the columns behind it (never a value)."""
    from ppdm.experiments.evaluation import evaluate_measures, measurement_context
    from ppdm.report.summary import linkage_drivers

    x, sch = adult
    z = all_but_redrawn(x, ("fnlwgt", "income"))
    doc = evaluation_document(evaluate_measures(measurement_context(x, z, sch, random_state=0), RISK))
    text = linkage_drivers(doc)
    assert text is not None and text.startswith("An intruder who holds x links")
    assert "(fnlwgt," in text and "re-identifies" in text


def test_attribute_disclosure_by_hand() -> None:
    """Keys a, sensitive s: group a=1 holds s = x, x (one value), a=2 holds x, y (two), a=3 one record
    (one value) — 3 of 5 records sit in groups with fewer than l = 2 distinct values: 0.6; with two
    sensitive attributes the worse counts (t is diverse everywhere but in the singleton: 0.2)."""
    from ppdm.metrics import attribute_disclosure

    df = pd.DataFrame({"a": [1, 1, 2, 2, 3], "s": list("xxxyz"), "t": list("pqpqr")})
    r = attribute_disclosure(df, ["a"], ["s"])
    assert r.value == pytest.approx(0.6) and r.worst == "s"
    both = attribute_disclosure(df, ["a"], ["s", "t"])
    assert both.value == pytest.approx(0.6) and both.worst == "s"
    assert attribute_disclosure(df, ["a"], ["t"]).value == pytest.approx(0.2)
    assert attribute_disclosure(df, ["a"], ["s"], l_target=3).value == pytest.approx(1.0)


def test_a_dp_synthetic_release_with_a_holdout_is_not_high(adult) -> None:
    """DPCube at ε = 0.1 with half the records held out: its records are made from no particular
    original, so record linkage and intruder matching leave it to the copies and near-copies
    measures (not judged, no lower bound to settle), and the attacks have their control set."""
    import warnings

    from ppdm.anonymize import make_technique
    from ppdm.experiments.evaluate import EvaluateOptions, evaluate
    from ppdm.experiments.release import release

    x, sch = adult
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = release(x, make_technique("dpcube", class_column="income", params={"epsilon": 0.1}, random_state=3),
                      schema=sch, holdout=0.5)
    ev = evaluate(x, rel, options=EvaluateOptions(random_state=0))
    risk = ev.verdicts["risk"]
    assert ev.pairing.mode == "synthetic"
    assert risk.status != "high", risk.sentence
    assert {"verbatim_copies", "nearest_record_distance"} <= {j["measure"] for j in risk.judged}
    assert {"record_linkage", "qi_matching"} <= {u["measure"] for u in risk.not_judged}


def test_a_risk_measure_that_could_not_run_leaves_the_verdict_uncertain_never_low() -> None:
    """Hand-made document entries: record linkage meets its threshold, the attack could not run (no
    control set). The risk verdict is UNCERTAIN and names what is missing; with the attack ruled out
    (its scenario excluded by the owner) it is LOW and says so; a lower bound within the threshold
    is UNCERTAIN too; utility keeps naming a skipped measure without judging it."""
    from ppdm.metrics.judgement import verdict

    def m(value: float | None, scenario: str, **kw: Any) -> dict[str, Any]:
        return {"kind": "risk", "value": value, "threshold": 0.05, "direction": "lower", "range": [0, 1],
                "scenario": scenario, **kw}

    doc = {"record_linkage": m(0.01, "originals"),
           "inference": m(None, "control", status="skipped", reason="needs a control set")}
    v = verdict("risk", doc)
    assert v.status == "uncertain" and "not measured: inference (needs a control set)" in v.sentence
    v = verdict("risk", doc, ruled_out=["control", "quasi-identifiers", "sensitive"])
    assert v.status == "low" and v.sentence.endswith(
        "ruled out by the owner: attacks against a control set, who knows the quasi-identifiers and who learns a "
        "sensitive attribute.")
    v = verdict("risk", {"record_linkage": m(0.01, "originals", lower_bound="give the private log")})
    assert v.status == "uncertain" and "(a lower bound)" in v.sentence
    v = verdict("risk", {"record_linkage": m(0.2, "originals", lower_bound="give the private log")})
    assert v.status == "high"  # a lower bound past the threshold already misses
    u = verdict("utility", {"auc": {"kind": "utility", "value": None, "threshold": 0.02, "direction": "lower"},
                            "rule_accuracy": {"kind": "utility", "value": 0.01, "threshold": 0.05,
                                              "direction": "lower"}})
    assert u.status == "kept" and u.not_measured == [{"measure": "auc", "reason": "not computed"}]


def test_a_narrowed_evaluation_that_leaves_an_intruder_out_is_never_low() -> None:
    """``--measures record_linkage`` on a release that a key-variable intruder singles out: the one
    measure asked for meets, but three intruder scenarios were never asked about, so the verdict
    is UNCERTAIN and names each with the measure or the --rule-out that settles it. Asking for a
    measure that does not apply (no sensitive attribute) counts as asking; ruling the rest out
    gives LOW."""
    from ppdm.metrics.judgement import unasked_scenarios, verdict

    def m(value: float | None, scenario: str, **kw: Any) -> dict[str, Any]:
        return {"kind": "risk", "value": value, "threshold": 0.05, "direction": "lower", "range": [0, 1],
                "scenario": scenario, **kw}

    doc = {"record_linkage": m(0.01, "originals")}
    assert unasked_scenarios(doc) == ["quasi-identifiers", "sensitive", "control"]
    v = verdict("risk", doc)
    assert v.status == "uncertain" and v.unasked == ["quasi-identifiers", "sensitive", "control"]
    assert "3 intruder scenarios went unjudged" in v.sentence
    assert "intruders not judged (no measure of theirs was asked for): who knows the quasi-identifiers (add " \
           "--measures k_anonymity_intruder or --rule-out quasi-identifiers)" in v.sentence
    doc["attribute_disclosure"] = m(None, "sensitive", not_applicable=True, reason="no sensitive attribute")
    assert unasked_scenarios(doc, ["control"]) == ["quasi-identifiers"]
    assert verdict("risk", doc, ruled_out=["control"]).status == "uncertain"
    assert verdict("risk", doc, ruled_out=["control", "quasi-identifiers"]).status == "low"
    doc["k_anonymity_intruder"] = m(0.3, "quasi-identifiers")
    assert verdict("risk", doc).status == "high"  # a miss still says HIGH, whatever was left out
