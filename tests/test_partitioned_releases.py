"""Partitioned releases (a Parquet folder of several files) as the in-memory ones: the privacy
record totals every partition, ``--then`` chains run partition by partition, a recoded
release is evaluated, and the gate judges local suppression in the intruder's view."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from mixed_table import mixed_table
from typer.testing import CliRunner

from ppdm.anonymize.registry import make_technique
from ppdm.cli.app import app
from ppdm.data.partitions import open_dataset
from ppdm.data.provenance import read_private
from ppdm.experiments.out_of_core import release_dataset

# these tests are about partitioned work; the gate's warnings for the releases let through have their own tests
pytestmark = pytest.mark.filterwarnings("ignore:released although")
runner = CliRunner()
GATE_OFF = {"allow_verbatim": True, "allow_untouched_keys": True}
GATE_FLAGS = ["--allow-verbatim", "--allow-untouched-keys"]
KEYS = ["age", "zip", "member", "grade"]


def _folder(tmp: Path, n: int = 900, parts: int = 3, name: str = "x") -> tuple[Path, pd.DataFrame]:
    x = mixed_table(n)
    folder = tmp / name
    folder.mkdir()
    for i, rows in enumerate(np.array_split(np.arange(n), parts)):
        x.iloc[rows].to_parquet(folder / f"part{i}.parquet", index=False)
    return folder, x


def _json(res: Any) -> dict[str, Any]:
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout[res.stdout.index("{"):])


def test_the_privacy_record_totals_every_partition(tmp_path: Path) -> None:
    src, x = _folder(tmp_path)
    tech = make_technique("local-suppression", class_column="label", random_state=4,
                          params={"k": 3, "keys": KEYS})
    rel = release_dataset(open_dataset(str(src), categorical=["grade"]), tech, tmp_path / "z", missing="keep",
                          fit_rows=300, **GATE_OFF)
    z = pd.read_parquet(tmp_path / "z")
    # local suppression only blanks cells that had a value: the blanked cells of a key are its
    # missing cells in z less those in x (counted here without the technique's own bookkeeping)
    blanked = {c: int(z[c].isna().sum() - x[c].isna().sum()) for c in KEYS}
    assert sum(blanked.values()) > 0
    private = read_private(tmp_path / "z")["technique"]
    assert private["suppressed_cells"] == sum(blanked.values())
    assert private["suppressed_by_key"] == blanked
    assert private["partitions"] == 3
    assert rel.technique.private_report_["suppressed_cells"] == sum(blanked.values())
    # the public record is the technique's guarantee, the same for every partition: not a list
    assert rel.provenance["privacy"]["k"] == 3 and rel.provenance["privacy"]["keys"] == KEYS


def test_then_chains_run_partition_by_partition(tmp_path: Path) -> None:
    src, x = _folder(tmp_path)
    keys = ["zip", "member", "grade"]
    res = runner.invoke(app, ["anonymize", str(src), "-m", "gaussian-noise", "-p", "gaussian-noise.level=0.3",
                              "--then", "local-suppression", "-p", "local-suppression.k=3",
                              "-p", f"local-suppression.keys={','.join(keys)}", "--class", "label",
                              "--missing", "keep", "--categorical", "grade", "--seed", "7", "--experiment-seed",
                              *GATE_FLAGS, "-o", str(tmp_path / "z")])
    assert res.exit_code == 0, res.output
    assert "with gaussian-noise then local-suppression" in res.output
    z = pd.read_parquet(tmp_path / "z")
    assert len(z) == len(x)
    # the noise step ran: the incomes of z are not those of x (rows are shuffled, so compared as multisets)
    assert sorted(z["income"].dropna()) != sorted(x["income"].dropna())
    # the suppression step ran on the noisy release, and its totals are in the owner's log
    steps = read_private(tmp_path / "z")["technique"]["composition"]
    blanked = sum(int(z[c].isna().sum() - x[c].isna().sum()) for c in keys)
    assert blanked > 0 and steps["local-suppression"]["suppressed_cells"] == blanked


def test_a_recoded_partitioned_release_is_evaluated_as_in_memory(tmp_path: Path) -> None:
    """Recoding is deterministic: the table recoded in memory and by partition is the same
    release, and the evaluation of each (in memory; by partition, which refused the labels
    before) gives the same values."""
    src, x = _folder(tmp_path, 600)
    single = tmp_path / "x.parquet"
    x.to_parquet(single, index=False)
    common = ["-m", "recode", "-p", "columns=age", "-p", "breaks=4", "--class", "label", "--missing", "keep",
              "--categorical", "grade", *GATE_FLAGS, "--seed", "3", "--experiment-seed"]
    for data, out in ((src, "z"), (single, "zmem.parquet")):
        res = runner.invoke(app, ["anonymize", str(data), *common, "-o", str(tmp_path / out)])
        assert res.exit_code == 0, res.output
    assert pd.read_parquet(tmp_path / "z")["age"].dropna().str.startswith(("[", "(")).all()
    ask = ["--class", "label", "--missing", "keep", "--categorical", "grade", "--seed", "1", "--json",
           "--measures", "il1s,release_check,k_anonymity", "--qi", "age,zip"]
    mem = _json(runner.invoke(app, ["evaluate", "-x", str(single), "-z", str(tmp_path / "zmem.parquet"), *ask]))
    ooc = _json(runner.invoke(app, ["evaluate", "-x", str(src), "-z", str(tmp_path / "z"), *ask]))
    assert ooc["measures"]["release_check"]["details"]["n_records"] == 600
    for name, m in mem["measures"].items():
        assert ooc["measures"][name]["value"] == pytest.approx(m["value"], rel=1e-12), name


@pytest.mark.filterwarnings("ignore:.*come out unchanged on every column")
def test_the_gate_judges_a_partitioned_local_suppression_in_the_intruders_view(tmp_path: Path) -> None:
    """Local suppression (criterion='intruder', its default) leaves most records as they were and
    blanks others so that each has k candidates for an intruder who knows its values: the gate
    lets it through by partition as in memory (it refused it: "whoever knows those finds the
    record"), and still counts every unique record as found when nothing is blanked."""
    # complete records: a missing cell of z could be anyone's value, so with holes nothing is found alone
    x = mixed_table(1500)[["age", "zip", "member", "grade", "label"]].dropna().reset_index(drop=True)
    src = tmp_path / "x"
    src.mkdir()
    for i, rows in enumerate(np.array_split(np.arange(len(x)), 3)):
        x.iloc[rows].to_parquet(src / f"part{i}.parquet", index=False)

    def released(k: int, out: str, **gate: bool) -> Any:
        tech = make_technique("local-suppression", class_column="label", random_state=4,
                              params={"k": k, "keys": KEYS})
        return release_dataset(open_dataset(str(src), categorical=["grade"]), tech, tmp_path / out,
                               missing="keep", fit_rows=300, **gate)

    rel = released(3, "z")
    assert rel.check.records_verbatim > 0.5 * len(x)  # most records come out as they were ...
    assert rel.check.records_verbatim_unique == 0  # ... and none is found alone by its values
    # k=1 blanks nothing: every record unique in x is found alone by its values (the gate is told to let
    # the copy through, to see the count it would refuse on)
    bare = released(1, "z1", allow_unchanged=True, allow_untouched_keys=True)
    assert bare.check.records_verbatim_unique == bare.check.unique_in_x_all > 0
