"""Tables, plots, self-contained HTML reports and the JSON document of evaluations and comparisons.

The renderers are imported on first use (they load Jinja2 and matplotlib).
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "render_html": "ppdm.report.html",
    "render_evaluation_html": "ppdm.report.html",
    "write_html": "ppdm.report.html",
    "write_evaluation_html": "ppdm.report.html",
    "evaluation_document": "ppdm.report.evaluation",
}

__all__ = list(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'ppdm.report' has no attribute {name!r}")
