"""The release check (ppdm.metrics.release_check), computed by hand on small tables."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ppdm.data.schema import Schema
from ppdm.errors import SchemaError
from ppdm.experiments.evaluation import load_all_measures
from ppdm.metrics.base import MEASURES, EvaluationContext
from ppdm.metrics.release_check import ReleaseCheck, near_cells, release_check, unchanged_cells

X = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "g": ["u", "u", "v", "v"], "y": ["p", "q", "p", "q"]})
Z = pd.DataFrame({"a": [1.0, 2.5, 3.0, 4.0], "g": ["u", "v", "v", "v"], "y": ["p", "q", "p", "q"]})
S = Schema(["a"], ["g"], "y")


def test_hand_computed_without_declared_quasi_identifiers() -> None:
    r = release_check(X, Z, S)
    assert isinstance(r, ReleaseCheck)
    assert r.quasi_identifiers == ["a", "g"] and not r.quasi_identifiers_declared
    # record 1 changed in a and g; records 0, 2, 3 unchanged
    assert r.value == 0.75 and r.records_unchanged == 3
    assert r.records_verbatim == 3 and r.share_verbatim == 0.75
    # z's (a, g): (1,u) (2.5,v) (3,v) (4,v) are all different
    assert r.unique_in_z == 4
    assert r.untouched_columns == ["y"]
    pc = r.per_column.set_index("column")
    assert pc.loc["a", "share_unchanged"] == 0.75 and pc.loc["g", "share_unchanged"] == 0.75
    assert pc.loc["y", "share_unchanged"] == 1.0 and not pc.loc["y", "touched"]
    assert list(pc["kind"]) == ["numeric", "categorical", "categorical"]
    assert list(pc["role"]) == ["other", "other", "class"]


def test_hand_computed_with_declared_quasi_identifiers() -> None:
    s = Schema(["a"], ["g"], "y", quasi_identifiers=["g"])
    r = release_check(X, Z, s)
    assert r.quasi_identifiers == ["g"] and r.quasi_identifiers_declared
    assert r.value == 0.75
    # z's g: u v v v, only record 0 is alone with its value
    assert r.unique_in_z == 1
    assert r.per_column.set_index("column").loc["g", "role"] == "quasi-identifier"


def test_numerically_almost_equal_cells_count_as_unchanged() -> None:
    sd = float(np.std(X["a"]))  # 1.118...
    z = X.copy()
    z.loc[1, "a"] = 2.0 + 0.9e-6 * sd  # within 10⁻⁶ sd: the original, numerically
    z.loc[2, "a"] = 3.0 + 1.1e-6 * sd  # beyond it: changed
    r = release_check(X, z, S)
    assert r.per_column.set_index("column").loc["a", "share_unchanged"] == 0.75
    assert release_check(X, z, S, tolerance=0).per_column.iloc[0]["share_unchanged"] == 0.5


def test_missing_in_both_is_unchanged_and_huge_values_do_not_overflow() -> None:
    x = pd.Series([1e300, -1e300, np.nan, 0.0, 5e299])
    z = pd.Series([1e300, 1e300, np.nan, 0.0, 5e299])
    assert unchanged_cells(x, z, numeric=True).tolist() == [True, False, True, True, True]
    c = pd.Series(["a", None, "b"])
    assert unchanged_cells(c, pd.Series(["a", None, "c"]), numeric=False).tolist() == [True, True, False]


def test_refuses_misaligned_tables() -> None:
    with pytest.raises(SchemaError, match="x has 4 rows, z has 3"):
        release_check(X, Z.iloc[:3], S)
    with pytest.raises(SchemaError, match="'b'"):
        release_check(X, Z, S, columns=["a", "b"])


def test_registered_for_evaluate() -> None:
    load_all_measures()
    spec = MEASURES["release_check"]
    assert spec.direction == "lower" and spec.value_range == (0.0, 1.0) and not spec.needs_class
    r = spec.fn(EvaluationContext(x=X, z=Z, schema=S))
    assert r.value == 0.75
    assert r.to_dict()["untouched_columns"] == ["y"]


@settings(max_examples=60)
@given(st.integers(2, 40), st.integers(0, 2**31 - 1), st.floats(0, 1))
def test_properties(n: int, seed: int, p: float) -> None:
    """z = x gives 1 everywhere; changing a share of records lowers the shares accordingly."""
    rng = np.random.default_rng(seed)
    x = pd.DataFrame({"a": rng.normal(0, 1, n), "b": rng.integers(0, 3, n), "y": rng.choice(["p", "q"], n)})
    s = Schema(["a"], ["b"], "y")
    same = release_check(x, x, s)
    assert same.value == 1.0 and same.share_verbatim == 1.0 and same.untouched_columns == ["a", "b", "y"]
    changed = rng.random(n) < p
    z = x.copy()
    z.loc[changed, "a"] = z.loc[changed, "a"] + 1.0
    r = release_check(x, z, s)
    assert r.records_unchanged == n - changed.sum() == r.records_verbatim
    assert 0 <= r.unique_in_z <= n
    assert ("a" in r.untouched_columns) == (not changed.any())


def test_a_synthetic_release_is_looked_up_among_all_original_records() -> None:
    """Hand-computed: z has 3 records, not paired with x's 4. Record 0 copies x's record 2
    on every column, record 1 has x's record 0's quasi-identifier (a=1) with another b,
    record 2 matches nothing."""
    x = pd.DataFrame({"a": [1, 2, 3, 4], "b": ["u", "v", "w", "u"]})
    z = pd.DataFrame({"a": [3, 1, 9], "b": ["w", "v", "u"]})
    sch = Schema(numeric=["a"], categorical=["b"], quasi_identifiers=["a"])
    chk = release_check(x, z, sch, record_aligned=False)
    assert not chk.record_aligned and chk.n_records == 3
    assert chk.records_unchanged == 2 and chk.value == pytest.approx(2 / 3)
    assert chk.records_verbatim == 1 and chk.share_verbatim == pytest.approx(1 / 3)
    assert chk.unique_in_z == 3
    # per column, z's values matched one to one with x's: a {3, 1} of {3, 1, 9}; b all of {w, v, u}
    pc = chk.per_column.set_index("column")["share_unchanged"]
    assert pc["a"] == pytest.approx(2 / 3) and pc["b"] == 1.0
    # record 0 copies x's record 2, whose a=3 no other original has
    assert chk.records_verbatim_unique == 1 and chk.records_copied == 1
    assert chk.summary_lines()[0].startswith("released records not paired with the original's (3)")
    with pytest.raises(SchemaError, match="one by one"):
        release_check(x, z, sch)


# ---------------------------------------------------- blanks: found only when alone (#32)
BX = pd.DataFrame({"a": ["x", "x", "y", "y", "y"], "b": ["p", "q", "p", "p", "p"]})
BS = Schema(categorical=["a", "b"], quasi_identifiers=["a", "b"])


def test_a_verbatim_record_that_blanked_records_could_be_is_not_found() -> None:
    """Unique in x: records 0 (x,p) and 1 (x,q). z blanks record 0's b, so record 1 comes out
    verbatim but two released records, (x,·) and (x,q), could carry its true values: an intruder
    who knows them does not find it. Before the fix the gate counted it (1 of 5 = 20 % > 5 %)."""
    from ppdm.metrics.release_check import gate

    z = BX.copy()
    z.loc[0, "b"] = None
    r = release_check(BX, z, BS)
    assert r.records_verbatim == 4 and r.unique_in_x_all == 2
    assert r.records_verbatim_unique == 0 and r.records_near_verbatim_unique == 0
    assert not [f for f in gate(r) if f.rule == "verbatim_unique"]


def test_a_verbatim_record_alone_with_its_values_is_found() -> None:
    """z blanks record 0's a instead: (·,p) does not agree with record 1's true (x,q) on b, so
    record 1 is its only candidate — found, and refused (20 % > 5 %)."""
    from ppdm.metrics.release_check import gate

    z = BX.copy()
    z.loc[0, "a"] = None
    r = release_check(BX, z, BS)
    assert r.records_verbatim_unique == 1
    assert "verbatim_unique" in [f.rule for f in gate(r) if f.level == "refuse"]
    # without a pairing the copy is looked up among all of x the same way
    assert release_check(BX, z, BS, record_aligned=False).records_verbatim_unique == 1


def test_narrow_interval_labels_are_near_verbatim() -> None:
    # x: 0, 10, 20, 30, 40; population sd = sqrt((400 + 100 + 0 + 100 + 400) / 5) = 14.142, so
    # the near tolerance 0.01 allows a half-width of 0.1414. (-0.1,0.1] holds 0 with half-width
    # 0.1: near. (9.5,10.5] holds 10 but half-width 0.5: not near. (19.9,20] holds 20, 0.05: near.
    # (31,32] does not hold 30. A missing label is not near.
    x = pd.Series([0.0, 10.0, 20.0, 30.0, 40.0])
    z = pd.Series(["(-0.1,0.1]", "(9.5,10.5]", "(19.9,20]", "(31,32]", None], dtype=object)
    assert near_cells(x, z, numeric=False, tolerance=0.01).tolist() == [True, False, True, False, False]
    # labels that are not intervals are compared as categories
    assert not near_cells(x, pd.Series(["a", "b", "c", "d", "e"]), numeric=False).any()


def test_a_recode_into_one_original_per_interval_is_refused() -> None:
    """tarragona recoded into 5000 equal-frequency intervals per column: every interval holds one
    original, so each released record is x's own written as labels; no cell is unchanged, yet
    an intruder who holds x finds each record. The gate let it through before."""
    from ppdm.anonymize import make_technique
    from ppdm.datasets import load

    x, sch = load("tarragona")
    tech = make_technique("recode", random_state=1, params={"breaks": 5000, "method": "equal-frequency"})
    z = tech.fit_transform(x)
    chk = release_check(x, z, tech.output_schema())
    assert chk.records_near_verbatim > 0.9 * len(x) and chk.share_near_verbatim_unique > 0.9
