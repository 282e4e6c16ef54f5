"""Invariant PRAM: sdcMicro's transition matrices rebuilt exactly from their drawn diagonals,
p·R = p, the number of changes against the oracle's expectations, the sidecar shared with random
substitution, strata, missing values and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ppdm.anonymize.perturbation_matrix import invariant_pram_matrix, pram_base_matrix
from ppdm.anonymize.pram import Pram
from ppdm.anonymize.random_substitution import SubstitutionMetadata
from ppdm.cli.app import app
from ppdm.data.schema import Schema
from ppdm.errors import ParameterError, PPDMError

runner = CliRunner()
VARS = {"adult": ["race", "marital_status"], "testdata": ["roof", "walls"]}


def _oracle(shared_dir: Path, tag: str) -> tuple[dict, pd.DataFrame]:
    d = shared_dir / "oracles" / "sdcmicro_sdc"
    return json.loads((d / f"{tag}.json").read_text())["pram"], pd.read_csv(d / f"{tag}_pram.csv")


@pytest.mark.parametrize("tag", sorted(VARS))
def test_transition_matrix_equals_sdcmicros_given_its_drawn_diagonal(shared_dir: Path, tag: str) -> None:
    pram, x = _oracle(shared_dir, tag)
    for v, b in pram["by_variable"].items():
        counts = np.array([b["counts_before"][lev] for lev in b["levels"]], dtype=float)
        pds = np.array(b["P_diagonal_pds"])
        np.testing.assert_allclose(pram_base_matrix(pds), np.array(b["P"]), atol=1e-15)
        R = invariant_pram_matrix(pds, counts, pram["alpha"])
        np.testing.assert_allclose(R, np.array(b["Rs"]), atol=1e-14, rtol=0)
        np.testing.assert_allclose(counts @ R, b["expected_counts_after"], rtol=1e-12)
        assert counts @ (1 - np.diag(R)) == pytest.approx(b["expected_changes"], rel=1e-12)
        # the technique's levels are sdcMicro's (numbers numerically, text in byte order)
        t = Pram(schema=Schema(categorical=VARS[tag]), columns=[v], random_state=0).fit(x[VARS[tag]])
        assert [str(lev) for lev in t.levels_[v]] == b["levels"]
        np.testing.assert_array_equal(t._counts[v], counts)


@pytest.mark.parametrize("tag", sorted(VARS))
def test_changes_with_sdcmicros_matrix_match_its_expectation(shared_dir: Path, tag: str) -> None:
    """With sdcMicro's own matrix, the changes and counts after PRAM over 40 draws sit where the
    matrix puts them on average (within 4 standard errors), as sdcMicro's own draw does."""
    pram, x = _oracle(shared_dir, tag)
    t = Pram(schema=Schema(categorical=VARS[tag]), columns=VARS[tag], random_state=0).fit(x[VARS[tag]])
    for v, b in pram["by_variable"].items():
        t.matrices_[v] = np.array(b["Rs"])
        R = t.matrices_[v]
        counts = t._counts[v]
        # the variance of the number of changes: a sum of Bernoulli(1 − R_ii) over the records
        sd = np.sqrt(counts @ ((1 - np.diag(R)) * np.diag(R)))
        changes, after = [], []
        for seed in range(40):
            t.random_state = 1000 + seed
            z = t.transform(x[VARS[tag]])
            changes.append(int((z[v] != x[v]).sum()))
            after.append(z[v].value_counts().reindex(t.levels_[v]).fillna(0).to_numpy())
        assert abs(np.mean(changes) - b["expected_changes"]) <= 4 * sd / np.sqrt(40)
        assert abs(b["nrChanges"] - b["expected_changes"]) <= 4 * sd  # sdcMicro's own draw, same yardstick
        mean_after = np.mean(after, axis=0)
        np.testing.assert_allclose(mean_after, b["expected_counts_after"], atol=4 * np.sqrt(counts.max()) + 1)


def test_number_of_changes_over_seeds_matches_sdcmicros_distribution(shared_dir: Path) -> None:
    """Over fresh draws of the diagonal (pds ~ U[pd, 1]), the number of changes has the mean of
    sdcMicro's 20 seeds within 4 standard errors of the difference."""
    pram, x = _oracle(shared_dir, "testdata")
    sch = Schema(categorical=VARS["testdata"])
    ours: dict[str, list[int]] = {v: [] for v in VARS["testdata"]}
    for seed in range(60):
        z = Pram(schema=sch, columns=VARS["testdata"], pd=0.8, alpha=0.5, random_state=seed).fit_transform(
            x[VARS["testdata"]])
        for v in ours:
            ours[v].append(int((z[v] != x[v]).sum()))
    for v, ref in pram["changes_over_seeds"]["by_variable"].items():
        se = np.sqrt(np.var(ours[v], ddof=1) / len(ours[v]) + ref["sd"] ** 2 / len(ref["nrChanges"]))
        assert abs(np.mean(ours[v]) - ref["mean"]) <= 4 * se, (v, np.mean(ours[v]), ref["mean"])


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 8).flatmap(lambda n: st.tuples(
    st.lists(st.floats(0.01, 1.0), min_size=n, max_size=n),
    st.lists(st.integers(1, 1000), min_size=n, max_size=n))),
    st.floats(0.0, 1.0))
