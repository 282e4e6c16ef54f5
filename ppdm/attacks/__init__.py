"""Attacks on a release: an adversary's attempt to recover or link the original records.

Each module registers its attacks as risk measures for ``ppdm evaluate`` (see
:func:`ppdm.metrics.base.register_measure`). Attacks may re-run a technique (for example
the repeated-perturbation attack perturbs the release again with the public matrices), so
this package sits above :mod:`ppdm.anonymize` and :mod:`ppdm.metrics`.
"""
