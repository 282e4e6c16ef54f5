"""Releases made safely: identifiers, the release check, provenance and secret randomness."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from ppdm.anonymize import make_technique
from ppdm.anonymize.framework import Framework
from ppdm.anonymize.gadp import GADP
from ppdm.cli.app import app
from ppdm.data.provenance import (
    FORMAT,
    PRIVATE_FORMAT,
    describe,
    describe_private,
    file_sha256,
    private_path,
    provenance_path,
    read_private,
    read_provenance,
)
from ppdm.data.schema import Schema
from ppdm.errors import ParameterError, PPDMError, SchemaError
from ppdm.experiments.release import ReleaseRefused, ReleaseWarning, release, save_release

runner = CliRunner()

#: this file is not about the release gate (tests/test_release_gate.py): weak releases are written
GATE_OFF = ["--allow-verbatim", "--allow-untouched-keys"]

#: the keys every provenance record carries (names fixed for the other tools that read them)
KEYS = {"format", "version", "ppdm_version", "created", "technique", "schema", "removed_identifiers",
        "privacy", "kept_identifiers", "output"}
#: ... and the owner's private log
PRIVATE_KEYS = {"format", "version", "notice", "ppdm_version", "created", "release", "release_sha256", "input",
                "release_check", "pairing", "holdout", "technique", "warnings", "gate", "seeded"}


def named_records(n_distinct: int = 1462, n_copies: int = 22, seed: int = 1) -> pd.DataFrame:
    """The issue's table: a record-name column (1,462 distinct values in 1,484 rows; the extra
    rows repeat records), numeric attributes, a categorical and a class."""
    rng = np.random.default_rng(seed)
    n = n_distinct
    letters = np.array(list("ABCDEFGHJKLMNPQRSTUVWXYZ"))
    names = list(pd.unique(np.array(["".join(rng.choice(letters, 6)) for _ in range(2 * n)])))[:n]
    a = rng.normal(50, 10, n).round(2)
    df = pd.DataFrame({
        "record": names,
        "age": rng.integers(18, 80, n),
        "a": a,
        "b": (3 * a + rng.normal(0, 5, n)).round(2),
        "c": rng.normal(1000, 200, n).round(1),
        "group": rng.choice(["x", "y", "z"], n),
        "label": rng.choice(["p", "q"], n),
    })
    assert df["record"].nunique() == n
    return pd.concat([df, df.iloc[:n_copies]]).reset_index(drop=True)


# ------------------------------------------------------------------------------ GADP identity
def test_gadp_identity_case_is_caught_at_every_level() -> None:
    """Conditioned on a record-name column, GADP returned the originals (to 4e-8): now the
    name is never a predictor, and each guard alone refuses such a release."""
    x = named_records()
    # 1. screening: the name column looks like an identifier
    with pytest.raises(SchemaError, match="'record'"):
        release(x, GADP(class_column="label"))
    # 2. declared an identifier: removed before GADP sees the table
    rel = release(x, GADP(class_column="label"), identifiers="record")
    assert "record" not in rel.data.columns and rel.removed_identifiers == ["record"]
    assert "record" not in rel.technique.non_confidential_
    assert rel.check.share_verbatim == 0.0
    # 3. declared an ordinary attribute: GADP leaves it out of its predictors, with a warning; the
    #    release gate then refuses the untouched record names, which single out every person
    with pytest.raises(ReleaseRefused, match="record, group pass into the release untouched"), \
            pytest.warns(UserWarning, match="'record' \\(1462 values\\)"):
        release(x, GADP(class_column="label"), other="record")
    with pytest.warns(UserWarning, match="'record' \\(1462 values\\)"), \
            pytest.warns(ReleaseWarning, match="record, group pass into the release untouched"):
        rel = release(x, GADP(class_column="label"), other="record", allow_untouched_keys=True)
    assert rel.technique.excluded_predictors_ == ["record"]
    assert any("record" in w for w in rel.warnings)
    z, pos = rel.in_input_order()
    assert (np.abs(z["a"].to_numpy() - x["a"].to_numpy()[pos]) > 1e-3).mean() > 0.99
    # ... and refuses to condition on it when told to
    with pytest.raises(ParameterError, match="'record' has 1462 values"):
        release(x, GADP(class_column="label", non_confidential=["record", "group"]), other="record")
    # 4. without the level guard, too little residual variance is refused, naming the attributes
    with pytest.raises(PPDMError, match="GADP would release 'age' .*'a' .*'b' .*'c'"):
        release(x, GADP(class_column="label", max_level_share=1.0), other="record")
    # 5. without both guards, the release check refuses the (numerically) original records
    with pytest.raises(ReleaseRefused, match="100.0% of the records"):
        release(x, GADP(class_column="label", max_level_share=1.0, min_residual_share=0.0), other="record",
                allow_untouched_keys=True)
    with pytest.warns(ReleaseWarning, match="almost the original"), \
            pytest.warns(ReleaseWarning, match="record, b, c, a, age, group pass into the release untouched"):
        rel = release(x, GADP(class_column="label", max_level_share=1.0, min_residual_share=0.0), other="record",
                      allow_unchanged=True, allow_untouched_keys=True)
    z, pos = rel.in_input_order()
    assert np.abs(z["a"].to_numpy() - x["a"].to_numpy()[pos]).max() < 1e-6
    assert rel.check.share_verbatim == 1.0


@pytest.mark.filterwarnings("ignore::ppdm.anonymize._domain.BoundsFromDataWarning")  # no bounds declared here
def test_gadp_never_conditions_on_identifiers_at_the_technique_level() -> None:
    x = named_records(200, 0).drop(columns="record").assign(pid=np.arange(200))
    sch = Schema(["age", "a", "b", "c"], ["group"], "label", identifiers=["pid"])
    t = GADP(schema=sch, random_state=0).fit(x)
    assert "pid" not in t.non_confidential_ and "pid" not in t.confidential_
    with pytest.raises(ParameterError, match="'pid' is an identifier"):
        GADP(schema=sch, non_confidential=["pid"]).fit(x)
    z = t.transform(x)
    assert z["pid"].equals(x["pid"])  # passed through, never modelled


def test_framework_trees_and_detective_never_see_identifiers() -> None:
    x = named_records(300, 0)
    rel = release(x, Framework(class_column="label", random_state=0), identifiers="record")
    t = rel.technique
    assert "record" not in list(t.tree_.feature_names_in_)
    for det, _, _ in t.detectives_.values():
        assert "record" not in list(det.feature_names_in_)


# ------------------------------------------------------------------------------ release()
# allow_verbatim lets a draw that leaves more than 5 % of the records unchanged through with a
# ReleaseWarning (with OS entropy, one run in a few): what this test checks holds either way
@pytest.mark.filterwarnings("ignore::ppdm.experiments._release_gate.ReleaseWarning")
def test_release_keeps_identifiers_only_on_request() -> None:
    x = named_records(100, 0)
    rel = release(x, make_technique("uniform-noise", class_column="label"), identifiers="record",
                  keep_identifiers=True, allow_verbatim=True)
    assert list(rel.data.columns) == list(x.columns)
    z, pos = rel.in_input_order()
    assert z["record"].tolist() == x["record"].iloc[pos].tolist() and (pos == np.arange(len(x))).all()
    assert rel.kept_identifiers == ["record"] and rel.removed_identifiers == []
    assert "record" in rel.check.untouched_columns


def test_release_collects_technique_warnings() -> None:
    x = named_records(200, 0).drop(columns="record")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = release(x, make_technique("dpcube", class_column="label", random_state=0,
                                        params={"domain_from_data": True}))
    assert any(w.startswith("DomainFromDataWarning:") for w in rel.warnings)
    assert rel.private["warnings"] == rel.warnings and "warnings" not in rel.provenance
    assert rel.provenance["privacy"]["epsilon_spent"] > 0


@pytest.mark.filterwarnings("ignore:.*keep all their quasi-identifiers unchanged:ppdm.experiments.release.ReleaseWarning")
def test_provenance_record(tmp_path: Path) -> None:
    x = named_records(100, 0)
    rel = release(x, make_technique("rounding", class_column="label", params={"k": 5}), identifiers="record",
                  quasi_identifiers="age,group", input_info={"source": "people.csv"})
    p = rel.provenance
    assert set(p) == KEYS and p["format"] == FORMAT and p["version"] == 2
    assert p["technique"]["name"] == "rounding" and p["technique"]["class"].endswith("Rounding")
    # every parameter, defaults resolved, never the seed
    assert p["technique"]["parameters"]["k"] == 5 and p["technique"]["parameters"]["method"] == "optimal"
    # nor whether one was given: that is the owner's to know (the private log)
    assert "random_state" not in json.dumps(p) and "seeded" not in p and rel.private["seeded"] is False
    assert p["schema"]["quasi_identifiers"] == ["age", "group"] and p["removed_identifiers"] == ["record"]
    assert p["privacy"] is None and p["output"]["row_order"] == "shuffled"
    # nothing counted, hashed or checked on x is public
    assert not {"input", "release_check", "warnings", "holdout"} & set(p)
    q = rel.private
    assert set(q) == PRIVATE_KEYS and q["format"] == PRIVATE_FORMAT
    assert q["input"]["source"] == "people.csv" and q["input"]["rows"] == 100 and len(q["input"]["sha256"]) == 64
    assert q["input"]["rows_used"] == q["input"]["rows_kept"] == 100
    assert q["release_check"]["quasi_identifiers"] == ["age", "group"]
    assert q["holdout"] is None and q["pairing"]["rows"] == 100
    paths = save_release(rel, tmp_path / "z.csv.gz")
    assert [q.name for q in paths] == ["z.csv.gz", "z.provenance.json", "z.private.json"]
    back = read_provenance(tmp_path / "z.csv.gz")
    assert back == json.loads(json.dumps(p))
    assert "rounding" in describe(back) and "seeded" not in describe(back) and "rows shuffled" in describe(back)
    mine = read_private(tmp_path / "z.csv.gz")
    assert mine["release"] == "z.csv.gz" and mine["release_sha256"] == file_sha256(tmp_path / "z.csv.gz")
    assert "people.csv" in describe_private(mine)
    # the private log is the owner's alone
    assert (tmp_path / "z.private.json").stat().st_mode & 0o077 == 0
    # nothing of a record in either file: only names, counts and shares
    for name in ("z.provenance.json", "z.private.json"):
        text = (tmp_path / name).read_text()
        assert not any(v in text for v in x["record"].head(20)), name


@pytest.mark.parametrize(("name", "side"), [("z.csv", "z.provenance.json"), ("z.csv.gz", "z.provenance.json"),
                                            ("z.parquet", "z.provenance.json"), ("a.b.csv", "a.b.provenance.json")])
def test_provenance_path(name: str, side: str) -> None:
    assert provenance_path(Path("d") / name) == Path("d") / side
    assert private_path(Path("d") / name) == Path("d") / side.replace(".provenance.", ".private.")


def test_a_release_never_appears_without_its_sidecars(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    x = named_records(100, 0).drop(columns="record")
    rel = release(x, make_technique("random-substitution", class_column="label", random_state=0,
                                    params={"gamma": 5.0}))

    def boom(out: Path) -> list[Path]:
        raise OSError("disk full")

    monkeypatch.setattr(rel.technique, "write_sidecars", boom)
    with pytest.raises(OSError):
        save_release(rel, tmp_path / "z.csv")
    assert list(tmp_path.iterdir()) == []
    import ppdm.experiments.release as rel_mod

    monkeypatch.setattr(rel_mod, "provenance_text", lambda r: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        save_release(rel, tmp_path / "z.csv")
    assert list(tmp_path.iterdir()) == []


# gaussian noise on a table that declares no bounds: the advice to declare them is tested where it is made
@pytest.mark.filterwarnings("ignore::ppdm.anonymize._domain.BoundsFromDataWarning")
# ------------------------------------------------------------------------------ randomness
def test_unseeded_release_cannot_be_reproduced_from_seed_0(tmp_path: Path) -> None:
    """No --seed: OS entropy. Such a release differs from the seed-0 one (the old default)
    and from another unseeded run; an explicit seed still gives byte-identical files."""
    x = tmp_path / "wine.csv"
    from ppdm.data.datasets import load

    load("wine")[0].to_csv(x, index=False)

    def run(name: str, *extra: str) -> bytes:
        out = tmp_path / name
        res = runner.invoke(app, ["anonymize", *GATE_OFF, str(x), "-m", "gaussian-noise", "--class", "class", "-o", str(out),
                                  *extra])
        assert res.exit_code == 0, res.output
        return out.read_bytes()

    free1, free2 = run("f1.csv"), run("f2.csv")
    zero = run("s0.csv", "--seed", "0", "--experiment-seed")
    zero2 = run("s0b.csv", "--seed", "0", "--experiment-seed")
    assert zero == zero2
    assert free1 != zero and free2 != zero and free1 != free2
    assert json.loads((tmp_path / "f1.private.json").read_text())["seeded"] is False
    assert json.loads((tmp_path / "s0.private.json").read_text())["seeded"] is True
    for name in ("f1", "s0"):  # neither the seed nor whether one was given is public
        assert '"seed' not in (tmp_path / f"{name}.provenance.json").read_text()
    # the library default is OS entropy too
    df = load("wine")[0]
    a = make_technique("gaussian-noise", class_column="class").fit_transform(df)
    b = make_technique("gaussian-noise", class_column="class", random_state=0).fit_transform(df)
    c = make_technique("gaussian-noise", class_column="class").fit_transform(df)
    assert not a.equals(b) and not a.equals(c)


def test_anonymize_prints_the_release_check_and_warnings(tmp_path: Path) -> None:
    x = tmp_path / "x.csv"
    named_records(200, 0).drop(columns="record").to_csv(x, index=False)
    out = tmp_path / "z.csv"
    res = runner.invoke(app, ["anonymize", *GATE_OFF, str(x), "-m", "dpcube", "--class", "label", "-o", str(out),
                              "--domain-from-data"])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    warn = [ln for ln in lines if ln.startswith("warning: DomainFromDataWarning:")]
    assert len(warn) == 1
    assert "release check (for you, not published):" in res.output
    # DPCube's records are synthetic, not paired with x's: each is looked up among all of x's
    for needle in ("released records not paired with the original's", "released records equal to an original record on the quasi-identifiers:",
                   "released records equal to an original record on every column:",
                   "records unique on their quasi-identifiers in z:"):
        assert needle in res.output
    assert "unchanged cells per column:" not in res.output
    assert "seeded" not in res.output  # nothing to warn about: no seed was given
    prov = json.loads((tmp_path / "z.provenance.json").read_text())
    assert KEYS <= set(prov) and prov["privacy"]["epsilon_spent"] > 0
    res = runner.invoke(app, ["anonymize", *GATE_OFF, str(x), "-m", "uniform-noise", "--class", "label", "-o", str(out),
                              "--seed", "3", "--experiment-seed"])
    assert "keep it secret" in res.output
    for needle in ("records with unchanged quasi-identifiers:", "unchanged cells per column:",
                   "columns no technique touched:"):
        assert needle in res.output


def test_refused_release_writes_nothing(tmp_path: Path) -> None:
    x = tmp_path / "x.csv"
    named_records(100, 0).drop(columns="record").to_csv(x, index=False)
    args = ["anonymize", *GATE_OFF, str(x), "-m", "uniform-noise", "-p", "level=0", "--class", "label", "-o",
            str(tmp_path / "z.csv")]
    res = runner.invoke(app, args)
    out = res.output.strip()
    assert res.exit_code == 2 and len(out.splitlines()) == 1 and "--allow-unchanged" in out, out
    assert {p.name for p in tmp_path.iterdir()} == {"x.csv"}
    res = runner.invoke(app, [*args, "--allow-unchanged"])
    assert res.exit_code == 0 and (tmp_path / "z.csv").exists()


# ------------------------------------------------------------------------------ reading the sidecar
def test_evaluate_and_compare_show_the_provenance(tmp_path: Path) -> None:
    x = tmp_path / "x.csv"
    named_records(150, 0).to_csv(x, index=False)
    z = tmp_path / "z.csv"
    res = runner.invoke(app, ["anonymize", *GATE_OFF, str(x), "-m", "uniform-noise", "--class", "label", "--id", "record",
                              "-o", str(z)])
    assert res.exit_code == 0, res.output
    # x still has the record column: the provenance says it was removed, so it is not compared
    html = tmp_path / "e.html"
    res = runner.invoke(app, ["evaluate", "-x", str(x), "-z", str(z), "--class", "label", "--measures",
                              "release_check", "--html", str(html), "--seed", "1"])
    assert res.exit_code == 0, res.output
    assert "provenance of z: made by ppdm" in res.output and "uniform-noise" in res.output
    assert 'id="provenance"' in html.read_text() and "uniform-noise" in html.read_text()
    res = runner.invoke(app, ["evaluate", "-x", str(x), "-z", str(z), "--class", "label", "--measures",
                              "release_check", "--json", "--seed", "1"])
    obj = json.loads(res.stdout)
    assert obj["provenance"]["technique"]["name"] == "uniform-noise" and obj["inputs"]["seed"] == 1
    # a measurement without --seed draws one and says which
    res = runner.invoke(app, ["evaluate", "-x", str(x), "-z", str(z), "--class", "label", "--measures",
                              "release_check", "--json"])
    seed = json.loads(res.stdout)["inputs"]["seed"]
    assert f"repeat this run with --seed {seed}" in res.stderr
    # compare on a release: the sidecar is shown and kept in meta.json and the report
    res = runner.invoke(app, ["compare", str(z), "--class", "label", "-t", "uniform-noise", "--measures",
                              "release_check", "--cv", "2", "-o", str(tmp_path / "cmp"), "--report"])
    assert res.exit_code == 0, res.output
    assert "provenance of z.csv" in res.output
    meta = json.loads((tmp_path / "cmp" / "meta.json").read_text())
    assert meta["provenance"]["technique"]["name"] == "uniform-noise"
    assert "Provenance: the dataset is a release" in (tmp_path / "cmp" / "report.html").read_text()


def test_release_keeps_a_fitted_tree_given_to_the_technique() -> None:
    """release() fits a new instance with the same parameter objects: a fitted tree= stays fitted."""
    from ppdm.trees import C45Classifier

    x = named_records(300, 0).drop(columns="record")
    attrs = [c for c in x.columns if c != "label"]
    tree = C45Classifier(min_leaf=40).fit(x[attrs], x["label"])
    given = Framework(class_column="label", tree=tree, random_state=0)
    rel = release(x, given)
    assert rel.technique.tree_ is tree
    assert rel.technique is not given and not hasattr(given, "tree_")


def test_release_options_by_name_and_as_one_object() -> None:
    """ReleaseOptions gathers release()'s settings: roles one by one become one Roles (replacing
    those given), other fields by name; an unknown name and roles given both ways are refused;
    Release is built by name only."""
    import dataclasses

    from ppdm.data.roles import Roles
    from ppdm.errors import ParameterError
    from ppdm.experiments.release import Release, ReleaseOptions

    base = ReleaseOptions(roles=Roles(identifiers=("id",)), shuffle=False)
    got = ReleaseOptions.of(base, quasi_identifiers="a,b", holdout=0.2)
    assert got.roles == Roles(identifiers=("id",), quasi_identifiers=("a", "b"))
    assert (got.shuffle, got.holdout, got.keep_identifiers) == (False, 0.2, False)
    assert ReleaseOptions.of(roles=None).roles == Roles()
    with pytest.raises(ParameterError, match="no setting 'shufle'"):
        ReleaseOptions.of(shufle=False)
    with pytest.raises(ParameterError, match="either as roles"):
        ReleaseOptions.of(roles=Roles(), weight="w")
    assert all(f.kw_only for f in dataclasses.fields(Release))
