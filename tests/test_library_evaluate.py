"""The library's evaluation (ppdm.experiments.evaluate): a shuffled release is paired with x
through its private record, the document and verdicts are those of ``ppdm evaluate``, and a
measure comparing records one by one is refused on rows that are not paired."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from ppdm.anonymize import make_technique
from ppdm.cli.app import app
from ppdm.data.provenance import file_sha256
from ppdm.datasets import load
from ppdm.errors import ParameterError
from ppdm.experiments.evaluate import EvaluateOptions, evaluate
from ppdm.experiments.release import Release, release, save_release
from ppdm.metrics import il1s

runner = CliRunner()
MEASURES = ["il1s", "ddr", "record_linkage", "prediction_accuracy"]


def _release(x: pd.DataFrame, schema, **kw) -> Release:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # MDAV with k=5 on wine is weak on purpose: the gate has its own tests
        return release(x, make_technique("mdav", params={"k": 5}), schema=schema, allow_verbatim=True, **kw)


@pytest.fixture(scope="module")
def wine(tmp_path_factory: pytest.TempPathFactory) -> tuple[pd.DataFrame, object, Release, Path]:
    """wine (178 records), its file, and a shuffled MDAV release made from that file's table."""
    from ppdm.data.io import read_table

    d = tmp_path_factory.mktemp("wine")
    x0, schema = load("wine")
    xf = d / "x.csv"
    x0.to_csv(xf, index=False)
    (d / "schema.json").write_text(json.dumps(schema.to_dict()))
    x = read_table(xf, schema=schema)
    rel = _release(x, schema, input_info={"source": str(xf), "sha256": file_sha256(xf)})
    save_release(rel, d / "z.csv")
    return x, schema, rel, d


def test_the_readme_example_pairs_the_shuffled_release(wine) -> None:
    x, schema, rel, _ = wine
    ev = evaluate(x, rel, options=EvaluateOptions(measures=["il1s"]))
    assert ev.pairing.mode == "private log" and ev.rows_x == ev.rows_z == len(x)
    assert ev.verdicts["utility"].sentence.startswith("Utility")
    # hand check: the same technique without the shuffle gives z in x's order (MDAV is
    # deterministic; the shuffle has its own random stream), and il1s on it is the paired value
    flat = _release(x, schema, shuffle=False)
    num = schema.numeric
    by_hand = il1s(x[num], flat.data[num]).value
    assert ev.outcomes["il1s"].value == pytest.approx(by_hand, rel=1e-12)
    # the same measure on the shuffled release compares different people: a far larger loss
    assert il1s(x[num], rel.data[num]).value > 1.5 * by_hand
    # a DataFrame declared to be in x's order is paired by position
    pos = evaluate(x, flat.data, schema, options=EvaluateOptions(measures=["il1s"], pairing="position"))
    assert pos.pairing.mode == "position" and pos.outcomes["il1s"].value == pytest.approx(by_hand, rel=1e-12)


def test_a_shuffled_dataframe_is_refused_for_a_named_paired_measure(wine) -> None:
    x, schema, rel, _ = wine
    with pytest.raises(ParameterError, match=r"il1s compares each released record with its own original, but z's "
                                             r"rows are not paired with x's: pass the Release"):
        evaluate(x, rel.data, schema, options=EvaluateOptions(measures=["il1s"]))
    with pytest.raises(ParameterError, match=r"il1s, ddr compare each released record"):
        evaluate(x, rel.data, schema, options=EvaluateOptions(measures=["il1s", "record_linkage", "ddr"]))
    with pytest.raises(ParameterError, match="pairing='none' leaves out the pairing"):
        evaluate(x, rel, options=EvaluateOptions(measures=["il1s"], pairing="none"))
    # a measure with a pairing-free form runs on the unpaired rows
    ev = evaluate(x, rel.data, schema, options=EvaluateOptions(measures=["record_linkage"]))
    assert ev.pairing.mode == "none" and not ev.outcomes["record_linkage"].skipped


def test_the_library_document_is_the_command_lines(wine) -> None:
    x, schema, rel, d = wine
    opts = EvaluateOptions(measures=MEASURES, random_state=0)
    lib = evaluate(x, rel, options=opts).document()
    from_file = evaluate(x, d / "z.csv", schema, options=opts).document()
    r = runner.invoke(app, ["evaluate", "-x", str(d / "x.csv"), "-z", str(d / "z.csv"), "--schema",
                            str(d / "schema.json"), "--measures", ",".join(MEASURES), "--seed", "0", "--json"])
    assert r.exit_code == 0, r.output
    cli = json.loads(r.stdout)
    assert cli["inputs"]["pairing"] == lib["inputs"]["pairing"] == from_file["inputs"]["pairing"] == "private log"
    for doc in (lib, from_file):
        for name in MEASURES:
            assert doc["measures"][name]["status"] == cli["measures"][name]["status"] == "computed"
            assert doc["measures"][name]["value"] == pytest.approx(cli["measures"][name]["value"], rel=1e-9), name
        assert doc["summary"] == cli["summary"]
        assert doc["inputs"]["original"]["rows"] == cli["inputs"]["original"]["rows"] == len(x)
    import jsonschema

    spec = json.loads((Path(__file__).resolve().parents[1] / "docs" / "ppdm.schema.json").read_text())
    jsonschema.Draft202012Validator(spec).validate(lib)


