"""HTML reports and plots (ppdm.report) on hand-built comparison and evaluation results."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest

from ppdm.experiments.compare import (
    ComparisonResult,
    best_releases,
    dataset_summary,
    measure_info,
    params_to_json,
)
from ppdm.metrics.base import MeasureResult
from ppdm.report.html import fmt, render_evaluation_html, render_html, write_evaluation_html
from ppdm.report.plots import correlation_heatmap, sweep_series

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


class _Page(HTMLParser):
    """Collects tables (by id) as lists of row texts, images and headings."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.images: list[dict[str, str]] = []
        self.headings: list[str] = []
        self._table: str | None = None
        self._cell: list[str] | None = None
        self._row: list[str] | None = None
        self._heading: list[str] | None = None
        self.bold_cells: list[str] = []
        self._bold = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self._table = a.get("id") or f"table{len(self.tables)}"
            self.tables[self._table] = []
        elif tag == "tr" and self._table is not None:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
            self._bold = "best" in (a.get("class") or "").split()
        elif tag == "img":
            self.images.append(a)
        elif tag in ("h1", "h2", "h3"):
            self._heading = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            text = "".join(self._cell).strip()
            self._row.append(text)
            if self._bold:
                self.bold_cells.append(text)
            self._cell = None
        elif tag == "tr" and self._row is not None and self._table is not None:
            self.tables[self._table].append(self._row)
            self._row = None
        elif tag == "table":
            self._table = None
        elif tag in ("h1", "h2", "h3") and self._heading is not None:
            self.headings.append("".join(self._heading).strip())
            self._heading = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        if self._heading is not None:
            self._heading.append(data)


def _parse(html: str) -> _Page:
    p = _Page()
    p.feed(html)
    p.close()
    return p


def _result() -> ComparisonResult:
    """original + a sweep of 'uniform-noise' over level (3 values) + one 'gadp', 3 folds, 2 repeats."""
    rng = np.random.default_rng(0)
    specs = [("original", "original", {})]
    specs += [("uniform-noise", f"uniform-noise(level={v})", {"level": v}) for v in (0.0, 0.1, 0.2)]
    specs += [("gadp", "gadp <b>", {})]
    rows = []
    for tech, label, params in specs:
        level = params.get("level", 0.05 if tech == "gadp" else 0.0)
        for f in range(3):
            for r in range(1 if tech == "original" else 2):
                noise = rng.normal(0, 0.005)
                rows.append((tech, label, params_to_json(params), f, r, "prediction_accuracy", 0.9 - level + noise))
                rows.append((tech, label, params_to_json(params), f, r, "rule_support_distance", level * 2 + noise))
                rows.append((tech, label, params_to_json(params), f, r, "custom_thing", float(f)))
    data = pd.DataFrame(rows, columns=["technique", "label", "params", "fold", "repeat", "measure", "value"])
    x = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "b": ["u", "v", "u", "v"], "y": ["p", "q", "p", "p"]})
    from ppdm.data.schema import Schema

    meta = {
        "cv": 3, "repeats": 2, "random_state": 5, "splitter": "StratifiedKFold", "fold_sizes": [2, 1, 1],
        "dataset": dataset_summary(x, Schema.infer(x, "y"), "toy.csv"),
        "techniques": [{"technique": t, "label": lab, "params": params_to_json(p),
                        # noise of level 0 leaves the table as it is
                        "changes_data": t != "original" and p.get("level") != 0.0}
                       for t, lab, p in specs],
        "measures": ["prediction_accuracy", "rule_support_distance", "custom_thing"],
        "measure_info": {"custom_thing": {"kind": "risk", "description": "a measure known only by its spec"}},
        "notes": ["the rarest class has 1 record(s)"],
    }
    return ComparisonResult(data, meta)


