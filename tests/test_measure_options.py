"""Measure options are checked, never ignored: every registered measure declares the options it
reads, ``ppdm evaluate``/``ppdm compare`` refuse any other with exit code 2 and one line naming it
and the known ones, a policy line's options are checked when the policy is read, and a policy
judges a measured outcome exactly as the evaluation's verdict does."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from ppdm.cli.app import app
from ppdm.errors import ParameterError
from ppdm.experiments.evaluation import EVALUATION_OPTIONS, check_measure_options, load_all_measures
from ppdm.metrics.base import MEASURES, EvaluationContext, register_measure
from ppdm.metrics.judgement import verdict

runner = CliRunner()

#: modules allowed to register a measure without declaring its options (none: every measure declares them)
PENDING: tuple[str, ...] = ()


@pytest.fixture
def linkage_declared() -> None:
    """record_linkage declares its options (kept as a fixture so the CLI tests say what they rely on)."""
    load_all_measures()
    assert MEASURES["record_linkage"].options is not None


@pytest.fixture
def table(tmp_path: Path) -> Path:
    """A tiny table: the options are refused before it is read, so its content does not matter."""
    p = tmp_path / "x.csv"
    pd.DataFrame({"age": [20, 30, 40, 50] * 3, "sex": list("fm") * 6, "y": list("ab") * 6}).to_csv(p, index=False)
    return p


def _refused(args: list[str], *needles: str) -> str:
    r = runner.invoke(app, args)
    assert r.exit_code == 2, r.output
    text = r.output.strip()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    assert len(lines) == 1, text  # one line, nothing printed before it
    assert "Traceback" not in text
    for n in needles:
        assert n in text, (n, text)
    return text


# ------------------------------------------------------------------ the registry
def test_every_measure_declares_its_options() -> None:
    registry = load_all_measures()
    undeclared = sorted(n for n, s in registry.items() if s.options is None and s.fn.__module__ not in PENDING)
    assert undeclared == [], f"register these with options=(...): {undeclared}"
    for name, spec in registry.items():
        if spec.options is not None:
            assert all(o for o in spec.options) and len(set(spec.options)) == len(spec.options), name
            assert set(spec.requires) <= set(spec.options), name


def test_a_required_option_must_be_declared() -> None:
    with pytest.raises(ValueError, match="requires the option 'm' but does not declare it"):
        register_measure("_x", kind="risk", description="", requires=("m",), options=("n",))
    with pytest.raises(ValueError, match="tuple of option names"):
        register_measure("_x", kind="risk", description="", options="k")  # type: ignore[arg-type]
    assert "_x" not in MEASURES


#: measures that take seconds to compile or fit even on 24 records, and read their options only through
#: pick_options with the very tuple they declare (so they cannot read another)
COSTLY = ("ddr", "il_dr_score", "eduds", "edusc", "sers")


def test_measures_read_only_the_options_they_declare() -> None:
    """Each measure, run on a small table with an options mapping that records every key looked up,
    asks only for its own declared options (plain, ``NAME.key`` or ``{NAME: ...}``) and the
    evaluation's own: a measure reading an undeclared option would have it refused."""

    class Recording(dict):
        def __init__(self) -> None:
            super().__init__()
            self.asked: set[str] = set()

        def get(self, key, default=None):  # noqa: ANN001, ANN201
            self.asked.add(key)
            return super().get(key, default)

        def __contains__(self, key) -> bool:  # noqa: ANN001
            self.asked.add(key)
            return super().__contains__(key)

        def __getitem__(self, key):  # noqa: ANN001, ANN204
            self.asked.add(key)
            return super().__getitem__(key)

    from ppdm.data.schema import Schema
    from ppdm.experiments.evaluation import run_measure

    # 24 records: two numeric attributes, two categorical quasi-identifiers, a class; z perturbs age
    x = pd.DataFrame({"age": [21.0, 35, 47, 52, 63, 29] * 4, "hours": [40.0, 38, 45, 20, 50, 35] * 4,
                      "sex": list("fmfmff") * 4, "zone": list("aabbcc") * 4, "y": list("pqpqpp") * 4})
    z = x.assign(age=x["age"] + [1, -1, 2, 0, -2, 1] * 4)
    sch = Schema.infer(x, class_column="y")
    sch = dataclasses.replace(sch, quasi_identifiers=["sex", "zone"], sensitive=["hours"])
    checked = 0
    for name, spec in load_all_measures().items():
        if spec.options is None or spec.requires or name in COSTLY:
            continue
        opts = Recording()
        ctx = EvaluationContext(x=x, z=z, schema=sch, control=x.iloc[:6], options=opts)
        run_measure(spec, ctx)
        stray = {k for k in opts.asked if k not in spec.options and k not in EVALUATION_OPTIONS
                 and k != name and not k.startswith(f"{name}.")}
        stray |= {k.split(".", 1)[1] for k in opts.asked
                  if k.startswith(f"{name}.") and k.split(".", 1)[1] not in spec.options}
        assert not stray, f"{name} reads undeclared option(s) {sorted(stray)}"
        checked += 1
    assert checked >= 20


