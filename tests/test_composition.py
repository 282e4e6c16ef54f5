"""Composition: a scikit-learn Pipeline of techniques through release(), and the same sequence
from the command line with ``--then``, evaluated on the release's own categories."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.pipeline import Pipeline
from typer.testing import CliRunner

from ppdm.anonymize.composition import Composition, make_composition
from ppdm.anonymize.pram import Pram
from ppdm.anonymize.random_substitution import RandomSubstitution
from ppdm.anonymize.recoding import Recode
from ppdm.anonymize.suppression import LocalSuppression
from ppdm.cli.app import app
from ppdm.data.schema import Schema
from ppdm.errors import ParameterError
from ppdm.experiments.release import release
from ppdm.metrics.keyvar import key_frequencies

runner = CliRunner()
KEYS = ["age", "sex", "job"]


def _table(n: int = 600, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"age": rng.integers(17, 91, n), "sex": rng.choice(["f", "m"], n),
                         "job": rng.choice(list("abcdefgh"), n), "ill": rng.choice(["flu", "none", "cold"], n),
                         "y": rng.choice(["p", "q"], n)})


def _schema() -> Schema:
    return Schema(numeric=["age"], categorical=["sex", "job", "ill"], class_column="y", integer=["age"],
                  quasi_identifiers=KEYS, sensitive=["ill"])


def test_a_pipeline_of_techniques_is_a_release() -> None:
    x = _table()
    pipe = Pipeline([("bands", Recode(columns=["age"], breaks=[10, 30, 50, 70, 90])),
                     ("suppress", LocalSuppression(k=5)),
                     ("pram", Pram(columns=["ill"], random_state=1))])
    rel = release(x, pipe, schema=_schema())
    z = rel.data
    assert isinstance(rel.technique, Composition)
    assert z["age"].dtype.name == "category" and list(z["age"].cat.categories)[0] == "(10,30]"
    # the suppression step saw the recoded age as a key, and PRAM kept the keys
    assert (key_frequencies(z, KEYS).fk >= 5).all()
    assert z["ill"].isin(["flu", "none", "cold"]).all()
    steps = rel.provenance["privacy"]["composition"]
    assert [s["step"] for s in steps] == ["bands", "suppress", "pram"]
    assert steps[1]["privacy"]["k"] == 5 and "records_below_k" not in steps[1]["privacy"]
    assert rel.private["technique"]["composition"]["suppress"]["records_below_k"] == 0  # a count: the owner's
    assert rel.provenance["output"]["schema"]["categories"]["age"][0] == "(10,30]"
    assert "age" in rel.provenance["output"]["schema"]["categorical"]


def test_the_same_seed_gives_the_same_composition() -> None:
    x = _table()

    def run(seed: int) -> pd.DataFrame:
        c = make_composition(["recode", "local-suppression", "pram"], schema=_schema(), class_column="y",
                             random_state=seed, params={"recode.columns": "age", "breaks": [10, 30, 50, 70, 90],
                                                        "k": 3, "pram.columns": "ill"})
        return c.fit_transform(x)

    pd.testing.assert_frame_equal(run(7), run(7))
    assert not run(7)["ill"].equals(run(8)["ill"])


def test_parameters_are_routed_to_their_step() -> None:
    c = make_composition(["recode", "local-suppression"], schema=_schema(), class_column="y",
                         params={"k": 4, "recode.columns": "age", "2.mode": "sdcmicro"})
    (_, r), (_, s) = c.steps
    assert r.columns == "age" and s.k == 4 and s.mode == "sdcmicro"
    with pytest.raises(ParameterError, match="several steps"):
        make_composition(["recode", "pram"], params={"columns": "age"})
    with pytest.raises(ParameterError, match="no step has a parameter 'gamma'"):
        make_composition(["recode", "pram"], params={"gamma": 2})
    with pytest.raises(ParameterError, match="'mdav'"):
        make_composition(["recode", "pram"], params={"mdav.k": 2})
    with pytest.raises(ParameterError, match="both write"):
        Composition(steps=[("a", RandomSubstitution(gamma=5.0)), ("b", RandomSubstitution(gamma=3.0))]).fit(_table())


def test_then_on_the_command_line_and_evaluate_on_the_release(tmp_path: Path) -> None:
    x = _table()
    src, out = tmp_path / "x.csv", tmp_path / "z.csv"
    x.to_csv(src, index=False)
    res = runner.invoke(app, ["anonymize", str(src), "--class", "y", "--qi", ",".join(KEYS), "--sensitive", "ill",
                              "-m", "recode", "--then", "local-suppression", "--then", "pram",
                              "-p", "recode.columns=age", "-p", "breaks=[10,30,50,70,90]", "-p", "k=5",
                              "-p", "pram.columns=ill", "--seed", "2", "--experiment-seed", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "recode then local-suppression then pram" in " ".join(res.output.split())
    # PRAM's matrices are built from x's frequencies: no public sidecar
    assert {p.name for p in tmp_path.iterdir()} == {"x.csv", "z.csv", "z.provenance.json", "z.private.json"}
    z = pd.read_csv(out, dtype=str, keep_default_na=False, na_values=[""])
    assert (key_frequencies(z, KEYS).fk >= 5).all()
    res = runner.invoke(app, ["evaluate", "-x", str(src), "-z", str(out), "--class", "y", "--qi", ",".join(KEYS),
                              "--missing", "keep", "--measures", "k_anonymity,reidentification_risk,prediction_accuracy",
                              "--json", "--seed", "1"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout[res.stdout.index("{"):])["measures"]
    assert doc["k_anonymity"]["value"] == 0.0 and doc["k_anonymity"]["details"]["original"] > 0
    assert doc["prediction_accuracy"]["status"] == "computed"
    # the same seed, the same bytes
    out2 = tmp_path / "z2.csv"
    res = runner.invoke(app, ["anonymize", str(src), "--class", "y", "--qi", ",".join(KEYS), "--sensitive", "ill",
                              "-m", "recode", "--then", "local-suppression", "--then", "pram",
                              "-p", "recode.columns=age", "-p", "breaks=[10,30,50,70,90]", "-p", "k=5",
                              "-p", "pram.columns=ill", "--seed", "2", "--experiment-seed", "-o", str(out2)])
    assert res.exit_code == 0 and out.read_bytes() == out2.read_bytes()
