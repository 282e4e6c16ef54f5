"""Attacks on a release: an adversary's attempt to recover, single out, link or infer the
original records.

Each module registers its attacks as risk measures for ``ppdm evaluate`` (see
:func:`ppdm.metrics.base.register_measure`). Attacks may re-run a technique (for example
the repeated-perturbation attack perturbs the release again with the public matrices), so
this package sits above :mod:`ppdm.anonymize` and :mod:`ppdm.metrics`.

The attack-based disclosure risk follows Giomi et al., "A Unified Framework for Quantifying
Privacy Risk in Synthetic Data", PoPETs 2023 (the method of the anonymeter tool): the
singling-out, linkability and attribute-inference attacks of the Article 29 Working
Party's opinion on anonymisation, each run against the original records used to make the
release and against a control set of original records that were not, so that the risk
counts only what the release leaks beyond what any model of the population would tell.

Every attack is a function of this package (``from ppdm.attacks import singling_out``);
:data:`MEASURE_FUNCTIONS` says which function computes each registered measure. The
reconstruction attacks are loaded on first use (they import the techniques they re-run). No
module shadows a function: ``ppdm.attacks.singling_out`` is the function, and its module's
other names are imported from it (``from ppdm.attacks.singling_out import query_text``).
"""

from __future__ import annotations

# modules named like the function they define: importing the functions here binds the package's
# names to the functions for good (the import system binds a submodule only when first loading it)
from ppdm.attacks.inference import inference as inference
from ppdm.attacks.linkability import linkability as linkability
from ppdm.attacks.singling_out import singling_out as singling_out
from ppdm.utils import lazy_attributes

#: the function that computes each registered measure: measure name → (module, function)
MEASURE_FUNCTIONS: dict[str, tuple[str, str]] = {
    "singling_out_univariate": ("singling_out", "singling_out"),  # mode="univariate"
    "singling_out_multivariate": ("singling_out", "singling_out"),  # mode="multivariate"
    "linkability": ("linkability", "linkability"),
    "inference": ("inference", "inference"),
    "spectral_filtering": ("reconstruction", "spectral_filtering_attack"),
    "repeated_perturbation": ("reconstruction", "repeated_perturbation_attack"),
}

#: public building blocks besides the measures: function → module
_BLOCKS: dict[str, str] = {"bayes_estimate_attack": "reconstruction", "spectral_filter": "reconstruction"}

_LAZY: dict[str, str] = {**{fn: mod for mod, fn in MEASURE_FUNCTIONS.values()}, **_BLOCKS}

__all__ = ["MEASURE_FUNCTIONS", *sorted(_LAZY)]


__getattr__ = lazy_attributes("ppdm.attacks", _LAZY, globals())


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
