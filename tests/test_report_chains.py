"""A chain of techniques (``--then``) is recorded step by step and described in words (issue #30
item 5): no Python repr of a step, its schema or its hierarchies in the provenance or the report."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd

from ppdm.anonymize.composition import make_composition
from ppdm.data.schema import Schema
from ppdm.experiments.release import release, technique_record
from ppdm.report.html import describe_technique, render_evaluation_html


def _table(n: int = 60) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame({"age": rng.integers(18, 90, n).astype(float), "sex": rng.choice(["f", "m"], n),
                         "job": rng.choice(["clerk", "nurse", "cook"], n), "y": rng.choice(["a", "b"], n)})


def _chain():
    schema = Schema(numeric=["age"], categorical=["sex", "job"], class_column="y", quasi_identifiers=["age", "sex"])
    return make_composition(["recode", "pram"], params={"recode.breaks": {"age": [0, 30, 50, 200]}, "pram.pd": 0.8},
                            class_column="y", schema=schema)


def test_a_chain_is_recorded_step_by_step_without_python_reprs() -> None:
    rec = technique_record(_chain())
    assert rec["name"] == "recode then pram"
    steps = rec["parameters"]["steps"]
    assert [s["name"] for s in steps] == ["recode", "pram"]
    assert steps[0]["parameters"]["breaks"] == {"age": [0, 30, 50, 200]} and steps[1]["parameters"]["pd"] == 0.8
    text = json.dumps(rec)
    assert "Schema(" not in text and "Recode(" not in text and "Pram(" not in text


def test_a_chain_is_described_in_words_under_what_was_released() -> None:
    rel = release(_table(), _chain(), allow_verbatim=True, allow_unchanged=True, allow_untouched_keys=True)
    words = describe_technique(rel.provenance["technique"], rel.provenance["schema"])
    assert words.startswith("recode (breaks: age cut at 0, 30, 50, 200") and " then pram (" in words
    assert "pd 0.8" in words
    doc = {"format": "ppdm.evaluation", "measures": {}, "provenance": rel.provenance,
           "inputs": {"anonymized": {"source": "z.csv", "rows": 60, "columns": 4}}}
    html = render_evaluation_html(doc)
    part = html[html.index('id="released"'):]
    part = " ".join(re.sub(r"<[^>]+>", " ", part[:part.index("</table>")]).split())
    assert "released by a chain of 2 techniques, each on the release of the one before: recode (breaks: age cut at" \
        in part
    assert "Schema(" not in html and "Recode(" not in html and '"steps"' not in part


def test_dates_given_as_numbers_are_said_in_days_and_old_repr_steps_are_only_named() -> None:
    tech = {"name": "recode", "parameters": {"breaks": {"born": [0, 3652]}, "columns": None}}
    assert describe_technique(tech, {"dates": {"born": "%Y-%m-%d"}}) == \
        "recode (breaks: born cut at 0, 3652 (days since 1970-01-01))"
    old = {"name": "Composition", "parameters": {"steps": [["recode", "Recode(schema=Schema(...))"]]}}
    assert describe_technique(old) == "recode (parameters recorded as Python text by an older ppdm, not shown)"
