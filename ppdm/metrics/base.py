"""What every measure returns and how the CLI finds measures by name.

Measures are plain functions ``measure(x, z, ...) -> SomeResult`` where the result
is a dataclass deriving from :class:`MeasureResult`: ``value`` is the headline
number the paper reports, other fields carry per-rule / per-attribute detail
(pandas DataFrames are fine; :meth:`MeasureResult.to_dict` makes them JSON-ready).

For ``ppdm evaluate`` each measure also registers an adapter taking an
:class:`EvaluationContext` under its snake_case name (``rule_accuracy``, ``il1s``...).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ppdm.data.schema import Schema
from ppdm.errors import ParameterError


def _jsonable(v: Any) -> Any:
    if isinstance(v, pd.DataFrame):
        return [{str(k): _jsonable(x) for k, x in row.items()} for row in v.to_dict(orient="records")]
    if isinstance(v, pd.Series):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, set, frozenset)):
        return [_jsonable(x) for x in v]
    if isinstance(v, np.ndarray):
        return [_jsonable(x) for x in v.tolist()]
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {f.name: _jsonable(getattr(v, f.name)) for f in dataclasses.fields(v)}
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    return str(v)


@dataclass
class MeasureResult:
    """Base of every measure's result: ``value`` is the paper's headline number."""

    value: float

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of every field (DataFrames become lists of records)."""
        return {f.name: _jsonable(getattr(self, f.name)) for f in dataclasses.fields(self)}

    def details(self) -> dict[str, pd.DataFrame]:
        """Tables of per-rule / per-attribute detail, by name."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if isinstance(getattr(self, f.name), pd.DataFrame)}


#: records of a Dask ``x`` that CART finds Ψx in, by default
RULE_SAMPLE_ROWS = 100_000


@dataclass
class EvaluationContext:
    """Everything a measure may need when called by name from ``ppdm evaluate``.

    ``x`` is the original table, ``z`` the anonymized one, ``test`` an optional
    held-out table t (pandas DataFrames, or, for tables larger than memory, Dask DataFrames
    partitioned alike: see :mod:`ppdm.metrics.out_of_core`); ``control`` an optional control set of original records that
    were not used to make ``z`` (attack-based risk, Giomi et al. 2023); ``rules`` is
    Ψx (built lazily from ``x`` by CART when absent); ``options`` carries measure
    parameters from the command line.
    """

    x: pd.DataFrame
    z: pd.DataFrame
    schema: Schema
    test: pd.DataFrame | None = None
    control: pd.DataFrame | None = None
    rules: Any = None
    random_state: int | None = 0
    options: dict[str, Any] = field(default_factory=dict)
    cache: dict[str, Any] = field(default_factory=dict)

    def get_rules(self):
        """Ψx: the given rules, or CART rules found in ``x`` (paper 000 §7); for a Dask ``x``,
        in a uniform random sample of ``options["rule_rows"]`` of its records (default
        :data:`RULE_SAMPLE_ROWS`)."""
        if self.rules is None:
            from ppdm.rules.cart import rules_from_cart

            x = self.x
            if type(x).__module__.startswith("dask"):
                from ppdm.metrics._dask import sample_pairs

                k = int(self.options.get("rule_rows", RULE_SAMPLE_ROWS))
                x, _, _ = sample_pairs(x, None, k, int(self.random_state or 0))
            self.rules = rules_from_cart(x, self.schema, random_state=self.random_state)
        return self.rules


def load_all_measures() -> None:
    """Import every module of :mod:`ppdm.metrics` so each registers its measures."""
    import importlib
    import pkgutil

    import ppdm.metrics as pkg

    for mod in pkgutil.iter_modules(pkg.__path__):
        if not mod.name.startswith("_"):
            importlib.import_module(f"ppdm.metrics.{mod.name}")


MeasureFn = Callable[[EvaluationContext], MeasureResult]


@dataclass(frozen=True)
class MeasureSpec:
    name: str
    fn: MeasureFn
    kind: str  # "utility" or "risk"
    description: str
    needs_class: bool = True
    default: bool = False  # part of the default ``ppdm evaluate`` set
    requires: tuple[str, ...] = ()  # options without which it cannot run; left out of "all"
    direction: str | None = None  # "higher" or "lower" is better (for risk: better protected); None: neither
    value_range: tuple[float | None, float | None] = (None, None)  # bounds of ``value``; None = unbounded
    out_of_core: bool = False  # fn computes the measure exactly when x and z are Dask DataFrames


MEASURES: dict[str, MeasureSpec] = {}


def register_measure(
    name: str,
    *,
    kind: str,
    description: str,
    needs_class: bool = True,
    default: bool = False,
    requires: tuple[str, ...] = (),
    direction: str | None = None,
    value_range: tuple[float | None, float | None] = (None, None),
    out_of_core: bool = False,
) -> Callable[[MeasureFn], MeasureFn]:
    """Decorator registering ``fn(ctx) -> MeasureResult`` under ``name``.

    ``requires`` names options the measure cannot run without (e.g. the perturbation
    matrices of an attack); such a measure runs only when named, never as part of ``all``.
    ``direction`` says whether a higher or a lower ``value`` is better ("higher"/"lower";
    for a risk measure, better protected) and ``value_range`` the bounds of ``value``.
    ``out_of_core=True`` declares that ``fn`` computes the measure exactly, partition by
    partition, when the context's tables are Dask DataFrames; any other measure is computed
    on a random sample of the records, with a confidence interval
    (:mod:`ppdm.metrics.out_of_core`).
    """
    if direction not in (None, "higher", "lower"):
        raise ValueError(f"direction must be 'higher', 'lower' or None, got {direction!r}")

    def deco(fn: MeasureFn) -> MeasureFn:
        MEASURES[name] = MeasureSpec(name, fn, kind, description, needs_class, default, tuple(requires),
                                     direction, tuple(value_range), bool(out_of_core))  # type: ignore[arg-type]
        return fn

    return deco


def resolve_measures(spec: str | None) -> list[MeasureSpec]:
    """``None`` → the default set; ``"all"`` → every measure; else a comma list of names."""
    load_all_measures()

    if spec is None:
        return [m for m in MEASURES.values() if m.default]
    if spec.strip() == "all":
        return [m for m in MEASURES.values() if not m.requires]
    out = []
    for name in (s.strip() for s in spec.split(",")):
        if not name:
            continue
        if name not in MEASURES:
            raise ParameterError(f"unknown measure {name!r}; known: {', '.join(sorted(MEASURES))}")
        out.append(MEASURES[name])
    if not out:
        raise ParameterError("no measure named in --measures")
    return out
