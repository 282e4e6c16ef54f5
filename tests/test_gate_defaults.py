"""Each technique's defaults on the shipped tables pass the release gate, or are known not to
(issue 28 §4): the matrix of :mod:`gate_defaults`, with what it says when they do not."""

from __future__ import annotations

import pytest
from gate_defaults import EXPECTED, QUICK, default_release, expected

from ppdm.anonymize import make_technique
from ppdm.anonymize.rounding import DEFAULT_C, Rounding
from ppdm.experiments.release import ReleaseRefused, release


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


# -------------------------------------------------------------------------------- the whole matrix
@pytest.mark.slow
@pytest.mark.parametrize("table,method", sorted(EXPECTED))
def test_every_default_on_every_shipped_table(table: str, method: str) -> None:
    """Every technique × shipped table: the verdict is the recorded one (``EXPECTED``); a
    technique that starts passing, or stops, changes this test on purpose."""
    got = default_release(table, method)
    assert got.status == expected(table, method), (table, method, got)
