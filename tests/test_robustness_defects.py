"""Designed cases that used to break ppdm: huge magnitudes, ``--param x=none``, signals during a
write, decimal commas, names that look like identifiers, raw library messages, and measures
that could not give a number or gave a useless one (docs/robustness.md)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from ppdm.cli.app import app
from ppdm.data.provenance import in_input_order, read_private

runner = CliRunner()

#: this file is not about the release gate (tests/test_release_gate.py): weak releases are written
GATE_OFF = ["--allow-verbatim", "--allow-untouched-keys"]


def _huge_table(n: int = 300, seed: int = 1) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Four correlated attributes near 1e200 and a release with noise of the same order."""
    rng = np.random.default_rng(seed)
    a = rng.normal(0, 1, n)
    x = pd.DataFrame({"a": a * 1e200, "b": (a + rng.normal(0, 0.3, n)) * 1e200, "c": rng.normal(0, 1, n) * 1e200,
                      "d": rng.normal(0, 1, n) * 3e200, "label": rng.choice(["x", "y"], n)})
    z = x.copy()
    for c in "abcd":
        z[c] = z[c] + rng.normal(0, 0.3, n) * 1e200
    return x, z


def _files(tmp_path: Path, x: pd.DataFrame, z: pd.DataFrame) -> tuple[Path, Path]:
    px, pz = tmp_path / "x.csv", tmp_path / "z.csv"
    x.to_csv(px, index=False)
    z.to_csv(pz, index=False)
    return px, pz


def _evaluate(px: Path, pz: Path, measures: str, *extra: str) -> dict[str, Any]:
    # z is made row by row from x here: the owner pairs them by position
    res = runner.invoke(app, ["evaluate", "-x", str(px), "-z", str(pz), "--class", "label", "--measures", measures,
                              "--json", "--seed", "1", "--pairing", "position", *extra])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)["measures"]


# ------------------------------------------------------------------ huge magnitudes
def test_spectral_filtering_near_1e200_is_computed_and_does_not_abort_all(tmp_path: Path) -> None:
    # it used to exit 1 with "LinAlgError: Eigenvalues did not converge", and so did --measures all
    px, pz = _files(tmp_path, *_huge_table())
    m = _evaluate(px, pz, "spectral_filtering")["spectral_filtering"]
    assert m["status"] == "computed" and 0.0 <= m["value"] <= 1.0
    everything = _evaluate(px, pz, "all")
    assert everything["spectral_filtering"]["status"] == "computed"
    for name, out in everything.items():
        # every measure gives a number or says why not: none is "computed" without one
        assert (out["status"] == "computed") == (out["value"] is not None), (name, out)
        if out["status"] == "skipped":
            assert out["reason"], name


def test_sse_sst_near_1e200_gives_the_value_of_the_scaled_table(tmp_path: Path) -> None:
    # it used to report "computed" with value null and no reason
    from ppdm.metrics import sse_sst

    x, z = _huge_table()
    px, pz = _files(tmp_path, x, z)
    m = _evaluate(px, pz, "sse_sst", "-p", "standardize=none")["sse_sst"]
    cols = list("abcd")
    scaled = sse_sst(x[cols] / 2.0**664, z[cols] / 2.0**664).value
    assert m["status"] == "computed" and m["value"] == pytest.approx(scaled, rel=1e-12)
    assert sse_sst(x[cols], z[cols], standardize="zscore").value == pytest.approx(
        sse_sst(x[cols] / 1e200, z[cols] / 1e200, standardize="zscore").value, rel=1e-12)


def test_a_measure_without_a_finite_value_is_skipped_with_the_reason() -> None:
    from ppdm.data.schema import Schema
    from ppdm.experiments.evaluation import run_measure
    from ppdm.metrics.base import EvaluationContext, MeasureResult, MeasureSpec

    df = pd.DataFrame({"a": [1.0, 2.0, 3.0]})
    ctx = EvaluationContext(x=df, z=df, schema=Schema.infer(df))
    for bad in (math.nan, math.inf, None):
        spec = MeasureSpec("odd", lambda c, v=bad: MeasureResult(v), "utility", "", needs_class=False)
        out = run_measure(spec, ctx)
        assert out.skipped and "no finite value" in out.reason, out.reason
    good = run_measure(MeasureSpec("fine", lambda c: MeasureResult(0.5), "utility", "", needs_class=False), ctx)
    assert not good.skipped and good.value == 0.5