def test_comparison_report_parses_and_holds_every_section():
    r = _result()
    html = render_html(r, title="Toy comparison")
    page = _parse(html)
    assert page.headings[0] == "Toy comparison"
    for tid in ("dataset", "techniques-table", "measures-table", "summary-table", "correlation-table"):
        assert tid in page.tables, tid
    ds = dict(row for row in page.tables["dataset"] if len(row) == 2)
    assert ds["rows"] == "4" and ds["class"] == "y" and ds["numeric attributes (1)"] == "a"
    # techniques with their parameters, in order, the label escaped (not markup)
    techs = page.tables["techniques-table"][1:]
    assert [t[0] for t in techs] == r.labels
    assert techs[2][2] == "level=0.1"
    assert [t[3] for t in techs] == ["no (reference)", "no", "yes", "yes", "yes"]
    assert "gadp <b>" in [t[0] for t in techs] and "gadp &lt;b&gt;" in html
    # explanation columns: direction, range and meaning per measure, from the registry
    meas = {row[0]: row for row in page.tables["measures-table"][1:]}
    assert meas["prediction_accuracy"][2] == "lower is better"
    assert meas["prediction_accuracy"][3] == "-1 to 1"
    assert meas["rule_support_distance"][2] == "lower is better"
    assert meas["custom_thing"][1:] == ["risk", "neither direction is better", "unbounded",
                                        "a measure known only by its spec"]
    # summary: mean ± sd per technique × measure
    summ = r.summary()
    head, *body = page.tables["summary-table"]
    assert head == ["technique", "prediction_accuracy", "rule_support_distance", "custom_thing"]
    row = next(b for b in body if b[0] == "uniform-noise(level=0.1)")
    want = summ[(summ.label == "uniform-noise(level=0.1)") & (summ.measure == "prediction_accuracy")].iloc[0]
    assert row[1] == f"{fmt(want['mean'])} ± {fmt(want['std'], 3)}"
    # the best release per measure is marked: prediction_accuracy is the loss against x (lower
    # is better), lowest for the strongest noise; for rule_support_distance noise of level 0
    # would win, but it changes nothing, so gadp is best
    best_acc = next(b for b in body if b[0] == "uniform-noise(level=0.2)")[1]
    best_rsd = next(b for b in body if b[0] == "gadp <b>")[2]
    assert page.bold_cells.count(best_acc) == 1 and best_rsd in page.bold_cells
    assert len([c for c in page.bold_cells if "±" in c]) == 2  # custom_thing has no direction
    best = {row[0]: row for row in page.tables["best-table"][1:]}
    assert best["prediction_accuracy"][2] == "uniform-noise(level=0.2)"
    assert best["rule_support_distance"][2] == "gadp <b>"
    assert best["custom_thing"][2] == "none"
    # correlation table: 3 measures
    corr = page.tables["correlation-table"]
    assert corr[0][1:] == r.measures and len(corr) == 4
    assert "the rarest class has 1 record(s)" in html


def test_comparison_report_embeds_png_plots():
    page = _parse(render_html(_result()))
    # one figure of small multiples for the swept level; no map (no risk measure with a direction);
    # no per-measure bars (the summary table holds those numbers) and no heat map (the table is coloured)
    assert [img["alt"] for img in page.images] == ["every measure against level"]
    for img in page.images:
        src = img["src"]
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1]).startswith(PNG_MAGIC)
        assert img["alt"]
    text_only = _parse(render_html(_result(), plots=False))
    assert text_only.images == []


def test_comparison_report_is_deterministic():
    assert render_html(_result(), title="t") == render_html(_result(), title="t")


def test_dataset_info_argument_overrides_the_stored_summary():
    page = _parse(render_html(_result(), dataset_info={"name": "other", "rows": 99, "columns": 3}, plots=False))
    ds = dict(row for row in page.tables["dataset"] if len(row) == 2)
    assert ds["dataset"] == "other" and ds["rows"] == "99" and ds["class"] == "none"


