"""``ppdm recommend`` from the command line: a policy file or flags, the recommended release
written like ``ppdm anonymize``'s, the JSON document and the report, resuming a study, exit
code 3 with nothing released when no release meets the policy, and one line with exit code 2
for every bad input."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from ppdm.cli.app import app

runner = CliRunner()
ROOT = Path(__file__).resolve().parent.parent
VALIDATOR = jsonschema.Draft202012Validator(json.loads((ROOT / "docs" / "ppdm.schema.json").read_text()))

POLICY = """\
name: test policy
risk:
  record_linkage: 0.6
  k_anonymity: {at_most: 0.5, options: {k: 2}}
utility:
  weights: {sse_sst: 1}
techniques:
  mdav: {k: {low: 2, high: 10}}
"""


def _table(n: int = 60, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a = rng.normal(50, 10, n).round(2)
    return pd.DataFrame({"a": a, "b": rng.normal(5, 2, n).round(2), "sex": rng.choice(["f", "m"], n),
                         "label": np.where(a + rng.normal(0, 5, n) > 50, "yes", "no")})


@pytest.fixture
def d(tmp_path: Path) -> Path:
    _table().to_csv(tmp_path / "x.csv", index=False)
    (tmp_path / "policy.yaml").write_text(POLICY)
    return tmp_path


def _run(d: Path, *extra: str, policy: bool = True):
    args = ["recommend", str(d / "x.csv"), "--class", "label", "--qi", "sex", "--out", str(d / "z.csv")]
    if policy:
        args += ["--policy", str(d / "policy.yaml")]
    return runner.invoke(app, [*args, *extra])


def _files(d: Path) -> set[str]:
    return {p.name for p in d.iterdir()}


def _validate(doc: dict) -> None:
    errors = sorted(VALIDATOR.iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, "; ".join(f"{list(e.path)}: {e.message[:200]}" for e in errors[:5])


def test_a_policy_file_gives_a_release_a_report_and_a_study(d: Path) -> None:
    r = _run(d, "--trials", "6", "--seed", "1", "--experiment-seed", "--report", str(d / "r.html"))
    assert r.exit_code == 0, r.output
    assert {"z.csv", "z.provenance.json", "z.control.csv", "z.study.db", "r.html"} <= _files(d)
    prov = json.loads((d / "z.provenance.json").read_text())
    assert prov["recommendation"]["policy"]["name"] == "test policy"
    assert prov["recommendation"]["policy"]["source"] == "policy.yaml"
    assert prov["recommendation"]["study"]["file"] == "z.study.db"
    # what the input was is the owner's, in the private file beside the release
    private = json.loads((d / "z.private.json").read_text())
    assert prov["holdout"]["control"] == "z.control.csv" and private["input"]["source"] == str(d / "x.csv")
    assert len(pd.read_csv(d / "z.csv")) == 30 and len(pd.read_csv(d / "z.control.csv")) == 30
    assert "the recommended release, measured against the control split:" in r.output
    assert "record_linkage ≤ 0.6:" in r.output and "release check:" in r.output
    html = (d / "r.html").read_text()
    assert "The recommended release" in html and "risk–utility map of the search" in html


def test_json_follows_the_schema(d: Path) -> None:
    r = _run(d, "--trials", "5", "--seed", "2", "--experiment-seed", "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    _validate(doc)
    assert doc["format"] == "ppdm.recommendation" and doc["outcome"] == "met"
    assert doc["release"]["files"] == [str(d / "z.csv"), str(d / "z.provenance.json"), str(d / "z.control.csv"),
                                       str(d / "z.private.json")]
    assert doc["policy"]["lines"] == ["record_linkage ≤ 0.6", "k_anonymity (k=2) ≤ 0.5"]
    assert len(doc["trials"]) == 5 and doc["winner"] in doc["front"]


def test_flags_instead_of_a_file(d: Path) -> None:
    r = _run(d, "--max", "record_linkage=0.6", "--max", "k_anonymity=0.5", "--option", "k_anonymity.k=2",
             "--utility", "sse_sst=1", "--techniques", "mdav", "--trials", "4", "--seed", "3", "--experiment-seed", "--json",
             policy=False)
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["policy"]["lines"] == ["record_linkage ≤ 0.6", "k_anonymity (k=2) ≤ 0.5"]
    assert list(doc["search_space"]) == ["mdav"]


def test_a_utility_cap_as_a_flag(d: Path) -> None:
    """``--max-loss sse_sst=0``: no MDAV release keeps every value, so none meets the cap (exit 3,
    the cap named as the line no trial met); a cap without a utility is refused (exit 2)."""
    r = _run(d, "--max", "record_linkage=0.6", "--utility", "sse_sst=1", "--max-loss", "sse_sst=0",
             "--techniques", "mdav", "--trials", "3", "--seed", "3", "--experiment-seed", "--json", policy=False)
    assert r.exit_code == 3, r.output
    doc = json.loads(r.stdout)
    assert doc["policy"]["lines"] == ["record_linkage ≤ 0.6", "sse_sst loss ≤ 0"]
    assert doc["unmet"]["never_met"] == ["sse_sst loss ≤ 0"]
    r = _run(d, "--max", "record_linkage=0.6", "--max-loss", "sse_sst=0", "--trials", "3", policy=False)
    assert r.exit_code == 2 and "--max-loss caps a utility measure" in r.output


def test_nothing_meets_the_policy_exit_3_and_no_release(d: Path) -> None:
    (d / "policy.yaml").write_text(POLICY.replace("record_linkage: 0.6", "record_linkage: 0.0"))
    before = _files(d)
    r = _run(d, "--trials", "4", "--seed", "1", "--experiment-seed", "--report", str(d / "r.html"))
    assert r.exit_code == 3, r.output
    assert "no trial met record_linkage ≤ 0" in r.output and "no release written (exit code 3)" in r.output
    # the study and the report say why; nothing of a release is written
    assert _files(d) - before == {"z.study.db", "r.html"}
    assert "No release meets the policy" in (d / "r.html").read_text()
    (d / "z.study.db").unlink()
    r = _run(d, "--trials", "4", "--seed", "1", "--experiment-seed", "--json")
    assert r.exit_code == 3
    doc = json.loads(r.stdout)
    _validate(doc)
    assert doc["outcome"] == "unmet" and doc["release"] is None
    assert doc["unmet"]["never_met"] == ["record_linkage ≤ 0"]
    assert doc["summary"].startswith("No release met the policy: no trial met record_linkage ≤ 0 (closest: trial")


def test_resume_continues_the_study(d: Path) -> None:
    r = _run(d, "--trials", "3", "--seed", "4", "--experiment-seed", "--json")
    assert r.exit_code == 0, r.output
    first = json.loads(r.stdout)
    (d / "z.csv").unlink()
    r = _run(d, "--trials", "5", "--resume", "--json")
    assert r.exit_code == 0, r.output
    second = json.loads(r.stdout)
    assert second["study"]["trials"] == 5 and second["study"]["new_trials"] == 2 and second["study"]["resumed"]
    assert [t["label"] for t in second["trials"][:3]] == [t["label"] for t in first["trials"]]


@pytest.mark.parametrize(("args", "policy", "needle"), [
    ([], "risk:\n  linkage: 0.1\nutility:\n  weights: {auc: 1}\n", "unknown risk measure 'linkage'"),
    ([], "risk:\n  record_linkage: 0.1\nutility:\n  weights: {auc: 1}\ntechniques: [mdaw]\n",
     "unknown technique 'mdaw'"),
    ([], "risk:\n  record_linkage: 1.5\nutility:\n  weights: {auc: 1}\n", "is outside the values 'record_linkage' can"),
    ([], "risk: [unclosed\n", "is not valid YAML"),
    (["--budget", "0"], None, "--budget must be more than zero"),
    (["--budget", "-5m"], None, "--budget must be a duration"),
    (["--budget", "soon"], None, "--budget must be a duration such as 90s, 10m or 1h30m"),
    (["--trials", "0"], None, "--trials must be at least 1"),
    (["--jobs", "0"], None, "--jobs must be a positive number"),
    (["--holdout", "1"], None, "--holdout must lie strictly between 0 and 1"),
    (["--max", "record_linkage=0.1"], None, "either as a file (--policy) or as flags"),
    (["--resume"], None, "--resume: the study file"),
])
def test_bad_input_one_line_exit_2_nothing_written(d: Path, args: list[str], policy: str | None,
                                                  needle: str) -> None:
    if policy is not None:
        (d / "policy.yaml").write_text(policy)
    before = _files(d)
    r = _run(d, "--trials", "2", *args)
    assert r.exit_code == 2, r.output
    assert needle in r.output and "Traceback" not in r.output
    assert len(r.output.strip().splitlines()) == 1, r.output
    assert _files(d) == before


def test_no_policy_and_an_existing_study_are_refused(d: Path) -> None:
    r = _run(d, "--trials", "2", policy=False)
    assert r.exit_code == 2 and "give a policy: --policy FILE, or flags" in r.output
    (d / "z.study.db").write_text("")
    r = _run(d, "--trials", "2")
    assert r.exit_code == 2 and "exists; continue its search with --resume" in r.output
    r = _run(d, "--trials", "2", "--out", str(d / "x.csv"))
    assert r.exit_code == 2 and "is the input" in r.output


def test_recommend_is_listed_after_compare() -> None:
    r = runner.invoke(app, ["--help"])
    names = [ln.split()[0] for ln in r.output.splitlines() if ln.startswith("  ") and ln.split()]
    assert names.index("recommend") == names.index("compare") + 1


def test_the_schema_documents_every_field_of_a_trial_its_outcomes_and_the_search_accounting() -> None:
    """Each field a trial (TrialRecord.to_dict), the family counts, the study's outcomes and the
    search's ε accounting (Accounting.to_dict) write is documented, and a wrong value is refused."""
    from ppdm.experiments.policy import parse_policy
    from ppdm.experiments.recommend import RecommendResult, record_of
    from ppdm.experiments.recommend.accounting import Accounting

    defs = VALIDATOR.schema["$defs"]
    rec_props = defs["recommendation"]["allOf"][1]["properties"]
    pol = parse_policy({"risk": {"record_linkage": 0.1}, "utility": {"weights": {"sse_sst": 1}}})
    trial = record_of(0, {"technique": "dpcube", "params": {"epsilon": 1.0}, "error": None,
                          "measures": {m: {"value": v, "ci_low": None, "ci_high": None}
                                       for m, v in (("record_linkage", 0.05), ("sse_sst", 0.2))}}, pol)
    trial.scores = {"epsilon": 0.1, "neighbouring": "replace", "release_digest": "ab12",
                    "measures": {"sse_sst": {"loss": 0.3, "noisy": 0.3, "sensitivity": 1.0, "scale": 10.0,
                                             "epsilon": 0.1, "rule": "range"}}}
    doc = trial.to_dict()
    assert set(doc) <= set(defs["trial"]["properties"])
    trial_schema = jsonschema.Draft202012Validator({"$defs": defs, "$ref": "#/$defs/trial"})
    assert not list(trial_schema.iter_errors(doc))
    assert list(trial_schema.iter_errors({**doc, "outcome": "won"}))  # not one of the five outcomes
    assert list(trial_schema.iter_errors({**doc, "ran": "yes"}))
    counts = RecommendResult(pol, [trial], None, [], [], None, None, None, None, None, False, {}, {}, {},
                             {}).outcomes()
    assert set(counts) == set(rec_props["study"]["properties"]["outcomes"]["required"])
    acc = Accounting(budget=2.0, not_private=["mdav"])
    acc.add("trial 0", "dpcube", 1.0)
    spent = acc.to_dict()
    assert set(spent) <= set(rec_props["release"]["properties"]["epsilon"]["properties"])
    eps_schema = jsonschema.Draft202012Validator({"$defs": defs, **rec_props["release"]["properties"]["epsilon"]})
    assert not list(eps_schema.iter_errors(spent))
    assert not list(eps_schema.iter_errors(Accounting().to_dict()))  # no budget: null, the ex-post bound
    assert list(eps_schema.iter_errors({**spent, "budget": "2"}))
