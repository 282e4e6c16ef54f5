"""Tables larger than memory: Dask inputs from the command line, releases written partition by
partition, measures exact out of core or on a declared sample, and never a silent compute of
a whole table (ppdm/data/partitions.py, ppdm/experiments/out_of_core.py,
ppdm/metrics/out_of_core.py, docs/scale.md)."""

from __future__ import annotations

import filecmp
import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from mixed_table import mixed_table
from typer.testing import CliRunner

from ppdm.anonymize._domain import BoundsFromDataWarning
from ppdm.anonymize.registry import make_technique
from ppdm.cli.app import app
from ppdm.data.io import read_table
from ppdm.data.partitions import open_dataset, wants_dask
from ppdm.data.provenance import in_input_order, read_private
from ppdm.data.schema import Schema
from ppdm.data.types import working_frame
from ppdm.errors import PPDMError
from ppdm.experiments._release_gate import ReleaseWarning
from ppdm.experiments.evaluation import load_all_measures
from ppdm.experiments.out_of_core import release_dataset
from ppdm.experiments.release import ReleaseRefused, release
from ppdm.metrics.base import MEASURES, EvaluationContext
from ppdm.metrics.keyvar import KEY_VARIABLE_MEASURES
from ppdm.metrics.out_of_core import SampledResult, evaluate_measure
from ppdm.metrics.release_check import release_check

dd = pytest.importorskip("dask.dataframe")
load_all_measures()
runner = CliRunner()
EXACT = sorted(n for n, s in MEASURES.items() if s.out_of_core)

#: these tests are about partitioned work; the release gate has its own tests (tests/test_release_gate.py)
GATE_OFF = {"allow_verbatim": True, "allow_untouched_keys": True}
GATE_FLAGS = ["--allow-verbatim", "--allow-untouched-keys"]


def _csv(tmp: Path, n: int = 3000, name: str = "x.csv") -> tuple[Path, pd.DataFrame]:
    x = mixed_table(n)
    p = tmp / name
    x.to_csv(p, index=False)
    return p, x


