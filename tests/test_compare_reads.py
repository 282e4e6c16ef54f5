"""``compare`` that reads right (issue #30 item 5): IL1s per attribute in sd units, a numeric loss
"not applicable" to a setting that changes no number, a front without releases judged high, and
threshold lines on the map."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from ppdm.cli.app import app
from ppdm.data.schema import Schema
from ppdm.experiments.compare import (
    NOT_APPLICABLE_NUMBERS,
    ComparisonResult,
    best_releases,
    compare,
    dataset_summary,
    measure_header,
    params_to_json,
)
from ppdm.report.html import render_html
from ppdm.report.plots import risk_utility_figure

# noise without declared bounds warns that its clipping range came from x: not what these tests check
pytestmark = [pytest.mark.filterwarnings("ignore::ppdm.anonymize._domain.BoundsFromDataWarning")]

runner = CliRunner()


def _hospital(n: int = 40) -> tuple[pd.DataFrame, Schema]:
    # days and dollars: an unscaled IL1s would add the two units up
    rng = np.random.default_rng(0)
    x = pd.DataFrame({"stay_days": rng.integers(1, 30, n).astype(float),
                      "charges": rng.normal(15_000, 4_000, n).round(2),
                      "insurance": rng.choice(["medicare", "private", "none"], n),
                      "y": rng.choice(["a", "b"], n)})
    return x, Schema(numeric=["stay_days", "charges"], categorical=["insurance"], class_column="y")


def test_il1s_is_compared_per_attribute_in_sd_units() -> None:
    x, schema = _hospital()
    r = compare(x, schema, ["gaussian-noise:level=0.5"], "il1s,il1s_mean", cv=2, random_state=1)
    s = r.summary().set_index(["label", "measure"])["mean"]
    lab = "gaussian-noise(level=0.5)"
    # the mean form: Σ_j Σ_i |x_ij − z_ij| / (√2·S_j) / (n·m), each value's distance in its attribute's
    # spread, so days and dollars weigh alike; it is il1s_mean exactly, not a sum over the records
    assert s[(lab, "il1s")] == s[(lab, "il1s_mean")] and 0 < s[(lab, "il1s")] < 5
    assert r.meta["il1s_form"] == "mean" and measure_header("il1s", r.meta) == "il1s (sd units)"
    html = render_html(r, plots=False)
    assert "<th>il1s (sd units)</th>" in html and "each value's distance from its original divided by √2" in html
    # the sum form, asked for, is the same distances summed over the records (20 per fold × 2 attributes)
    r2 = compare(x, schema, ["gaussian-noise:level=0.5"], "il1s,il1s_mean", cv=2, random_state=1,
                 measure_options={"il1s.form": "sum"})
    s2 = r2.summary().set_index(["label", "measure"])["mean"]
    assert abs(s2[(lab, "il1s")] - 40 * s2[(lab, "il1s_mean")]) < 1e-9
    assert measure_header("il1s", r2.meta) == "il1s (sd units, summed over records)"


def test_a_setting_that_changes_no_number_gets_not_applicable_not_best() -> None:
    x, schema = _hospital()
    r = compare(x, schema, ["pram", "gaussian-noise:level=0.5"], "il1s,il_metrics", cv=2, random_state=1)
    s = r.summary().set_index(["label", "measure"])["mean"]
    # pram perturbs insurance (and changes the data) but no number: its 0 is no merit
    assert next(t for t in r.meta["techniques"] if t["label"] == "pram")["changes_data"]
    assert np.isnan(s[("pram", "il1s")]) and np.isnan(s[("pram", "il_metrics")])
    assert {(n["label"], n["measure"]) for n in r.meta["not_applicable"]} == {("pram", "il1s"), ("pram", "il_metrics")}
    assert best_releases(r)["il1s"].label != "pram"
    html = render_html(r, plots=False)
    row = re.search(r"<tr><td>pram</td>(.*?)</tr>", html[html.index('id="summary-table"'):], re.S).group(1)
    assert row.count(NOT_APPLICABLE_NUMBERS) == 2 and " best" not in row
    # the original (x itself) keeps its 0: the reference, not a setting
    assert s[("original", "il1s")] == 0.0


def test_the_cli_table_states_the_unit_and_not_applicable(tmp_path) -> None:
    x, _ = _hospital()
    path = tmp_path / "h.csv"
    x.to_csv(path, index=False)
    res = runner.invoke(app, ["compare", str(path), "--class", "y", "-t", "pram", "-t", "gaussian-noise:level=0.5",
                              "--measures", "il1s", "--cv", "2", "--seed", "1"])
    assert res.exit_code == 0, res.output
    out = " ".join(res.output.split())
    assert "il1s (sd units)" in out or "il1s (sd" in out
    assert "n/a (changes no numbers)" in out and "0 (best)" not in out


def _front_result() -> ComparisonResult:
    # ddr (risk, threshold 0.05) against prediction_accuracy (utility lost, threshold 0.02):
    # A (0.01, 0.05) and C (0.03, 0.01) meet ddr; B (0.20, 0.00) is judged high risk. Without the
    # verdict B would be on the front (nobody loses less utility); with it the front is C, A... C
    # beats A on utility, A beats C on risk: both stay.
    vals = {"original": (1.0, 0.0), "A": (0.01, 0.05), "B": (0.20, 0.0), "C": (0.03, 0.01)}
    rows = []
    for lab, (ddr, pa) in vals.items():
        tech = "original" if lab == "original" else "noise"
        for f in range(3):
            rows.append((tech, lab, "{}", f, 0, "ddr", ddr))
            rows.append((tech, lab, "{}", f, 0, "prediction_accuracy", pa))
    data = pd.DataFrame(rows, columns=["technique", "label", "params", "fold", "repeat", "measure", "value"])
    x = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "y": ["p", "q", "p", "p"]})
    meta = {"cv": 3, "repeats": 1, "random_state": 0, "splitter": "StratifiedKFold", "fold_sizes": [2, 1, 1],
            "dataset": dataset_summary(x, Schema.infer(x, "y"), "toy.csv"),
            "techniques": [{"technique": "original" if lab == "original" else "noise", "label": lab,
                            "params": params_to_json({}), "changes_data": lab != "original"} for lab in vals],
            "measures": ["ddr", "prediction_accuracy"]}
    return ComparisonResult(data, meta)


def test_the_front_leaves_out_releases_judged_high_and_the_map_draws_the_thresholds() -> None:
    html = render_html(_front_result())
    verdicts = {m.group(1): m.group(2) for m in re.finditer(
        r"<tr><td>(\w+)</td>.*?<td>(yes|no[^<]*|—)</td></tr>", html[:html.index('id="risk-utility"')], re.S)}
    assert verdicts["B"] == "no (risk judged high)"
    assert verdicts["A"] == "yes" and verdicts["C"] == "yes"
    caption = " ".join(re.sub(r"<[^>]+>", " ", html[html.index('id="risk-utility"'):html.index("</figure>")]).split())
    assert "The dashed line joins the front: C, A." in caption or "The dashed line joins the front: A, C." in caption
    assert "threshold of ddr (0.05)" in caption and "that of prediction_accuracy (0.02)" in caption
    assert "Greyed out, and never on the front, as their risk is judged high: B." in caption


def test_the_map_figure_draws_threshold_lines_and_greys_a_high_release() -> None:
    pts = [{"label": "A", "risk": 0.01, "utility": 0.05}, {"label": "B", "risk": 0.2, "utility": 0.0, "high": True}]
    fig = risk_utility_figure(pts, risk="ddr", risk_direction="lower", utility="prediction_accuracy",
                              utility_direction="lower", front=["A"], risk_threshold=0.05, utility_threshold=0.02)
    ax = fig.axes[0]
    xs = [tuple(line.get_xdata()) for line in ax.lines]
    ys = [tuple(line.get_ydata()) for line in ax.lines]
    assert (0.05, 0.05) in xs and (0.02, 0.02) in ys
    labels = ax.get_legend_handles_labels()[1]
    assert "B (risk judged high: not on the front)" in labels and "ddr threshold 0.05" in labels
