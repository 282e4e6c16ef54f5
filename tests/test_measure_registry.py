"""Every registered measure tells a reader how to judge its value: kind, direction, range,
what a good value means and, where documented, a threshold; registrations are checked."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ppdm.experiments.evaluation import load_all_measures
from ppdm.metrics.base import DIRECTIONS, KINDS, MEASURES, MeasureResult, register_measure

ROOT = Path(__file__).resolve().parent.parent
#: measures for which neither direction is better, each with the reason in its meaning
NO_DIRECTION = {"entropy"}

load_all_measures()
NAMES = sorted(MEASURES)


def test_the_registry_holds_the_measures_of_both_packages() -> None:
    assert {"rule_accuracy", "auc", "ddr", "idr", "sers", "eduds", "il1s"} <= set(NAMES)
    assert {"spectral_filtering", "repeated_perturbation"} <= set(NAMES)  # from ppdm.attacks


@pytest.mark.parametrize("name", NAMES)
def test_every_measure_says_how_to_read_it(name: str) -> None:
    m = MEASURES[name]
    assert m.kind in KINDS
    assert m.direction in (*DIRECTIONS, None)
    assert (m.direction is None) == (name in NO_DIRECTION), name
    lo, hi = m.value_range
    assert lo is not None or hi is not None, f"{name}: give at least one bound"
    assert lo is None or hi is None or lo < hi
    assert len(m.meaning.split()) >= 8, f"{name}: say in a sentence what a good value means"
    text = m.description.lower()
    if "lower is better" in text:
        assert m.direction == "lower", name
    if "higher is better" in text or "higher is more secure" in text:
        assert m.direction == "higher", name
    if m.threshold is not None:
        assert m.direction is not None
        assert lo is None or m.threshold >= lo
        assert hi is None or m.threshold <= hi


def test_documented_thresholds_match_the_registry() -> None:
    """docs/measures.md lists every threshold the verdicts use, as registered."""
    text = (ROOT / "docs" / "measures.md").read_text(encoding="utf-8")
    section = text[text.index("## Thresholds of the verdicts"):]
    rows = dict(re.findall(r"^\| `(\w+)` \| [^|]+ \| ([≤≥] [0-9.]+) \|", section, flags=re.M))
    want = {n: f"{'≤' if m.direction == 'lower' else '≥'} {m.threshold:g}" for n, m in MEASURES.items()
            if m.threshold is not None}
    assert rows == want


def test_register_measure_refuses_contradictions() -> None:
    def fn(ctx):  # pragma: no cover - never called
        return MeasureResult(0.0)

    with pytest.raises(ValueError, match="kind"):
        register_measure("t_bad", kind="privacy", description="")(fn)
    with pytest.raises(ValueError, match="direction"):
        register_measure("t_bad", kind="risk", description="", direction="up")(fn)
    with pytest.raises(ValueError, match="empty"):
        register_measure("t_bad", kind="risk", description="", value_range=(1.0, 0.0))(fn)
    with pytest.raises(ValueError, match="threshold"):
        register_measure("t_bad", kind="risk", description="", threshold=0.1)(fn)
    assert "t_bad" not in MEASURES


def test_register_measure_traits_are_one_checked_group() -> None:
    """The traits are a typed keyword group (MeasureTraits): a misspelt one is refused as Python
    refuses a wrong keyword, and the ones given reach the spec with the others at their defaults."""

    def fn(ctx):  # pragma: no cover - never called
        return MeasureResult(0.0)

    with pytest.raises(TypeError, match="unexpected keyword argument 'directoin'"):
        register_measure("t_traits", kind="risk", description="", directoin="lower")  # type: ignore[call-arg]  # the misspelling is the point
    assert "t_traits" not in MEASURES
    try:
        register_measure("t_traits", kind="risk", description="d", direction="lower", threshold=0.2,
                         options=["a", "a", "b"])(fn)
        spec = MEASURES["t_traits"]
        assert (spec.direction, spec.threshold, spec.options) == ("lower", 0.2, ("a", "b"))
        assert (spec.needs_class, spec.default, spec.requires, spec.value_range, spec.paired) == \
            (True, False, (), (None, None), False)
    finally:
        MEASURES.pop("t_traits", None)


def test_within_holds_a_value_to_the_threshold() -> None:
    assert MEASURES["ddr"].within(0.01) is True and MEASURES["ddr"].within(0.5) is False
    assert MEASURES["sers"].within(1.0) is None  # no threshold
    assert MEASURES["ddr"].within(float("nan")) is None


def test_judge_respects_intervals():
    from ppdm.metrics.base import judge

    # hand-made: threshold 0.05, lower is better
    assert judge(0.04, 0.05, "lower") == "meets"
    assert judge(0.06, 0.05, "lower") == "misses"
    assert judge(0.046, 0.05, "lower", (0.03, 0.062)) == "uncertain"
    assert judge(0.02, 0.05, "lower", (0.01, 0.049)) == "meets"
    assert judge(0.08, 0.05, "lower", (0.051, 0.11)) == "misses"
    assert judge(0.05, 0.05, "lower", (0.05, 0.05)) == "meets"  # the threshold itself is within
    # higher is better: AUC ≥ 0.7
    assert judge(0.72, 0.7, "higher", (0.71, 0.73)) == "meets"
    assert judge(0.72, 0.7, "higher", (0.69, 0.75)) == "uncertain"
    assert judge(0.6, 0.7, "higher", (0.55, 0.65)) == "misses"
    assert judge(float("nan"), 0.7, "higher") is None
    assert judge(0.5, 0.7, "higher", (float("nan"), 0.6)) == "misses"  # no usable interval: the value decides
