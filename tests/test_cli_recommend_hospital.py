"""``ppdm recommend`` end to end on a hospital discharge table as an owner holds it (birth and
admission dates, blank cells in keys and other columns, a discharge weight, charges): a valid
policy never ends in a refusal (exit 2); the search ends with a release (0) or none (3), the
study file is the owner's alone, the report is written and every failed trial says why."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ppdm.cli.app import app

sys.path.insert(0, str(Path(__file__).resolve().parent))
from hospital_table import ROLES, write_hospital  # noqa: E402

runner = CliRunner()

#: record linkage and a utility line; recoding (a table whose keys are dates and categories),
#: DPCube and the statistics office's chain allowed. The utility is bounded (prediction
#: accuracy), as a search with a differentially private technique needs
POLICY = """\
name: hospital discharges
risk:
  record_linkage: 0.3
utility:
  weights: {prediction_accuracy: 1}
techniques: [recode, dpcube, recode>mdav>local-suppression, gaussian-noise]
"""


def _recommend(d: Path, n: int, trials: int) -> tuple[int, dict]:
    write_hospital(d / "discharges.csv", n=n)
    (d / "policy.yaml").write_text(POLICY)
    r = runner.invoke(app, ["recommend", str(d / "discharges.csv"), "--class", ROLES["class"], "--id", ROLES["id"],
                            "--qi", ROLES["qi"], "--weight", ROLES["weight"], "--missing", "keep",
                            "--policy", str(d / "policy.yaml"), "--out", str(d / "z.csv"), "--trials", str(trials),
                            "--seed", "1", "--experiment-seed", "--json", "--report", str(d / "r.html"),
                            # a control split of 100-200 records: DPCube's scores are narrow enough to
                            # choose by only with a score budget of 0.25-0.5 (accounting.MAX_SCORE_NOISE)
                            "--score-epsilon", "1"])
    assert r.exit_code in (0, 3), (r.exit_code, r.output[-2000:])
    return r.exit_code, json.loads(r.stdout)


def _check(d: Path, code: int, doc: dict, trials: int) -> None:
    assert len(doc["trials"]) == trials
    # the study holds the seed of the hold-out split: the owner's alone
    study = d / "z.study.db"
    assert study.is_file() and stat.S_IMODE(study.stat().st_mode) == 0o600
    assert (d / "r.html").is_file()
    if code == 0:
        assert doc["outcome"] == "met" and (d / "z.csv").is_file() and (d / "z.provenance.json").is_file()
        assert doc["release"]["settings"], "the report shows the winner's settings"
        assert "in the data's units" in (d / "r.html").read_text()
    else:
        assert doc["outcome"] == "unmet" and not (d / "z.csv").exists()
        assert doc["summary"].startswith("No release met the policy")
    # the dates were read as dates: the keys are recoded into periods, never refused as numbers
    for t in doc["trials"]:
        if t["outcome"] in ("failed", "stopped"):
            assert str(t.get("why") or t.get("error") or "").strip(), f"trial {t['number']} failed without a reason"
        assert "no recoded column is cut by them" not in str(t.get("why")), t["why"]
        assert "no recoded column is a number" not in str(t.get("why")), t["why"]
    recoded = [t for t in doc["trials"] if t["technique"].startswith("recode")]
    assert recoded and all("breaks" not in t["params"] and "recode.breaks" not in t["params"] for t in recoded)
    assert {t["technique"] for t in doc["trials"]} <= {"recode", "dpcube", "recode>mdav>local-suppression",
                                                       "gaussian-noise"}


def test_a_small_hospital_table_runs_end_to_end(tmp_path: Path) -> None:
    code, doc = _recommend(tmp_path, n=400, trials=5)
    _check(tmp_path, code, doc, 5)


@pytest.mark.slow
def test_a_hospital_table_runs_end_to_end(tmp_path: Path) -> None:
    code, doc = _recommend(tmp_path, n=800, trials=16)
    _check(tmp_path, code, doc, 16)
    assert {t["technique"] for t in doc["trials"]} >= {"recode", "dpcube"}
