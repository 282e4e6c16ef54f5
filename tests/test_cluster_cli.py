"""A Dask cluster from the command line: ``--scheduler ADDRESS`` on ``anonymize``, ``evaluate``
and ``compare`` (docs/scale.md). A ``LocalCluster`` with two worker processes runs the same
commands as the local scheduler, with the same seeds, on a partitioned Parquet dataset: the
release has the same bytes, the owner's private log the same totals, and the measures the
same values."""

from __future__ import annotations

import filecmp
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from mixed_table import mixed_table
from typer.testing import CliRunner

from ppdm.cli.app import app
from ppdm.data.provenance import read_private

distributed = pytest.importorskip("distributed")
# a cluster of two worker processes takes a few seconds to start; CI runs the slow suite (.ci/run)
pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _dask_state_restored():
    """Each test leaves dask as it found it: a client made default inside a test (the test's own, or
    the command's) must not stay the default of later tests in the same process, whose computations
    would go to a cluster that is gone."""
    import copy

    import dask

    saved = copy.deepcopy(dask.config.config)
    yield
    dask.config.config.clear()
    dask.config.config.update(saved)
    from distributed import client as dc

    while dc._get_global_client() is not None:  # no public way to drop a closed default client
        dc._del_global_client(dc._get_global_client())

runner = CliRunner()
GATE_FLAGS = ["--allow-verbatim", "--allow-untouched-keys"]
SEED = ["--seed", "20240917", "--experiment-seed"]


def _parquet_folder(tmp: Path, n: int = 1500, parts: int = 3) -> Path:
    x = mixed_table(n)
    folder = tmp / "x"
    folder.mkdir()
    for i, rows in enumerate(np.array_split(np.arange(n), parts)):
        x.iloc[rows].to_parquet(folder / f"part{i}.parquet", index=False)
    return folder


def _json(res: Any) -> dict[str, Any]:
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout[res.stdout.index("{"):])


def _run(src: Path, out: Path, extra: list[str]) -> dict[str, Any]:
    """Anonymize ``src`` into ``out`` with local suppression, then evaluate the release."""
    res = runner.invoke(app, ["anonymize", str(src), "-m", "local-suppression", "-p", "k=3",
                              "-p", "keys=age,zip,member,grade", "--class", "label", "--missing", "keep",
                              "--categorical", "grade", *GATE_FLAGS, *SEED, "-o", str(out), *extra])
    assert res.exit_code == 0, res.output
    return _json(runner.invoke(app, ["evaluate", "-x", str(src), "-z", str(out), "--class", "label",
                                     "--missing", "keep", "--categorical", "grade", "--seed", "5", "--json",
                                     "--measures", "il1s,release_check,k_anonymity", "--qi", "age,zip,member,grade", *extra]))


def test_anonymize_and_evaluate_on_a_local_cluster_match_the_local_run(tmp_path: Path) -> None:
    src = _parquet_folder(tmp_path)
    local = _run(src, tmp_path / "local", [])
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        remote = _run(src, tmp_path / "cluster", ["--scheduler", cluster.scheduler_address])
        # the partition tasks ran on the two worker processes
        with distributed.Client(cluster) as client:
            done = client.run(lambda dask_worker: len(dask_worker.state.log))
        assert len(done) == 2 and all(v > 0 for v in done.values())
    a, b = tmp_path / "local", tmp_path / "cluster"
    names = sorted(p.name for p in a.iterdir())
    assert len(names) == 3 and names == sorted(p.name for p in b.iterdir())
    assert all(filecmp.cmp(a / f, b / f, shallow=False) for f in names)
    # the provenance records when it was made: its technique, privacy record and output are the same
    prov = [json.loads((tmp_path / f"{n}.provenance.json").read_text()) for n in ("local", "cluster")]
    for key in ("technique", "privacy", "output"):
        assert prov[0][key] == prov[1][key], key
    # the privacy record totals every partition's counts, on the cluster as locally
    pa, pb = read_private(a), read_private(b)
    assert pa["technique"] == pb["technique"] and pa["technique"]["suppressed_cells"] > 0
    assert pa["release_check"] == pb["release_check"]
    for name, m in local["measures"].items():
        assert remote["measures"][name]["value"] == pytest.approx(m["value"], rel=1e-12), name


# gaussian noise on a table that declares no bounds: the advice to declare them is tested where it is made
@pytest.mark.filterwarnings("ignore::ppdm.anonymize._domain.BoundsFromDataWarning")
def test_compare_on_a_local_cluster_matches_the_local_run(tmp_path: Path) -> None:
    src = tmp_path / "x.csv"
    mixed_table(300).dropna().to_csv(src, index=False)
    args = ["compare", str(src), "--class", "label", "-t", "gaussian-noise:level=0.3", "--cv", "2",
            "--measures", "il1s,ddr", "--seed", "3", "--categorical", "grade"]
    res = runner.invoke(app, [*args, "-o", str(tmp_path / "local")])
    assert res.exit_code == 0, res.output
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        res = runner.invoke(app, [*args, "-o", str(tmp_path / "cluster"), "--scheduler", cluster.scheduler_address])
        assert res.exit_code == 0, res.output
    assert filecmp.cmp(tmp_path / "local" / "results.csv", tmp_path / "cluster" / "results.csv", shallow=False)


def test_an_unreachable_scheduler_is_one_clear_error(tmp_path: Path) -> None:
    import dask

    src = _parquet_folder(tmp_path, 30, 2)
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        res = runner.invoke(app, ["evaluate", "-x", str(src), "-z", str(src), "--scheduler", "tcp://127.0.0.1:9"])
    assert res.exit_code == 2 and "cannot reach the Dask scheduler" in res.output
