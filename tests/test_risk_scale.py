"""Disclosure risk at scale: out of core, key-variable risk is exact (Dask group-bys on the keys,
with weights) and record linkage is exact (blocked search) or links a sample of released
records against every original, with an interval that covers the exact value; intruder
matching attacks a sample of originals against every released record. Checked against the
in-memory values on 10⁵ records (and 10⁶ in the slow suite)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ppdm.data.schema import Schema
from ppdm.experiments.evaluation import load_all_measures
from ppdm.metrics.base import MEASURES, EvaluationContext
from ppdm.metrics.out_of_core import SampledResult, evaluate_measure

dd = pytest.importorskip("dask.dataframe")
load_all_measures()

EXACT = ["k_anonymity", "sample_uniques", "reidentification_risk", "l_diversity"]
OPTIONS = {"keys": "sex,region,job", "l_diversity.keys": "sex,region", "l_diversity.sensitive": "job",
           "qi_matching.keys": "sex,region,age"}


def _tables(n: int, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame, Schema]:
    rng = np.random.default_rng(seed)
    region = pd.Series(rng.choice([f"r{i:02d}" for i in range(30)], n), dtype=object)
    region[rng.random(n) < 0.03] = None  # missing keys match every value (sdcMicro)
    x = pd.DataFrame({
        "sex": rng.choice(["f", "m"], n), "region": region, "job": rng.choice([f"j{i}" for i in range(12)], n),
        "age": rng.integers(18, 90, n).astype(float), "income": np.round(rng.normal(3000, 800, n), 2),
        "weight": rng.uniform(50, 150, n),
    })
    z = x.copy()
    z["income"] = np.round(z["income"] + rng.normal(0, 150, n), 2)
    moved = rng.random(n) < 0.5
    z.loc[moved, "age"] = z.loc[moved, "age"] + rng.integers(-2, 3, int(moved.sum()))
    sch = Schema(numeric=["age", "income"], categorical=["sex", "region", "job"], weight="weight")
    return x, z, sch


def _compare(n: int, parts: int) -> None:
    x, z, sch = _tables(n)
    mem = EvaluationContext(x=x, z=z, schema=sch, random_state=0, options=dict(OPTIONS))
    ooc = EvaluationContext(x=dd.from_pandas(x, npartitions=parts), z=dd.from_pandas(z, npartitions=parts),
                            schema=sch, random_state=0, options=dict(OPTIONS))
    for name in EXACT:
        a, b = MEASURES[name].fn(mem), evaluate_measure(MEASURES[name], ooc)
        assert not isinstance(b, SampledResult), name
        assert b.value == pytest.approx(a.value, rel=1e-12, abs=1e-15), name
        assert b.original == pytest.approx(a.original, rel=1e-12, abs=1e-15), name
    a, b = MEASURES["reidentification_risk"].fn(mem), evaluate_measure(MEASURES["reidentification_risk"], ooc)
    assert a.weight == b.weight == "weight" and b.expected_reidentifications == pytest.approx(
        a.expected_reidentifications, rel=1e-12)
    pd.testing.assert_frame_equal(b.per_key, a.per_key, check_dtype=False)
    # record linkage: exact below EXACT_ROWS, else a sample of z linked against all of x
    a = MEASURES["record_linkage"].fn(mem)
    b = evaluate_measure(MEASURES["record_linkage"], ooc)
    if n <= 200_000:
        assert b.sample_size is None and b.value == pytest.approx(a.value, rel=1e-12) and b.tied == a.tied
        ooc.options["record_linkage.sample"] = 20_000
        b = evaluate_measure(MEASURES["record_linkage"], ooc)
    assert b.sample_size == 20_000 and b.population == n
    assert b.ci_low <= a.value <= b.ci_high, (a.value, b.ci_low, b.ci_high)
    # intruder matching on a perturbed age: a sample of x against every released record
    a = MEASURES["qi_matching"].fn(mem)
    b = evaluate_measure(MEASURES["qi_matching"], ooc)
    assert b.sample_size == 20_000 and b.ci_low <= a.value <= b.ci_high, (a.value, b.ci_low, b.ci_high)
    assert a.tolerance == b.tolerance


def test_out_of_core_risk_equals_or_covers_the_in_memory_value_on_1e5_records() -> None:
    _compare(100_000, 5)


@pytest.mark.slow
def test_out_of_core_risk_equals_or_covers_the_in_memory_value_on_1e6_records() -> None:
    _compare(1_000_000, 10)
