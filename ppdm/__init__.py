"""ppdm: privacy-preserving publishing of tabular microdata.

Anonymize a table x into a release z with the techniques of Fletcher & Islam
(Forest Framework), Islam & Brankovic (Framework), GADP, Dowd, Xu & Zhang
(random substitution) and Senavirathne & Torra (rounding), and measure what z
still tells analysts (rule retention, forest structure, information loss) and
how exposed its people are (record linkage, interval disclosure, SERS).
"""

from __future__ import annotations

from typing import Any

from ppdm._version import __version__
from ppdm.errors import PPDMError

__all__ = ["Schema", "PPDMError", "__version__"]


def __getattr__(name: str) -> Any:
    # Schema pulls in pandas: loaded on first use, so `ppdm --help` stays fast
    if name == "Schema":
        from ppdm.data.schema import Schema

        return Schema
    raise AttributeError(f"module 'ppdm' has no attribute {name!r}")
