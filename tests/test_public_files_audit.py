"""An audit of every public file ppdm writes beside a release: nothing of x may be in them.

Every registered technique (:data:`ppdm.anonymize.registry.TECHNIQUES`), one ``--then`` chain
and one partitioned release are made from a few hundred records of adult, the way ``ppdm
anonymize`` makes them (:func:`ppdm.experiments.release.release` + ``save_release``), with a
control set held out. Then every public JSON file beside the release (the provenance and the
technique's sidecars: everything but the owner's ``.private.json`` and control set) is walked:

* no number in it equals a count of x: n, the records used, the records held out, a
  category's count (in x and in the records used), a count of records below k from the
  private log;
* no number equals x's smallest or largest value of a numeric column;
* no category of x that z does not hold is named (a value or a key).

The table keeps only categories with at least 12 records in the sample, so that a perturbed
release holds every one of them (a category absent from z would be a coincidence of the draw)
and no count of x is a small number such as 1, 2 or 5 that a file states for its own reasons.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from json_numbers import json_numbers

from ppdm.anonymize.composition import make_composition
from ppdm.anonymize.registry import TECHNIQUES, _load_all, make_technique
from ppdm.data.provenance import decode_positions, read_private
from ppdm.datasets import load
from ppdm.experiments.release import release, save_release

_load_all()
NAMES = sorted(TECHNIQUES)
CATEGORICAL = ["workclass", "education", "marital_status", "race", "sex"]
NUMERIC = ["age", "hours_per_week", "capital_gain"]
CLASS = "income"
#: parameters a technique cannot run without on this table, or keeps it small and fast
PARAMS: dict[str, dict[str, Any]] = {
    "random-substitution": {"gamma": 5.0},
    "dpcube": {"neighbouring": "replace"},
    "top-bottom-coding": {"top": "75%", "bottom": "25%"},
    "recode": {"min_count": 40},
    "local-suppression": {"k": 5, "keys": ["workclass", "race", "sex"]},
    "forest-framework": {"n_trees": 3},
    "pram": {"perturb_class": True},
}
GATE_OFF = {"allow_unchanged": True, "allow_verbatim": True, "allow_untouched_keys": True}


@pytest.fixture(scope="module")
def table() -> tuple[pd.DataFrame, Any]:
    """About 500 records of adult whose categories each hold at least 12 records."""
    x, schema = load("adult", missing="drop")
    x = x.sample(650, random_state=3)[[*NUMERIC, *CATEGORICAL, CLASS]]
    for c in CATEGORICAL:
        counts = x[c].value_counts()
        x = x[x[c].isin(counts[counts >= 12].index)]
    x = x.reset_index(drop=True)
    sch = schema.to_dict()
    sch.update(numeric=NUMERIC, categorical=CATEGORICAL, integer=[c for c in sch["integer"] if c in NUMERIC],
               bounds={}, categories={}, hierarchies={}, quasi_identifiers=[], sensitive=[])
    # DPCube takes its domain from a declaration, never from x: a public one, wider than x's range
    sch["bounds"] = {"age": [0, 120], "hours_per_week": [0, 168], "capital_gain": [0, 100000]}
    sch["categories"] = {c: sorted(load("adult", missing="drop")[0][c].unique().tolist())
                         for c in [*CATEGORICAL, CLASS]}
    from ppdm.data.schema import Schema

    return x, Schema.from_dict(sch)


def _undeclared(schema: Any) -> Any:
    """The schema without bounds and categories, for techniques that would otherwise take the
    declaration's wide ranges (the audit then checks what they learn from x themselves)."""
    from dataclasses import replace

    return replace(schema, bounds={}, categories={})


def _forbidden(x: pd.DataFrame, private: dict[str, Any]) -> dict[float, str]:
    """Every count of x (positive: a zero count is no count of anybody) and x's extremes."""
    hold = private.get("holdout")
    held = decode_positions(hold["positions"]) if hold and hold.get("positions") else np.arange(0)
    used = x.drop(index=held)
    out: dict[float, str] = {}
    for name, t in (("x", x), ("used", used)):
        out[float(len(t))] = f"the number of records of {name}"
        for c in [*CATEGORICAL, CLASS]:
            for v, k in t[c].value_counts().items():
                out.setdefault(float(k), f"the count of {c}={v} in {name}")
    if len(held):
        out.setdefault(float(len(held)), "the number of records held out")
    for key, v in _private_counts(private.get("technique")):
        if v:
            out.setdefault(float(v), f"the private log's {key}")
    for c in NUMERIC:
        out[float(x[c].min())] = f"x's smallest {c}"
        out[float(x[c].max())] = f"x's largest {c}"
    return out


