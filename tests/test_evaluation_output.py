"""What ``ppdm evaluate`` prints and writes: one versioned JSON document that follows
docs/ppdm.schema.json, measures that never abort an evaluation, verdicts with their
numbers and thresholds, the provenance of the release, and reports that hold aggregates
only."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from ppdm.cli.app import app
from ppdm.data.provenance import in_input_order, provenance_path, read_private
from ppdm.errors import MeasureNotApplicable
from ppdm.experiments.evaluation import load_all_measures, resolve_measures, run_measure, skip_reason
from ppdm.metrics.base import MEASURES, EvaluationContext, MeasureResult, register_measure
from ppdm.report.evaluation import evaluation_document, verdict

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((ROOT / "docs" / "ppdm.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
runner = CliRunner()

#: this file is not about the release gate (tests/test_release_gate.py): weak releases are written
GATE_OFF = ["--allow-verbatim", "--allow-untouched-keys"]

# recognisable cell values planted in a few records: none may appear in any output
PLANTED_NUMBERS = [31415.926535, 27182.818284, 16180.339887]
PLANTED_LABEL = "ZQX-planted-label"


def validate(doc: dict[str, Any]) -> None:
    errors = sorted(VALIDATOR.iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, "; ".join(f"{list(e.path)}: {e.message[:200]}" for e in errors[:5])


def planted_table(n: int = 240, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a = rng.normal(50, 10, n).round(3)
    x = pd.DataFrame({
        "a": a,
        "b": rng.normal(5, 2, n).round(3),
        "c": rng.integers(0, 40, n).astype(float),
        "colour": rng.choice(["red", "green", "blue"], n),
        "label": np.where(a + rng.normal(0, 5, n) > 50, "yes", "no"),
    })
    for i, v in enumerate(PLANTED_NUMBERS):
        x.loc[10 + i, "b"] = v
    x.loc[[3, 7], "colour"] = PLANTED_LABEL  # two records: too few for any rule or leaf to single out
    return x


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("release")
    x = planted_table()
    xp, zp = d / "x.csv", d / "z.csv"
    x.to_csv(xp, index=False)
    r = runner.invoke(app, ["anonymize", *GATE_OFF, str(xp), "--class", "label", "--method", "gaussian-noise",
                            "--param", "level=0.3", "--seed", "3", "--experiment-seed", "--out", str(zp)])
    assert r.exit_code == 0, r.output
    return {"dir": d, "x": xp, "z": zp}


def evaluate(*args: str) -> Any:
    return runner.invoke(app, ["evaluate", *args])


# ----------------------------------------------------------------------- the schema
def test_the_schema_is_a_valid_json_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["$defs"]["header"]["properties"]["format_version"] == {"const": 2}


def test_evaluation_json_follows_the_schema(release, tmp_path) -> None:
    r = evaluate("-x", str(release["x"]), "-z", str(release["z"]), "--class", "label", "--measures", "all",
                 "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    validate(doc)
    assert doc["format"] == "ppdm.evaluation" and doc["format_version"] == 2
    assert doc["provenance"]["technique"]["name"] == "gaussian-noise"  # the sidecar anonymize wrote beside z
    load_all_measures()
    assert set(doc["measures"]) == {m.name for m in resolve_measures("all")}
    for name, m in doc["measures"].items():
        spec = MEASURES[name]
        assert (m["kind"], m["direction"], tuple(m["range"])) == (spec.kind, spec.direction, spec.value_range)
        assert m["meaning"]
    # a broken document is refused: the test can fail
    broken = json.loads(r.stdout)
    broken["measures"]["ddr"]["status"] = "skipped"
    assert list(VALIDATOR.iter_errors(broken))


def test_methods_and_measures_json_follow_the_schema() -> None:
    for cmd in ("methods", "measures"):
        r = runner.invoke(app, [cmd, "--json"])
        assert r.exit_code == 0, r.output
        doc = json.loads(r.stdout)
        validate(doc)
        assert doc["format"] == f"ppdm.{cmd}" and isinstance(doc[cmd], dict) and doc[cmd]


def test_the_provenance_sidecar_is_carried(release, tmp_path) -> None:
    z = tmp_path / "z.csv"
    z.write_bytes(release["z"].read_bytes())
    sidecar = {"format": "ppdm-provenance", "version": 1, "ppdm_version": "0.1.0", "created": "2024-01-01T00:00:00Z",
               "technique": {"name": "gaussian-noise", "class": "GaussianNoise", "parameters": {"level": 0.3}},
               "seeded": True, "input": {"source": "x.csv", "sha256": "ab" * 32, "rows": 240, "columns": 5},
               "removed_identifiers": [], "release_check": {"passed": True}}
    assert provenance_path(z) == tmp_path / "z.provenance.json"
    provenance_path(z).write_text(json.dumps(sidecar))
    html = tmp_path / "report.html"
    r = evaluate("-x", str(release["x"]), "-z", str(z), "--class", "label", "--measures", "rule_accuracy,ddr",
                 "--json", "--html", str(html))
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    validate(doc)
    assert doc["provenance"] == sidecar
    page = html.read_text()
    assert "was released by gaussian-noise with level=0.3 from x.csv" in page
    provenance_path(z).write_text("{not json")
    r = evaluate("-x", str(release["x"]), "-z", str(z), "--class", "label", "--measures", "ddr")
    assert r.exit_code == 2 and "provenance" in r.output


# ----------------------------------------------------------- measures never abort
def test_a_constant_column_skips_the_measures_it_breaks_and_only_those(release, tmp_path) -> None:
    # z's rows put back beside their originals (its private log), so the copies pair by position
    z, pos = in_input_order(pd.read_csv(release["z"]), read_private(release["z"]))
    x = pd.read_csv(release["x"]).iloc[pos].reset_index(drop=True).assign(c=4.0)
    z = z.assign(c=4.0)
    xp, zp = tmp_path / "x.csv", tmp_path / "z.csv"
    x.to_csv(xp, index=False)
    z.to_csv(zp, index=False)
    r = evaluate("-x", str(xp), "-z", str(zp), "--class", "label", "--measures", "all", "--json",
                 "--pairing", "position")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    validate(doc)
    skipped = {k: m["reason"] for k, m in doc["measures"].items() if m["status"] == "skipped"}
    assert {"il1s", "il_metrics", "correlation_difference"} <= set(skipped)
    # the attacks need a control set, the key-variable measures a key, l-diversity a sensitive attribute,
    # edit_rule_violations declared edit rules
    other = {k for k, reason in skipped.items()
             if any(w in reason for w in ("control set", "quasi-identifiers", "sensitive attribute", "edit_rules"))}
    assert {k: r for k, r in skipped.items() if k not in other and not ("'c'" in r and "constant" in r)} == {}
    assert doc["measures"]["ddr"]["status"] == "computed" and doc["measures"]["auc"]["status"] == "computed"
    # the terminal shows the reason too
    r = evaluate("-x", str(xp), "-z", str(zp), "--class", "label", "--measures", "il1s,ddr", "--pairing", "position")
    assert r.exit_code == 0 and "il1s skipped" in r.stdout and "constant" in r.stdout


def test_a_test_table_with_one_class_skips_auc(release, tmp_path) -> None:
    x = pd.read_csv(release["x"])
    t = tmp_path / "t.csv"
    x[x["label"] == "yes"].to_csv(t, index=False)
    r = evaluate("-x", str(release["x"]), "-z", str(release["z"]), "--class", "label", "--test", str(t), "--json")
    assert r.exit_code == 0, r.output
    m = json.loads(r.stdout)["measures"]
    assert m["auc"]["status"] == "skipped" and "one class" in m["auc"]["reason"] and m["auc"]["value"] is None
    assert m["prediction_accuracy"]["status"] == "computed"


def test_no_numeric_attribute_skips_the_numeric_measures(tmp_path) -> None:
    x = planted_table()[["colour", "label"]].assign(colour2=lambda d: d["colour"].str[:1])
    xp = tmp_path / "x.csv"
    x.to_csv(xp, index=False)
    r = evaluate("-x", str(xp), "-z", str(xp), "--class", "label", "--measures", "all", "--json",
                 "--pairing", "position")
    assert r.exit_code == 0, r.output
    m = json.loads(r.stdout)["measures"]
    for name in ("ddr", "idr", "il1s", "spectral_filtering"):
        assert m[name]["status"] == "skipped" and "numeric" in m[name]["reason"], (name, m[name])
    assert m["rule_accuracy"]["value"] == 0


@dataclass
class _Boom(MeasureResult):
    pass


def test_internal_errors_still_surface(release) -> None:
    """A defect is not a property of the table: it stops the evaluation (exit 1, named)."""

    def broken(ctx: EvaluationContext) -> MeasureResult:
        raise ZeroDivisionError("a bug")

    def not_here(ctx: EvaluationContext) -> MeasureResult:
        raise MeasureNotApplicable("this table has no quasi-identifiers")

    register_measure("t_broken", kind="risk", description="a defect", needs_class=False)(broken)
    register_measure("t_not_here", kind="risk", description="not applicable", needs_class=False)(not_here)
    try:
        r = evaluate("-x", str(release["x"]), "-z", str(release["z"]), "--class", "label", "--measures",
                     "t_not_here,ddr", "--json")
        assert r.exit_code == 0, r.output
        m = json.loads(r.stdout)["measures"]
        assert m["t_not_here"] == {**m["t_not_here"], "status": "skipped", "value": None,
                                   "reason": "this table has no quasi-identifiers"}
        r = evaluate("-x", str(release["x"]), "-z", str(release["z"]), "--class", "label", "--measures",
                     "ddr,t_broken")
        assert r.exit_code == 1 and "ZeroDivisionError" in r.output
        ctx = EvaluationContext(x=pd.DataFrame(), z=pd.DataFrame(), schema=None)  # type: ignore[arg-type]
        with pytest.raises(ZeroDivisionError) as info:
            run_measure(MEASURES["t_broken"], ctx)
        assert "t_broken" in " ".join(getattr(info.value, "__notes__", []))
    finally:
        MEASURES.pop("t_broken", None)
        MEASURES.pop("t_not_here", None)


def test_skip_reason_policy() -> None:
    from ppdm.errors import ParameterError, PPDMError, SchemaError

    assert skip_reason(MeasureNotApplicable("no quasi-identifiers")) == "no quasi-identifiers"
    assert skip_reason(SchemaError("class column 'y' has fewer than 2 values in z")) is not None
    assert skip_reason(PPDMError("the test set holds only one class")) is not None
    assert skip_reason(ParameterError("average must be macro")) is None  # the user's to fix
    assert skip_reason(ValueError("a bug")) is None


# -------------------------------------------------------------------------- verdicts
def test_verdicts_state_numbers_and_thresholds() -> None:
    def m(kind: str, value: float | None, threshold: float | None, direction: str = "lower") -> dict[str, Any]:
        return {"kind": kind, "value": value, "threshold": threshold, "direction": direction, "details": {}}

    v = verdict("risk", {"ddr": m("risk", 0.41, 0.05), "idr": m("risk", 0.02, 0.1), "sers": m("risk", 2.0, None)})
    assert v.status == "high"
    assert v.sentence.startswith("Disclosure risk is HIGH: 1 of 2 judged risk measures miss their threshold — ddr = "
                                 "0.41 (should be ≤ 0.05); within: idr = 0.02 (≤ 0.1); intruders not judged (no measure of "
                                 "theirs was asked for): who knows the quasi-identifiers (add --measures "
                                 "k_anonymity_intruder or --rule-out quasi-identifiers)")
    v = verdict("utility", {"edusc": m("utility", 0.95, 0.9, "higher"), "auc": m("utility", 0.0, 0.02)})
    assert v.status == "kept" and "edusc = 0.95 (≥ 0.9) and auc = 0 (≤ 0.02)" in v.sentence
    v = verdict("risk", {"auc": m("utility", 0.0, 0.02)})
    assert v.status == "not judged" and "--measures ddr,idr" in v.sentence
    v = verdict("risk", {"ddr": m("risk", None, 0.05)})
    assert v.status == "not judged" and "ddr could not be computed" in v.sentence
    # a share printed in percent is judged as the share it stands for
    pct = {"ddr": {**m("risk", 3.0, 0.05), "details": {"percent": True}}}
    assert verdict("risk", pct).judged[0]["meets"] is True


def test_threshold_option_replaces_the_registered_one(release) -> None:
    r = evaluate("-x", str(release["x"]), "-z", str(release["z"]), "--class", "label", "--measures", "ddr",
                 "--threshold", "ddr=1", "--json", *[a for s in ("quasi-identifiers", "sensitive", "control")
                                                     for a in ("--rule-out", s)])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["measures"]["ddr"]["threshold"] == 1.0
    assert doc["summary"]["risk"]["status"] == "low" and "(≤ 1)" in doc["summary"]["risk"]["sentence"]


def test_the_terminal_starts_with_the_verdicts(release) -> None:
    r = evaluate("-x", str(release["x"]), "-z", str(release["z"]), "--class", "label", "--measures",
                 "ddr,idr,rule_accuracy")
    assert r.exit_code == 0, r.output
    text = " ".join(r.stdout.split())
    assert text.startswith("Disclosure risk is") and text.index("ddr = ") < text.index("Utility is")
    # the verdicts come before the table of the measures
    assert text.index("Utility is") < text.index("measure kind value threshold status")


def test_plain_evaluate_is_one_screen_and_verbose_adds_the_rules(release) -> None:
    """The default set: two verdicts, the drivers of risk, one line per measure, the skipped
    measures' shared reason said once, the worst columns and pairs when distribution fidelity misses —
    at most 61 lines (the risk verdict names the intruders judged; the noise puts a few values of ``a``
    outside their colour's range in x, which two lines name; k_anonymity_intruder has its row); --verbose
    adds the per-rule table and the rule texts."""
    args = ["-x", str(release["x"]), "-z", str(release["z"]), "--class", "label", "--seed", "1"]
    r = evaluate(*args)
    assert r.exit_code == 0, r.output
    lines = r.output.rstrip("\n").split("\n")
    assert len(lines) <= 61, r.output
    # b's distribution misses (0.65): the worst columns and pairs are named, with scores only
    assert "Distribution fidelity: columns b 0.6" in " ".join(r.stdout.split())
    doc = json.loads(evaluate(*args, "--json").stdout)
    for name, m in doc["measures"].items():  # one line per measure, in the table
        assert sum(line.split()[:2] == [name, m["kind"]] for line in lines) == 1, name
    # the key is perturbed: the drivers come from intruder matching, not from key frequencies
    assert ("Drivers of risk: An intruder matching on the key variable (colour) finds a record's own released "
            "value of colour for 83% of the records" in " ".join(r.stdout.split()))
    skipped = [n for n, m in doc["measures"].items() if m["status"] == "skipped"]
    assert len(skipped) >= 2 and r.stdout.count("needs a control set") == 1
    assert " → " not in r.stdout and "rules Ψx" not in r.stdout
    v = evaluate(*args, "--verbose")
    assert v.exit_code == 0, v.output
    assert "rules Ψx in x and z" in v.stdout and v.stdout.count(" → ") == len(doc["tables"]["per_rule"]["rows"])
    assert "key variables" in v.stdout and len(v.output.split("\n")) > 60


# ------------------------------------------------------------ aggregates only
@dataclass
class _Estimate(MeasureResult):
    record_level = ("estimate",)
    estimate: pd.DataFrame = field(default_factory=pd.DataFrame)
    per_attribute: pd.DataFrame = field(default_factory=pd.DataFrame)


def _planted_texts(x: pd.DataFrame, z: pd.DataFrame) -> list[str]:
    texts = [PLANTED_LABEL]
    for v in PLANTED_NUMBERS:
        texts += [repr(v), f"{v:.6g}", f"{v:.4g}", f"{v:.2f}"]
    # the released values of the planted records, as the report would print them
    for i in range(10, 10 + len(PLANTED_NUMBERS)):
        zb = float(z.loc[i, "b"])
        if zb in PLANTED_NUMBERS:
            continue
        texts += [repr(zb)] if abs(zb) > 100 else []
    return texts


def test_no_record_of_x_or_z_in_any_output(release, tmp_path) -> None:
    x, z = pd.read_csv(release["x"]), pd.read_csv(release["z"])
    html = tmp_path / "r.html"
    r = evaluate("-x", str(release["x"]), "-z", str(release["z"]), "--class", "label", "--measures", "all",
                 "--json", "--html", str(html))
    assert r.exit_code == 0, r.output
    outputs = {"json": r.stdout, "html": html.read_text()}
    r = evaluate("-x", str(release["x"]), "-z", str(release["z"]), "--class", "label", "--measures", "all")
    outputs["terminal"] = r.stdout
    for where, text in outputs.items():
        for planted in _planted_texts(x, z):
            assert planted not in text, f"{planted!r} appears in the {where} output"
    # the attack's estimate of every record (record-level) is left out; its summary stays
    doc = json.loads(outputs["json"])
    sf = doc["measures"]["spectral_filtering"]
    assert "estimate" not in sf["details"] and not any("estimate" in t for t in sf["tables"])
    assert all(len(t["rows"]) < len(x) for t in doc["tables"].values())
    # a planted value does show when it is really there (the check can fail)
    planted_doc = evaluation_document({"t": _Estimate(1.0, estimate=x, per_attribute=x.head(12))})
    assert any(repr(PLANTED_NUMBERS[0]) in json.dumps(t) for t in planted_doc["tables"].values())
    assert "estimate" not in planted_doc["measures"]["t"]["tables"]


def test_record_level_fields_stay_out_of_to_dict_and_details() -> None:
    r = _Estimate(0.5, estimate=pd.DataFrame({"a": [1.0, 2.0]}), per_attribute=pd.DataFrame({"k": [1]}))
    assert "estimate" not in r.to_dict() and "estimate" in r.to_dict(records=True)
    assert list(r.details()) == ["per_attribute"]


def test_reasons_said_once_read_as_sentences() -> None:
    """Equal reasons, and reasons that differ in how they begin, are given once; a shared ending
    that would start inside the differing words starts at the next clause."""
    from ppdm.experiments.evaluation import group_reasons

    keys = ("all quasi-identifiers are perturbed, colour ({} of records changed): key frequencies judge only "
            "unchanged or generalised ones")
    control = "needs a control set of original records not used to make the release"
    got = group_reasons([("k_anonymity", keys.format("17.1%")), ("sample_uniques", keys.format("12.0%")),
                         ("inference", f"inference (income) {control}"), ("linkability", f"linkability {control}"),
                         ("il1s", "the column 'c' is constant")])
    assert got == [(["k_anonymity", "sample_uniques"], "key frequencies judge only unchanged or generalised ones"),
                   (["inference", "linkability"], control), (["il1s"], "the column 'c' is constant")]
