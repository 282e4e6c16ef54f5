"""Local suppression: sdcMicro parity cell for cell, the cover mode's fewer cells, k-anonymity
after suppression under sdcMicro's missing-value rule, and bad input.

The oracle files are sdcMicro 5.8.1's localSuppression on adult and testdata
(../shared/oracles/sdcmicro_sdc/, README there); the tests skip when ../shared is absent.
"""

from __future__ import annotations

import json
import os
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ppdm.anonymize import _suppression as alg
from ppdm.anonymize.suppression import LocalSuppression
from ppdm.cli.app import app
from ppdm.data.schema import Schema
from ppdm.errors import ParameterError
from ppdm.metrics.keyvar import key_frequencies

ROOT = Path(__file__).resolve().parents[1]

runner = CliRunner()
TABLES = {"adult": ["age", "workclass", "education", "marital_status", "race", "sex"],
          "testdata": ["urbrur", "roof", "walls", "water", "electcon", "relat", "sex"]}


def _oracle(shared_dir: Path, tag: str) -> tuple[pd.DataFrame, dict]:
    d = shared_dir / "oracles" / "sdcmicro_sdc"
    keys = pd.read_csv(d / f"{tag}_keys.csv", dtype=str, keep_default_na=False, na_values=[""])
    return keys, json.loads((d / f"{tag}.json").read_text())


def _runs(meta: dict) -> list[tuple[int, str, dict]]:
    return [(int(kk[1:]), var, run) for kk, runs in meta["localSuppression"]["runs"].items()
            for var, run in runs.items()]


def _tech(keys: list[str], **kw) -> LocalSuppression:
    return LocalSuppression(schema=Schema(categorical=keys, quasi_identifiers=keys), **kw)


def _fk_after(z: pd.DataFrame, keys: list[str]) -> np.ndarray:
    """fk of the release by the measure of ppdm evaluate (sdcMicro's freqCalc rule)."""
    return key_frequencies(z, keys).fk


# ------------------------------------------------------------------------- parity
@pytest.mark.parametrize("tag", sorted(TABLES))
def test_sdcmicro_mode_reproduces_every_oracle_run_cell_for_cell(shared_dir: Path, tag: str) -> None:
    keys = TABLES[tag]
    x, meta = _oracle(shared_dir, tag)
    runs = _runs(meta)
    assert len(runs) == (4 if tag == "adult" else 3)
    for k, var, run in runs:
        t = _tech(keys, k=k, mode="sdcmicro", importance=run["importance_arg"], combs=run["combs"])
        z = t.fit_transform(x[keys])
        ref = pd.read_csv(shared_dir / "oracles" / "sdcmicro_sdc" / run["csv"], dtype=str, keep_default_na=False,
                          na_values=[""])
        np.testing.assert_array_equal(z.isna().to_numpy(), ref[keys].isna().to_numpy(), err_msg=f"{tag} k={k} {var}")
        rep = t.private_report_  # counts of x's records: the owner's private log
        assert rep["suppressed_cells"] == run["suppressed_total"]
        assert rep["suppressed_by_key"] == run["suppressed_by_key"]
        assert rep["records_with_suppression"] == run["records_with_suppression"]
        assert dict(zip(keys, alg.default_importance(alg.encode_keys(x, keys)).tolist(), strict=True)) \
            == meta["localSuppression"]["runs"][f"k{k}"]["default"]["importance_used"]
        # fk after suppression, record by record, as sdcMicro's freqCalc counts it
        if not run["combs"]:
            np.testing.assert_array_equal(_fk_after(z, keys), ref["fk_after"].to_numpy(dtype=float))
            assert rep["records_below_k"] == run["violations_after"] == 0


def test_frequencies_match_the_oracle_missing_value_rule(shared_dir: Path) -> None:
    demo = pd.read_csv(shared_dir / "oracles" / "sdcmicro_sdc" / "freqcalc_na_demo.csv", dtype=str,
                       keep_default_na=False, na_values=[""])
    codes = alg.encode_keys(demo, ["A", "B", "C"])
    np.testing.assert_array_equal(alg.record_frequencies(codes), demo["fk_alpha1"].astype(float))
    np.testing.assert_array_equal(alg.record_frequencies(alg.encode_keys(demo, ["A"])),
                                  demo["fk_A_only_alpha1"].astype(float))