# ------------------------------------------------------------------ the check
def test_check_measure_options_by_form() -> None:
    load_all_measures()
    specs = [MEASURES[n] for n in ("auc", "k_anonymity", "ddr")]
    # every accepted form: plain, NAME.key, nested, and an option of the evaluation itself
    check_measure_options(specs, {"average": "weighted", "k_anonymity.k": 5, "ddr": {"percent": True},
                                  "rule_rows": 1000, "keys": "sex"})
    for options, message in [
        ({"averge": "weighted"}, "unknown option 'averge'; did you mean 'average'? (known: "),
        ({"k_anonymity.kk": 5}, "unknown k_anonymity option 'kk'; did you mean 'k'? (known: all_keys, "),
        ({"k_anonymity": {"kk": 5}}, "unknown k_anonymity option 'kk'; did you mean 'k'?"),
        ({"idr.k": 0.1}, "option 'idr.k' is for measure 'idr', which this evaluation does not run"),
        ({"k_anonimity.k": 5}, "unknown measure 'k_anonimity'; did you mean 'k_anonymity'?"),
        ({"zzz": 1}, "unknown option 'zzz'; known: "),
    ]:
        with pytest.raises(ParameterError) as info:
            check_measure_options(specs, options)
        assert message in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(ParameterError, match="il1s_mean option 'form' is unknown: it takes no options"):
        check_measure_options([MEASURES["il1s_mean"]], {"il1s_mean.form": "sum"})


def test_a_measure_that_declares_nothing_accepts_any_option() -> None:
    """The merge-safe reading of ``options=None``: nothing is refused for such a measure, and a plain
    key may be meant for it while it is evaluated."""
    load_all_measures()
    open_spec = dataclasses.replace(MEASURES["auc"], name="_open", options=None)
    check_measure_options([open_spec], {"_open.anything": 1, "whatever": 2})
    check_measure_options([MEASURES["auc"], open_spec], {"averge": 1})
    with pytest.raises(ParameterError, match="unknown option 'averge'"):
        check_measure_options([MEASURES["auc"]], {"averge": 1})


# ------------------------------------------------------------------ the command line
@pytest.mark.usefixtures("linkage_declared")
def test_evaluate_refuses_a_mistyped_plain_option(table: Path) -> None:
    base = ["evaluate", "-x", str(table), "-z", str(table), "--class", "y"]
    _refused([*base, "--measures", "auc,f_measure", "--param", "averge=weighted"], "'averge'", "'average'")
    # the default set too (every measure of it declares its options)
    _refused([*base, "--param", "averge=weighted"], "'averge'", "did you mean 'average'")


