"""Codes read as numbers: a trap for tables not read with :func:`ppdm.data.read_table`.

A zip code, a municipality or a diagnosis code is a label written with digits. Read with
``pandas.read_csv`` it becomes an integer: ``01562`` turns into 1562, and a technique then
treats it as a quantity (MDAV averaged a group's zip codes into 1928). ppdm's typed reader
keeps codes with leading zeros as text, but a library user may hand :func:`release` a table
read otherwise. :func:`codes_read_as_numbers` finds the numeric attributes that are most
likely codes: named like one (``zip``, ``postcode``, ``fips``, ``..._code``) and holding
whole numbers; it says too when some of them have fewer digits than the longest, the mark of
leading zeros lost on the way in.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ppdm.data.roles import name_words
from ppdm.data.schema import Schema

#: words that make a column name read like a code written with digits
CODE_WORDS = frozenset({
    "zip", "zipcode", "postcode", "postal", "plz", "code", "codes", "fips", "nuts", "lau", "insee", "ags",
    "icd", "naics", "nace", "isco", "sic", "isced", "ean", "upc", "isbn", "ssn", "phone", "tel", "telephone",
})


@dataclass(frozen=True)
class NumericCode:
    """A numeric attribute that is likely a code, and why."""

    column: str
    word: str
    shorter: int  # values with fewer digits than the longest (leading zeros lost?)
    n: int
    digits: int  # digits of the longest value

    def message(self) -> str:
        zeros = (f", and {self.shorter} of its {self.n} values have fewer than {self.digits} digits (leading zeros "
                 "lost when the file was read?)") if self.shorter else ""
        return (f"column {self.column!r} is named like a code ({self.word!r}) but holds numbers{zeros}; techniques "
                "treat it as a quantity (MDAV averages codes into codes that exist nowhere). If it is a code, read "
                "the file with ppdm.data.read_table (codes keep their leading zeros as text) or declare the "
                f"column categorical (Schema(categorical=[...]), CLI: --categorical {self.column})")


def codes_read_as_numbers(df: pd.DataFrame, schema: Schema) -> list[NumericCode]:
    """The numeric attributes of ``schema`` in ``df`` that look like codes read as numbers."""
    out = []
    for c in schema.numeric:
        if c in schema.dates or c not in df.columns or c == schema.class_column:
            continue
        s = df[c]
        if pd.api.types.is_bool_dtype(s) or not pd.api.types.is_numeric_dtype(s):
            continue
        hit = sorted(set(name_words(str(c))) & CODE_WORDS)
        if not hit:
            continue
        v = s.dropna().to_numpy(dtype=float)
        v = v[np.isfinite(v)]
        if v.size == 0 or not np.all(v == np.round(v)) or np.any(v < 0):
            continue  # codes are whole and not negative
        lengths = np.char.str_len(np.abs(v).astype(np.int64).astype(str))
        longest = int(lengths.max())
        shorter = int((lengths < longest).sum()) if longest >= 3 else 0
        out.append(NumericCode(str(c), hit[0], shorter, int(v.size), longest))
    return out
