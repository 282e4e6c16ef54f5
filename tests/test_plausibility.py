"""Plausibility: combinations of values x never holds, and declared edit rules (issue #30, item 2).

Hand-computed tiny tables for both measures, the rule parser's refusals, and a hospital-like
table whose release breaks "no delivery on a man", "obstetric codes at ages 12-55" and
"Medicare only from 65": both the discovered combinations and the declared rules count them,
and the utility verdict is not KEPT. z = x scores 0.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from ppdm.data.edit_rules import Comparison, parse_edit_rule
from ppdm.data.schema import Schema
from ppdm.errors import MeasureNotApplicable, ParameterError
from ppdm.metrics.plausibility import (
    PlausibilityOptions,
    edit_rule_violations,
    implausible_combinations,
    rule_violations,
)

RULES = ['sex == "M" -> diagnosis not in ["O80", "O82"]',
         'diagnosis in ["O80", "O82"] -> age >= 12 and age <= 55',
         'age < 18 -> insurance != "Medicare"']


# ------------------------------------------------------------------ tiny tables by hand
def tiny() -> pd.DataFrame:
    # sex F F F F M M M M; dx O O A A A A A A: (M, O) is absent, expected n_M·n_O/n = 4·2/8 = 1
    # age by sex: F 20..50, M 20..70; by dx: O 20..30, A 20..70
    return pd.DataFrame({"sex": list("FFFFMMMM"), "dx": list("OOAAAAAA"),
                         "age": [20, 30, 40, 50, 60, 70, 20, 30]})


def test_pairs_and_ranges_by_hand() -> None:
    x = tiny()
    z = pd.DataFrame({"sex": ["M", "F", "F", "M"], "dx": ["O", "A", "A", "A"], "age": [25, 65, 35, 40]})
    opts = PlausibilityOptions(min_support=2, min_expected=1)
    r = implausible_combinations(x, z, ["age"], ["sex", "dx"], opts)
    # record 0: (M, O) absent with 1 expected → implausible (age 25 within O's 20..30 and M's 20..70)
    # record 1: F at 65 is above F's 20..50 → implausible (A's 20..70 holds it); records 2, 3 fine
    assert (r.value, r.pair_share, r.range_share) == (0.5, 0.25, 0.25)
    assert r.implausible == 2 and r.records == 4 and r.flags.tolist() == [True, True, False, False]
    assert r.pairs[["column_a", "value_a", "column_b", "value_b", "released"]].values.tolist() == \
        [["sex", "M", "dx", "O", 1]]
    assert r.pairs["expected_in_x"].tolist() == [1.0]
    assert r.ranges[["column", "value", "numeric", "support_in_x", "released_below", "released_above"]
                    ].values.tolist() == [["sex", "F", "age", 4, 0, 1]]
    # the verdict names the worst one (ties: pairs before ranges); the tables hold the rest
    assert r.worst == "sex=M with dx=O: 1 released records, none in x (1 expected)"
    # the detail names labels and counts, never x's range ends (one person's value each)
    assert "50" not in r.worst and "range_low" not in r.ranges.columns
    # thin evidence is left out: 1 expected record < 1.5; F's 4 records < a support of 5
    assert implausible_combinations(x, z, ["age"], ["sex", "dx"],
                                    PlausibilityOptions(min_support=2, min_expected=1.5)).value == 0.25
    assert implausible_combinations(x, z, ["age"], ["sex", "dx"],
                                    PlausibilityOptions(min_support=5, min_expected=1)).value == 0.25
    # x scores 0 on itself by construction, in any row order
    assert implausible_combinations(x, x.iloc[::-1], ["age"], ["sex", "dx"], opts).value == 0.0


def test_missing_cells_and_unknown_categories_take_part_in_nothing() -> None:
    x = tiny()
    z = pd.DataFrame({"sex": ["M", None, "X"], "dx": [None, "O", "O"], "age": [np.nan, 99, 25]})
    r = implausible_combinations(x, z, ["age"], ["sex", "dx"], PlausibilityOptions(min_support=2, min_expected=1))
    # record 1: no sex, dx O at 99 → above O's 20..30 (the only combination it has); record 2: sex X is
    # a category x never holds (no support), dx O at 25 is within range
    assert r.flags.tolist() == [False, True, False]


def test_large_pair_tables_are_searched_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pair table too large for a dense lookup is searched by sorted codes: same records found."""
    import ppdm.metrics.plausibility as plaus

    rng = np.random.default_rng(0)
    x = pd.DataFrame({"a": rng.integers(0, 50, 5000).astype(str), "b": rng.integers(0, 3, 5000).astype(str)})
    x.loc[x["a"] == "7", "b"] = "0"  # a=7 only with b=0: (7, 1) and (7, 2) are structural zeros
    z = pd.DataFrame({"a": rng.integers(0, 50, 800).astype(str), "b": rng.integers(0, 3, 800).astype(str)})
    dense = implausible_combinations(x, z, [], ["a", "b"])
    monkeypatch.setattr(plaus, "_DENSE_CELLS", 1)
    sparse = implausible_combinations(x, z, [], ["a", "b"])
    assert dense.value == sparse.value > 0 and (dense.flags == sparse.flags).all()
    assert set(dense.pairs["value_a"]) == {"7"}


