"""What a searched differentially private release spends: every DP draw a search makes on the
training records counts (its trials, the release's redraws and the release), summed by basic
composition (Dwork & Roth 2014, Theorems 3.14 and 3.16); the provenance states the total and
the terms, and the policy's ε line judges the total, not one draw's ε."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from ppdm.cli.app import app
from ppdm.data.schema import Schema
from ppdm.experiments.recommend_accounting import (
    Accounting,
    epsilon_of,
    judge_epsilon,
    over_budget,
    search_accounting,
)

runner = CliRunner()


def _table(n: int = 60, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a = rng.normal(50, 10, n).round(2)
    return pd.DataFrame({"a": a, "b": rng.normal(5, 2, n).round(2),
                         "label": np.where(a + rng.normal(0, 5, n) > 50, "yes", "no")})


@pytest.fixture
def d(tmp_path: Path) -> Path:
    x = _table()
    x.to_csv(tmp_path / "x.csv", index=False)
    # DPCube needs a declared domain: bounds and categories that are public, not read from x
    sch = dataclasses.replace(Schema.infer(x, "label"), bounds={"a": (0.0, 100.0), "b": (-5.0, 15.0)},
                              categories={"label": ["no", "yes"]})
    (tmp_path / "schema.json").write_text(json.dumps(sch.to_dict()))
    return tmp_path


def _run(d: Path, *extra: str):
    return runner.invoke(app, ["recommend", str(d / "x.csv"), "--class", "label", "--schema", str(d / "schema.json"),
                               "--out", str(d / "z.csv"), "--max", "verbatim_copies=0.2", "--utility", "correlation_difference=1",
                               "--trials", "3", "--seed", "5", "--experiment-seed", "--json", *extra])


def test_the_provenance_states_the_sum_over_every_draw_of_the_search(d: Path) -> None:
    r = _run(d, "--techniques", "dpcube", "--report", str(d / "r.html"))
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    prov = json.loads((d / "z.provenance.json").read_text())
    trial_eps = [t["privacy"]["epsilon"] for t in sorted(doc["trials"], key=lambda t: t["number"])]
    assert len(trial_eps) == 3 and len(set(trial_eps)) == 3  # ε is searched: three different values
    search = prov["privacy"]["search"]
    draws = [e["epsilon"] for e in search["draws"] if e["what"].startswith("release draw")]
    chosen = next(t for t in doc["trials"] if t["number"] == doc["chosen"])["privacy"]["epsilon"]
    # by hand: ε1 + ε2 + ε3 of the trials, plus the chosen setting's ε once per draw of the release
    assert draws and all(e == chosen for e in draws)
    total = trial_eps[0] + trial_eps[1] + trial_eps[2] + chosen * len(draws)
    assert prov["privacy"]["epsilon"] == pytest.approx(total) and prov["privacy"]["epsilon_spent"] == pytest.approx(total)
    assert search["epsilon_total"] == pytest.approx(total) and search["trials"] == 3
    assert [e["what"] for e in search["draws"]][:3] == ["trial 0", "trial 1", "trial 2"]
    assert prov["privacy"]["epsilon_of_this_draw"] == pytest.approx(chosen) and total > chosen
    assert "Dwork & Roth 2014" in search["citation"] and search["sum"].endswith(f"= {total:.6g}")
    assert f"{total:.6g}-differentially private" in prov["privacy"]["guarantee"]
    assert doc["release"]["epsilon"]["epsilon_total"] == pytest.approx(total)
    html = (d / "r.html").read_text()
    assert "ε (the whole search)" in html and search["sum"] in html


def _policy(d: Path, cap: float | None) -> Path:
    pol = {"risk": {"verbatim_copies": 0.2}, "utility": {"weights": {"correlation_difference": 1}},
           "techniques": {"dpcube": {"epsilon": 2.0}}}
    if cap is not None:
        pol["epsilon"] = cap
    path = d / "policy.json"
    path.write_text(json.dumps(pol))
    return path


def test_the_epsilon_line_judges_the_total_not_one_draw(d: Path) -> None:
    # every draw at ε = 2: three trials and k draws of the release (a draw that misses the policy is
    # discarded, and spent) make 2·(3 + k)
    r = runner.invoke(app, ["recommend", str(d / "x.csv"), "--class", "label", "--schema", str(d / "schema.json"),
                            "--out", str(d / "z.csv"), "--policy", str(_policy(d, 20.0)), "--trials", "3",
                            "--seed", "5", "--experiment-seed", "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    search = json.loads((d / "z.provenance.json").read_text())["privacy"]["search"]
    k = search["release_draws"]
    assert k >= 1 and search["sum"] == " + ".join(["2"] * (3 + k)) + f" = {2 * (3 + k)}"
    eps_line = next(ln for ln in doc["release"]["measured"]["lines"] if ln["measure"] == "epsilon")
    assert eps_line["verdict"] == "meets" and eps_line["value"] == pytest.approx(2.0 * (3 + k))
    # ε ≤ 7.9: each draw (2) is within it, the total (8) is not: no release, exit 3
    for p in d.glob("z.*"):
        p.unlink()
    r = runner.invoke(app, ["recommend", str(d / "x.csv"), "--class", "label", "--schema", str(d / "schema.json"),
                            "--out", str(d / "z.csv"), "--policy", str(_policy(d, 7.9)), "--trials", "3",
                            "--seed", "5", "--experiment-seed", "--json"])
    assert r.exit_code == 3, r.output
    doc = json.loads(r.stdout)
    assert doc["release"] is None and not (d / "z.csv").exists()
    assert "2 + 2 + 2 = 6" in doc["unmet"]["note"] and "ε ≤ 7.9" in doc["unmet"]["note"]


def test_accounting_by_hand() -> None:
    # trials: dpcube at 0.5 (made a release), dpcube refused before its report (ε from its parameter, 0.25),
    # a repeat (no release), and MDAV (no guarantee)
    trials = [SimpleNamespace(number=0, technique="dpcube", params={"epsilon": 0.5}, repeat_of=None,
                              privacy={"differentially_private": True, "epsilon": 0.5}),
              SimpleNamespace(number=1, technique="dpcube", params={"epsilon": 0.25}, repeat_of=None, privacy=None),
              SimpleNamespace(number=2, technique="mdav", params={"k": 3}, repeat_of=None, privacy=None),
              SimpleNamespace(number=3, technique="mdav", params={"k": 3}, repeat_of=2, privacy=None)]
    acc = search_accounting(trials)
    assert [(x.what, x.epsilon) for x in acc.draws] == [("trial 0", 0.5), ("trial 1", 0.25)]
    assert acc.not_private == ["trial 2"] and acc.total == 0.75 and acc.sum_text() == "0.5 + 0.25 = 0.75"
    # a release whose domain was read from the data is not differentially private: it spends no claimable ε
    assert epsilon_of("dpcube", {"epsilon": 1.0}, {"differentially_private": False, "epsilon": 1.0}) is None
    # one more draw at 0.5 makes 1.25: within ε ≤ 1.25 (the cap itself meets), past ε ≤ 1.2
    assert over_budget(acc, 0.5, 1.25) is None and over_budget(acc, 0.5, None) is None
    assert "1.25" in over_budget(acc, 0.5, 1.2)  # type: ignore[operator]
    j = judge_epsilon(1.25, 1.0)
    assert j.state == "misses" and j.margin == pytest.approx(0.25)  # (1.25 - 1) / 1
    assert judge_epsilon(0.75, 1.0).state == "meets"
    assert Accounting().total == 0.0
