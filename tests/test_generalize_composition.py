"""``generalize`` then ``local-suppression`` (``--then``): the generalisation search chooses the
levels, local suppression blanks the cells that still leave a record among fewer than k, and the
release is judged in the intruder's view, its blanks counted step by step."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from ppdm.anonymize.composition import make_composition
from ppdm.cli.app import app
from ppdm.data.generalization import recoded_view
from ppdm.data.schema import Schema
from ppdm.errors import ParameterError
from ppdm.metrics.keyvar import intruder_view

runner = CliRunner()
KEYS = ["age", "sex", "job"]


def _table(n: int = 300, seed: int = 0) -> pd.DataFrame:
    """Ages 17–90, two sexes, nine jobs of which the last few are rare (so small classes stay)."""
    rng = np.random.default_rng(seed)
    p = np.array([0.3, 0.2, 0.15, 0.1, 0.1, 0.08, 0.04, 0.02, 0.01])
    return pd.DataFrame({"age": rng.integers(17, 91, n), "sex": rng.choice(["f", "m"], n),
                         "job": rng.choice(list("abcdefghi"), n, p=p / p.sum()),
                         "ill": rng.choice(["flu", "none", "cold"], n), "y": rng.choice(["p", "q"], n)})


def _schema() -> Schema:
    return Schema(numeric=["age"], categorical=["sex", "job", "ill"], class_column="y", integer=["age"],
                  quasi_identifiers=KEYS, sensitive=["ill"])


def _measures(out: str) -> dict:
    return json.loads(out[out.index("{"):])["measures"]


def test_generalize_then_local_suppression_on_the_command_line(tmp_path: Path) -> None:
    x = _table()
    src, out = tmp_path / "x.csv", tmp_path / "z.csv"
    x.to_csv(src, index=False)
    # generalize reaches k = 2 by levels alone (no record suppressed), local suppression then k = 5
    res = runner.invoke(app, ["anonymize", str(src), "--class", "y", "--qi", ",".join(KEYS), "--sensitive", "ill",
                              "-m", "generalize", "--then", "local-suppression", "-p", "generalize.k=2",
                              "-p", "generalize.suppression_limit=0", "-p", "max_intervals=20",
                              "-p", "local-suppression.k=5", "--seed", "2", "--experiment-seed", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "generalize then local-suppression" in " ".join(res.output.split())
    z = pd.read_csv(out, dtype=str, keep_default_na=False, na_values=[""])
    steps = json.loads((tmp_path / "z.private.json").read_text())["technique"]["composition"]
    assert steps["generalize"]["suppressed_records"] == 0
    by_key = steps["local-suppression"]["suppressed_by_key"]
    # every blank of z is one local suppression counted, key by key (x has none)
    assert z[KEYS].isna().sum().to_dict() == by_key
    assert sum(by_key.values()) == steps["local-suppression"]["suppressed_cells"] > 0
    assert steps["local-suppression"]["records_below_k_for_intruder"] == 0
    public = json.loads((tmp_path / "z.provenance.json").read_text())["privacy"]["composition"]
    assert [s["step"] for s in public] == ["generalize", "local-suppression"]
    assert public[0]["privacy"]["k"] == 2 and public[1]["privacy"]["k"] == 5
    assert z["age"].str.match(r"^[\[(]\d+,\d+\]$").all()  # age released as intervals, none blanked here
    # judged against x read on the release's labels: k = 5 holds for the intruder who knows the true keys
    res = runner.invoke(app, ["evaluate", "-x", str(src), "-z", str(out), "--class", "y", "--qi", ",".join(KEYS),
                              "--missing", "keep", "--measures", "k_anonymity,k_anonymity_intruder",
                              "-p", "k_anonymity.k=5", "-p", "k_anonymity_intruder.k=5", "--json", "--seed", "1"])
    assert res.exit_code == 0, res.output
    doc = _measures(res.stdout)
    assert doc["k_anonymity"]["value"] == 0.0 and doc["k_anonymity"]["details"]["original"] > 0
    iv = doc["k_anonymity_intruder"]
    assert iv["value"] == 0.0 and iv["details"]["min_candidates"] >= 5 and iv["details"]["original"] > 0


def test_records_generalize_suppressed_are_narrowed_by_later_blanks() -> None:
    # the release meant to break the intruder's view: generalize suppresses whole records at k = 2, and
    # local suppression, which sees only their blanks, cannot protect their true keys: its partial blanks
    # of other records make 1 to 4 candidates for them. Hence the docs' advice: suppression_limit=0 before
    # local suppression at a larger k (or the same k for both).
    x = _table()
    schema = _schema()

    def run(limit: float) -> tuple[pd.DataFrame, object]:
        c = make_composition(["generalize", "local-suppression"], schema=schema, class_column="y", random_state=0,
                             params={"generalize.k": 2, "local-suppression.k": 5, "suppression_limit": limit,
                                     "max_intervals": 20})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return c.fit_transform(x), c

    # the chain checks local suppression's claim against x's true keys and refuses to publish it false
    with pytest.raises(ParameterError, match="cannot protect the records generalize suppressed whole"):
        run(0.05)
    import ppdm.anonymize.composition as composition

    monkey = pytest.MonkeyPatch()
    monkey.setattr(composition, "_check_intruder_view_of_whole_suppression", lambda *a: None)
    try:
        broken = run(0.05)  # the same chain without the check: the release it would have published
    finally:
        monkey.undo()
    for limit, narrowed in ((0.05, True), (0.0, False)):
        z, comp = broken if narrowed else run(limit)
        gen, ls = comp.steps_[0][1], comp.steps_[1][1]
        # blanks counted: a suppressed record blanks every key, local suppression the cells it reports
        blanks = z[KEYS].isna().sum().to_dict()
        assert blanks == {c: int(gen.suppressed_.sum()) + ls.private_report_["suppressed_by_key"][c] for c in KEYS}
        _, recode, _ = recoded_view(schema, comp.output_schema(), KEYS)
        iv = intruder_view(recode(x)[KEYS].astype(object), z[KEYS].astype(object), KEYS, 5)
        if narrowed:
            assert gen.suppressed_.sum() > 0 and iv.narrowed == iv.narrowed_blanked > 0
            assert iv.narrowed <= gen.suppressed_.sum()
        else:
            assert gen.suppressed_.sum() == 0 and iv.narrowed == 0
