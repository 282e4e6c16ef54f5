"""Disclosure risk from the command line: the control set (--control, --holdout, compare's
held-out fold), the default risk set with inferred quasi-identifiers, and bad input that
gets one line and exit code 2 with nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from people_table import people
from typer.testing import CliRunner

from ppdm.cli.app import app
from ppdm.data.schema import Schema
from ppdm.experiments.compare import compare
from ppdm.metrics.judgement import ATTACKS

runner = CliRunner()


def _table(n: int = 240, seed: int = 0) -> pd.DataFrame:
    return people(n, seed)


@pytest.fixture
def xfile(tmp_path: Path) -> Path:
    p = tmp_path / "x.csv"
    _table().to_csv(p, index=False)
    return p


def _one_line_exit_2(r, needle: str) -> None:
    assert r.exit_code == 2, r.output
    assert needle in r.output and "Traceback" not in r.output
    assert len(r.output.strip().splitlines()) == 1, r.output


def _files(d: Path) -> set[str]:
    return {p.name for p in d.iterdir()}


def test_holdout_writes_the_control_set_and_evaluate_finds_it(xfile: Path) -> None:
    d = xfile.parent
    z = d / "z.csv"
    r = runner.invoke(app, ["anonymize", str(xfile), "--class", "y", "--method", "uniform-noise", "-p", "level=0.3",
                            "--allow-verbatim",
                            "--holdout", "0.25", "--seed", "1", "--experiment-seed", "--out", str(z)])
    assert r.exit_code == 0, r.output
    assert {"z.csv", "z.provenance.json", "z.private.json", "z.control.csv"} <= _files(d)
    prov = json.loads((d / "z.provenance.json").read_text())
    assert "holdout" not in prov and "input" not in prov  # the public record says nothing of x's records
    mine = json.loads((d / "z.private.json").read_text())
    assert {k: mine["holdout"][k] for k in ("fraction", "rows", "control")} == {
        "fraction": 0.25, "rows": 60, "control": "z.control.csv"}
    assert mine["input"]["rows"] == 240 and mine["input"]["rows_used"] == 180
    x, zz, c = pd.read_csv(xfile), pd.read_csv(z), pd.read_csv(d / "z.control.csv")
    assert len(zz) == 180 and len(c) == 60 and list(c.columns) == list(x.columns)
    # the control records are records of x, and none of them went into the release's input
    both = pd.concat([x, c]).duplicated(keep=False)
    assert both.iloc[len(x):].all()

    r = runner.invoke(app, ["evaluate", "-x", str(xfile), "-z", str(z), "--class", "y", "--json", "--seed", "0"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    m = doc["measures"]
    assert doc["inputs"]["control"]["rows"] == 60
    for name in ATTACKS:
        assert m[name]["status"] == "computed", (name, m[name].get("reason"))
    # x without the held-out records lines up with z record by record
    assert m["record_linkage"]["status"] == "computed"
    # the noise perturbs the categorical quasi-identifiers too: key frequencies do not judge it,
    # intruder matching does
    assert m["k_anonymity"]["status"] == "skipped" and "perturbed" in m["k_anonymity"]["reason"]
    assert m["qi_matching"]["status"] == "computed" and m["qi_matching"]["details"]["key_source"] == "inferred"
    assert "qi_matching" in {j["measure"] for j in doc["summary"]["risk"]["judged"]}


def test_default_evaluate_shows_risk_and_says_why_the_attacks_are_skipped(xfile: Path) -> None:
    z = xfile.parent / "z.csv"
    zz = pd.read_csv(xfile)
    zz["age"] = zz["age"] + 3.0
    zz.to_csv(z, index=False)
    r = runner.invoke(app, ["evaluate", "-x", str(xfile), "-z", str(z), "--class", "y", "--json", "--seed", "0",
                            "--pairing", "position"])
    assert r.exit_code == 0, r.output
    m = json.loads(r.stdout)["measures"]
    for name in ("k_anonymity", "sample_uniques", "reidentification_risk", "record_linkage"):
        assert m[name]["status"] == "computed" and m[name]["kind"] == "risk", name
    for name in ATTACKS:
        assert m[name]["status"] == "skipped" and "control set" in m[name]["reason"]
    # explicit control: the attacks run
    c = xfile.parent / "c.csv"
    _table(80, seed=9).to_csv(c, index=False)
    r = runner.invoke(app, ["evaluate", "-x", str(xfile), "-z", str(z), "--class", "y", "--json", "--seed", "0",
                            "--control", str(c), "--measures", ",".join(ATTACKS)])
    assert r.exit_code == 0, r.output
    m = json.loads(r.stdout)["measures"]
    assert all(m[a]["status"] == "computed" and 0 <= m[a]["value"] <= 1 for a in ATTACKS)


def test_a_control_set_with_other_columns_is_refused(xfile: Path) -> None:
    c = xfile.parent / "c.csv"
    _table(50).rename(columns={"job": "work"}).to_csv(c, index=False)
    before = _files(xfile.parent)
    r = runner.invoke(app, ["evaluate", "-x", str(xfile), "-z", str(xfile), "--class", "y", "--control", str(c),
                            "--html", str(xfile.parent / "r.html")])
    _one_line_exit_2(r, "'work'")
    assert "control" in r.output and _files(xfile.parent) == before


@pytest.mark.parametrize("bad", [0, -3])
def test_zero_or_negative_weights_are_refused(tmp_path: Path, bad: int) -> None:
    x = _table(40).assign(w=10.0)
    x.loc[5, "w"] = bad
    p = tmp_path / "x.csv"
    x.to_csv(p, index=False)
    r = runner.invoke(app, ["evaluate", "-x", str(p), "-z", str(p), "--class", "y", "--qi", "sex,job",
                            "--weight", "w", "--measures", "reidentification_risk"])
    _one_line_exit_2(r, "'w'")
    assert "zero or negative" in r.output


def test_missing_weights_are_refused(tmp_path: Path) -> None:
    x = _table(40).assign(w=10.0)
    x.loc[5, "w"] = np.nan
    p = tmp_path / "x.csv"
    x.to_csv(p, index=False)
    r = runner.invoke(app, ["evaluate", "-x", str(p), "-z", str(p), "--class", "y", "--qi", "sex,job",
                            "--weight", "w", "--measures", "reidentification_risk"])
    _one_line_exit_2(r, "'w'")


def test_named_key_measures_need_declared_quasi_identifiers(xfile: Path) -> None:
    r = runner.invoke(app, ["evaluate", "-x", str(xfile), "-z", str(xfile), "--class", "y",
                            "--measures", "sample_uniques,suda2"])
    _one_line_exit_2(r, "--qi")


@pytest.mark.parametrize("value", ["0", "1", "1.5", "-0.2"])
def test_a_bad_holdout_is_refused_and_nothing_is_written(xfile: Path, value: str) -> None:
    before = _files(xfile.parent)
    r = runner.invoke(app, ["anonymize", str(xfile), "--class", "y", "--method", "uniform-noise",
                            "--holdout", value, "--out", str(xfile.parent / "z.csv")])
    _one_line_exit_2(r, "holdout")
    assert _files(xfile.parent) == before


def test_compare_uses_the_held_out_fold_as_control() -> None:
    x = _table(150)
    sch = Schema(numeric=["age", "hours"], categorical=["sex", "job"], class_column="y")
    res = compare(x, sch, ["uniform-noise:level=0.2"], "singling_out_univariate,k_anonymity,auc", cv=3,
                  random_state=0, baseline=True)
    d = res.data
    so = d[d["measure"] == "singling_out_univariate"]["value"].to_numpy(dtype=float)
    assert len(so) == 6 and np.isfinite(so).all() and ((so >= 0) & (so <= 1)).all()


def test_compare_report_maps_the_risk_measures_that_were_computed(tmp_path: Path) -> None:
    """A numeric table has no key for the key-variable measures: the risk–utility maps go to
    the risk measures that have values (record linkage, the attacks on the held-out fold)."""
    p = tmp_path / "x.csv"
    _table(120)[["age", "hours", "y"]].to_csv(p, index=False)
    # seeded: with exact joins first, some draws link every record as the baseline does, and a measure
    # whose means are all equal gets no map
    r = runner.invoke(app, ["compare", str(p), "--class", "y", "--technique", "uniform-noise:level=0.2", "--cv", "3",
                            "--measures", "k_anonymity,sample_uniques,reidentification_risk,record_linkage,prediction_accuracy",
                            "--seed", "0", "--out", str(tmp_path / "res"), "--report"])
    assert r.exit_code == 0, r.output
    page = (tmp_path / "res" / "report.html").read_text()
    assert "risk–utility map: record_linkage against" in page
    assert "risk–utility map: k_anonymity" not in page
