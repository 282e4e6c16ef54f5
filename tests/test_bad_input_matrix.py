"""The bad-input matrix: every registered technique and measure against every kind of bad input.

The registries are iterated, so a new technique or measure is covered as soon as it is
registered (a technique must also get a row in ``IMPOSSIBLE``). For each bad input the
library must raise :class:`PPDMError` naming the column or parameter, and the CLI must
exit with code 2, print one line without a traceback and leave no file behind.
Inputs a technique legitimately accepts are checked for a valid output instead; the
decisions are documented in docs/robustness.md.
"""

from __future__ import annotations

import json
import math
import re
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from typer.testing import CliRunner

from ppdm.anonymize.registry import TECHNIQUES, _load_all, make_technique
from ppdm.cli.app import app
from ppdm.data.datasets import load
from ppdm.data.io import write_table
from ppdm.errors import PPDMError
from ppdm.experiments.evaluation import load_all_measures
from ppdm.metrics.base import MEASURES

_load_all()
load_all_measures()
NAMES = sorted(TECHNIQUES)
MEASURE_NAMES = sorted(m for m, s in MEASURES.items() if not s.requires)

#: parameters a technique cannot run without (its defaults leave them open); DPCube's default
#: release (add/remove-one neighbours) has a noisy number of records, so the table contract
#: checked here (same rows and index) is checked on its replace-one form; these tables declare
#: no domain, which DPCube refuses unless told to read it from the data; test_dpcube.py covers
#: the default
BASE_PARAMS: dict[str, dict[str, Any]] = {"random-substitution": {"gamma": 5.0},
                                          "dpcube": {"neighbouring": "replace", "domain_from_data": True},
                                          "pram": {"perturb_class": True},
                                          # top coding at the 99th percentile alone changes too few records for
                                          # the release gate (95% unchanged); these bounds change half of them
                                          "top-bottom-coding": {"top": "75%", "bottom": "25%"},
                                          # wine's keys are measurements, nearly every value rare: no blanking
                                          # reaches k in the intruder's view (the default refuses, saying so);
                                          # sdcMicro's cover runs the contract
                                          "local-suppression": {"criterion": "sdcmicro"}}

#: one impossible value per technique: (parameter, value)
IMPOSSIBLE: dict[str, tuple[str, Any]] = {
    "dpcube": ("epsilon", -1.0),
    "forest-framework": ("n_trees", 0),
    "framework": ("p_cat", 1.5),
    "gadp": ("confidential", ["no_such_column"]),
    "gaussian-noise": ("level", -0.1),
    "generalize": ("k", 0),
    "local-suppression": ("k", 0),
    "pram": ("alpha", 1.5),
    "recode": ("breaks", 0),
    "top-bottom-coding": ("top", "abc"),
    "mdav": ("k", 0),
    "random-substitution": ("gamma", 1.0),
    "random-technique": ("p_rt", 2.0),
    "rounding": ("method", "no-such-method"),
    "uniform-noise": ("level", 1.5),
}

#: measures that compare x and z record by record (different row counts: skipped)
ALIGNED = {"spectral_filtering", "il_metrics", "il1s", "il1s_mean", "sse_sst", "entropy",
           "correlation_difference", "ddr", "idr", "il_dr_score"}
#: measures that divide by a column's standard deviation (a constant column: skipped)
SD_SCALED = {"il_metrics", "il1s", "il1s_mean", "correlation_difference", "il_dr_score"}

runner = CliRunner()


def base_table(n: int = 60) -> pd.DataFrame:
    """A small mixed table: float, integer and text attributes and a two-valued class."""
    rng = np.random.default_rng(0)
    a = rng.normal(10, 2, n).round(3)
    return pd.DataFrame({
        "a": a,
        "b": rng.integers(0, 50, n),
        "c": rng.choice(["red", "green", "blue"], n),
        "label": np.where(a + rng.normal(0, 1, n) > 10, "yes", "no"),
    })


def _with(df: pd.DataFrame, f: Callable[[pd.DataFrame], None]) -> pd.DataFrame:
    out = df.copy()
    f(out)
    return out


def _set_text(d: pd.DataFrame) -> None:
    d["a"] = d["a"].astype(object)
    d.loc[5, "a"] = "abc"