def test_a_ruled_out_scenario_leaves_the_risk_verdict_and_is_named(wine) -> None:
    x, schema, rel, d = wine
    base = evaluate(x, rel, options=EvaluateOptions(measures=["record_linkage", "ddr"]))
    judged = [j["measure"] for j in base.verdicts["risk"].judged]
    assert "record_linkage" in judged and base.verdicts["risk"].status == "high"
    ev = evaluate(x, rel, options=EvaluateOptions(measures=["record_linkage", "ddr"], ruled_out=["originals"]))
    risk = ev.verdicts["risk"]
    assert "record_linkage" not in [j["measure"] for j in risk.judged] and risk.ruled_out == ["originals"]
    assert risk.status == "not judged" and "ruled out by the owner: who holds x's records" in risk.sentence
    assert ev.document()["summary"]["risk"] == risk.to_dict()
    # the command line passes --rule-out to the same judge
    r = runner.invoke(app, ["evaluate", "-x", str(d / "x.csv"), "-z", str(d / "z.csv"), "--schema",
                            str(d / "schema.json"), "--measures", "record_linkage,ddr", "--rule-out", "originals",
                            "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["summary"]["risk"]["sentence"] == risk.sentence


def test_an_unknown_scenario_is_refused_naming_the_known_ones(wine) -> None:
    x, schema, rel, d = wine
    with pytest.raises(ParameterError, match="intruder scenario 'insiders'.*originals"):
        evaluate(x, rel, options=EvaluateOptions(measures=["ddr"], ruled_out=["insiders"]))
    r = runner.invoke(app, ["evaluate", "-x", str(d / "x.csv"), "-z", str(d / "z.csv"), "--rule-out", "insiders"])
    assert r.exit_code == 2 and "quasi-identifiers" in r.output


def test_a_checked_release_is_read_and_judged_as_the_command_does(wine, tmp_path: Path) -> None:
    """ppdm evaluate's path through the library: checked_release reads z's log and checks it
    against x's and z's files; evaluate then reads z with the command's separators, tells what
    it drops as it finds it, and reports an unpairable named measure skipped (issue #27)."""
    import shutil
    from dataclasses import replace

    from ppdm.errors import PPDMError
    from ppdm.experiments.evaluate import CheckedRelease, TableReading, checked_release, partitioned
    from ppdm.experiments.evaluation import NOT_PAIRED
    from ppdm.experiments.pairing import Pairing

    x, schema, rel, d = wine
    z = pd.read_csv(d / "z.csv")
    num = schema.numeric[0]
    z.loc[3, num] = float("nan")  # one incomplete row, dropped with missing="drop"
    comma, semi = tmp_path / "zc.csv", tmp_path / "zs.csv"
    z.to_csv(comma, index=False)
    z.to_csv(semi, index=False, sep=";", decimal=",")
    for f in (comma, semi):
        for sidecar in (".private.json", ".provenance.json"):
            shutil.copy(d / f"z{sidecar}", f.with_suffix(sidecar))
    # z rewritten is not the release its log was written for: the log's pairing is refused, and
    # x is checked against the hash the log records whatever the pairing
    with pytest.raises(PPDMError, match="z is not the release the private log"):
        checked_release(comma, str(d / "x.csv"))
    with pytest.raises(PPDMError, match="--original is not the table z was made from"):
        checked_release(comma, str(d / "schema.json"), pairing="none")
    rs = checked_release(semi, str(d / "x.csv"), pairing="none", reading=TableReading(sep=";", decimal=","))
    rc = checked_release(comma, str(d / "x.csv"), pairing="none")
    assert rs.pairing.mode == "none" and rs.pairing.private is not None and not partitioned(x, rs)
    opts = EvaluateOptions(measures=["record_linkage", "il1s"], missing="drop", random_state=0)
    seen: list[str] = []
    ev = evaluate(x, rs, schema, options=replace(opts, on_note=seen.append))
    assert seen == [f"dropped 1 incomplete row(s) from {semi}"] and ev.notes[:1] == seen
    assert ev.rows_z == len(z) - 1
    # the same table written with commas gives the same value
    assert ev.outcomes["record_linkage"].value == evaluate(x, rc, schema, options=opts).outcomes["record_linkage"].value
    # il1s cannot be paired: skipped with its reason, where the library given the file raises
    assert ev.outcomes["il1s"].skipped and ev.outcomes["il1s"].reason == NOT_PAIRED
    with pytest.raises(ParameterError, match="il1s compares each released record"):
        evaluate(x, comma, schema, options=replace(opts, pairing="none"))
    doc = ev.document()
    assert doc["inputs"]["original"]["source"] == str(d / "x.csv") and doc["inputs"]["anonymized"]["source"] == str(semi)
    assert ev.provenance == json.loads((d / "z.provenance.json").read_text())
    # a shipped dataset as z: no provenance, no log; the pairing's note is the pairing's, not told as found
    seen.clear()
    shipped = evaluate(x, checked_release("builtin:wine", str(d / "x.csv")), schema,
                       options=EvaluateOptions(measures=["record_linkage"], on_note=seen.append))
    assert shipped.provenance is None and shipped.document()["inputs"]["anonymized"]["source"] == "builtin:wine"
    assert seen == [] and shipped.pairing.notes and shipped.notes == shipped.pairing.notes
    # a checked release is partitioned as its path is: a folder is
    assert partitioned(x, CheckedRelease(str(tmp_path), None, Pairing("none")))
