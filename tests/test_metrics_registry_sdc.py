"""The SDC and structure measures are found by name and run on an EvaluationContext."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from ppdm.data.schema import Schema
from ppdm.errors import MeasureNotApplicable, ParameterError
from ppdm.experiments.evaluation import resolve_measures
from ppdm.metrics.base import EvaluationContext
from ppdm.metrics.info_loss import il1s
from ppdm.metrics.risk import idr

NUMERIC_MEASURES = ["il_metrics", "il1s", "il1s_mean", "ddr", "idr", "il_dr_score", "sse_sst", "entropy",
                    "correlation_difference"]


def _ctx(**options) -> EvaluationContext:
    rng = np.random.default_rng(2)
    n = 60
    x = pd.DataFrame({"a": rng.normal(10, 2, n), "b": rng.normal(5, 1, n), "g": rng.choice(["u", "v"], n),
                      "y": rng.choice(["p", "q"], n)})
    z = x.copy()
    z["a"] = np.round(z["a"])
    z["b"] = z["b"] + rng.normal(0, 0.5, n)
    schema = Schema(numeric=["a", "b"], categorical=["g"], class_column="y")
    return EvaluationContext(x=x, z=z, schema=schema, options=dict(options))


def test_every_name_is_registered():
    names = {m.name for m in resolve_measures("all")}
    assert set(NUMERIC_MEASURES) | {"sers"} <= names
    specs = resolve_measures(",".join(NUMERIC_MEASURES + ["sers"]))
    assert [s.name for s in specs] == NUMERIC_MEASURES + ["sers"]
    assert all(not s.needs_class for s in specs)


def test_adapters_run_and_are_json_ready():
    ctx = _ctx()
    out = {}
    for spec in resolve_measures(",".join(NUMERIC_MEASURES + ["sers"])):
        res = spec.fn(ctx)
        assert np.isfinite(res.value), spec.name
        out[spec.name] = res.value
        json.dumps(res.to_dict())
    assert out["il1s"] == pytest.approx(il1s(ctx.x[["a", "b"]], ctx.z[["a", "b"]]).value)
    assert out["idr"] == pytest.approx(idr(ctx.x[["a", "b"]], ctx.z[["a", "b"]]).value)


def test_options_reach_the_measure():
    ctx = _ctx(**{"idr.k": 0.5, "il1s": {"form": "mean"}})
    specs = {s.name: s for s in resolve_measures("idr,il1s")}
    assert specs["idr"].fn(ctx).k == 0.5
    assert specs["il1s"].fn(ctx).form == "mean"
    with pytest.raises(ParameterError, match="no parameter"):
        specs["idr"].fn(_ctx(**{"idr.width": 2}))


def test_no_numeric_attribute_is_a_clear_error():
    ctx = _ctx()
    ctx.schema = Schema(numeric=[], categorical=["g", "a", "b"], class_column="y")
    spec = resolve_measures("il1s")[0]
    with pytest.raises(MeasureNotApplicable, match="numeric"):
        spec.fn(ctx)


def test_constant_column_is_named():
    ctx = _ctx()
    ctx.x["a"] = 3.0
    with pytest.raises(MeasureNotApplicable, match="'a'"):
        resolve_measures("il1s")[0].fn(ctx)