def test_combs_importance_quirk_and_what_sdcmicro_documents(shared_dir: Path) -> None:
    """sdcMicro indexes the importance vector of a key subset by the keys' column positions in
    its data frame. On testdata the keys are the first columns, so both readings agree with the
    oracle; on adult (keys at columns 1, 2, 4, 6, 9, 10) they pick different importances."""
    keys = TABLES["testdata"]
    x, meta = _oracle(shared_dir, "testdata")
    ref = pd.read_csv(shared_dir / "oracles" / "sdcmicro_sdc" / "testdata_k3_combs.csv", dtype=str,
                      keep_default_na=False, na_values=[""])
    for how in ("keys", "columns"):
        z = _tech(keys, k=3, mode="sdcmicro", combs=[4], combs_importance=how).fit_transform(x[keys])
        np.testing.assert_array_equal(z.isna().to_numpy(), ref[keys].isna().to_numpy())
    assert meta["key_column_positions"] == {k: i + 1 for i, k in enumerate(keys)}

    akeys = TABLES["adult"]
    ax, ameta = _oracle(shared_dir, "adult")
    pos = ameta["key_column_positions"]
    # the adult table as sdcMicro saw it: the keys among the other columns, at their positions
    cols: list[str] = []
    for i in range(1, max(pos.values()) + 1):
        named = [k for k, p in pos.items() if p == i]
        cols.append(named[0] if named else f"other{i}")
    table = ax[akeys].copy()
    for c in cols:
        if c not in table:
            table[c] = "v"
    table = table[cols]
    sch = Schema(categorical=cols, quasi_identifiers=akeys)
    imp = [6, 5, 4, 3, 2, 1]  # sex most important, age least
    documented = LocalSuppression(schema=sch, keys=akeys, k=3, mode="sdcmicro", importance=imp, combs=[3])
    quirk = LocalSuppression(schema=sch, keys=akeys, k=3, mode="sdcmicro", importance=imp, combs=[3],
                             combs_importance="columns")
    zd, zq = documented.fit_transform(table), quirk.fit_transform(table)
    # the subset (age, education, race): by key order its importances are 6, 4, 2 (age blanked
    # first); by column positions 1, 4, 9 sdcMicro reads importance[1], importance[4] = 6, 3 and
    # NA, which rank() puts last, so race is blanked first
    vals = np.array([imp[p - 1] if p <= len(imp) else np.nan for p in (pos["age"], pos["education"], pos["race"])])
    assert alg.rank_min(vals).tolist() == [2.0, 1.0, 3.0]
    assert alg.suppression_order(alg.rank_min(vals)).tolist() == [2, 0, 1]
    assert alg.suppression_order(alg.rank_min(np.array([6.0, 4.0, 2.0]))).tolist() == [0, 1, 2]
    # over all subsets the two readings blank different cells
    assert not zd[akeys].isna().equals(zq[akeys].isna())
    for z in (zd, zq):  # both reach k = 3 on every subset of 3 keys
        for sub in combinations(akeys, 3):
            assert (_fk_after(z, list(sub)) >= 3).all()


# ------------------------------------------------------------------- the cover mode
@pytest.mark.parametrize("tag", sorted(TABLES))
def test_cover_mode_blanks_at_most_0_7_of_sdcmicros_cells_on_every_run(shared_dir: Path, tag: str) -> None:
    """Cover against sdcMicro on sdcMicro's own reading: the criterion is asked for by name (the
    default, the intruder's view, asks for more)."""
    keys = TABLES[tag]
    x, meta = _oracle(shared_dir, tag)
    for k, var, run in _runs(meta):
        t = _tech(keys, k=k, importance=run["importance_arg"], combs=run["combs"], criterion="sdcmicro")
        z = t.fit_transform(x[keys])
        cells = int(z.isna().to_numpy().sum())
        assert cells <= 0.7 * run["suppressed_total"], (tag, k, var, cells, run["suppressed_total"])
        assert t.private_report_["suppressed_cells"] == cells
        subsets = [list(s) for c in (run["combs"] or [len(keys)]) for s in combinations(keys, c)]
        for sub in subsets:
            assert (_fk_after(z, sub) >= k).all(), (tag, k, var, sub)