def _private_counts(report: Any, path: str = "", counting: bool = False) -> list[tuple[str, float]]:
    """The counts of records (below k, with a cell blanked) and of blanked cells the technique's
    private report holds, wherever they sit (chains nest them)."""
    out = []
    if isinstance(report, dict):
        for k, v in report.items():
            here = counting or k.startswith(("records_", "suppressed_"))
            if here and isinstance(v, (int, float)) and not isinstance(v, bool):
                out.append((f"{path}.{k}", v))
            else:
                out += _private_counts(v, f"{path}.{k}", here)
    return out


def _allowed(doc: dict[str, Any], z: pd.DataFrame) -> set[float]:
    """Numbers a public file may hold although one equals a count or an extreme of x by chance."""
    allowed: set[float] = set()
    # the parameters the user gave, and the defaults the provenance resolves (k, epsilon, gamma, pd,
    # breaks, ...): they are the owner's choice, not data; privacy reports repeat some of them
    for tech in _techniques(doc):
        allowed |= set(json_numbers(tech.get("parameters") or {}).values())
    # values z itself publishes (a kept value, a bin's representative, a top-coded bound)
    for c in NUMERIC:
        if c in z.columns:
            allowed |= set(pd.to_numeric(z[c], errors="coerce").dropna().astype(float))
    return allowed


def _techniques(doc: dict[str, Any]) -> list[dict[str, Any]]:
    tech = doc.get("technique")
    return [tech] if isinstance(tech, dict) else []


#: paths whose numbers are structural, never measured on x
STRUCTURAL = (".version", ".output.decimals.")
#: a matrices sidecar's domain size: as many as the values it lists, which z shows
DOMAIN_SIZE = re.compile(r"\.attributes\[\d+\]\.n$")


def _square_matrices(obj: Any, path: str = "") -> list[tuple[str, np.ndarray]]:
    """Every list of equally long lists of numbers (a square matrix) in a JSON document."""
    if isinstance(obj, dict):
        return [m for k, v in obj.items() for m in _square_matrices(v, f"{path}.{k}")]
    if isinstance(obj, list):
        if len(obj) > 1 and all(isinstance(r, list) and len(r) == len(obj)
                                and all(isinstance(v, (int, float)) for v in r) for r in obj):
            return [(path, np.asarray(obj, dtype=float))]
        return [m for i, v in enumerate(obj) for m in _square_matrices(v, f"{path}[{i}]")]
    return []


def _shares(x: pd.DataFrame, private: dict[str, Any], size: int) -> list[tuple[str, np.ndarray]]:
    """x's category shares (in x and in the records used, categories in sorted order) of every
    categorical column with ``size`` categories (a gamma-diagonal matrix is symmetric and keeps
    only the uniform distribution, so it never matches unequal shares)."""
    hold = private.get("holdout")
    held = decode_positions(hold["positions"]) if hold and hold.get("positions") else np.arange(0)
    out = []
    for t in (x, x.drop(index=held)):
        for c in [*CATEGORICAL, CLASS]:
            counts = t[c].value_counts().sort_index()
            if len(counts) == size:
                out.append((c, counts.to_numpy(dtype=float) / len(t)))
    return out


def _strings(obj: Any) -> set[str]:
    if isinstance(obj, dict):
        return {str(k) for k in obj} | {s for v in obj.values() for s in _strings(v)}
    if isinstance(obj, list):
        return {s for v in obj for s in _strings(v)}
    return {obj} if isinstance(obj, str) else set()


