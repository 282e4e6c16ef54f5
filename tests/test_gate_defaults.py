"""Each technique's defaults on the shipped tables pass the release gate, or are known not to
(issue 28 §4): the matrix of :mod:`gate_defaults`, with what it says when they do not."""

from __future__ import annotations

import warnings

import pytest
from gate_defaults import EXPECTED, NAMED_SETTINGS, QUICK, default_release, expected

from ppdm.anonymize import make_technique
from ppdm.anonymize.rounding import DEFAULT_C, Rounding
from ppdm.experiments.release import ReleaseRefused, ReleaseWarning, release


# ------------------------------------------------------------------ the defaults changed for the gate
@pytest.mark.parametrize("table", QUICK)
@pytest.mark.parametrize("method", ["mdav", "rounding"])
def test_mdav_and_rounding_defaults_on_small_tables(method: str, table: str) -> None:
    """MDAV (k = 10) and rounding (c = 5) pass on wine, and on wbc and tarragona where the old
    defaults were refused, but not on cmc, whose seven categorical attributes of nine neither
    touches (the refusal stays, and is expected)."""
    got = default_release(table, method)
    want = expected(table, method)
    assert got.status == want, (table, method, got)


def test_the_old_rounding_default_is_refused_where_the_new_one_passes() -> None:
    """The Freedman–Diaconis rule gives wbc's attributes (whole numbers 1…10) ten points or
    more each, so rounding changes next to nothing: 10 % of the records come out verbatim and
    unique in x (refused above 5 %); five points leave 1.6 %."""
    from gate_defaults import shipped

    x, sch = shipped("wbc")
    with pytest.raises(ReleaseRefused, match="come out unchanged on every column"):
        release(x, make_technique("rounding", class_column=sch.class_column, schema=sch, random_state=1,
                                  params={"c": "fd"}))
    assert default_release("wbc", "rounding").status == "pass"


def test_a_rounding_refusal_names_a_coarser_set_that_passes() -> None:
    """cmc: c = 5 leaves 7.3 % of the records near-verbatim and unique (its categorical
    attributes single them out); the refusal names the c that passes, found by the search (4)."""
    from gate_defaults import shipped

    x, sch = shipped("cmc")
    with pytest.raises(ReleaseRefused, match=r"c ≤ 4 passes on this table \(now 5\)"):
        release(x, make_technique("rounding", class_column=sch.class_column, schema=sch, random_state=1))


def test_rounding_strength_setting_follows_the_size_in_use() -> None:
    """The gate's search varies c by default (5, down to 2), c or k when given, and nothing
    when the data choose the size; MDAV's is its k (10 by default)."""
    from ppdm.anonymize import MDAV

    assert MDAV().strength_setting() == ("k", "increasing", None, 10)
    assert Rounding().strength_setting() == ("c", "decreasing", 2, DEFAULT_C) and DEFAULT_C == 5
    assert Rounding(c=10).strength_setting() == ("c", "decreasing", 2, 10)
    assert Rounding(k=20).strength_setting() == ("k", "increasing", None, 20)
    for params in ({"c": "fd"}, {"k": "fd"}, {"method": "base"}, {"method": "mdlp"}, {"method": "chimerge"}):
        assert Rounding(**params).strength_setting() is None, params
    assert Rounding(method="chimerge", c=4).strength_setting() == ("c", "decreasing", 2, 4)


def test_rounding_default_size_is_recorded() -> None:
    """Ten values 1…10 and no size given: five points, groups of ⌈10/5⌉ = 2 (optimal)."""
    import pandas as pd

    t = Rounding(method="optimal").fit(pd.DataFrame({"a": [float(v) for v in range(1, 11)]}))
    assert t.sizes_["a"] == {"k": 2, "c": 5, "rule": "default"}
    assert t.rounding_sets_["a"].tolist() == [1.5, 3.5, 5.5, 7.5, 9.5]


@pytest.mark.slow
def test_mdav_k3_is_refused_on_adult_and_the_default_passes() -> None:
    """adult: MDAV with k = 3 leaves 10.4 % of the records within 0.01 standard deviations of
    their original while unique in x (refused above 5 %); the default k = 10 leaves 2.2 %."""
    from gate_defaults import shipped

    from ppdm.metrics.release_check import GateOptions

    x, sch = shipped("adult")
    with pytest.raises(ReleaseRefused, match="within 0.01 standard deviations"):
        release(x, make_technique("mdav", class_column=sch.class_column, schema=sch, params={"k": 3}),
                gate_options=GateOptions(suggest=False))
    assert default_release("adult", "mdav").status == "pass"


