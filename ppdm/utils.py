"""Small shared helpers: random generators, parameter parsing and input vectors."""

from __future__ import annotations

import ast
from typing import Any

import numpy as np

from ppdm.errors import ParameterError

RandomState = int | np.random.Generator | np.random.RandomState | None


def check_random_state(random_state: RandomState) -> np.random.Generator:
    """Return a NumPy ``Generator`` for ``random_state``.

    An int (or None) seeds a fresh PCG64 generator, so the same seed always gives
    byte-identical output; a Generator is used as is.
    """
    if random_state is None or isinstance(random_state, (int, np.integer)):
        return np.random.default_rng(None if random_state is None else int(random_state))
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**31 - 1))
    raise ParameterError(f"random_state must be an int, a numpy Generator or None, got {random_state!r}")


def finite_vector(x: object, *, task: str) -> np.ndarray:
    """``x`` flattened to a float64 vector; empty input or NaN/inf refused.

    ``task`` names what the caller does (``"discretize"``, ``"microaggregate"``) so the
    error says "cannot <task> an empty attribute".
    """
    v = np.asarray(x, dtype=float).ravel()
    if v.size == 0:
        raise ParameterError(f"cannot {task} an empty attribute")
    if not np.all(np.isfinite(v)):
        raise ParameterError(f"cannot {task} an attribute holding NaN or infinite values")
    return v


def parse_value(text: str) -> Any:
    """Parse a ``--param`` value: Python literals (``3``, ``0.1``, ``True``, ``None``,
    ``[1, 2]``) become those objects, anything else stays a string."""
    t = text.strip()
    low = t.lower()
    if low in {"true", "false"}:
        return low == "true"
    if low in {"none", "null"}:
        return None
    try:
        return ast.literal_eval(t)
    except (ValueError, SyntaxError):
        return t


def parse_params(pairs: list[str] | None) -> dict[str, Any]:
    """Turn ``["k=v", ...]`` into a dict, rejecting malformed pairs."""
    out: dict[str, Any] = {}
    for pair in pairs or []:
        if "=" not in pair:
            raise ParameterError(f"--param expects key=value, got {pair!r}")
        key, value = pair.split("=", 1)
        key = key.strip().replace("-", "_")
        if not key:
            raise ParameterError(f"--param has an empty key in {pair!r}")
        out[key] = parse_value(value)
    return out