def test_mdav_on_huge_magnitudes_groups_as_on_the_scaled_table(tmp_path: Path) -> None:
    # it used to refuse with "weights must be 6 positive finite numbers" though no weights were given
    from ppdm.anonymize.microaggregation import MDAV, mdav, mdav_weights

    x, _ = _huge_table(n=120)
    cols = list("abcd")
    small = x.copy()
    small[cols] = small[cols] / 2.0**665
    for scaling in ("standard", "sdcmicro", "none"):
        big_labels = mdav(x[cols].to_numpy(), 3, scaling)
        np.testing.assert_array_equal(big_labels, mdav(small[cols].to_numpy(), 3, scaling))
        zb = MDAV(k=3, scaling=scaling, class_column="label").fit_transform(x)
        zs = MDAV(k=3, scaling=scaling, class_column="label").fit_transform(small)
        np.testing.assert_array_equal(zb[cols].to_numpy() / 2.0**665, zs[cols].to_numpy())
        assert np.isfinite(zb[cols].to_numpy()).all()
    # the centroids of values near the largest double do not overflow either
    top = x.copy()
    top[cols] = x[cols] / 1e200 * 1e307
    assert np.isfinite(MDAV(k=3, class_column="label").fit_transform(top)[cols].to_numpy()).all()
    # weights asked for directly on such values name the real problem
    from ppdm.errors import ParameterError

    with pytest.raises(ParameterError, match="attribute 0 holds values up to .* too large or too small"):
        mdav_weights(x[cols].to_numpy() * 1e100, "standard")
    px = tmp_path / "x.csv"
    x.to_csv(px, index=False)
    res = runner.invoke(app, ["anonymize", *GATE_OFF, str(px), "--class", "label", "-m", "mdav", "-o", str(tmp_path / "z.csv"),
                              "--seed", "1", "--experiment-seed"])
    assert res.exit_code == 0, res.output


# ------------------------------------------------------------------ --param x=none
@pytest.mark.parametrize(("method", "param"), [("mdav", "scaling"), ("framework", "class_mode")])
def test_none_is_the_text_none_where_that_is_a_choice(tmp_path: Path, method: str, param: str) -> None:
    rng = np.random.default_rng(0)
    n = 80
    x = pd.DataFrame({"a": rng.normal(10, 2, n).round(3), "b": rng.normal(0, 1, n).round(3),
                      "label": rng.choice(["yes", "no"], n)})
    px = tmp_path / "x.csv"
    x.to_csv(px, index=False)
    out = tmp_path / "z.csv"
    res = runner.invoke(app, ["anonymize", *GATE_OFF, str(px), "--class", "label", "-m", method, "-p", f"{param}=none",
                              "-o", str(out), "--seed", "3", "--experiment-seed"])
    assert res.exit_code == 0, res.output
    prov = json.loads((tmp_path / "z.provenance.json").read_text())
    assert prov["technique"]["parameters"][param] == "none"
    if method == "framework":  # class_mode none: the class is released as it was (rows paired by the private log)
        z, pos = in_input_order(pd.read_csv(out), read_private(out))
        assert z["label"].tolist() == x["label"].iloc[pos].tolist()