#: bad input -> (table, text the message must contain)
BAD_TABLES: dict[str, tuple[Callable[[], pd.DataFrame], str]] = {
    "missing_class": (lambda: base_table().drop(columns="label"), "'label'"),
    "nan": (lambda: _with(base_table(), lambda d: d.__setitem__("a", d["a"].where(d.index != 5))), "'a'"),
    "inf": (lambda: _with(base_table(), lambda d: d.__setitem__("a", d["a"].where(d.index != 5, np.inf))), "'a'"),
    "empty": (lambda: base_table().iloc[:0], "rows"),
    "only_class": (lambda: base_table()[["label"]], "no attribute"),
    "non_numeric": (lambda: _with(base_table(), _set_text), "'a'"),
}


def single_class() -> pd.DataFrame:
    return _with(base_table(), lambda d: d.__setitem__("label", "yes"))


def constant_column() -> pd.DataFrame:
    return _with(base_table(), lambda d: d.__setitem__("a", 3.5))


def _tech(name: str, **extra: Any) -> Any:
    params = {**BASE_PARAMS.get(name, {}), **extra}
    return make_technique(name, class_column="label", random_state=7, params=params)


def _fit_transform(tech: Any, df: pd.DataFrame) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. DPCube's domain-from-data warning
        return tech.fit_transform(df)


def released_dtypes(tech: Any, df: pd.DataFrame) -> pd.Series:
    """The dtypes a fitted technique declares for its release: the input's, except the columns
    it recodes into labels or suppresses into nullable integers."""
    return df.dtypes.copy().astype(object).where(
        [c not in tech._output_dtypes(df) for c in df.columns],
        pd.Series(tech._output_dtypes(df), dtype=object).reindex(df.columns))


def same_dtypes(out: pd.DataFrame, tech: Any, df: pd.DataFrame) -> bool:
    return list(out.dtypes) == list(released_dtypes(tech, df))


