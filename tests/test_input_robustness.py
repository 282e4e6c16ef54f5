"""Reading never loses or silently alters data, and outputs never destroy inputs.

Each bad input gets one line and exit 2 from the CLI, before any work, with nothing
written: duplicate header names, short and long ragged rows, a one-column table whose
header holds another separator, an output that is an input, an output folder that is not
writable, ``--seed abc``. Names and values keep their spaces exactly.
"""

from __future__ import annotations

import gzip
import os
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from ppdm.cli.app import app
from ppdm.data import io as ppdm_io
from ppdm.data.io import check_output_table, read_table
from ppdm.data.schema import Schema
from ppdm.errors import PPDMError, SchemaError

runner = CliRunner()

#: this file is not about the release gate (tests/test_release_gate.py): weak releases are written
GATE_OFF = ["--allow-verbatim", "--allow-untouched-keys"]


def _rows(n: int = 40, sep: str = ",") -> str:
    return "".join(f"{(i * 37) % 11}{sep}{(i * 7) % 13}{sep}{'yes' if i % 3 else 'no'}\n" for i in range(n))


def one_line_exit_2(res, folder: Path, before: set[str], needle: str) -> None:
    out = res.output.strip()
    assert res.exit_code == 2, out
    assert len(out.splitlines()) == 1 and out.startswith("error:"), out
    assert needle in out, out
    assert {p.name for p in folder.iterdir()} == before


# ----------------------------------------------------------------------------- read_table
def test_duplicate_header_names_are_refused_not_renamed(tmp_path: Path) -> None:
    p = tmp_path / "dup.csv"
    p.write_text("a,b,a,label\n" + "".join(f"{i},{i},{i},y\n" for i in range(5)))
    with pytest.raises(PPDMError, match="names the column 'a' twice"):
        read_table(p)
    gz = tmp_path / "dup.csv.gz"
    with gzip.open(gz, "wt") as fh:
        fh.write("a,b,a\n1,2,3\n")
    with pytest.raises(PPDMError, match="'a' twice"):
        read_table(gz)


def test_short_row_is_malformed_not_missing(tmp_path: Path) -> None:
    p = tmp_path / "short.csv"
    p.write_text("a,b,label\n" + _rows(10) + "7,8\n" + _rows(3))
    with pytest.raises(PPDMError, match="line 12 has 2 field"):
        read_table(p)
    # an empty last cell is a missing value, not a short row
    ok = tmp_path / "empty_cell.csv"
    ok.write_text("a,b,label\n1,2,\n3,4,y\n")
    df = read_table(ok)
    assert df.shape == (2, 3) and df["label"].isna().sum() == 1
    # blank lines are not records
    blank = tmp_path / "blank.csv"
    blank.write_text("a,b,label\n1,2,y\n\n3,4,\n")
    assert read_table(blank).shape == (2, 3)


def test_rows_longer_than_the_header_are_refused(tmp_path: Path) -> None:
    every = tmp_path / "every.csv"
    every.write_text("a,b\n1,2,3\n4,5,6\n")  # pandas would silently make the first field an index
    with pytest.raises(PPDMError, match="more fields than its header"):
        read_table(every)
    some = tmp_path / "some.csv"
    some.write_text("a,b\n1,2\n4,5,6\n")
    with pytest.raises(PPDMError, match="is malformed: line 3 has 3 fields, the header has 2"):
        read_table(some)


@pytest.mark.parametrize(("sep", "shown"), [(";", ";"), ("\t", "\\t"), ("|", "|")])
def test_one_column_header_with_another_separator_suggests_it(tmp_path: Path, sep: str, shown: str) -> None:
    p = tmp_path / "x.csv"
    p.write_text(f"a{sep}b{sep}label\n" + _rows(20, sep))
    with pytest.raises(PPDMError, match=re.escape(f"sep='{shown}'")):
        read_table(p)
    df = read_table(p, sep="tab" if sep == "\t" else sep)
    assert list(df.columns) == ["a", "b", "label"] and len(df) == 20


