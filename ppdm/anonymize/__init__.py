"""Anonymization techniques, one module per family.

Every technique is a scikit-learn transformer over the whole table; see
:mod:`ppdm.anonymize.base` for the contract and :mod:`ppdm.anonymize.registry`
for the names the CLI knows them by.
"""

from ppdm.anonymize.base import Technique
from ppdm.anonymize.registry import TECHNIQUES, get_technique, make_technique, register

__all__ = ["Technique", "TECHNIQUES", "get_technique", "make_technique", "register"]


def __getattr__(name: str) -> type:
    """Technique classes by class name (``ppdm.anonymize.Rounding``), imported on first use."""
    if not name.startswith("_") and name[:1].isupper():
        from ppdm.anonymize.registry import _load_all

        _load_all()
        for cls in TECHNIQUES.values():
            if cls.__name__ == name:
                return cls
    raise AttributeError(f"module 'ppdm.anonymize' has no attribute {name!r}")
