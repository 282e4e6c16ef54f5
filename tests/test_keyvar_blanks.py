"""One reading of a blank: the wildcard (sdcMicro) and strict (pyCANON, ARX) readings and the
intruder's view, hand-computed on tiny tables; a release built to break k in the intruder's view
and the verdict of ppdm evaluate on it; the adult example."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ppdm.anonymize import _suppression as alg
from ppdm.anonymize.suppression import LocalSuppression
from ppdm.data import blanks
from ppdm.data.schema import Schema
from ppdm.errors import ParameterError
from ppdm.experiments.evaluate import EvaluateOptions, evaluate
from ppdm.experiments.evaluation import load_all_measures
from ppdm.metrics import MEASURES, EvaluationContext
from ppdm.metrics.keyvar import (
    intruder_view,
    k_anonymity,
    key_frequencies,
    l_diversity,
    reidentification_risk,
    sample_uniques,
)

KEYS = ["a", "b"]
# z, released, with two blanks (·):      x, the true values:
#   0 (x, p)  s=A                          (x, p)
#   1 (x, ·)  s=B                          (x, r)   — r: a value no other record has
#   2 (x, q)  s=A                          (x, q)
#   3 (y, q)  s=C                          (y, q)
#   4 (·, q)  s=C                          (y, q)
#   5 (y, q)  s=C                          (y, q)
Z = pd.DataFrame({"a": ["x", "x", "x", "y", None, "y"], "b": ["p", None, "q", "q", "q", "q"],
                  "s": ["A", "B", "A", "C", "C", "C"], "w": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]})
X = pd.DataFrame({"a": ["x", "x", "x", "y", "y", "y"], "b": ["p", "r", "q", "q", "q", "q"],
                  "s": ["A", "B", "A", "C", "C", "C"], "w": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]})


def test_wildcard_reading_by_hand() -> None:
    """A blank matches any value. 0 (x,p) matches 0 and 1; 1 (x,·) matches 0, 1, 2 and 4 (no key
    in common with (·,q)); 2 (x,q) matches 1, 2, 4; 3 and 5 (y,q) match 3, 4, 5; 4 (·,q)
    matches 1, 2, 3, 4, 5."""
    kf = key_frequencies(Z, KEYS)
    np.testing.assert_array_equal(kf.fk, [2, 4, 3, 3, 5, 3])
    r = k_anonymity(Z, KEYS, 3)
    assert r.blanks == "wildcard" and r.violations == 1 and r.achieved_k == 2 and r.sample_uniques == 0
    # Fk with weights 1..6: record 0 matches records 0 and 1 (1 + 2 = 3), record 1 records 0, 1, 2, 4
    # (1 + 2 + 3 + 5 = 11)
    np.testing.assert_array_equal(key_frequencies(Z, KEYS, "w").Fk, [3, 11, 10, 15, 20, 15])


def test_strict_reading_by_hand() -> None:
    """A blank is a value of its own: (x,p), (x,·), (x,q) and (·,q) once each, (y,q) twice."""
    np.testing.assert_array_equal(key_frequencies(Z, KEYS, blanks="strict").fk, [1, 1, 1, 2, 1, 2])
    r = k_anonymity(Z, KEYS, 3, blanks="strict")
    assert r.blanks == "strict" and r.violations == 6 and r.achieved_k == 1 and r.sample_uniques == 4
    assert sample_uniques(Z, KEYS, blanks="strict").sample_uniques == 4
    assert sample_uniques(Z, KEYS).sample_uniques == 0
    # without weights the risk is 1/fk: strict Σ = 1+1+1+½+1+½ = 5, wildcard ½+¼+⅓+⅓+⅕+⅓
    assert reidentification_risk(Z, KEYS, blanks="strict").expected_reidentifications == pytest.approx(5.0)
    assert reidentification_risk(Z, KEYS).expected_reidentifications == pytest.approx(
        1 / 2 + 1 / 4 + 1 / 3 + 1 / 3 + 1 / 5 + 1 / 3)
    with pytest.raises(ParameterError, match="blanks must be one of"):
        k_anonymity(Z, KEYS, 3, blanks="ignore")


def test_l_diversity_reads_a_blank_as_k_anonymity_does() -> None:
    """Wildcard groups (as in test_wildcard_reading_by_hand): 0 {0,1} holds A, B; 1 {0,1,2,4}
    A, B, A, C; 2 {1,2,4} B, A, C; 3 and 5 {3,4,5} C only; 4 {1,...,5} B, A, C. Strict groups:
    every pattern alone except (y,q) = {3,5}, all with one value."""
    r = l_diversity(Z, KEYS, "s")
    np.testing.assert_array_equal(r.distinct_l["s"], [2, 3, 3, 1, 3, 1])
    # record 1: A 2/4, B 1/4, C 1/4: H = ½ ln 2 + ½ ln 4 = 1.5 ln 2, exp H = 2^1.5
    assert r.entropy_l["s"][1] == pytest.approx(2 ** 1.5)
    assert r.entropy_l["s"][0] == pytest.approx(2.0)
    assert r.value == 1 and r.per_sensitive.iloc[0]["records_below_l_target"] == pytest.approx(2 / 6)
    strict = l_diversity(Z, KEYS, "s", blanks="strict")
    np.testing.assert_array_equal(strict.distinct_l["s"], [1, 1, 1, 1, 1, 1])
    # no blank key: both readings agree
    np.testing.assert_array_equal(l_diversity(X, KEYS, "s").distinct_l["s"],
                                  l_diversity(X, KEYS, "s", blanks="strict").distinct_l["s"])


def test_intruder_view_by_hand() -> None:
    """Candidates for the true values: 0 (x,p) → z0, z1 (2); 1 (x,r) → z1 alone (1): its release
    (x,·) has fk = 4 under the wildcard reading, but the intruder knows r; 2 (x,q) → z1, z2, z4;
    3–5 (y,q) → z3, z4, z5. With k = 3 records 0 and 1 are narrowed below k, 1 of them blanked."""
    r = intruder_view(X, Z, KEYS, 3)
    np.testing.assert_array_equal(r.candidates, [2, 1, 3, 3, 3, 3])
    assert r.value == pytest.approx(2 / 6) and r.narrowed == 2 and r.narrowed_blanked == 1
    assert r.min_candidates == 1 and r.not_found == 0
    # the same count by the shared helper, on one coding of x and z
    cx, cz = blanks.joint_key_codes(X, Z, KEYS)
    np.testing.assert_array_equal(blanks.intruder_frequencies(cx, cz), [2, 1, 3, 3, 3, 3])
    # without blanks the intruder's view is fk < k of x's own keys: (x,p), (x,r), (x,q) once each
    assert intruder_view(X, X, KEYS, 3).narrowed == 3


def test_a_true_value_the_release_generalised_takes_its_own_records_fk() -> None:
    """Paired, a record whose true values match no released record (its key shown as a label x
    does not use) is read by its released record's wildcard fk, not as "not found"."""
    z = pd.DataFrame({"a": ["[1,5)"] * 3 + ["[5,9)"], "b": ["u", "u", "u", "v"]})
    x = pd.DataFrame({"a": [1, 2, 3, 7], "b": ["u", "u", "u", "v"]})
    r = intruder_view(x, z, KEYS, 2)
    np.testing.assert_array_equal(r.candidates, [3, 3, 3, 1])
    assert r.narrowed == 1 and r.not_found == 0
    unpaired = intruder_view(x, z, KEYS, 2, paired=False)
    assert unpaired.not_found == 4 and unpaired.narrowed == 0


