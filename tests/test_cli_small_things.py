"""Small things a new user met: the progress bar's clock, what ``ppdm schema`` tells about a
table, and SysFor's split points printed as its authors' program prints them."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from rich.console import Console
from typer.testing import CliRunner

from ppdm.cli.app import app

runner = CliRunner()


# ------------------------------------------------------------------ the progress bar's clock
def test_time_text() -> None:
    from ppdm.cli.progress import time_text

    assert time_text(131.0, None, known_total=False) == "0:02:11 spent"  # was "0:02:11 left"
    assert time_text(131.0, 65.0, known_total=True) == "0:02:11 spent, 0:01:05 left"
    assert time_text(3725.0, None, known_total=True) == "1:02:05 spent, -:--:-- left"


@pytest.mark.parametrize(("total", "left"), [(None, False), (10, True)])
def test_a_task_without_a_total_shows_no_time_left(total: int | None, left: bool) -> None:
    from rich.progress import Progress

    from ppdm.cli.progress import _columns

    out = io.StringIO()
    console = Console(file=out, width=120, force_terminal=False, color_system=None)
    with Progress(*_columns(), console=console, auto_refresh=False) as bar:
        task = bar.add_task("working", total=total)
        bar.advance(task, 2)
        time.sleep(0.05)
        bar.advance(task, 1)
        bar.refresh()
    text = out.getvalue()
    assert "spent" in text
    assert ("left" in text) == left, text


# ------------------------------------------------------------------ ppdm schema: missing cells and suggested roles
def _survey(n: int = 300) -> pd.DataFrame:
    """The table of a new user: an id, a name, zip codes, birth dates, incomes with gaps, a
    sampling weight, a diagnosis."""
    rng = np.random.default_rng(0)
    return pd.DataFrame({
        "person_id": np.arange(n) + 1000,
        "name": [f"N{i}" for i in range(n)],
        "zip": [f"{z:05d}" for z in rng.integers(1000, 1100, n)],
        "birth_date": pd.date_range("1950-01-01", periods=n, freq="37D").strftime("%Y-%m-%d"),
        "sex": rng.choice(["f", "m"], n),
        "income": np.where(rng.random(n) < 0.1, np.nan, rng.normal(30000, 5000, n).round(2)),
        "sampling_weight": rng.uniform(50, 300, n).round(1),
        "diagnosis": rng.choice(["a", "b", "c"], n),
    })


def test_schema_shows_missing_cells_and_suggests_roles_without_applying_them(tmp_path: Path) -> None:
    df = _survey()
    src = tmp_path / "survey.csv"
    df.to_csv(src, index=False)
    out = tmp_path / "s.json"
    res = runner.invoke(app, ["schema", str(src), "--class", "diagnosis", "-o", str(out)], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    assert "missing" in res.output and f"{int(df['income'].isna().sum())} (" in res.output
    assert "suggested roles, NOT applied" in res.output
    line = next(ln for ln in res.output.splitlines() if ln.startswith("suggested roles"))
    qi = line.split("--qi ")[1].split()[0].split(",")
    assert sorted(qi) == ["birth_date", "sex", "zip"] and "--sensitive income,diagnosis" in line
    assert "--weight sampling_weight" in res.output
    written = json.loads(out.read_text())
    assert written["_columns"]["income"]["missing"] == int(df["income"].isna().sum())
    assert written["_columns"]["sex"]["missing"] == 0
    hints = written["_suggestions"]
    assert set(hints["quasi_identifiers"]) == {"zip", "birth_date", "sex"}
    assert set(hints["sensitive"]) == {"income", "diagnosis"} and set(hints["weight"]) == {"sampling_weight"}
    # nothing applied: the roles are those the flags gave (none), identifiers aside
    assert written.get("quasi_identifiers", []) == [] and written.get("sensitive", []) == []
    assert written.get("weight") is None
    assert {"person_id", "name"} <= set(written["identifiers"])
    # the file reads back as a schema (keys starting with '_' are ignored)
    from ppdm.data.schema import Schema

    assert Schema.load(out).quasi_identifiers == []


def test_declared_roles_are_not_suggested_again() -> None:
    from ppdm.data.roles import Roles, resolve_schema
    from ppdm.data.suggest import suggest_roles

    df = _survey().drop(columns=["person_id", "name"])
    df["birth_date"] = pd.to_datetime(df["birth_date"])  # as read_table types it
    sch = resolve_schema(df, class_column="diagnosis", roles=Roles.of(quasi_identifiers="sex,zip",
                                                                      weight="sampling_weight"))
    hints = suggest_roles(df, sch)
    assert set(hints.quasi_identifiers) == {"birth_date"} and hints.weight == {}
    # a weight must be positive: a column named weight with a zero is not suggested
    df2 = df.assign(sampling_weight=df["sampling_weight"].where(df.index != 3, 0.0))
    assert suggest_roles(df2, resolve_schema(df2, class_column="diagnosis")).weight == {}
    # frequencies and the like are not key variables by their values
    plain = pd.DataFrame({"a": np.arange(30.0) + 0.5, "b": ["x", "y", "z"] * 10})
    assert not suggest_roles(plain, resolve_schema(plain))


# ------------------------------------------------------------------ SysFor's split points in full
@pytest.mark.parametrize(("value", "text"), [
    (3.5, "3.5"), (2.0, "2.0"), (1.7438500000000001, "1.7438500000000001"), (0.0072499999999999995,
                                                                           "0.0072499999999999995"),
    (-1234.5, "-1234.5"), (0.001, "0.001"), (1e7, "1.0E7"), (12345678.9, "1.23456789E7"), (2.5e-4, "2.5E-4"),
    (-3e-9, "-3.0E-9"), (0.0, "0.0"),
])
def test_java_double(value: float, text: str) -> None:
    from ppdm.trees.c45 import java_double

    assert java_double(value) == text
    assert float(text.replace("E", "e")) == value


def test_sysfor_prints_its_split_points_as_its_authors_program(shared_dir: Path) -> None:
    """Every numeric test of the 12 oracle forests (SysFor's forced midpoints in full, J48's
    thresholds below them at six decimals) is printed with the reference's very digits; 16
    lines in 7 trees differed when forced split points were rounded like J48's
    (``variance <= 1.74385`` against ``1.7438500000000001``)."""
    import re

    from test_trees_sysfor_parity import _LINE, RUNS, fit_run

    numeric = 0
    for key in RUNS:
        ref = (shared_dir / f"oracles/sysfor/{key}.txt").read_text()
        body = ref.split("=== Classifier model (full training set) ===", 1)[1].split("Time taken")[0]
        ref_trees = [[ln for ln in c.strip("\n").splitlines() if ln.strip()]
                     for c in re.split(r"\n?Tree \d+: ?\n", body)[1:]]
        forest = fit_run(shared_dir, key)
        for t, (est, lines) in enumerate(zip(forest.estimators_, ref_trees, strict=True), start=1):
            ours = est.export_text(header=False).splitlines()
            assert len(ours) == len(lines), (key, t)
            for a, b in zip(ours, lines, strict=True):
                ma, mb = _LINE.match(a), _LINE.match(b.rstrip())
                if mb["op"] in ("<=", ">"):
                    numeric += 1
                    assert ma["value"].strip() == mb["value"].strip(), f"{key} tree {t}: {a!r} against {b!r}"
    assert numeric > 1000


# ------------------------------------------------------------------ the collector after the imports
def test_settle_imports_freezes_only_the_command_lines_own_process(monkeypatch: pytest.MonkeyPatch) -> None:
    import gc

    from ppdm.cli import common

    before = gc.get_freeze_count()
    common.settle_imports()  # a program calling the commands (this test session): left as it was
    assert gc.get_freeze_count() == before
    monkeypatch.setattr(common, "_own_process", True)
    try:
        common.settle_imports()
        assert gc.get_freeze_count() > before
    finally:
        gc.unfreeze()


def test_the_command_lines_own_process_collects_young_objects_less_often(monkeypatch: pytest.MonkeyPatch) -> None:
    import gc

    from ppdm.cli import common

    before = gc.get_threshold()
    monkeypatch.setattr(common, "_own_process", False)  # restored after the test
    try:
        common.mark_own_process()
        assert gc.get_threshold() == (10_000, 10, 10)
        assert common._own_process
    finally:
        gc.set_threshold(*before)
