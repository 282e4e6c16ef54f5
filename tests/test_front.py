"""The risk–utility front (ppdm.experiments._front), behind both the search's and the comparison's."""

from __future__ import annotations

import math

import pytest

from ppdm.experiments._front import pareto_front
from ppdm.report.summary import pareto_front as summary_front


def _labels(points, **kw):
    return [p[0] for p in pareto_front(points, lambda p: p[1], lambda p: p[2], **kw)]


def test_front_by_hand() -> None:
    # (label, risk, loss). d is beaten by c (same risk, more loss); e by a (more risk, same loss);
    # f sits exactly on b; g has no risk; h's loss is NaN
    pts = [("a", 0.3, 0.1), ("b", 0.1, 0.5), ("c", 0.2, 0.2), ("d", 0.2, 0.3), ("e", 0.4, 0.1),
           ("f", 0.1, 0.5), ("g", None, 0.0), ("h", 0.0, math.nan)]
    assert _labels(pts) == ["b", "f", "c", "a"]
    assert _labels(pts, ties="first") == ["b", "c", "a"]
    assert _labels([]) == []
    with pytest.raises(ValueError, match="ties"):
        _labels(pts, ties="last")


def test_comparison_front_leaves_out_infinite_points() -> None:
    # the comparison plots its front, so a point at infinity is left out (a beats b; c cannot be drawn)
    assert summary_front([("a", 0.1, 0.1), ("b", 0.2, 0.2), ("c", math.inf, 0.0), ("d", 0.05, 0.4)]) == ["d", "a"]
