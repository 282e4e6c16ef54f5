"""Privacy models of ARX, ANJANA and pyCANON (ppdm.metrics.privacy_models): values worked out by
hand on tiny tables, the ordered EMD against its definition, and releases built to break each
model judged as missing their threshold through the same path as ``ppdm evaluate``."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from ppdm.cli.app import app
from ppdm.data.schema import Schema
from ppdm.errors import MeasureNotApplicable, ParameterError
from ppdm.experiments.document import evaluation_document
from ppdm.experiments.evaluation import evaluate_measures, load_all_measures, measurement_context
from ppdm.metrics import (
    alpha_k_anonymity,
    basic_beta_likeness,
    delta_disclosure,
    enhanced_beta_likeness,
    recursive_cl_diversity,
    t_closeness,
)
from ppdm.metrics.base import MEASURES
from ppdm.metrics.keyvar import group_codes, key_codes
from ppdm.metrics.privacy_models import equal_emd, ordered_emd, sensitive_cells

load_all_measures()
MODELS = ["t_closeness", "recursive_cl_diversity", "alpha_k_anonymity", "basic_beta_likeness",
          "enhanced_beta_likeness", "delta_disclosure"]


def tiny() -> pd.DataFrame:
    """Two classes of three records.

    class A: s = x, x, y   v = 1, 2, 3
    class B: s = y, y, z   v = 3, 3, 5
    table p(s): x 1/3, y 1/2, z 1/6;  p(v): 1 → 1/6, 2 → 1/6, 3 → 1/2, 5 → 1/6 (m = 4 values)
    """
    return pd.DataFrame({"k": list("AAABBB"), "s": list("xxyyyz"), "v": [1.0, 2.0, 3.0, 3.0, 3.0, 5.0]})


# ------------------------------------------------------------------------------ by hand
def test_t_closeness_by_hand() -> None:
    # equal distance: A ½(|2/3−1/3| + |1/3−1/2| + |0−1/6|) = ½(1/3 + 1/6 + 1/6) = 1/3; B ½(1/3 + 1/6 + 1/6) = 1/3
    r = t_closeness(tiny(), ["k"], ["s"])
    assert r.value == pytest.approx(1 / 3) and r.ground == {"s": "equal"}
    assert r.records_failing == pytest.approx(1.0)  # both classes above t = 0.2
    assert t_closeness(tiny(), ["k"], ["s"], t=0.34).records_failing == 0.0
    # ordered distance: A q − p = (1/6, 1/6, −1/6, −1/6), cumulative (1/6, 2/6, 1/6, 0): 4/6 / (m−1 = 3) = 2/9;
    # B q − p = (−1/6, −1/6, 1/6, 1/6), cumulative (−1/6, −2/6, −1/6, 0): 2/9 as well
    r = t_closeness(tiny(), ["k"], ["v"])
    assert r.value == pytest.approx(2 / 9) and r.ground == {"v": "ordered"}
    # the same numbers read as categories: A ½(1/6 + 1/6 + 1/6 + 1/6) = 1/3
    assert t_closeness(tiny(), ["k"], ["v"], ground="equal").value == pytest.approx(1 / 3)
    # several attributes: the worst counts
    both = t_closeness(tiny(), ["k"], ["s", "v"])
    assert both.value == pytest.approx(1 / 3) and both.worst == "s" and len(both.per_sensitive) == 2


def test_recursive_cl_diversity_by_hand() -> None:
    # A counts x 2, y 1: r1 = 2, tail (l = 2) = r2 = 1 → 2 < 3·1 holds, c needed 2; B y 2, z 1 alike
    r = recursive_cl_diversity(tiny(), ["k"], ["s"], c=3, l=2)
    assert r.value == 0.0 and r.c_needed == pytest.approx(2.0) and r.distinct_l == 2
    # c = 2: 2 < 2·1 fails in both classes, every record is in a failing class
    assert recursive_cl_diversity(tiny(), ["k"], ["s"], c=2, l=2).value == 1.0
    # l = 3: two values per class are fewer than l, whatever c
    r3 = recursive_cl_diversity(tiny(), ["k"], ["s"], c=100, l=3)
    assert r3.value == 1.0 and math.isinf(r3.c_needed)
    # counts 3, 2, 1 in one class: l = 2 tail 2 + 1 = 3, 3 < 2·3; l = 3 tail 1, 3 < 3·1 fails, c needed 3
    one = pd.DataFrame({"k": ["A"] * 6, "s": list("aaabbc")})
    assert recursive_cl_diversity(one, ["k"], ["s"], c=2, l=2).value == 0.0
    r = recursive_cl_diversity(one, ["k"], ["s"], c=3, l=3)
    assert r.value == 1.0 and r.c_needed == pytest.approx(3.0)


def test_alpha_k_anonymity_by_hand() -> None:
    # largest share: x 2/3 in A, y 2/3 in B; every class has fk = 3
    r = alpha_k_anonymity(tiny(), ["k"], ["s"], alpha=0.5, k=2)
    assert r.value == pytest.approx(2 / 3) and r.achieved_k == 3 and r.records_failing == 1.0
    assert alpha_k_anonymity(tiny(), ["k"], ["s"], alpha=0.7, k=3).records_failing == 0.0
    # k = 4: both classes have fewer than k records, so each counts as α = 1
    r4 = alpha_k_anonymity(tiny(), ["k"], ["s"], alpha=0.7, k=4)
    assert r4.value == 1.0 and r4.achieved_alpha == pytest.approx(2 / 3) and r4.records_failing == 1.0
    # only z is sensitive: its share is 0 in A and 1/3 in B
    assert alpha_k_anonymity(tiny(), ["k"], ["s"], values=["z"]).value == pytest.approx(1 / 3)


def test_beta_likeness_by_hand() -> None:
    # growths (q − p)/p where q > p: A x (2/3 − 1/3)/(1/3) = 1; B y (2/3 − 1/2)/(1/2) = 1/3, z (1/3 − 1/6)/(1/6) = 1
    r = basic_beta_likeness(tiny(), ["k"], ["s"])
    assert r.value == pytest.approx(1.0) and r.records_failing == 0.0
    assert basic_beta_likeness(tiny(), ["k"], ["s"], beta=0.5).records_failing == 1.0
    # enhanced at β = 1: allowed min(1, −ln p) is 1 for x (−ln 1/3 = 1.10) and z (1.79), ln 2 = 0.693 for y:
    # ratios 1/1, (1/3)/0.693 = 0.481, 1/1 → 1; every growth is within −ln p, so β needed = 1
    e = enhanced_beta_likeness(tiny(), ["k"], ["s"], beta=1.0)
    assert e.value == pytest.approx(1.0) and e.beta_needed == pytest.approx(1.0) and e.basic_beta == pytest.approx(1)
    # β = 0.5: x may grow by 0.5 only, it grows by 1 → ratio 2
    assert enhanced_beta_likeness(tiny(), ["k"], ["s"], beta=0.5).value == pytest.approx(2.0)
    # a frequent value: y has p = 1/2 and fills class A (q = 1): growth 1 > −ln ½ = 0.693, which no β allows
    fr = pd.DataFrame({"k": list("AABB"), "s": list("yyxz")})
    e = enhanced_beta_likeness(fr, ["k"], ["s"], beta=5.0)
    assert e.value == pytest.approx(1 / math.log(2)) and math.isinf(e.beta_needed)
    assert basic_beta_likeness(fr, ["k"], ["s"]).value == pytest.approx(1.0)


def test_delta_disclosure_by_hand() -> None:
    # A: |ln((2/3)/(1/3))| = ln 2, |ln((1/3)/(1/2))| = ln 1.5; B: ln(4/3), ln 2 — values absent from a class do not count
    r = delta_disclosure(tiny(), ["k"], ["s"])
    assert r.value == pytest.approx(math.log(2)) and r.records_failing == 0.0
    assert delta_disclosure(tiny(), ["k"], ["s"], delta=math.log(2)).records_failing == 1.0  # strict: < δ


def test_blank_sensitive_values_tell_nothing() -> None:
    """A blank is left out of the class's and the table's distributions; a class of blanks only
    discloses nothing. Adding blanks to tiny() leaves every value as it was."""
    t = tiny()
    blanks = pd.DataFrame({"k": ["A", "C", "C"], "s": [None, None, None], "v": [np.nan] * 3})
    b = pd.concat([t, blanks], ignore_index=True)
    for fn in (t_closeness, basic_beta_likeness, delta_disclosure, enhanced_beta_likeness):
        for s in ("s", "v"):
            assert fn(b, ["k"], [s]).value == pytest.approx(fn(t, ["k"], [s]).value), (fn.__name__, s)
    r = t_closeness(b, ["k"], ["s"])
    assert r.blank_classes == 1 and r.n_classes == 3
    assert r.records_failing == pytest.approx(7 / 9)  # classes A (4 records) and B (3) fail, C (2) does not
    assert recursive_cl_diversity(b, ["k"], ["s"]).value == 0.0


def test_missing_key_values_strict_are_a_class_of_their_own() -> None:
    """blanks="strict" (pyCANON, ARX): the two records with a blank key form one class."""
    df = pd.DataFrame({"k": ["A", "A", None, None], "s": list("xyxx")})
    r = alpha_k_anonymity(df, ["k"], ["s"], k=1, blanks="strict")
    assert r.n_classes == 2 and r.value == 1.0 and r.blanks == "strict"  # the blank-key class holds x twice
    # wildcard (default), one key: a blank matches A, so both classes are all four records, x three times
    r = alpha_k_anonymity(df, ["k"], ["s"], k=1)
    assert r.n_classes == 2 and r.value == pytest.approx(0.75) and r.blanks == "wildcard"


def blank_key() -> pd.DataFrame:
    """One key with one blank; p(s): x 2/5, y 3/5.

    k = A, A, B, B, ·    s = x, y, y, y, x
    strict:   A {x, y}   B {y, y}   · {x}           (sizes 2, 2, 1)
    wildcard: A {x, y, x}  B {y, y, x}  · {all five}  (the blank matches A and B, and the single
              key's all-blank record counts for every record; sizes 3, 3, 5; each record's own
              class: A 2 records, B 2, · 1)
    """
    return pd.DataFrame({"k": ["A", "A", "B", "B", None], "s": list("xyyyx")})


def test_a_blank_key_is_a_wildcard_in_every_model() -> None:
    """t-closeness (equal distance), by hand on blank_key():
    strict   A ½(|.5−.4| + |.5−.6|) = 0.1, B ½(.4 + .4) = 0.4, · ½(.6 + .6) = 0.6 → 0.6;
             at t = 0.2 classes B and · fail: 3 of 5 records.
    wildcard A ½(|2/3−.4| + |1/3−.6|) = 4/15, B ½(|1/3−.4| + |2/3−.6|) = 1/15, · 0 → 4/15;
             at t = 0.2 class A fails, which is the own class of 2 records (not its 3 matched): 2/5.
    δ-disclosure:
    strict   A ln(.5/.4), ln(.6/.5); B ln(1/.6); · ln(1/.4) = ln 2.5 → ln 2.5
    wildcard A ln((2/3)/.4) = ln(5/3), ln(.6/(1/3)) = ln 1.8; B ln(10/9), ln 1.2; · 0 → ln 1.8
    (α,k): wildcard fk 3, 3, 5 (achieved_k 3), strict 2, 2, 1 — k_anonymity's fk under each reading."""
    from ppdm.metrics.keyvar import key_frequencies

    df = blank_key()
    w, st = t_closeness(df, ["k"], ["s"]), t_closeness(df, ["k"], ["s"], blanks="strict")
    assert w.value == pytest.approx(4 / 15) and w.records_failing == pytest.approx(2 / 5) and w.n_classes == 3
    assert st.value == pytest.approx(0.6) and st.records_failing == pytest.approx(3 / 5) and st.n_classes == 3
    assert sorted(w.per_class["size"]) == [3, 3, 5] and sorted(st.per_class["size"]) == [1, 2, 2]
    assert delta_disclosure(df, ["k"], ["s"]).value == pytest.approx(math.log(1.8))
    assert delta_disclosure(df, ["k"], ["s"], blanks="strict").value == pytest.approx(math.log(2.5))
    for reading, want in (("wildcard", 3), ("strict", 1)):
        r = alpha_k_anonymity(df, ["k"], ["s"], k=2, blanks=reading)
        assert r.achieved_k == want == int(key_frequencies(df, ["k"], blanks=reading).fk.min())
    # wildcard (c,2)-diversity: r_1/r_2 = 2 in A and B, 3/2 in ·; strict: B and · have one value
    assert recursive_cl_diversity(df, ["k"], ["s"]).c_needed == pytest.approx(2.0)
    assert recursive_cl_diversity(df, ["k"], ["s"], blanks="strict").value == pytest.approx(3 / 5)
    with pytest.raises(ParameterError, match="blanks"):
        basic_beta_likeness(df, ["k"], ["s"], blanks="any")


