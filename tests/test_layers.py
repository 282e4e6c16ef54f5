"""The layering of docs/architecture.md holds: reading every module's imports (at the top,
inside functions and under ``if TYPE_CHECKING`` alike), no module imports a higher layer,
the packages do not import each other in a cycle, and inside a package the modules do not
import each other in a cycle either."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PKG = ROOT / "ppdm"

#: low → high; modules of one layer may import each other and any lower layer
LAYERS: list[tuple[str, ...]] = [
    ("ppdm.errors", "ppdm.utils", "ppdm.progress", "ppdm.parallel", "ppdm._version"),
    ("ppdm.data", "ppdm.datasets"),
    ("ppdm",),  # the package root re-exports Schema from the data layer, so the data layer never imports it
    ("ppdm.rules",),
    ("ppdm.trees",),
    ("ppdm.anonymize",),
    ("ppdm.metrics",),
    ("ppdm.attacks",),
    ("ppdm.experiments",),
    ("ppdm.report",),
    ("ppdm.cli",),
]

#: pairs (a, b): a never imports b although b is lower. Measures judge a release whatever made
#: it, so they never run a technique; an attack that re-runs one belongs to ppdm.attacks.
FORBIDDEN = [("ppdm.metrics", "ppdm.anonymize")]


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def unit(module: str) -> str:
    """The layer unit of a module: the longest entry of :data:`LAYERS` it falls under."""
    best = ""
    for layer in LAYERS:
        for u in layer:
            if (module == u or module.startswith(u + ".")) and len(u) > len(best):
                best = u
    if not best:
        raise AssertionError(f"module {module} is in no layer of LAYERS; add its package there")
    return best


def rank(module: str) -> int:
    u = unit(module)
    return next(i for i, layer in enumerate(LAYERS) if u in layer)


MODULES = sorted(PKG.rglob("*.py"))
MODULE_NAMES = frozenset(module_name(p) for p in MODULES)


def imports_of(path: Path, mod: str | None = None) -> list[tuple[int, str]]:
    """Every ppdm module ``path`` (module ``mod``) imports, with the line, wherever the import
    statement is: at the top, inside a function or under ``if TYPE_CHECKING``. ``from P import
    name`` counts as importing the module ``P.name`` when there is one (else ``P`` itself)."""
    mod = module_name(path) if mod is None else mod
    package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if node.module is None or node.level:
                # ``from . import x`` may name submodules: count each as imported
                out += [(node.lineno, f"{target}.{a.name}") for a in node.names]
                out.append((node.lineno, target))
            else:
                subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in MODULE_NAMES]
                out += [(node.lineno, s) for s in subs]
                if len(subs) < len(node.names):  # some names are attributes of the package itself
                    out.append((node.lineno, target))
    return [(line, name) for line, name in out if name == "ppdm" or name.startswith("ppdm.")]


@functools.cache
def edges() -> list[tuple[str, int, str, str]]:
    """Every import of every module (read when a test first asks, not while the suite is
    collected: each test process collects this file, one runs its tests)."""
    out = []
    for path in MODULES:
        src = module_name(path)
        for line, target in imports_of(path):
            out.append((str(path.relative_to(ROOT)), line, src, target))
    return out


def test_the_walk_sees_imports_inside_functions() -> None:
    # the check is only meaningful if lazy imports are read too
    lazy = [e for e in edges() if e[2] == "ppdm.cli.cmd_evaluate" and e[3] == "ppdm.experiments.evaluation"]
    assert lazy, "the import of ppdm.experiments.evaluation inside evaluate() was not found"
    assert len(MODULES) > 60


def test_every_module_has_a_layer() -> None:
    for path in MODULES:
        unit(module_name(path))


def _under(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def upward(edges: list[tuple[str, int, str, str]]) -> list[str]:
    """The edges that break the layering: a lower layer importing a higher one, or a pair of
    :data:`FORBIDDEN`."""
    bad = [f"{where}:{line}: {src} (layer {rank(src)}) imports {target} (layer {rank(target)})"
           for where, line, src, target in edges if rank(target) > rank(src)]
    bad += [f"{where}:{line}: {src} imports {target} ({a} must not import {b})"
            for where, line, src, target in edges for a, b in FORBIDDEN if _under(src, a) and _under(target, b)]
    return bad


def test_no_module_imports_a_higher_layer() -> None:
    bad = upward(edges())
    assert not bad, "lower layers import higher ones:\n" + "\n".join(bad)


def _package(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else module


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of ``graph`` as a list of nodes (first == last), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                found = visit(m)
                if found:
                    return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            found = visit(n)
            if found:
                return found
    return None


def test_packages_do_not_import_each_other_in_a_cycle() -> None:
    graph: dict[str, set[str]] = {}
    for _, _, src, target in edges():
        a, b = _package(src), _package(target)
        if a != b and a != "ppdm" and b != "ppdm":  # importing ppdm.x always runs ppdm/__init__ first
            graph.setdefault(a, set()).add(b)
    cycle = find_cycle(graph)
    assert cycle is None, "package import cycle: " + " → ".join(cycle or [])


def module_cycle(edges: list[tuple[str, int, str, str]]) -> list[str] | None:
    """A cycle among the modules of one package (``ppdm.metrics.base`` → ``ppdm.metrics._dask``
    → ... → ``ppdm.metrics.base``), or None. Every import counts, also one inside a function or
    under ``if TYPE_CHECKING``: such an import only defers loading, the modules still depend on
    each other (docs/architecture.md)."""
    graph: dict[str, set[str]] = {}
    for _, _, src, target in edges:
        if target != src and target in MODULE_NAMES and _package(src) == _package(target):
            graph.setdefault(src, set()).add(target)
    return find_cycle(graph)


def test_modules_of_a_package_do_not_import_each_other_in_a_cycle() -> None:
    cycle = module_cycle(edges())
    where = {(src, target): f"{path}:{line}" for path, line, src, target in edges()}
    steps = [f"{a} → {b} ({where.get((a, b), '?')})" for a, b in zip(cycle or [], (cycle or [])[1:], strict=False)]
    assert cycle is None, "module import cycle inside a package:\n" + "\n".join(steps)


def test_the_data_layer_does_not_import_the_package_root() -> None:
    # the root re-exports the data layer's Schema; the version lives in ppdm._version
    bad = [f"{where}:{line}" for where, line, src, target in edges() if rank(src) < rank("ppdm") and target == "ppdm"]
    assert not bad, "modules below the package root import it: " + ", ".join(bad)


@pytest.mark.parametrize(("sources", "cyclic"), [
    # what ppdm.data.io and ppdm.data.schema did: a function-level import closes the circle
    ({"ppdm.data.io": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ppdm.data.schema import Schema\n",
      "ppdm.data.schema": "def save():\n    from ppdm.data.io import atomic_write_text\n"}, True),
    ({"ppdm.metrics.base": "def f():\n    from ppdm.metrics._dask import sample_pairs\n",
      "ppdm.metrics._dask": "def g():\n    from ppdm.metrics.release_check import merge_moments\n",
      "ppdm.metrics.release_check": "from ppdm.metrics.base import MeasureResult\n"}, True),
    # a package's registry listing its own package: a circle with the package's __init__
    ({"ppdm.anonymize": "from ppdm.anonymize.registry import register\n",
      "ppdm.anonymize.registry": "def load():\n    import ppdm.anonymize as pkg\n"}, True),
    # a submodule named through its package is that submodule, not the package's __init__
    ({"ppdm.data": "from ppdm.data.io import read_table\n",
      "ppdm.data.io": "def f():\n    from ppdm.data import types\n"}, False),
    # across packages a function-level import is the layer check's business, not this one's
    ({"ppdm.metrics.base": "def f():\n    from ppdm.trees.cart import rules_from_cart\n",
      "ppdm.trees.cart": "from ppdm.data.schema import Schema\n"}, False),
])
def test_the_check_catches_a_module_cycle(tmp_path: Path, sources: dict[str, str], cyclic: bool) -> None:
    edges = []
    for i, (module, source) in enumerate(sources.items()):
        path = tmp_path / f"m{i}.py"
        path.write_text(source)
        edges += [(path.name, line, module, target) for line, target in imports_of(path, module)]
    assert (module_cycle(edges) is not None) == cyclic


@pytest.mark.parametrize(("graph", "cyclic"), [
    ({"a": {"b"}, "b": {"c"}}, False),
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, True),
    ({"a": {"a"}}, True),
])
def test_cycle_finder(graph: dict[str, set[str]], cyclic: bool) -> None:
    assert (find_cycle(graph) is not None) == cyclic


@pytest.mark.parametrize(("module", "source", "caught"), [
    # what ppdm.metrics.attacks did before it moved to ppdm.attacks
    ("ppdm.metrics.bad", "def f():\n    from ppdm.anonymize.noise import UniformNoise\n    return UniformNoise\n", True),
    # what ppdm.rules.cart and ppdm.rules.trees did before they moved to ppdm.trees
    ("ppdm.rules.bad", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ppdm.trees.base import TreeModel\n",
     True),
    ("ppdm.rules.bad", "from ..trees import cart\n", True),
    ("ppdm.trees.fine", "from ppdm.rules.core import Rule\nfrom . import base\n", False),
])
def test_the_check_catches_an_upward_import(tmp_path: Path, module: str, source: str, caught: bool) -> None:
    path = tmp_path / "bad.py"
    path.write_text(source)
    edges = [("bad.py", line, module, target) for line, target in imports_of(path, module)]
    assert edges
    assert bool(upward(edges)) == caught