# ------------------------------------------------------------------------------ reading
def test_dask_inputs_are_recognised(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src, _ = _csv(tmp_path)
    import ppdm.data.partitions as parts

    # a file above the documented size goes to Dask by itself, unless --engine pandas says not
    monkeypatch.setattr(parts, "DASK_AUTO_BYTES", src.stat().st_size - 1)
    assert wants_dask(str(src)) and not wants_dask(str(src), "pandas")
    monkeypatch.setattr(parts, "DASK_AUTO_BYTES", src.stat().st_size)
    assert not wants_dask(str(src))
    monkeypatch.undo()
    folder = tmp_path / "parts"
    folder.mkdir()
    assert wants_dask(str(folder)) and wants_dask(str(tmp_path / "*.csv")) and wants_dask(str(src), "dask")
    assert not wants_dask(str(src)) and not wants_dask("builtin:wine")
    with pytest.raises(PPDMError, match="--engine dask"):
        wants_dask(str(folder), "pandas")
    with pytest.raises(PPDMError, match="engine"):
        wants_dask(str(src), "spark")


def test_partitions_have_the_types_of_an_in_memory_read(tmp_path: Path) -> None:
    src, _ = _csv(tmp_path)
    ds = open_dataset(str(src), blocksize="20KB", categorical=["grade"])
    assert ds.npartitions >= 3
    whole = read_table(src, categorical=["grade"])
    parts = pd.concat([ds.partition(i) for i in range(ds.npartitions)], ignore_index=True)
    pd.testing.assert_frame_equal(parts, whole, check_like=False)
    assert ds.date_formats == {"visit": "%Y-%m-%d"}
    # a glob of CSV files and a Parquet folder give the same table
    for i, chunk in enumerate(np.array_split(np.arange(len(whole)), 3)):
        whole.iloc[chunk].to_csv(tmp_path / f"g{i}.csv", index=False)
        (tmp_path / "pq").mkdir(exist_ok=True)
        whole.iloc[chunk].to_parquet(tmp_path / "pq" / f"p{i}.parquet", index=False)
    for spec in (str(tmp_path / "g*.csv"), str(tmp_path / "pq")):
        d = open_dataset(spec, categorical=["grade"] if spec.endswith("csv") else ())
        got = pd.concat([d.partition(i) for i in range(d.npartitions)], ignore_index=True)
        pd.testing.assert_frame_equal(got, whole)


def test_a_partition_that_contradicts_the_head_is_refused(tmp_path: Path) -> None:
    rows = [f"{100 + i},{i % 2}" for i in range(30)] + ["0150,1"]
    src = tmp_path / "c.csv"
    src.write_text("code,y\n" + "\n".join(rows) + "\n")
    import ppdm.data.partitions as parts

    old = parts.HEAD_ROWS
    parts.HEAD_ROWS = 10  # the head sees only whole numbers without a leading zero
    try:
        ds = open_dataset(str(src), blocksize="100B")
        with pytest.raises(PPDMError, match=r"'code'.*leading zero.*--categorical code"):
            for i in range(ds.npartitions):
                ds.partition(i)
    finally:
        parts.HEAD_ROWS = old


def test_a_later_partition_may_have_empty_whole_numbers_and_booleans(tmp_path: Path) -> None:
    rows = [f"{i},{'true' if i % 2 else 'false'},{i / 4}" for i in range(30)] + [",,7.5"]
    src = tmp_path / "n.csv"
    src.write_text("n,flag,v\n" + "\n".join(rows) + "\n")
    import ppdm.data.partitions as parts

    old = parts.HEAD_ROWS
    parts.HEAD_ROWS = 10  # the head sees no empty cell
    try:
        ds = open_dataset(str(src), blocksize="100B")
        assert ds.npartitions >= 2
        got = pd.concat([ds.partition(i) for i in range(ds.npartitions)], ignore_index=True)
    finally:
        parts.HEAD_ROWS = old
    assert str(got["n"].dtype) == "Int64" and str(got["flag"].dtype) == "boolean"
    assert got["n"].isna().tolist() == [False] * 30 + [True]
    assert got["flag"].isna().tolist() == [False] * 30 + [True]
    assert got["n"].iloc[:30].tolist() == list(range(30)) and got["flag"].iloc[1]


def test_a_partition_of_empty_dates_keeps_the_unit_of_the_others(tmp_path: Path) -> None:
    rows = [f"2021-01-{1 + i % 28:02d},{i}.5" for i in range(20)] + [f",{i}.25" for i in range(200)]
    src = tmp_path / "d.csv"
    src.write_text("day,v\n" + "\n".join(rows) + "\n")
    ds = open_dataset(str(src), blocksize="200B")
    parts = [ds.partition(i) for i in range(ds.npartitions)]
    assert parts[-1]["day"].isna().all() and parts[0]["day"].notna().any()
    assert {str(p["day"].dtype) for p in parts} == {str(ds.head["day"].dtype)}


# ----------------------------------------------------------------------------- releases
def _tech(name: str = "gaussian-noise", seed: int | None = 5, **params: Any) -> Any:
    return make_technique(name, class_column="label", random_state=seed, params=params or {"level": 0.5})


# gaussian noise on a table that declares no bounds: the advice to declare them is tested where it is made
@pytest.mark.filterwarnings("ignore::ppdm.anonymize._domain.BoundsFromDataWarning")
@pytest.mark.filterwarnings("ignore::ppdm.experiments._release_gate.ReleaseWarning")
def test_partitioned_release_is_reproducible_atomic_and_checked_exactly(tmp_path: Path) -> None:
    # 1500 records in partitions of 10 KB (about 270 records) fitted on 500: three releases of it
    # are the point, so the table is kept small (CPU budget)
    src, _ = _csv(tmp_path, 1500)
    ds = open_dataset(str(src), blocksize="10KB", categorical=["grade"])
    seen: list[tuple[str, int, int]] = []
    a = release_dataset(ds, _tech(), tmp_path / "a", missing="keep", **GATE_OFF, fit_rows=500,
                        progress=lambda s, d, n: seen.append((s, d, n)))
    release_dataset(ds, _tech(), tmp_path / "b", missing="keep", **GATE_OFF, fit_rows=500)
    release_dataset(ds, _tech(seed=6), tmp_path / "c", missing="keep", **GATE_OFF, fit_rows=500)
    names = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert names == [f"part.{i:05d}.parquet" for i in range(ds.npartitions)]
    same = [filecmp.cmp(tmp_path / "a" / f, tmp_path / "b" / f, shallow=False) for f in names]
    assert all(same) and not all(filecmp.cmp(tmp_path / "a" / f, tmp_path / "c" / f, shallow=False) for f in names)
    # progress: every partition of every pass
    assert [(d, n) for s, d, n in seen if s == "release"][-1] == (ds.npartitions, ds.npartitions)
    assert {s for s, _, _ in seen} == {"scan", "sample", "release", "mix", "check"}
    # the release check computed partition by partition is the in-memory one
    x = pd.concat([ds.partition(i) for i in range(ds.npartitions)], ignore_index=True)
    # each partition was shuffled on its own; the private log puts its rows back beside their originals
    shuffled = pd.read_parquet(tmp_path / "a")
    z, _ = in_input_order(shuffled, read_private(tmp_path / "a"))
    rows = [np.sort(pd.util.hash_pandas_object(t, index=False).to_numpy()) for t in (shuffled, z)]
    assert not shuffled.equals(z) and (rows[0] == rows[1]).all()
    sch = a.schema
    want = release_check(working_frame(x, sch.numeric), working_frame(z, sch.numeric), sch)
    assert a.check.n_records == want.n_records == len(x)
    assert a.check.records_verbatim == want.records_verbatim and a.check.unique_in_z == want.unique_in_z
    assert a.check.value == pytest.approx(want.value)
    pd.testing.assert_frame_equal(a.check.per_column, want.per_column)
    # types, missing cells and decimals as in memory
    assert list(z.dtypes) == list(x.dtypes)
    pd.testing.assert_frame_equal(z.isna(), x.isna())
    assert (np.round(z["income"].dropna(), 2) == z["income"].dropna()).all()
    prov = json.loads((tmp_path / "a.provenance.json").read_text())
    mine = read_private(tmp_path / "a")
    assert mine["input"]["partitions"] == ds.npartitions and mine["input"]["fit_rows"] == 500
    assert "input" not in prov and prov["output"]["partitions"] == ds.npartitions
    assert len(mine["pairing"]["parts"]) == ds.npartitions and mine["pairing"]["counted"] == "as read"
    assert "seeded" not in prov and mine["seeded"] is True and "random_state" not in prov["technique"]["parameters"]
    assert a.fit_rows == 500 and a.n_records == len(x)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary folder left


def test_a_refused_partitioned_release_leaves_nothing(tmp_path: Path) -> None:
    src, _ = _csv(tmp_path, 800)
    ds = open_dataset(str(src), blocksize="20KB", categorical=["grade"])
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(ReleaseRefused):
        release_dataset(ds, _tech(level=0.0), tmp_path / "z", missing="keep", **GATE_OFF, fit_rows=200)
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    (tmp_path / "taken").mkdir()
    with pytest.raises(PPDMError, match="exists"):
        release_dataset(ds, _tech(), tmp_path / "taken", missing="keep", **GATE_OFF)
    with pytest.raises(PPDMError, match="missing value"):
        release_dataset(ds, _tech(), tmp_path / "z", missing="error")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*before, "taken"])


