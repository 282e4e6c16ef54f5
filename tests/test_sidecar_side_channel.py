"""The public matrices sidecar of random substitution (and PRAM's, which shares its format)
never carries values of x: numeric bins lie on a public range (declared bounds, or x's range
narrowed to a grid), and the observed range stays in the owner's private log."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from ppdm.anonymize import make_technique
from ppdm.anonymize.random_substitution import public_range, sidecar_path
from ppdm.cli.app import app
from ppdm.data.provenance import read_private
from ppdm.data.schema import Schema

runner = CliRunner()


def _table(n: int = 400, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    wage = np.round(rng.uniform(1500, 9000, n), 2)
    wage[:2] = [1234.57, 98765.43]  # one low and one high earner: the extremes a sidecar must not publish
    age = rng.integers(23, 88, n)
    age[:2] = [17, 93]
    return pd.DataFrame({"age": age, "wage": wage, "job": rng.choice(["a", "b", "c"], n),
                         "y": rng.choice(["no", "yes"], n)})


def _numbers(obj) -> list[float]:
    """Every number in a JSON document."""
    if isinstance(obj, dict):
        return [v for x in obj.values() for v in _numbers(x)]
    if isinstance(obj, list):
        return [v for x in obj for v in _numbers(x)]
    if isinstance(obj, (int, float)) and not isinstance(obj, bool):
        return [float(obj)]
    return []


def test_public_range_by_hand() -> None:
    # [1234.57, 98765.43] in 10 bins: width 9753.1, grid 5000 -> [5000, 95000]
    assert public_range(1234.57, 98765.43, 10) == (5000.0, 95000.0, 5000.0)
    # whole numbers [17, 93] in 10 bins: width 7.6, grid 5 -> [20, 90]
    assert public_range(17, 93, 10, integer=True) == (20.0, 90.0, 5.0)
    # whole numbers one unit per bin: only x's own range is wide enough
    assert public_range(3, 13, 10, integer=True) == (3.0, 13.0, 1.0)


def test_the_matrices_sidecar_holds_no_extreme_of_x(tmp_path: Path) -> None:
    x = _table()
    src, out = tmp_path / "x.csv", tmp_path / "z.csv"
    x.to_csv(src, index=False)
    r = runner.invoke(app, ["anonymize", str(src), "-m", "random-substitution", "-p", "gamma=3", "--class", "y",
                            "--seed", "1", "--experiment-seed", "-o", str(out)])
    assert r.exit_code == 0, r.output
    side = json.loads(sidecar_path(out).read_text())
    published = set(_numbers(side["attributes"]))
    for c in ("age", "wage"):
        lo, hi = float(x[c].min()), float(x[c].max())
        dom = next(a for a in side["attributes"] if a["column"] == c)
        assert dom["kind"] == "binned"
        # neither end of x's range is an edge or a released value
        assert lo not in published and hi not in published, c
        edges = np.asarray(dom["edges"])
        assert edges[0] > lo and edges[-1] < hi, c
        # nor can it be worked out from the representatives (two centres give the width, hence both ends)
        reps = np.asarray(dom["values"], dtype=float)
        width = (edges[-1] - edges[0]) / dom["n"]
        assert not np.isclose(reps[0] - width / 2, lo) and not np.isclose(reps[-1] + width / 2, hi), c
    z = pd.read_csv(out)
    assert z["wage"].min() > x["wage"].min() and z["wage"].max() < x["wage"].max()
    # the owner keeps the observed range in the private log
    kept = read_private(out)["technique"]["bins_from_x"]
    assert kept["wage"]["observed"] == [1234.57, 98765.43] and kept["wage"]["bins"] == [5000.0, 95000.0]


def test_declared_bounds_are_the_bins_range() -> None:
    x = _table()
    sch = Schema.from_dict({**Schema.infer(x, "y").to_dict(), "bounds": {"wage": [0, 100000], "age": [0, 120]}})
    t = make_technique("random-substitution", class_column="y", schema=sch, random_state=0,
                       params={"gamma": 3}).fit(x)
    att = t.metadata_.attributes
    assert att["wage"].edges[0] == 0 and att["wage"].edges[-1] == 100000
    assert att["age"].edges[0] == 0 and att["age"].edges[-1] == 120
    assert t.private_report_ is None  # nothing was taken from x


@pytest.mark.parametrize("name", ["random-substitution"])
def test_no_value_of_x_beyond_its_categories_reaches_the_sidecar(name: str, tmp_path: Path) -> None:
    """Categories only (PRAM, whose matrices depend on x's frequencies, writes no sidecar)."""
    x = _table()
    if name == "pram":
        x = x.drop(columns=["age", "wage"])
    t = make_technique(name, class_column="y", random_state=0, params={"gamma": 3} if name != "pram" else {})
    t.fit(x)
    t.write_sidecars(tmp_path / "z.csv")
    text = sidecar_path(tmp_path / "z.csv").read_text()
    for v in ("1234.57", "98765.43"):
        assert v not in text
