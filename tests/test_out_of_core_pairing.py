"""A partitioned release mixes its rows across its parts, so its partitions do not hold x's
records row for row; the partitioned evaluation (ppdm.experiments.evaluate.evaluate, the one
entry point) pairs it through its private log, in one place
(ppdm/experiments/evaluate_partitioned.py: repair_partitions), and a record-by-record measure
without that pairing refuses with one line (docs/scale.md)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from mixed_table import mixed_table

from ppdm.anonymize.registry import make_technique
from ppdm.data.partitions import open_dataset
from ppdm.data.types import working_frame
from ppdm.errors import ParameterError, SchemaError
from ppdm.experiments.evaluate import EvaluateOptions, evaluate
from ppdm.experiments.evaluation import load_all_measures
from ppdm.experiments.out_of_core import release_dataset
from ppdm.experiments.pairing import pair_in_memory, pairing_of
from ppdm.metrics._dask import partition_lengths, working_parts
from ppdm.metrics.base import MEASURES, EvaluationContext
from ppdm.metrics.out_of_core import evaluate_measure

# noise without declared bounds warns that its clipping range came from x: not what these tests check
pytestmark = [pytest.mark.filterwarnings("ignore::ppdm.anonymize._domain.BoundsFromDataWarning")]

dd = pytest.importorskip("dask.dataframe")
load_all_measures()

#: the release gate has its own tests (tests/test_release_gate.py)
GATE_OFF = {"allow_verbatim": True, "allow_untouched_keys": True}
IL1S = EvaluateOptions(measures=["il1s"])


@pytest.fixture(scope="module")
def released(tmp_path_factory: pytest.TempPathFactory) -> tuple[object, object]:
    tmp = tmp_path_factory.mktemp("pairing")
    src = tmp / "x.csv"
    mixed_table(900).to_csv(src, index=False)
    ds = open_dataset(str(src), blocksize="10KB", categorical=["grade"])
    assert ds.npartitions >= 3
    tech = make_technique("gaussian-noise", class_column="label", random_state=5, params={"level": 0.5})
    rel = release_dataset(ds, tech, tmp / "z", missing="keep", fit_rows=500, **GATE_OFF)
    return ds, rel


def test_a_partitioned_release_is_paired_through_its_log_as_in_memory(released: tuple) -> None:
    ds, rel = released
    z_parts = dd.read_parquet(str(rel.path))
    # the point: z's parts do not hold x's partitions row for row (the mix drew each row a part)
    assert partition_lengths(z_parts) != partition_lengths(ds.data)
    ev = evaluate(ds, rel, options=IL1S)
    assert ev.pairing.mode == "private log" and ev.document()["measures"]["il1s"]["out_of_core"] == "exact"
    # the same release folder, its log read beside it, gives the same value
    again = evaluate(ds, str(rel.path), options=IL1S)
    assert again.outcomes["il1s"].value == ev.outcomes["il1s"].value
    # in memory: x as read, z's parts in order, paired by the same log (pair_in_memory)
    x = pd.concat([ds.partition(i) for i in range(ds.npartitions)], ignore_index=True)
    z = pd.read_parquet(rel.path)
    xp, zp = pair_in_memory(x, z, None, pairing_of(rel.private, None, "auto"), "keep")
    sch = rel.schema
    want = MEASURES["il1s"].fn(EvaluationContext(x=working_frame(xp, sch.numeric), z=working_frame(zp, sch.numeric),
                                                 schema=sch))
    assert ev.outcomes["il1s"].value == pytest.approx(float(want.value), rel=1e-9)
    # and the value is not that of x and z compared by position (different people)
    wrong = MEASURES["il1s"].fn(EvaluationContext(x=working_frame(x, sch.numeric), z=working_frame(z, sch.numeric),
                                                  schema=sch))
    assert float(wrong.value) != pytest.approx(float(want.value), rel=1e-3)


def test_without_the_log_a_record_level_measure_refuses(released: tuple, tmp_path: Path) -> None:
    ds, rel = released
    # pairing left out on purpose: one line, naming the measure and the way out
    with pytest.raises(ParameterError) as e:
        evaluate(ds, rel, options=EvaluateOptions(measures=["il1s"], pairing="none"))
    assert "\n" not in str(e.value) and "il1s" in str(e.value) and "pairing='auto'" in str(e.value)
    # a release folder without its private log: nothing pairs its rows
    bare = tmp_path / "bare"
    bare.mkdir()
    for f in Path(rel.path).iterdir():
        (bare / f.name).write_bytes(f.read_bytes())
    with pytest.raises(ParameterError) as e:
        evaluate(ds, str(bare), rel.schema, options=IL1S)
    assert "\n" not in str(e.value) and "not paired" in str(e.value)
    # the measure called on the parts as written (a hand-made context claims they are paired):
    # refused on the first partition whose lengths differ, never computed on different people
    sch = rel.schema
    ctx = EvaluationContext(x=working_parts(ds.data, sch.numeric),
                            z=working_parts(open_dataset(str(bare), schema=sch).data, sch.numeric), schema=sch)
    with pytest.raises(SchemaError) as e:
        evaluate_measure(MEASURES["il1s"], ctx)
    assert "\n" not in str(e.value) and "private log" in str(e.value) and "ppdm.experiments.evaluate.evaluate" in str(e.value)
