"""The files ``ppdm recommend`` leaves: a private log that pairs the release with the table it
was searched on (so ``ppdm evaluate`` re-checks it record by record), a study file that is the
owner's only and never blocks a rerun after a refused or failed run; and a table with a date
column and missing cells (``--missing keep``) searched end to end."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from ppdm.cli.app import app
from ppdm.data.provenance import decode_positions
from ppdm.errors import PPDMError
from ppdm.experiments.recommend.study import discard_if_empty, finished_trials, make_private

runner = CliRunner()


def _table(n: int = 60, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a = rng.normal(50, 10, n).round(2)
    x = pd.DataFrame({"a": a, "b": rng.normal(5, 2, n).round(2), "sex": rng.choice(["f", "m"], n),
                      "birth": (pd.Timestamp("1950-01-01") + pd.to_timedelta(rng.integers(0, 20000, n), unit="D"))
                      .strftime("%Y-%m-%d"),
                      "label": np.where(a + rng.normal(0, 5, n) > 50, "yes", "no")})
    x.loc[[3, 10, 20], "b"] = np.nan  # blanks kept (--missing keep)
    return x


@pytest.fixture
def d(tmp_path: Path) -> Path:
    _table().to_csv(tmp_path / "x.csv", index=False)
    return tmp_path


ROLES = ["--class", "label", "--qi", "sex", "--date", "birth", "--missing", "keep"]


def _recommend(d: Path, *extra: str):
    return runner.invoke(app, ["recommend", str(d / "x.csv"), *ROLES, "--out", str(d / "z.csv"),
                               "--max", "record_linkage=0.6", "--utility", "sse_sst=1", "--techniques", "mdav",
                               "--trials", "3", "--seed", "7", "--experiment-seed", *extra])


def test_evaluate_pairs_a_recommend_release_through_its_private_log(d: Path) -> None:
    # a date column in record linkage and blanks kept: measured like evaluate measures them (exit 0, not 2)
    r = _recommend(d, "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    searched = next(ln for ln in doc["release"]["measured"]["lines"] if ln["measure"] == "record_linkage")
    private = json.loads((d / "z.private.json").read_text())
    x = pd.read_csv(d / "x.csv")
    z = pd.read_csv(d / "z.csv")
    # the pairing points into the table as read (60 records), not into the 30-record training split
    pos = decode_positions(private["pairing"]["positions"], "pairing")
    held = decode_positions(private["holdout"]["positions"], "held-out positions")
    assert private["input"]["rows_kept"] == 60 and private["pairing"]["rows_of_x"] == 60
    assert len(pos) == len(z) == 30 and len(held) == 30 and not set(pos) & set(held)
    # MDAV leaves the categorical columns as they were: each released row carries its original's values
    assert (z["sex"].to_numpy() == x["sex"].to_numpy()[pos]).all()
    assert (z["label"].to_numpy() == x["label"].to_numpy()[pos]).all()
    # the control split the search measured against is the held-out records, in the table's order
    control = pd.read_csv(d / "z.control.csv")
    assert (control["a"].to_numpy() == x["a"].to_numpy()[np.sort(held)]).all()
    ev = runner.invoke(app, ["evaluate", "-x", str(d / "x.csv"), "-z", str(d / "z.csv"), *ROLES,
                             "-m", "record_linkage,il1s", "--json"])
    assert ev.exit_code == 0, ev.output
    out = json.loads(ev.stdout)
    assert out["inputs"]["pairing"] == "private log"
    # record by record, as the search measured the release: the same linkage, and IL1s computed
    assert out["measures"]["record_linkage"]["value"] == pytest.approx(searched["value"])
    assert out["measures"]["il1s"]["value"] is not None and out["measures"]["il1s"]["value"] > 0


def test_the_study_file_is_private_and_said_to_be(d: Path) -> None:
    r = _recommend(d)
    assert r.exit_code == 0, r.output
    assert stat.S_IMODE((d / "z.study.db").stat().st_mode) == 0o600
    assert "z.study.db (private: it holds the seed of the split; keep it with x)" in r.output


def test_a_failed_run_leaves_no_study_that_blocks_the_rerun(d: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import ppdm.experiments.recommend.core as rec

    def refuse(*args: object, **kwargs: object) -> str:
        raise PPDMError("refused before any trial")

    monkeypatch.setattr(rec, "run_search", refuse)
    r = _recommend(d)
    assert r.exit_code == 2 and "refused before any trial" in r.output
    assert not (d / "z.study.db").exists()  # the rerun is not told to --resume an empty study
    # a run that fails after its trials keeps them: --resume continues from there
    monkeypatch.undo()

    def fail_late(*args: object, **kwargs: object) -> None:
        raise PPDMError("failed after the search")

    monkeypatch.setattr(rec, "make_final", fail_late)
    r = _recommend(d)
    assert r.exit_code == 2 and "failed after the search" in r.output
    assert finished_trials(d / "z.study.db") == 3


def test_study_helpers_by_hand(tmp_path: Path) -> None:
    p = make_private(tmp_path / "s.db")
    assert p.stat().st_size == 0 and stat.S_IMODE(p.stat().st_mode) == 0o600
    assert finished_trials(p) == 0  # an empty file holds no study
    (tmp_path / "s.db-journal").write_text("")
    assert discard_if_empty(p) and not p.exists() and not (tmp_path / "s.db-journal").exists()
    assert not discard_if_empty(tmp_path / "absent.db")


def test_a_recoded_date_is_costed_at_the_middle_of_its_period() -> None:
    import warnings

    from ppdm.anonymize.search_space import build_technique
    from ppdm.experiments.recommend import measure_release, output_schema, search_data
    from ppdm.experiments.release import release
    from ppdm.metrics.info_loss import sse_sst

    x = _table().drop(columns="b")
    x["birth"] = pd.to_datetime(x["birth"])
    pol = {"risk": {"record_linkage": 0.9}, "utility": {"weights": {"sse_sst": 1}}}
    data = search_data(x, pol, class_column="label", quasi_identifiers="sex", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = release(data.train, build_technique("recode", {"columns": ["birth"]}, class_column="label",
                                                  schema=data.schema),
                      schema=data.schema, allow_pass_through=["a"], allow_untouched_keys=True, allow_verbatim=True)
    zr = rel.in_input_order()[0]
    assert zr["birth"].astype(str).str.fullmatch(r"\d{4}-\d{2}").all()  # months
    got = measure_release(zr, data, output_schema(rel.technique))["sse_sst"]["value"]
    # by hand: a month stands for its middle, halfway from its first day to the next month's, in days since 1970
    start = pd.to_datetime(zr["birth"].astype(str) + "-01")
    nxt = start + pd.offsets.MonthBegin(1)
    epoch = pd.Timestamp("1970-01-01")
    mid = ((start - epoch).dt.days + (nxt - epoch).dt.days) / 2
    days = (data.train["birth"] - epoch).dt.days.astype(float)
    orig = pd.DataFrame({"a": data.train["a"].astype(float), "birth": days})
    assert got is not None and got == pytest.approx(sse_sst(orig, orig.assign(birth=mid.to_numpy())).value, rel=1e-6)


def test_a_trial_of_ages_at_a_date_is_measured_as_evaluate_measures_the_release() -> None:
    import warnings

    from ppdm.data.provenance import table_sha256
    from ppdm.experiments.evaluate import EvaluateOptions, evaluate
    from ppdm.experiments.recommend import TrialJob, make_release, run_trial, search_data

    rng = np.random.default_rng(3)
    n = 40
    births = pd.to_datetime(rng.choice(["1950-06-01", "1970-03-15", "1990-09-30", "2005-01-20"], n))
    x = pd.DataFrame({"birth": births + pd.to_timedelta(rng.integers(0, 300, n), unit="D"),
                      "sex": rng.choice(["f", "m"], n), "v": rng.integers(0, 3, n)})
    pol = {"risk": {"record_linkage": 0.9}, "utility": {"weights": {"sse_sst": 1}}}
    data = search_data(x, pol, quasi_identifiers="birth,sex", random_state=0)
    # birth released as age bands on 2024-01-01: the trial must read x's dates as ages on that day,
    # as evaluate does from the provenance (read as days since 1970 no date falls in a band of ages)
    job = TrialJob(0, "recode", {"columns": ["birth"], "age_at": "2024-01-01", "breaks": [0, 30, 60, 120]}, 1)
    trial = run_trial(job, data)
    assert trial["error"] is None, trial["error"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = make_release(job, data.train, data, {**data.input_info, "sha256": table_sha256(data.train),
                                                   "rows": len(data.train)})
        ev = evaluate(data.train, rel, data.schema,
                      options=EvaluateOptions(measures=["record_linkage"], control=data.control))
    got, want = trial["measures"]["record_linkage"]["value"], ev.outcomes["record_linkage"].value
    assert got is not None and got == pytest.approx(want) and 0 < got < 1
