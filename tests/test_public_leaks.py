"""What an attacker found in the public files beside a release, each made into a test that builds
the release meant to break it: PRAM's matrices giving x's category counts, recode naming the
rare categories it merged, small counts of x, seeds that can be brute-forced, two releases
sharing one private log, and small things of the command line (a refusal's one line, binary
input, the measurement seed's help, .gitignore)."""

from __future__ import annotations

import fnmatch
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from json_numbers import json_numbers
from typer.testing import CliRunner

from ppdm.anonymize import make_technique
from ppdm.anonymize.perturbation_matrix import gamma_diagonal
from ppdm.cli.app import app
from ppdm.cli.common import WEAK_SEED_MESSAGE
from ppdm.data.provenance import read_private, read_provenance
from ppdm.errors import PPDMError
from ppdm.experiments.release import ReleaseWarning, release, save_release

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]
GATE_OFF = ["--allow-verbatim", "--allow-untouched-keys", "--allow-unchanged"]


def _people(n_a: int = 347, n_b: int = 101, n_c: int = 52, seed: int = 0) -> pd.DataFrame:
    """Categories with distinctive counts (347, 101, 52 of 500) and a numeric attribute."""
    rng = np.random.default_rng(seed)
    race = np.array(["a"] * n_a + ["b"] * n_b + ["c"] * n_c)
    rng.shuffle(race)
    n = len(race)
    return pd.DataFrame({"race": race, "v": rng.normal(size=n).round(3), "y": rng.choice(["p", "q"], n)})


def _public_files(folder: Path, stem: str) -> list[Path]:
    """Every file written for release ``stem`` except the owner's private log and control set."""
    return [p for p in folder.iterdir() if p.name.startswith(stem + ".") and p.suffix == ".json"
            and not p.name.endswith(".private.json")]


def _square_matrices(obj) -> list[np.ndarray]:
    """Every list of equally long lists of numbers (a matrix) in a JSON document."""
    out = []
    if isinstance(obj, dict):
        for v in obj.values():
            out += _square_matrices(v)
    elif isinstance(obj, list):
        if obj and all(isinstance(r, list) and len(r) == len(obj) and all(isinstance(v, (int, float)) for v in r)
                       for r in obj):
            out.append(np.asarray(obj, dtype=float))
        else:
            for v in obj:
                out += _square_matrices(v)
    return out


# --------------------------------------------------------------------------------- 1. PRAM
def test_pram_publishes_nothing_computed_from_the_category_frequencies(tmp_path: Path) -> None:
    x = _people()
    src, out = tmp_path / "x.csv", tmp_path / "z.csv"
    x.to_csv(src, index=False)
    res = runner.invoke(app, ["anonymize", str(src), "-m", "pram", "-p", "columns=race", "--class", "y", *GATE_OFF,
                              "-o", str(out)])
    assert res.exit_code == 0, res.output
    counts = x["race"].value_counts()
    shares = (counts / len(x)).reindex(["a", "b", "c"]).to_numpy()
    public = _public_files(tmp_path, "z")
    assert [p.name for p in public] == ["z.provenance.json"]  # no matrices sidecar
    for p in public:
        doc = json.loads(p.read_text())
        # the attack: a matrix whose stationary distribution is x's shares, and n from expected changes
        for m in _square_matrices(doc):
            if m.shape == (3, 3):
                assert not (np.allclose(m @ shares, shares) or np.allclose(shares @ m, shares)), p.name
        assert "expected_changes" not in p.read_text()
        found = set(json_numbers(doc).values())
        assert not found & {float(len(x)), *map(float, counts)}, p.name
    privacy = read_provenance(out)["privacy"]
    assert "p·R = p" in privacy["invariance"] and privacy["pd"] == 0.8 and privacy["alpha"] == 0.5
    # the owner keeps what an analyst does not need
    mine = read_private(out)["technique"]
    assert mine["variables"]["race"]["expected_changes"] > 0 and mine["metadata"]["method"] == "pram"


