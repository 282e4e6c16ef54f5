from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ppdm.data import Schema, read_table, write_table
from ppdm.data.datasets import load, names
from ppdm.errors import PPDMError, SchemaError


def _table() -> pd.DataFrame:
    return pd.DataFrame(
        {"age": [30, 45, 52], "wage": [1.5, 2.5, 3.0], "job": ["a", "b", "a"], "y": ["n", "y", "y"]}
    )


def test_schema_infer_roles_and_integer_flag():
    s = Schema.infer(_table(), "y")
    assert s.numeric == ["age", "wage"]
    assert s.categorical == ["job"]
    assert s.class_column == "y"
    assert s.integer == ["age"]
    assert s.columns == ["age", "wage", "job", "y"]


def test_schema_override_and_json_round_trip(tmp_path):
    s = Schema.infer(_table(), "y", categorical=["age"])
    assert s.categorical == ["age", "job"] and s.numeric == ["wage"]
    p = tmp_path / "s.json"
    s.save(p)
    assert Schema.load(p) == s


def test_validate_names_missing_class_column():
    with pytest.raises(SchemaError, match="class column 'income'"):
        Schema(["age"], [], "income").validate(_table())


def test_validate_missing_policy():
    df = _table().astype({"wage": float})
    df.loc[1, "wage"] = np.nan
    s = Schema.infer(df, "y")
    with pytest.raises(SchemaError, match=r"column 'wage' has a missing value at row 1"):
        s.validate(df)
    out, dropped = s.validate(df, missing="drop")
    assert dropped == 1 and list(out.index) == [0, 2]


def test_validate_inf_and_non_numeric():
    df = _table().astype({"wage": float})
    df.loc[2, "wage"] = np.inf
    with pytest.raises(SchemaError, match="infinite value at row 2"):
        Schema.infer(df, "y").validate(df)
    df = _table()
    df["age"] = ["30", "x", "52"]
    with pytest.raises(SchemaError, match="non-numeric value 'x' at row 1"):
        Schema(["age"], [], None).validate(df)


def test_single_class_is_refused_when_classes_are_needed():
    df = _table().assign(y="n")
    with pytest.raises(SchemaError, match="1 distinct value"):
        Schema.infer(df, "y").validate(df, min_classes=2)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_table_round_trip(tmp_path, suffix):
    df = _table()
    p = write_table(df, tmp_path / f"t{suffix}")
    back = read_table(p)
    pd.testing.assert_frame_equal(back, df, check_dtype=False)
    assert [x.name for x in tmp_path.iterdir()] == [p.name]  # no temporary file left


def test_failed_write_leaves_no_file(tmp_path):
    class Boom(pd.DataFrame):
        def to_csv(self, *a, **k):
            raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        write_table(Boom(_table()), tmp_path / "z.csv")
    assert list(tmp_path.iterdir()) == []


def test_malformed_and_missing_files(tmp_path):
    with pytest.raises(PPDMError, match="does not exist"):
        read_table(tmp_path / "nope.csv")
    bad = tmp_path / "bad.parquet"
    bad.write_text("not parquet")
    with pytest.raises(PPDMError, match="cannot read"):
        read_table(bad)
    with pytest.raises(PPDMError, match="format"):
        read_table(bad.rename(tmp_path / "bad.xyz"))


@pytest.mark.parametrize("name", ["adult", "credit", "wine", "wbc", "banknote", "cmc", "abalone"])
def test_shipped_datasets_load_with_their_schema(name):
    df, schema = load(name)
    assert schema.class_column is not None
    assert set(schema.columns) == set(df.columns)
    assert name in names()


def test_adult_complete_cases_count():
    df, _ = load("adult", missing="drop")
    assert len(df) == 30162


def test_unknown_dataset():
    with pytest.raises(PPDMError, match="unknown dataset 'nope'"):
        load("nope")


def test_written_files_get_the_usual_mode(tmp_path):
    import os

    p = write_table(_table(), tmp_path / "z.csv")
    umask = os.umask(0)
    os.umask(umask)
    assert (p.stat().st_mode & 0o777) == (0o666 & ~umask)


def test_schema_roles_round_trip_and_checks() -> None:
    from ppdm.data.schema import Schema
    from ppdm.errors import SchemaError

    s = Schema(["a", "b"], ["c"], "y", identifiers=["id"], quasi_identifiers=["a", "c"], sensitive=["y"],
               weight="w", bounds={"a": [0, 1]}, categories={"c": ["u", "v"], "y": [0, 1]})
    assert Schema.from_json(s.to_json()) == s
    assert s.to_dict()["categories"] == {"c": ["u", "v"], "y": [0, 1]}
    assert [s.role(c) for c in ("id", "a", "b", "c", "y", "w")] == [
        "identifier", "quasi-identifier", "other", "quasi-identifier", "class", "weight"]
    assert s.all_columns == ["id", "a", "b", "c", "y", "w"]
    assert "id" not in s.attributes and "w" not in s.attributes
    # a new class leaves the quasi-identifiers
    assert s.with_class("c").quasi_identifiers == ["a"]
    for bad in (dict(identifiers=["a"]), dict(quasi_identifiers=["zz"]), dict(weight="b"),
                dict(sensitive=["zz"]), dict(bounds={"a": [1, 0]}), dict(bounds={"c": [0, 1]}),
                dict(categories={"a": [0, 1]}), dict(categories={"c": []}), dict(categories={"c": "uv"}),
                dict(categories={"c": ["u", "u"]})):
        with pytest.raises(SchemaError):
            Schema(["a", "b"], ["c"], "y", **bad)