def test_intruder_criterion_protects_original_key_values(shared_dir: Path) -> None:
    keys = TABLES["adult"]
    x, meta = _oracle(shared_dir, "adult")
    t = _tech(keys, k=3, criterion="intruder")
    z = t.fit_transform(x[keys])
    codes = alg.encode_keys(x, keys)
    released = np.where(z.isna().to_numpy(), -1, codes)
    assert (alg.intruder_frequencies(codes, released) >= 3).all()
    assert (_fk_after(z, keys) >= 3).all()
    assert t.private_report_["records_below_k_for_intruder"] == 0
    assert int(z.isna().to_numpy().sum()) <= 0.7 * meta["localSuppression"]["runs"]["k3"]["default"]["suppressed_total"]


def test_cover_gives_back_cells_and_respects_weights() -> None:
    # hand-made: three records differ from a group of five only in b; k = 3
    x = pd.DataFrame({"a": ["p"] * 8, "b": ["u"] * 5 + ["v", "w", "y"], "c": ["s"] * 8})
    t = LocalSuppression(keys=["a", "b", "c"], k=3)
    z = t.fit_transform(x)
    # two blanked b's make each of the three match 3 records (itself + 2 wildcards) or more
    assert int(z["b"].isna().sum()) == 2 and not z[["a", "c"]].isna().any().any()
    assert (_fk_after(z, ["a", "b", "c"]) >= 3).all()
    # sdcMicro blanks all three
    s = LocalSuppression(keys=["a", "b", "c"], k=3, mode="sdcmicro").fit_transform(x)
    assert int(s["b"].isna().sum()) == 3


def test_default_keys_are_every_attribute_with_a_warning() -> None:
    x = pd.DataFrame({"a": list("ppppqq"), "b": list("uuvvuv"), "y": list("ababab")})
    with pytest.warns(UserWarning, match="no quasi-identifiers declared"):
        t = LocalSuppression(class_column="y", k=2).fit(x)
    assert t.keys_ == ["a", "b"]


# ---------------------------------------------------------------- properties
@st.composite
def _tables(draw: st.DrawFn) -> tuple[pd.DataFrame, int]:
    n = draw(st.integers(2, 40))
    m = draw(st.integers(1, 4))
    cols = {}
    for j in range(m):
        vals = draw(st.lists(st.sampled_from(["a", "b", "c", "d", None]), min_size=n, max_size=n))
        cols[f"k{j}"] = vals
    k = draw(st.integers(1, n))
    return pd.DataFrame(cols, dtype=object), k


@settings(max_examples=60, deadline=None)
@given(_tables(), st.sampled_from([("cover", "sdcmicro"), ("sdcmicro", None)]))
def test_every_key_combination_has_fk_at_least_k_after_suppression(case, how) -> None:
    x, k = case
    keys = list(x.columns)
    mode, criterion = how
    t = LocalSuppression(schema=Schema(categorical=keys, quasi_identifiers=keys), k=k, mode=mode, criterion=criterion)
    z = t.fit_transform(x)
    assert (_fk_after(z, keys) >= k).all()
    # only key cells are blanked, never filled: a missing cell stays missing
    assert (z.isna() | ~x.isna()).all().all()
    assert ((z == x) | z.isna()).all().all()


@settings(max_examples=40, deadline=None)
@given(_tables())
def test_frequencies_equal_the_measure_of_ppdm_evaluate(case) -> None:
    x, _ = case
    keys = list(x.columns)
    np.testing.assert_array_equal(alg.record_frequencies(alg.encode_keys(x, keys)), key_frequencies(x, keys).fk)


