"""The library as its docs show it: every registered measure's function is importable from
its package (``from ppdm.metrics import k_anonymity``, ``from ppdm.attacks import
singling_out``), and no module shadows a function, whatever was imported before."""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

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


@pytest.mark.parametrize("pkg_name", MEASURE_PACKAGES)
def test_no_module_shadows_an_exported_function(pkg_name: str) -> None:
    """Even after every module of the package was imported (which binds each module on the
    package), every exported name is still a function. Run in a fresh interpreter, importing
    the modules first, then the package's names."""
    pkg = importlib.import_module(pkg_name)
    modules = [m.name for m in pkgutil.iter_modules(pkg.__path__)]
    code = "\n".join([
        "import importlib, inspect",
        *[f"import {pkg_name}.{m}" for m in modules],
        f"import {pkg_name} as pkg",
        "bad = [n for n in pkg.__all__ if inspect.ismodule(getattr(pkg, n))]",
        "print(','.join(bad))",
    ])
    out = subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"modules shadow functions of {pkg_name}: {out.stdout.strip()}"


@pytest.mark.parametrize(("statement", "expected"), [
    ("import ppdm.attacks.singling_out\nfrom ppdm.attacks import singling_out", "ppdm.attacks.singling_out"),
    ("from ppdm.attacks import singling_out", "ppdm.attacks.singling_out"),
    ("from ppdm.metrics import k_anonymity", "ppdm.metrics.keyvar"),
    ("import ppdm.metrics.release_check\nfrom ppdm.metrics import release_check", "ppdm.metrics.release_check"),
])
def test_the_imports_of_the_issue(statement: str, expected: str) -> None:
    name = statement.rsplit(" ", 1)[1]
    code = f"{statement}\nimport inspect\nassert inspect.isfunction({name}), {name}\nprint({name}.__module__)"
    out = subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == expected


def test_importing_the_package_loads_the_measures_lazily() -> None:
    code = ("import sys, ppdm.metrics, ppdm.attacks\n"
            "print(','.join(m for m in ('ppdm.metrics.keyvar', 'ppdm.metrics.structure', "
            "'ppdm.attacks.reconstruction', 'ppdm.anonymize.random_substitution') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], env=ENV, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
