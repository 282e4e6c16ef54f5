"""``ppdm tree``: prints trees in J48 layout, writes rules atomically, rejects bad parameters."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from ppdm.cli.app import app
from ppdm.rules import RuleSet

runner = CliRunner()


def test_c45_prints_tree_and_writes_rules(tmp_path: Path) -> None:
    out = tmp_path / "rules.txt"
    res = runner.invoke(app, ["tree", "builtin:wine", "--class", "class", "--param", "min_leaf=10",
                              "--rules-out", str(out)])
    assert res.exit_code == 0, res.output
    assert "flavanoids <= 1.57" in res.output and "Number of Leaves  : \t4" in res.output
    rules = RuleSet.load(out)
    assert len(rules) == 4 and rules.class_column == "class"


def test_sysfor_with_paper_preset(tmp_path: Path) -> None:
    out = tmp_path / "forest.txt"
    res = runner.invoke(app, ["tree", "builtin:wbc", "-a", "sysfor", "--missing", "drop", "-p", "preset=paper004",
                              "-p", "min_leaf=45", "--rules-out", str(out)])
    assert res.exit_code == 0, res.output
    assert "Tree 3 of 3" in res.output
    assert len(RuleSet.load(out)) >= 3


def test_unknown_parameter_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    # in process (the exit code comes from the command group; test_cli_shell runs the real entry point)
    out = tmp_path / "r.txt"
    res = runner.invoke(app, ["tree", "builtin:wine", "-p", "depth=3", "--rules-out", str(out)])
    assert res.exit_code == 2
    assert "depth" in res.output
    assert not out.exists()
    res = runner.invoke(app, ["tree", "builtin:wine", "-a", "cart"])
    assert res.exit_code == 2