def _audit(folder: Path, stem: str, release_path: Path, x: pd.DataFrame, z: pd.DataFrame,
           given: dict[str, Any], noisy_counts: bool = False) -> list[str]:
    private = read_private(release_path)
    forbidden = _forbidden(x, private)
    absent = {str(v) for c in [*CATEGORICAL, CLASS] for v in set(x[c]) - set(z[c].dropna().astype(str))}
    problems = []
    public = [p for p in folder.iterdir() if p.name.startswith(stem + ".") and p.name.endswith(".json")
              and not p.name.endswith(".private.json")]
    assert any(p.name.endswith(".provenance.json") for p in public)
    docs = {p.name: json.loads(p.read_text()) for p in public}
    provenance = docs[f"{stem}.provenance.json"]
    # the parameters given here (k, gamma, min_count, ...): the user's choice, repeated by privacy reports
    allowed = _allowed(provenance, z) | set(json_numbers(given).values())
    for name, doc in docs.items():
        if noisy_counts and not name.endswith(".provenance.json"):
            # DPCube's sidecar holds the noisy counts of its differentially private mechanism: one may
            # equal a true count by chance, which its guarantee covers (tests/test_dpcube_audit.py);
            # extremes and category names are still checked
            extremes = {v for v, why in forbidden.items() if why.startswith("x's")}
            check = {v: forbidden[v] for v in extremes}
        else:
            check = forbidden
        for path, v in json_numbers(doc).items():
            if path.startswith(STRUCTURAL) or ".technique.parameters" in path or DOMAIN_SIZE.search(path):
                continue
            if noisy_counts and "noisy" in path:
                # a noisy count is the mechanism's output: drawn from OS entropy it equals any small
                # number now and then (an extreme of x included), which the guarantee covers
                continue
            # random substitution's bin edges lie on a public grid of round numbers (1, 2 or 5 × 10^k)
            # strictly inside x's range: one may equal a count by chance; they must never be an extreme
            what = {v: why for v, why in check.items() if why.startswith("x's")} if ".edges[" in path else check
            if v in what and v not in allowed:
                problems.append(f"{name}{path} = {v:g} is {what[v]}")
        for path, m in _square_matrices(doc):
            # invariant PRAM's matrices have x's category shares as their stationary distribution
            for c, shares in _shares(x, private, m.shape[0]):
                if np.allclose(m @ shares, shares, atol=1e-9) or np.allclose(shares @ m, shares, atol=1e-9):
                    problems.append(f"{name}{path}: its stationary distribution is x's shares of {c}")
        named = _strings(doc) & absent
        if named:
            problems.append(f"{name} names categories absent from z: {sorted(named)}")
    return problems


def _release(technique: Any, table: tuple[pd.DataFrame, Any], folder: Path, stem: str,
             declared: bool, given: dict[str, Any]) -> list[str]:
    x, schema = table
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rel = release(x, technique, schema=schema if declared else _undeclared(schema), holdout=0.1, **GATE_OFF)
        save_release(rel, folder / f"{stem}.csv")
    z = pd.read_csv(folder / f"{stem}.csv", dtype={c: str for c in [*CATEGORICAL, CLASS]})
    if declared:
        # a declared domain is the owner's public statement (hours_per_week ≤ 168), not a count of x
        given = {**given, "declared_bounds": schema.to_dict().get("bounds", {})}
    return _audit(folder, stem, folder / f"{stem}.csv", x, z, given, noisy_counts=stem == "dpcube")


@pytest.mark.parametrize("name", NAMES)
def test_no_public_file_of_a_technique_holds_anything_of_x(name: str, table, tmp_path: Path) -> None:
    # DPCube reads its domain from the declaration; every other technique learns from x what it
    # learns, which is what this audit is about
    # seeded: with OS entropy a draw could, once in many runs, state a number that equals a count
    # of x by coincidence (a default-suite run saw it once for pram); a file that copies x fails for any seed
    tech = make_technique(name, class_column=CLASS, params=PARAMS.get(name, {}), random_state=11)
    assert _release(tech, table, tmp_path, name, declared=name == "dpcube", given=PARAMS.get(name, {})) == []


def test_no_public_file_of_a_chain_holds_anything_of_x(table, tmp_path: Path) -> None:
    given = {"recode.columns": ["age", "education"], "recode.min_count": 40, "recode.breaks": 4, "k": 5,
             "keys": ["age", "race", "sex"], "pram.columns": ["marital_status"]}
    chain = make_composition(["recode", "local-suppression", "pram"], class_column=CLASS, params=given,
                             random_state=11)
    assert _release(chain, table, tmp_path, "chain", declared=False, given=given) == []


def test_no_public_file_of_a_partitioned_release_holds_anything_of_x(table, tmp_path: Path) -> None:
    from ppdm.data.partitions import open_dataset
    from ppdm.experiments.out_of_core import release_dataset

    x, schema = table
    src = tmp_path / "x.csv"
    x.to_csv(src, index=False)
    ds = open_dataset(str(src), blocksize="12KB", schema=_undeclared(schema))
    assert ds.npartitions >= 2
    # categories only: intervals fitted on a sample may miss a value of another partition
    given = {"columns": ["workclass", "education"], "min_count": 40}
    tech = make_technique("recode", class_column=CLASS, params=given)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        release_dataset(ds, tech, tmp_path / "z", schema=_undeclared(schema), fit_rows=300, **GATE_OFF)
    z = pd.concat([pd.read_parquet(p) for p in sorted((tmp_path / "z").glob("*.parquet"))], ignore_index=True)
    z = z.astype({c: str for c in [*CATEGORICAL, CLASS] if c in z.columns})
    assert _audit(tmp_path, "z", tmp_path / "z", x, z, given) == []