def test_standardize_none_for_sse_sst_and_ddr(tmp_path: Path) -> None:
    from ppdm.metrics import ddr, sse_sst

    rng = np.random.default_rng(0)
    x = pd.DataFrame({"a": rng.normal(0, 1, 50), "b": rng.normal(5, 3, 50), "label": ["p", "q"] * 25})
    z = x.copy()
    z[["a", "b"]] += rng.normal(0, 0.2, (50, 2))
    px, pz = _files(tmp_path, x, z)
    got = _evaluate(px, pz, "sse_sst,ddr", "-p", "standardize=none")
    assert got["sse_sst"]["value"] == pytest.approx(sse_sst(x[["a", "b"]], z[["a", "b"]], standardize="none").value)
    assert got["sse_sst"]["details"]["standardize"] == "none"
    assert got["ddr"]["value"] == pytest.approx(ddr(x[["a", "b"]], z[["a", "b"]], standardize="none").value)
    # in Python, None says "no standardisation" too
    assert sse_sst(x[["a", "b"]], z[["a", "b"]], standardize=None).standardize == "none"  # type: ignore[arg-type]


# ------------------------------------------------------------------ signals during a write
_SLOW_WRITER = """
import pathlib, sys, time
import pandas as pd

real = pd.DataFrame.to_csv
ready = pathlib.Path(sys.argv[1])


def slow(self, path=None, *a, **k):
    # write the temporary file, then wait there for the signal: the moment a run is stopped mid-write
    out = real(self, path, *a, **k)
    if path is not None and str(path).endswith(".tmp"):
        ready.write_text("writing")
        time.sleep(120)
    return out


pd.DataFrame.to_csv = slow
from ppdm.cli.app import main

sys.argv = ["ppdm", *sys.argv[2:]]
main()
"""