def test_options_are_checked() -> None:
    with pytest.raises(ParameterError, match="min_support"):
        PlausibilityOptions(min_support=0)
    with pytest.raises(ParameterError, match="min_expected"):
        PlausibilityOptions(min_expected=-1)


def test_edit_rules_by_hand() -> None:
    x = pd.DataFrame({"sex": ["F", "M", "F", "M"], "age": [30, 10, np.nan, 70],
                      "diagnosis": ["O80", "A", "O82", "O80"],
                      "insurance": ["Private", "Medicare", "Medicare", "Medicare"]})
    # rule 0: record 3 (M with O80); rule 1: record 3 (O80 at 70; record 2's age is missing, so it
    # violates nothing); rule 2: record 1 (10 < 18 on Medicare)
    assert rule_violations(RULES[0], x).tolist() == [False, False, False, True]
    assert rule_violations(RULES[1], x).tolist() == [False, False, False, True]
    assert rule_violations(RULES[2], x).tolist() == [False, True, False, False]
    z = x.iloc[[1, 1, 3, 3]]  # both violating records twice
    r = edit_rule_violations(x, z, RULES)
    # x: 2 of 4 records violate a rule; z: 4 of 4 → 1 − 0.5
    assert (r.x_share, r.z_share, r.value) == (0.5, 1.0, 0.5)
    assert r.rules["x_violations"].tolist() == [1, 1, 1] and r.rules["z_violations"].tolist() == [2, 2, 2]
    assert r.rules["excess"].tolist() == [0.25, 0.25, 0.25]
    assert r.worst == f"{RULES[0]}: 2 released records, 1 in x"
    assert edit_rule_violations(x, x, RULES).value == 0.0
    # categories stored as codes compare as text: 3 matches "3"
    codes = pd.DataFrame({"edu": [1, 3, 3], "y": ["a", "b", "a"]})
    assert rule_violations('edu == "3" -> y == "b"', codes).tolist() == [False, False, True]
    assert rule_violations("edu in [3] -> y != 'a'", codes).tolist() == [False, False, True]
    # a rule with no "->" holds for every record
    assert rule_violations("edu >= 2", codes).tolist() == [True, False, False]


def test_a_rule_on_labels_is_left_out_with_a_note() -> None:
    x = pd.DataFrame({"age": ["[0, 20)", "[20, 40)"], "y": ["a", "b"]})
    with pytest.raises(MeasureNotApplicable, match="age is not numeric"):
        edit_rule_violations(x, x, ["age < 18 -> y == 'a'"])
    r = edit_rule_violations(x, x, ["age < 18 -> y == 'a'", "y != 'c'"])
    assert r.evaluated == 1 and r.rules["note"].iloc[0].startswith("not evaluated")