def _param_args(params: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for k, v in params.items():
        out += ["-p", f"{k}={v if isinstance(v, str) else repr(v)}"]
    return out


#: these tests are about bad input and techniques' invariants on tiny tables, not the release gate
GATE_OFF = ["--allow-unchanged", "--allow-verbatim", "--allow-untouched-keys", "--gate", "untouched_column_unique=1"]


def _anonymize_cli(tmp_path: Path, name: str, df: pd.DataFrame | None, extra: dict[str, Any] | None = None,
                   src: Path | None = None) -> Any:
    if src is None:
        src = tmp_path / "in.csv"
        df.to_csv(src, index=False)
    params = {**BASE_PARAMS.get(name, {}), **(extra or {})}
    args = ["anonymize", str(src), "-m", name, "-o", str(tmp_path / "out.csv"), "--class", "label", "--seed", "7", "--experiment-seed",
            *GATE_OFF]
    return runner.invoke(app, args + _param_args(params))


def assert_clean_failure(result: Any, folder: Path, keep: set[str], needle: str | None = None) -> None:
    """Exit 2, one line without a traceback naming ``needle``, nothing written to ``folder``."""
    out = result.output.strip()
    assert result.exit_code == 2, out
    assert len(out.splitlines()) == 1, out
    assert "Traceback" not in out and out.startswith("error:"), out
    if needle is not None:
        assert needle in out, out
    assert {p.name for p in folder.iterdir()} == keep


def test_every_technique_has_an_impossible_value() -> None:
    assert sorted(IMPOSSIBLE) == NAMES


# ------------------------------------------------------------------ techniques: bad tables
# Each technique test has a library half (every technique, every case, in the default run) and a
# command-line half (exit 2, one line, no file left). The command line's handling of a refusal is
# the same for every technique, so the default run takes the command-line half on representatives
# that still put every technique and every bad table through it once; the slow run (.ci/run,
# `-m slow`) takes the whole matrix.
CASES = sorted(BAD_TABLES)
#: (technique, case) pairs whose command-line half runs by default: technique i meets case i mod 6
CLI_COVER = {(n, CASES[i % len(CASES)]) for i, n in enumerate(NAMES)}


def cli_sample(offset: int, k: int = 3) -> list[Any]:
    """NAMES with all but ``k`` of them (spread out, starting at ``offset``) marked slow: the
    default run's representatives of a command-line half that is the same for every technique."""
    keep = {NAMES[(offset + j * len(NAMES) // k) % len(NAMES)] for j in range(k)}
    return [n if n in keep else pytest.param(n, marks=pytest.mark.slow) for n in NAMES]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("name", NAMES)
def test_technique_refuses_bad_table(name: str, case: str) -> None:
    make, needle = BAD_TABLES[case]
    if case == "nan":
        # the library keeps (or models) a missing cell as the technique documents; the command
        # line refuses it until the user chooses --missing keep or --missing drop
        tech = _tech(name)
        out = _fit_transform(tech, make())
        assert out.shape == make().shape and same_dtypes(out, tech, make())
        if TECHNIQUES[name].missing_policy == "kept" and TECHNIQUES[name].makes_missing:
            assert (out["a"].isna() | ~make()["a"].isna()).all()  # blanked cells come on top
        elif TECHNIQUES[name].missing_policy == "kept":
            assert out["a"].isna().tolist() == make()["a"].isna().tolist()
    else:
        with pytest.raises(PPDMError, match=re.escape(needle)):
            _fit_transform(_tech(name), make())


@pytest.mark.parametrize(("name", "case"), [(n, c) if (n, c) in CLI_COVER else pytest.param(n, c, marks=pytest.mark.slow)
                                            for n in NAMES for c in CASES])
def test_cli_refuses_bad_table(name: str, case: str, tmp_path: Path) -> None:
    make, needle = BAD_TABLES[case]
    res = _anonymize_cli(tmp_path, name, make())
    assert_clean_failure(res, tmp_path, {"in.csv"}, needle if case != "empty" else "no data rows")


def test_the_cli_cover_meets_every_technique_and_every_bad_table() -> None:
    assert {n for n, _ in CLI_COVER} == set(NAMES) and {c for _, c in CLI_COVER} == set(CASES)


@pytest.mark.parametrize("name", NAMES)
def test_technique_single_class(name: str) -> None:
    df = single_class()
    if TECHNIQUES[name].needs_class:
        with pytest.raises(PPDMError, match="'label'"):
            _fit_transform(_tech(name), df)
        return
    # a technique that does not learn from the class accepts one class value
    tech = _tech(name)
    out = _fit_transform(tech, df)
    assert out.shape == df.shape and same_dtypes(out, tech, df)
    assert set(out["label"]) == {"yes"}


#: the single-class command-line representatives hold techniques that learn from the class and
#: techniques that do not (checked below)
SINGLE_CLASS_CLI = cli_sample(1)


@pytest.mark.parametrize("name", SINGLE_CLASS_CLI)
def test_cli_single_class(name: str, tmp_path: Path) -> None:
    df = single_class()
    if TECHNIQUES[name].needs_class:
        assert_clean_failure(_anonymize_cli(tmp_path, name, df), tmp_path, {"in.csv"}, "'label'")
        return
    res = _anonymize_cli(tmp_path, name, df)
    assert res.exit_code == 0, res.output
    assert (tmp_path / "out.csv").exists()


def test_the_single_class_sample_holds_both_kinds() -> None:
    kept = [n for n in SINGLE_CLASS_CLI if isinstance(n, str)]
    assert {TECHNIQUES[n].needs_class for n in kept} == {True, False}, kept


@pytest.mark.parametrize("name", NAMES)
def test_technique_constant_column(name: str) -> None:
    # a constant attribute carries no information to hide: every technique leaves it as it is
    df = constant_column()
    tech = _tech(name)
    out = _fit_transform(tech, df)
    assert out.shape == df.shape and same_dtypes(out, tech, df)
    assert (out["a"] == 3.5).all()
    if pd.api.types.is_numeric_dtype(out["b"]):  # recoding releases it as interval labels
        assert out["b"].between(df["b"].min() - 1e9, df["b"].max() + 1e9).all()


@pytest.mark.parametrize("name", cli_sample(0))
def test_cli_constant_column(name: str, tmp_path: Path) -> None:
    res = _anonymize_cli(tmp_path, name, constant_column())
    assert res.exit_code == 0, res.output
    back = pd.read_csv(tmp_path / "out.csv")
    assert (back["a"] == 3.5).all()


# ------------------------------------------------------------------ techniques: parameters
@pytest.mark.parametrize("name", NAMES)
def test_technique_unknown_parameter(name: str) -> None:
    with pytest.raises(PPDMError, match="no_such_param"):
        _tech(name, no_such_param=1)


@pytest.mark.parametrize("name", cli_sample(2))
def test_cli_unknown_parameter(name: str, tmp_path: Path) -> None:
    res = _anonymize_cli(tmp_path, name, base_table(), {"no_such_param": 1})
    assert_clean_failure(res, tmp_path, {"in.csv"}, "no_such_param")


@pytest.mark.parametrize("name", NAMES)
def test_technique_impossible_parameter(name: str) -> None:
    key, value = IMPOSSIBLE[name]
    with pytest.raises(PPDMError, match=key):
        _fit_transform(_tech(name, **{key: value}), base_table())


@pytest.mark.parametrize("name", cli_sample(3))
def test_cli_impossible_parameter(name: str, tmp_path: Path) -> None:
    key, value = IMPOSSIBLE[name]
    res = _anonymize_cli(tmp_path, name, base_table(), {key: value})
    assert_clean_failure(res, tmp_path, {"in.csv"}, key)


@pytest.mark.parametrize("name", cli_sample(4))
def test_technique_unknown_method_and_builtin(name: str, tmp_path: Path) -> None:
    res = runner.invoke(app, ["anonymize", "builtin:no_such_data", "-m", name, "-o", str(tmp_path / "o.csv")])
    assert_clean_failure(res, tmp_path, set(), "no_such_data")


def test_unknown_technique(tmp_path: Path) -> None:
    res = _anonymize_cli(tmp_path, "no-such-technique", base_table())
    assert_clean_failure(res, tmp_path, {"in.csv"}, "no-such-technique")


# ------------------------------------------------------------------ measures through ppdm evaluate
@pytest.fixture(scope="module")
def measure_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    d = tmp_path_factory.mktemp("measures")
    x = base_table()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        z = make_technique("gaussian-noise", class_column="label", random_state=0, params={"level": 0.3}).fit_transform(x)

    def w(df: pd.DataFrame, name: str) -> Path:
        p = d / name
        df.to_csv(p, index=False)
        return p

    X, Z = w(x, "x.csv"), w(z, "z.csv")
    # edit_rule_violations is judged only on a schema that declares edit rules
    (d / "schema.json").write_text(json.dumps({"numeric": ["a", "b"], "categorical": ["c"], "class_column": "label",
                                               "edit_rules": ['c == "red" -> b >= 0']}))
    zn = z.copy()
    zn.loc[3, "a"] = np.nan
    xc, zc = x.copy(), z.copy()
    xc["a"] = 2.0
    zc["a"] = 2.0
    x1 = x.copy()
    x1["label"] = "yes"
    return {
        "good": (X, Z),
        "columns": (X, w(z.rename(columns={"a": "aa"}), "z_cols.csv")),
        "rows": (X, w(z.iloc[:-7], "z_rows.csv")),
        "nan_z": (X, w(zn, "z_nan.csv")),
        "constant": (w(xc, "x_const.csv"), w(zc, "z_const.csv")),
        "single_class": (w(x1, "x_single.csv"), Z),
    }


#: what the risk measures need besides x and z: declared quasi-identifiers, a sensitive
#: attribute, a control set (here the good x, whose columns every case shares)
NEEDS: dict[str, list[str]] = {
    # the noise release perturbs c: the key-variable measures are asked for on it all the same
    **{m: ["--qi", "c", "-p", f"{m}.all_keys=true"] for m in ("k_anonymity", "k_anonymity_intruder", "sample_uniques",
                                                               "reidentification_risk", "suda2",
                                                               "restorable_keys")},
    "l_diversity": ["--qi", "c", "--sensitive", "b", "-p", "l_diversity.all_keys=true"],
    "attribute_disclosure": ["--qi", "c", "--sensitive", "b", "-p", "attribute_disclosure.all_keys=true"],
    # the privacy models of ppdm.metrics.privacy_models, on the numeric sensitive b (ordered t-closeness)
    **{m: ["--qi", "c", "--sensitive", "b", "-p", f"{m}.all_keys=true"]
       for m in ("t_closeness", "recursive_cl_diversity", "alpha_k_anonymity", "basic_beta_likeness",
                 "enhanced_beta_likeness", "delta_disclosure")},
}
CONTROLLED = {"singling_out_univariate", "singling_out_multivariate", "linkability", "inference"}


def _evaluate(measure: str, x: Path, z: Path) -> Any:
    extra = list(NEEDS.get(measure, []))
    if measure in CONTROLLED:
        extra += ["--control", str(x.parent / "x.csv")]
    if measure in MEASURES and MEASURES[measure].declared_by:
        extra += ["--schema", str(x.parent / "schema.json")]
    # the tables of this matrix are made row by row from x: the owner pairs them by position
    return runner.invoke(app, ["evaluate", "-x", str(x), "-z", str(z), "--class", "label", "--pairing", "position",
                               "--measures", measure, "--json", *extra])


def _value(res: Any, measure: str) -> float:
    assert res.exit_code == 0, res.output
    m = json.loads(res.stdout)["measures"][measure]
    v = m["value"]
    assert m["status"] == "computed" and isinstance(v, (int, float)) and math.isfinite(v), m
    return float(v)


def _skipped(res: Any, measure: str, needle: str) -> str:
    """The table does not allow the measure: the evaluation still succeeds, the measure is
    reported skipped (value null) with a reason naming ``needle``."""
    assert res.exit_code == 0, res.output
    m = json.loads(res.stdout)["measures"][measure]
    assert m["status"] == "skipped" and m["value"] is None, m
    assert needle in m["reason"], m["reason"]
    return m["reason"]


#: the measures the default run puts through the bad-input matrix: one for each way a measure
#: meets these tables (record by record, scaled by a column's deviation, needing the class, the
#: key variables, a sensitive attribute, a control set or declared edit rules, a release check);
#: the slow run (.ci/run) puts every registered measure through it
MEASURE_SAMPLE = {"il1s", "ddr", "rule_accuracy", "prediction_accuracy", "k_anonymity", "l_diversity",
                  "linkability", "edit_rule_violations", "release_check", "record_linkage", "verbatim_copies"}


@pytest.mark.parametrize("measure", [m if m in MEASURE_SAMPLE else pytest.param(m, marks=pytest.mark.slow)
                                     for m in MEASURE_NAMES])
def test_measure_bad_inputs(measure: str, measure_files: dict[str, tuple[Path, Path]]) -> None:
    folder = measure_files["good"][0].parent
    files = {p.name for p in folder.iterdir()}
    _value(_evaluate(measure, *measure_files["good"]), measure)
    assert_clean_failure(_evaluate(measure, *measure_files["columns"]), folder, files, "'aa'")
    assert_clean_failure(_evaluate(measure, *measure_files["nan_z"]), folder, files, "'a'")

    # tables that do not allow a measure: it is skipped with its reason, the evaluation goes on
    res = _evaluate(measure, *measure_files["rows"])
    if measure in ALIGNED:
        _skipped(res, measure, "rows")
    elif json.loads(res.stdout)["measures"][measure]["status"] == "skipped":
        _skipped(res, measure, "rows")  # a measure not in ALIGNED may still refuse, naming the row counts
    else:
        _value(res, measure)

    res = _evaluate(measure, *measure_files["constant"])
    if measure in SD_SCALED:
        assert "constant" in _skipped(res, measure, "'a'")
    else:
        _value(res, measure)

    res = _evaluate(measure, *measure_files["single_class"])
    if MEASURES[measure].needs_class:
        _skipped(res, measure, "'label'")
    else:
        _value(res, measure)
    assert {p.name for p in folder.iterdir()} == files  # evaluate writes nothing without --html


def test_the_measure_sample_names_registered_measures() -> None:
    assert MEASURE_SAMPLE <= set(MEASURE_NAMES), sorted(MEASURE_SAMPLE - set(MEASURE_NAMES))


def test_unknown_measure(measure_files: dict[str, tuple[Path, Path]]) -> None:
    folder = measure_files["good"][0].parent
    files = {p.name for p in folder.iterdir()}
    assert_clean_failure(_evaluate("no_such_measure", *measure_files["good"]), folder, files, "no_such_measure")


# ------------------------------------------------------------------ malformed files, every command
MALFORMED: dict[str, Callable[[Path], Path]] = {
    "ragged": lambda d: _write(d / "bad.csv", "a,b,c,label\n1,2,red,yes\n3,4,blue,no,extra,more\n5\n"),
    "binary": lambda d: _write_bytes(d / "bad.csv", bytes(range(256)) * 20),
    "empty_file": lambda d: _write(d / "bad.csv", ""),
    "header_only": lambda d: _write(d / "bad.csv", "a,b,c,label\n"),
    "missing_file": lambda d: d / "absent.csv",
    "directory": lambda d: _mkdir(d / "folder.csv"),
}


def _write(p: Path, text: str) -> Path:
    p.write_text(text)
    return p


def _write_bytes(p: Path, data: bytes) -> Path:
    p.write_bytes(data)
    return p


def _mkdir(p: Path) -> Path:
    p.mkdir()
    return p


def _commands(bad: str, good: Path, out: Path) -> dict[str, list[str]]:
    return {
        "anonymize": ["anonymize", bad, "-m", "uniform-noise", "-o", str(out), "--class", "label"],
        "evaluate_x": ["evaluate", "-x", bad, "-z", str(good), "--class", "label", "--measures", "il1s"],
        "evaluate_z": ["evaluate", "-x", str(good), "-z", bad, "--class", "label", "--measures", "il1s",
                       "--html", str(out.with_suffix(".html"))],
        "rules": ["rules", bad, "--class", "label", "-o", str(out)],
        "tree": ["tree", bad, "--class", "label", "--rules-out", str(out)],
        "compare": ["compare", bad, "--class", "label", "-t", "uniform-noise", "--cv", "2", "-o",
                    str(out.parent / "cmp")],
        "reconstruct": ["reconstruct", bad, "-o", str(out)],
    }


@pytest.mark.parametrize("kind", [*MALFORMED, "unknown_builtin"])
def test_commands_refuse_malformed_input(kind: str, tmp_path: Path) -> None:
    good = tmp_path / "good.csv"
    base_table().to_csv(good, index=False)
    bad = "builtin:no_such_data" if kind == "unknown_builtin" else str(MALFORMED[kind](tmp_path))
    before = {p.name for p in tmp_path.iterdir()}
    for cmd, args in _commands(bad, good, tmp_path / "out.csv").items():
        res = runner.invoke(app, args)
        needle = "no_such_data" if kind == "unknown_builtin" and cmd != "reconstruct" else None
        try:
            assert_clean_failure(res, tmp_path, before, needle)
        except AssertionError as e:
            raise AssertionError(f"ppdm {cmd} with {kind}: {e}") from None


# ------------------------------------------------------------------ determinism and the table contract
def _small(name: str) -> pd.DataFrame:
    """wine (numeric, two integer columns) and cmc (categorical codes), cut to a few columns
    so every technique runs with its defaults in well under a second (DPCube's grid stays small)."""
    if name == "wine":
        df, _ = load("wine")
        return df[["alcohol", "malic_acid", "magnesium", "proline", "class"]].iloc[::2]
    df, _ = load("cmc")
    return df[["wife_age", "wife_education", "number_of_children", "media_exposure", "contraceptive_method"]].iloc[::5]


def _cls(data: str) -> str:
    return "class" if data == "wine" else "contraceptive_method"


def _schema_tech(name: str, data: str, seed: int = 7) -> Any:
    _, schema = load(data)
    df = _small(data)
    sch = {"numeric": [c for c in schema.numeric if c in df], "categorical": [c for c in schema.categorical if c in df],
           "class_column": _cls(data), "integer": [c for c in schema.integer if c in df]}
    return make_technique(name, class_column=_cls(data), random_state=seed, schema=sch,
                          params=BASE_PARAMS.get(name, {}))


@pytest.mark.parametrize("data", ["wine", "cmc"])
@pytest.mark.parametrize("name", NAMES)
def test_same_seed_same_bytes_and_table_contract(name: str, data: str, tmp_path: Path) -> None:
    df = _small(data)
    # a shuffled, non-default index: it and the row order must come back unchanged
    df = df.iloc[np.random.default_rng(1).permutation(len(df))]
    df.index = pd.Index([f"r{i}" for i in df.index])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tech = _schema_tech(name, data)
        one = tech.fit_transform(df)
        two = _schema_tech(name, data).fit_transform(df)
    write_table(one, tmp_path / "one.csv")
    write_table(two, tmp_path / "two.csv")
    assert (tmp_path / "one.csv").read_bytes() == (tmp_path / "two.csv").read_bytes()
    assert one.index.equals(df.index)
    assert list(one.columns) == list(df.columns)
    assert same_dtypes(one, tech, df)


@pytest.mark.parametrize("name", cli_sample(2))  # the library's bytes: test_same_seed_same_bytes_and_table_contract
def test_cli_same_seed_same_file(name: str, tmp_path: Path) -> None:
    src = tmp_path / "wine.csv"
    _small("wine").to_csv(src, index=False)
    outs = []
    for i in range(2):
        out = tmp_path / f"z{i}.csv"
        args = ["anonymize", str(src), "-m", name, "-o", str(out), "--class", "class", "--seed", "7", "--experiment-seed", *GATE_OFF]
        res = runner.invoke(app, args + _param_args(BASE_PARAMS.get(name, {})))
        assert res.exit_code == 0, res.output
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]


@pytest.mark.parametrize("name", NAMES)
def test_clone_and_get_params_round_trip(name: str) -> None:
    t = _schema_tech(name, "wine")
    c = clone(t)
    assert c.get_params() == t.get_params()
    assert type(c)(**c.get_params()).get_params() == t.get_params()
    df = _small("wine")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert t.fit_transform(df).equals(c.fit_transform(df))


# ------------------------------------------------------------------ Dask
@pytest.mark.parametrize("name", NAMES)
def test_dask_transform(name: str) -> None:
    dd = pytest.importorskip("dask.dataframe")
    df = _small("wine")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = _schema_tech(name, "wine").fit(df)
        ddf = dd.from_pandas(df, npartitions=3)
        lazy = t.transform(ddf)
        a = lazy.compute()
        b = t.transform(ddf).compute()
    assert a.shape == df.shape
    assert list(a.columns) == list(lazy.columns) == list(df.columns)
    assert a.dtypes.equals(lazy.dtypes) and same_dtypes(a, t, df)
    assert a.index.equals(df.index)
    assert a.equals(b)
    vals = a.select_dtypes("number").to_numpy(dtype=float, na_value=np.nan)
    # local suppression blanks cells (missing in z); no technique releases an infinite value
    assert (np.isfinite(vals) | (np.isnan(vals) & TECHNIQUES[name].makes_missing)).all()
    # every released class value is one of x's
    assert set(a["class"]) <= set(df["class"])


def test_dask_fit_is_refused() -> None:
    dd = pytest.importorskip("dask.dataframe")
    t = _schema_tech("uniform-noise", "wine")
    with pytest.raises(PPDMError, match="pandas"):
        t.fit(dd.from_pandas(_small("wine"), npartitions=3))


@pytest.mark.parametrize("name", NAMES)
def test_wrongly_typed_parameters_fail_cleanly(name: str) -> None:
    """Any parameter given a nonsense value either works or raises PPDMError, never a TypeError."""
    from ppdm.anonymize.registry import technique_params

    for key in technique_params(TECHNIQUES[name]):
        if key in BASE_PARAMS.get(name, {}):
            continue
        for value in (5, "bogus"):
            df = base_table(40)
            tech = _tech(name, **{key: value})
            try:
                out = _fit_transform(tech, df)
            except PPDMError as e:
                assert str(e) and "\n" not in str(e)
            else:  # the value was usable: the table contract still holds
                assert out.shape == df.shape and same_dtypes(out, tech, df)


def test_dask_mdav_partitions_smaller_than_k() -> None:
    """MDAV sorts a Dask table before grouping: partitions of fewer than k records are regrouped,
    a table of fewer than k records is refused."""
    dd = pytest.importorskip("dask.dataframe")
    t = make_technique("mdav", class_column="label", random_state=7, params={"k": 30}).fit(base_table())
    z = t.transform(dd.from_pandas(base_table(), npartitions=3, sort=False)).compute()
    assert z.groupby(["a", "b"]).size().tolist() == [30, 30]
    with pytest.raises(PPDMError, match="k=30"):
        t.transform(dd.from_pandas(base_table(20), npartitions=3))


@pytest.mark.parametrize(("exc", "code", "prefix"), [
    (RuntimeError("first line\nsecond line"), 1, "internal error: RuntimeError: first line second line"),
    (PPDMError("column ['x', '[bold]y[/bold]']\nis bad"), 2, "error: column ['x', '[bold]y[/bold]'] is bad"),
])
def test_cli_errors_are_one_faithful_line(exc: Exception, code: int, prefix: str, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import ppdm.anonymize.registry as registry

    def boom(*args: Any, **kwargs: Any) -> Any:
        raise exc

    monkeypatch.delenv("PPDM_DEBUG", raising=False)
    monkeypatch.setattr(registry, "make_technique", boom)
    res = _anonymize_cli(tmp_path, "uniform-noise", base_table())
    out = res.output.strip()
    assert res.exit_code == code
    assert len(out.splitlines()) == 1 and out.startswith(prefix), out
    assert {p.name for p in tmp_path.iterdir()} == {"in.csv"}
