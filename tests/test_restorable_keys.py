"""Blanked or recoded quasi-identifiers that another released column restores (ppdm.metrics.restorable)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from ppdm.anonymize import make_technique
from ppdm.data.schema import Schema
from ppdm.metrics.base import MEASURES, EvaluationContext, result_not_judged
from ppdm.metrics.keyvar import k_anonymity
from ppdm.metrics.release_check import gate, release_check
from ppdm.metrics.restorable import NOTHING_CHANGED, NOTHING_RESTORED, restorable_keys


def _tiny() -> tuple[pd.DataFrame, pd.DataFrame]:
    """8 records, keys A and S; B is a one-to-one code of A; z blanks A in rows 2 and 5 (the two
    records unique on (A, S) in x)."""
    x = pd.DataFrame({"A": list("aaabbbcc"), "B": [1, 1, 1, 2, 2, 2, 3, 3], "S": list("mmfffmmm")})
    z = x.copy()
    z.loc[[2, 5], "A"] = np.nan
    return x, z


def test_by_hand_paired() -> None:
    # x on (A, S): (a,m) rows 0,1; (a,f) row 2; (b,f) rows 3,4; (b,m) row 5; (c,m) rows 6,7.
    # Before (z, a blank matching every value, as sdcMicro): row 2 (·,f) matches rows 2,3,4 → fk 3;
    # row 5 (·,m) matches 0,1,5,6,7 → fk 5; rows 0,1 match 0,1,5 → 3; rows 3,4 → 3,4,2 → 3; rows
    # 6,7 → 6,7,5 → 3. With k = 2 no record has fk < 2: before = 0.
    # Restoring from B, leave-one-out: row 2 has B = 1, whose other records (rows 0, 1) are all
    # 'a' → 'a', right; row 5 has B = 2, others rows 3, 4 are 'b' → 'b', right: 2 of 2 restored.
    # The restored view is x: rows 2 and 5 are alone on (A, S), fk = 1 < 2: value = 2/8 = 0.25.
    # Baseline: 'a' and 'b' tie as x's most frequent value (3 each), the first seen, 'a', is taken;
    # one of the two blanked originals is 'a' → 0.5. S does not restore A: row 2's S = f leaves
    # rows 3, 4 ('b', wrong) and row 5's S = m leaves a, a, c, c (2 of 4 < 95 %).
    x, z = _tiny()
    r = restorable_keys(x, z, ["A", "S"], k=2)
    assert r.before == 0.0 and r.violations_before == 0
    assert r.value == pytest.approx(0.25) and r.violations_after == 2
    assert r.changed_keys == ["A"] and r.restored_keys == ["A"] and r.not_judged is None
    assert r.pairs[["key", "column", "change", "affected", "restored", "share_restored", "baseline", "used"]
                   ].values.tolist() == [["A", "B", "blanked", 2, 2.0, 1.0, 0.5, True]]
    # the headline is k_anonymity's count on the restored view, here x itself
    assert r.value == k_anonymity(x, ["A", "S"], 2).value
    # k = 3: every record of x shares (A, S) with at most one other
    assert restorable_keys(x, z, ["A", "S"], k=3).value == 1.0
    # only names and counts in the tables
    assert set(r.pairs.columns) >= {"key", "column"} and not set(r.pairs.astype(str).values.ravel()) & set("abcmf")


def test_by_hand_unpaired() -> None:
    # Without a pairing z's blanks are its missing cells; B = 1 holds 3 records of x, all 'a': a record
    # of that group carries 'a' with chance 3/3 and its 2 others agree → 1 expected restoration; the
    # same for B = 2. The restored view holds x's (A, S) multiset: value 0.25 again.
    x, z = _tiny()
    zs = z.iloc[[7, 2, 0, 5, 3, 1, 6, 4]].reset_index(drop=True)
    r = restorable_keys(x, zs, ["A", "S"], k=2, paired=False)
    assert r.pairs[["key", "column", "affected", "restored", "share_restored"]].values.tolist() == \
        [["A", "B", 2, 2.0, 1.0]]
    assert r.before == 0.0 and r.value == pytest.approx(0.25)


def test_an_unrelated_column_restores_nothing() -> None:
    rng = np.random.default_rng(3)
    n = 400
    x = pd.DataFrame({"A": rng.choice(list("abcd"), n), "B": rng.integers(0, 5, n), "S": rng.choice(list("mf"), n)})
    z = x.copy()
    z.loc[rng.choice(n, 40, replace=False), "A"] = np.nan
    r = restorable_keys(x, z, ["A", "S"])
    assert r.pairs.empty and r.restored_keys == [] and r.changed_keys == ["A"]
    assert r.key_changes["share_restored"].iloc[0] < 0.6
    assert r.value == r.before and r.not_judged == NOTHING_RESTORED
    # a column unique per record (a serial number) restores nothing: no other record vouches for a value
    x["serial"] = np.arange(n)
    z["serial"] = np.arange(n)
    assert restorable_keys(x, z, ["A", "S"]).pairs.empty
    # a code of A that the release changes on 10 % of the records cannot be used
    x["code"] = x["A"].map({"a": 1, "b": 2, "c": 3, "d": 4})
    z["code"] = x["code"].where(np.arange(n) % 10 != 0, 9)
    assert restorable_keys(x, z, ["A", "S"]).pairs.empty
    z["code"] = x["code"]  # kept: now it restores A
    assert restorable_keys(x, z, ["A", "S"]).pairs["column"].tolist() == ["code"]


def test_nothing_blanked_is_not_judged() -> None:
    x, _ = _tiny()
    r = restorable_keys(x, x.copy(), ["A", "S"])
    assert r.value == 0.0 and r.not_judged == NOTHING_CHANGED and r.pairs.empty and r.key_changes.empty
    assert result_not_judged(r) == NOTHING_CHANGED


def test_recoded_age_restored_from_birth_year() -> None:
    # 60 people aged 20..49, two of each age; birth_year = 2020 − age is released untouched while
    # age is recoded to intervals of 10 years: every recoded age comes back from birth_year
    ages = np.repeat(np.arange(20, 50), 2)
    x = pd.DataFrame({"age": ages, "birth_year": 2020 - ages, "sex": np.tile(["m", "f"], 30)})
    sch = Schema(numeric=["age", "birth_year"], categorical=["sex"], quasi_identifiers=["age", "sex"])
    t = make_technique("recode", params={"columns": ["age"], "breaks": [19, 29, 39, 49]}, schema=sch)
    z = t.fit_transform(x)
    assert z["age"].astype(str).str.startswith("(").all()  # released as intervals
    r = restorable_keys(x, z, ["age", "sex"])
    assert r.pairs[["key", "column", "change", "affected", "share_restored"]].values.tolist() == \
        [["age", "birth_year", "recoded", 60, 1.0]]
    # before: (interval, sex) groups of 10 records, none under k = 3; after: each (age, sex) is one person
    assert r.before == 0.0 and r.value == 1.0
    # the gate warns, naming both columns (the check reads z as the technique's output schema types it)
    found = [f for f in gate(release_check(x, z, t.output_schema())) if f.rule == "warn_restorable_key"]
    assert len(found) == 1 and found[0].columns == ["birth_year", "age"] and found[0].level == "warn"
    assert "'age' recoded in 60 cell(s) is restored by the released 'birth_year' in 100.0%" in found[0].message


@pytest.fixture(scope="module")
def adult_suppressed() -> tuple[pd.DataFrame, pd.DataFrame, Schema, list[str]]:
    from ppdm.datasets import load

    x, s = load("adult", missing="drop")
    qi = ["age", "education", "marital_status", "race", "sex"]
    t = make_technique("local-suppression", params={"k": 5, "keys": qi}, schema=s, class_column=s.class_column)
    return x, t.fit_transform(x), s, qi  # fit_transform keeps the rows paired with x's


def test_adult_local_suppression_is_undone_by_education_num(adult_suppressed) -> None:
    x, z, s, qi = adult_suppressed
    r = restorable_keys(x, z, qi, k=5)
    edu = r.pairs[r.pairs["key"] == "education"]
    assert edu[["column", "share_restored", "used"]].values.tolist() == [["education_num", 1.0, True]]
    assert int(edu["affected"].iloc[0]) == int(z["education"].isna().sum()) > 100
    # local suppression made the release 5-anonymous; restoring education breaks that for ~2000 records
    assert r.before == 0.0 and r.violations_after > 1500 and r.value > 0.05
    # without a pairing (z shuffled) the same pair is found from z's blanks alone
    zs = z.sample(frac=1.0, random_state=0).reset_index(drop=True)
    u = restorable_keys(x, zs, qi, k=5, paired=False)
    assert u.pairs[u.pairs["key"] == "education"]["column"].tolist() == ["education_num"]
    assert u.value == pytest.approx(r.value, abs=0.01)
    # the release gate names both columns
    sch = Schema(numeric=list(s.numeric), categorical=list(s.categorical), class_column=s.class_column,
                 quasi_identifiers=qi)
    found = [f for f in gate(release_check(x, z, sch, columns=[*qi, "education_num", "relationship"]))
             if f.rule == "warn_restorable_key"]
    assert [f.columns for f in found if f.columns[1] == "education"] == [["education_num", "education"]]
    msg = next(f.message for f in found if f.columns[1] == "education")
    assert msg.startswith(f"'education' blanked in {int(z['education'].isna().sum())} cell(s) is restored by the "
                          "released 'education_num' in 100.0% of them")


def test_registered_measure(adult_suppressed) -> None:
    spec = MEASURES["restorable_keys"]
    assert (spec.kind, spec.direction, spec.value_range, spec.threshold, spec.default, spec.needs_class,
            spec.scenario) == ("risk", "lower", (0.0, 1.0), 0.05, True, False, "quasi-identifiers")
    x, z, s, qi = adult_suppressed
    sch = Schema(numeric=list(s.numeric), categorical=list(s.categorical), class_column=s.class_column,
                 quasi_identifiers=qi)
    r = spec.fn(EvaluationContext(x=x, z=z, schema=sch))
    assert r.key_source == "declared" and r.restored_keys[:1] == ["education"] and r.value > 0.05
    assert result_not_judged(r) is None and spec.within(r.value) is False
    # a release that blanks nothing is left out of the verdict
    same = spec.fn(EvaluationContext(x=x, z=x.copy(), schema=sch))
    assert same.value == 0.0 and result_not_judged(same) == NOTHING_CHANGED


def test_release_warns_and_keeps_the_pairs_in_its_check() -> None:
    from ppdm.experiments.release import ReleaseWarning, release

    ages = np.repeat(np.arange(20, 50), 2)
    x = pd.DataFrame({"age": ages, "birth_year": 2020 - ages, "sex": np.tile(["m", "f"], 30)})
    t = make_technique("recode", params={"columns": ["age"], "breaks": [19, 29, 39, 49]}, random_state=0)
    with pytest.warns(ReleaseWarning, match="'age' recoded in 60 cell"):
        rel = release(x, t, quasi_identifiers=["age", "sex"])
    assert [f["rule"] for f in rel.findings] == ["warn_restorable_key"]
    assert rel.findings[0]["columns"] == ["birth_year", "age"]
    assert rel.check.restorable_keys[["key", "column"]].values.tolist() == [["age", "birth_year"]]
    # leaving birth_year out of the release leaves nothing to warn about
    with warnings.catch_warnings():
        warnings.simplefilter("error", ReleaseWarning)
        rel = release(x.drop(columns=["birth_year"]), t, quasi_identifiers=["age", "sex"])
    assert rel.findings == [] and rel.check.restorable_keys.empty


def test_registered_measure_options_and_pairing() -> None:
    # the tiny table of test_by_hand_paired: with k = 2 the restored view has 2 of 8 records alone
    x, z = _tiny()
    sch = Schema(categorical=["A", "S"], numeric=["B"], quasi_identifiers=["A", "S"])
    spec = MEASURES["restorable_keys"]
    r = spec.fn(EvaluationContext(x=x, z=z, schema=sch, options={"restorable_keys.k": 2}))
    assert r.paired and r.value == pytest.approx(0.25) and r.before == 0.0
    # a z the owner did not pair with x: the pairing-free form, from z's blanks
    zs = z.iloc[::-1].reset_index(drop=True)
    u = spec.fn(EvaluationContext(x=x, z=zs, schema=sch, paired=False, options={"restorable_keys.k": 2}))
    assert not u.paired and u.pairs["column"].tolist() == ["B"] and u.value == pytest.approx(0.25)
    # B left out of the columns that may restore: nothing is restorable, and the result is not judged
    c = spec.fn(EvaluationContext(x=x, z=z, schema=sch, options={"restorable_keys.columns": "S"}))
    assert c.pairs.empty and result_not_judged(c) == NOTHING_RESTORED
