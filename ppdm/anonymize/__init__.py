"""Anonymization techniques, one module per family.

Every technique is a scikit-learn transformer over the whole table; see
:mod:`ppdm.anonymize.base` for the contract and :mod:`ppdm.anonymize.registry`
for the names the CLI knows them by.
"""

from ppdm.anonymize.base import Technique
from ppdm.anonymize.registry import TECHNIQUES, get_technique, make_technique, register

__all__ = ["Technique", "TECHNIQUES", "get_technique", "make_technique", "register"]