def test_wildcard_classes_are_l_diversitys_groups() -> None:
    """On random tables with blank keys (two keys, so the all-blank rule for complete records is
    exercised) and no blank sensitive value, a record's wildcard class holds as many distinct
    values as l_diversity's distinct l for it, and its size is the record's wildcard fk; without
    blank keys the wildcard cells are the exact classes'."""
    from ppdm.data.blanks import distinct_patterns
    from ppdm.metrics.keyvar import key_frequencies, l_diversity
    from ppdm.metrics.privacy_models import wildcard_sensitive_cells

    rng = np.random.default_rng(1)
    for _ in range(20):
        n = int(rng.integers(3, 25))
        df = pd.DataFrame({"a": rng.choice(["p", "q", None], n), "b": rng.choice(["u", "v", None], n),
                           "s": rng.choice(list("xyz"), n)})
        codes = key_codes(df, ["a", "b"])
        inv = distinct_patterns(codes)[2]
        c = wildcard_sensitive_cells(codes, df["s"])
        distinct = np.bincount(c.cls, minlength=c.n_classes)
        assert np.array_equal(distinct[inv], l_diversity(df, ["a", "b"], ["s"]).distinct_l["s"])
        assert np.array_equal(c.size[inv], key_frequencies(df, ["a", "b"]).fk)
        assert np.array_equal(c.members, np.bincount(inv)) and c.known.sum() >= n
        full = df.fillna("r")
        fc = key_codes(full, ["a", "b"])
        a, b = wildcard_sensitive_cells(fc, full["s"]), sensitive_cells(group_codes(fc), full["s"])
        ia, ib = distinct_patterns(fc)[2], group_codes(fc)
        assert np.allclose(equal_emd(a)[ia], equal_emd(b)[ib]) and np.array_equal(a.size[ia], b.size[ib])