def test_the_search_varies_each_documented_protective_parameter() -> None:
    """The Framework's search varies sigma_frac (numbers) and p_cat (categories), Random Technique's
    sigma_frac and p_rt, the Forest Framework's sigma_frac and swap_prob (already at its limit 1 by
    default, so the ladder is empty); MDAV has one, k."""
    from ppdm.anonymize import MDAV
    from ppdm.anonymize.forest_framework import ForestFramework
    from ppdm.anonymize.framework import Framework
    from ppdm.anonymize.random_technique import RandomTechnique
    from ppdm.experiments.release import stronger_values

    assert Framework().strength_settings() == [("sigma_frac", "increasing", 2.0, 1 / 6, "numeric"),
                                               ("p_cat", "increasing", 1.0, 0.1, "categorical")]
    assert [s[0] for s in RandomTechnique().strength_settings()] == ["sigma_frac", "p_rt"]
    assert [s[0] for s in ForestFramework().strength_settings()] == ["sigma_frac", "swap_prob"]
    assert stronger_values(1.0, "increasing", 1.0) == []
    assert MDAV().strength_settings() == [("k", "increasing", None, 10, "all")]
    assert Rounding(c="fd").strength_settings() == []


@pytest.mark.slow
def test_a_framework_refusal_on_cmc_names_a_categorical_setting_that_passes() -> None:
    """cmc: the Framework's default is refused on categorical quasi-identifiers (10.4 %
    near-verbatim and unique); the search tries p_cat before sigma_frac and names p_cat ≥ 0.38
    (NAMED_SETTINGS, which passes: test_the_settings_the_refusals_name_pass)."""
    from gate_defaults import SEED, shipped

    x, sch = shipped("cmc")
    with pytest.raises(ReleaseRefused, match=r"p_cat ≥ 0\.38 passes on this table \(now 0\.1\)"):
        release(x, make_technique("framework", class_column=sch.class_column, schema=sch, random_state=SEED))
    assert NAMED_SETTINGS[("cmc", "framework")] == {"p_cat": 0.38}


@pytest.mark.slow
@pytest.mark.parametrize("table,method", sorted(NAMED_SETTINGS))
def test_the_settings_the_refusals_name_pass(table: str, method: str) -> None:
    """Where a refusal of a default names a setting found by the gate's search, that setting
    passes on that table (same seed)."""
    assert expected(table, method) == "refused"
    got = default_release(table, method, params=NAMED_SETTINGS[(table, method)])
    assert got.status == "pass", (table, method, got)


# -------------------------------------------------------------------------------- the whole matrix
@pytest.mark.slow
@pytest.mark.parametrize("table,method", sorted(EXPECTED))
def test_every_default_on_every_shipped_table(table: str, method: str) -> None:
    """Every technique × shipped table: the verdict is the recorded one (``EXPECTED``); a
    technique that starts passing, or stops, changes this test on purpose."""
    got = default_release(table, method)
    assert got.status == expected(table, method), (table, method, got)


@pytest.mark.slow
@pytest.mark.parametrize("table,method", sorted(k for k, v in EXPECTED.items() if v != "pass"))
def test_every_refusal_says_what_passes(table: str, method: str) -> None:
    """Every default that does not pass says why in the words recorded in ``NOT_PASSING``: the
    parameter or the chain that passes, or what the table lacks."""
    from gate_defaults import expected_message

    got = default_release(table, method)
    assert expected_message(table, method) in got.message, (table, method, got.message)


# ------------------------------------------------------------------ random substitution's default γ
def test_random_substitution_default_gamma_passes_and_a_weak_gamma_is_refused_naming_one_that_passes() -> None:
    """wbc (values 1…10, so each attribute's distinct values are its domain): the default γ = 5
    keeps a value with probability 5/(5 + 10 − 1) = 5/14 per attribute, and no record comes out
    verbatim on all nine. γ = 1000 keeps 1000/1009 ≈ 99 % per attribute, 92 % of the records on all
    nine (0.991⁹): refused as almost the original, and the refusal names a γ found by the gate's
    search, which passes when given."""
    import re

    from gate_defaults import shipped

    from ppdm.anonymize.random_substitution import DEFAULT_GAMMA, RandomSubstitution

    assert RandomSubstitution().strength_setting() == ("gamma", "decreasing", 1.5, DEFAULT_GAMMA)
    assert RandomSubstitution(rho1=0.05, rho2=0.5).strength_setting() is None
    assert default_release("wbc", "random-substitution").status == "pass"
    x, sch = shipped("wbc")
    with pytest.raises(ReleaseRefused, match=r"gamma ≤ [\d.]+ passes on this table \(now 1000\)") as e:
        release(x, make_technique("random-substitution", class_column=sch.class_column, schema=sch,
                                  random_state=1, params={"gamma": 1000.0}))
    named = float(re.search(r"gamma ≤ ([\d.]+) passes", str(e.value)).group(1))  # type: ignore[union-attr]
    assert 1.5 <= named < 1000
    with warnings.catch_warnings():
        # the named γ passes; whether the gate also warns under its refusal line is not the point here
        warnings.simplefilter("ignore", ReleaseWarning)
        release(x, make_technique("random-substitution", class_column=sch.class_column, schema=sch,
                                  random_state=1, params={"gamma": named}))