@pytest.mark.usefixtures("linkage_declared")
def test_evaluate_refuses_a_mistyped_option_of_one_measure(table: Path) -> None:
    base = ["evaluate", "-x", str(table), "-z", str(table), "--class", "y"]
    _refused([*base, "--measures", "record_linkage", "-p", "record_linkage.tiez=first"],
             "'tiez'", "did you mean 'ties'", "exact_rows, sample, ties")
    _refused([*base, "--measures", "k_anonymity", "--qi", "sex", "-p", "k_anonymity.kk=5"],
             "'kk'", "did you mean 'k'")
    # an option for a measure the evaluation does not run would be ignored as well
    _refused([*base, "--measures", "auc", "-p", "ddr.percent=true"], "'ddr.percent'", "does not run")


def test_evaluate_still_takes_declared_options(table: Path) -> None:
    r = runner.invoke(app, ["evaluate", "-x", str(table), "-z", str(table), "--class", "y", "--pairing", "position",
                            "--measures", "k_anonymity", "--qi", "sex", "-p", "k_anonymity.k=2", "--json"])
    assert r.exit_code == 0, r.output


def test_compare_refuses_a_mistyped_option() -> None:
    _refused(["compare", "builtin:wine", "--technique", "uniform-noise:level=0.1", "--measures", "auc", "--cv", "2",
              "--param", "averge=weighted"], "'averge'", "did you mean 'average'")


def test_recommend_refuses_a_mistyped_option_of_a_policy_line(tmp_path: Path) -> None:
    p = tmp_path / "policy.yaml"
    p.write_text("risk:\n  k_anonymity: {at_most: 0.01, options: {kk: 5}}\nutility:\n  weights: {auc: 1}\n")
    _refused(["recommend", "builtin:wine", "--class", "class", "--policy", str(p), "--out", str(tmp_path / "z.csv")],
             "risk line 'k_anonymity'", "'kk'", "did you mean 'k'")
    # the same line given as flags
    _refused(["recommend", "builtin:wine", "--class", "class", "--max", "k_anonymity=0.01", "--option",
              "k_anonymity.kk=5", "--utility", "auc=1", "--out", str(tmp_path / "z.csv")], "'kk'", "did you mean 'k'")


# ------------------------------------------------------------------ documented options
_DOC_FILES = [Path(__file__).resolve().parent.parent / "README.md",
              *sorted((Path(__file__).resolve().parent.parent / "docs").glob("*.md"))]
_PREFIXED = re.compile(r"(?:-p|--param)\s+([a-z][a-z0-9_]*)\.([a-z][a-z0-9_]*)=")


def test_documented_measure_options_are_declared() -> None:
    """Every ``-p NAME.key=`` the docs show for a measure NAME names an option it declares (the
    documented evaluate/compare commands are run through the check in tests/test_docs.py)."""
    registry = load_all_measures()
    found = 0
    for path in _DOC_FILES:
        for m in _PREFIXED.finditer(path.read_text(encoding="utf-8")):
            measure, key = m.groups()
            if measure not in registry:  # a technique of a composition (-p recode.columns=...)
                continue
            opts = registry[measure].options
            assert opts is None or key in opts, f"{path.name}: -p {measure}.{key} is not an option of {measure}"
            found += 1
    assert found >= 3


def _cli_measure_options() -> list[str]:
    """The options docs/cli.md lists in its 'Measure options (`--param`)' paragraph."""
    text = (Path(__file__).resolve().parent.parent / "docs" / "cli.md").read_text(encoding="utf-8")
    para = text[text.index("Measure options (`--param`)"):].split("\n\n", 1)[0]
    para = para.split("`ppdm measures` lists")[0]
    return [w for w in re.findall(r"`([a-z][a-z_]*)`", para) if "_" in w or w in ("average", "beta")]


def test_the_documented_option_list_is_declared() -> None:
    registry = load_all_measures()
    declared = set(EVALUATION_OPTIONS).union(*(s.options or () for s in registry.values()))
    names = _cli_measure_options()
    assert len(names) >= 8
    assert [n for n in names if n not in declared] == []


