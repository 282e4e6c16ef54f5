"""CLI: ``ppdm anonymize --method random-substitution`` and ``ppdm reconstruct``."""

from __future__ import annotations

import json

import pandas as pd
from typer.testing import CliRunner

from ppdm.cli.app import app

runner = CliRunner()


def _anonymize(tmp_path, *extra: str):
    out = tmp_path / "Z.csv"
    args = ["anonymize", "builtin:wine", "--class", "class", "--method", "random-substitution",
            "--param", "gamma=10", "--param", "n_bins=20", "--out", str(out), *extra]
    return runner.invoke(app, args), out


def test_anonymize_writes_release_and_matrices_then_reconstruct(tmp_path):
    res, out = _anonymize(tmp_path)
    assert res.exit_code == 0, res.output
    side = tmp_path / "Z.matrices.json"
    meta = json.loads(side.read_text())
    assert meta["class_column"] == "class" and len(meta["attributes"]) == 13
    assert all(a["gamma"] == 10 and a["n"] == 20 for a in meta["attributes"])
    z = pd.read_csv(out)
    rec = tmp_path / "R.csv"
    res = runner.invoke(app, ["reconstruct", str(out), "--matrices", str(side), "--out", str(rec)])
    assert res.exit_code == 0, res.output
    r = pd.read_csv(rec)
    assert r.shape == z.shape and list(r.columns) == list(z.columns)
    assert (r.dtypes == z.dtypes).all()
    assert r["class"].equals(z["class"])
    # the default metadata path is the sidecar beside the release
    rec2 = tmp_path / "R2.csv"
    assert runner.invoke(app, ["reconstruct", str(out), "--out", str(rec2)]).exit_code == 0
    pd.testing.assert_frame_equal(pd.read_csv(rec2), r)


def test_reconstruct_bad_input_exit_2_and_no_output(tmp_path):
    res, out = _anonymize(tmp_path)
    assert res.exit_code == 0
    rec = tmp_path / "R.csv"
    bad_json = tmp_path / "bad.json"
    bad_json.write_text("{not json")
    other = tmp_path / "other.csv"
    pd.read_csv(out).drop(columns=["alcohol"]).to_csv(other, index=False)
    cases = [
        [str(out), "--matrices", str(tmp_path / "missing.json")],
        [str(out), "--matrices", str(bad_json)],
        [str(other), "--matrices", str(tmp_path / "Z.matrices.json")],
        [str(tmp_path / "nothere.csv"), "--matrices", str(tmp_path / "Z.matrices.json")],
        [str(out), "--ties", "sideways"],
    ]
    for args in cases:
        res = runner.invoke(app, ["reconstruct", *args, "--out", str(rec)])
        assert res.exit_code == 2, (args, res.output)
        assert not rec.exists()


def test_anonymize_bad_parameter_writes_nothing(tmp_path):
    res, out = _anonymize(tmp_path, "--param", "gamma=0")
    assert res.exit_code == 2 and "gamma" in res.output
    assert not out.exists() and not (tmp_path / "Z.matrices.json").exists()
    res = runner.invoke(app, ["anonymize", "builtin:wine", "--class", "class", "--method", "random-substitution",
                              "--param", "n_bins=1", "--param", "gamma=5", "--out", str(out)])
    assert res.exit_code == 2 and "n_bins" in res.output
    assert not out.exists() and not (tmp_path / "Z.matrices.json").exists()