def test_one_frequency_count_for_the_technique_and_the_measures() -> None:
    """Local suppression's fk and the measures' fk are one function."""
    assert alg.record_frequencies is blanks.record_frequencies
    assert alg.pattern_frequencies is blanks.pattern_frequencies
    assert alg.intruder_frequencies is blanks.intruder_frequencies
    codes = blanks.key_codes(Z, KEYS)
    np.testing.assert_array_equal(alg.record_frequencies(codes), key_frequencies(Z, KEYS).fk)
    # the measures' counting is the same function, with the number of distinct patterns: (x,p),
    # (x,·), (x,q), (y,q), (·,q) are 5; Fk of weights 1..6 as in test_wildcard_reading_by_hand
    fk, groups = blanks.record_frequencies_and_groups(codes)
    np.testing.assert_array_equal(fk, [2, 4, 3, 3, 5, 3])
    assert groups == 5 == key_frequencies(Z, KEYS).n_groups
    both, _ = blanks.record_frequencies_and_groups(codes, weights=np.column_stack([np.ones(6), Z["w"]]))
    np.testing.assert_array_equal(both[:, 1], [3, 11, 10, 15, 20, 15])


def _ctx(x: pd.DataFrame, z: pd.DataFrame, **options) -> EvaluationContext:
    s = Schema(categorical=[*KEYS, "s"], quasi_identifiers=KEYS, sensitive=["s"])
    return EvaluationContext(x=x[[*KEYS, "s"]], z=z[[*KEYS, "s"]], schema=s, options=options)


def test_measures_take_the_reading_as_an_option_and_the_intruder_view_is_judged() -> None:
    load_all_measures()
    spec = MEASURES["k_anonymity_intruder"]
    assert spec.default and spec.kind == "risk" and spec.threshold == 0.05 and spec.scenario == "quasi-identifiers"
    for name in ("k_anonymity", "sample_uniques", "reidentification_risk", "l_diversity", "attribute_disclosure"):
        assert "blanks" in MEASURES[name].options, name
    # -p k_anonymity.blanks=strict, or blanks=strict for every key-variable measure
    assert MEASURES["k_anonymity"].fn(_ctx(X, Z, **{"k_anonymity.k": 3})).violations == 1
    assert MEASURES["k_anonymity"].fn(_ctx(X, Z, **{"k_anonymity.k": 3, "k_anonymity.blanks": "strict"})).violations == 6
    assert MEASURES["l_diversity"].fn(_ctx(X, Z, blanks="strict")).blanks == "strict"
    iv = MEASURES["k_anonymity_intruder"].fn(_ctx(X, Z, **{"k_anonymity_intruder.k": 3}))
    assert iv.value == pytest.approx(2 / 6) and iv.original == pytest.approx(3 / 6)


