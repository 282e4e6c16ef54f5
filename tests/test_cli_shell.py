"""Exit codes of the CLI shell: 2 for bad input (also under the test runner), no output on failure."""

from __future__ import annotations

import json
import subprocess
import sys

from typer.testing import CliRunner

from ppdm.cli.app import app

runner = CliRunner()


def test_unknown_technique_exits_2_and_writes_nothing(tmp_path):
    out = tmp_path / "z.csv"
    r = runner.invoke(app, ["anonymize", "builtin:wine", "--class", "class", "--method", "nope", "--out", str(out)])
    assert r.exit_code == 2
    assert "unknown technique 'nope'" in r.output
    assert not out.exists()


def test_missing_class_column_exits_2(tmp_path):
    r = runner.invoke(app, ["anonymize", "builtin:wine", "--class", "income", "--method", "uniform-noise",
                            "--out", str(tmp_path / "z.csv")])
    assert r.exit_code == 2 and "class column 'income'" in r.output


def test_malformed_file_exits_2(tmp_path):
    bad = tmp_path / "bad.parquet"
    bad.write_text("garbage")
    r = runner.invoke(app, ["anonymize", str(bad), "--method", "uniform-noise", "--out", str(tmp_path / "z.csv")])
    assert r.exit_code == 2 and "cannot read" in r.output


def test_usage_error_exits_2():
    r = runner.invoke(app, ["anonymize"])
    assert r.exit_code == 2


def test_entry_point_maps_errors_to_2(tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "ppdm.cli", "anonymize", str(tmp_path / "none.csv"), "--method", "uniform-noise",
         "--out", str(tmp_path / "z.csv")],
        capture_output=True, text=True,
    )
    assert r.returncode == 2, r.stderr
    assert "does not exist" in r.stderr and "Traceback" not in r.stderr


def test_methods_and_measures_list_every_registered_name():
    from ppdm.anonymize.registry import TECHNIQUES, _load_all
    from ppdm.experiments.evaluation import load_all_measures
    from ppdm.metrics.base import MEASURES

    _load_all()
    load_all_measures()
    r = runner.invoke(app, ["methods", "--json"])
    assert r.exit_code == 0
    methods = json.loads(r.output)
    assert set(methods["methods"]) == set(TECHNIQUES)
    assert methods["methods"]["uniform-noise"]["parameters"] == {"level": 0.6}  # the default that passes the gate
    r = runner.invoke(app, ["measures", "--json"])
    assert r.exit_code == 0
    measures = json.loads(r.output)
    assert set(measures["measures"]) == set(MEASURES)
    assert measures["measures"]["ddr"]["direction"] == "lower" and measures["measures"]["ddr"]["range"] == [0, 1]
    # both listings have the same shape: a versioned header and an object by name
    assert {k for k in methods if k != "methods"} == {k for k in measures if k != "measures"} == {
        "format", "format_version", "ppdm_version"}
    assert (methods["format"], measures["format"]) == ("ppdm.methods", "ppdm.measures")
    r = runner.invoke(app, ["methods"])
    assert r.exit_code == 0 and "forest-framework" in r.output


def test_unwritable_output_is_refused_before_any_work(tmp_path):
    r = runner.invoke(app, ["anonymize", "builtin:wine", "--method", "uniform-noise", "--out", str(tmp_path / "z.xlsx")])
    assert r.exit_code == 2 and "cannot tell the format" in r.output
    r = runner.invoke(app, ["anonymize", "builtin:wine", "--method", "uniform-noise",
                            "--out", str(tmp_path / "no" / "z.csv")])
    assert r.exit_code == 2 and "does not exist" in r.output
    assert list(tmp_path.iterdir()) == []


def test_compare_passes_measure_options(tmp_path):
    args = ["compare", "builtin:wine", "--technique", "uniform-noise:level=0.1", "--measures", "auc", "--cv", "2"]
    r = runner.invoke(app, [*args, "--param", "average=median"])
    assert r.exit_code == 2 and "average" in r.output  # a wrong option stops the run
    r = runner.invoke(app, [*args, "--param", "average=weighted", "--out", str(tmp_path / "o")])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "o" / "summary.csv").exists()
    meta = json.loads((tmp_path / "o" / "meta.json").read_text())
    assert meta["measure_info"]["auc"]["direction"] == "lower"
