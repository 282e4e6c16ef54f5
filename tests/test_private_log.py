"""Public and private files of a release: shuffled rows, the private pairing, and evaluate
pairing z with x through it (control records removed by identity, duplicates kept apart)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from people_table import people
from typer.testing import CliRunner

from ppdm.anonymize import make_technique
from ppdm.cli.app import app
from ppdm.data.provenance import (
    decode_positions,
    encode_positions,
    in_input_order,
    private_path,
    read_private,
)
from ppdm.errors import PPDMError
from ppdm.experiments.release import release, save_release, without_held_out

# noise without declared bounds and releases made with allow_verbatim: their warnings are the owner's, not what these tests check
pytestmark = [pytest.mark.filterwarnings("ignore::ppdm.anonymize._domain.BoundsFromDataWarning"), pytest.mark.filterwarnings("ignore:released although:ppdm.experiments.release.ReleaseWarning")]

runner = CliRunner()


def _table(n: int = 300, seed: int = 0) -> pd.DataFrame:
    return people(n, seed)


def _ok(args: list[str]) -> str:
    if args[0] == "anonymize":
        # weak releases on purpose (verbatim records to count): the gate has its own tests
        args = [*args, "--allow-verbatim"]
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    return r.output


def _json(args: list[str]) -> dict:
    r = runner.invoke(app, [*args, "--json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout)


# ------------------------------------------------------------------------------ encoding
@pytest.mark.parametrize("n", [0, 1, 255, 256, 70_000])
def test_positions_round_trip(n: int) -> None:
    pos = np.random.default_rng(n).permutation(n)
    enc = encode_positions(pos)
    assert enc["count"] == n and json.loads(json.dumps(enc)) == enc
    assert enc["dtype"] == ("<u1" if n <= 256 else "<u4" if n > 65536 else "<u2")
    assert (decode_positions(enc) == pos).all()


def test_a_million_positions_stay_small_and_fast() -> None:
    import time

    pos = np.random.default_rng(0).permutation(1_000_000)
    t = time.process_time()
    text = json.dumps(encode_positions(pos))
    back = decode_positions(json.loads(text))
    assert time.process_time() - t < 2.0
    assert (back == pos).all() and len(text) < 5_000_000


def test_damaged_positions_are_refused() -> None:
    enc = encode_positions(np.arange(10))
    for bad in ({**enc, "count": 11}, {**enc, "data": "not base64!"}, {**enc, "encoding": "raw"}, {**enc, "dtype": "f8"},
                "positions"):
        with pytest.raises(PPDMError, match="private log"):
            decode_positions(bad)


# ------------------------------------------------------------------------------ library
def test_a_release_is_shuffled_and_its_pairing_restores_the_order() -> None:
    x = _table()
    tech = make_technique("gaussian-noise", class_column="y", random_state=7, params={"level": 0.5})
    kept = release(x, tech, shuffle=False, allow_verbatim=True)
    shuffled = release(x, tech, allow_verbatim=True)
    assert kept.pairing.tolist() == list(range(len(x))) and not kept.shuffled
    assert kept.provenance["output"]["row_order"] == "as the input"
    assert shuffled.provenance["output"]["row_order"] == "shuffled"
    # the same seed gives the same release, only the published order differs
    assert not shuffled.data.equals(kept.data)
    back, pos = shuffled.in_input_order()
    pd.testing.assert_frame_equal(back, kept.data.reset_index(drop=True))
    assert (pos == np.arange(len(x))).all()
    # the release check was made before the shuffle, on true pairs
    assert shuffled.check.records_verbatim == kept.check.records_verbatim
    # the private record carries the same pairing
    assert (decode_positions(shuffled.private["pairing"]["positions"]) == shuffled.pairing).all()
    # without a seed the order comes from OS entropy: two releases are not ordered alike
    a = release(x, make_technique("gaussian-noise", class_column="y", params={"level": 0.5}), allow_verbatim=True)
    b = release(x, make_technique("gaussian-noise", class_column="y", params={"level": 0.5}), allow_verbatim=True)
    assert (a.pairing != b.pairing).any()


def test_holdout_positions_and_pairing_point_into_the_input(tmp_path: Path) -> None:
    x = _table()
    rel = release(x, make_technique("gaussian-noise", class_column="y", random_state=3), holdout=0.2,
                  allow_verbatim=True)
    assert len(rel.control) == 60 and len(rel.data) == 240
    assert set(rel.pairing) | set(rel.held_out) == set(range(len(x))) and not set(rel.pairing) & set(rel.held_out)
    pd.testing.assert_frame_equal(rel.control, x.iloc[rel.held_out].reset_index(drop=True))
    paths = save_release(rel, tmp_path / "z.csv")
    assert [p.name for p in paths] == ["z.csv", "z.provenance.json", "z.control.csv", "z.private.json"]
    mine = read_private(tmp_path / "z.csv")
    assert mine["holdout"]["control"] == "z.control.csv" and mine["holdout"]["rows"] == 60
    assert (decode_positions(mine["holdout"]["positions"]) == rel.held_out).all()
    z, pos = in_input_order(pd.read_csv(tmp_path / "z.csv"), mine)
    assert (z["y"].to_numpy() == x["y"].to_numpy()[pos]).all()  # the class is kept: each row beside its original
    assert (tmp_path / "z.control.csv").stat().st_mode & 0o077 == 0


def test_a_synthetic_release_has_no_pairing() -> None:
    import warnings

    x = _table()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = release(x, make_technique("dpcube", class_column="y", random_state=1,
                                        params={"domain_from_data": True}))
    assert rel.pairing is None and rel.private["pairing"] is None
    with pytest.raises(PPDMError, match="synthetic"):
        rel.in_input_order()


# ------------------------------------------------------------------------------ CLI
def test_seeded_releases_are_byte_identical_and_unseeded_ones_are_not(tmp_path: Path) -> None:
    x = tmp_path / "x.csv"
    _table().to_csv(x, index=False)

    def run(name: str, *extra: str) -> tuple[bytes, dict]:
        out = tmp_path / name
        _ok(["anonymize", str(x), "-m", "uniform-noise", "--class", "y", "--holdout", "0.2", "-o", str(out), *extra])
        return out.read_bytes(), read_private(out)

    a, pa = run("a.csv", "--seed", "5", "--experiment-seed")
    b, pb = run("b.csv", "--seed", "5", "--experiment-seed")
    assert a == b and pa["pairing"] == pb["pairing"] and pa["holdout"]["positions"] == pb["holdout"]["positions"]
    assert (tmp_path / "a.control.csv").read_bytes() == (tmp_path / "b.control.csv").read_bytes()
    c, pc = run("c.csv")
    d, pd_ = run("d.csv")
    assert c != d and pc["pairing"] != pd_["pairing"]
    # --keep-order: the rows stay in the input's order, and the public record says so
    _, pk = run("k.csv", "--seed", "5", "--experiment-seed", "--keep-order")
    held = set(decode_positions(pk["holdout"]["positions"]).tolist())
    assert decode_positions(pk["pairing"]["positions"]).tolist() == [i for i in range(300) if i not in held]
    assert json.loads((tmp_path / "k.provenance.json").read_text())["output"]["row_order"] == "as the input"


def test_evaluate_pairs_z_with_x_through_the_private_log(tmp_path: Path) -> None:
    x = tmp_path / "x.csv"
    _table().to_csv(x, index=False)
    z = tmp_path / "z.csv"
    _ok(["anonymize", str(x), "-m", "gaussian-noise", "-p", "level=0.3", "--class", "y", "--seed", "2", "--experiment-seed", "-o", str(z)])
    recorded = read_private(z)["release_check"]
    common = ["evaluate", "-x", str(x), "-z", str(z), "--class", "y", "--seed", "1",
              "--measures", "release_check,il1s,record_linkage"]
    doc = _json(common)
    assert doc["inputs"]["pairing"] == "private log"
    rc = doc["measures"]["release_check"]["details"]
    assert rc["records_verbatim"] == recorded["records_verbatim"] > 0
    assert doc["measures"]["release_check"]["value"] == pytest.approx(recorded["value"])
    # the report shows the private log it was given, never its pairing
    assert doc["private"]["input"]["sha256"] and doc["private"]["release_check"]["records_verbatim"] > 0
    assert "pairing" not in doc["private"] and "positions" not in json.dumps(doc["private"])
    assert "input" not in doc["provenance"] and "release_check" not in doc["provenance"]
    import jsonschema

    schema = json.loads((Path(__file__).resolve().parents[1] / "docs" / "ppdm.schema.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(doc)
    with pytest.raises(jsonschema.ValidationError):  # the schema itself forbids a pairing in a report
        jsonschema.Draft202012Validator(schema).validate({**doc, "private": {**doc["private"], "pairing": {}}})
    html = tmp_path / "r.html"
    _ok([*common, "--html", str(html)])
    page = html.read_text()
    assert read_private(z)["pairing"]["positions"]["data"][:40] not in page and "private log" in page
    # the private log kept elsewhere is found with --private; z alone is then judged without it
    away = tmp_path / "vault"
    away.mkdir()
    shutil.move(str(private_path(z)), away / "z.private.json")
    doc2 = _json([*common, "--private", str(away / "z.private.json")])
    assert doc2["measures"]["release_check"]["value"] == pytest.approx(recorded["value"])
    bare = _json(common)
    assert bare["private"] is None and "input" not in json.dumps(bare["provenance"])


def test_evaluate_refuses_a_private_log_that_does_not_belong(tmp_path: Path) -> None:
    x = tmp_path / "x.csv"
    _table().to_csv(x, index=False)
    z = tmp_path / "z.csv"
    _ok(["anonymize", str(x), "-m", "gaussian-noise", "--class", "y", "-o", str(z)])
    base = ["evaluate", "-z", str(z), "--class", "y", "--measures", "release_check"]
    other = tmp_path / "other.csv"
    _table(seed=1).to_csv(other, index=False)
    r = runner.invoke(app, [*base, "-x", str(other)])
    assert r.exit_code == 2 and "not the table z was made from" in " ".join(r.output.split())
    # z re-sorted after it was written: its rows no longer match the pairing
    pd.read_csv(z).sort_values("age").to_csv(z, index=False)
    r = runner.invoke(app, [*base, "-x", str(x)])
    assert r.exit_code == 2 and "not the release the private log" in " ".join(r.output.split())
    # --pairing none evaluates it without the pairing
    r = runner.invoke(app, [*base, "-x", str(x), "--pairing", "none"])
    assert r.exit_code == 0, r.output
    # read x as the release did
    y = tmp_path / "y.csv"
    t = _table()
    t.loc[3, "age"] = np.nan
    t.to_csv(y, index=False)
    zy = tmp_path / "zy.csv"
    _ok(["anonymize", str(y), "-m", "gaussian-noise", "--class", "y", "--missing", "drop", "-o", str(zy)])
    r = runner.invoke(app, ["evaluate", "-x", str(y), "-z", str(zy), "--class", "y", "--missing", "keep",
                            "--measures", "release_check"])
    assert r.exit_code == 2 and "--missing drop" in " ".join(r.output.split())


# ------------------------------------------------------------------------------ the two evaluate bugs
def test_dpcube_holdout_control_records_leave_x_by_identity(tmp_path: Path) -> None:
    """A DPCube release under add/remove-one neighbours has a noisy number of records, so
    len(x) = len(z) + len(control) does not hold: the control records must still leave x
    (they are not in the release), found by their recorded positions."""
    import warnings

    x = tmp_path / "x.csv"
    _table().to_csv(x, index=False)
    z = tmp_path / "d.csv"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _ok(["anonymize", str(x), "-m", "dpcube", "--class", "y", "--holdout", "0.25", "--seed", "1", "--experiment-seed", "-o", str(z),
             "--domain-from-data"])
    n_z = len(pd.read_csv(z))
    assert n_z != 225  # the count is noisy
    doc = _json(["evaluate", "-x", str(x), "-z", str(z), "--class", "y", "--seed", "0",
                 "--measures", "release_check,linkability"])
    assert doc["inputs"]["control"]["rows"] == 75
    assert doc["inputs"]["original"]["rows"] == 225  # the 75 held-out records are no attack targets
    assert doc["inputs"]["pairing"] == "synthetic"
    assert doc["measures"]["linkability"]["status"] == "computed"
    # without the private log the control set is still taken out of x, as a multiset
    shutil.move(str(private_path(z)), tmp_path / "vault.json")
    doc = _json(["evaluate", "-x", str(x), "-z", str(z), "--class", "y", "--seed", "0", "--control",
                 str(tmp_path / "d.control.csv"), "--measures", "release_check"])
    assert doc["inputs"]["original"]["rows"] == 225


def test_duplicate_records_are_held_out_by_identity(tmp_path: Path) -> None:
    """Every record twice: the held-out copy is a particular one. Removing the first equal
    record instead shifts every later record of x against z; the release check at evaluate
    then read about half of what it is."""
    x = tmp_path / "dup.csv"
    t = _table()
    pd.concat([t, t]).to_csv(x, index=False)
    z = tmp_path / "z.csv"
    out = _ok(["anonymize", str(x), "-m", "gaussian-noise", "-p", "level=0.03", "--class", "y", "--holdout",
               "0.25", "--seed", "1", "--experiment-seed", "-o", str(z)])
    at_release = read_private(z)["release_check"]
    assert at_release["share_verbatim"] > 0.85 and "unchanged on every column: " in out
    doc = _json(["evaluate", "-x", str(x), "-z", str(z), "--class", "y", "--seed", "0", "--measures", "release_check"])
    got = doc["measures"]["release_check"]["details"]
    assert got["records_verbatim"] == at_release["records_verbatim"]
    assert doc["measures"]["release_check"]["value"] == pytest.approx(at_release["value"])


def test_multiset_removal_is_right_with_duplicates() -> None:
    """Without positions, each control record takes out one equal record of x: which copy
    does not matter to a multiset, and the records left are exactly those released."""
    t = _table(40)
    x = pd.concat([t, t, t.iloc[:5]], ignore_index=True)
    held = np.array([2, 41, 45, 80, 81])  # copies of records 2, 1, 5, 0, 1
    control = x.iloc[held].reset_index(drop=True)
    left = without_held_out(x, control)
    want = x.drop(index=held)

    def rows(df: pd.DataFrame) -> list[int]:
        return sorted(pd.util.hash_pandas_object(df, index=False).tolist())

    assert len(left) == len(want) and rows(left) == rows(want)
    with pytest.raises(PPDMError, match="not in the original"):
        without_held_out(x, _table(3, seed=9))


# ------------------------------------------------------------------------------ partitioned
def test_a_partitioned_release_is_shuffled_per_partition_and_evaluate_pairs_it(tmp_path: Path) -> None:
    from ppdm.data.partitions import open_dataset
    from ppdm.experiments.out_of_core import release_dataset
    from ppdm.metrics.release_check import release_check

    t = _table(1200)
    src = tmp_path / "x.csv"
    t.to_csv(src, index=False)
    ds = open_dataset(str(src), blocksize="4KB")
    assert ds.npartitions >= 3
    tech = make_technique("gaussian-noise", class_column="y", random_state=4, params={"level": 0.3})
    rel = release_dataset(ds, tech, tmp_path / "z", missing="keep", fit_rows=500, allow_verbatim=True)
    again = release_dataset(ds, tech, tmp_path / "z2", missing="keep", fit_rows=500, allow_verbatim=True)
    parts = sorted(p.name for p in (tmp_path / "z").iterdir())
    assert all((tmp_path / "z" / f).read_bytes() == (tmp_path / "z2" / f).read_bytes() for f in parts)
    assert again.private["pairing"] == rel.private["pairing"]
    mine = read_private(tmp_path / "z")
    # the parts are mixed: row k of z (parts in order) was made from row positions[k] of x as read
    pos = decode_positions(mine["pairing"]["positions"])
    assert sorted(pos) == list(range(len(t))) and (pos != np.arange(len(pos))).any()
    assert len(mine["pairing"]["parts"]) == ds.npartitions and sum(mine["pairing"]["parts"]) == len(t)
    # every released row sits beside its original again
    z, _ = in_input_order(pd.read_parquet(tmp_path / "z"), mine)
    assert (z["y"].to_numpy() == t["y"].to_numpy()).all()
    want = release_check(t, z, rel.schema)
    # the check made partition by partition is the check of the whole table: copies and keys counted among all of x
    for name in ("value", "records_verbatim", "records_copied", "records_verbatim_paired", "records_verbatim_unique",
                 "unique_in_x", "unique_in_z"):
        assert getattr(rel.check, name) == pytest.approx(getattr(want, name)), name
    pd.testing.assert_frame_equal(rel.check.per_key, want.per_key, check_dtype=False)
    doc = _json(["evaluate", "-x", str(src), "-z", str(tmp_path / "z"), "--class", "y", "--missing", "keep",
                 "--blocksize", "4KB", "--measures", "release_check,il1s", "--seed", "1"])
    assert doc["inputs"]["pairing"] == "private log"
    assert doc["measures"]["release_check"]["details"]["records_verbatim"] == rel.check.records_verbatim
    # without the pairing, out of core as in memory: every record looked up among all of x
    free = _json(["evaluate", "-x", str(src), "-z", str(tmp_path / "z"), "--class", "y", "--missing", "keep",
                  "--blocksize", "4KB", "--measures", "release_check", "--seed", "1", "--pairing", "none"])
    loose = release_check(t, pd.read_parquet(tmp_path / "z"), rel.schema, record_aligned=False)
    d = free["measures"]["release_check"]["details"]
    assert free["measures"]["release_check"]["value"] == pytest.approx(loose.value)
    assert (d["records_verbatim"], d["records_verbatim_unique"]) == (loose.records_verbatim,
                                                                     loose.records_verbatim_unique)
    assert doc["measures"]["il1s"]["value"] == pytest.approx(_json(
        ["evaluate", "-x", str(src), "-z", str(tmp_path / "z"), "--class", "y", "--missing", "keep", "--measures",
         "il1s", "--seed", "1"])["measures"]["il1s"]["value"])


def test_a_partitioned_release_mixes_records_across_its_parts(tmp_path: Path) -> None:
    """An output part holding exactly its input partition's records would publish which records
    of x share a file (a region, a month). Each part of z holds records of every partition of x,
    in about the shares of a random draw, and the pairing in the private log still puts every
    released row beside its original; with --keep-order each part keeps its partition."""
    from ppdm.data.partitions import open_dataset
    from ppdm.experiments.out_of_core import release_dataset

    t = _table(1200)
    src = tmp_path / "x.csv"
    t.to_csv(src, index=False)
    ds = open_dataset(str(src), blocksize="4KB")
    n_parts = ds.npartitions
    bounds = np.cumsum([0, *[len(ds.partition(i)) for i in range(n_parts)]])
    tech = make_technique("gaussian-noise", class_column="y", params={"level": 0.9})
    release_dataset(ds, tech, tmp_path / "z", missing="keep", fit_rows=500, allow_verbatim=True)
    mine = read_private(tmp_path / "z")
    pos = decode_positions(mine["pairing"]["positions"])
    cuts = np.cumsum([0, *mine["pairing"]["parts"]])
    files = sorted((tmp_path / "z").glob("*.parquet"))
    assert len(files) == n_parts
    for j, f in enumerate(files):
        assert len(pd.read_parquet(f)) == cuts[j + 1] - cuts[j]
        origin = np.searchsorted(bounds, pos[cuts[j]:cuts[j + 1]], side="right") - 1
        # every partition of x sends records to every part (each row draws its part: about n/parts² each)
        assert set(origin) == set(range(n_parts)), (j, sorted(set(origin)))
    z, _ = in_input_order(pd.read_parquet(tmp_path / "z"), mine)
    assert (z["y"].to_numpy() == t["y"].to_numpy()).all()
    # kept in order (a release that stays with the owner): part i is partition i
    release_dataset(ds, tech, tmp_path / "k", missing="keep", fit_rows=500, allow_verbatim=True, shuffle=False)
    kept = read_private(tmp_path / "k")["pairing"]
    assert (decode_positions(kept["positions"]) == np.arange(len(t))).all()
    assert kept["parts"] == [int(b - a) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def test_a_suppressed_release_made_with_missing_drop_is_evaluated_as_published(tmp_path: Path) -> None:
    """x read with --missing drop leaves out x's incomplete records; local suppression then blanks
    cells of the rest. Evaluated the same way, every released record is measured: a blank the
    release made is part of what was published, not a dropped record."""
    from ppdm.datasets import load

    x, _ = load("adult")
    x = x.sample(1500, random_state=2).reset_index(drop=True)
    src, zp = tmp_path / "x.csv", tmp_path / "z.csv"
    x.to_csv(src, index=False)
    r = runner.invoke(app, ["anonymize", str(src), "--class", "income", "--missing", "drop", "--qi",
                            "age,sex,race,education,marital_status", "-m", "local-suppression", "-p", "k=5",
                            "--allow-verbatim", "--allow-unchanged", "--allow-untouched-keys",
                            "--allow-pass-through", "fnlwgt", "--out", str(zp)])
    assert r.exit_code == 0, r.output
    z = pd.read_csv(zp)
    assert z.isna().any(axis=1).sum() > 0  # the release blanked cells
    r = runner.invoke(app, ["evaluate", "-x", str(src), "-z", str(zp), "--class", "income", "--missing", "drop",
                            "--measures", "k_anonymity,il1s", "--qi", "age,sex,race,education,marital_status",
                            "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout[r.stdout.index("{"):])
    assert doc["inputs"]["anonymized"]["rows"] == len(z) == doc["inputs"]["original"]["rows"]