def test_sweep_series_finds_numeric_sweeps_per_technique():
    r = _result()
    s = sweep_series(r.meta["techniques"])
    assert list(s) == ["level"]
    (ser,) = s["level"]
    assert ser["technique"] == "uniform-noise" and ser["values"] == [0.0, 0.1, 0.2]
    grid_techs = [{"technique": "mdav", "label": f"m{k}{w}", "params": params_to_json({"k": k, "w": w})}
                  for k in (3, 5) for w in ("a", "b")]
    g = sweep_series(grid_techs)
    assert list(g) == ["k"]  # w is not numeric: one line per value of w
    assert sorted(ser["fixed"]["w"] for ser in g["k"]) == ["a", "b"]


def test_heatmap_png_is_deterministic():
    c = pd.DataFrame([[1.0, -0.5], [-0.5, 1.0]], index=["a", "b"], columns=["a", "b"])
    one, two = correlation_heatmap(c), correlation_heatmap(c)
    assert one.startswith(PNG_MAGIC) and one == two


def test_measure_info_comes_from_the_result_then_the_registry():
    r = _result()
    assert measure_info(r, "custom_thing")["description"] == "a measure known only by its spec"
    assert measure_info(r, "rule_support_distance")["direction"] == "lower"  # not stored: the registry's
    assert measure_info(r, "unheard_of")["direction"] is None


def _noisy(means: dict[str, float], sd: float, folds: int = 5, seed: int = 0) -> ComparisonResult:
    """Two releases measured by one lower-is-better measure over ``folds`` folds."""
    rng = np.random.default_rng(seed)
    rows = [(lab.split("(")[0], lab, "{}", f, 0, "rule_accuracy", mu + rng.normal(0, sd))
            for lab, mu in means.items() for f in range(folds)]
    data = pd.DataFrame(rows, columns=["technique", "label", "params", "fold", "repeat", "measure", "value"])
    meta = {"techniques": [{"technique": lab.split("(")[0], "label": lab, "params": "{}", "changes_data": True}
                           for lab in means], "measures": ["rule_accuracy"], "cv": folds, "repeats": 1}
    return ComparisonResult(data, meta)


def test_best_is_marked_only_beyond_the_confidence_interval():
    clear = best_releases(_noisy({"a(1)": 0.10, "b(2)": 0.30}, sd=0.01))["rule_accuracy"]
    assert clear.label == "a(1)"
    # the same means drowned in noise: no best
    noisy = best_releases(_noisy({"a(1)": 0.10, "b(2)": 0.12}, sd=0.2))["rule_accuracy"]
    assert noisy.label is None and "interval" in noisy.note
    # a single release that changes the data has nobody to beat
    alone = best_releases(_noisy({"a(1)": 0.1}, sd=0.01))["rule_accuracy"]
    assert alone.label is None


def test_risk_utility_map_plots_every_release():
    r = _result()
    rows = []
    for t in r.meta["techniques"]:
        for f in range(3):
            v = {"original": 1.0, "gadp": 0.1}.get(t["technique"], 0.5)
            rows.append((t["technique"], t["label"], t["params"], f, 0, "ddr", v + 0.01 * f))
    r = ComparisonResult(pd.concat([r.data, pd.DataFrame(rows, columns=r.data.columns)], ignore_index=True),
                         {**r.meta, "measures": [*r.meta["measures"], "ddr"]})
    page = _parse(render_html(r))
    maps = [img for img in page.images if img["alt"].startswith("risk–utility map")]
    assert len(maps) == 1 and "ddr against prediction_accuracy" in maps[0]["alt"]
    assert "Risk–utility map" in page.headings
    # without a risk measure the report says how to get a map
    assert "name one with --measures" in render_html(_result(), plots=False)


@dataclass
class _RuleResult(MeasureResult):
    n_rules: int = 0
    per_rule: pd.DataFrame = field(default_factory=pd.DataFrame)


