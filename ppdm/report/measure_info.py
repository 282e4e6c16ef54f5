"""What each measure means and which direction is good, for tables and reports.

A measure's registered ``MeasureSpec.description`` is used when present; the table
below adds the direction ("higher" or "lower" is better) and a fallback meaning.
For risk measures "better" means better protected.
"""

from __future__ import annotations

from dataclasses import dataclass

from ppdm.metrics.base import MEASURES


@dataclass(frozen=True)
class MeasureInfo:
    direction: str | None  # "higher", "lower" or None when unknown
    meaning: str
    kind: str | None = None  # "utility" or "risk"


MEASURE_INFO: dict[str, MeasureInfo] = {
    "rule_accuracy": MeasureInfo(
        "lower", "Change in how often the original rules Ψx predict the class correctly, |α(Ψx|x) − α(Ψx|z)| "
        "(paper 000 §5); 0 when z keeps the rules' accuracy.", "utility"),
    "rule_support_distance": MeasureInfo(
        "lower", "RSD: mean change in the number of records each original rule covers, relative to |x| "
        "(paper 000 §5); 0 when every rule keeps its support.", "utility"),
    "rule_label_distance": MeasureInfo(
        "lower", "RLD: mean χ² histogram distance between the class distributions each rule covers in x and z "
        "(paper 000 §5); 0 when labels inside rules are unchanged.", "utility"),
    "prediction_accuracy": MeasureInfo(
        "lower", "Accuracy on the held-out table t of a classifier trained on x minus that of one trained on z "
        "(papers 000 §3, 004 §7); 0 means no loss.", "utility"),
    "auc": MeasureInfo("lower", "AUC on t of a classifier trained on x minus that of one trained on z "
                       "(paper 000 §3); 0 means no loss.", "utility"),
    "f_measure": MeasureInfo("lower", "F-measure on t of a classifier trained on x minus that of one trained on z "
                             "(paper 000 §3); 0 means no loss.", "utility"),
    "il_metrics": MeasureInfo(
        "lower", "Information loss from differences in means, covariances and correlations (paper 003 §3.3).",
        "utility"),
    "il1s": MeasureInfo(
        "lower", "IL1s: mean standardised absolute difference between original and masked values "
        "(paper 003 §3.3).", "utility"),
    "ddr": MeasureInfo(
        "lower", "Distance-based record linkage: share of masked records whose nearest original record is "
        "their own (paper 003 §3.3); lower means less re-identification.", "risk"),
    "idr": MeasureInfo(
        "lower", "Interval disclosure: share of records whose original values fall inside an interval around "
        "the masked ones (paper 003 §3.3); lower means less disclosure.", "risk"),
    "il_dr_score": MeasureInfo(
        "lower", "0.25·(IL metrics + IL1s + DDR + IDR), the utility/risk trade-off of paper 003 §3.3.3.",
        "risk"),
    "sers": MeasureInfo(
        "higher", "SERS: mean entropy of each original record's similarity to the perturbed records "
        "(paper 004 §6); higher means records are harder to single out.", "risk"),
    "eduds": MeasureInfo(
        "higher", "EDUDS: similarity of the sub-domains of the forests' intersections in x and z "
        "(paper 004 §4); 1 when z keeps the same segments.", "utility"),
    "edusc": MeasureInfo(
        "higher", "EDUSC: similarity of the gain ratios inside the forests' nodes forced onto z "
        "(paper 004 §5); 1 when the splitting criteria are unchanged.", "utility"),
}


def describe_measure(name: str, description: str | None = None) -> MeasureInfo:
    """Direction and meaning of measure ``name``: the registered description wins, the table
    supplies the direction; unknown measures get an unknown direction."""
    known = MEASURE_INFO.get(name)
    spec = MEASURES.get(name)
    text = description or (spec.description if spec is not None and spec.description else None)
    kind = (spec.kind if spec is not None else None) or (known.kind if known else None)
    if known is not None:
        return MeasureInfo(known.direction, text or known.meaning, kind)
    return MeasureInfo(None, text or "", kind)


def direction_text(direction: str | None) -> str:
    return {"higher": "higher is better", "lower": "lower is better"}.get(direction or "", "—")
