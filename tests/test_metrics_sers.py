"""SERS (paper 004 §6): its ceiling log2 n and ppdm's one class policy, everywhere it is computed."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from ppdm.data.schema import Schema
from ppdm.experiments.evaluation import resolve_measures
from ppdm.metrics.base import EvaluationContext
from ppdm.metrics.risk import SERSResult, sers, sers_attributes


def _tables() -> tuple[pd.DataFrame, pd.DataFrame, Schema]:
    x = pd.DataFrame({"a": [0.0, 1.0, 2.0], "y": ["p", "q", "p"]})
    z = pd.DataFrame({"a": [0.0, 1.0, 2.0], "y": ["q", "q", "p"]})
    return x, z, Schema(["a"], [], "y")


def test_ceiling_is_log2_of_the_perturbed_records() -> None:
    x, z, _ = _tables()
    r = sers(x, z, ["a"], [])
    assert r.ceiling == pytest.approx(math.log2(3)) and 0 <= r.value <= r.ceiling
    assert sers(x, z, ["a"], [], normalized=True).ceiling == 1.0
    # a release whose records are all alike reaches the ceiling: every record is equally similar
    flat = pd.DataFrame({"a": [1.0, 1.0, 1.0, 1.0]})
    assert sers(x[["a"]], flat, ["a"], []).value == pytest.approx(sers(x[["a"]], flat, ["a"], []).ceiling)


def test_class_counts_as_a_categorical_attribute_by_hand() -> None:
    x, z, schema = _tables()
    assert sers_attributes(schema) == (["a"], ["y"])
    assert sers_attributes(schema, include_class=False) == (["a"], [])
    # a on [0, 2]: d = (|Δa|/2 + [y differs]) / 2. Original record 0 (a 0, y p) against the
    # release's (0, q), (1, q), (2, p): d = 1/2, 3/4, 1/2 → S = 1/2, 1/4, 1/2, normalised 2/5, 1/5, 2/5
    h0 = -(2 * 0.4 * math.log2(0.4) + 0.2 * math.log2(0.2))
    r = sers(x, z, *sers_attributes(schema), return_records=True)
    assert r.attributes == ["a", "y"]
    assert r.record_entropy is not None and r.record_entropy[0] == pytest.approx(h0, abs=1e-12)
    # without the class: S = 1, 1/2, 0 → 2/3, 1/3, 0
    h0_no = -(2 / 3 * math.log2(2 / 3) + 1 / 3 * math.log2(1 / 3))
    r_no = sers(x, z, *sers_attributes(schema, include_class=False), return_records=True)
    assert r_no.record_entropy is not None and r_no.record_entropy[0] == pytest.approx(h0_no, abs=1e-12)


def test_the_cli_measure_and_the_paper_experiment_use_the_same_policy() -> None:
    from ppdm.experiments.forest_framework import structure_measures

    rng = np.random.default_rng(3)
    x = pd.DataFrame({"a": rng.normal(size=40), "g": rng.choice(list("uvw"), 40), "y": rng.choice(list("pq"), 40)})
    z = x.assign(a=x["a"] + rng.normal(0, 0.5, 40), y=rng.permutation(x["y"].to_numpy()))
    schema = Schema(["a"], ["g"], "y")
    expected = sers(x, z, *sers_attributes(schema)).value
    ctx = EvaluationContext(x=x, z=z, schema=schema)
    (spec,) = resolve_measures("sers")
    cli = spec.fn(ctx)
    assert isinstance(cli, SERSResult) and cli.value == pytest.approx(expected, abs=1e-12)
    assert cli.attributes == ["a", "g", "y"]
    from test_metrics_structure import stump  # any forest will do: SERS does not use it

    got = structure_measures(x, z, schema, stump("a", 0.0), stump("a", 0.0))["sers"]
    assert got == pytest.approx(expected, abs=1e-12)
    # and the policy is visible: leaving the class out gives another value here
    assert sers(x, z, *sers_attributes(schema, include_class=False)).value != pytest.approx(expected, abs=1e-6)


def test_evaluate_prints_the_ceiling_beside_the_value() -> None:
    from ppdm.cli.cmd_evaluate import _summary

    x, z, schema = _tables()
    assert f"ceiling={math.log2(3):.4f}" in _summary(sers(x, z, *sers_attributes(schema)).scalars())


def test_sers_cannot_see_linkage_an_unchanged_release_scores_near_the_ceiling() -> None:
    """What docs/measures.md says SERS cannot tell: on wine, releasing x unchanged (every
    record's nearest release record is its own, DDR = 1) scores within 0.02 bits of the
    ceiling log2 178 = 7.476, and real releases differ from it by less than 0.01 bits."""
    from ppdm.anonymize import make_technique
    from ppdm.datasets import load
    from ppdm.metrics.risk import ddr

    x, schema = load("wine", missing="drop")
    cols = sers_attributes(schema)
    same = sers(x, x, *cols)
    assert ddr(x[schema.numeric], x[schema.numeric]).value == 1.0
    assert same.ceiling - 0.02 < same.value < same.ceiling
    z = make_technique("random-technique", class_column=schema.class_column, params={}).set_params(
        random_state=1).fit_transform(x)
    assert ddr(x[schema.numeric], z[schema.numeric]).value < 0.2
    assert abs(sers(x, z, *cols).value - same.value) < 0.01