def test_invariance_p_times_r_equals_p(drawn, alpha) -> None:
    pds, counts = drawn
    p = np.array(counts, dtype=float)
    R = invariant_pram_matrix(np.array(pds), p, alpha)
    assert np.all(R >= -1e-12) and np.allclose(R.sum(axis=1), 1.0)
    np.testing.assert_allclose(p @ R, p, rtol=1e-9, atol=1e-9)


def test_matrices_stay_with_the_owner_and_rebuild_random_substitutions_format(tmp_path: Path) -> None:
    """The matrices are built from x's frequencies: no public sidecar, the private log keeps them
    in random substitution's format (from which reconstruction still works for the owner)."""
    rng = np.random.default_rng(0)
    x = pd.DataFrame({"race": rng.choice(["a", "b", "c"], 500, p=[0.7, 0.2, 0.1]), "v": rng.normal(size=500),
                      "y": rng.choice(["p", "q"], 500)})
    src, out = tmp_path / "x.csv", tmp_path / "z.csv"
    x.to_csv(src, index=False)
    res = runner.invoke(app, ["anonymize", str(src), "-m", "pram", "-p", "columns=race", "-p", "pd=0.6",
                              "--class", "y", "--seed", "3", "--experiment-seed", "--allow-verbatim",
                              "--allow-untouched-keys", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert not (tmp_path / "z.matrices.json").exists()
    private = json.loads((tmp_path / "z.private.json").read_text())
    meta = SubstitutionMetadata.from_json(json.dumps(private["technique"]["metadata"]))
    assert meta.method == "pram" and list(meta.attributes) == ["race"]
    M = meta.attributes["race"].matrix  # column-stochastic: M[h, k] = p(k -> h) = R[k, h]
    counts = x["race"].value_counts().reindex(["a", "b", "c"]).to_numpy(dtype=float)
    np.testing.assert_allclose(M @ counts, counts, rtol=1e-9)  # invariance seen from the private log
    assert private["technique"]["variables"]["race"]["categories"] == 3
    prov = json.loads((tmp_path / "z.provenance.json").read_text())
    assert prov["privacy"]["technique"] == "invariant PRAM"
    assert "variables" not in prov["privacy"] and prov["privacy"]["pd"] == 0.6


def test_strata_missing_values_and_determinism() -> None:
    rng = np.random.default_rng(1)
    x = pd.DataFrame({"c": rng.choice(list("abc"), 300), "s": rng.choice(["n", "s"], 300)})
    x.loc[::13, "c"] = None
    t = Pram(columns=["c"], strata=["s"], pd=0.5, random_state=4)
    z = t.fit_transform(x)
    assert z["c"].isna().tolist() == x["c"].isna().tolist()  # a missing cell is not post-randomised
    assert set(t.matrices_) == {("c", ("n",)), ("c", ("s",))}
    for key, R in t.matrices_.items():
        np.testing.assert_allclose(t._counts[key] @ R, t._counts[key], rtol=1e-9)
    assert z["s"].equals(x["s"])
    pd.testing.assert_frame_equal(z, Pram(columns=["c"], strata=["s"], pd=0.5, random_state=4).fit_transform(x))
    assert t.metadata_.strata and not t.metadata_.attributes
    with pytest.raises(PPDMError, match="within strata"):
        t.metadata_.perturbed_columns(x)


def test_numeric_columns_are_refused_in_one_line(tmp_path: Path) -> None:
    x = pd.DataFrame({"age": [20, 30, 40, 50], "c": list("abab")})
    with pytest.raises(ParameterError, match="'age' is numeric"):
        Pram(columns=["age"]).fit(x)
    with pytest.raises(ParameterError, match="has no categorical attribute to post-randomise; choose random-substitution"):
        Pram().fit(x[["age"]])
    src = tmp_path / "x.csv"
    x.to_csv(src, index=False)
    res = runner.invoke(app, ["anonymize", str(src), "-m", "pram", "-p", "columns=age", "-o", str(tmp_path / "z.csv")])
    out = res.output.strip()
    assert res.exit_code == 2 and len(out.splitlines()) == 1 and "'age' is numeric" in out, out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.csv"]


def test_naming_the_class_column_says_perturb_class() -> None:
    """Naming only the class column used to end in "pram changes no attribute … or name columns=…",
    though columns had been named: the class is left alone unless perturb_class=true."""
    x = pd.DataFrame({"c": list("abab") * 5, "y": list("yyno") * 5})
    sch = Schema(categorical=["c"], class_column="y")
    with pytest.raises(ParameterError, match="class column 'y'.*perturb_class=true"):
        Pram(schema=sch, class_column="y", columns=["y"], random_state=1).fit(x)
    z = Pram(schema=sch, class_column="y", columns=["y"], perturb_class=True, random_state=1).fit_transform(x)
    assert z.shape == x.shape