def test_evaluation_report_shows_values_and_detail_tables(tmp_path):
    per_rule = pd.DataFrame({"rule": ["a <= 3 -> <yes>", "a > 3 -> no", "b = u -> yes"],
                             "support_x": [10, 5, 7], "support_z": [8, 6, 7]})
    results = {
        "rule_support_distance": _RuleResult(0.123456789, n_rules=3, per_rule=per_rule),
        "prediction_accuracy": MeasureResult(0.9),
    }
    html = render_evaluation_html(results, title="Eval", subtitle="x.csv vs z.csv", max_detail_rows=2,
                                  dataset_info={"rows": 22, "columns": 2, "numeric": ["a"],
                                                "categorical": ["b"]})
    page = _parse(html)
    summary = {row[0]: row for row in page.tables["utility-table"][1:]}
    assert summary["rule_support_distance"][1] == "0.1235"
    assert summary["rule_support_distance"][2] == "≤ 0.01"
    assert summary["rule_support_distance"][3] == "misses"
    assert summary["prediction_accuracy"][3] == "misses"
    assert "0.123457" in html  # the measure's own section gives more digits
    details = [rows for tid, rows in page.tables.items() if tid.startswith("table")]
    rule_table = next(t for t in details if t and t[0] == ["rule", "support x", "support z"])
    assert rule_table[1] == ["a <= 3 -> <yes>", "10", "8"] and len(rule_table) == 3  # truncated to 2 rows
    assert "&lt;yes&gt;" in html and "The first 2 of 3 rows are shown" in html
    scalars = [t for t in details if t and t[0] == ["n_rules", "3"]]
    assert scalars
    assert "lower is better" in html
    assert render_evaluation_html(results) == render_evaluation_html(results)
    out = write_evaluation_html(results, tmp_path / "e.html", title="Eval")
    assert _parse(out.read_text()).headings[0] == "Eval"


@pytest.mark.parametrize("v,text", [(None, "—"), (float("nan"), "—"), (3, "3"), (0.123456, "0.1235"),
                                    (np.float64(2.5), "2.5"), (True, "True")])
def test_fmt(v, text):
    assert fmt(v) == text


def _keyvar_doc(status: str = "high", judged_status: str | None = None) -> dict:
    """An evaluation document with a per-key table shared by two key-variable measures, a
    per-rule table shared by two rule measures, a skipped pair of attacks and verdicts."""
    from ppdm.report.evaluation import evaluation_document

    per_key = pd.DataFrame({"key": ["zip", "sex", "birth_date"], "distinct_values": [300, 2, 900],
                            "missing": [0, 0, 0], "uniques_without": [40, 900, 120],
                            "uniques_removed_by_dropping": [960, 100, 880]})
    per_rule = pd.DataFrame({"rule": [f"income <= {1000 + i}.5 -> yes" for i in range(30)],
                             "support_x": range(30), "support_z": range(30)})

    @dataclass
    class _Key(MeasureResult):
        sample_uniques: int = 1000
        key_source: str = "declared"
        per_key: pd.DataFrame = field(default_factory=pd.DataFrame)

    results = {"k_anonymity": _Key(0.4, per_key=per_key), "sample_uniques": _Key(0.3, per_key=per_key),
               "rule_accuracy": _RuleResult(0.01, per_rule=per_rule),
               "rule_support_distance": _RuleResult(0.002, per_rule=per_rule)}
    doc = evaluation_document(results, inputs={"anonymized": {"source": "z.csv", "rows": 10, "columns": 3}})
    for name in ("linkability", "inference"):
        doc["measures"][name] = {"value": None, "status": "skipped", "kind": "risk", "direction": "lower",
                                 "threshold": 0.05, "reason": f"{name} needs a control set of original records "
                                 "not used to make the release", "details": {}, "tables": []}
    doc["summary"]["risk"]["status"] = status
    if judged_status is not None:
        for j in doc["summary"]["risk"]["judged"]:
            j["status"] = j["judgement"] = judged_status
    return doc


