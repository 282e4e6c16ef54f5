"""Small helpers every step of ``ppdm recommend`` shares: durations, derived seeds, JSON-ready
values and the key that names a setting.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from ppdm.errors import ParameterError


def parse_duration(value: Any, what: str = "budget") -> float:
    """Seconds from ``600``, ``"90s"``, ``"10m"``, ``"1.5h"`` or ``"1h30m"``; a budget of zero or
    less, or text that is not a duration, raises :class:`ParameterError`."""
    if isinstance(value, bool):
        raise ParameterError(f"{what} must be a duration such as 90s, 10m or 1h, got {value!r}")
    if isinstance(value, (int, float, np.integer, np.floating)):
        seconds = float(value)
    else:
        text = str(value).strip().lower().replace(" ", "")
        if re.fullmatch(r"\d+(\.\d+)?", text):
            seconds = float(text)
        else:
            parts = re.findall(r"(\d+(?:\.\d+)?)([hms])", text)
            if not parts or "".join(n + u for n, u in parts) != text:
                raise ParameterError(f"{what} must be a duration such as 90s, 10m or 1h30m, got {value!r}")
            seconds = sum(float(n) * {"h": 3600, "m": 60, "s": 1}[u] for n, u in parts)
    if not math.isfinite(seconds) or seconds <= 0:
        raise ParameterError(f"{what} must be more than zero, got {value!r}")
    return seconds


def finite(v: Any) -> bool:
    """Whether ``v`` is a finite number (or text that reads as one)."""
    try:
        return v is not None and math.isfinite(float(v))
    except (TypeError, ValueError):
        return False


def json_ready(v: Any) -> Any:
    """``v`` as JSON holds it (NumPy scalars as Python numbers, anything else unknown as text)."""
    return json.loads(json.dumps(v, default=_plain))


def _plain(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    return str(v)


def seed_of(root: int, *key: int) -> int:
    """The seed of one use of the search's root seed, named by ``key`` (independent streams)."""
    ss = np.random.SeedSequence(int(root), spawn_key=tuple(int(k) for k in key))
    return int(ss.generate_state(1, dtype=np.uint32)[0])


def setting_key(technique: str, params: Mapping[str, Any]) -> str:
    """The text that names a setting: technique and parameters, in a fixed order."""
    return technique + json.dumps(json_ready(params), sort_keys=True)
