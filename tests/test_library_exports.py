"""The library as its docs show it: every registered measure's function is importable from
its package (``from ppdm.metrics import k_anonymity``, ``from ppdm.attacks import
singling_out``), and no module shadows a function, whatever was imported before."""

from __future__ import annotations

import importlib
import inspect
import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ppdm.experiments.evaluation import MEASURE_PACKAGES, load_all_measures

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
REGISTRY = load_all_measures()


def _package_of(spec_module: str) -> str:
    return next(p for p in MEASURE_PACKAGES if spec_module.startswith(p + "."))


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_registered_measure_has_a_function_in_its_package(name: str) -> None:
    spec = REGISTRY[name]
    pkg_name = _package_of(spec.fn.__module__)
    pkg = importlib.import_module(pkg_name)
    assert name in pkg.MEASURE_FUNCTIONS, f"{pkg_name}.MEASURE_FUNCTIONS has no entry for measure {name!r}"
    module, fn_name = pkg.MEASURE_FUNCTIONS[name]
    namespace: dict = {}
    exec(f"from {pkg_name} import {fn_name}", namespace)  # the import a user writes
    fn = namespace[fn_name]
    assert inspect.isfunction(fn), f"from {pkg_name} import {fn_name} gives {fn!r}, not a function"
    # the function lives in the module that registers the measure
    assert fn.__module__ == spec.fn.__module__ == f"{pkg_name}.{module}"
    assert fn_name in pkg.__all__ and fn_name in dir(pkg)


@pytest.mark.parametrize("pkg_name", MEASURE_PACKAGES)
def test_no_stale_entries(pkg_name: str) -> None:
    pkg = importlib.import_module(pkg_name)
    stale = [m for m in pkg.MEASURE_FUNCTIONS if m not in REGISTRY]
    assert not stale, f"{pkg_name}.MEASURE_FUNCTIONS names measures nobody registers: {stale}"
    for name in pkg.__all__:
        assert getattr(pkg, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'no_such_measure'"):
        pkg.no_such_measure  # noqa: B018


# The checks below need an interpreter in which nothing of ppdm was imported yet (what a module
# binds on its package depends on what was imported before). A fresh Python for each costs about
# a second of CPU in imports, so one fresh Python runs them all: before each check it forgets
# every ppdm module (sys.modules), which gives that check the state of a fresh interpreter as far
# as ppdm goes (numpy, pandas and the rest stay loaded; no check looks at them).
_RUNNER = """
import contextlib, io, json, sys, traceback
results = {}
for key, code in json.loads(sys.stdin.read()):
    for name in [m for m in sys.modules if m == "ppdm" or m.startswith("ppdm.")]:
        del sys.modules[name]
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            exec(code, {"__name__": "__main__"})
        results[key] = {"ok": True, "out": out.getvalue(), "err": ""}
    except BaseException:
        results[key] = {"ok": False, "out": out.getvalue(), "err": traceback.format_exc()}
print(json.dumps(results))
"""

_LAZY = ("import sys, ppdm.metrics, ppdm.attacks\n"
         "print(','.join(m for m in ('ppdm.metrics.keyvar', 'ppdm.metrics.structure', "
         "'ppdm.attacks.reconstruction', 'ppdm.anonymize.random_substitution') if m in sys.modules))")

ISSUE_IMPORTS = [
    ("import ppdm.attacks.singling_out\nfrom ppdm.attacks import singling_out", "ppdm.attacks.singling_out"),
    ("from ppdm.attacks import singling_out", "ppdm.attacks.singling_out"),
    ("from ppdm.metrics import k_anonymity", "ppdm.metrics.keyvar"),
    ("import ppdm.metrics.release_check\nfrom ppdm.metrics import release_check", "ppdm.metrics.release_check"),
]


def _shadow_code(pkg_name: str) -> str:
    pkg = importlib.import_module(pkg_name)
    modules = [m.name for m in pkgutil.iter_modules(pkg.__path__)]
    return "\n".join([
        "import importlib, inspect",
        *[f"import {pkg_name}.{m}" for m in modules],
        f"import {pkg_name} as pkg",
        "bad = [n for n in pkg.__all__ if inspect.ismodule(getattr(pkg, n))]",
        "print(','.join(bad))",
    ])


def _issue_code(statement: str) -> str:
    name = statement.rsplit(" ", 1)[1]
    return f"{statement}\nimport inspect\nassert inspect.isfunction({name}), {name}\nprint({name}.__module__)"


@pytest.fixture(scope="module")
def fresh() -> dict[str, dict[str, Any]]:
    """Every fresh-interpreter check, run in one new Python: check key -> ok, stdout, traceback."""
    checks = [("lazy", _LAZY),  # first: nothing of ppdm was loaded by an earlier check either
              *[(f"shadow:{p}", _shadow_code(p)) for p in MEASURE_PACKAGES],
              *[(f"issue:{s}", _issue_code(s)) for s, _ in ISSUE_IMPORTS],
              # the runner's own check: what one check imports, the next does not see
              ("forget:a", "import ppdm.metrics.keyvar\nimport ppdm.metrics\nprint(hasattr(ppdm.metrics, 'keyvar'))"),
              ("forget:b", "import sys, ppdm.metrics\nprint('ppdm.metrics.keyvar' in sys.modules)")]
    out = subprocess.run([sys.executable, "-c", _RUNNER], input=json.dumps(checks), env=ENV, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("pkg_name", MEASURE_PACKAGES)
def test_no_module_shadows_an_exported_function(pkg_name: str, fresh: dict[str, dict[str, Any]]) -> None:
    """Even after every module of the package was imported (which binds each module on the
    package), every exported name is still a function. Checked with nothing of ppdm imported
    before, importing the modules first, then the package's names."""
    res = fresh[f"shadow:{pkg_name}"]
    assert res["ok"], res["err"]
    assert res["out"].strip() == "", f"modules shadow functions of {pkg_name}: {res['out'].strip()}"


@pytest.mark.parametrize(("statement", "expected"), ISSUE_IMPORTS)
def test_the_imports_of_the_issue(statement: str, expected: str, fresh: dict[str, dict[str, Any]]) -> None:
    res = fresh[f"issue:{statement}"]
    assert res["ok"], res["err"]
    assert res["out"].strip() == expected


def test_importing_the_package_loads_the_measures_lazily(fresh: dict[str, dict[str, Any]]) -> None:
    res = fresh["lazy"]
    assert res["ok"], res["err"]
    assert res["out"].strip() == ""


def test_the_fresh_checks_forget_ppdm_between_checks(fresh: dict[str, dict[str, Any]]) -> None:
    """The shared fresh Python gives each check a ppdm imported anew: a module bound on its
    package by one check is gone for the next."""
    assert (fresh["forget:a"]["out"].strip(), fresh["forget:b"]["out"].strip()) == ("True", "False"), fresh