# ------------------------------------------------------------------ one judge
def test_evaluate_and_recommend_judge_one_outcome_alike() -> None:
    """One measured outcome, read by the evaluation's verdict (a document's entries) and by a policy
    holding every measure to its registered threshold: the same state for every line."""
    from ppdm.experiments.policy import parse_policy
    from ppdm.experiments.recommend import judge_lines
    from ppdm.metrics.judgement import judge_measures

    registry = load_all_measures()
    bound = "the value counts verbatim copies only; the release's private log gives the exact value"
    # as a search's trial records them (ppdm.experiments.recommend.measure_release)
    outcome = {"measures": {
        # 3.0 % of records linked, printed in percent: the share 0.03 is within 0.05
        "ddr": {"value": 3.0, "percent": True},
        # an attack whose interval [0.01, 0.09] straddles 0.05
        "linkability": {"value": 0.04, "ci_low": 0.01, "ci_high": 0.09},
        # a pairing-free lower bound within the threshold says nothing about the risk above it
        "record_linkage": {"value": 0.01, "lower_bound": bound},
        # an attack that could not run
        "inference": {"value": None, "skipped": False, "reason": "needs a control set (--control)"},
        # key frequencies of perturbed keys do not apply; qi_matching judges that intruder and meets
        "k_anonymity": {"value": None, "not_applicable": True, "reason": "all quasi-identifiers are perturbed"},
        "qi_matching": {"value": 0.01, "ci_low": 0.0, "ci_high": 0.02},
        # a clear miss
        "reidentification_risk": {"value": 0.2},
    }}
    expected = {"ddr": "meets", "linkability": "uncertain", "record_linkage": "uncertain",
                "inference": "not measured", "k_anonymity": "not applicable", "qi_matching": "meets",
                "reidentification_risk": "misses"}

    def document_entry(name: str, m: dict) -> dict:
        """The entry ``ppdm evaluate --json`` writes for this outcome (ppdm.report.evaluation)."""
        info = registry[name].info()
        interval = [m["ci_low"], m["ci_high"]] if "ci_low" in m else None
        entry = {"value": m.get("value"), "status": "computed" if m.get("value") is not None else "skipped",
                 "kind": info["kind"], "direction": info["direction"], "range": info["range"],
                 "threshold": info["threshold"], "scenario": info["scenario"], "interval": interval,
                 "details": {"percent": True} if m.get("percent") else {}}
        if m.get("value") is None:
            entry["reason"] = m["reason"]
            if m.get("not_applicable"):
                entry["not_judged"] = m["reason"]
        if m.get("lower_bound"):
            entry["lower_bound"] = m["lower_bound"]
        return entry

    doc = {n: document_entry(n, m) for n, m in outcome["measures"].items()}
    evaluated = {j.measure: j.state for j in judge_measures("risk", doc)}
    policy = parse_policy({"risk": {n: {"at_most": registry[n].threshold} for n in expected},
                           "utility": {"weights": {"auc": 1}}})
    judged = {v.measure: v.verdict for v in judge_lines(outcome, policy)}
    assert evaluated == judged == expected
    # and the verdict the evaluation prints from them
    v = verdict("risk", doc)
    assert v.status == "high"
    assert {d["measure"]: d["judgement"] for d in v.judged} == {
        n: s for n, s in expected.items() if s in ("meets", "misses", "uncertain")}
    assert [d["measure"] for d in v.not_measured] == ["inference"]
    assert [d["measure"] for d in v.not_judged] == ["k_anonymity"]


def test_ppdm_measures_lists_the_options() -> None:
    import json

    import jsonschema

    schema = json.loads((Path(__file__).resolve().parent.parent / "docs" / "ppdm.schema.json").read_text())
    r = runner.invoke(app, ["measures", "--json"])
    assert r.exit_code == 0, r.output
    listing = json.loads(r.output)
    assert not list(jsonschema.Draft202012Validator(schema).iter_errors(listing))
    registry = load_all_measures()
    assert {n: m["options"] for n, m in listing["measures"].items()} == {
        n: None if s.options is None else list(s.options) for n, s in registry.items()}
    assert listing["measures"]["k_anonymity"]["options"][:3] == ["keys", "infer_keys", "all_keys"]
    r = runner.invoke(app, ["measures"])
    assert r.exit_code == 0 and "options" in r.output