@settings(max_examples=40, deadline=None)
@given(_tables())
def test_intruder_criterion_holds_on_random_tables(case) -> None:
    x, k = case  # missing key values too: the intruder does not know those either
    keys = list(x.columns)
    t = LocalSuppression(keys=keys, k=k)  # the default criterion of the default mode
    try:
        z = t.fit_transform(x)
    except ParameterError as e:
        assert "cannot protect" in str(e)
        return
    codes = alg.encode_keys(x, keys)
    released = np.where(z.isna().to_numpy(), -1, codes)
    assert (alg.intruder_frequencies(codes, released) >= k).all()
    assert (_fk_after(z, keys) >= k).all()


# ------------------------------------------------------------------------ types
def test_integer_keys_come_back_as_nullable_integers() -> None:
    x = pd.DataFrame({"age": [20, 20, 20, 31, 45], "sex": ["m", "m", "m", "f", "f"]})
    t = LocalSuppression(keys=["age", "sex"], k=2)
    z = t.fit_transform(x)
    assert str(z["age"].dtype) == "Int64"
    assert (_fk_after(z, ["age", "sex"]) >= 2).all()
    assert z["age"].dropna().isin(x["age"]).all()


def test_dask_partitions_are_each_k_anonymous_so_the_table_is() -> None:
    dd = pytest.importorskip("dask.dataframe")
    rng = np.random.default_rng(0)
    x = pd.DataFrame({"a": rng.choice(list("pqrs"), 300), "b": rng.choice(list("uvwxyz"), 300),
                      "c": rng.choice(list("01"), 300)})
    t = LocalSuppression(keys=["a", "b", "c"], k=4).fit(x)
    z = t.transform(dd.from_pandas(x, npartitions=3)).compute()
    assert (_fk_after(z, ["a", "b", "c"]) >= 4).all()


# -------------------------------------------------------------------- bad input
def test_bad_input_is_refused_in_one_line(tmp_path: Path) -> None:
    x = pd.DataFrame({"a": list("ppqq"), "b": list("uvuv"), "y": list("abab")})
    with pytest.raises(ParameterError, match="k=5 is larger than the table"):
        LocalSuppression(class_column="y", keys=["a", "b"], k=5).fit_transform(x)
    with pytest.raises(ParameterError, match="importance has 3 value"):
        LocalSuppression(class_column="y", keys=["a", "b"], importance=[1, 2, 3]).fit(x)
    with pytest.raises(ParameterError, match="from 1 to 2"):
        LocalSuppression(class_column="y", keys=["a", "b"], importance=[1, 7]).fit(x)
    with pytest.raises(ParameterError, match="'zz'"):
        LocalSuppression(class_column="y", keys=["a", "zz"]).fit(x)
    with pytest.raises(ParameterError, match="intruder"):
        LocalSuppression(keys=["a"], mode="sdcmicro", criterion="intruder").fit(x)
    src = tmp_path / "x.csv"
    x.to_csv(src, index=False)
    for extra, needle in ((["-p", "k=5"], "larger than the table"), (["-p", "importance=[1]"], "importance has 1")):
        res = runner.invoke(app, ["anonymize", str(src), "-m", "local-suppression", "--class", "y", "--qi", "a,b",
                                  "-o", str(tmp_path / "z.csv"), *extra])
        out = res.output.strip()
        assert res.exit_code == 2 and len(out.splitlines()) == 1 and needle in out, out
        assert sorted(p.name for p in tmp_path.iterdir()) == ["x.csv"]


_MILLION_RECORDS = """
import json, resource, sys, time, warnings
import numpy as np, pandas as pd
from ppdm.anonymize import _suppression as alg
from ppdm.anonymize.suppression import LocalSuppression
from ppdm.data.datasets import load

df, _ = load("adult")
df = df.dropna()
rng = np.random.default_rng(0)
keys = ["age", "workclass", "education", "marital_status", "occupation", "sex"]
x = pd.DataFrame({c: rng.choice(df[c].value_counts().index.to_numpy(), size=1_000_000,
                                p=df[c].value_counts(normalize=True).to_numpy()) for c in keys})
t = LocalSuppression(keys=keys, k=3, criterion="sdcmicro")  # the cover's speed on sdcMicro's reading
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    t.fit(x.head(1000))
start = time.process_time()
z = t.transform(x)
cpu = time.process_time() - start
print(json.dumps({"cpu": cpu, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "below_k": int(t.private_report_["records_below_k"]),
                  "k_holds": bool((alg.record_frequencies(alg.encode_keys(z, keys)) >= 3).all())}))
"""


