"""Table schema: each column's type (numeric or categorical) and its disclosure role.

The papers treat a dataset as records over numeric ("continuous") and categorical
("discrete") attributes plus one class attribute (paper 000 §2). Every technique
and measure in ppdm reads column types from a :class:`Schema`, never from dtypes
alone, because many categorical attributes are stored as integer codes.

Disclosure roles follow statistical disclosure control's vocabulary (sdcMicro's
keyVars / sensibleVar / weightVar, ARX's identifying / quasi-identifying /
sensitive attributes):

* **identifier**: a direct identifier (name, record number, e-mail). Not an
  attribute: never modelled by a technique and never released unless asked for.
* **quasi-identifier** (key variable): an attribute an intruder may know from
  other sources and link on; disclosure-risk measures look at these.
* **sensitive**: an attribute whose value must not be learnt (l-diversity, inference).
* **class**: the label the papers' classifiers predict.
* **weight**: a sampling weight (population frequencies Fk); not an attribute.
* **other**: any remaining attribute.

Dates and datetimes are numeric attributes on a time axis (days since 1970-01-01, see
:mod:`ppdm.data.types`); ``dates`` names them with the text format they are written in.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from ppdm.data.edit_rules import parse_edit_rules
from ppdm.data.types import (
    default_date_format,
    format_day,
    is_date_dtype,
    is_iso_date,
    parse_iso_date,
    resolution_of,
    whole_days,
)
from ppdm.errors import ParameterError, SchemaError
from ppdm.utils import loads_json

MissingPolicy = Literal["error", "drop", "keep"]


@dataclass
class Schema:
    """Column roles of a table.

    Attributes
    ----------
    numeric:
        Numeric (continuous) attributes, in table order.
    categorical:
        Categorical (discrete) attributes, in table order; never includes the class.
    class_column:
        The class (label) attribute, or ``None`` for unlabelled microdata.
    integer:
        Numeric attributes whose values are whole numbers; perturbations keep them whole.
    identifiers:
        Direct identifiers. They are not attributes (not in ``numeric``/``categorical``).
    quasi_identifiers:
        Key variables: attributes (numeric or categorical) an intruder may link on.
    sensitive:
        Sensitive attributes (may include the class column).
    weight:
        Sampling-weight column, or ``None``. Not an attribute.
    bounds:
        Declared public domain ``[low, high]`` of numeric attributes, by column. Techniques
        with a formal guarantee (DPCube) take their domain from here, never from the data.
    categories:
        Declared public domain of categorical attributes and of the class: every value the
        column may take, in a fixed order. Like ``bounds``, it is metadata a data owner
        publishes; techniques with a formal guarantee read it instead of the data.
    dates:
        Numeric attributes that are dates or datetimes, each with the strftime format its
        values are written in (``None``: ISO, ``%Y-%m-%d``). Techniques see them as days
        since 1970-01-01; a release writes them back in that format.
    hierarchies:
        Generalisation hierarchies of categorical attributes (ARX's hierarchies): for each
        column, every original category with the list of its generalised labels from fine to
        coarse (level 1, level 2, ...). Global recoding publishes the labels of one level;
        :func:`ppdm.data.generalization.covers` matches an original category to any of its
        labels. A schema file gives each hierarchy inline (a JSON object) or as the path of an
        ARX-style CSV file (one row per category: the category, then its labels), relative to
        the schema file.
    edit_rules:
        Declared edit rules: combinations of values no record may hold, each a text such as
        ``'sex == "M" -> diagnosis not in ["O80", "O82"]'`` (syntax: :mod:`ppdm.data.edit_rules`).
        They name attributes or the class; ``ppdm evaluate`` counts the records of x and z that
        break them (:func:`ppdm.metrics.plausibility.edit_rule_violations`).
    """

    numeric: list[str] = field(default_factory=list)
    categorical: list[str] = field(default_factory=list)
    class_column: str | None = None
    integer: list[str] = field(default_factory=list)
    identifiers: list[str] = field(default_factory=list)
    quasi_identifiers: list[str] = field(default_factory=list)
    sensitive: list[str] = field(default_factory=list)
    weight: str | None = None
    bounds: dict[str, tuple[float, float]] = field(default_factory=dict)
    categories: dict[str, list] = field(default_factory=dict)
    dates: dict[str, str | None] = field(default_factory=dict)
    hierarchies: dict[str, dict] = field(default_factory=dict)
    edit_rules: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if isinstance(self.dates, (list, tuple)):
            self.dates = dict.fromkeys(map(str, self.dates))
        self.dates = {str(c): (None if f is None else str(f)) for c, f in dict(self.dates).items()}
        seen: set[str] = set()
        for c in [*self.numeric, *self.categorical]:
            if c in seen:
                raise SchemaError(f"column {c!r} is listed twice in the schema")
            seen.add(c)
        if self.class_column is not None and self.class_column in seen:
            raise SchemaError(f"class column {self.class_column!r} is also listed as an attribute")
        bad = sorted(set(self.integer) - set(self.numeric))
        if bad:
            raise SchemaError(f"integer columns {bad} are not numeric attributes")
        special = {self.class_column, self.weight} - {None}
        for c in self.identifiers:
            if c in seen or c in special:
                raise SchemaError(f"identifier column {c!r} is also listed as an attribute, the class or the weight")
        if self.weight is not None and (self.weight in seen or self.weight == self.class_column):
            raise SchemaError(f"weight column {self.weight!r} is also listed as an attribute or the class")
        bad = [c for c in self.quasi_identifiers if c not in seen]
        if bad:
            raise SchemaError(f"quasi-identifier(s) {bad} are not attributes of the schema")
        bad = [c for c in self.sensitive if c not in seen and c != self.class_column]
        if bad:
            raise SchemaError(f"sensitive column(s) {bad} are neither attributes nor the class")
        self.bounds = {str(c): _check_bounds(c, b, date=str(c) in self.dates) for c, b in dict(self.bounds).items()}
        bad = [c for c in self.bounds if c not in self.numeric]
        if bad:
            raise SchemaError(f"bounds are declared for {bad}, which are not numeric attributes")
        self.categories = {str(c): _check_categories(c, v) for c, v in dict(self.categories).items()}
        bad = [c for c in self.categories if c not in self.categorical and c != self.class_column]
        if bad:
            raise SchemaError(f"categories are declared for {bad}, which are neither categorical attributes nor the class")
        bad = [c for c in self.dates if c not in self.numeric]
        if bad:
            raise SchemaError(f"date column(s) {bad} are not numeric attributes (a date is a number on a time axis)")
        self.hierarchies = {str(c): _check_hierarchy(c, h) for c, h in dict(self.hierarchies or {}).items()}
        bad = [c for c in self.hierarchies if c not in self.categorical and c != self.class_column]
        if bad:
            raise SchemaError(f"hierarchies are declared for {bad}, which are neither categorical attributes nor the "
                              "class (recode numbers into intervals with breaks instead)")
        for c, f in self.dates.items():
            if f is not None and "%" not in f:
                raise SchemaError(f"the date format of {c!r} must be a strftime format such as '%Y-%m-%d', got {f!r}")
        # a malformed rule or one naming no attribute is refused when the schema is read, not at evaluation
        rules = parse_edit_rules(list(self.edit_rules or []) if not isinstance(self.edit_rules, str)
                                 else self.edit_rules, [*self.attributes, *([self.class_column] if self.class_column
                                                                           else [])])
        self.edit_rules = [r.text for r in rules]

    # ------------------------------------------------------------------ roles
    @property
    def attributes(self) -> list[str]:
        """Non-class attributes: numeric first, then categorical."""
        return [*self.numeric, *self.categorical]

    @property
    def columns(self) -> list[str]:
        """Attributes and the class (last): the columns a technique works on."""
        return self.attributes + ([self.class_column] if self.class_column else [])

    @property
    def all_columns(self) -> list[str]:
        """Every column the schema names: identifiers, attributes, the class, the weight."""
        return [*self.identifiers, *self.columns, *([self.weight] if self.weight else [])]

    def role(self, column: str) -> str:
        """The disclosure role of ``column``: identifier, quasi-identifier, sensitive, class,
        weight or other."""
        if column in self.identifiers:
            return "identifier"
        if column == self.class_column:
            return "class"
        if column == self.weight:
            return "weight"
        if column in self.quasi_identifiers:
            return "quasi-identifier"
        if column in self.sensitive:
            return "sensitive"
        if column in self.numeric or column in self.categorical:
            return "other"
        raise SchemaError(f"column {column!r} is not in the schema")

    def is_numeric(self, column: str) -> bool:
        return column in self.numeric

    def require_class(self) -> str:
        if self.class_column is None:
            raise SchemaError("this operation needs a class column; name it with class_column=... (CLI: --class)")
        return self.class_column

    def with_class(self, class_column: str | None) -> Schema:
        """A copy whose class column is ``class_column`` (moved out of the attributes)."""
        if class_column == self.class_column:
            return self
        numeric = [c for c in self.numeric if c != class_column]
        categorical = [c for c in self.categorical if c != class_column]
        if self.class_column is not None:
            categorical.append(self.class_column)
        return replace(
            self, numeric=numeric, categorical=categorical, class_column=class_column,
            integer=[c for c in self.integer if c in numeric],
            quasi_identifiers=[c for c in self.quasi_identifiers if c != class_column],
            bounds={c: b for c, b in self.bounds.items() if c != class_column},
            dates={c: f for c, f in self.dates.items() if c != class_column},
        )

    def hierarchy_level(self, column: str, value: object, level: int) -> object:
        """The label of ``value`` at ``level`` (1 = the finest generalisation) of ``column``'s
        hierarchy; level 0 is the value itself. Raises :class:`SchemaError` when the hierarchy
        does not cover the value or has fewer levels."""
        if level == 0:
            return value
        h = self.hierarchies.get(column)
        if h is None:
            raise SchemaError(f"column {column!r} has no hierarchy in the schema")
        ups = _hierarchy_entry(h, value)
        if ups is None:
            raise SchemaError(f"the hierarchy of {column!r} does not cover category {value!r}; add it to the hierarchy")
        if level > len(ups):
            raise SchemaError(f"the hierarchy of {column!r} has {len(ups)} level(s) for {value!r}, "
                              f"but level {level} was asked")
        return ups[level - 1]

    # --------------------------------------------------------------- infer/io
    @classmethod
    def infer(
        cls,
        df: pd.DataFrame,
        class_column: str | None = None,
        *,
        numeric: list[str] | None = None,
        categorical: list[str] | None = None,
        identifiers: list[str] | None = None,
        weight: str | None = None,
    ) -> Schema:
        """Infer types from dtypes: numeric dtypes are numeric attributes, and so are dates
        (with the text format :func:`ppdm.data.io.read_table` found, in ``df.attrs["date_formats"]``,
        else ISO); booleans and everything else are categorical. ``numeric``/``categorical``
        override the guess for the named columns; ``identifiers`` and ``weight`` are given
        their role and left out of the attributes."""
        if class_column is not None and class_column not in df.columns:
            raise SchemaError(f"class column {class_column!r} is not in the table{_near(class_column, df.columns)}")
        force_num = set(numeric or [])
        force_cat = set(categorical or [])
        ids = list(identifiers or [])
        for c in force_num | force_cat | set(ids) | ({weight} if weight else set()):
            if c not in df.columns:
                raise SchemaError(f"column {c!r} named in the schema is not in the table{_near(c, df.columns)}")
        num: list[str] = []
        cat: list[str] = []
        for c in df.columns:
            if c == class_column or c in ids or c == weight:
                continue
            s = df[c]
            is_num = (pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)) or is_date_dtype(s)
            if not is_num and c not in force_cat and c not in force_num:
                _refuse_stray_text(c, s)
            if c in force_cat or (not is_num and c not in force_num):
                cat.append(c)
            else:
                num.append(c)
        formats = dict(df.attrs.get("date_formats") or {})
        dates: dict[str, str | None] = {}
        for c in num:
            if is_date_dtype(df[c]):
                dates[str(c)] = formats.get(c) or default_date_format(df[c])
        integer = [c for c in num if ((resolution_of(dates[c]) == "D" and whole_days(df[c])) if c in dates
                                      else _is_whole(df[c]))]
        return cls(num, cat, class_column, integer, identifiers=ids, weight=weight, dates=dates)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["bounds"] = {c: list(b) for c, b in self.bounds.items()}
        d["categories"] = {c: list(v) for c, v in self.categories.items()}
        d["dates"] = dict(self.dates)
        d["hierarchies"] = {c: {str(k): list(v) for k, v in h.items()} for c, h in self.hierarchies.items()}
        if not self.edit_rules:
            del d["edit_rules"]  # files and provenances written before edit rules existed read the same
        return d

    @classmethod
    def from_dict(cls, d: dict) -> Schema:
        """A schema from its dict form; keys starting with ``_`` are comments and ignored,
        any other unknown key is refused (a misspelt role must not be dropped silently)."""
        if not isinstance(d, dict):
            raise SchemaError(f"malformed schema: expected a JSON object, got {type(d).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = [k for k in d if k not in known and not str(k).startswith("_")]
        if unknown:
            raise SchemaError(f"schema has an unknown key {unknown[0]!r}; its keys: {', '.join(sorted(known))}")
        try:
            dates = d.get("dates") or {}
            numeric = list(d.get("numeric", []))
            # a date named only under "dates" is a numeric attribute: no need to list it twice
            listed = set(numeric) | set(d.get("categorical", [])) | set(d.get("identifiers", [])) \
                | {d.get("class_column"), d.get("weight")}
            numeric += [c for c in (dates if isinstance(dates, (dict, list)) else []) if c not in listed]
            return cls(
                numeric=numeric,
                categorical=list(d.get("categorical", [])),
                class_column=d.get("class_column"),
                integer=list(d.get("integer", [])),
                identifiers=list(d.get("identifiers", [])),
                quasi_identifiers=list(d.get("quasi_identifiers", [])),
                sensitive=list(d.get("sensitive", [])),
                weight=d.get("weight"),
                bounds=dict(d.get("bounds") or {}),
                categories=dict(d.get("categories") or {}),
                dates=dates,
                hierarchies=dict(d.get("hierarchies") or {}),
                edit_rules=d.get("edit_rules") or [],
            )
        except ParameterError:  # a malformed edit rule: named as it is
            raise
        except (TypeError, ValueError) as e:  # malformed json
            raise SchemaError(f"malformed schema: {e}") from None

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    @classmethod
    def from_json(cls, text: str) -> Schema:
        return cls.from_dict(loads_json(text, "schema file", SchemaError))

    def save(self, path: str | Path) -> None:
        from ppdm.data.atomic import atomic_write_text

        atomic_write_text(path, self.to_json())

    @classmethod
    def load(cls, path: str | Path) -> Schema:
        p = Path(path)
        if not p.exists():
            raise SchemaError(f"schema file {str(p)!r} does not exist")
        d = loads_json(p.read_text(), "schema file", SchemaError)
        if isinstance(d, dict) and isinstance(d.get("hierarchies"), dict):
            # a hierarchy given as a file name: an ARX-style CSV beside the schema file
            d["hierarchies"] = {c: read_hierarchy(p.parent / h) if isinstance(h, str) else h
                                for c, h in d["hierarchies"].items()}
        return cls.from_dict(d)

    # ------------------------------------------------------------- validation
    def validate(
        self,
        df: pd.DataFrame,
        *,
        missing: MissingPolicy = "error",
        min_classes: int = 0,
    ) -> tuple[pd.DataFrame, int]:
        """Check ``df`` against the schema and return ``(df, n_dropped)``.

        Every problem raises :class:`SchemaError` naming the column and, where one
        exists, the first offending row label. ``missing="drop"`` drops incomplete
        rows and reports how many; ``"keep"`` leaves NaN in place (for techniques
        that handle them); ``"error"`` refuses them.
        """
        if not isinstance(df, pd.DataFrame):
            raise SchemaError(f"expected a pandas DataFrame, got {type(df).__name__}")
        if len(df) == 0:
            raise SchemaError("the table has no rows")
        if df.columns.has_duplicates:
            dup = df.columns[df.columns.duplicated()][0]
            raise SchemaError(f"column {dup!r} appears twice in the table")
        absent = [c for c in self.columns if c not in df.columns]
        if absent:
            what = "class column" if absent == [self.class_column] else "column(s)"
            raise SchemaError(f"{what} {', '.join(map(repr, absent))} not in the table{_near(absent[0], df.columns)}")
        for c in self.numeric:
            s = df[c]
            if is_date_dtype(s):
                continue  # a datetime column is numeric on its time axis, and never infinite
            if not pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
                conv = pd.to_numeric(s, errors="coerce")
                bad = conv.isna() & s.notna()
                row = s.index[bad.to_numpy()][0] if bad.any() else None
                what = "date column" if c in self.dates else "numeric column"
                raise SchemaError(
                    f"{what} {c!r} holds a non-numeric value {s.loc[row]!r} at row {row!r}"
                    if row is not None
                    else f"{what} {c!r} has non-numeric dtype {s.dtype}"
                )
            vals = s.to_numpy(dtype=float, na_value=np.nan)
            inf = np.isinf(vals)
            if inf.any():
                raise SchemaError(f"numeric column {c!r} holds an infinite value at row {s.index[inf.argmax()]!r}")
        n_dropped = 0
        incomplete = df[self.columns].isna()
        if incomplete.to_numpy().any():
            if missing == "error":
                col = incomplete.any(axis=0).idxmax()
                row = incomplete.index[int(incomplete[col].to_numpy().argmax())]
                n_rows = int(incomplete.any(axis=1).sum())
                raise SchemaError(
                    f"column {col!r} has a missing value at row {row!r} (NaN or None; {n_rows} incomplete rows in all); "
                    "drop those rows with missing='drop' (CLI: --missing drop), or keep the missing cells where "
                    "techniques and measures treat them with missing='keep' (CLI: --missing keep)"
                )
            if missing == "drop":
                keep = ~incomplete.any(axis=1).to_numpy()
                n_dropped = int((~keep).sum())
                df = df.loc[keep]
                if len(df) == 0:
                    raise SchemaError("every row has a missing value; nothing is left after dropping them")
        if min_classes and self.class_column is not None:
            k = df[self.class_column].nunique(dropna=True)
            if k < min_classes:
                raise SchemaError(
                    f"class column {self.class_column!r} has {k} distinct value(s); at least {min_classes} are needed"
                )
        return df, n_dropped


def _near(name: str, columns: pd.Index) -> str:
    """The table's columns for an error message, pointing out one that differs from
    ``name`` by spaces only (names keep their spaces exactly as written)."""
    cols = [str(c) for c in columns]
    spaced = [c for c in cols if c != name and c.strip() == str(name).strip()]
    if spaced:
        return f"; column {spaced[0]!r} differs from it by spaces, which are kept as written"
    return f" (columns: {', '.join(cols)})"


#: share of parseable numbers above which a text column is taken for a damaged numeric one
_NUMERIC_SHARE = 0.9


def _refuse_stray_text(column: str, s: pd.Series) -> None:
    """Refuse a column of numbers spoiled by a few non-numeric cells.

    Read from a CSV, one stray word turns a whole numeric column into text, and the
    inference would then silently treat it as categorical (every number a category).
    When at least 90% of the non-missing cells are numbers the column is taken to be
    numeric and the first offending cell is reported; a column that really is
    categorical can be declared so (``categorical=[...]`` / a schema file).
    """
    vals = s.dropna()
    if len(vals) < 2 or not (pd.api.types.is_object_dtype(s) or pd.api.types.is_string_dtype(s)):
        return
    conv = pd.to_numeric(vals.astype(str).str.strip(), errors="coerce")
    ok = conv.notna().to_numpy()
    if ok.all() or ok.mean() < _NUMERIC_SHARE:
        return
    row = vals.index[~ok][0]
    raise SchemaError(
        f"column {column!r} looks numeric but holds the non-numeric value {s.loc[row]!r} at row {row!r}; "
        "fix the value, or declare the column categorical in a schema"
    )


def date_bounds(bounds: tuple[float, float]) -> list[str]:
    """A date column's bounds (days since 1970-01-01) as the ISO dates a schema file writes."""
    return [format_day(v) for v in bounds]


def _check_bounds(column: str, b: object, *, date: bool = False) -> tuple[float, float]:
    """``[low, high]`` as two floats. A date column's bounds are dates (``"2020-01-01"``), or days
    since 1970-01-01 as earlier schema files wrote them; a date for any other column is refused."""
    if isinstance(b, (list, tuple)) and any(v is None for v in b):
        raise SchemaError(f"bounds of {column!r} are not filled in: replace null by the public low and high "
                          "(from documentation, not from the records)")
    if isinstance(b, (list, tuple)) and any(isinstance(v, str) and is_iso_date(v) for v in b):
        if not date:
            raise SchemaError(f"bounds of {column!r} are dates, and {column!r} is not a date column (declare it "
                              "under 'dates')")
        b = [parse_iso_date(v, f"a bound of {column!r}") if isinstance(v, str) else v for v in b]
    try:
        lo, hi = (float(v) for v in b)  # type: ignore[attr-defined]  # b is unchecked JSON; not a pair raises, caught below
    except (TypeError, ValueError):
        raise SchemaError(f"bounds of {column!r} must be a pair [low, high], got {b!r}") from None
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise SchemaError(f"bounds of {column!r} must be finite with low < high, got [{lo}, {hi}]")
    return (lo, hi)


def read_hierarchy(path: str | Path) -> dict[str, list[str]]:
    """An ARX-style hierarchy file: one row per original category, the category first and then
    its generalised labels from fine to coarse, separated by ``;`` (ARX) or ``,``."""
    import csv

    p = Path(path)
    if not p.is_file():
        raise SchemaError(f"hierarchy file {str(p)!r} does not exist")
    text = p.read_text(encoding="utf-8")
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        raise SchemaError(f"hierarchy file {str(p)!r} is empty")
    sep = ";" if lines[0].count(";") >= lines[0].count(",") and ";" in lines[0] else ","
    out: dict[str, list[str]] = {}
    for no, row in enumerate(csv.reader(lines, delimiter=sep), 1):
        cells = [c.strip() for c in row]
        if len(cells) < 2 or not cells[0]:
            raise SchemaError(f"hierarchy file {str(p)!r}, line {no}: a category needs at least one generalised label")
        if cells[0] in out:
            raise SchemaError(f"hierarchy file {str(p)!r}, line {no}: category {cells[0]!r} is listed twice")
        out[cells[0]] = cells[1:]
    return out


def _hierarchy_entry(h: dict, value: object) -> list | None:
    """The labels of ``value`` in hierarchy ``h`` (a JSON round trip turns codes into text)."""
    ups = h.get(value) if _hashable(value) else None
    if ups is None:
        ups = h.get(str(value))
    if ups is None and isinstance(value, float) and value.is_integer():
        ups = h.get(str(int(value)))
    return ups


def _hashable(v: object) -> bool:
    try:
        hash(v)
    except TypeError:
        return False
    return True


def _check_hierarchy(column: str, h: object) -> dict:
    if not isinstance(h, dict) or not h:
        raise SchemaError(f"the hierarchy of {column!r} must map each category to its list of labels")
    out = {}
    for k, v in h.items():
        if isinstance(v, (str, int, float)) and not isinstance(v, bool):
            v = [v]
        if not isinstance(v, (list, tuple)) or not v:
            raise SchemaError(f"the hierarchy of {column!r} gives category {k!r} no list of labels")
        out[k.item() if isinstance(k, np.generic) else k] = [x.item() if isinstance(x, np.generic) else x for x in v]
    return out


def _check_categories(column: str, values: object) -> list:
    if isinstance(values, (str, bytes)) or not isinstance(values, (list, tuple, np.ndarray, pd.Index)):
        raise SchemaError(f"categories of {column!r} must be a list of values, got {values!r}")
    # numpy scalars become Python values, so the schema stays JSON-able
    vals = [v.item() if isinstance(v, np.generic) else v for v in values]
    if not vals:
        raise SchemaError(f"categories of {column!r} must name at least one value (list every value the column "
                          "may take, from documentation, not from the records)")
    try:
        distinct = len(set(vals))
    except TypeError:
        raise SchemaError(f"categories of {column!r} must be plain values (numbers or text)") from None
    if distinct != len(vals):
        raise SchemaError(f"categories of {column!r} list a value twice")
    return vals


def _is_whole(s: pd.Series) -> bool:
    if pd.api.types.is_integer_dtype(s):
        return True
    v = s.to_numpy(dtype=float, na_value=np.nan)
    v = v[np.isfinite(v)]
    return bool(v.size) and bool(np.all(v == np.round(v)))
