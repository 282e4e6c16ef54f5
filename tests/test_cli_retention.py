"""The ``rules``, ``anonymize`` (noise) and ``evaluate`` commands through Typer's CliRunner."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from ppdm.cli.app import app
from ppdm.data.provenance import in_input_order, read_private

runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, list(args))


@pytest.fixture()
def tables(tmp_path):
    rng = np.random.default_rng(0)
    n = 300
    x = pd.DataFrame({
        "age": rng.integers(18, 80, n),
        "hours": rng.normal(40, 8, n).round(1),
        "job": rng.choice(["a", "b", "c"], n),
    })
    x["label"] = np.where((x["age"] > 45) ^ (x["job"] == "c"), "hi", "lo")
    xp = tmp_path / "x.csv"
    x.to_csv(xp, index=False)
    return tmp_path, xp, x


def test_rules_prints_and_writes(tables):
    tmp, xp, x = tables
    r = run("rules", str(xp), "--class", "label")
    assert r.exit_code == 0, r.output
    assert r.stdout.startswith("# class: label\n") and " -> " in r.stdout
    out = tmp / "rules.txt"
    r = run("rules", str(xp), "--class", "label", "--param", "min_leaf_frac=0.1", "--out", str(out))
    assert r.exit_code == 0 and out.exists()
    from ppdm.rules import RuleSet

    assert len(RuleSet.load(out)) >= 2


@pytest.mark.parametrize("args, message", [
    (["--class", "nope"], "class column 'nope'"),
    (["--class", "label", "--param", "depth=3"], "no parameter 'depth'"),
    (["--class", "label", "--param", "min_leaf_frac=0.9"], "min_leaf_frac"),
])
def test_rules_bad_input_exits_2(tables, args, message):
    tmp, xp, _ = tables
    out = tmp / "r.txt"
    r = run("rules", str(xp), *args, "--out", str(out))
    assert r.exit_code == 2
    assert message in " ".join(r.output.split())
    assert "Traceback" not in r.output and not out.exists()


def test_rules_single_class_exits_2(tables):
    tmp, _, x = tables
    p = tmp / "one.csv"
    x.assign(label="lo").to_csv(p, index=False)
    r = run("rules", str(p), "--class", "label")
    assert r.exit_code == 2 and "distinct value" in r.output


@pytest.mark.parametrize("method", ["uniform-noise", "gaussian-noise"])
def test_anonymize_with_noise(tables, method):
    tmp, xp, x = tables
    out = tmp / "z.csv"
    r = run("anonymize", str(xp), "--class", "label", "--method", method, "--param", "level=0.2", "--seed", "1", "--experiment-seed",
            "--allow-verbatim", "--out", str(out))
    assert r.exit_code == 0, r.output
    z = pd.read_csv(out)
    assert list(z.columns) == list(x.columns) and len(z) == len(x)
    # the rows are shuffled; through the private log each is beside its original again
    z, pos = in_input_order(z, read_private(out))
    assert (z["label"].to_numpy() == x["label"].to_numpy()[pos]).all()
    again = tmp / "z2.csv"
    run("anonymize", str(xp), "--class", "label", "--method", method, "--param", "level=0.2", "--seed", "1", "--experiment-seed",
        "--allow-verbatim", "--out", str(again))
    assert again.read_bytes() == out.read_bytes()


@pytest.mark.parametrize("args, message", [
    (["--class", "label", "--method", "no-such-method"], "unknown technique"),
    (["--class", "label", "--method", "uniform-noise", "--param", "sigma=2"], "no parameter 'sigma'"),
    (["--class", "label", "--method", "uniform-noise", "--param", "level=2"], "level"),
    (["--class", "missing_col", "--method", "uniform-noise"], "class column 'missing_col'"),
])
def test_anonymize_bad_input_exits_2_and_writes_nothing(tables, args, message):
    tmp, xp, _ = tables
    out = tmp / "z.csv"
    r = run("anonymize", str(xp), *args, "--out", str(out))
    assert r.exit_code == 2, r.output
    assert message in " ".join(r.output.split())
    assert not out.exists() and not list(tmp.glob(".z.csv*"))


def test_anonymize_bad_file_and_nan(tables):
    tmp, _, x = tables
    out = tmp / "z.csv"
    bad = tmp / "bad.csv"
    bad.write_text('a,b\n1,"unclosed\n')
    r = run("anonymize", str(bad), "--method", "uniform-noise", "--out", str(out))
    assert r.exit_code == 2 and not out.exists()
    r = run("anonymize", str(tmp / "absent.csv"), "--method", "uniform-noise", "--out", str(out))
    assert r.exit_code == 2 and "does not exist" in r.output
    holes = tmp / "holes.csv"
    x.assign(hours=x["hours"].where(x.index != 5)).to_csv(holes, index=False)
    r = run("anonymize", str(holes), "--class", "label", "--method", "uniform-noise", "--out", str(out))
    assert r.exit_code == 2 and "missing value" in r.output and not out.exists()
    r = run("anonymize", str(holes), "--class", "label", "--method", "uniform-noise", "--missing", "drop",
            "--allow-verbatim", "--out", str(out))
    assert r.exit_code == 0 and len(pd.read_csv(out)) == len(x) - 1


def _anonymized(tmp, xp, level="0.2"):
    z = tmp / "z.csv"
    r = run("anonymize", str(xp), "--class", "label", "--method", "uniform-noise", "--param", f"level={level}",
            "--seed", "3", "--experiment-seed", "--allow-verbatim", "--out", str(z))
    assert r.exit_code == 0, r.output
    return z


def test_evaluate_json_has_every_default_measure(tables):
    tmp, xp, _ = tables
    zp = _anonymized(tmp, xp)
    r = run("evaluate", "--original", str(xp), "--anonymized", str(zp), "--class", "label", "--json")
    assert r.exit_code == 0, r.output
    obj = json.loads(r.stdout)
    m = obj["measures"]
    for k in ("rule_accuracy", "rule_support_distance", "rule_label_distance", "prediction_accuracy", "auc",
              "f_measure", "implausible_combinations"):
        assert isinstance(m[k]["value"], float) and m[k]["status"] == "computed"
        assert m[k]["kind"] == "utility" and m[k]["direction"] == "lower"
    assert 0 < m["rule_support_distance"]["value"] <= 1
    # the per-rule table is written once and named by the three rule measures
    assert [m[k]["tables"] for k in ("rule_accuracy", "rule_support_distance", "rule_label_distance")] == [
        ["per_rule"]] * 3
    assert "per_rule" in obj["tables"]  # the risk measures of the default set add their own tables
    assert not any(k != "per_rule" and k.startswith("per_rule") for k in obj["tables"])
    assert {"support_x", "support_z", "chi2", "flipped"} <= set(obj["tables"]["per_rule"]["columns"])
    assert m["auc"]["details"]["test_source"] == "holdout"


def test_evaluate_is_zero_for_z_equal_x_and_prints_tables(tables):
    tmp, xp, _ = tables
    r = run("evaluate", "-x", str(xp), "-z", str(xp), "--class", "label", "--pairing", "position", "--json")
    obj = json.loads(r.stdout)["measures"]
    assert all(obj[k]["value"] == 0 for k in ("rule_accuracy", "rule_support_distance", "rule_label_distance",
                                              "prediction_accuracy", "auc", "f_measure", "implausible_combinations"))
    assert "edit_rule_violations" not in obj  # no edit rules declared: not in the default set
    r = run("evaluate", "-x", str(xp), "-z", str(xp), "--class", "label", "--pairing", "position")
    assert r.exit_code == 0 and "rule_support_distance" in r.stdout and "support x" not in r.stdout
    r = run("evaluate", "-x", str(xp), "-z", str(xp), "--class", "label", "--pairing", "position", "--verbose")
    assert r.exit_code == 0 and "support x" in r.stdout  # the per-rule table, on request


def test_evaluate_with_rule_file_and_test_table(tables):
    tmp, xp, x = tables
    zp = _anonymized(tmp, xp)
    rules = tmp / "my_rules.txt"
    rules.write_text("# class: label\nage > 45 AND job != c -> hi\nage <= 45 -> lo\n")
    t = tmp / "t.csv"
    x.iloc[:100].to_csv(t, index=False)
    r = run("evaluate", "-x", str(xp), "-z", str(zp), "--class", "label", "--rules", str(rules), "--test", str(t),
            "--measures", "rule_support_distance,prediction_accuracy", "--json")
    assert r.exit_code == 0, r.output
    obj = json.loads(r.stdout)
    assert list(obj["measures"]) == ["rule_support_distance", "prediction_accuracy"]
    assert obj["provenance"]["technique"]["name"] == "uniform-noise"  # z.provenance.json, read by evaluate
    assert isinstance(obj["inputs"]["seed"], int)
    assert len(obj["tables"]["per_rule"]["rows"]) == 2
    acc = obj["measures"]["prediction_accuracy"]["details"]
    assert acc["n_test"] == 100 and acc["test_source"] == "given"
    assert obj["inputs"]["test"] == {"source": str(t), "rows": 100, "columns": x.shape[1]}


@pytest.mark.parametrize("case", ["columns", "measure", "rules_attr", "rules_class", "bad_z", "average",
                                  "threshold"])
def test_evaluate_bad_input_exits_2(tables, case):
    tmp, xp, x = tables
    zp = _anonymized(tmp, xp)
    args = ["evaluate", "-x", str(xp), "-z", str(zp), "--class", "label"]
    if case == "columns":
        other = tmp / "other.csv"
        x.drop(columns="hours").assign(extra=1).to_csv(other, index=False)
        args[4] = str(other)
        (tmp / "z.private.json").unlink()  # z judged against another table: without the private log
        want = "does not have the columns"
    elif case == "measure":
        args += ["--measures", "rule_accuracy,nonsense"]
        want = "unknown measure 'nonsense'"
    elif case == "rules_attr":
        f = tmp / "r.txt"
        f.write_text("salary > 3 -> hi\n")
        args += ["--rules", str(f)]
        want = "attribute 'salary'"
    elif case == "rules_class":
        f = tmp / "r.txt"
        f.write_text("# class: job\nage > 3 -> a\n")
        args += ["--rules", str(f)]
        want = "predicts 'job'"
    elif case == "bad_z":
        args[4] = str(tmp / "nowhere.csv")
        want = "does not exist"
    elif case == "average":  # a wrong option is the user's to fix: no skipping
        args += ["--measures", "auc", "--param", "average=median"]
        want = "average"
    else:
        args += ["--measures", "auc", "--threshold", "ddr=0.1"]
        want = "'ddr'"
    r = run(*args)
    assert r.exit_code == 2, r.output
    assert want in " ".join(r.output.split())
    assert "Traceback" not in r.output


def test_evaluate_multiclass_with_average(tables):
    tmp, _, x = tables
    y3 = tmp / "three.csv"
    x.assign(label=np.array(["p", "q", "r"])[(x["age"] // 20) % 3]).to_csv(y3, index=False)
    r = run("evaluate", "-x", str(y3), "-z", str(y3), "--class", "label", "--param", "average=weighted", "--json",
            "--pairing", "position")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["measures"]["auc"]["details"]["average"] == "weighted"
    # without an averaging, three classes get the documented default (macro) instead of failing
    r = run("evaluate", "-x", str(y3), "-z", str(y3), "--class", "label", "--json", "--pairing", "position")
    assert r.exit_code == 0, r.output
    m = json.loads(r.stdout)["measures"]
    assert m["auc"]["details"]["average"] == "macro" and m["f_measure"]["details"]["average"] == "macro"
    assert m["auc"]["value"] == 0 and m["f_measure"]["value"] == 0


def test_evaluate_builtin_needs_missing_drop():
    r = run("evaluate", "-x", "builtin:adult", "-z", "builtin:adult", "--measures", "rule_support_distance")
    assert r.exit_code == 2 and "--missing drop" in " ".join(r.output.split())