def test_semicolon_file_from_the_cli(tmp_path: Path) -> None:
    """The issue's case: without --sep the table was one text column, published almost verbatim."""
    p = tmp_path / "semi.csv"
    p.write_text("a;b;label\n" + _rows(200, ";"))
    before = {x.name for x in tmp_path.iterdir()}
    res = runner.invoke(app, ["anonymize", *GATE_OFF, str(p), "-m", "uniform-noise", "-o", str(tmp_path / "z.csv")])
    one_line_exit_2(res, tmp_path, before, "--sep ';'")
    assert "sep=" not in res.output  # the CLI names its option, not the keyword argument
    res = runner.invoke(app, ["anonymize", *GATE_OFF, str(p), "-m", "uniform-noise", "--sep", ";", "--class", "label",
                              "-o", str(tmp_path / "z.csv")])
    assert res.exit_code == 0, res.output
    assert list(pd.read_csv(tmp_path / "z.csv").columns) == ["a", "b", "label"]


def test_spaces_in_names_and_values_are_kept(tmp_path: Path) -> None:
    p = tmp_path / "space.csv"
    p.write_text(" a,b ,label\n" + "".join(f"{i % 7}, {i % 5} ,{' y' if i % 2 else 'n '}\n" for i in range(30)))
    df = read_table(p)
    assert list(df.columns) == [" a", "b ", "label"]
    assert set(df["label"]) == {" y", "n "}
    assert df["b "].tolist() == [i % 5 for i in range(30)]  # numbers are numbers, spaces or not
    # the class named without its spaces: the message points at the spaced column
    with pytest.raises(SchemaError, match="' a' differs from it by spaces"):
        Schema.infer(df, "a")
    res = runner.invoke(app, ["anonymize", *GATE_OFF, str(p), "-m", "uniform-noise", "--class", "label", "--seed", "1", "--experiment-seed",
                              "-o", str(tmp_path / "z.csv")])
    assert res.exit_code == 0, res.output
    z = pd.read_csv(tmp_path / "z.csv")
    assert list(z.columns) == [" a", "b ", "label"] and set(z["label"]) <= {" y", "n "}


def test_builtin_datasets_load_as_before(shared_dir: Path) -> None:
    """The shipped copies are stored clean; they load exactly like the shared CSV files."""
    from ppdm.data.datasets import load

    x, _ = load("adult")
    raw = pd.read_csv(shared_dir / "datasets" / "adult.csv", na_values=["?"], skipinitialspace=True)
    assert list(x.columns) == list(raw.columns)
    pd.testing.assert_frame_equal(x.reset_index(drop=True), raw, check_dtype=False)


# ----------------------------------------------------------------------------- outputs
def test_output_that_is_an_input_is_refused(tmp_path: Path) -> None:
    x = tmp_path / "x.csv"
    x.write_text("a,b,label\n" + _rows(40))
    data = x.read_bytes()
    before = {p.name for p in tmp_path.iterdir()}
    for args in (
        ["anonymize", *GATE_OFF, str(x), "-m", "uniform-noise", "--class", "label", "-o", str(x)],
        ["anonymize", *GATE_OFF, str(x), "-m", "uniform-noise", "--class", "label", "-o", str(tmp_path / "." / "x.csv")],
        ["rules", str(x), "--class", "label", "-o", str(x)],
        ["evaluate", "-x", str(x), "-z", str(x), "--class", "label", "--measures", "il1s", "--html", str(x)],
        ["schema", str(x), "-o", str(x), "--force"],
    ):
        res = runner.invoke(app, args)
        one_line_exit_2(res, tmp_path, before, "is the input")
        assert x.read_bytes() == data
    # through a symbolic link too
    link = tmp_path / "link.csv"
    link.symlink_to(x)
    with pytest.raises(PPDMError, match="is the input"):
        check_output_table(link, inputs=(x,))