def test_every_technique_releases_partition_by_partition(tmp_path: Path) -> None:
    from mixed_table import PARAMS

    from ppdm.anonymize.registry import TECHNIQUES, _load_all

    _load_all()
    src, _ = _csv(tmp_path, 900)
    ds = open_dataset(str(src), blocksize="30KB", categorical=["grade"])
    # DPCube under add/remove-one neighbours releases its own, noisy, number of records: refused here
    dp = make_technique("dpcube", class_column="label", random_state=1, params=PARAMS["dpcube"])
    with pytest.raises(PPDMError, match="neighbouring='replace'"):
        release_dataset(ds, dp, tmp_path / "dp", missing="keep", **GATE_OFF, fit_rows=600)
    assert not (tmp_path / "dp").exists()
    for name in sorted(TECHNIQUES):
        params = {**PARAMS.get(name, {}), **({"neighbouring": "replace"} if name == "dpcube" else {})}
        tech = make_technique(name, class_column="label", random_state=1, params=params)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rel = release_dataset(ds, tech, tmp_path / name, missing="keep", **GATE_OFF, fit_rows=600,
                                  allow_unchanged=True)
        z = pd.read_parquet(tmp_path / name)
        # the input's dtypes, except columns the technique declares otherwise (recoded labels)
        declared = rel.technique._output_dtypes(ds.data._meta)
        want = [declared.get(c, t) for c, t in ds.data.dtypes.items()]
        assert len(z) == rel.n_records == 900 and list(z.dtypes) == want, name