class _Order(HTMLParser):
    """Ids of elements in page order, the text of note boxes, and which ids sit inside <details>."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.notes: list[str] = []
        self.folded: set[str] = set()
        self._depth = 0
        self._note: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "details":
            self._depth += 1
        if a.get("id"):
            self.ids.append(a["id"])
            if self._depth:
                self.folded.add(a["id"])
        if "note" in (a.get("class") or "").split():
            self._note = []

    def handle_endtag(self, tag):
        if tag == "details":
            self._depth -= 1
        if tag == "p" and self._note is not None:
            self.notes.append(" ".join("".join(self._note).split()))
            self._note = None

    def handle_data(self, data):
        if self._note is not None:
            self._note.append(data)


def _order(html: str) -> _Order:
    o = _Order()
    o.feed(html)
    return o


def test_evaluation_page_opens_with_verdicts_drivers_and_the_summaries():
    html = render_evaluation_html(_keyvar_doc())
    o = _order(html)
    first = [i for i in o.ids if i in ("verdicts", "drivers", "risk", "utility", "released", "measures")]
    assert first == ["verdicts", "drivers", "risk", "utility", "released", "measures"]
    # the drivers: the worst key variable named, the per-key table open at the top, its row highlighted
    page = _parse(html)
    assert "The worst key variable is zip: 960 of the 1,000 records unique" in " ".join(html.split())
    assert "per-key-table" in page.tables and "per-key-table" not in o.folded
    assert '<tr class="worst"><td>zip</td>' in html
    # shown once: neither measure's details nor a shared section repeats the per-key table
    assert sum(1 for t in page.tables.values() if t and t[0][:1] == ["key"]) == 1
    # detail tables folded: every measure's section and the per-rule table sit inside <details>
    assert {"m-k_anonymity", "m-rule_accuracy", "t-per_rule-table"} <= o.folded
    # the shared reason of the two skipped attacks is said once, naming both
    skipped = [n for n in o.notes if "skipped" in n]
    assert len(skipped) == 1 and "linkability" in skipped[0] and "inference" in skipped[0]
    assert len(o.notes) == len(set(o.notes))


@pytest.mark.parametrize("status,cls", [("high", "bad"), ("low", "good"), ("uncertain", "neutral"),
                                        ("not judged", "neutral"), ("some new word", "neutral")])
def test_a_verdict_of_any_status_is_shown_as_named(status, cls):
    html = render_evaluation_html(_keyvar_doc(status, judged_status="uncertain"))
    assert f'class="verdict {cls} verdict-' in html and f'data-status="{status}"' in html
    risk = {row[0]: row for row in _parse(html).tables["risk-table"][1:]}
    assert risk["k_anonymity"][3] == "uncertain"  # a judged measure's own status, whatever it is
    assert 'class="status status-uncertain"' in html


def test_comparison_page_opens_with_one_verdict_row_per_setting_then_the_map():
    r = _with_ddr(_result())
    html = render_html(r)
    o, page = _order(html), _parse(html)
    assert o.ids.index("verdict-table") < o.ids.index("risk-utility") < o.ids.index("summary-table")
    assert [i for i in o.ids if i in page.tables][0] == "verdict-table"
    head, *rows = page.tables["verdict-table"]
    assert head == ["technique and parameters", "disclosure risk", "utility", "on the front"]
    assert [row[0].split(" (")[0] for row in rows] == r.labels
    by = {row[0].split(" (")[0]: row for row in rows}
    # ddr ≤ 0.05 is met by nobody here; prediction_accuracy ≤ 0.02 by the light noise only
    assert by["gadp <b>"][1].startswith("high") and "ddr 0.11" in by["gadp <b>"][1]
    assert by["uniform-noise(level=0.2)"][2].startswith("reduced")
    assert by["uniform-noise(level=0.1)"][2].startswith("reduced")
    # the front holds no release judged high (issue #30): every one misses ddr ≤ 0.05 here, so even gadp,
    # the least risky, is off it; level 0 changes nothing
    assert by["gadp <b>"][3] == "no (risk judged high)"
    assert by["uniform-noise(level=0.0)"][3] in ("no", "no (risk judged high)")
    assert by["original"][3] == "—"
    # everything below the summary table is folded
    assert {"correlation-table", "techniques-table", "measures-table", "best-table"} <= o.folded


def _with_ddr(r: ComparisonResult) -> ComparisonResult:
    rows = []
    for t in r.meta["techniques"]:
        for f in range(3):
            v = {"original": 1.0, "gadp": 0.1}.get(t["technique"], 0.5)
            if t["label"] == "uniform-noise(level=0.0)":
                v = 1.0
            elif t["label"] == "uniform-noise(level=0.2)":
                v = 0.3
            rows.append((t["technique"], t["label"], t["params"], f, 0, "ddr", v + 0.01 * f))
    return ComparisonResult(pd.concat([r.data, pd.DataFrame(rows, columns=r.data.columns)], ignore_index=True),
                            {**r.meta, "measures": [*r.meta["measures"], "ddr"]})


def test_each_table_and_plot_appears_once_and_constant_measures_are_not_drawn():
    html = render_html(_with_ddr(_result()))
    page = _parse(html)
    alts = [img["alt"] for img in page.images]
    assert len(alts) == len(set(alts)) and not any("heat" in a or "by technique" in a for a in alts)
    assert sum(1 for t in page.tables if t.startswith("correlation")) == 1
    # custom_thing is the fold number, the same mean (1) for every setting: named, not drawn
    sweep = html[html.index('id="sweep-level"'):]
    assert "1 measure(s) constant, not drawn" in sweep and "<code>custom_thing</code> = 1" in sweep


def test_warnings_repeated_for_many_settings_appear_once_with_the_list_of_where():
    r = _result()
    reason = "numeric column 'birth_date' is not numeric in every table (dtype datetime64)"
    r.meta["skipped"] = [{"label": lab, "measure": m, "reason": (f"{m}: " if m == "linkage" else "") + reason,
                          "tasks": 3, "of": 3 if lab == "original" else 6}
                         for lab in r.labels for m in ("inference", "linkability", "linkage")]
    r.meta["notes"] = ["the rarest class has 1 record(s)"] + [
        f"measure {row['measure']!r} was skipped for {row['label']} in 3 of 6 run(s): {row['reason']}"
        for row in r.meta["skipped"]]  # as results saved by older versions noted them
    o = _order(render_html(r, plots=False))
    # the map's note, the unchanged release, the rare class, the skipped measures: each once
    assert len(o.notes) == len(set(o.notes)) == 4
    (note,) = [n for n in o.notes if "skipped" in n]
    assert "'inference', 'linkability', 'linkage' were skipped" in note and note.endswith(reason)
    for lab in r.labels:
        assert lab in note


def test_plot_axes_carry_no_offset():
    """Values that differ only in the fifth digit would get a "+1" offset by default."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from ppdm.report.plots import risk_utility_figure, sweep_figure

    points = [{"label": f"r{i}", "risk": 1.0 + i * 1e-5, "utility": 1000.0 + i * 1e-3, "risk_ci": 1e-6,
               "utility_ci": 1e-4} for i in range(4)]
    fig = risk_utility_figure(points, risk="k_anonymity", risk_direction="lower", utility="u",
                              utility_direction="lower", front=["r0", "r1"])
    FigureCanvasAgg(fig).draw()
    ax = fig.axes[0]
    assert ax.xaxis.get_major_formatter().get_offset() == "" and ax.yaxis.get_major_formatter().get_offset() == ""
    assert any("1.00001" in t.get_text() or "1.00002" in t.get_text() for t in ax.get_xticklabels())
    summ = pd.DataFrame({"label": ["a", "b"], "measure": ["m", "m"], "mean": [1.00001, 1.00002],
                         "std": [0.0, 0.0], "technique": ["t", "t"]})
    fig = sweep_figure(summ, [("m", "lower")], "level", [{"technique": "t", "fixed": {}, "labels": ["a", "b"],
                                                          "values": [0.1, 0.2]}])
    FigureCanvasAgg(fig).draw()
    assert fig.axes[0].yaxis.get_major_formatter().get_offset() == ""
    # without plain_axes the same values do get an offset (the check can fail)
    from matplotlib.figure import Figure

    f2 = Figure()
    a2 = f2.add_subplot()
    a2.plot([0, 1], [1.00001, 1.00002])
    FigureCanvasAgg(f2).draw()
    assert a2.yaxis.get_major_formatter().get_offset() != ""
