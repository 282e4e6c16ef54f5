"""Name → technique registry used by the CLI (``ppdm methods``, ``--method``)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from ppdm.errors import ParameterError
from ppdm.utils import unknown_name

TECHNIQUES: dict[str, type] = {}
_COMMON = {"class_column", "schema", "random_state"}


def register(name: str) -> Callable[[type], type]:
    """Class decorator: make a technique available under ``name`` (kebab-case)."""

    def deco(cls: type) -> type:
        TECHNIQUES[name] = cls
        cls.method_name = name  # type: ignore[attr-defined]  # set on whichever class is decorated
        return cls

    return deco


def technique_params(cls: type) -> dict[str, Any]:
    """The technique's own parameters and their defaults (common ones left out)."""
    sig = inspect.signature(cls.__init__)  # type: ignore[misc]  # the class's own __init__, read, not called
    return {
        p.name: (None if p.default is inspect.Parameter.empty else p.default)
        for p in sig.parameters.values()
        if p.name != "self" and p.name not in _COMMON and p.kind is not p.VAR_KEYWORD
    }


#: the module of :mod:`ppdm.anonymize` that registers each technique, so that finding one imports
#: its module alone (every module costs a command's start about 0.3 s); a technique not listed is
#: still found by importing them all, and ``tests/test_registry_index.py`` checks the list
#: against what the modules register
MODULES: dict[str, str] = {
    "dpcube": "differential_privacy", "forest-framework": "forest_framework", "framework": "framework",
    "gadp": "gadp", "gaussian-noise": "noise", "generalize": "generalization_search",
    "local-suppression": "suppression", "mdav": "microaggregation", "pram": "pram",
    "random-substitution": "random_substitution", "random-technique": "random_technique", "recode": "recoding",
    "rounding": "rounding", "top-bottom-coding": "recoding", "uniform-noise": "noise",
}


def get_technique(name: str) -> type:
    if name not in TECHNIQUES and name in MODULES:
        import importlib

        importlib.import_module(f"ppdm.anonymize.{MODULES[name]}")
    if name not in TECHNIQUES:
        _load_all()
    if name not in TECHNIQUES:
        raise ParameterError(unknown_name("technique", name, sorted(TECHNIQUES)))
    return TECHNIQUES[name]


def make_technique(
    name: str,
    *,
    class_column: str | None = None,
    random_state: Any = None,
    schema: Any = None,
    params: dict[str, Any] | None = None,
):
    """Build technique ``name`` with ``params``, rejecting unknown parameter names."""
    cls = get_technique(name)
    allowed = technique_params(cls)
    params = dict(params or {})
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise ParameterError(
            f"technique {name!r} has no parameter {unknown[0]!r}; its parameters: {', '.join(allowed) or 'none'}"
        )
    for key, value in params.items():
        # ``--param scaling=none`` parses to None; a parameter whose default is text takes the text
        if value is None and isinstance(allowed[key], str):
            params[key] = "none"
    return cls(class_column=class_column, random_state=random_state, schema=schema, **params)


def _load_all() -> None:
    """Import every module of :mod:`ppdm.anonymize` so each registers its techniques."""
    import importlib
    import pkgutil
    from pathlib import Path

    # the modules beside this one (importing the package itself here would make a circle with
    # its __init__, which imports this module)
    for mod in pkgutil.iter_modules([str(Path(__file__).parent)]):
        if not mod.name.startswith("_"):
            importlib.import_module(f"ppdm.anonymize.{mod.name}")