def test_evaluate_reads_the_blanks_option() -> None:
    """``-p blanks=strict`` (every key-variable measure) and ``-p delta_disclosure.blanks=strict``
    give the strict result; the default reads the blank as a wildcard (blank_key() by hand)."""
    df = blank_key()
    sch = Schema(categorical=["k", "s"], quasi_identifiers=["k"], sensitive=["s"])
    for opts, want in (({}, math.log(1.8)), ({"blanks": "strict"}, math.log(2.5)),
                       ({"delta_disclosure.blanks": "strict"}, math.log(2.5))):
        ctx = measurement_context(df, df, sch, random_state=0, paired=True, options=opts)
        r = MEASURES["delta_disclosure"].fn(ctx)
        assert r.value == pytest.approx(want) and r.original == pytest.approx(want), opts
    for m in MODELS:
        assert "blanks" in MEASURES[m].options, m


def test_ordered_emd_is_its_definition() -> None:
    """The prefix-sum form against 1/(m−1) Σ_i |Σ_{j≤i} (q_j − p_j)| computed directly, and the
    equal-distance form against ½ Σ|q − p|, on random small tables with blanks."""
    rng = np.random.default_rng(0)
    for _ in range(60):
        n = int(rng.integers(2, 30))
        df = pd.DataFrame({"k": rng.integers(0, 4, n), "s": rng.integers(0, int(rng.integers(1, 7)), n).astype(float)})
        df.loc[rng.random(n) < 0.15, "s"] = np.nan
        g = group_codes(key_codes(df, ["k"]))
        emd_o = ordered_emd(sensitive_cells(g, df["s"], ordered=True))
        emd_e = equal_emd(sensitive_cells(g, df["s"]))
        vals = np.sort(df["s"].dropna().unique())
        if len(vals) == 0:
            continue
        p = np.array([(df["s"] == v).sum() for v in vals]) / df["s"].notna().sum()
        for c in range(int(g.max()) + 1):
            sub = df["s"][g == c].dropna()
            if sub.empty:
                assert emd_o[c] == 0.0 and emd_e[c] == 0.0
                continue
            q = np.array([(sub == v).sum() for v in vals]) / len(sub)
            want = 0.0 if len(vals) == 1 else np.abs(np.cumsum(q - p)).sum() / (len(vals) - 1)
            assert emd_o[c] == pytest.approx(want, abs=1e-12)
            assert emd_e[c] == pytest.approx(0.5 * np.abs(q - p).sum(), abs=1e-12)


