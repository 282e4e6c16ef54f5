"""``ppdm reproduce PAPER --quick``: every paper's smoke run writes its tables through the CLI."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from ppdm.cli.app import app
from ppdm.cli.cmd_reproduce import REPRODUCTIONS

# files each quick reproduction must write (relative to --out)
EXPECTED: dict[str, list[str]] = {
    "retention": [
        "retention.md", "correlations.csv", "correlations.md",
        "adult_uniform-noise/summary.csv", "adult_gaussian-noise/summary.md",
        "banknote_dp/dp_retention_summary.csv", "banknote_dp/dp_retention.md", "banknote_dp/dp_retention.png",
    ],
    "forest-framework": ["runs.csv", "summary.csv", "summary.md", "structure.csv", "structure.md",
                         "forest_experiment.png"],
    "random-substitution": ["error_results.csv", "error_summary.md", "error_plateau.png",
                            "tree_results.csv", "tree_summary.md", "tree_accuracy.png"],
    "rounding": ["table1.csv", "table8.md", "trends.csv", "tables.md"],
}


def _run(tmp_path: Path, paper: str) -> tuple[Path, object]:
    out = tmp_path / paper
    res = CliRunner().invoke(app, ["reproduce", paper, "--out", str(out), "--quick", "--seed", "1"])
    return out, res


def test_every_paper_has_a_reproduction() -> None:
    assert set(REPRODUCTIONS) == {*EXPECTED, "all"}


@pytest.mark.parametrize("paper", sorted(EXPECTED))
def test_quick_reproduction_writes_its_files(tmp_path: Path, paper: str) -> None:
    out, res = _run(tmp_path, paper)
    assert res.exit_code == 0, res.output
    for name in EXPECTED[paper]:
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name
    assert not list(out.rglob("*.tmp*"))  # atomic writes leave no temporaries
    if paper == "retention":
        corr = pd.read_csv(out / "correlations.csv")
        assert set(corr["group"]) == {"UN", "GN", "DPCube", "all"}
        assert corr["r"].dropna().between(-1 - 1e-9, 1 + 1e-9).all()
        dp = pd.read_csv(out / "banknote_dp" / "dp_retention_summary.csv")
        assert {"original", "dpcube", "uniform-noise", "gaussian-noise"} == set(dp["technique"])
    if paper == "forest-framework":
        st = pd.read_csv(out / "structure.csv")
        assert list(st["technique"]) == ["FF", "F", "GADP", "RT"]
        assert st[["eduds", "edusc"]].stack().between(0, 1).all()
        assert (st["sers"] > 0).all()
        assert "| wbc |" in (out / "summary.md").read_text()


def test_all_runs_every_paper_into_its_own_folder(tmp_path: Path) -> None:
    out, res = _run(tmp_path, "all")
    assert res.exit_code == 0, res.output
    for paper, names in EXPECTED.items():
        for name in names:
            assert (out / paper / name).is_file(), f"{paper}/{name}"


def test_unknown_paper_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    out, res = _run(tmp_path, "paper-42")
    assert res.exit_code == 2
    assert "no reproduction named 'paper-42'" in res.output
    assert not out.exists()


def test_out_that_is_a_file_exits_2(tmp_path: Path) -> None:
    f = tmp_path / "taken"
    f.write_text("x")
    res = CliRunner().invoke(app, ["reproduce", "rounding", "--out", str(f), "--quick"])
    assert res.exit_code == 2 and f.read_text() == "x"