def test_random_substitution_matrices_are_made_of_its_parameters_alone(tmp_path: Path) -> None:
    """Dowd et al.'s gamma-diagonal matrix: γ/(γ+N−1) on the diagonal, 1/(γ+N−1) elsewhere,
    whatever x's frequencies (347, 101, 52 here): its sidecar may be public."""
    x = _people()
    with pytest.warns(ReleaseWarning, match="unchanged|released although"):  # the gate lets it through, saying why
        rel = release(x, make_technique("random-substitution", class_column="y", params={"gamma": 5.0, "columns": ["race"]}),
                      allow_verbatim=True, allow_untouched_keys=True)
    save_release(rel, tmp_path / "z.csv")
    side = json.loads((tmp_path / "z.matrices.json").read_text())
    (att,) = side["attributes"]
    # N = 3: diagonal 5/7, elsewhere 1/7
    np.testing.assert_allclose(att["matrix"], gamma_diagonal(5.0, 3), rtol=0, atol=1e-15)
    np.testing.assert_allclose(np.diag(att["matrix"]), 5 / 7)


# -------------------------------------------------------------------------------- 2. recode
def _with_rare() -> pd.DataFrame:
    rng = np.random.default_rng(1)
    job = np.array(["clerk"] * 200 + ["farmer"] * 150 + ["astronaut"] * 1 + ["diver"] * 3 + ["smith"] * 46)
    rng.shuffle(job)
    return pd.DataFrame({"job": job, "age": rng.integers(20, 70, len(job)), "y": rng.choice(["p", "q"], len(job))})


def test_recode_states_the_rule_and_keeps_the_merged_categories_private(tmp_path: Path) -> None:
    x = _with_rare()
    with pytest.warns(ReleaseWarning):  # the gate lets it through, saying why (job and age are untouched keys)
        rel = release(x, make_technique("recode", class_column="y", params={"columns": ["job"], "min_count": 4}),
                      allow_verbatim=True, allow_untouched_keys=True, allow_unchanged=True)
    save_release(rel, tmp_path / "z.csv")
    text = (tmp_path / "z.provenance.json").read_text()
    # one person and three people: fewer than 4 each, together 4, merged into Other and absent from z
    for name in ("astronaut", "diver"):
        assert name not in text
        assert name not in set(rel.data["job"])
    prov = json.loads(text)
    assert "min_count=4" in prov["privacy"]["rare_categories"]["job"] and "'Other'" in text
    # the public schema names only categories z holds
    z = pd.read_csv(tmp_path / "z.csv")
    for c, values in prov["output"]["schema"]["categories"].items():
        assert {str(v) for v in values} <= set(z[c].astype(str)), c
    mine = read_private(tmp_path / "z.csv")
    assert mine["technique"]["merged_into_other"] == {"job": ["astronaut", "diver"]}
    assert "astronaut" in json.dumps(mine["output_schema"])


# ---------------------------------------------------------------------- 3. small counts of x
def test_local_suppression_counts_are_the_owners(tmp_path: Path) -> None:
    x = _with_rare()
    with pytest.warns(ReleaseWarning, match="unchanged"):  # the gate lets it through, saying why
        rel = release(x, make_technique("local-suppression", class_column="y", params={"k": 5, "keys": ["job", "age"]}),
                      quasi_identifiers="job,age", allow_verbatim=True, allow_untouched_keys=True, allow_unchanged=True)
    save_release(rel, tmp_path / "z.csv")
    prov = read_provenance(tmp_path / "z.csv")
    for key in ("records_below_k", "records_below_k_for_intruder", "suppressed_cells", "suppressed_by_key",
                "records_with_suppression", "importance"):
        assert key not in prov["privacy"], key
        assert key in read_private(tmp_path / "z.csv")["technique"], key
    assert prov["privacy"]["k"] == 5 and prov["privacy"]["guarantee"] == "k-anonymity"


# ------------------------------------------------------------------------------- 4. seeds
@pytest.mark.parametrize("command", ["anonymize", "recommend"])
def test_a_seed_below_2_64_is_refused_unless_the_run_is_an_experiment(tmp_path: Path, command: str) -> None:
    src, out = tmp_path / "x.csv", tmp_path / "z.csv"
    _people().to_csv(src, index=False)
    args = ([command, str(src), "-m", "gaussian-noise", "--class", "y", *GATE_OFF, "-o", str(out)]
            if command == "anonymize" else
            [command, str(src), "--class", "y", "--max", "record_linkage=0.9", "--utility", "sse_sst=1",
             "--techniques", "mdav", "--trials", "2", "--out", str(out)])
    for seed in ("0", "12345", str(2**64 - 1)):
        res = runner.invoke(app, [*args, "--seed", seed])
        assert res.exit_code == 2, res.output
        assert res.output.strip() == f"error: {WEAK_SEED_MESSAGE}"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["x.csv"]
    if command == "recommend":
        return
    res = runner.invoke(app, [*args, "--seed", str(2**64 + 12345)])
    assert res.exit_code == 0, res.output
    res = runner.invoke(app, [*args, "--seed", "7", "--experiment-seed", "-o", str(tmp_path / "e.csv")])
    assert res.exit_code == 0, res.output
    for name in ("z", "e"):  # neither the seed nor whether one was given is public
        assert "seed" not in (tmp_path / f"{name}.provenance.json").read_text()
        assert read_private(tmp_path / f"{name}.csv")["seeded"] is True


