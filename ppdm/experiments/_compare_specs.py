"""The techniques a comparison runs: their specifications, sweeps and grids, and their units.

:func:`parse_technique` reads a command-line technique (``"noise:level=0.1,0.2"``) into
:class:`TechniqueSpec` objects, :func:`sweep` and :func:`grid` build them in Python, and
:func:`measure_unit` / :func:`measure_header` say in what unit a measure's column is. Split
from :mod:`ppdm.experiments.compare`, which re-exports every name here.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ppdm.errors import ParameterError
from ppdm.utils import parse_value

ORIGINAL = "original"


RESULT_COLUMNS = ["technique", "label", "params", "fold", "repeat", "measure", "value"]


ProgressFn = Callable[[int, int, str], None]


#: arguments every technique takes that are not parameters of the technique itself
_COMMON_ARGS = ("class_column", "schema", "random_state")


#: utility measures that compare only the numeric attributes of x and z: a technique that leaves every
#: numeric value as it was (pram, recoding of categories) loses nothing *there* by construction, so
#: its 0 is "not applicable", not "the best"
NUMERIC_LOSS = ("il1s", "il1s_mean", "il_metrics", "sse_sst")


#: how a measure not applicable to a technique reads in tables
NOT_APPLICABLE_NUMBERS = "n/a (changes no numbers)"


def measure_unit(name: str, meta: Mapping[str, Any] | None = None) -> str | None:
    """The unit a comparison states for measure ``name`` (``None``: a plain number or share).

    IL1s is compared per attribute: each value's distance from its original divided by the
    spread of its attribute in x (√2 times its standard deviation, paper 003 §3.3.1), averaged
    over the values and attributes compared (``form="mean"``, the default in a comparison):
    "sd units", whatever the attributes' own units (days, dollars) are. With ``il1s.form=sum``
    (sdcMicro's form) the same distances are summed over the records."""
    if name == "il1s":
        form = ((meta or {}).get("il1s_form") or "sum")
        return "sd units" if form == "mean" else "sd units, summed over records"
    if name == "il1s_mean":
        return "sd units"
    if name == "il_metrics":
        return "%"
    return None


def measure_header(name: str, meta: Mapping[str, Any] | None = None) -> str:
    """A measure's name in a table header, with its unit: ``"il1s (sd units)"``."""
    unit = measure_unit(name, meta)
    return f"{name} ({unit})" if unit else name


def not_applicable(meta: Mapping[str, Any]) -> dict[tuple[str, str], str]:
    """``(label, measure)`` → why the measure does not apply to that setting (it is shown so,
    never as a value, and never marked best)."""
    return {(str(r["label"]), str(r["measure"])): str(r["reason"]) for r in meta.get("not_applicable") or []}


# ----------------------------------------------------------------- technique specs
def _plain(v: Any) -> Any:
    """A JSON-friendly copy of a parameter value (NumPy scalars become Python ones)."""
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, tuple):
        return [_plain(x) for x in v]
    return v


def params_to_json(params: Mapping[str, Any]) -> str:
    """Parameters as compact JSON with sorted keys (the ``params`` column of a result)."""
    return json.dumps({str(k): _plain(v) for k, v in params.items()}, sort_keys=True, default=str)


@dataclass
class TechniqueSpec:
    """One technique with fixed parameters, as compared by :func:`compare`.

    ``label`` names the row in tables and plots; by default it is the technique
    name followed by its parameters, e.g. ``uniform-noise(level=0.1)``.
    """

    name: str
    params: dict[str, Any] = field(default_factory=dict)
    label: str | None = None

    @property
    def display_label(self) -> str:
        if self.label:
            return self.label
        if not self.params:
            return self.name
        inner = ", ".join(f"{k}={_plain(v)!r}" if isinstance(_plain(v), str) else f"{k}={_plain(v)}"
                          for k, v in self.params.items())
        return f"{self.name}({inner})"

    @property
    def params_json(self) -> str:
        return params_to_json(self.params)

    def describe(self) -> str:
        """How error messages name this spec: technique name and parameters."""
        return f"technique {self.name!r} with parameters {self.params_json}"