def test_wrong_arguments_are_refused() -> None:
    t = tiny()
    with pytest.raises(MeasureNotApplicable, match="sensitive attribute"):
        t_closeness(t, ["k"], [])
    with pytest.raises(ParameterError, match="both a quasi-identifier"):
        delta_disclosure(t, ["k", "s"], ["s"])
    with pytest.raises(ParameterError, match="ground"):
        t_closeness(t, ["k"], ["s"], ground="hierarchical")
    with pytest.raises(ParameterError, match="not numeric"):
        t_closeness(t, ["k"], ["s"], ground="ordered")
    with pytest.raises(ParameterError, match="l must be an integer"):
        recursive_cl_diversity(t, ["k"], ["s"], l=0)
    with pytest.raises(ParameterError, match="c must be a number"):
        recursive_cl_diversity(t, ["k"], ["s"], c=0)
    with pytest.raises(ParameterError, match="alpha"):
        alpha_k_anonymity(t, ["k"], ["s"], alpha=1.5)
    with pytest.raises(ParameterError, match="beta"):
        basic_beta_likeness(t, ["k"], ["s"], beta=-1)


def test_per_class_detail_stays_out_of_reports() -> None:
    r = t_closeness(tiny(), ["k"], ["s", "v"])
    assert len(r.per_class) == 4 and set(r.per_class.columns) == {"sensitive", "size", "known", "emd"}
    d = r.to_dict()
    assert "per_class" not in d and "per_class" not in r.details()
    assert "x" not in json.dumps(d["per_sensitive"])  # no sensitive value, no key value


