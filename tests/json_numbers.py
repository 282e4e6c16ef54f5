"""Every number in a JSON document, by its path: what the DP tests scan public and private files for."""

from __future__ import annotations

from typing import Any


def json_numbers(obj: Any, path: str = "") -> dict[str, float]:
    """``{".a.b[0]": 3.0, ...}`` for every number (not boolean) in ``obj``."""
    out: dict[str, float] = {}
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.update(json_numbers(v, f"{path}.{k}"))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out.update(json_numbers(v, f"{path}[{i}]"))
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
        out[path] = float(obj)
    return out