# ----------------------------------------------------------------------------- measures
def _pair(tmp: Path, n: int = 1500) -> tuple[pd.DataFrame, pd.DataFrame, Schema]:
    x = mixed_table(n)
    sch = Schema.infer(x, "label", categorical=["grade"])
    with warnings.catch_warnings():
        # the pair under measure: the advice on bounds and unchanged records is tested where it is made
        warnings.simplefilter("ignore", BoundsFromDataWarning)
        warnings.simplefilter("ignore", ReleaseWarning)
        rel = release(x, make_technique("gaussian-noise", class_column="label", random_state=2,
                                        params={"level": 0.4}), schema=sch, **GATE_OFF)
    z, pos = rel.in_input_order()  # the published rows are shuffled; measures compare each with its original
    return working_frame(x.iloc[pos].reset_index(drop=True), sch.numeric), working_frame(z, sch.numeric), sch


@pytest.mark.parametrize("name", EXACT)
def test_out_of_core_measures_equal_the_in_memory_ones(name: str, tmp_path: Path) -> None:
    from ppdm.trees.cart import rules_from_cart

    x, z, sch = _pair(tmp_path)
    rules = rules_from_cart(x, sch)
    spec = MEASURES[name]
    # the noise release perturbs the categorical keys too: the key-variable measures are asked for
    # on every key, and l-diversity gets a sensitive attribute
    opts = {**{f"{m}.all_keys": True for m in KEY_VARIABLE_MEASURES}, "l_diversity.sensitive": "label",
            "attribute_disclosure.sensitive": "label"}
    mem = spec.fn(EvaluationContext(x=x, z=z, schema=sch, rules=rules, random_state=0, options=dict(opts)))
    import dask

    with dask.config.set({"dataframe.convert-string": False}):  # keep booleans booleans, not text
        dx, dz = dd.from_pandas(x, npartitions=4), dd.from_pandas(z, npartitions=4)
    ooc = evaluate_measure(spec, EvaluationContext(x=dx, z=dz, schema=sch, rules=rules, random_state=0,
                                                   options=dict(opts)))
    assert not isinstance(ooc, SampledResult)
    assert ooc.value == pytest.approx(mem.value, rel=1e-9, abs=1e-12), name
    if getattr(mem, "original", None) is not None:
        assert ooc.original == pytest.approx(mem.original, rel=1e-9, abs=1e-12), name
    for f in ("violations", "sample_uniques", "n_combinations", "achieved_k", "expected_reidentifications", "tied",
              "exact"):
        if hasattr(mem, f):
            assert getattr(ooc, f) == pytest.approx(getattr(mem, f), rel=1e-9), (name, f)
    if isinstance(getattr(mem, "per_key", None), pd.DataFrame) and not mem.per_key.empty:
        pd.testing.assert_frame_equal(ooc.per_key.reset_index(drop=True), mem.per_key.reset_index(drop=True),
                                      check_dtype=False)


# gaussian noise on a table that declares no bounds: the advice to declare them is tested where it is made
@pytest.mark.filterwarnings("ignore::ppdm.anonymize._domain.BoundsFromDataWarning")
@pytest.mark.filterwarnings("ignore::ppdm.experiments._release_gate.ReleaseWarning")
def test_other_measures_declare_their_sample_and_interval(tmp_path: Path) -> None:
    x, z, sch = _pair(tmp_path, 2400)
    dx, dz = dd.from_pandas(x, npartitions=3), dd.from_pandas(z, npartitions=3)
    ctx = EvaluationContext(x=dx, z=dz, schema=sch, random_state=0)
    res = evaluate_measure(MEASURES["prediction_accuracy"], ctx, sample_rows=1200, batches=4)
    assert isinstance(res, SampledResult) and not res.exact
    assert res.sample_size == 1200 and res.population == 2400 and res.batches == 4
    assert res.ci_low <= res.value <= res.ci_high and res.ci_high - res.ci_low < 1
    assert res.result.n_test > 0 and res.to_dict()["result"]["score_x"] == res.result.score_x
    # the sample is the same records of x and z, drawn with the measurement seed
    again = evaluate_measure(MEASURES["prediction_accuracy"], EvaluationContext(x=dx, z=dz, schema=sch,
                                                                                random_state=0), sample_rows=1200,
                             batches=4)
    assert again.value == res.value


