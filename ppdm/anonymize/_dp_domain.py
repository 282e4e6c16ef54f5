"""DPCube's declaration: its parameters, the public domain of every column, and the records in domain terms.

Part of :mod:`ppdm.anonymize.differential_privacy`. Types, bounds and category sets are
read from the declaration (schema, ``bounds=``, ``domains=``), never from the records,
unless ``domain_from_data=True``; ``docs/differential_privacy.md`` says why.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeGuard

import numpy as np
import pandas as pd

from ppdm.anonymize._dp_grid import _GAP, MISSING, OTHER
from ppdm.anonymize.base import Technique
from ppdm.data.schema import Schema
from ppdm.data.types import is_iso_date, parse_iso_date
from ppdm.errors import ParameterError, SchemaError
from ppdm.utils import check_choice


@dataclass
class _Domain:
    """The domain of every column the grid covers, and where each part came from."""

    bounds: dict[str, tuple[float, float]]
    values: dict[str, list]
    integer: set[str]
    nullable: set[str]
    from_data: list[str] = field(default_factory=list)

    def capacity(self, col: str) -> int | None:
        """Most bins a numeric attribute can take (whole numbers in its bounds; 1 if its
        bounds are a single point); ``None`` when unlimited."""
        lo, hi = self.bounds[col]
        if col in self.integer:
            return max(1, math.floor(hi) - math.ceil(lo) + 1)
        return None if hi > lo else 1



def _kind_key(v: Any) -> tuple[str, Any]:
    return (type(v).__name__, v)


def _declare_hint(numeric: list[str], categorical: list[str]) -> str:
    parts = []
    if numeric:
        parts.append(f"bounds of {_names(numeric)}")
    if categorical:
        parts.append(f"categories of {_names(categorical)}")
    return " and ".join(parts)


def _names(cols: Sequence[str], most: int = 5) -> str:
    """Column names for a message, the first ``most`` of a long list (notes such as "the column
    types" unquoted)."""
    shown = ", ".join(c if c.startswith("the ") or "(" in c else repr(c) for c in cols[:most])
    return shown if len(cols) <= most else f"{shown} and {len(cols) - most} more columns"



def _is_number(v: Any) -> bool:
    return not isinstance(v, bool) and isinstance(v, (int, float, np.integer, np.floating))


def _is_whole(v: Any) -> TypeGuard[int | np.integer]:
    return not isinstance(v, bool) and isinstance(v, (int, np.integer))



class _Declared(Technique):
    """The parameters of :class:`~ppdm.anonymize.differential_privacy.DPCube` and its declared
    domain; the other parts of the technique (grid plan, report, synthesis) build on it."""

    epsilon: float
    alpha: float
    partitioning: str
    bins: int | str
    grid_density: float
    min_bins: int
    selection: str
    edges: str
    max_depth: int | None
    min_count: float | None
    split_threshold: float
    split: str
    split_dimension: str
    placement: str
    values: str
    combine: bool
    neighbouring: str
    size_share: float
    selection_share: float
    quantile_share: float
    bounds: dict | None
    domains: dict | None
    nullable: Sequence[str] | None
    unknown: str
    other_label: Any
    domain_from_data: bool
    max_cells: int
    #: set by fit: the declared domain and the values of every categorical grid column
    _dom: _Domain
    _grid_values: dict[str, list]

    # ---------------------------------------------------------------- parameters
    def _validate_params(self) -> None:
        eps = self.epsilon
        if not _is_number(eps) or math.isnan(eps) or eps <= 0:
            raise ParameterError(f"epsilon must be a positive number (inf switches noise off), got {eps!r}")
        for name in ("alpha", "size_share", "selection_share", "quantile_share"):
            v = getattr(self, name)
            if not _is_number(v) or not 0.0 < v < 1.0:
                raise ParameterError(f"{name} (a share of the privacy budget) must lie in (0, 1), got {v!r}")
        if self.selection_share + self.quantile_share >= 1.0:
            raise ParameterError("selection_share + quantile_share must stay below 1 (the counts need budget too)")
        check_choice(self.partitioning, ("kd", "cell"), "partitioning")
        if not (self.bins == "auto" or (_is_whole(self.bins) and self.bins >= 1)):
            raise ParameterError(f"bins must be 'auto' or a whole number ≥ 1, got {self.bins!r}")
        if not _is_whole(self.min_bins) or self.min_bins < 2:
            raise ParameterError(f"min_bins must be a whole number ≥ 2, got {self.min_bins!r}")
        gd = self.grid_density
        if not _is_number(gd) or not math.isfinite(gd) or gd <= 0:
            raise ParameterError(f"grid_density must be a finite number > 0, got {gd!r}")
        check_choice(self.selection, ("auto", "off"), "selection")
        check_choice(self.edges, ("quantile", "equal"), "edges")
        md = self.max_depth
        if md is not None and (not _is_whole(md) or md < 0):
            raise ParameterError(f"max_depth must be None or a whole number ≥ 0, got {md!r}")
        mc = self.min_count
        if mc is not None and (not _is_number(mc) or not np.isfinite(mc) or mc < 0):
            raise ParameterError(f"min_count must be None or a finite number ≥ 0, got {mc!r}")
        st = self.split_threshold
        if not _is_number(st) or not np.isfinite(st) or st < 0:
            raise ParameterError(f"split_threshold must be a finite number ≥ 0, got {st!r}")
        check_choice(self.split, ("median", "midpoint"), "split")
        if self.split_dimension not in ("auto", "widest", "class-first"):
            raise ParameterError(
                f"split_dimension must be 'auto', 'widest' or 'class-first', got {self.split_dimension!r}")
        check_choice(self.placement, ("cells", "uniform"), "placement")
        if self.values not in ("auto", "uniform", "center-unbinned", "center"):
            raise ParameterError(
                f"values must be 'auto', 'uniform', 'center-unbinned' or 'center', got {self.values!r}")
        for name in ("combine", "domain_from_data"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise ParameterError(f"{name} must be True or False, got {getattr(self, name)!r}")
        check_choice(self.neighbouring, ("add-remove", "replace"), "neighbouring")
        check_choice(self.unknown, ("drop", "other"), "unknown")
        if not _is_whole(self.max_cells) or self.max_cells < 1:
            raise ParameterError(f"max_cells must be a whole number ≥ 1, got {self.max_cells!r}")
        if self.bounds is not None:
            if not isinstance(self.bounds, Mapping):
                raise ParameterError(f"bounds must map column names to (low, high), got {self.bounds!r}")
            for c, b in self.bounds.items():
                ok = isinstance(b, (tuple, list, np.ndarray)) and len(b) == 2 and all(
                    _is_number(v) or is_iso_date(v) for v in b)
                if ok and any(is_iso_date(v) for v in b):
                    try:  # a date column's bounds as dates; a non-date column is refused when the schema is known
                        b = [parse_iso_date(v, f"a bound of {c!r}") if isinstance(v, str) else v for v in b]
                    except SchemaError as e:
                        raise ParameterError(str(e)) from None
                if not ok or not all(np.isfinite(b)) or b[0] > b[1]:
                    raise ParameterError(f"bounds of {c!r} must be two finite numbers low ≤ high (dates as YYYY-MM-DD), "
                                         f"got {b!r}")
        if self.domains is not None:
            if not isinstance(self.domains, Mapping):
                raise ParameterError(f"domains must map column names to lists of values, got {self.domains!r}")
            for c, vals in self.domains.items():
                if isinstance(vals, (str, bytes)) or not isinstance(vals, Sequence | np.ndarray):
                    raise ParameterError(f"the domain of {c!r} must be a list of values, got {vals!r}")
        nl = self.nullable
        if nl is not None and (isinstance(nl, (str, bytes)) or not isinstance(nl, Sequence)
                               or not all(isinstance(c, str) for c in nl)):
            raise ParameterError(f"nullable must be a list of column names, got {nl!r}")

    # ------------------------------------------------------------------ budget
    @property
    def sensitivity(self) -> float:
        """Δ of a count query: 1 for add/remove-one neighbours, 2 for replace-one."""
        return 2.0 if self.neighbouring == "replace" else 1.0

    def _keeps_rows(self) -> bool:
        # under add/remove-one neighbours the table size is private: the release has its own, noisy, size
        return self.neighbouring == "replace"

    # ------------------------------------------------------------ schema & domain
    def _resolve_schema(self, df: pd.DataFrame) -> Schema:
        """The declared schema; without one, the types ``bounds=``/``domains=`` imply (a column
        with bounds is numeric, one with a value set categorical) — never the dtypes."""
        if self.schema is None and not self.domain_from_data:
            decl = self.declared_schema(list(map(str, df.columns)))
            if decl is not None:
                return _weight_as_attribute(decl)
        return _weight_as_attribute(super()._resolve_schema(df))

    def declared_schema(self, columns: Sequence[str]) -> Schema | None:
        """The schema ``bounds=`` and ``domains=`` declare for a table of ``columns`` (in that
        order, the class last among them), or ``None`` when they leave a column out or no
        class is named. Whole-number attributes cannot be declared this way: every numeric
        attribute is continuous (pass a schema with ``integer`` for whole numbers)."""
        if self.schema is not None:
            sch = self.schema if isinstance(self.schema, Schema) else Schema.from_dict(dict(self.schema))
            return sch.with_class(self.class_column) if self.class_column is not None else sch
        bounds, domains = dict(self.bounds or {}), dict(self.domains or {})
        cls = self.class_column
        if not all(c in bounds or c in domains for c in columns) or (cls is not None and cls not in domains):
            return None
        num = [c for c in columns if c in bounds and c != cls]
        cat = [c for c in columns if c in domains and c not in bounds and c != cls]
        return Schema(num, cat, cls)

    def _domain(self, df: pd.DataFrame, schema: Schema) -> _Domain:
        """Every column's declared domain (parameters over the schema); what is missing is
        refused, or read from the data with ``domain_from_data=True``."""
        bounds = dict(self.bounds or {})
        domains = dict(self.domains or {})
        cols = schema.columns
        for c in bounds:
            if c not in schema.numeric:
                raise ParameterError(f"bounds names {c!r}, which is not a numeric attribute of the table")
        for c in domains:
            if c not in cols or c in schema.numeric:
                raise ParameterError(f"domains names {c!r}, which is not a categorical attribute or the class")
        nullable = list(self.nullable or [])
        for c in nullable:
            if c not in cols:
                raise ParameterError(f"nullable names {c!r}, which is not a column of the schema")
        dom = _Domain({}, {}, set(schema.integer), set(nullable))
        undeclared_num: list[str] = []
        undeclared_cat: list[str] = []
        for c in cols:
            if c in schema.numeric:
                if c in bounds:
                    if any(is_iso_date(v) for v in bounds[c]) and c not in schema.dates:
                        raise ParameterError(f"bounds of {c!r} are dates, and {c!r} is not a date column")
                    lo, hi = (parse_iso_date(v, f"a bound of {c!r}") if is_iso_date(v) else float(v)
                              for v in bounds[c])
                elif c in schema.bounds:
                    lo, hi = schema.bounds[c]
                else:
                    undeclared_num.append(c)
                    vals = df[c].to_numpy(dtype=float)
                    vals = vals[np.isfinite(vals)]
                    lo, hi = (float(vals.min()), float(vals.max())) if len(vals) else (0.0, 0.0)
                if c in dom.integer and math.floor(hi) < math.ceil(lo):
                    raise ParameterError(f"bounds of integer column {c!r} contain no whole number")
                dom.bounds[c] = (lo, hi)
                continue
            if c in domains:
                values = list(domains[c])
            elif c in schema.categories:
                values = list(schema.categories[c])
            else:
                undeclared_cat.append(c)
                values = sorted(pd.unique(df[c].dropna()), key=_kind_key)
            values = [v.item() if isinstance(v, np.generic) else v for v in values]
            if not values:
                raise ParameterError(f"the declared domain of {c!r} is empty")
            if len(set(values)) != len(values):
                raise ParameterError(f"the declared domain of {c!r} lists a value twice")
            dom.values[c] = values
        if (undeclared_num or undeclared_cat) and not self.domain_from_data:
            raise SchemaError(
                f"DPCube needs a declared public domain, and the {_declare_hint(undeclared_num, undeclared_cat)} "
                "are not declared; declare them in the schema file ('bounds' and 'categories'; "
                "`ppdm schema DATA --domain-template` writes one to fill in) or with bounds=/domains=, or release "
                "without a differential privacy guarantee with domain_from_data=True (CLI: --domain-from-data)"
            )
        if self.domain_from_data:
            dom.from_data = [*undeclared_num, *undeclared_cat]
            if self.schema is None:
                dom.from_data.append("the column types")
            for c in schema.attributes:  # a record without its class is dropped, never modelled
                if c not in dom.nullable and df[c].isna().any():
                    dom.nullable.add(c)
                    dom.from_data.append(f"{c} (whether missing)")
        return dom

    # ------------------------------------------------------------------ encoding
    def _grid_domain(self, schema: Schema, dom: _Domain) -> tuple[list[str], dict[str, list]]:
        """The categorical grid columns (with flags of nullable numeric attributes) and the
        values of every categorical grid column, sentinels included."""
        flags = [c + _GAP for c in schema.numeric if c in dom.nullable]
        values: dict[str, list] = {}
        for c, vals in dom.values.items():
            extra = ([OTHER] if self.unknown == "other" else []) + ([MISSING] if c in dom.nullable else [])
            values[c] = [*vals, *extra]
        for f in flags:
            values[f] = ["observed", "missing"]
        return flags, values

    def _encode(self, df: pd.DataFrame, schema: Schema) -> tuple[pd.DataFrame, np.ndarray, dict[str, Any]]:
        """The records in domain terms: numeric values clamped to their bounds (whole numbers
        rounded), categories as codes into the grid values; and which records are kept.

        Never raises for a value: a category outside the declared set goes to "other" or
        drops its record, a missing cell outside the ``nullable`` columns drops its record.
        """
        dom = self._dom
        n = len(df)
        keep = np.ones(n, dtype=bool)
        out: dict[str, np.ndarray] = {}
        notes: dict[str, Any] = {"dropped_missing": 0, "dropped_unknown": 0, "clamped": {}}
        for c in schema.numeric:
            v = df[c].to_numpy(dtype=float, na_value=np.nan)
            miss = np.isnan(v)
            lo, hi = dom.bounds[c]
            if c in dom.integer:
                lo, hi = float(math.ceil(lo)), float(math.floor(hi))
                w = np.rint(v)
            else:
                w = v
            clamped = np.clip(np.where(miss, lo, w), lo, hi)
            notes["clamped"][c] = int((~miss & (clamped != v)).sum())
            out[c] = clamped
            if c in dom.nullable:
                out[c + _GAP] = miss.astype(np.int64)
            else:
                notes["dropped_missing"] += int((miss & keep).sum())
                keep &= ~miss
        for c, values in self._grid_values.items():
            if c.endswith(_GAP):
                continue
            lookup = {v: i for i, v in enumerate(values) if v not in (MISSING, OTHER)}
            raw = df[c].to_numpy(dtype=object)
            miss = pd.isna(df[c]).to_numpy()
            codes = np.fromiter((lookup.get(v, -1) if not m else -2 for v, m in zip(raw, miss, strict=True)),
                                dtype=np.int64, count=n)
            if c in dom.nullable:
                codes[codes == -2] = values.index(MISSING)
            else:
                notes["dropped_missing"] += int(((codes == -2) & keep).sum())
                keep &= codes != -2
            unknown = codes == -1
            if self.unknown == "other":
                codes[unknown] = values.index(OTHER)
            else:
                notes["dropped_unknown"] += int((unknown & keep).sum())
                keep &= ~unknown
            out[c] = np.where(codes < 0, 0, codes)
        enc = pd.DataFrame(out, index=df.index)
        return enc, keep, notes

    def _encode_frame(self, X: pd.DataFrame) -> pd.DataFrame:
        """``X`` (a table with this schema's columns, e.g. a release) in domain terms, every
        record kept (values outside the domain are clamped; unknown categories get code 0)."""
        enc, _, _ = self._encode(X, self.schema_)
        return enc


def _weight_as_attribute(schema: Schema) -> Schema:
    """The schema with its sampling-weight column made a numeric attribute.

    Other techniques pass a weight through unchanged: their records are x's records. A
    synthetic record stands for no one in x, and x's weights copied into it would publish
    them. DPCube synthesizes the weight like any numeric attribute instead (its public bounds
    declared like theirs), so the release keeps the column and every value in it comes out of
    the differentially private counts."""
    from dataclasses import replace

    if schema.weight is None:
        return schema
    return replace(schema, weight=None, numeric=[*schema.numeric, schema.weight])
