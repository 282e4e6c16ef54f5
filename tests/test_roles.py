"""Column roles: flags, schema files, identifier screening and `ppdm schema`."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from ppdm.cli.app import app
from ppdm.data.datasets import info, load, names
from ppdm.data.provenance import in_input_order, read_private
from ppdm.data.roles import (
    Roles,
    apply_roles,
    identifier_reason,
    name_words,
    resolve_schema,
    suspect_identifiers,
)
from ppdm.data.schema import Schema
from ppdm.errors import SchemaError

runner = CliRunner()

#: this file is not about the release gate (tests/test_release_gate.py): weak releases are written
GATE_OFF = ["--allow-verbatim", "--allow-untouched-keys"]


def people(n: int = 60, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "person": [f"P{i:04d}x" for i in rng.permutation(n)],
        "age": rng.integers(18, 80, n),
        "income": rng.normal(3000, 800, n).round(2),
        "sex": rng.choice(["f", "m"], n),
        "label": rng.choice(["a", "b"], n),
    })


@pytest.mark.parametrize(("name", "words"), [
    ("customer_id", ["customer", "id"]), ("customerID", ["customer", "id"]), ("FirstName", ["first", "name"]),
    ("e-mail", ["e", "mail"]), ("HTTPServerName", ["http", "server", "name"]), ("ori_hid", ["ori", "hid"]),
])
def test_name_words(name: str, words: list[str]) -> None:
    assert name_words(name) == words


def test_identifier_reasons_by_hand() -> None:
    n = 30
    # names
    assert "named like an identifier ('id')" == identifier_reason(pd.Series([1, 1, 2] * 10, name="RecordID"))
    assert identifier_reason(pd.Series(["a"] * n, name="email")) is not None
    assert identifier_reason(pd.Series(["a"] * n, name="paid")) is None  # 'paid' is one word, not 'id'
    # text: 27 of 30 distinct (0.9) is suspected, 26 is not
    assert identifier_reason(pd.Series([f"t{i % 27}" for i in range(n)], name="t")).startswith("text with 27")
    assert identifier_reason(pd.Series([f"t{i % 26}" for i in range(n)], name="t")) is None
    # fewer than 20 values: not screened by value
    assert identifier_reason(pd.Series([f"t{i}" for i in range(19)], name="t")) is None
    # record numbers: a dense run, in any order
    assert identifier_reason(pd.Series(np.random.default_rng(0).permutation(n) + 1000, name="r")).startswith("record")
    # sorted sparse codes
    assert "in order" in identifier_reason(pd.Series(np.arange(n) * 97 + 5, name="r"))
    # distinct amounts in no order are measurements
    amounts = pd.Series(np.random.default_rng(1).integers(0, 10**9, n), name="r")
    assert identifier_reason(amounts) is None
    # floats never
    assert identifier_reason(pd.Series(np.arange(n) + 0.5, name="r")) is None
    # whole-valued floats (an integer column with a missing value) are whole numbers
    s = pd.Series(np.arange(n + 1, dtype=float), name="r")
    s[3] = np.nan
    assert identifier_reason(s) is not None


@pytest.mark.parametrize("name", names())
def test_no_shipped_attribute_is_taken_for_an_identifier(name: str) -> None:
    """The 13 shipped tables: none of their attributes looks like an identifier, even when
    the table is read from a file without its metadata."""
    df, schema = load(name)
    assert suspect_identifiers(df) == []
    assert resolve_schema(df, class_column=schema.class_column).identifiers == []


@pytest.mark.parametrize("name", names())
def test_shared_csv_identifiers_are_the_declared_ones(name: str, shared_dir: Path) -> None:
    """Read from the raw CSVs (which keep identifier and weight columns), the only columns
    screened as identifiers are the ones the shipped metadata declares identifiers (or fewer)."""
    raw = pd.read_csv(shared_dir / "datasets" / f"{name}.csv", na_values=["?"], skipinitialspace=True)
    declared = set(info(name).get("identifier_columns") or [])
    found = {s.column for s in suspect_identifiers(raw)}
    assert found <= declared, found


def test_roles_of_and_conflicts() -> None:
    r = Roles.of(["a,b", "c"], "d", None, "w", None)
    assert r.identifiers == ("a", "b", "c") and r.quasi_identifiers == ("d",) and r.weight == "w"
    assert Roles.of(quasi_identifiers="a", sensitive="a").named() == ["a", "a"]  # both roles allowed
    with pytest.raises(SchemaError, match="two roles"):
        Roles.of(identifiers="a", quasi_identifiers="a")


def test_apply_roles_moves_columns() -> None:
    df = people()
    s = Schema.infer(df, "label")
    assert "person" in s.categorical
    r = apply_roles(s, Roles.of(identifiers="person", quasi_identifiers="age,sex", sensitive="label"),
                    list(df.columns))
    assert r.identifiers == ["person"] and "person" not in r.attributes
    assert r.quasi_identifiers == ["age", "sex"] and r.sensitive == ["label"]
    assert r.role("person") == "identifier" and r.role("age") == "quasi-identifier"
    with pytest.raises(SchemaError, match="not in the table"):
        apply_roles(s, Roles.of(identifiers="nope"), list(df.columns))
    with pytest.raises(SchemaError, match="class column"):
        apply_roles(s, Roles.of(identifiers="label"), list(df.columns))
    with pytest.raises(SchemaError, match="makes it an identifier"):
        apply_roles(r, Roles.of(quasi_identifiers="person"), list(df.columns))


def test_resolve_schema_refuses_suspects_and_uncovered_columns() -> None:
    df = people()
    with pytest.raises(SchemaError) as e:
        resolve_schema(df, class_column="label")
    msg = str(e.value)
    assert "'person'" in msg and "--id person" in msg and "--other person" in msg and "drop" in msg
    assert resolve_schema(df, class_column="label", roles=Roles.of(identifiers="person")).identifiers == ["person"]
    assert "person" in resolve_schema(df, class_column="label", roles=Roles.of(other="person")).categorical
    # a given schema declares its columns: no screening, but it must cover the table
    given = Schema(["age", "income"], ["sex"], "label", identifiers=["person"])
    assert resolve_schema(df, schema=given).identifiers == ["person"]
    partial = Schema(["age"], ["sex"], "label")
    with pytest.raises(SchemaError, match=r"leaves out column\(s\) 'person', 'income'"):
        resolve_schema(df, schema=partial, what="the schema")
    with pytest.raises(SchemaError, match="weight column 'sex' must hold numbers"):
        resolve_schema(df, class_column="label", roles=Roles.of(identifiers="person", weight="sex"))


def test_technique_refuses_a_schema_that_leaves_out_columns() -> None:
    from ppdm.anonymize import make_technique

    df = people().drop(columns="person")
    tech = make_technique("uniform-noise", class_column="label", random_state=0,
                          schema={"numeric": ["age"], "categorical": ["sex"], "class_column": "label"})
    with pytest.raises(SchemaError, match="leaves out column\\(s\\) 'income'"):
        tech.fit(df)


def test_cli_schema_file_leaving_out_columns(tmp_path: Path) -> None:
    x = tmp_path / "x.csv"
    people().drop(columns="person").to_csv(x, index=False)
    sch = tmp_path / "s.json"
    sch.write_text(json.dumps({"numeric": ["age"], "categorical": ["sex"], "class_column": "label"}))
    before = {p.name for p in tmp_path.iterdir()}
    for cmd in (["anonymize", *GATE_OFF, str(x), "-m", "uniform-noise", "-o", str(tmp_path / "z.csv")],
                ["rules", str(x)], ["evaluate", "-x", str(x), "-z", str(x), "--measures", "il1s"]):
        res = runner.invoke(app, [*cmd, "--schema", str(sch)])
        out = res.output.strip()
        assert res.exit_code == 2 and len(out.splitlines()) == 1, out
        assert "leaves out column(s) 'income'" in out and str(sch) in out, out
        assert {p.name for p in tmp_path.iterdir()} == before


def test_cli_role_flags(tmp_path: Path) -> None:
    x = tmp_path / "x.csv"
    people().to_csv(x, index=False)
    out = tmp_path / "z.csv"
    res = runner.invoke(app, ["anonymize", *GATE_OFF, str(x), "-m", "uniform-noise", "--class", "label", "-o", str(out)])
    assert res.exit_code == 2 and "'person'" in res.output and "--id person" in res.output
    assert not out.exists()
    res = runner.invoke(app, ["anonymize", *GATE_OFF, str(x), "-m", "uniform-noise", "--class", "label", "-o", str(out),
                              "--id", "person", "--qi", "age,sex", "--sensitive", "income"])
    assert res.exit_code == 0, res.output
    assert "removed identifier column(s) person" in res.output
    assert "person" not in pd.read_csv(out).columns
    prov = json.loads((tmp_path / "z.provenance.json").read_text())
    assert prov["schema"]["identifiers"] == ["person"] and prov["schema"]["quasi_identifiers"] == ["age", "sex"]
    assert prov["schema"]["sensitive"] == ["income"] and prov["removed_identifiers"] == ["person"]
    # kept on request, unchanged
    res = runner.invoke(app, ["anonymize", *GATE_OFF, str(x), "-m", "uniform-noise", "--class", "label", "-o", str(out),
                              "--id", "person", "--keep-identifiers"])
    assert res.exit_code == 0, res.output
    z = pd.read_csv(out)
    assert list(z.columns) == list(people().columns)
    z, pos = in_input_order(z, read_private(out))
    assert z["person"].tolist() == people()["person"].iloc[pos].tolist()
    # declared an ordinary attribute
    res = runner.invoke(app, ["anonymize", *GATE_OFF, str(x), "-m", "uniform-noise", "--class", "label", "-o", str(out),
                              "--other", "person"])
    assert res.exit_code == 0, res.output


def test_ppdm_schema_writes_an_editable_file(tmp_path: Path) -> None:
    x = tmp_path / "x.csv"
    people().to_csv(x, index=False)
    res = runner.invoke(app, ["schema", str(x), "--class", "label", "--qi", "age,sex"])
    assert res.exit_code == 0, res.output
    p = tmp_path / "x.schema.json"
    record = json.loads(p.read_text())
    assert record["identifiers"] == ["person"] and record["quasi_identifiers"] == ["age", "sex"]
    assert record["_columns"]["person"]["distinct"] == 60 and record["_columns"]["person"]["unique_share"] == 1.0
    assert record["_columns"]["sex"]["distinct"] == 2
    assert "person" in res.output and "identifier" in res.output and "unique share" in res.output
    # nothing of a record is printed: only names, types and counts
    assert "P00" not in res.output and "P00" not in p.read_text()
    # the file is a schema: anonymize takes it as it is (no screening, every column declared)
    out = tmp_path / "z.csv"
    res = runner.invoke(app, ["anonymize", *GATE_OFF, str(x), "-m", "uniform-noise", "--schema", str(p), "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "person" not in pd.read_csv(out).columns
    # an existing file is not overwritten without --force
    res = runner.invoke(app, ["schema", str(x), "--class", "label"])
    assert res.exit_code == 2 and "--force" in res.output
    assert runner.invoke(app, ["schema", str(x), "--class", "label", "--force"]).exit_code == 0


def test_ppdm_schema_of_a_builtin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(app, ["schema", "builtin:testdata"])
    assert res.exit_code == 0, res.output
    record = json.loads((tmp_path / "testdata.schema.json").read_text())
    assert record["identifiers"] == [] and "expend" in record["numeric"]
    assert Schema.load(tmp_path / "testdata.schema.json").numeric == record["numeric"]