# ------------------------------------------------------------------------ no full compute
class _Guard:
    """A Dask scheduler that runs graphs synchronously and refuses any result with more than
    ``limit`` rows: a silent compute of a whole table would return all of its records."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.calls = 0
        self.largest = 0

    def _size(self, obj: Any) -> int:
        if isinstance(obj, (pd.DataFrame, pd.Series, np.ndarray)):
            return len(obj)
        if isinstance(obj, (list, tuple)):
            return max([self._size(o) for o in obj] or [0])
        return 0

    def __call__(self, dsk: Any, keys: Any, **kwargs: Any) -> Any:
        import dask

        self.calls += 1
        out = dask.get(dsk, keys, **kwargs)
        size = self._size(out)
        self.largest = max(self.largest, size)
        if size > self.limit:
            raise AssertionError(f"a compute returned {size} rows (more than {self.limit})")
        return out


def test_the_guard_catches_a_full_compute(tmp_path: Path) -> None:
    import dask

    src, _ = _csv(tmp_path, 3000)
    ds = open_dataset(str(src), blocksize="20KB", categorical=["grade"])
    with dask.config.set(scheduler=_Guard(1000)), pytest.raises(AssertionError, match="3000 rows"):
        ds.data.compute()


def test_anonymize_and_evaluate_never_compute_a_whole_table(tmp_path: Path) -> None:
    import dask

    # half the records of the first version (6000), with partitions, fitted rows, sample and guard
    # halved alongside: every compute must still stay under a quarter of the table (CPU budget)
    src, _ = _csv(tmp_path, 3000)
    out = tmp_path / "z"
    guard = _Guard(750)
    with dask.config.set(scheduler=guard):
        res = runner.invoke(app, ["anonymize", *GATE_FLAGS, str(src), "--engine", "dask", "--blocksize", "30KB", "-m",
                                  "gaussian-noise", "-p", "level=0.4", "--class", "label", "--missing", "keep",
                                  "--categorical", "grade", "--fit-rows", "500", "--seed", "4", "--experiment-seed", "-o", str(out)])
        assert res.exit_code == 0, res.output
        res = runner.invoke(app, ["evaluate", "-x", str(src), "-z", str(out), "--engine", "dask", "--class", "label",
                                  "--missing", "keep", "--categorical", "grade", "--measures", "all", "--json",
                                  "--seed", "1", "--sample-rows", "600", "-p", "rule_rows=600"])
        assert res.exit_code == 0, res.output
    assert guard.calls > 10 and guard.largest <= 750
    obj = json.loads(res.stdout[res.stdout.index("{"):])
    import jsonschema

    schema = json.loads((Path(__file__).resolve().parents[1] / "docs" / "ppdm.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(obj)  # the same versioned document as in memory
    m = obj["measures"]
    assert m["il1s"]["out_of_core"] == "exact" and m["ddr"]["out_of_core"] == "exact"
    assert m["prediction_accuracy"]["out_of_core"] == "sample"
    d = m["auc"]["details"]
    assert d["sample_size"] == 600 and d["population"] == 3000 and d["exact"] is False
    assert d["ci_low"] <= m["auc"]["value"] <= d["ci_high"] and 0 <= d["score_x"] <= 1  # the sample's own result too
    assert "note: --original is not the file" not in res.output


def test_cli_partitioned_inputs_and_outputs(tmp_path: Path) -> None:
    src, x = _csv(tmp_path, 1200)
    (tmp_path / "pq").mkdir()
    for i, chunk in enumerate(np.array_split(np.arange(len(x)), 3)):
        x.iloc[chunk].to_parquet(tmp_path / "pq" / f"p{i}.parquet", index=False)
    res = runner.invoke(app, ["anonymize", *GATE_FLAGS,
                                           str(tmp_path / "pq"), "-m", "mdav", "-p", "k=4", "--class", "label",
                              "--missing", "keep", "-o", str(tmp_path / "z.csv")])
    assert res.exit_code == 2 and "folder name" in res.output
    res = runner.invoke(app, ["anonymize", *GATE_FLAGS,
                                           str(tmp_path / "pq"), "-m", "mdav", "-p", "k=4", "--class", "label",
                              "--missing", "keep", "-o", str(tmp_path / "z")])
    assert res.exit_code == 0, res.output
    assert "3 partitions" in res.output and (tmp_path / "z.provenance.json").exists()
    z = pd.read_parquet(tmp_path / "z")
    assert len(z) == 1200 and z["zip"].dropna().str.len().eq(4).all()
    res = runner.invoke(app, ["anonymize", *GATE_FLAGS, str(tmp_path / "pq"), "-m", "mdav", "--class", "label",
                              "--missing", "keep", "-o", str(tmp_path / "z")])
    assert res.exit_code == 2 and "exists" in res.output
    res = runner.invoke(app, ["evaluate", "-x", str(tmp_path / "pq"), "-z", str(tmp_path / "z"), "--class", "label",
                              "--missing", "keep", "--measures", "il1s,release_check", "--json", "--seed", "1"])
    assert res.exit_code == 0, res.output
    obj = json.loads(res.stdout[res.stdout.index("{"):])
    assert {k: v["out_of_core"] for k, v in obj["measures"].items()} == {"il1s": "exact", "release_check": "exact"}
    assert obj["measures"]["release_check"]["details"]["n_records"] == 1200
    assert obj["inputs"]["original"]["rows"] == 1200 and obj["dataset"]["partitions"] == 3


def test_evaluate_in_memory_and_out_of_core_agree_on_exact_measures(tmp_path: Path) -> None:
    # each exact measure's parity is checked in the library above (on 1500 records); this checks the
    # command line's path to it, on fewer records in as many partitions (CPU budget)
    src, x = _csv(tmp_path, 600)
    zp = tmp_path / "z.csv"
    res = runner.invoke(app, ["anonymize", *GATE_FLAGS,
                                           str(src), "-m", "gaussian-noise", "-p", "level=0.4", "--class", "label",
                              "--missing", "keep", "--categorical", "grade", "--seed", "3", "--experiment-seed", "-o", str(zp)])
    assert res.exit_code == 0, res.output
    exact = ",".join(EXACT)
    # the noise release perturbs every key: the key-variable measures are asked for on all of them
    keyvar = [a for m in KEY_VARIABLE_MEASURES if m in EXACT for a in ("-p", f"{m}.all_keys=true")]
    common = ["-x", str(src), "-z", str(zp), "--class", "label", "--missing", "keep", "--categorical", "grade",
              "--measures", exact, "--json", "--seed", "1", "--qi", "zip,grade,member", *keyvar,
              "-p", "l_diversity.sensitive=age", "-p", "attribute_disclosure.sensitive=age"]
    mem = runner.invoke(app, ["evaluate", *common])
    ooc = runner.invoke(app, ["evaluate", *common, "--engine", "dask", "--blocksize", "8KB"])
    assert mem.exit_code == 0 and ooc.exit_code == 0, (mem.output, ooc.output)
    a = json.loads(mem.stdout[mem.stdout.index("{"):])
    b = json.loads(ooc.stdout[ooc.stdout.index("{"):])
    assert {m["out_of_core"] for m in b["measures"].values()} == {"exact"}
    assert "out_of_core" not in a["measures"]["il1s"]
    for name in EXACT:
        va, vb = a["measures"][name]["value"], b["measures"][name]["value"]
        assert vb == pytest.approx(va, rel=1e-9, abs=1e-12), name
    assert b["dataset"]["class_counts"] == a["dataset"]["class_counts"]


def test_scale_doc_lists_every_measure_as_it_is_computed() -> None:
    """docs/scale.md's table says, for every registered measure, whether it is exact out of core."""
    import re

    text = (Path(__file__).resolve().parents[1] / "docs" / "scale.md").read_text()
    rows = dict(re.findall(r"^\| `(\w+)` \| (exact|sample) \|", text, flags=re.M))
    assert set(rows) == set(MEASURES), sorted(set(rows) ^ set(MEASURES))
    for name, how in rows.items():
        assert (how == "exact") == MEASURES[name].out_of_core, name
