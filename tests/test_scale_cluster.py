"""The same code on a Dask cluster: a ``LocalCluster`` with two worker processes and a
``distributed.Client``, nothing else changed (docs/scale.md). The release has the same bytes
as on the local scheduler, and the measures the same values."""

from __future__ import annotations

import filecmp
from pathlib import Path

import pytest
from mixed_table import mixed_table

from ppdm.anonymize.registry import make_technique
from ppdm.data.partitions import open_dataset
from ppdm.experiments.evaluate import EvaluateOptions, evaluate
from ppdm.experiments.out_of_core import release_dataset

pytestmark = pytest.mark.slow

#: these tests are about partitioned work; the release gate has its own tests (tests/test_release_gate.py)
GATE_OFF = {"allow_verbatim": True, "allow_untouched_keys": True}
MEASURES = ("il1s", "ddr", "release_check", "rule_accuracy", "prediction_accuracy")


def _measures(ds, rel) -> dict[str, float]:
    """The measures as a library user takes them: the public partitioned evaluation, z paired
    with x through the release's private log (the release mixes its rows across its parts)."""
    ev = evaluate(ds, rel, options=EvaluateOptions(measures=list(MEASURES), sample_rows=800, random_state=1))
    assert ev.pairing.mode == "private log"
    assert not any(o.skipped for o in ev.outcomes.values()), {n: o.reason for n, o in ev.outcomes.items()}
    return {n: float(ev.outcomes[n].value) for n in MEASURES}


def test_local_cluster_with_two_workers(tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    src = tmp_path / "x.csv"
    mixed_table(4000).to_csv(src, index=False)
    ds = open_dataset(str(src), blocksize="40KB", categorical=["grade"])
    assert ds.npartitions >= 3

    def tech():
        return make_technique("mdav", class_column="label", random_state=11, params={"k": 4})

    local = release_dataset(ds, tech(), tmp_path / "local", missing="keep", **GATE_OFF, fit_rows=1500)
    local_values = _measures(ds, local)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        on_cluster = release_dataset(ds, tech(), tmp_path / "cluster", missing="keep", **GATE_OFF, fit_rows=1500)
        cluster_values = _measures(ds, on_cluster)
        # the work ran on the two workers
        done = client.run(lambda dask_worker: len(dask_worker.state.log))
        assert len(done) == 2 and all(v > 0 for v in done.values())
    names = sorted(p.name for p in (tmp_path / "local").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "cluster").iterdir())
    assert all(filecmp.cmp(tmp_path / "local" / f, tmp_path / "cluster" / f, shallow=False) for f in names)
    assert on_cluster.check.value == local.check.value
    for name, v in local_values.items():
        assert cluster_values[name] == pytest.approx(v, rel=1e-12), name
