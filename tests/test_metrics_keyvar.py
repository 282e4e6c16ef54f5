"""Key-variable risk: fk/Fk, individual and global re-identification risk, k-anonymity,
sample uniques and l-diversity — hand-computed tables, properties, and parity with sdcMicro
5.8.1 (freqCalc, measure_risk, ldiversity) on both oracle tables."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ppdm.data.schema import Schema
from ppdm.errors import MeasureNotApplicable, ParameterError, PPDMError, SchemaError
from ppdm.experiments.evaluation import load_all_measures
from ppdm.metrics import MEASURES, EvaluationContext
from ppdm.metrics.keyvar import (
    individual_risk,
    infer_quasi_identifiers,
    k_anonymity,
    key_frequencies,
    l_diversity,
    reidentification_risk,
    sample_uniques,
)

REL = 1e-9


def _table() -> pd.DataFrame:
    # keys (a, b): groups (1,x) ×2, (1,y) ×1, (2,y) ×3
    return pd.DataFrame({
        "a": [1, 1, 1, 2, 2, 2],
        "b": ["x", "x", "y", "y", "y", "y"],
        "w": [10.0, 30.0, 5.0, 2.0, 2.0, 4.0],
        "s": ["A", "A", "B", "A", "B", None],
    })


# ------------------------------------------------------------------ hand-computed
def test_frequencies_by_hand():
    kf = key_frequencies(_table(), ["a", "b"], weight="w")
    assert kf.fk.tolist() == [2, 2, 1, 3, 3, 3]
    assert kf.Fk.tolist() == [40, 40, 5, 8, 8, 8]
    kf = key_frequencies(_table(), ["a", "b"])
    assert kf.Fk.tolist() == kf.fk.tolist()


def test_individual_risk_by_hand():
    r = reidentification_risk(_table(), ["a", "b"], weight="w")
    # fk = 2, Fk = 40: p = 0.05, r = p/(1-p) - (p/(1-p))^2 log(1/p)
    p = 0.05
    r2 = p / (1 - p) - (p / (1 - p)) ** 2 * math.log(1 / p)
    # fk = 1, Fk = 5: p = 0.2, r = p/(1-p) log(1/p) = 0.25 log 5
    r1 = 0.25 * math.log(5)
    # fk = 3, Fk = 8: p = 0.375, r = p / (fk - (1-p)) = 0.375 / 2.375
    r3 = 0.375 / 2.375
    expected = [r2, r2, r1, r3, r3, r3]
    assert r.risk == pytest.approx(expected, rel=1e-12)
    assert r.expected_reidentifications == pytest.approx(sum(expected), rel=1e-12)
    assert r.value == pytest.approx(sum(expected) / 6, rel=1e-12)
    assert r.global_risk_pct == pytest.approx(100 * sum(expected) / 6, rel=1e-12)
    assert r.sample_uniques == 1 and r.n_combinations == 3


def test_individual_risk_without_weights_is_one_over_fk():
    r = reidentification_risk(_table(), ["a", "b"])
    assert r.risk == pytest.approx([1 / 2, 1 / 2, 1, 1 / 3, 1 / 3, 1 / 3])
    assert r.expected_reidentifications == pytest.approx(3.0)  # one per key combination
    assert r.value == pytest.approx(0.5)


def test_individual_risk_when_the_sample_is_the_population_of_its_key():
    # Fk = fk (weights 1): r = 1/fk whatever the formula for fk would say
    assert individual_risk(np.array([1.0, 2.0, 4.0]), np.array([1.0, 2.0, 4.0])).tolist() == [1, 0.5, 0.25]


def test_k_anonymity_and_uniques_by_hand():
    r = k_anonymity(_table(), ["a", "b"], k=3)
    assert (r.violations, r.sample_uniques, r.achieved_k, r.n_combinations) == (3, 1, 1, 3)
    assert r.value == pytest.approx(0.5)
    assert k_anonymity(_table(), ["a", "b"], k=1).value == 0
    assert k_anonymity(_table(), ["a"], k=3).value == 0  # a alone: two groups of 3
    u = sample_uniques(_table(), ["a", "b"])
    assert u.sample_uniques == 1 and u.value == pytest.approx(1 / 6)
    assert u.unique.tolist() == [False, False, True, False, False, False]
    # without b every group has 3 records: the one unique disappears
    per = u.per_key.set_index("key")
    assert per.loc["b", "uniques_without"] == 0 and per.loc["a", "uniques_without"] == 0
    assert per.loc["b", "distinct_values"] == 2


def test_l_diversity_by_hand():
    r = l_diversity(_table(), ["a", "b"], "s")
    # (1,x): {A}; (1,y): {B}; (2,y): {A, B, missing} = 3 (missing counts as a value beside others)
    assert r.distinct_l["s"].tolist() == [1, 1, 1, 3, 3, 3]
    assert r.entropy_l["s"] == pytest.approx([1, 1, 1, 3, 3, 3])
    assert r.value == 1
    row = r.per_sensitive.iloc[0]
    assert row["min_distinct_l"] == 1 and row["records_below_l_target"] == pytest.approx(0.5)
    # entropy l of a 2:1 split: exp(-(2/3 ln 2/3 + 1/3 ln 1/3))
    t = pd.DataFrame({"k": [1, 1, 1], "s": ["u", "u", "v"]})
    r = l_diversity(t, ["k"], ["s"])
    assert r.entropy_l["s"][0] == pytest.approx(math.exp(-(2 / 3 * math.log(2 / 3) + 1 / 3 * math.log(1 / 3))))
    assert r.value == 2


def test_numeric_keys_compare_by_value():
    t = pd.DataFrame({"age": [30.0, 30.0, 30.000001, 41.0], "sex": ["f", "f", "f", "m"]})
    assert key_frequencies(t, ["age", "sex"]).fk.tolist() == [2, 2, 1, 1]


# ------------------------------------------------------------- missing key values
def test_missing_key_matches_every_value():
    t = pd.DataFrame({"a": [1, 1, 2, np.nan], "b": ["x", "y", "x", "x"]})
    kf = key_frequencies(t, ["a", "b"])
    # (nan, x) matches (1,x) and (2,x): fk 3; each of those gets the wildcard record too
    assert kf.fk.tolist() == [2, 1, 2, 3]


def test_all_missing_keys_match_everybody_but_add_to_no_complete_key():
    t = pd.DataFrame({"a": [1, 2, np.nan, 1], "b": ["x", "y", None, None]})
    kf = key_frequencies(t, ["a", "b"], weight=None)
    # row 2 has no key at all: fk = n; row 3 (1, ?) matches rows 0 and 2 (the all-missing one)
    # row 0 (1,x) matches row 3 only (all-missing rows do not count for complete keys)
    assert kf.fk.tolist() == [2, 1, 4, 3]


def _brute_wildcard(codes: np.ndarray) -> np.ndarray:
    """sdcMicro's rule written out pair by pair: i and j match when they agree on every key
    both have; an all-missing record counts for a complete one only with a single key."""
    n, m = codes.shape
    miss = codes < 0
    fk = np.zeros(n)
    for i in range(n):
        if miss[i].all():
            fk[i] = n
            continue
        for j in range(n):
            both = ~miss[i] & ~miss[j]
            if not (codes[i, both] == codes[j, both]).all():
                continue
            if m > 1 and miss[j].all() and not miss[i].any():
                continue
            fk[i] += 1
    return fk


@given(st.lists(st.tuples(st.integers(-1, 2), st.integers(-1, 2), st.integers(-1, 1)), min_size=1, max_size=25),
       st.integers(1, 3))
def test_wildcard_frequencies_match_pairwise_definition(rows, m):
    codes = np.array(rows, dtype=float)[:, :m]
    codes[codes < 0] = np.nan
    t = pd.DataFrame(codes, columns=[f"k{j}" for j in range(m)])
    kf = key_frequencies(t, list(t.columns))
    assert kf.fk.tolist() == _brute_wildcard(np.nan_to_num(codes, nan=-1).astype(int)).tolist()


# -------------------------------------------------------------------- properties
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2), st.integers(1, 50)), min_size=1, max_size=60))
def test_frequency_invariants(rows):
    t = pd.DataFrame(rows, columns=["a", "b", "w"])
    kf = key_frequencies(t, ["a", "b"], weight="w")
    n_groups = len(set(zip(t["a"], t["b"], strict=True)))
    assert np.sum(1.0 / kf.fk) == pytest.approx(n_groups)  # each group adds fk · 1/fk = 1
    assert np.all(kf.Fk >= kf.fk)  # weights ≥ 1
    assert kf.Fk.tolist() == pytest.approx(t.groupby(["a", "b"])["w"].transform("sum").tolist())
    r = reidentification_risk(t, ["a", "b"], "w")
    assert np.all((r.risk >= 0) & (r.risk <= 1 + 1e-12))
    # unweighted risk is never below the weighted one: a population only adds candidates
    r0 = reidentification_risk(t, ["a", "b"])
    assert np.all(r.risk <= r0.risk + 1e-12)
    perm = np.random.default_rng(len(rows)).permutation(len(t))
    kp = key_frequencies(t.iloc[perm], ["a", "b"], weight="w")
    assert kp.fk.tolist() == kf.fk[perm].tolist()


@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=1, max_size=40), st.integers(1, 6))
def test_k_anonymity_monotone_in_k(rows, k):
    t = pd.DataFrame(rows, columns=["a", "b"])
    lo, hi = k_anonymity(t, ["a", "b"], k=k), k_anonymity(t, ["a", "b"], k=k + 1)
    assert lo.violations <= hi.violations
    assert (lo.violations == 0) == (lo.achieved_k >= k)
    assert k_anonymity(t, ["a"], k=k).violations <= lo.violations  # fewer keys, larger groups


# --------------------------------------------------------------------- bad input
def test_no_keys_says_how_to_declare_them():
    with pytest.raises(MeasureNotApplicable, match="--qi"):
        k_anonymity(_table(), [])


@pytest.mark.parametrize(("value", "match"), [(np.nan, "missing"), (0.0, "zero or negative"),
                                              (-2.0, "zero or negative")])
def test_bad_weights_are_refused_in_one_sentence(value, match):
    t = _table()
    t.loc[3, "w"] = value
    with pytest.raises(SchemaError, match=match) as e:
        reidentification_risk(t, ["a", "b"], weight="w")
    msg = str(e.value)
    assert "'w'" in msg and msg.count(". ") == 0 and "\n" not in msg


def test_weight_column_must_exist_and_give_population_at_least_the_sample():
    with pytest.raises(SchemaError, match="'nope'"):
        reidentification_risk(_table(), ["a", "b"], weight="nope")
    t = _table().assign(w=0.5)
    with pytest.raises(PPDMError, match="population frequency Fk below"):
        reidentification_risk(t, ["a", "b"], weight="w")


def test_bad_parameters():
    with pytest.raises(ParameterError):
        k_anonymity(_table(), ["a"], k=0)
    with pytest.raises(SchemaError, match="'zz'"):
        k_anonymity(_table(), ["a", "zz"])
    with pytest.raises(MeasureNotApplicable, match="sensitive"):
        l_diversity(_table(), ["a"], [])
    with pytest.raises(ParameterError, match="both"):
        l_diversity(_table(), ["a", "s"], ["s"])


# ----------------------------------------------------------- registered measures
def _ctx(**schema_kw) -> EvaluationContext:
    x = _table()
    z = x.copy()
    z.loc[2, "b"] = "x"  # the release merges the unique into group (1, x)
    sch = Schema(numeric=["a"], categorical=["b", "s"], weight="w", **schema_kw)
    # b is perturbed in record 2, which leaves it out unless every key is asked for
    return EvaluationContext(x=x, z=z, schema=sch)


def _all_keys(ctx: EvaluationContext) -> EvaluationContext:
    for name in ("k_anonymity", "sample_uniques", "reidentification_risk", "l_diversity", "suda2"):
        ctx.options[f"{name}.all_keys"] = True
    return ctx


def test_registered_measures_evaluate_the_release_and_show_the_original():
    load_all_measures()
    ctx = _all_keys(_ctx(quasi_identifiers=["a", "b"], sensitive=["s"]))
    ka = MEASURES["k_anonymity"].fn(ctx)
    assert ka.value == 0 and ka.original == pytest.approx(0.5)  # z: groups of 3 and 3
    su = MEASURES["sample_uniques"].fn(ctx)
    assert su.value == 0 and su.original == pytest.approx(1 / 6)
    rr = MEASURES["reidentification_risk"].fn(ctx)
    assert rr.weight == "w" and rr.Fk.tolist() == [45, 45, 45, 8, 8, 8]
    assert MEASURES["l_diversity"].fn(ctx).value == 2  # z's (1,x) group holds A and B
    for name in ("k_anonymity", "sample_uniques", "reidentification_risk", "l_diversity", "suda2"):
        spec = MEASURES[name]
        assert spec.kind == "risk" and spec.direction in ("lower", "higher") and spec.value_range[0] is not None


def test_registered_measures_infer_categorical_quasi_identifiers_or_are_not_applicable():
    load_all_measures()
    ctx = _all_keys(_ctx(sensitive=["s"]))
    # nothing declared: the categorical attributes that are neither class nor sensitive
    assert infer_quasi_identifiers(ctx.schema, ctx.z) == ["b"]
    ka = MEASURES["k_anonymity"].fn(ctx)
    assert ka.keys == ["b"] and ka.key_source == "inferred"
    assert ka.value == 0  # z: b takes "x" three times and "y" three times
    # a categorical column with a distinct value in most records is no key
    z = ctx.z.assign(b=[f"v{i}" for i in range(6)])
    assert infer_quasi_identifiers(ctx.schema, z) == []
    ctx = _all_keys(_ctx(sensitive=["s"]))
    ctx.options["infer_keys"] = "false"
    for name in ("k_anonymity", "sample_uniques", "reidentification_risk", "l_diversity", "suda2"):
        with pytest.raises(MeasureNotApplicable, match="quasi_identifiers"):
            MEASURES[name].fn(ctx)
    ctx.options.pop("infer_keys")
    ctx.options["keys"] = "a,b"  # an explicit option works too
    assert MEASURES["k_anonymity"].fn(ctx).keys == ["a", "b"]
    ctx.options["k_anonymity.k"] = 4
    assert MEASURES["k_anonymity"].fn(ctx).k == 4


def test_results_never_serialise_records():
    r = reidentification_risk(_table(), ["a", "b"], "w")
    d = r.to_dict()
    assert not {"fk", "Fk", "risk"} & set(d)
    assert "fk=" not in repr(r) and r.risk is not None
    json.dumps(d)


# ------------------------------------------------------------- sdcMicro parity
def _oracle(shared_dir, name: str):
    meta = json.loads((shared_dir / "oracles" / "sdcmicro" / f"{name}_risk.json").read_text())
    df = pd.read_csv(shared_dir / "datasets" / f"{name}.csv")
    if name == "adult":
        df = df.dropna().reset_index(drop=True)
    ref = pd.read_csv(shared_dir / "oracles" / "sdcmicro" / f"{name}_risk.csv")
    assert len(df) == len(ref) == meta["n"]
    return df, ref, meta


@pytest.mark.parametrize("name", ["testdata", "adult"])
def test_parity_with_sdcmicro_measure_risk(shared_dir, name):
    df, ref, meta = _oracle(shared_dir, name)
    r = reidentification_risk(df, meta["keys"], meta["weight"])
    np.testing.assert_array_equal(r.fk, ref["fk"].to_numpy())
    np.testing.assert_allclose(r.Fk, ref["Fk"].to_numpy(), rtol=REL, atol=0)
    np.testing.assert_allclose(r.risk, ref["individual_risk"].to_numpy(), rtol=REL, atol=0)
    assert r.value == pytest.approx(meta["global_risk"], rel=REL)
    assert r.expected_reidentifications == pytest.approx(meta["global_risk_ER"], rel=REL)
    assert r.global_risk_pct == pytest.approx(meta["global_risk_pct"], rel=REL)
    ka = k_anonymity(df, meta["keys"], meta["k"])
    assert ka.violations == meta["violations_k"] and ka.sample_uniques == meta["sample_uniques"]
    assert k_anonymity(df, meta["keys"], 2).violations == meta["violations_2"]
    ld = l_diversity(df, meta["keys"], meta["sensitive"])
    np.testing.assert_array_equal(ld.distinct_l[meta["sensitive"]], ref["distinct_l"].to_numpy())
    assert ld.value == meta["min_distinct_l"]


# ------------------------------------------------------------------ command line
def test_evaluate_runs_key_variable_risk_and_explains_missing_quasi_identifiers(tmp_path):
    from typer.testing import CliRunner

    from ppdm.cli.app import app

    x = pd.DataFrame({"age": [30, 30, 41, 41, 52], "sex": ["f", "f", "m", "m", "f"], "y": list("ababa")})
    xp = tmp_path / "x.csv"
    x.to_csv(xp, index=False)
    runner = CliRunner()
    r = runner.invoke(app, ["evaluate", "-x", str(xp), "-z", str(xp), "--class", "y", "--measures",
                            "k_anonymity,sample_uniques,record_linkage", "-p", "keys=age,sex", "-p",
                            "k_anonymity.k=2", "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    m = out["measures"]
    assert m["k_anonymity"]["value"] == pytest.approx(0.2)  # the 52-year-old is alone: fk = 1 < 2
    assert m["sample_uniques"]["value"] == pytest.approx(0.2)
    assert "fk" not in m["k_anonymity"]["details"]  # no per-record detail in the output
    assert "\"fk\"" not in r.stdout
    r = runner.invoke(app, ["evaluate", "-x", str(xp), "-z", str(xp), "--class", "y", "--measures", "k_anonymity"])
    assert r.exit_code == 2
    assert "--qi" in r.output and "quasi_identifiers" in r.output and "Traceback" not in r.output
    assert len(r.output.strip().splitlines()) == 1


def test_given_frequencies_give_the_same_result_and_are_checked() -> None:
    """Hand-computed: keys (a, b) give groups {0,1}, {2}, {3}: fk = 2, 2, 1, 1."""
    from ppdm.metrics.keyvar import key_frequencies

    df = pd.DataFrame({"a": ["u", "u", "v", "v"], "b": ["p", "p", "p", "q"]})
    kf = key_frequencies(df, ["a", "b"])
    assert list(kf.fk) == [2, 2, 1, 1]
    ka = k_anonymity(df, ["a", "b"], 2, frequencies=kf, per_key=False)
    assert ka.value == 0.5 and ka.per_key.empty
    assert not k_anonymity(df, ["a", "b"], 2).per_key.empty
    su = sample_uniques(df, ["a", "b"], frequencies=kf)
    assert su.value == 0.5 and su.sample_uniques == 2
    assert reidentification_risk(df, ["a", "b"], frequencies=kf).value == pytest.approx((0.5 + 0.5 + 1 + 1) / 4)
    with pytest.raises(ParameterError, match="same table"):
        k_anonymity(df, ["a"], 2, frequencies=kf)
