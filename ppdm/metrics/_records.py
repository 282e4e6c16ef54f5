"""Per-record detail that a result keeps for the library but never prints or serialises.

Risk measures know something about every record (its key frequency, its SUDA score,
whether it was linked). That detail is useful to a data owner working in Python, but a
printout, a JSON report or a log must never list records one by one. Fields declared
with :func:`record_field` stay on the result object and are left out of ``repr`` and of
:meth:`ppdm.metrics.base.MeasureResult.to_dict`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import field
from typing import Any

from ppdm.metrics.base import MeasureResult, _jsonable

RECORD_DETAIL = "record_detail"


def record_field(default: Any = None) -> Any:
    """A dataclass field holding per-record detail (not printed, not serialised)."""
    return field(default=default, repr=False, compare=False, metadata={RECORD_DETAIL: True})


class RecordDetailMixin(MeasureResult):
    """Leaves :func:`record_field` fields out of :meth:`to_dict`."""

    def to_dict(self, *, records: bool = False) -> dict[str, Any]:
        return {f.name: _jsonable(getattr(self, f.name)) for f in dataclasses.fields(self)
                if records or not f.metadata.get(RECORD_DETAIL)}