def test_unwritable_output_folder_is_named_up_front(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    x = tmp_path / "x.csv"
    x.write_text("a,b,label\n" + _rows(40))
    ro = tmp_path / "ro"
    ro.mkdir()
    real = os.access
    monkeypatch.setattr(ppdm_io.os, "access", lambda p, mode: False if Path(p) == ro else real(p, mode))
    res = runner.invoke(app, ["anonymize", *GATE_OFF, str(x), "-m", "uniform-noise", "--class", "label",
                              "-o", str(ro / "z.csv")])
    one_line_exit_2(res, tmp_path, {"x.csv", "ro"}, f"cannot write output '{ro / 'z.csv'}'")
    assert ".tmp" not in res.output and list(ro.iterdir()) == []


def test_failed_temporary_file_names_the_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def denied(*a, **k):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("ppdm.data.atomic.tempfile.mkstemp", denied)
    with pytest.raises(PPDMError, match=r"cannot write output '.*z\.csv': Permission denied"):
        ppdm_io.write_table(pd.DataFrame({"a": [1]}), tmp_path / "z.csv")


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write into a read-only folder")
def test_real_read_only_folder(tmp_path: Path) -> None:  # pragma: no cover - not run as root
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        with pytest.raises(PPDMError, match="not writable"):
            check_output_table(ro / "z.csv")
    finally:
        ro.chmod(0o755)


# ----------------------------------------------------------------------------- options
@pytest.mark.parametrize("cmd", [
    ["anonymize", *GATE_OFF, "builtin:wine", "-m", "uniform-noise", "-o", "z.csv"],
    ["evaluate", "-x", "builtin:wine", "-z", "builtin:wine"],
    ["rules", "builtin:wine"],
    ["compare", "builtin:wine", "-t", "uniform-noise"],
    ["reproduce", "rounding", "-o", "out"],
])
def test_bad_seed_is_one_line(cmd: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(app, [*cmd, "--seed", "abc"])
    one_line_exit_2(res, tmp_path, set(), "--seed")
    assert "Usage" not in res.output and "╭" not in res.output


def test_cli_messages_name_options_not_keywords(tmp_path: Path) -> None:
    x = tmp_path / "x.csv"
    pd.DataFrame({"a": np.random.default_rng(0).normal(0, 1, 30), "label": ["y", "n"] * 15}).to_csv(x, index=False)
    for args in (["anonymize", *GATE_OFF, str(x), "-m", "framework", "-o", str(tmp_path / "z.csv")],
                 ["anonymize", *GATE_OFF, str(x), "-m", "rounding", "-p", "method=mdlp", "-o", str(tmp_path / "z.csv")],
                 ["rules", str(x)]):
        res = runner.invoke(app, args)
        assert res.exit_code == 2, res.output
        assert "--class" in res.output and "class_column" not in res.output, res.output


def test_schema_file_with_an_unknown_key_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SchemaError, match="unknown key 'quasi_identifier'"):
        Schema.from_dict({"numeric": ["a"], "quasi_identifier": ["a"]})
    assert Schema.from_dict({"numeric": ["a"], "_comment": "ignored"}) == Schema(["a"])


def test_every_command_that_reads_a_table_has_sep() -> None:
    """The separator hint names --sep: every command that reads a user's table must offer it."""
    import typer

    root = typer.main.get_command(app)
    commands = {"anonymize", "evaluate", "rules", "tree", "compare", "schema", "reconstruct"}
    experiments = {"retention-experiment", "dp-experiment"}
    for name in commands | experiments:
        cmd = root.commands["reproduce"].commands[name] if name in experiments else root.commands[name]
        opts = {o for p in cmd.params for o in getattr(p, "opts", [])}
        assert "--sep" in opts, name


def test_tree_and_reconstruct_outputs_are_not_inputs(tmp_path: Path) -> None:
    x = tmp_path / "x.csv"
    x.write_text("a,b,label\n" + _rows(40))
    data = x.read_bytes()
    for args in (["tree", str(x), "--class", "label", "--rules-out", str(x)],
                 ["reconstruct", str(x), "--matrices", str(tmp_path / "m.json"), "-o", str(x)]):
        res = runner.invoke(app, args)
        one_line_exit_2(res, tmp_path, {"x.csv"}, "is the input")
        assert x.read_bytes() == data
