"""One entry point for evaluating a release: ppdm.experiments.evaluate.evaluate works in memory
or partition by partition, ``partitioned`` deciding in one place, and ``ppdm evaluate`` takes
the same path for partitioned tables (issues #27, #32)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from mixed_table import mixed_table
from typer.testing import CliRunner

from ppdm.anonymize.registry import make_technique
from ppdm.cli.app import app
from ppdm.data.partitions import open_dataset
from ppdm.errors import ParameterError, PPDMError
from ppdm.experiments.evaluate import EvaluateOptions, evaluate, partitioned
from ppdm.experiments.evaluation import load_all_measures
from ppdm.experiments.out_of_core import release_dataset
from ppdm.experiments.pairing import pair_in_memory, pairing_of

# dask's Parquet reader calls a pandas method pandas 3.1 deprecates (pyproject names it; its
# filter does not reach this file's reads): nothing in ppdm can change it
pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame.reset_index is deprecated:Warning")

pytest.importorskip("dask.dataframe")
load_all_measures()

#: the release gate has its own tests (tests/test_release_gate.py)
GATE_OFF = {"allow_verbatim": True, "allow_untouched_keys": True}
#: measures with an exact partitioned form (docs/scale.md): the same value in memory and out of core
EXACT = ["il1s", "sse_sst", "entropy"]
runner = CliRunner()


@pytest.fixture(scope="module")
def released(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object, object]:
    tmp = tmp_path_factory.mktemp("one_entry")
    src = tmp / "x.csv"
    mixed_table(400).to_csv(src, index=False)
    ds = open_dataset(str(src), blocksize="6KB", categorical=["grade"])
    assert ds.npartitions >= 2
    tech = make_technique("gaussian-noise", class_column="label", random_state=5, params={"level": 0.5})
    with pytest.warns(UserWarning):  # the noise's bounds come from x (ppdm.anonymize._domain): not the point here
        rel = release_dataset(ds, tech, tmp / "z", missing="keep", fit_rows=300, **GATE_OFF)
    return src, ds, rel


def values(doc: dict) -> dict[str, float]:
    return {name: m["value"] for name, m in doc["measures"].items()}


def test_a_partitioned_release_gives_the_values_of_the_same_tables_in_memory(released: tuple) -> None:
    src, ds, rel = released
    opts = EvaluateOptions(measures=EXACT)
    assert partitioned(ds, rel)
    ev = evaluate(ds, rel, options=opts)
    doc = ev.document()
    assert ev.pairing.mode == "private log" and {m["out_of_core"] for m in doc["measures"].values()} == {"exact"}
    # the same tables in memory: x as read, z's parts in order, paired by the release's log, then
    # handed to the same evaluate as a DataFrame whose rows are x's in order
    x = pd.concat([ds.partition(i) for i in range(ds.npartitions)], ignore_index=True)
    z = pd.read_parquet(rel.path)
    xp, zp = pair_in_memory(x, z, None, pairing_of(rel.private, None, "auto"), "keep")
    assert not partitioned(xp, zp)
    mem = evaluate(xp, zp, rel.schema, options=EvaluateOptions(measures=EXACT, pairing="position", missing="keep"))
    assert "out_of_core" not in mem.document()["measures"]["il1s"]
    want = values(mem.document())
    got = values(doc)
    assert set(got) == set(EXACT)
    for name in EXACT:
        assert got[name] == pytest.approx(want[name], rel=1e-9, abs=1e-12), name
    # the release's folder (its log read beside it) and engine="dask" with x's path: the same values
    again = evaluate(str(src), str(rel.path), options=EvaluateOptions(measures=EXACT, engine="dask"))
    assert values(again.document()) == got


def test_the_command_and_the_library_print_the_same_numbers(released: tuple) -> None:
    src, ds, rel = released
    res = runner.invoke(app, ["evaluate", "-x", str(src), "-z", str(rel.path), "--class", "label", "--categorical",
                              "grade", "--missing", "keep", "--measures", ",".join(EXACT), "--json", "--seed", "1"])
    assert res.exit_code == 0, res.output
    cli = json.loads(res.stdout[res.stdout.index("{"):])
    lib = evaluate(ds, str(rel.path), options=EvaluateOptions(measures=EXACT, missing="keep", random_state=1))
    assert cli["inputs"]["pairing"] == "private log" == lib.pairing.mode
    assert values(cli) == values(lib.document())
    assert cli["summary"] == lib.document()["summary"]


def test_partitioned_decides_in_one_place(released: tuple, tmp_path: Path) -> None:
    src, ds, rel = released
    df = pd.DataFrame({"a": [1, 2]})
    assert not partitioned(df, df) and not partitioned(df, tmp_path / "z.csv")
    assert partitioned(df, df, "dask") and partitioned(df, str(rel.path)) and partitioned(str(src), str(rel.path))
    with pytest.raises(PPDMError, match="engine='pandas'"):
        partitioned(ds, rel, "pandas")
    with pytest.raises(PPDMError, match="--engine must be"):
        partitioned(df, df, "spark")
    # x in memory with a partitioned release: one line saying how to give x
    with pytest.raises(ParameterError) as e:
        evaluate(df, rel)
    assert "\n" not in str(e.value) and "open_dataset" in str(e.value)


def test_an_evaluation_in_memory_does_not_import_dask() -> None:
    code = ("import sys, pandas as pd\n"
            "from ppdm.experiments.evaluate import EvaluateOptions, evaluate\n"
            "x = pd.DataFrame({'a': [1.0, 2.0, 3.0, 4.0], 'b': [2.0, 1.0, 4.0, 3.0]})\n"
            "evaluate(x, x + 1, options=EvaluateOptions(measures=['il1s'], pairing='position'))\n"
            "assert not [m for m in sys.modules if m.split('.')[0] in ('dask', 'dask_expr')]\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
