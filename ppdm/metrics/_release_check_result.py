"""The release check's result (:class:`ReleaseCheck`) and the lines ``ppdm anonymize`` prints of it.

Split from :mod:`ppdm.metrics.release_check`, which re-exports every name here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from ppdm.metrics._release_check_cells import NEAR_TOLERANCE, UNTOUCHED_SHARE
from ppdm.metrics.base import MeasureResult

PER_KEY_COLUMNS = ["column", "share_unchanged", "untouched", "distinct_x", "unique_alone", "unique_drop"]


@dataclass
class ReleaseCheck(MeasureResult):
    """Result of :func:`release_check`.

    ``value`` is the share of records whose quasi-identifiers are unchanged in z.
    ``per_column`` has one row per compared column: ``column``, ``role``, ``kind``
    (numeric/categorical), ``share_unchanged`` and ``touched`` (some cell changed).
    ``per_key`` has one row per quasi-identifier: ``share_unchanged``, ``untouched``,
    ``distinct_x`` (distinct values in x), ``unique_alone`` (share of x's records whose value
    no other record has) and ``unique_drop`` (for an untouched key: how much the share of
    x's records unique on the untouched keys falls without it — the key most responsible
    has the largest drop). ``record_aligned`` says whether records were compared with their
    own originals (the pairing known) or among all of x.

    A key or column is *untouched* from ``untouched_share`` of unchanged cells (default 99 %).
    ``records_verbatim_unique`` counts verbatim records (own original or copy) whose original
    is unique in x on its quasi-identifiers or on all compared columns — the same thing, as a
    record unique on a subset of its values is unique on all of them; ``unique_in_x_all`` is
    the number of x's records unique on all compared columns. ``records_near_verbatim``
    counts records within ``near_tolerance`` of their own original on every column
    (:func:`near_cells`; only with a pairing), and ``records_near_verbatim_unique`` the
    verbatim or near-verbatim records unique in x. ``untouched_alone`` gives, for every
    untouched column (with a pairing), the share of x's records its value alone makes unique.
    """

    n_records: int
    quasi_identifiers: list[str]
    quasi_identifiers_declared: bool
    records_unchanged: int
    records_verbatim: int
    share_verbatim: float
    unique_in_z: int
    untouched_columns: list[str]
    tolerance: float
    per_column: pd.DataFrame = field(repr=False)
    record_aligned: bool = True
    records_copied: int = 0
    records_verbatim_paired: int = 0
    records_verbatim_unique: int = 0
    share_verbatim_unique: float = 0.0
    unique_in_x: int = 0
    untouched_keys: list[str] = field(default_factory=list)
    untouched_keys_unique: float = 0.0
    per_key: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=PER_KEY_COLUMNS), repr=False)
    untouched_share: float = UNTOUCHED_SHARE
    near_tolerance: float = NEAR_TOLERANCE
    records_near_verbatim: int = 0
    records_near_verbatim_unique: int = 0
    share_near_verbatim_unique: float = 0.0
    unique_in_x_all: int = 0
    untouched_alone: dict[str, float] = field(default_factory=dict)

    @property
    def lower_bound(self) -> str | None:
        """Records looked up among all of x (no pairing) are counted only when copied verbatim: the
        value then bounds the share of unchanged records from below (:mod:`ppdm.metrics.judgement`)."""
        if self.record_aligned:
            return None
        return ("without the pairing only records copied verbatim are counted; the release's private log "
                "(--private) gives the exact share")
    #: blanked or recoded quasi-identifiers another released column restores (in-memory checks only;
    #: :func:`ppdm.metrics.restorable.restorable_pairs`: key, column, change, affected, share_restored...)
    restorable_keys: pd.DataFrame = field(default_factory=pd.DataFrame, repr=False)

    def summary_lines(self) -> list[str]:
        """The check as a few short lines (what ``ppdm anonymize`` prints)."""
        n = self.n_records
        qi = (f"{len(self.quasi_identifiers)} declared quasi-identifier(s)" if self.quasi_identifiers_declared
              else f"all {len(self.quasi_identifiers)} attributes (no quasi-identifier declared)")
        keys = self._key_line()
        if not self.record_aligned:
            lines = [
                f"released records not paired with the original's ({n}): each is compared with every original "
                "record",
                f"released records equal to an original record on the quasi-identifiers: {_pct(self.value)} "
                f"({self.records_unchanged} of {n}; {qi})",
                f"released records equal to an original record on every column: {_pct(self.share_verbatim)} "
                f"({self.records_verbatim} of {n}), of which an original unique in x: "
                f"{self.records_verbatim_unique}",
                f"records unique on their quasi-identifiers in z: {self.unique_in_z} of {n}",
            ]
            return lines + ([keys] if keys else [])
        cells = ", ".join(f"{r.column} {100 * r.share_unchanged:.1f}%" for r in self.per_column.itertuples())  # type: ignore[operator, str-bytes-safe]  # pandas-stubs types itertuples' fields as any scalar
        lines = [
            f"records with unchanged quasi-identifiers: {_pct(self.value)} ({self.records_unchanged} of {n}; {qi})",
            f"records unchanged on every column: {_pct(self.share_verbatim)} ({self.records_verbatim} of {n}"
            + (f", of which {self.records_copied} copies found among all of x" if self.records_copied
               > self.records_verbatim_paired else "") + ")",
            f"records unchanged on every column and unique in x: "
            f"{_pct(self.share_verbatim_unique)} ({self.records_verbatim_unique} of {n})",
            f"records unchanged or within {self.near_tolerance:g} standard deviations of their original on every "
            f"column (near-verbatim): {self.records_near_verbatim} of {n}, unique in x with the copies: "
            f"{self.records_near_verbatim_unique}",
            f"records unique on their quasi-identifiers in z: {self.unique_in_z} of {n}",
            f"unchanged cells per column: {cells}",
            "columns no technique touched: " + (", ".join(self.untouched_columns) or "none"),
        ]
        return lines + ([keys] if keys else [])

    def _key_line(self) -> str:
        if not self.untouched_keys:
            return ""
        return (f"quasi-identifiers no technique touched: {', '.join(self.untouched_keys)}, which make "
                f"{_pct(self.untouched_keys_unique)} of the original records unique")


def _pct(share: float) -> str:
    return f"{100 * share:.1f}%"
