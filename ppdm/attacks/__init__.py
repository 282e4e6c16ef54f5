"""Attacks on a release: what an adversary holding z can learn about the people of x.

Attack-based disclosure risk after Giomi et al., "A Unified Framework for Quantifying
Privacy Risk in Synthetic Data", PoPETs 2023 (the method of the anonymeter tool): the
singling-out, linkability and attribute-inference attacks of the Article 29 Working
Party's opinion on anonymisation, each run against the original records used to make the
release and against a control set of original records that were not, so that the risk
counts only what the release leaks beyond what any model of the population would tell.
"""