# ------------------------------------------------------------------- releases built to break
SCH = Schema(categorical=["g", "s"], quasi_identifiers=["g"], sensitive=["s"])


def safe_table() -> pd.DataFrame:
    """Ten classes of eight records, each holding w, x, y, z twice: every class's distribution is
    the table's (t = 0, β = 0, δ = 0, α = 1/4, counts 2, 2, 2, 2 are (3,2)-diverse)."""
    return pd.DataFrame({"g": np.repeat([f"g{i}" for i in range(10)], 8), "s": list("wxyzwxyz") * 10})


def _judged(x: pd.DataFrame, z: pd.DataFrame) -> dict[str, dict]:
    ctx = measurement_context(x, z, SCH, random_state=0, paired=True)
    doc = evaluation_document(evaluate_measures(ctx, [MEASURES[m] for m in MODELS]))
    return {j["measure"]: j for j in doc["summary"]["risk"]["judged"]} | {"_status": doc["summary"]["risk"]}


def test_a_safe_release_meets_every_model() -> None:
    x = safe_table()
    j = _judged(x, x)
    for m in MODELS:
        assert j[m]["judgement"] == "meets", (m, j[m])
    assert j["alpha_k_anonymity"]["value"] == pytest.approx(0.25)


def test_a_class_of_one_sensitive_value_misses_every_model() -> None:
    """Class g0 gives x to everyone in it: p(x) = (8 + 9·2)/80 = 0.325, so t = 1 − 0.325 = 0.675,
    α = 1, β = (1 − 0.325)/0.325 = 2.08 (enhanced: the same over min(1, −ln 0.325 = 1.12)),
    δ = ln(1/0.325) = 1.12, and the class (10 % of the records) is not (3,2)-diverse."""
    x = safe_table()
    z = x.copy()
    z.loc[z["g"] == "g0", "s"] = "x"
    j = _judged(x, z)
    want = {"t_closeness": 0.675, "recursive_cl_diversity": 0.1, "alpha_k_anonymity": 1.0,
            "basic_beta_likeness": 0.675 / 0.325, "enhanced_beta_likeness": 0.675 / 0.325,
            "delta_disclosure": -math.log(0.325)}
    for m, v in want.items():
        assert j[m]["judgement"] == "misses", (m, j[m])
        assert j[m]["value"] == pytest.approx(v), m
    assert j["_status"]["status"] == "high"


