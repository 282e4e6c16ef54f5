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
"""