def test_docs_release_examples_give_no_small_seed() -> None:
    """A documented release is copied as it is written: it must not teach a guessable seed."""
    texts = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    bad = []
    for p in texts:
        for line in p.read_text(encoding="utf-8").splitlines():
            words = line.split()
            for cmd in ("anonymize", "recommend"):
                if f"ppdm {cmd}" in line and "--seed" in words and "--experiment-seed" not in line:
                    bad.append(f"{p.name}: {line.strip()[:80]}")
    assert not bad, bad


# ------------------------------------------------------------------- 6. sidecars of a stem
def test_a_second_release_of_the_same_stem_does_not_replace_the_first_private_log(tmp_path: Path) -> None:
    src = tmp_path / "x.csv"
    _people().to_csv(src, index=False)
    base = ["anonymize", str(src), "-m", "gaussian-noise", "-p", "level=0.9", "--class", "y", *GATE_OFF]
    res = runner.invoke(app, [*base, "-o", str(tmp_path / "z.csv")])
    assert res.exit_code == 0, res.output
    first = (tmp_path / "z.private.json").read_bytes()
    res = runner.invoke(app, [*base, "-o", str(tmp_path / "z.parquet")])
    assert res.exit_code == 2 and "z.csv" in res.output and len(res.output.strip().splitlines()) == 1, res.output
    assert (tmp_path / "z.private.json").read_bytes() == first and not (tmp_path / "z.parquet").exists()
    # the same release again is allowed
    res = runner.invoke(app, [*base, "-o", str(tmp_path / "z.csv")])
    assert res.exit_code == 0, res.output
    # the library refuses too
    with pytest.warns(ReleaseWarning, match="unchanged"):  # the gate lets it through, saying why
        rel = release(_people(), make_technique("gaussian-noise", class_column="y", params={"level": 0.9}),
                      allow_verbatim=True, allow_untouched_keys=True)
    with pytest.raises(PPDMError, match="private log of the release 'z.csv'"):
        save_release(rel, tmp_path / "z.csv.gz")
    assert read_private(tmp_path / "z.csv")["release"] == "z.csv"


# --------------------------------------------------------------------------- 7. small things
def test_gitignore_covers_the_owners_files() -> None:
    patterns = [ln.strip() for ln in (ROOT / ".gitignore").read_text().splitlines()
                if ln.strip() and not ln.startswith("#")]
    for name in ("z.private.json", "z.control.csv", "z.control.parquet", "z.study.db", "out/adult.private.json"):
        assert any(fnmatch.fnmatch(Path(name).name, p) for p in patterns), name


def test_evaluate_calls_its_seed_the_measurement_seed() -> None:
    res = runner.invoke(app, ["evaluate", "--help"])
    assert "Measurement seed" in " ".join(res.output.split())


def test_binary_data_without_nul_bytes_is_refused_as_binary(tmp_path: Path) -> None:
    """Bytes that decode as ASCII (so no decoding error) but are full of control characters, one
    of them a tab: the reader used to take the line for a header and hint --sep '\\t'."""
    p = tmp_path / "image.csv"
    b = np.random.default_rng(0).integers(1, 128, 3000).astype(np.uint8)
    body = b[(b != 10) & (b != 13) & (b != 44)].tobytes()  # no NUL, no line end, no comma
    p.write_bytes(b"GIF89a" + body[:50] + b"\t" + body[50:])
    res = runner.invoke(app, ["anonymize", str(p), "-m", "mdav", "-o", str(tmp_path / "z.csv")])
    assert res.exit_code == 2
    assert "binary" in res.output and "--sep" not in res.output and len(res.output.strip().splitlines()) == 1


def test_a_refusal_is_one_line_with_no_empty_line_before_it(tmp_path: Path) -> None:
    """Through a real process: stderr a pipe, as a script sees it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run([sys.executable, "-m", "ppdm.cli", "anonymize", "builtin:wine", "-m", "gaussian-noise",
                           "-p", "level=-1", "-o", str(tmp_path / "z.csv")], env=env, capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("error: level"), repr(proc.stderr)