def test_a_small_class_misses_alpha_k_anonymity() -> None:
    """Class g0 split in two classes of four records each keeps the distribution (α = 1/4) but
    breaks k = 5: those classes count as α = 1 (the new label is no generalisation of g0, so the
    key is counted as released: all_keys)."""
    x = safe_table()
    z = x.copy()
    z.loc[z.index[:4], "g"] = "g0a"
    ctx = measurement_context(x, z, SCH, random_state=0, paired=True, options={"alpha_k_anonymity.k": 5, "alpha_k_anonymity.all_keys": True})
    r = MEASURES["alpha_k_anonymity"].fn(ctx)
    assert r.value == 1.0 and r.achieved_k == 4 and r.achieved_alpha == pytest.approx(0.25)
    assert r.original == pytest.approx(0.25)  # x is 8-anonymous


def test_without_a_sensitive_attribute_the_models_are_not_measured() -> None:
    x = safe_table()
    sch = Schema(categorical=["g", "s"], quasi_identifiers=["g"])
    ctx = measurement_context(x, x, sch, random_state=0, paired=True)
    out = evaluate_measures(ctx, [MEASURES[m] for m in MODELS])
    for m in MODELS:
        assert out[m].skipped and "sensitive attribute" in out[m].reason, m


def test_registered_as_sensitive_scenario_measures() -> None:
    for m in MODELS:
        spec = MEASURES[m]
        assert spec.kind == "risk" and spec.direction == "lower" and spec.scenario == "sensitive"
        assert spec.threshold is not None and "sensitive" in spec.options


def test_ppdm_measures_lists_them() -> None:
    res = CliRunner().invoke(app, ["measures", "--json"])
    assert res.exit_code == 0, res.output
    listed = json.loads(res.stdout)["measures"]
    for m in MODELS:
        assert listed[m]["scenario"] == "sensitive" and listed[m]["threshold"] == MEASURES[m].threshold


def test_a_recommend_policy_takes_them_as_risk_lines() -> None:
    from ppdm.experiments.policy import parse_policy

    pol = parse_policy({"risk": {"t_closeness": {"at_most": 0.15, "options": {"ground": "equal"}},
                                 "alpha_k_anonymity": {"at_most": 0.6, "options": {"k": 5}}},
                        "utility": {"priority": "auc"}})
    assert {ln.measure for ln in pol.risk} == {"t_closeness", "alpha_k_anonymity"}
    assert pol.rules_out("t_closeness") is False
    assert parse_policy({"risk": {"delta_disclosure": 1.0}, "utility": {"priority": "auc"},
                         "rule_out": ["originals"]}).rules_out("delta_disclosure") is False
    with pytest.raises(ParameterError, match="at_most"):
        parse_policy({"risk": {"t_closeness": {"at_least": 0.1}}, "utility": {"priority": "auc"}})
    with pytest.raises(ParameterError, match="sensitve"):
        parse_policy({"risk": {"t_closeness": {"at_most": 0.2, "options": {"sensitve": "income"}}},
                      "utility": {"priority": "auc"}})