@pytest.mark.slow
def test_a_million_records_with_six_keys_in_ten_seconds() -> None:
    """10⁶ records, 6 keys with adult's marginals drawn independently (about 148 000 records
    with fk < 3): the cover mode reaches k = 3 within the time and memory targets.

    Run in a process of its own: a process's peak memory is the largest it ever reached, so in a
    test worker it would count the tests run before this one."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", _MILLION_RECORDS], capture_output=True, text=True, check=True,
                         cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["cpu"] <= 10.0, got
    assert got["peak_mb"] <= 2048, got
    assert got["below_k"] == 0 and got["k_holds"], got


def test_class_importance_ranks_keys_by_symmetrical_uncertainty() -> None:
    y = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    same = y.copy()                               # SU = 1: the class itself
    none = np.array([0, 1, 0, 1, 0, 1, 0, 1])     # SU = 0: independent of the class
    part = np.array([0, 0, 0, 1, 1, 1, 1, 1])     # by hand: H = 0.6616, I = 0.3804, SU = 0.5616
    assert alg.class_importance(np.column_stack([same, none, part]), y).tolist() == [1, 3, 2]
    # equal keys tie and keep key order; a missing cell (-1) is left out of its key's count
    assert alg.class_importance(np.column_stack([none, part, part]), y).tolist() == [3, 1, 2]
    many = np.arange(8)                           # one value per record: I = ln 2 but H = ln 8, SU = 0.5
    assert alg.class_importance(np.column_stack([many, part]), y).tolist() == [2, 1]


def test_importance_class_blanks_what_the_class_needs_least() -> None:
    rng = np.random.default_rng(0)
    n = 200
    edu = rng.integers(0, 12, n)  # more values than town: sdcMicro's default would blank it first
    df = pd.DataFrame({"edu": edu.astype(str), "town": rng.integers(0, 3, n).astype(str),
                       "label": np.where(edu + rng.normal(0, 1.0, n) > 5.5, "y", "n")})
    schema = Schema(categorical=["edu", "town"], class_column="label", quasi_identifiers=["edu", "town"])
    ls = LocalSuppression(class_column="label", schema=schema, k=5, mode="sdcmicro", importance="class")
    out = ls.fit_transform(df)
    blanked = ls.suppressed_.sum(axis=0)
    assert ls.private_report_["importance"] == {"edu": 1.0, "town": 2.0}  # worked out from x: the owner's
    default = LocalSuppression(class_column="label", schema=schema, k=5, mode="sdcmicro")
    default.fit_transform(df)
    by_default = default.suppressed_.sum(axis=0)
    # the blanking moves from education (which predicts the class) to town
    assert blanked[0] < by_default[0] / 5 and blanked[1] > by_default[1]
    assert (out["edu"] == df["edu"]).mean() > 0.95
    with pytest.raises(ParameterError, match="no class column"):
        LocalSuppression(schema=Schema(categorical=["edu", "town"], quasi_identifiers=["edu", "town"]),
                         importance="class").fit(df[["edu", "town"]])
    with pytest.raises(ParameterError, match="'class'"):
        LocalSuppression(class_column="label", schema=schema, importance="classes").fit(df)


def test_check_k_is_one_check_for_every_group_size() -> None:
    from ppdm.utils import check_k

    assert check_k(np.int64(3), 3) == 3 and type(check_k(np.int64(3), 3)) is int
    for bad, needle in ((True, "whole number ≥ 1"), (2.0, "whole number ≥ 1"), (0, "at least 1")):
        with pytest.raises(ParameterError, match=needle):
            check_k(bad, 5)
    with pytest.raises(ParameterError, match=r"k=6 is larger than the table \(5 records\): no group of 6 records"):
        check_k(6, 5)
    with pytest.raises(ParameterError, match="no release of it can be 6-anonymous"):
        check_k(6, 5, too_large="no release of it can be {k}-anonymous")