def sweep(name: str, param: str, values: Iterable[Any], **fixed: Any) -> list[TechniqueSpec]:
    """One :class:`TechniqueSpec` per value of ``param`` (other parameters ``fixed``).

    ``sweep("uniform-noise", "level", [0, 0.1, 0.2])`` reproduces the noise sweeps of
    paper 000 §7.1 (0 % to 30 % in steps).
    """
    vals = list(values)
    if not vals:
        raise ParameterError(f"sweep of {name!r} over {param!r} has no values")
    if param in fixed:
        raise ParameterError(f"parameter {param!r} is both swept and fixed")
    return [TechniqueSpec(name, {**fixed, param: v}) for v in vals]


def grid(name: str, params: Mapping[str, Iterable[Any]], **fixed: Any) -> list[TechniqueSpec]:
    """The Cartesian product of several swept parameters (the first varies slowest)."""
    keys = list(params)
    if not keys:
        raise ParameterError(f"grid of {name!r} names no parameter")
    both = sorted(set(keys) & set(fixed))
    if both:
        raise ParameterError(f"parameter {both[0]!r} is both swept and fixed")
    lists = [list(params[k]) for k in keys]
    for k, vs in zip(keys, lists, strict=True):
        if not vs:
            raise ParameterError(f"grid of {name!r} has no values for {k!r}")
    return [TechniqueSpec(name, {**fixed, **dict(zip(keys, combo, strict=True))}) for combo in itertools.product(*lists)]


_KEY_START = re.compile(r",(?=\s*[A-Za-z_][\w-]*\s*=)")


def _split_top(text: str, sep: str = ",") -> list[str]:
    """Split on ``sep`` outside brackets and quotes."""
    out, depth, quote, cur = [], 0, "", []
    for ch in text:
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = ""
            continue
        if ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == sep and depth == 0:
            out.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    out.append("".join(cur))
    return out


def parse_technique(text: str, *, allow_sweep: bool = False) -> list[TechniqueSpec]:
    """Parse ``NAME[:key=value[,key=value...]]`` into technique specs.

    With ``allow_sweep`` a parameter may list several values,
    ``uniform-noise:level=0,0.1,0.2`` — one spec per value, and the Cartesian product
    when several parameters list several values. Without it that is an error.
    """
    raw = text.strip()
    name, _, rest = raw.partition(":")
    name = name.strip()
    if not name or not re.fullmatch(r"[A-Za-z0-9][\w-]*", name):
        raise ParameterError(f"cannot read technique {text!r}: expected NAME or NAME:key=value,...")
    fixed: dict[str, Any] = {}
    swept: dict[str, list[Any]] = {}
    if rest.strip():
        for chunk in _KEY_START.split(rest):
            if "=" not in chunk:
                raise ParameterError(f"cannot read technique {text!r}: {chunk.strip()!r} is not key=value")
            key, _, value = chunk.partition("=")
            key = key.strip().replace("-", "_")
            if not key.isidentifier():
                raise ParameterError(f"cannot read technique {text!r}: bad parameter name {key!r}")
            if key in fixed or key in swept:
                raise ParameterError(f"cannot read technique {text!r}: parameter {key!r} given twice")
            parts = [p for p in _split_top(value)]
            if any(not p.strip() for p in parts):
                raise ParameterError(f"cannot read technique {text!r}: parameter {key!r} has an empty value")
            if len(parts) == 1:
                fixed[key] = parse_value(parts[0])
            elif allow_sweep:
                swept[key] = [parse_value(p) for p in parts]
            else:
                raise ParameterError(
                    f"technique {text!r} gives {key!r} several values; use --sweep to compare several values"
                )
    if allow_sweep and not swept:
        raise ParameterError(f"sweep {text!r} lists no parameter with several values (e.g. NAME:level=0,0.1,0.2)")
    if swept:
        return grid(name, swept, **fixed)
    return [TechniqueSpec(name, fixed)]
