"""Suggested roles for the columns of a table: quasi-identifiers, sensitive attributes, a weight.

Only the data owner knows which attributes an intruder could know and which are sensitive, so
ppdm never assigns these roles by itself (identifier screening in :mod:`ppdm.data.roles` is a
safety net, not a role). ``ppdm schema`` prints these suggestions, marked as such, so that a
first schema file is a few keystrokes away; nothing is applied until the user says so with
``--qi``, ``--sensitive``, ``--weight`` or the schema file.

The clues are the ones statistical offices use for key variables (the SDC Handbook's
demographic and geographic keys: age, sex, date of birth, place of residence, marital status,
occupation, ...): a column's name, split into words as :func:`ppdm.data.roles.name_words`
does, and for a weight its values (positive numbers).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ppdm.data.roles import name_words
from ppdm.data.schema import Schema

#: words that make a column a likely key variable (an intruder may know it from another source)
QI_WORDS = frozenset({
    "age", "sex", "gender", "birth", "born", "dob", "birthdate", "birthday", "zip", "zipcode", "postcode", "postal",
    "plz", "race", "ethnicity", "ethnic", "marital", "occupation", "profession", "job", "education", "nationality",
    "citizenship", "country", "region", "municipality", "district", "county", "city", "town", "residence",
    "province", "state", "household", "relationship",
})
#: words that make a column a likely sensitive attribute
SENSITIVE_WORDS = frozenset({
    "diagnosis", "diagnoses", "disease", "illness", "condition", "health", "medical", "hiv", "cancer", "treatment",
    "medication", "drug", "drugs", "income", "salary", "wage", "wages", "earnings", "religion", "religious",
    "sexual", "orientation", "criminal", "conviction", "offence", "offense", "debt", "pregnancy",
})
#: words that make a numeric column of positive values a likely sampling weight
WEIGHT_WORDS = frozenset({"weight", "weights", "wgt", "wt", "pweight", "fweight", "sampweight", "expansion"})


@dataclass(frozen=True)
class RoleSuggestions:
    """Columns that look like quasi-identifiers, sensitive attributes and a weight, each with
    the reason; suggestions only (nothing is applied)."""

    quasi_identifiers: dict[str, str] = field(default_factory=dict)
    sensitive: dict[str, str] = field(default_factory=dict)
    weight: dict[str, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.quasi_identifiers or self.sensitive or self.weight)

    def to_dict(self) -> dict[str, dict[str, str]]:
        return {"quasi_identifiers": dict(self.quasi_identifiers), "sensitive": dict(self.sensitive),
                "weight": dict(self.weight)}


def _hit(column: str, words: frozenset[str]) -> str | None:
    found = sorted(set(name_words(column)) & words)
    return found[0] if found else None


def suggest_roles(df: pd.DataFrame, schema: Schema) -> RoleSuggestions:
    """Suggestions for the columns of ``df`` whose role ``schema`` leaves open (see the module
    docstring). Identifiers are never suggested for another role; the class may be suggested
    as sensitive."""
    declared_qi, declared_sens = set(schema.quasi_identifiers), set(schema.sensitive)
    qi: dict[str, str] = {}
    sens: dict[str, str] = {}
    weight: dict[str, str] = {}
    if schema.weight is None:
        for c in schema.numeric:
            word = _hit(str(c), WEIGHT_WORDS)
            s = df[c] if c in df.columns else None
            if word is None or s is None or pd.api.types.is_bool_dtype(s) or c == schema.class_column:
                continue
            v = s.dropna().to_numpy(dtype=float)
            if v.size and np.all(np.isfinite(v)) and np.all(v > 0):
                weight[str(c)] = f"named like a weight ({word!r}) and every value positive"
    candidates = [c for c in [*schema.attributes, *([schema.class_column] if schema.class_column else [])]
                  if c not in weight]
    for c in candidates:
        if c in declared_qi or c in declared_sens:
            continue
        word = _hit(str(c), SENSITIVE_WORDS)
        if word is not None:
            sens[str(c)] = f"named like a sensitive attribute ({word!r})"
            continue
        if c == schema.class_column:
            continue
        word = _hit(str(c), QI_WORDS)
        if word is not None:
            qi[str(c)] = f"named like a key variable ({word!r})"
        elif c in schema.dates:
            qi[str(c)] = "a date (of birth, of an event): an intruder may know it"
    return RoleSuggestions(qi, sens, weight)
