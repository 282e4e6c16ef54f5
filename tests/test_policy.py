"""Risk policies: the file forms read to the same policy, the JSON Schema in docs/ describes
them, and every mistake (unknown names, thresholds out of range, the wrong direction, a
malformed file) is refused with one sentence naming it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest
import yaml

from ppdm.errors import ParameterError
from ppdm.experiments.policy import ATTACKS, Policy, load_policy, parse_policy

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((ROOT / "docs" / "policy.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)

OFFICE = """\
name: statistics office standard
risk:
  record_linkage: 0.05
  k_anonymity: {at_most: 0.01, options: {k: 5}}
  attacks: {at_most: 0.05}
epsilon: 1.0
utility:
  weights: {auc: 2, rule_accuracy: 1}
techniques: [mdav, gaussian-noise]
"""


def schema_errors(data: object) -> list[str]:
    return [e.message for e in VALIDATOR.iter_errors(data)]


def test_the_issue_policy_reads_line_by_line(tmp_path: Path) -> None:
    p = tmp_path / "office.yaml"
    p.write_text(OFFICE)
    pol = load_policy(p)
    assert [ln.measure for ln in pol.risk] == ["record_linkage", "k_anonymity", *ATTACKS]
    assert pol.lines_text() == ["record_linkage ≤ 0.05", "k_anonymity (k=5) ≤ 0.01",
                                *[f"{a} ≤ 0.05" for a in ATTACKS], "ε ≤ 1"]
    assert all(ln.group == "attacks" for ln in pol.risk[2:])
    assert pol.measure_options() == {"k_anonymity": {"k": 5}}
    assert pol.mode == "weights" and [(t.measure, t.weight) for t in pol.utility] == [("auc", 2.0),
                                                                                      ("rule_accuracy", 1.0)]
    assert [t.name for t in pol.techniques or ()] == ["mdav", "gaussian-noise"]
    assert pol.source == str(p) and pol.name == "statistics office standard"
    assert not schema_errors(yaml.safe_load(OFFICE))


def test_yaml_json_and_the_canonical_form_are_one_policy(tmp_path: Path) -> None:
    data = yaml.safe_load(OFFICE)
    (tmp_path / "p.json").write_text(json.dumps(data))
    (tmp_path / "p.yml").write_text(OFFICE)
    (tmp_path / "p.policy").write_text(OFFICE)  # another name: JSON first, then YAML
    a, b, c = (load_policy(tmp_path / n) for n in ("p.json", "p.yml", "p.policy"))
    assert a.sha256() == b.sha256() == c.sha256()
    canon = a.to_dict()
    assert not schema_errors(canon)
    again = parse_policy(canon)
    assert again.to_dict() == canon and again.sha256() == a.sha256()
    # the short form and the long form are the same line
    short = parse_policy({"risk": {"record_linkage": 0.05}, "utility": {"priority": "auc"}})
    long = parse_policy({"risk": {"record_linkage": {"at_most": 0.05}}, "utility": {"priority": ["auc"]}})
    assert short.sha256() == long.sha256()
    # a different threshold is a different policy
    other = parse_policy({"risk": {"record_linkage": 0.04}, "utility": {"priority": "auc"}})
    assert other.sha256() != short.sha256()


def test_priority_with_tolerances_and_options() -> None:
    pol = parse_policy({"risk": {"l_diversity": {"at_least": 2}},
                        "utility": {"priority": ["auc", "rule_accuracy"], "tolerance": {"auc": 0.005},
                                    "options": {"auc": {"average": "macro"}}}})
    assert pol.mode == "priority" and pol.utility[0].tolerance == 0.005 and pol.utility[1].tolerance == 0
    assert pol.risk[0].direction == "higher" and pol.risk[0].text() == "l_diversity ≥ 2"
    assert pol.utility_text() == "auc (within 0.005), then rule_accuracy"
    assert pol.measure_options() == {"auc": {"average": "macro"}}
    assert not schema_errors(pol.to_dict())


def test_technique_overrides() -> None:
    pol = parse_policy({"risk": {"record_linkage": 0.1}, "utility": {"weights": {"sse_sst": 1}},
                        "techniques": {"mdav": {"k": {"low": 3, "high": 9}},
                                       "rounding": {"method": {"choices": ["optimal", "kmeans"]}, "k": 4,
                                                    "columns": {"fixed": ["a"]}},
                                       "gaussian-noise": None}})
    mdav, rounding, noise = pol.techniques  # type: ignore[misc]
    assert mdav.overrides["k"].kind == "range" and (mdav.overrides["k"].low, mdav.overrides["k"].high) == (3, 9)
    assert rounding.overrides["method"].choices == ("optimal", "kmeans")
    assert rounding.overrides["k"].kind == "fixed" and rounding.overrides["k"].value == 4
    assert rounding.overrides["columns"].value == ["a"]
    assert noise.overrides == {}
    assert not schema_errors(pol.to_dict())
    assert parse_policy(pol.to_dict()).to_dict() == pol.to_dict()


BAD = [
    ({"risk": {"record_linkage": 0.05}}, "has no 'utility'"),
    ({"utility": {"weights": {"auc": 1}}}, "has no 'risk' lines"),
    ({"risk": {"linkage": 0.05}, "utility": {"weights": {"auc": 1}}}, "unknown risk measure 'linkage'"),
    ({"risk": {"record_linkage": 0.05}, "utility": {"weights": {"accuracy": 1}}}, "unknown utility measure 'accuracy'"),
    ({"risk": {"auc": 0.05}, "utility": {"weights": {"rule_accuracy": 1}}},
     "'auc' is a utility measure, not a risk measure; list it under 'utility'"),
    ({"risk": {"record_linkage": 0.05}, "utility": {"weights": {"ddr": 1}}},
     "'ddr' is a risk measure, not a utility measure"),
    ({"risk": {"record_linkage": 1.5}, "utility": {"weights": {"auc": 1}}},
     r"threshold 1.5 of risk line 'record_linkage' is outside the values 'record_linkage' can take, \[0, 1\]"),
    ({"risk": {"record_linkage": -0.1}, "utility": {"weights": {"auc": 1}}}, "is outside the values"),
    ({"risk": {"l_diversity": {"at_most": 3}}, "utility": {"weights": {"auc": 1}}},
     "'l_diversity' is better when higher, so risk line 'l_diversity' must use at_least"),
    ({"risk": {"l_diversity": 0.5}, "utility": {"weights": {"auc": 1}}}, r"\[1, ∞\]"),
    ({"risk": {"record_linkage": {"at_most": 0.1, "at_least": 0}}, "utility": {"weights": {"auc": 1}}},
     "exactly one of at_most and at_least"),
    ({"risk": {"record_linkage": "low"}, "utility": {"weights": {"auc": 1}}}, "must be a finite number"),
    ({"risk": {"record_linkage": 0.05}, "utility": {"weights": {"auc": 0}}}, "weight of 'auc' must be above 0"),
    ({"risk": {"record_linkage": 0.05}, "utility": {"weights": {"auc": 1}, "priority": ["auc"]}},
     "exactly one of weights and priority"),
    ({"risk": {"record_linkage": 0.05}, "utility": {"priority": ["auc", "auc"]}}, "lists 'auc' twice"),
    ({"risk": {"record_linkage": 0.05}, "utility": {"priority": ["auc"], "tolerance": {"rule_accuracy": 0.1}}},
     "tolerance names 'rule_accuracy', which is not in the priority"),
    ({"risk": {"record_linkage": 0.05}, "utility": {"weights": {"entropy": 1}}}, "no better direction"),
    ({"risk": {"record_linkage": 0.05}, "utility": {"weights": {"auc": 1}}, "techniques": ["mdaw"]},
     "unknown technique 'mdaw'"),
    ({"risk": {"record_linkage": 0.05}, "utility": {"weights": {"auc": 1}}, "techniques": {"mdav": {"size": 3}}},
     "technique 'mdav' has no parameter 'size'"),
    ({"risk": {"record_linkage": 0.05}, "utility": {"weights": {"auc": 1}},
      "techniques": {"mdav": {"k": {"low": 9, "high": 3}}}}, "low 9 above high 3"),
    ({"risk": {"record_linkage": 0.05}, "utility": {"weights": {"auc": 1}},
      "techniques": {"mdav": {"k": {"low": 3}}}}, "must be a value, {low: a, high: b}"),
    ({"risk": {"record_linkage": 0.05}, "utility": {"weights": {"auc": 1}}, "techniques": []},
     "'techniques' is empty"),
    ({"risk": {"record_linkage": 0.05, "linkability": 0.1, "attacks": 0.05}, "utility": {"weights": {"auc": 1}}},
     "holds 'linkability' to two thresholds"),
    ({"risk": {"attacks": {"at_most": 0.05, "options": {"n_attacks": 10}}}, "utility": {"weights": {"auc": 1}}},
     "stands for several measures and takes no options"),
    ({"risk": {"repeated_perturbation": 0.01}, "utility": {"weights": {"auc": 1}}},
     "'repeated_perturbation' needs the option 'matrices'"),
    ({"risk": {"record_linkage": 0.05}, "utility": {"weights": {"auc": 1}}, "epsilon": 0}, "epsilon must be above 0"),
    ({"risk": {"record_linkage": 0.05}, "utility": {"weights": {"auc": 1}}, "epsilon": {"at_most": 1,
                                                                                       "required": True},
      "techniques": ["mdav"]}, "requires differential privacy but allows no differentially private technique"),
    ({"risk": {"record_linkage": 0.05}, "utility": {"weights": {"auc": 1}}, "threshold": 3}, "unknown entry 'threshold'"),
    ({"risk": {"record_linkage": 0.05}, "utility": {"weights": {"auc": 1}}, "version": 2}, "reads policy version 1"),
    ({"risk": {"record_linkage": 0.05}, "utility": {"weights": {"auc": 1}}, "risk_axis": "auc"},
     "risk_axis must be 'max' or a measure of the risk lines"),
    ([1, 2], "must be a mapping with 'risk' and 'utility'"),
    # an option the measure does not read would be ignored: refused, with a close name and the known ones
    ({"risk": {"k_anonymity": {"at_most": 0.01, "options": {"kk": 5}}}, "utility": {"weights": {"auc": 1}}},
     r"risk line 'k_anonymity': unknown k_anonymity option 'kk'; did you mean 'k'\? \(known: all_keys, blanks, infer_keys, "
     r"k, keys, weight, weighted\)"),
    ({"risk": {"k_anonymity": 0.01}, "utility": {"weights": {"auc": 1}, "options": {"auc": {"averge": "macro"}}}},
     r"the utility options of 'auc': unknown auc option 'averge'; did you mean 'average'\?"),
    ({"risk": {"k_anonymity": 0.01}, "utility": {"weights": {"auc": 1}}, "rule_out": ["origin"]},
     r"rule_out: unknown intruder scenario 'origin'; did you mean 'originals'\?"),
    ({"risk": {"k_anonymity": 0.01}, "utility": {"weights": {"auc": 1}}, "rule_out": "originals"},
     "'rule_out' must list intruder scenarios"),
    ({"risk": {"record_linkage": 0.05, "ddr": 0.05}, "utility": {"weights": {"auc": 1}}, "rule_out": ["originals"]},
     "rules out the scenario of every risk line, so the policy would judge nothing"),
    ({"risk": {"record_linkage": 0.05}, "utility": {"weights": {"auc": 1}, "at_most": {"rule_accuracy": 0.1}}},
     "utility.at_most names 'rule_accuracy', which is not a utility measure of the policy"),
    ({"risk": {"record_linkage": 0.05}, "utility": {"weights": {"auc": 1}, "at_most": {"auc": "low"}}},
     "the most loss of 'auc' must be a finite number"),
    ({"risk": {"record_linkage": 0.05}, "utility": {"priority": "auc", "at_most": 0.1}},
     "utility.at_most must map utility measures of the policy to the most loss"),
]


@pytest.mark.parametrize(("data", "message"), BAD)
def test_policy_errors_name_the_problem(data: object, message: str) -> None:
    with pytest.raises(ParameterError, match=message) as info:
        parse_policy(data)
    assert "\n" not in str(info.value)


# the structural mistakes among BAD, which the JSON Schema also refuses (names and ranges need the registries)
STRUCTURAL = [0, 1, 10, 11, 12, 13, 14, 20, 21, 25, 27, 28, 30, 33, 34, 37, 38]


@pytest.mark.parametrize("i", STRUCTURAL)
def test_the_schema_refuses_structural_mistakes(i: int) -> None:
    assert schema_errors(BAD[i][0]), BAD[i]


def test_files_that_cannot_be_read(tmp_path: Path) -> None:
    with pytest.raises(ParameterError, match="does not exist"):
        load_policy(tmp_path / "missing.yaml")
    (tmp_path / "bad.yaml").write_text("risk: [unclosed\n")
    with pytest.raises(ParameterError, match="is not valid YAML"):
        load_policy(tmp_path / "bad.yaml")
    (tmp_path / "bad.json").write_text("{\"risk\": ")
    with pytest.raises(ParameterError, match="is not valid JSON"):
        load_policy(tmp_path / "bad.json")
    (tmp_path / "empty.yaml").write_text("")
    with pytest.raises(ParameterError, match="must be a mapping"):
        load_policy(tmp_path / "empty.yaml")


def _doc_policies() -> list[tuple[str, str]]:
    """Every YAML block of docs/recommend.md that holds a policy."""
    text = (ROOT / "docs" / "recommend.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", text, flags=re.S)
    return [(b.splitlines()[0], b) for b in blocks if "risk:" in b]


def test_the_documented_policies_are_valid() -> None:
    found = _doc_policies()
    assert len(found) >= 2
    for head, block in found:
        data = yaml.safe_load(block)
        assert not schema_errors(data), head
        assert isinstance(parse_policy(data, where=head), Policy)


def test_rule_out_excludes_a_scenario_explicitly() -> None:
    """``rule_out: [originals]``: the record-linkage line is measured and shown but not judged (a
    value that would miss does not fail the release), the fingerprint of a policy without it is
    unchanged, and the canonical form reads back to the same policy."""
    from ppdm.experiments.recommend import judge_lines

    base = {"risk": {"k_anonymity": 0.05, "record_linkage": 0.05}, "utility": {"weights": {"auc": 1}}}
    plain = parse_policy(base)
    ruled = parse_policy({**base, "rule_out": ["originals", "originals"]})
    assert ruled.ruled_out == ("originals",) and plain.ruled_out == ()
    assert ruled.to_dict()["rule_out"] == ["originals"] and "rule_out" not in plain.to_dict()
    assert parse_policy(ruled.to_dict()) == ruled and not schema_errors(ruled.to_dict())
    assert ruled.sha256() != plain.sha256()
    assert ruled.rules_out("record_linkage") and not ruled.rules_out("k_anonymity")
    outcome = {"measures": {"k_anonymity": {"value": 0.01}, "record_linkage": {"value": 0.5}}}
    assert [v.verdict for v in judge_lines(outcome, plain)] == ["meets", "misses"]
    k, rl = judge_lines(outcome, ruled)
    assert (k.verdict, rl.verdict, rl.reason) == ("meets", "not applicable", "ruled out by the policy")
    assert rl.met


def test_a_ruled_out_scenario_is_not_turned_into_not_judged() -> None:
    """Key frequencies of perturbed quasi-identifiers do not apply: without another line on that
    intruder the policy says "not judged" (a miss); an owner who rules the intruder out says
    so, and the line is "not applicable", met."""
    from ppdm.experiments.recommend import judge_lines

    base = {"risk": {"k_anonymity": 0.05, "record_linkage": 0.05}, "utility": {"weights": {"auc": 1}}}
    outcome = {"measures": {"k_anonymity": {"value": None, "not_applicable": True,
                                            "reason": "all quasi-identifiers are perturbed"},
                            "record_linkage": {"value": 0.01}}}
    k, _ = judge_lines(outcome, parse_policy(base))
    assert k.verdict == "not judged" and not k.met
    k, rl = judge_lines(outcome, parse_policy({**base, "rule_out": ["quasi-identifiers"]}))
    assert (k.verdict, k.reason, rl.verdict) == ("not applicable", "ruled out by the policy", "meets") and k.met


def test_margins_count_what_a_line_allows() -> None:
    """A search measures a miss in the line's allowance: ≤ 0.05 on [0, 1] allows 0.05; an AUC-loss
    cap of 0.0012 on [−1, 1] allows 0.0012 (a loss of 0.0032 misses by 0.002 / 0.0012 = 5/3, where
    on the range's scale it looked like 0.001); ≥ 0.9 on [0, 1] allows the 0.1 above it;
    k_anonymity ≤ 0 allows nothing, so 1 % of the range (a share 0.4366 of records in small
    classes misses by 43.66); without a range, the threshold's size."""
    from ppdm.experiments.recommend import judge_lines
    from ppdm.metrics.judgement import allowance

    assert allowance((0.0, 1.0), 0.05, "lower") == pytest.approx(0.05)
    assert allowance((-1.0, 1.0), 0.0012, "lower") == pytest.approx(0.0012)
    assert allowance((0.0, 1.0), 0.9, "higher") == pytest.approx(0.1)
    assert allowance((0.0, 1.0), 0.0, "lower") == pytest.approx(0.01)
    assert allowance((None, None), 3.0, "higher") == pytest.approx(3.0)
    pol = parse_policy({"risk": {"k_anonymity": {"at_most": 0.0, "options": {"k": 5}}},
                        "utility": {"weights": {"auc": 1}, "at_most": {"auc": 0.0012}}})
    k, auc = judge_lines({"technique": "recode", "params": {}, "measures": {
        "k_anonymity": {"value": 0.4366}, "auc": {"value": 0.0032}}}, pol)
    assert k.margin == pytest.approx(43.66) and auc.margin == pytest.approx(5 / 3)


def test_a_utility_ceiling_is_a_line_every_release_must_meet() -> None:
    """``utility.at_most`` holds a measure's loss to a ceiling, judged as a risk line is: AUC loss
    0.01 ≤ 0.02 meets (margin (0.01 − 0.02) / 0.02 = −0.5, in allowances); Rule Accuracy loss
    0.05 > 0.03 misses (margin (0.05 − 0.03) / 0.03 = 2/3), so the release is not feasible although
    every risk line meets; edusc, better when higher, is read as the loss 1 − 0.9 = 0.1 ≤ 0.2
    (margin (0.1 − 0.2) / 0.2 = −0.5)."""
    from ppdm.experiments.recommend import judge_lines, record_of

    base = {"risk": {"record_linkage": 0.05},
            "utility": {"weights": {"auc": 1, "rule_accuracy": 1, "edusc": 1}}}
    plain = parse_policy(base)
    capped = parse_policy({**base, "utility": {**base["utility"],
                                               "at_most": {"auc": 0.02, "rule_accuracy": 0.03, "edusc": 0.2}}})
    assert [t.at_most for t in capped.utility] == [0.02, 0.03, 0.2] and plain.utility[0].at_most is None
    assert capped.lines_text() == ["record_linkage ≤ 0.05", "auc loss ≤ 0.02", "rule_accuracy loss ≤ 0.03",
                                   "edusc loss ≤ 0.2"]
    canon = capped.to_dict()
    assert canon["utility"]["at_most"] == {"auc": 0.02, "rule_accuracy": 0.03, "edusc": 0.2}
    assert "at_most" not in plain.to_dict()["utility"]  # the fingerprint of a policy without ceilings is unchanged
    assert parse_policy(canon) == capped and not schema_errors(canon) and capped.sha256() != plain.sha256()
    outcome = {"technique": "mdav", "params": {}, "measures": {
        "record_linkage": {"value": 0.01}, "auc": {"value": 0.01}, "rule_accuracy": {"value": 0.05},
        "edusc": {"value": 0.9}}}
    lines = judge_lines(outcome, capped)
    assert [(v.line, v.verdict) for v in lines] == [("record_linkage ≤ 0.05", "meets"), ("auc loss ≤ 0.02", "meets"),
                                                    ("rule_accuracy loss ≤ 0.03", "misses"),
                                                    ("edusc loss ≤ 0.2", "meets")]
    assert lines[1].margin == pytest.approx(-0.5) and lines[2].margin == pytest.approx(2 / 3)
    assert lines[3].value == pytest.approx(0.1) and lines[3].margin == pytest.approx(-0.5)
    assert record_of(0, outcome, plain).feasible and not record_of(0, outcome, capped).feasible
    # a loss that could not be measured does not meet its ceiling
    gone = {**outcome, "measures": {**outcome["measures"], "auc": {"value": None, "reason": "one class"}}}
    assert judge_lines(gone, capped)[1].verdict == "not measured"