# ------------------------------------------------------------------------------ PRAM's refusal
def test_pram_default_on_cmc_is_refused_naming_the_chain_that_passes() -> None:
    """cmc: sdcMicro's pd = 0.8 and alpha = 0.5 keep most categories (53.5 % of the records
    verbatim and unique, refused above 5 %); the refusal names recode then pram, which passes."""
    got = default_release("cmc", "pram")
    assert got.status == "refused" and got.rule == "verbatim_unique" and got.share > 0.5
    assert "--method recode --then pram passes" in got.message
    assert chain_release("cmc", ["recode", "pram"]).status == "pass"


# ------------------------------------------------------------------- top and bottom coding's refusal
def test_top_bottom_coding_alone_is_refused_naming_the_chain_that_passes() -> None:
    """Top coding at the 99th percentile changes about 1 % of each numeric attribute: cmc's
    release is 99.5 % the original (refused from 95 %). The refusal names top-bottom-coding then
    recode, which passes."""
    got = default_release("cmc", "top-bottom-coding")
    assert got.status == "refused" and got.rule == "unchanged" and got.share > 0.99
    assert "--method top-bottom-coding --then recode passes" in got.message
    assert chain_release("cmc", ["top-bottom-coding", "recode"]).status == "pass"


def chain_release(table: str, methods: list[str]):  # type: ignore[no-untyped-def]
    """The gate's verdict on ``methods`` composed with their defaults (as ``--method A --then B``)."""
    import warnings

    from gate_defaults import SEED, Outcome, shipped

    from ppdm.anonymize.composition import make_composition
    from ppdm.metrics.release_check import GateOptions, gate

    x, sch = shipped(table)
    tech = make_composition(methods, params={}, class_column=sch.class_column, random_state=SEED, schema=sch)
    opts = GateOptions(allow_unchanged=True, allow_verbatim=True, allow_untouched_keys=True,
                       allow_pass_through=tuple(map(str, x.columns)), suggest=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = release(x, tech, schema=sch, gate_options=opts)
    refusals = [f for f in gate(rel.check) if f.level == "refuse"]
    return Outcome("refused", refusals[0].rule, refusals[0].share, refusals[0].message) if refusals else Outcome("pass")


@pytest.mark.slow
@pytest.mark.parametrize("table,chain", [
    *[(t, ("top-bottom-coding", "recode")) for t in ("wine", "boston", "credit", "wbc", "tarragona", "banknote",
                                                   "abalone", "cascrefmicrodata", "testdata")],
    *[(t, ("recode", "pram")) for t in ("credit", "abalone", "testdata")],
    *[(t, ("recode", "local-suppression")) for t in ("banknote", "cmc", "abalone")],
])
def test_the_chains_the_refusals_name_pass(table: str, chain: tuple[str, ...]) -> None:
    """Where a refusal names a chain, the chain passes on that table (the cheap ones run above)."""
    assert chain_release(table, list(chain)).status == "pass", (table, chain)


# ------------------------------------------------------- local suppression's keys refused up front
def test_local_suppression_refuses_measured_keys_up_front() -> None:
    """k = 3, two keys, six records. The cover blanks at most one of two keys in a record, so a
    record needs a value that three records share on the other. a = 1…6 and b = 1…6: every value
    is held by one record on both keys (2 rare keys > 1 blankable): refused before any blanking,
    naming both as measured (100 % of the records rare on each). b = 1, 1, 1, 2, 2, 2: each record
    is rare on a only (1 ≤ 1), so the cover runs and blanks a where it must. criterion='sdcmicro' is
    never refused here."""
    import pandas as pd

    from ppdm.anonymize.suppression import LocalSuppression, rare_cells
    from ppdm.data.blanks import key_codes
    from ppdm.errors import ParameterError

    x = pd.DataFrame({"a": [1, 2, 3, 4, 5, 6], "b": [1, 2, 3, 4, 5, 6]})
    assert rare_cells(key_codes(x, ["a", "b"]), 3).all()
    with pytest.raises(ParameterError, match=r"cannot protect 6 of 6 records.*hold a value fewer than 3 records "
                                             r"share on more of their 2 keys than the 1 it may blank in a record.*"
                                             r"measured key\(s\) a 100%, b 100%"):
        LocalSuppression(keys=["a", "b"], k=3).fit_transform(x)
    grouped = x.assign(b=[1, 1, 1, 2, 2, 2])
    assert rare_cells(key_codes(grouped, ["a", "b"]), 3).sum(axis=1).tolist() == [1] * 6
    z = LocalSuppression(keys=["a", "b"], k=3).fit_transform(grouped)
    assert z["a"].isna().all() and z["b"].tolist() == [1, 1, 1, 2, 2, 2]
    LocalSuppression(keys=["a", "b"], k=3, criterion="sdcmicro").fit_transform(x)


def test_local_suppression_default_on_measured_keys_names_them_and_the_chain_that_passes() -> None:
    """banknote: four measured attributes, all keys (none declared); k = 3 in the intruder's view
    is refused up front naming them, and recode then local-suppression passes."""
    got = default_release("banknote", "local-suppression")
    assert got.status == "error" and "measured key(s) variance 98%" in got.message
    assert "--method recode --then local-suppression" in got.message
    assert chain_release("banknote", ["recode", "local-suppression"]).status == "pass"