@pytest.mark.parametrize(("signame", "code"), [("SIGTERM", 143), ("SIGINT", 130)])
def test_a_signal_during_the_write_leaves_no_temporary_file(tmp_path: Path, signame: str, code: int) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    root = Path(__file__).resolve().parent.parent
    folder = tmp_path / "work"
    folder.mkdir()
    rng = np.random.default_rng(0)
    pd.DataFrame({"a": rng.normal(0, 1, 200).round(3), "b": rng.integers(0, 9, 200),
                  "label": rng.choice(["p", "q"], 200)}).to_csv(folder / "x.csv", index=False)
    script, ready = tmp_path / "slow.py", tmp_path / "ready"
    script.write_text(_SLOW_WRITER)
    env = {**os.environ, "PYTHONPATH": str(root) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen([sys.executable, str(script), str(ready), "anonymize", str(folder / "x.csv"),
                             *GATE_OFF, "--class", "label", "-m", "uniform-noise", "-o", str(folder / "z.csv"), "--seed", "1", "--experiment-seed"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            # a test run started in the background inherits SIGINT ignored (as a shell
                            # sets up background jobs), and so would ppdm: give the run a user's Ctrl-C
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 120
        while not ready.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the write never started"
            time.sleep(0.05)
        hidden = [p.name for p in folder.iterdir() if p.name.startswith(".")]
        assert any(h.endswith(".tmp") for h in hidden), hidden  # the moment is mid-write
        proc.send_signal(getattr(signal, signame))
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, err
    assert f"interrupted by {signame}" in err and "Traceback" not in err
    assert sorted(p.name for p in folder.iterdir()) == ["x.csv"]  # no release, no sidecar, no .tmp


def test_temporaries_in_use_are_removed_on_demand(tmp_path: Path) -> None:
    from ppdm.data.atomic import atomic_path, live_temporaries, remove_temporaries
    from ppdm.data.partitions import DatasetWriter

    with atomic_path(tmp_path / "a.csv") as tmp:
        tmp.write_text("half")
        writer = DatasetWriter(tmp_path / "ds")
        (writer.tmp / "part.00000.parquet").write_text("half")
        assert set(live_temporaries()) == {tmp, writer.tmp}
        assert set(remove_temporaries()) == {tmp, writer.tmp}
        assert not tmp.exists() and not writer.tmp.exists() and live_temporaries() == []
        tmp.write_text("again")  # the block goes on: the rename still works, nothing is lost
    assert (tmp_path / "a.csv").read_text() == "again" and sorted(p.name for p in tmp_path.iterdir()) == ["a.csv"]


# ------------------------------------------------------------------ decimal commas and the parser's words
def _write(p: Path, text: str) -> Path:
    p.write_text(text)
    return p


def _semicolon_decimal_comma(p: Path, n: int = 60) -> Path:
    rng = np.random.default_rng(2)
    lines = ["age;income;label"]
    for _ in range(n):
        lines.append(f"{rng.integers(18, 90)};{rng.normal(30, 5):.2f}".replace(".", ",") + f";{rng.choice(['a', 'b'])}")
    return _write(p, "\n".join(lines) + "\n")


def test_a_semicolon_file_reads_decimal_commas_as_numbers(tmp_path: Path) -> None:
    from ppdm.data.io import read_table

    src = _semicolon_decimal_comma(tmp_path / "x.csv")
    df = read_table(src, sep=";")
    assert pd.api.types.is_float_dtype(df["income"]) and df["income"].nunique() > 40
    raw = [line.split(";")[1] for line in src.read_text().splitlines()[1:]]
    assert df["income"].tolist() == [float(v.replace(",", ".")) for v in raw]
    assert pd.api.types.is_integer_dtype(df["age"])
    # "30,83" is a number for every command: schema, anonymize, and evaluate of the release
    res = runner.invoke(app, ["schema", str(src), "--sep", ";", "--class", "label", "-o", str(tmp_path / "s.json")])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "s.json").read_text())["_columns"]["income"]["type"] == "numeric"
    res = runner.invoke(app, ["anonymize", *GATE_OFF, str(src), "--sep", ";", "--class", "label", "-m", "gaussian-noise",
                              "-p", "level=0.5", "-o", str(tmp_path / "z.csv"), "--seed", "1", "--experiment-seed"])
    assert res.exit_code == 0, res.output
    z = pd.read_csv(tmp_path / "z.csv")
    assert pd.api.types.is_float_dtype(z["income"])  # written with a decimal point


def test_without_the_separator_a_decimal_comma_file_names_it(tmp_path: Path) -> None:
    src = _semicolon_decimal_comma(tmp_path / "x.csv")
    res = runner.invoke(app, ["schema", str(src), "-o", str(tmp_path / "s.json")])
    assert res.exit_code == 2
    assert "--sep ';'" in res.output and "Traceback" not in res.output and "C error" not in res.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.csv"]


def test_quoted_decimal_commas_are_refused_naming_decimal(tmp_path: Path) -> None:
    from ppdm.data.io import read_table
    from ppdm.errors import PPDMError

    src = _write(tmp_path / "x.csv", 'a,b,label\n"30,83",1,yes\n"31,2",2,no\n"1,5",3,no\n')
    res = runner.invoke(app, ["schema", str(src), "-o", str(tmp_path / "s.json")])
    assert res.exit_code == 2 and "--decimal ," in res.output and "'a'" in res.output, res.output
    tab = _write(tmp_path / "t.csv", "a\tlabel\n30,83\tyes\n31,2\tno\n")
    with pytest.raises(PPDMError, match=r"decimal=','"):
        read_table(tab, sep="\t")
    assert read_table(tab, sep="\t", decimal=",")["a"].tolist() == [30.83, 31.2]
    assert read_table(tab, sep="\t", decimal=".")["a"].tolist() == ["30,83", "31,2"]  # text, as asked
    # declared text, a column keeps its commas whatever the separator
    assert read_table(tab, sep="\t", categorical=["a"])["a"].tolist() == ["30,83", "31,2"]
    with pytest.raises(PPDMError, match="another separator"):
        read_table(src, decimal=",")
    res = runner.invoke(app, ["schema", str(tab), "--sep", "tab", "--decimal", ",", "-o", str(tmp_path / "s.json")])
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize(("text", "needle"), [
    ("a\n1\n2,3\n", "line 3 has 2 fields, the header has 1"),
    ("a,b,label\n1,2,yes\n3,4,no,5\n5,6,no\n", "line 3 has 4 fields, the header has 3"),
    ('a,b,label\n1,"2,yes\n3,4,no\n', "a quote opened near line 2 is never closed"),
])
def test_the_parsers_messages_are_put_in_ppdms_words(tmp_path: Path, text: str, needle: str) -> None:
    src = _write(tmp_path / "x.csv", text)
    for args in (["schema", str(src), "-o", str(tmp_path / "s.json")],
                 ["anonymize", *GATE_OFF, str(src), "-m", "uniform-noise", "-o", str(tmp_path / "z.csv")]):
        res = runner.invoke(app, args)
        out = res.output.strip()
        assert res.exit_code == 2 and len(out.splitlines()) == 1, out
        assert needle in out and "C error" not in out and "tokenizing" not in out, out


def test_binary_input_is_named_as_such(tmp_path: Path) -> None:
    src = tmp_path / "x.csv"
    src.write_bytes(bytes(range(256)) * 20)
    res = runner.invoke(app, ["schema", str(src), "-o", str(tmp_path / "s.json")])
    assert res.exit_code == 2 and "is not a text table: it holds binary data" in res.output, res.output


# ------------------------------------------------------------------ a misspelt technique
def test_a_misspelt_technique_is_named_before_the_table_is_read(tmp_path: Path) -> None:
    src = _write(tmp_path / "x.csv", "a,b,label\n1,,yes\n2,3,no\n")  # a missing cell: read, it would be refused
    res = runner.invoke(app, ["anonymize", *GATE_OFF, str(src), "--class", "label", "-m", "mdva", "-o", str(tmp_path / "z.csv")])
    assert res.exit_code == 2
    assert res.output.strip() == "error: unknown technique 'mdva'; did you mean 'mdav'?"
    res = runner.invoke(app, ["evaluate", "-x", str(src), "-z", str(src), "--measures", "k_anonimity"])
    assert res.exit_code == 2 and "did you mean 'k_anonymity'?" in res.output


# ------------------------------------------------------------------ identifiers: values, not names alone
def _spambase_like(n: int = 200) -> pd.DataFrame:
    """spambase's layout: word frequencies in percent (mostly 0, some 0.1–5), run lengths, the class."""
    rng = np.random.default_rng(7)

    def freq() -> np.ndarray:
        return np.where(rng.random(n) < 0.7, 0.0, rng.gamma(1.2, 0.6, n).round(2))

    return pd.DataFrame({"word_freq_make": freq(), "word_freq_mail": freq(), "word_freq_email": freq(),
                         "capital_run_length_total": rng.integers(1, 2000, n),
                         "spam": rng.choice([0, 1], n)})


def test_frequencies_named_mail_are_not_identifiers(tmp_path: Path) -> None:
    from ppdm.data.roles import identifier_reason, suspect_identifiers

    df = _spambase_like()
    assert suspect_identifiers(df) == []
    assert identifier_reason(df["word_freq_email"]) is None
    # the same names over labels are still identifiers: e-mail addresses, whole-number ids
    assert identifier_reason(pd.Series([f"u{i}@x.org" for i in range(200)], name="word_freq_email")) is not None
    assert identifier_reason(pd.Series(np.arange(200) % 50, name="mail_id")) is not None
    assert identifier_reason(pd.Series(np.arange(5) * 1.0, name="phone")) is not None  # whole numbers: labels
    src = tmp_path / "spam.csv"
    df.to_csv(src, index=False)
    res = runner.invoke(app, ["anonymize", *GATE_OFF, str(src), "--class", "spam", "-m", "gaussian-noise", "-p", "level=0.3",
                              "-o", str(tmp_path / "z.csv"), "--seed", "1", "--experiment-seed"])
    assert res.exit_code == 0, res.output
    df.assign(customer_id=np.arange(200) % 90).to_csv(src, index=False)
    res = runner.invoke(app, ["anonymize", *GATE_OFF, str(src), "--class", "spam", "-m", "gaussian-noise", "-p", "level=0.3",
                              "-o", str(tmp_path / "z2.csv"), "--seed", "1", "--experiment-seed"])
    assert res.exit_code == 2 and "'customer_id'" in res.output


# ------------------------------------------------------------------ messages a user can act on
def _continuous_class(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    p = tmp_path / "cont.csv"
    pd.DataFrame({"a": rng.normal(0, 1, 200), "b": rng.normal(0, 1, 200),
                  "y": rng.normal(0, 1, 200).round(4)}).to_csv(p, index=False)
    return p


def test_a_continuous_class_is_named_in_plain_words(tmp_path: Path) -> None:
    src = _continuous_class(tmp_path)
    for args in (["rules", str(src), "--class", "y"], ["tree", str(src), "--class", "y"],
                 ["anonymize", *GATE_OFF, str(src), "--class", "y", "-m", "framework", "-o", str(tmp_path / "z.csv")]):
        res = runner.invoke(app, args)
        out = res.output.strip()
        assert res.exit_code == 2 and len(out.splitlines()) == 1, out
        assert "the class column 'y' holds continuous numbers" in out and "Unknown label type" not in out, out
    got = _evaluate_any(src, src, "y", "prediction_accuracy,auc,f_measure,rule_accuracy")
    for name, m in got.items():
        assert m["status"] == "skipped" and "the class column 'y' holds continuous numbers" in m["reason"], (name, m)


def _evaluate_any(px: Path, pz: Path, cls: str, measures: str) -> dict[str, Any]:
    res = runner.invoke(app, ["evaluate", "-x", str(px), "-z", str(pz), "--class", cls, "--measures", measures,
                              "--json", "--seed", "1", "--pairing", "position"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)["measures"]


def test_random_substitution_without_gamma_uses_the_papers_protective_gamma(tmp_path: Path) -> None:
    """No gamma: γ = 5, the protective end of Dowd et al.'s 5 ≤ γ ≤ 12 (001 §6); one of rho1/rho2
    alone is refused, naming the other. Worked by hand: column a has 200 distinct values, so 10
    bins; a value keeps its bin with probability γ/(γ+N−1) = 5/14, moves to each other bin with 1/14."""
    src = _continuous_class(tmp_path)
    res = runner.invoke(app, ["anonymize", *GATE_OFF, str(src), "-m", "random-substitution", "-o", str(tmp_path / "z.csv")])
    assert res.exit_code == 0, res.output
    from ppdm.anonymize.random_substitution import DEFAULT_GAMMA, RandomSubstitution
    from ppdm.errors import ParameterError

    assert DEFAULT_GAMMA == 5.0
    t = RandomSubstitution().fit(pd.read_csv(src))
    m = t.matrices_["a"]
    assert m.shape == (10, 10)
    assert m[0, 0] == pytest.approx(5 / 14) and m[1, 0] == pytest.approx(1 / 14)
    assert t.keep_probabilities()["a"] == pytest.approx(5 / 14)
    with pytest.raises(ParameterError, match=r"rho1 needs rho2.*rho2=0.5 \(CLI: --param rho2=0.5\)"):
        RandomSubstitution(rho1=0.05).fit(pd.DataFrame({"a": [1.0, 2.0, 3.0]}))


# ------------------------------------------------------------------ IL metrics: the paper's form and a robust one
def test_il_metrics_robust_form_by_hand() -> None:
    from ppdm.metrics import il_metrics

    x = pd.DataFrame({"a": [1.0, -1.0, 3.0, -3.0]})  # mean 0, sd √(20/3)
    z = pd.DataFrame({"a": [2.0, -1.0, 3.0, -3.0]})  # one cell +1: mean 0.25, variance 22.75/3
    s = math.sqrt(20 / 3)
    dv = abs(20 / 3 - 22.75 / 3) / (20 / 3)  # IL_V = IL_S = 0.1375 (one attribute: the variance)
    paper = il_metrics(x, z)
    # paper: IL_X = (1/1)/4, IL_m has a zero denominator (left out), IL_V, IL_S; IL_R dropped (p = 1)
    assert paper.value == pytest.approx(100 * (0.25 + dv + dv) / 3) and paper.excluded["il_m"] == 1
    robust = il_metrics(x, z, form="robust")
    assert robust.robust_components["il_x"] == pytest.approx(1 / s / 4)
    assert robust.robust_components["il_m"] == pytest.approx(0.25 / s)
    assert robust.value == pytest.approx(100 * (1 / s / 4 + 0.25 / s + dv + dv) / 4)
    assert robust.paper_value == pytest.approx(paper.value) and paper.robust_value == pytest.approx(robust.value)


def test_il_metrics_robust_form_is_the_papers_away_from_zero_and_sane_near_it() -> None:
    from ppdm.metrics import il_metrics

    rng = np.random.default_rng(0)
    x = pd.DataFrame({"a": rng.normal(100, 3, 400), "b": rng.normal(50, 2, 400)})
    z = x + rng.normal(0, 0.5, x.shape)
    # every value, mean and variance at least the spread: both forms agree (a covariance between two
    # attributes never is, |v_ij| ≤ s_i·s_j, so the robust IL_V is on the correlations' scale)
    far = il_metrics(x[["a"]], z[["a"]], form="robust")
    assert far.robust_value == pytest.approx(far.paper_value, rel=1e-12)
    assert far.robust_components["il_v"] == far.il_v
    # an attribute centred near 0 (shuttle's case): the paper's relative differences explode
    xc = x - x.mean() + 1e-9
    zc = xc + rng.normal(0, 0.5, x.shape)
    near = il_metrics(xc, zc, form="robust")
    assert near.paper_value > 1000 and near.robust_value < 100 and near.value == near.robust_value


def test_evaluate_reports_the_robust_il_metrics_with_the_papers_beside(tmp_path: Path) -> None:
    from ppdm.metrics import il_metrics

    rng = np.random.default_rng(1)
    x = pd.DataFrame({"a": rng.normal(0, 1, 300), "b": rng.normal(0, 2, 300), "label": rng.choice(["p", "q"], 300)})
    z = x.copy()
    z[["a", "b"]] += rng.normal(0, 0.3, (300, 2))
    px, pz = _files(tmp_path, x, z)
    m = _evaluate(px, pz, "il_metrics")["il_metrics"]
    both = il_metrics(x[["a", "b"]], z[["a", "b"]], form="robust")
    assert m["value"] == pytest.approx(both.robust_value) and m["details"]["form"] == "robust"
    assert m["details"]["paper_value"] == pytest.approx(both.paper_value)
    paper = _evaluate(px, pz, "il_metrics", "-p", "il_form=paper")["il_metrics"]
    assert paper["value"] == pytest.approx(both.paper_value)


def test_il_metrics_robust_form_out_of_core_is_exact() -> None:
    import dask.dataframe as dd

    from ppdm.metrics import il_metrics

    rng = np.random.default_rng(2)
    x = pd.DataFrame({"a": rng.normal(0, 1, 500), "b": rng.normal(1e-3, 2, 500)})
    z = x + rng.normal(0, 0.3, x.shape)
    z.iloc[7, 0] = np.nan  # a missing cell is left out of the comparison of that cell
    mem = il_metrics(x, z, form="robust")
    lazy = il_metrics(dd.from_pandas(x, npartitions=4), dd.from_pandas(z, npartitions=4), form="robust")
    assert lazy.value == pytest.approx(mem.value, rel=1e-9)
    assert lazy.paper_value == pytest.approx(mem.paper_value, rel=1e-9)


# ------------------------------------------------------------------ codes read as numbers
_ZIPS = ["01562", "02139", "01002", "10001", "02115", "01609", "94110", "02134"]


def _codes_csv(tmp_path: Path, n: int = 120) -> Path:
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"zip": rng.choice(_ZIPS, n), "age": rng.integers(18, 90, n),
                       "income": rng.normal(30000, 5000, n).round(2), "label": rng.choice(["a", "b"], n)})
    p = tmp_path / "x.csv"
    df.to_csv(p, index=False)
    return p


def test_release_warns_about_codes_read_as_numbers(tmp_path: Path) -> None:
    from ppdm.anonymize import make_technique
    from ppdm.data import read_table
    from ppdm.experiments.release import release

    src = _codes_csv(tmp_path)
    with_pandas = pd.read_csv(src)  # the trap: zip becomes an integer, 01562 → 1562
    assert pd.api.types.is_integer_dtype(with_pandas["zip"])
    with pytest.warns(UserWarning, match=r"column 'zip' is named like a code \('zip'\) but holds numbers, and "
                                         r"\d+ of its 120 values have fewer than 5 digits"):
        rel = release(with_pandas, make_technique("mdav", class_column="label", params={"k": 5}))
    assert any("named like a code" in w for w in rel.warnings)
    assert any("named like a code" in w for w in rel.private["warnings"])  # kept with the owner
    # read with the typed reader, the codes stay text: no warning, and MDAV leaves them alone
    typed = read_table(src)
    assert typed["zip"].tolist() == pd.read_csv(src, dtype={"zip": str})["zip"].tolist()
    import warnings

    from ppdm.experiments.release import ReleaseWarning

    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        # the release gate rightly warns that zip passes untouched; no other warning is expected
        warnings.simplefilter("ignore", ReleaseWarning)
        rel = release(typed, make_technique("mdav", class_column="label", params={"k": 5}),
                      quasi_identifiers="zip", allow_untouched_keys=True)
    assert set(rel.data["zip"]) <= set(_ZIPS)


def test_the_readme_library_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import re
    import sys

    sys.path.insert(0, str(Path(__file__).parent))
    from test_cli_small_things import _survey

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    section = readme.split("## Library", 1)[1]
    block = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert "read_table" in block and "pd.read_csv" not in block
    _survey().to_csv(tmp_path / "survey.csv", index=False)
    monkeypatch.chdir(tmp_path)
    from ppdm.experiments.release import ReleaseWarning

    # the example's MDAV leaves the categorical keys as they are, and the release says so
    with pytest.warns(ReleaseWarning, match="pass into the release untouched"):
        exec(compile(block, "README.md", "exec"), {})
    assert (tmp_path / "z.csv").exists() and (tmp_path / "z.provenance.json").exists()


def test_a_release_value_the_original_cannot_hold_is_named(tmp_path: Path) -> None:
    x = _write(tmp_path / "x.csv", "a,b,label\n1,2.5,yes\n2,3.5,no\n3,1.5,no\n")
    z = _write(tmp_path / "z.csv", "a,b,label\n1,2.5,yes\nabc,3.5,no\n3,1.5,no\n")
    res = runner.invoke(app, ["evaluate", "-x", str(x), "-z", str(z), "--class", "label", "--measures", "il1s"])
    out = res.output.strip()
    assert res.exit_code == 2 and len(out.splitlines()) == 1, out
    assert "holds 'abc' at row 1" in out and "Unable to parse" not in out and "position" not in out, out


@pytest.mark.parametrize("name", ["il1s", "il1s_mean", "il_metrics", "correlation_difference", "ddr", "idr",
                                  "il_dr_score", "sse_sst", "spectral_filtering"])
def test_numeric_measures_near_1e200_equal_those_of_the_scaled_table(tmp_path: Path, name: str) -> None:
    """Values near 1e200 used to give 0.0 as "computed" (a spread that overflowed to infinity
    made every difference vanish): each numeric measure now gives the value of the same table
    scaled by a power of two, which these measures do not depend on."""
    x, z = _huge_table()
    cols = list("abcd")
    xs, zs = x.copy(), z.copy()
    xs[cols], zs[cols] = x[cols] / 2.0**664, z[cols] / 2.0**664
    big = _evaluate(*_files(tmp_path, x, z), name)[name]
    (tmp_path / "s").mkdir()
    small = _evaluate(*_files(tmp_path / "s", xs, zs), name)[name]
    assert big["status"] == small["status"] == "computed", (big, small)
    assert big["value"] == pytest.approx(small["value"], rel=1e-9, abs=1e-12)