# ------------------------------------------------------------------ the syntax
def test_parser_reads_the_documented_forms() -> None:
    r = parse_edit_rule('`marital status` == "Never married" and age<18.5 -> child not in [1, \'x\']')
    assert r.given == (Comparison("marital status", "==", "Never married"), Comparison("age", "<", 18.5))
    assert r.then == (Comparison("child", "not in", (1.0, "x")),)
    assert r.columns == ["marital status", "age", "child"]
    assert parse_edit_rule("age >= -1e3").given == ()
    assert str(Comparison("a b", "in", ("x", 2.0))) == '`a b` in ["x", 2]'


@pytest.mark.parametrize("text, said", [
    ("sex ==", "expected a number or a quoted text"),
    ('sex = "M"', "cannot read"),
    ('sex == "M" ->', "expected a column name"),
    ('age < "x"', "compares numbers"),
    ('sex in ["a"', "expected ',' or ']'"),
    ("a == 1 -> b == 2 -> c == 3", "expected 'and' or the end"),
    ("a == 1 or b == 2", "expected 'and', '->' or the end"),
    ('__import__("os").system("true") == 1', "cannot read"),
    ("", "empty"),
])
def test_malformed_rules_are_refused_naming_them(text: str, said: str) -> None:
    with pytest.raises(ParameterError, match=said) as e:
        parse_edit_rule(text)
    assert "\n" not in str(e.value)


def test_schema_reads_checks_and_writes_its_rules() -> None:
    d = {"numeric": ["age"], "categorical": ["sex", "diagnosis", "insurance"], "edit_rules": RULES}
    s = Schema.from_dict(d)
    assert s.edit_rules == RULES and Schema.from_dict(s.to_dict()).edit_rules == RULES
    assert "edit_rules" not in Schema(numeric=["age"]).to_dict()  # older files and provenances unchanged
    with pytest.raises(ParameterError, match=r"edit rule 'ag < 18 -> sex == \"F\"'.*unknown column 'ag'; "
                                             r"did you mean 'age'"):
        Schema.from_dict({**d, "edit_rules": ['ag < 18 -> sex == "F"']})
    with pytest.raises(ParameterError, match="edit rule 'sex = 1'"):
        Schema.from_dict({**d, "edit_rules": ["sex = 1"]})


def test_cli_refuses_a_bad_rule_with_exit_2(tmp_path: Path) -> None:
    from ppdm.cli.app import app

    hospital(200).to_csv(tmp_path / "x.csv", index=False)
    (tmp_path / "s.json").write_text(json.dumps({
        "numeric": ["age"], "categorical": ["sex", "diagnosis", "insurance"], "class_column": "readmitted",
        "edit_rules": ['sex == "M" -> diagnosis not in ["O80" "O82"]']}))
    res = CliRunner().invoke(app, ["evaluate", "-x", str(tmp_path / "x.csv"), "-z", str(tmp_path / "x.csv"),
                                   "--schema", str(tmp_path / "s.json"), "--measures", "edit_rule_violations"])
    assert res.exit_code == 2, res.output
    err = " ".join(res.output.split())
    assert "edit rule 'sex == \"M\" -> diagnosis not in [\"O80\" \"O82\"]': expected ',' or ']'" in err
    assert "Traceback" not in res.output


# ------------------------------------------------------------------ a hospital's release
def hospital(n: int = 3000, seed: int = 0) -> pd.DataFrame:
    """Obstetric codes only on women aged 15-50, Medicare only from 65 (every record plausible)."""
    rng = np.random.default_rng(seed)
    sex = rng.choice(["F", "M"], n)
    age = rng.integers(0, 91, n)
    dx = np.array(["I10", "E11", "J18", "K35"])[rng.integers(0, 4, n)]
    obstetric = (sex == "F") & (age >= 15) & (age <= 50) & (rng.random(n) < 0.5)
    dx = np.where(obstetric, rng.choice(["O80", "O82"], n), dx)
    insurance = np.where(age >= 65, "Medicare", rng.choice(["Private", "Medicaid"], n))
    readmitted = np.where(rng.random(n) < 0.2 + 0.2 * (age > 60), "yes", "no")
    return pd.DataFrame({"sex": sex, "age": age, "diagnosis": dx, "insurance": insurance, "readmitted": readmitted})


def hospital_schema() -> Schema:
    return Schema(numeric=["age"], categorical=["sex", "diagnosis", "insurance"], class_column="readmitted",
                  integer=["age"], edit_rules=RULES)