# ------------------------------------------------------- a release built to break the claim
SMALL = pd.DataFrame({"a": ["x", "x", "y", "y", "y"], "b": ["p", "q", "p", "p", "p"]})


def _verdict(z: pd.DataFrame) -> tuple[str, dict]:
    ev = evaluate(SMALL, z, Schema(categorical=KEYS, quasi_identifiers=KEYS),
                  options=EvaluateOptions(measures="k_anonymity,k_anonymity_intruder", pairing="position", missing="keep",
                                          measure_options={"k_anonymity.k": 2, "k_anonymity_intruder.k": 2},
                                          # the point is the key-variable intruder: the others are ruled out
                                          ruled_out=("originals", "sensitive", "control")))
    return ev.verdicts["risk"].status, {j["measure"]: j["judgement"] for j in ev.verdicts["risk"].judged}


def test_a_cover_release_that_narrows_a_record_below_k_is_not_low_risk() -> None:
    """The cover on sdcMicro's reading blanks record 0's b: (x,·) and (x,q) both have fk = 2, so
    k_anonymity sees no violation; but record 0's true (x,p) has only (x,·) as candidate (1 of 5
    records narrowed below k = 2, 20 % > 5 %). The default criterion blanks record 1's b too."""
    t = LocalSuppression(keys=KEYS, k=2, criterion="sdcmicro")
    z = t.fit_transform(SMALL)
    assert z.isna().to_numpy().sum() == 1 and t.private_report_["records_below_k_for_intruder"] == 1
    status, lines = _verdict(z)
    assert lines == {"k_anonymity": "meets", "k_anonymity_intruder": "misses"}
    assert status != "low"
    default = LocalSuppression(keys=KEYS, k=2)
    z = default.fit_transform(SMALL)
    assert default.private_report_["records_below_k_for_intruder"] == 0
    assert _verdict(z) == ("low", {"k_anonymity": "meets", "k_anonymity_intruder": "meets"})


def test_adult_cover_on_sdcmicros_reading_leaves_blanked_records_narrowed_below_k() -> None:
    """adult, 5 keys, k = 5 (docs/sdc.md): the cover on sdcMicro's reading blanks 1032 cells and
    leaves 801 records, every one of them blanked, with fewer than 5 candidates for an intruder who
    knows their true keys, while k_anonymity counts 0 violations; the default criterion leaves
    none. Under the strict reading neither is 5-anonymous (smallest group 1)."""
    from ppdm.datasets import load

    keys = ["age", "sex", "race", "education", "marital_status"]
    x = load("adult", missing="drop")[0][keys]
    for criterion, narrowed in (("sdcmicro", 801), (None, 0)):
        z = LocalSuppression(keys=keys, k=5, criterion=criterion).fit_transform(x)
        assert k_anonymity(z, keys, 5, per_key=False).violations == 0
        assert k_anonymity(z, keys, 5, per_key=False, blanks="strict").achieved_k == 1
        iv = intruder_view(x, z, keys, 5)
        assert iv.narrowed == narrowed and iv.narrowed_blanked == narrowed, criterion
    assert math.isclose(801 / len(x), 0.02656, abs_tol=1e-4)


def test_partitioned_tables_read_blanks_as_in_memory() -> None:
    dd = pytest.importorskip("dask.dataframe")
    load_all_measures()
    mem = _ctx(X, Z, **{"k_anonymity.k": 3, "k_anonymity_intruder.k": 3})
    part = EvaluationContext(x=dd.from_pandas(mem.x, npartitions=2), z=dd.from_pandas(mem.z, npartitions=2),
                             schema=mem.schema, options=dict(mem.options))
    for blank in ("wildcard", "strict"):
        mem.options["blanks"] = part.options["blanks"] = blank
        mem.cache.clear()
        part.cache.clear()
        for name in ("k_anonymity", "l_diversity"):
            a, b = MEASURES[name].fn(mem), MEASURES[name].fn(part)
            assert a.value == pytest.approx(b.value), (name, blank)
    del mem.options["blanks"], part.options["blanks"]
    a, b = MEASURES["k_anonymity_intruder"].fn(mem), MEASURES["k_anonymity_intruder"].fn(part)
    assert b.value == pytest.approx(2 / 6) and b.narrowed == a.narrowed == 2 and b.original == pytest.approx(a.original)
