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

from ppdm.anonymize.registry import make_technique
from ppdm.data.partitions import open_dataset
from ppdm.data.provenance import read_private
from ppdm.experiments.out_of_core import release_dataset

# these tests are about partitioned work; the gate's warnings for the releases let through have their own tests
pytestmark = pytest.mark.filterwarnings("ignore:released although")
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
