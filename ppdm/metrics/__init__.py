"""Utility and risk measures: plain functions returning :class:`MeasureResult` dataclasses.

Every measure ``ppdm evaluate`` knows by name is a function of this package::

    from ppdm.metrics import k_anonymity, il1s, rule_accuracy

:data:`MEASURE_FUNCTIONS` says which function computes each registered measure. The
functions are loaded on first use (a module ``__getattr__``), so importing the package stays
cheap; the modules register their measures for ``ppdm evaluate`` when they are loaded
(:func:`ppdm.experiments.evaluation.load_all_measures` loads them all).

No module shadows a function: ``ppdm.metrics.release_check`` is the function, and its module's
other names are imported from it (``from ppdm.metrics.release_check import ReleaseCheck``).
"""

from __future__ import annotations

from ppdm.metrics.base import MEASURES, EvaluationContext, MeasureResult, judge, register_measure

# a module named like the function it defines: importing the function here binds the package's
# name to the function for good (the import system binds a submodule only when first loading it)
from ppdm.metrics.release_check import release_check as release_check
from ppdm.utils import lazy_attributes

#: the function that computes each registered measure: measure name → (module, function)
MEASURE_FUNCTIONS: dict[str, tuple[str, str]] = {
    "il_metrics": ("info_loss", "il_metrics"),
    "il1s": ("info_loss", "il1s"),
    "il1s_mean": ("info_loss", "il1s_mean"),
    "sse_sst": ("info_loss", "sse_sst"),
    "entropy": ("info_loss", "entropy"),
    "correlation_difference": ("info_loss", "correlation_difference"),
    "k_anonymity": ("keyvar", "k_anonymity"),
    "k_anonymity_intruder": ("keyvar", "intruder_view"),
    "sample_uniques": ("keyvar", "sample_uniques"),
    "reidentification_risk": ("keyvar", "reidentification_risk"),
    "l_diversity": ("keyvar", "l_diversity"),
    "ddr": ("risk", "ddr"),
    "idr": ("risk", "idr"),
    "il_dr_score": ("risk", "il_dr_score"),
    "sers": ("risk", "sers"),
    "record_linkage": ("linkage", "record_linkage"),
    "qi_matching": ("matching", "qi_matching"),
    "prediction_accuracy": ("model", "prediction_accuracy"),
    "auc": ("model", "auc"),
    "f_measure": ("model", "f_measure"),
    "release_check": ("release_check", "release_check"),
    "rule_accuracy": ("retention", "rule_accuracy"),
    "rule_support_distance": ("retention", "rule_support_distance"),
    "rule_label_distance": ("retention", "rule_label_distance"),
    "eduds": ("structure", "eduds"),
    "edusc": ("structure", "edusc"),
    "suda2": ("suda", "suda2"),
    "restorable_keys": ("restorable", "restorable_keys"),
    "attribute_disclosure": ("keyvar", "attribute_disclosure"),
    "verbatim_copies": ("closeness", "unique_verbatim_copies"),
    "nearest_record_distance": ("closeness", "nearest_record_distance"),
    "t_closeness": ("privacy_models", "t_closeness"),
    "recursive_cl_diversity": ("privacy_models", "recursive_cl_diversity"),
    "alpha_k_anonymity": ("privacy_models", "alpha_k_anonymity"),
    "basic_beta_likeness": ("privacy_models", "basic_beta_likeness"),
    "enhanced_beta_likeness": ("privacy_models", "enhanced_beta_likeness"),
    "delta_disclosure": ("privacy_models", "delta_disclosure"),
    "column_fidelity": ("fidelity", "column_fidelity"),
    "pair_fidelity": ("fidelity", "pair_fidelity"),
    "implausible_combinations": ("plausibility", "implausible_combinations"),
    "edit_rule_violations": ("plausibility", "edit_rule_violations"),
}

#: public building blocks besides the measures: function → module
_BLOCKS: dict[str, str] = {
    "key_frequencies": "keyvar",
    "individual_risk": "keyvar",
    "rule_retention": "retention",
    "shannon_entropy": "info_loss",
    "il_dr_combine": "risk",
    "ks_complement": "fidelity",
    "tv_complement": "fidelity",
    "correlation_similarity": "fidelity",
    "contingency_similarity": "fidelity",
    "rule_violations": "plausibility",
}

_LAZY: dict[str, str] = {**{fn: mod for mod, fn in MEASURE_FUNCTIONS.values()}, **_BLOCKS}

__all__ = ["MEASURES", "MEASURE_FUNCTIONS", "EvaluationContext", "MeasureResult", "judge", "register_measure",
           *sorted(_LAZY)]


__getattr__ = lazy_attributes("ppdm.metrics", _LAZY, globals())


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