def columns_redrawn(x: pd.DataFrame, seed: int = 1) -> pd.DataFrame:
    """Each column shuffled on its own: every column's distribution kept, every dependency broken."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({c: rng.permutation(x[c].to_numpy()) for c in x.columns})


def test_hospital_release_counts_implausible_records_both_ways() -> None:
    x = hospital()
    z = columns_redrawn(x)
    cat = ["sex", "diagnosis", "insurance", "readmitted"]
    found = implausible_combinations(x, z, ["age"], cat)
    # deliveries on men: about n/2 · share of obstetric codes — absent from x, and expected there
    pairs = {(r.column_a, r.value_a, r.column_b, r.value_b): r.released for r in found.pairs.itertuples()}
    assert pairs[("sex", "M", "diagnosis", "O80")] > 50 and pairs[("sex", "M", "diagnosis", "O82")] > 50
    ranges = {(r.column, r.value, r.numeric): (r.released_below, r.released_above) for r in found.ranges.itertuples()}
    below, above = ranges[("diagnosis", "O80", "age")]
    assert below > 20 and above > 20  # obstetric codes at ages outside 15..50
    assert ranges[("insurance", "Medicare", "age")][0] > 100  # Medicare under 65
    assert found.value > 0.2 and found.pair_share > 0.05 and found.range_share > 0.1
    declared = edit_rule_violations(x, z, RULES)
    assert declared.x_share == 0.0 and declared.value > 0.1
    assert (declared.rules["z_violations"] > 30).all()
    # the same records, seen both ways: every record breaking a declared rule is found without the rules
    assert not (declared.flags & ~found.flags).any()
    # z = x, in another order: nothing
    assert implausible_combinations(x, x.sample(frac=1, random_state=2), ["age"], cat).value == 0.0
    assert edit_rule_violations(x, x.sample(frac=1, random_state=2), RULES).value == 0.0


def test_random_substitution_of_the_hospital_table_is_caught_both_ways() -> None:
    """ppdm's random substitution redraws each attribute on its own (Dowd, Xu & Zhang 2006), so it
    puts obstetric codes on men and Medicare on children; a synthetic release of another size too."""
    from ppdm.anonymize.registry import make_technique

    x = hospital(2000)
    tech = make_technique("random-substitution", class_column="readmitted", schema=hospital_schema(),
                          random_state=1, params={"gamma": 19})
    z = tech.fit_transform(x)
    cat = ["sex", "diagnosis", "insurance", "readmitted"]
    found = implausible_combinations(x, z, ["age"], cat)
    assert found.value > 0.1
    assert {("sex", "M", "diagnosis", "O80"), ("sex", "M", "diagnosis", "O82")} <= \
        {(r.column_a, r.value_a, r.column_b, r.value_b) for r in found.pairs.itertuples()}
    declared = edit_rule_violations(x, z, RULES)
    assert declared.value > 0.05 and (declared.rules["z_violations"] > 10).all()
    # no pairing needed: 700 records drawn from the broken release count about the same share
    part = z.sample(700, random_state=3)
    assert abs(implausible_combinations(x, part, ["age"], cat).value - found.value) < 0.06



def test_forest_framework_release_of_the_hospital_table_is_caught_both_ways() -> None:
    """The issue's example: Forest Framework (Fletcher & Islam 2015) changes attribute values within
    the leaves of its forest, which do not split on sex or diagnosis where the class does not need
    it, so deliveries land on men and obstetric codes at ages outside 12..55. Both readings count
    them: the combinations absent from x (found without any rule) and the declared edit rules, and
    every record that breaks a declared rule is among those found without rules."""
    from ppdm.anonymize.registry import make_technique

    x = hospital(1500)
    tech = make_technique("forest-framework", class_column="readmitted", schema=hospital_schema(),
                          random_state=1, params={})
    z = tech.fit_transform(x)
    found = implausible_combinations(x, z, ["age"], ["sex", "diagnosis", "insurance", "readmitted"])
    assert found.value > 0.05
    released = {(r.column_a, r.value_a, r.column_b, r.value_b): r.released for r in found.pairs.itertuples()}
    assert released[("sex", "M", "diagnosis", "O80")] > 10 and released[("sex", "M", "diagnosis", "O82")] > 10
    declared = edit_rule_violations(x, z, RULES)
    assert declared.x_share == 0.0 and declared.value > 0.03
    men, ages, _ = declared.rules["z_violations"].tolist()
    assert men > 10 and ages > 10  # deliveries on men, obstetric codes at implausible ages
    assert not (declared.flags & ~found.flags).any()

def test_hospital_verdict_is_not_kept(tmp_path: Path) -> None:
    from ppdm.experiments.evaluate import EvaluateOptions, evaluate
    from ppdm.report.summary import plausibility_drivers

    x = hospital(1500)
    names = "implausible_combinations,edit_rule_violations"
    ev = evaluate(x, columns_redrawn(x), hospital_schema(), options=EvaluateOptions(measures=names))
    u = ev.verdicts["utility"]
    assert u.status == "reduced", u.sentence
    assert {j["measure"]: j["judgement"] for j in u.judged} == {"implausible_combinations": "misses",
                                                               "edit_rule_violations": "misses"}
    text = plausibility_drivers(ev.document())
    # the worst combination (Medicare under 65; about 44 % implausible in all) and the worst rule, by labels
    # and counts only
    assert text is not None and re.match(r"\d+% of released records hold a combination x never holds "
                                         r"\(age for insurance=Medicare: \d+ below its range in x\); ", text)
    assert re.search(r"; \d+% of released records more than in x break a declared edit rule \((sex|diagnosis|age) "
                     r"[^()]*: \d+ released records, 0 in x\)\.$", text), text
    same = evaluate(x, x, hospital_schema(), options=EvaluateOptions(measures=names))
    assert same.verdicts["utility"].status == "kept"
    assert plausibility_drivers(same.document()) is None


def test_edit_rules_skip_when_none_are_declared() -> None:
    from ppdm.experiments.evaluate import EvaluateOptions, evaluate

    x = hospital(300)
    sch = Schema(numeric=["age"], categorical=["sex", "diagnosis", "insurance"], class_column="readmitted")
    ev = evaluate(x, x, sch, options=EvaluateOptions(measures="implausible_combinations,edit_rule_violations"))
    assert ev.outcomes["edit_rule_violations"].skipped
    assert ev.outcomes["edit_rule_violations"].reason == "the schema declares no edit_rules"
    assert [j["measure"] for j in ev.verdicts["utility"].judged] == ["implausible_combinations"]


def test_registered_as_default_utility_measures() -> None:
    from ppdm.experiments.evaluation import declared_in, load_all_measures, resolve_measures

    reg = load_all_measures()
    for name, threshold in (("implausible_combinations", 0.05), ("edit_rule_violations", 0.01)):
        m = reg[name]
        assert (m.kind, m.direction, m.value_range, m.threshold, m.default, m.needs_class, m.paired) == \
            ("utility", "lower", (0.0, 1.0), threshold, True, False, False)
    assert {"implausible_combinations", "edit_rule_violations"} <= {m.name for m in resolve_measures(None)}
    # the default set holds edit rules to their threshold only when the schema declares some
    plain = Schema(numeric=["age"], categorical=["sex", "diagnosis", "insurance"])
    assert [m.name for m in declared_in(resolve_measures(None), plain) if m.declared_by] == []
    assert [m.name for m in declared_in(resolve_measures(None), hospital_schema()) if m.declared_by] == \
        ["edit_rule_violations"]


def test_cheap_on_adult() -> None:
    from ppdm.datasets import load

    x, s = load("adult", missing="drop")
    cat = [*s.categorical, s.class_column]
    implausible_combinations(x, x, s.numeric, cat)  # warm
    t = time.process_time()
    r = implausible_combinations(x, x, s.numeric, cat)
    spent = time.process_time() - t
    assert r.value == 0.0 and r.column_pairs == 36 and r.ranges_checked > 300
    # about 0.1 s CPU on an idle machine (0.12–0.15 s under a load of 10 on 2 cores); an n × n step
    # or a Python loop over records would take seconds
    assert spent < 0.6, spent
