"""Column roles from the user, and columns that look like direct identifiers.

A release must never carry a direct identifier (a name, a record number, an e-mail
address) and no technique may model one: a model conditioned on a column that is
unique per record reproduces the records. Roles therefore come from the user — a
schema file, or flags such as ``--id``/``--qi`` — and every column whose role was
*not* declared is screened by :func:`suspect_identifiers` before a release is made.

A column is a suspected identifier when (at least :data:`MIN_RECORDS` values, missing
values left out):

* its name, split into words (``customer_id``, ``FirstName``, ``e-mail``), holds one of
  :data:`IDENTIFIER_WORDS` (id, name, email, phone, ...) and its values could be labels:
  text or whole numbers. A name alone does not make a measurement an identifier: spambase's
  ``word_freq_email`` holds frequencies such as 0.32;
* it holds text and at least :data:`UNIQUE_SHARE` of its values are distinct;
* it holds whole numbers, at least :data:`UNIQUE_SHARE` of them distinct, that look like
  record numbers: they fill at least half of the run between their minimum and maximum
  (1, 2, 3, ...), or they strictly increase or decrease down the table.

Whole numbers that are merely distinct (amounts of money, as in the tarragona table) are
not suspected: they are measurements, not labels. Floating-point, date and boolean columns
never are (a date of birth is a quasi-identifier, which the user declares).

**Pass-through columns** — columns no technique models, which reach the release unchanged
(:func:`pass_through_columns`: the sampling weight) — are screened like identifiers by
:func:`screen_pass_through`: one whose values are nearly all distinct (at least
:data:`UNIQUE_SHARE` of them, by default) links every released record to its original
by a join, however well the other columns are protected, so a release refuses it unless it
is declared safe.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from ppdm.data.schema import Schema
from ppdm.errors import SchemaError

#: words that make a column name look like a direct identifier
IDENTIFIER_WORDS = frozenset({
    "id", "ids", "uuid", "guid", "hid", "pid",
    "name", "names", "firstname", "lastname", "surname", "fullname", "forename", "username",
    "email", "mail", "phone", "telephone", "tel", "mobile", "cellphone", "fax",
    "ssn", "passport", "iban",
})
#: share of distinct values above which a text or record-number column is suspected
UNIQUE_SHARE = 0.9
#: columns with fewer non-missing values than this are not screened by their values
MIN_RECORDS = 20


@dataclass(frozen=True)
class SuspectedIdentifier:
    """A column that looks like a direct identifier, and why."""

    column: str
    reason: str


def name_words(name: str) -> list[str]:
    """The words of a column name: ``"customerID"`` → ``["customer", "id"]``."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", str(name))
    spaced = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", spaced)
    return [w.lower() for w in re.split(r"[^0-9A-Za-z]+", spaced) if w]


def _whole(values: np.ndarray) -> bool:
    return bool(values.size) and bool(np.all(np.isfinite(values))) and bool(np.all(values == np.round(values)))


def _could_be_labels(s: pd.Series, vals: pd.Series) -> bool:
    """Whether values could label people: text or whole numbers (numbers with a fractional
    part are measurements)."""
    return not (pd.api.types.is_numeric_dtype(s) and len(vals) and not _whole(vals.to_numpy(dtype=float)))


def identifier_reason(s: pd.Series) -> str | None:
    """Why column ``s`` looks like a direct identifier, or ``None`` if it does not."""
    words = set(name_words(str(s.name)))
    hit = sorted(words & IDENTIFIER_WORDS)
    vals = s.dropna()
    n = len(vals)
    if pd.api.types.is_bool_dtype(s) or pd.api.types.is_datetime64_any_dtype(s):
        return None  # booleans and dates are measurements, however many distinct dates there are
    if hit and _could_be_labels(s, vals):
        return f"named like an identifier ({hit[0]!r})"
    if n < MIN_RECORDS:
        return None
    if not pd.api.types.is_numeric_dtype(s):
        n_distinct = vals.astype(str).nunique()
        if n_distinct >= UNIQUE_SHARE * n:
            return f"text with {n_distinct} distinct values in {n} records"
        return None
    v = vals.to_numpy(dtype=float)
    if not _whole(v):
        return None
    distinct = np.unique(v)
    if distinct.size < UNIQUE_SHARE * n:
        return None
    run = float(distinct[-1]) - float(distinct[0]) + 1
    if run <= 2 * distinct.size:
        return f"record numbers ({distinct.size} distinct whole numbers from {distinct[0]:.0f} to {distinct[-1]:.0f})"
    d = np.diff(v)
    if np.all(d > 0) or np.all(d < 0):
        return f"whole numbers, {distinct.size} distinct, that run in order down the table"
    return None


def suspect_identifiers(df: pd.DataFrame, columns: Iterable[str] | None = None) -> list[SuspectedIdentifier]:
    """The columns of ``df`` (or of ``columns``) that look like direct identifiers."""
    names = list(df.columns) if columns is None else [c for c in columns if c in df.columns]
    out = []
    for c in names:
        reason = identifier_reason(df[c])
        if reason is not None:
            out.append(SuspectedIdentifier(str(c), reason))
    return out


def pass_through_columns(schema: Schema, columns: Iterable[str]) -> list[str]:
    """The columns of a release that no technique models and that pass into it unchanged: the
    sampling weight (identifiers are removed, or kept on request)."""
    cols = set(map(str, columns))
    return [c for c in ([schema.weight] if schema.weight else []) if c in cols]


@dataclass(frozen=True)
class PassThroughScreen:
    """How much a pass-through column tells apart: its ``distinct`` share of values (among
    the ``records`` with one) and the ``unique`` share of records whose value no other has."""

    column: str
    records: int
    distinct: float
    unique: float


def screen_pass_through(df: pd.DataFrame, schema: Schema) -> list[PassThroughScreen]:
    """The screening of every pass-through column of ``df`` (:func:`pass_through_columns`)."""
    out = []
    for c in pass_through_columns(schema, df.columns):
        vals = df[c].dropna()
        n = len(vals)
        if n == 0:
            out.append(PassThroughScreen(c, 0, 0.0, 0.0))
            continue
        counts = vals.value_counts(sort=False)
        out.append(PassThroughScreen(c, n, float(len(counts) / n), float((counts == 1).sum() / n)))
    return out


def pass_through_message(screen: PassThroughScreen, cut: float) -> str:
    """Why a pass-through column is refused, and the ways forward (no value of it printed)."""
    c = screen.column
    return (f"column {c!r} passes into the release unchanged (no technique models a weight) and "
            f"{100 * screen.distinct:.1f}% of its {screen.records} values are distinct (refused from "
            f"{100 * cut:.0f}%): joining the release with the original on {c!r} finds "
            f"{100 * screen.unique:.1f}% of the people; round the weights to a few significant digits or "
            f"group them, perturb them, or leave the column out before anonymizing, or declare it safe with "
            f"allow_pass_through=[{c!r}] (CLI: --allow-pass-through {c})")


def split_names(values: Iterable[str] | str | None) -> list[str]:
    """Column names from repeated and comma-separated option values (``--id a,b --id c``)."""
    if values is None:
        return []
    if isinstance(values, str):
        values = [values]
    out: list[str] = []
    for v in values:
        out.extend(p for p in (part.strip() for part in str(v).split(",")) if p)
    return out


@dataclass(frozen=True)
class Roles:
    """Roles the user declared for some columns (flags or keyword arguments).

    ``other`` declares ordinary attributes: columns that are neither identifiers nor
    quasi-identifiers nor sensitive, named so that identifier screening accepts them.
    """

    identifiers: tuple[str, ...] = ()
    quasi_identifiers: tuple[str, ...] = ()
    sensitive: tuple[str, ...] = ()
    weight: str | None = None
    other: tuple[str, ...] = ()

    @classmethod
    def of(
        cls,
        identifiers: Iterable[str] | str | None = None,
        quasi_identifiers: Iterable[str] | str | None = None,
        sensitive: Iterable[str] | str | None = None,
        weight: str | None = None,
        other: Iterable[str] | str | None = None,
    ) -> Roles:
        roles = cls(tuple(split_names(identifiers)), tuple(split_names(quasi_identifiers)),
                    tuple(split_names(sensitive)), weight or None, tuple(split_names(other)))
        roles._check_distinct()
        return roles

    def named(self) -> list[str]:
        return [*self.identifiers, *self.quasi_identifiers, *self.sensitive,
                *([self.weight] if self.weight else []), *self.other]

    def _check_distinct(self) -> None:
        given: dict[str, str] = {}
        for role, cols in (("identifier", self.identifiers), ("quasi-identifier", self.quasi_identifiers),
                           ("sensitive", self.sensitive), ("weight", (self.weight,) if self.weight else ()),
                           ("other", self.other)):
            for c in cols:
                if c in given and given[c] != role and {given[c], role} != {"quasi-identifier", "sensitive"}:
                    raise SchemaError(f"column {c!r} is given two roles ({given[c]} and {role})")
                given.setdefault(c, role)

    def __bool__(self) -> bool:
        return bool(self.named())


def apply_roles(schema: Schema, roles: Roles, columns: Sequence[str]) -> Schema:
    """``schema`` with the declared ``roles`` applied; ``columns`` are the table's columns.

    An identifier or the weight leaves the attributes; a quasi-identifier, sensitive or
    other column must be an attribute (sensitive may also be the class).
    """
    if not roles:
        return schema
    cols = set(map(str, columns))
    for c in roles.named():
        if c not in cols:
            raise SchemaError(f"column {c!r} given a role is not in the table (columns: {', '.join(map(str, columns))})")
    for c in [*roles.identifiers, *([roles.weight] if roles.weight else [])]:
        if c == schema.class_column:
            raise SchemaError(f"the class column {c!r} cannot be an identifier or the weight")
    leave = set(roles.identifiers) | ({roles.weight} if roles.weight else set())
    numeric = [c for c in schema.numeric if c not in leave]
    categorical = [c for c in schema.categorical if c not in leave]
    attrs = set(numeric) | set(categorical)
    identifiers = [c for c in schema.identifiers if c != roles.weight]
    identifiers += [c for c in roles.identifiers if c not in identifiers]
    weight = roles.weight if roles.weight else (schema.weight if schema.weight not in leave else None)
    for c in [*roles.quasi_identifiers, *roles.other]:
        if c not in attrs:
            raise SchemaError(f"column {c!r} is declared an attribute (quasi-identifier or other), "
                              f"but the schema makes it {_role_of(schema, c)}")
    for c in roles.sensitive:
        if c not in attrs and c != schema.class_column:
            raise SchemaError(f"column {c!r} is declared sensitive, but the schema makes it {_role_of(schema, c)}")
    qi = [c for c in schema.quasi_identifiers if c in attrs]
    qi += [c for c in roles.quasi_identifiers if c not in qi]
    sens = [c for c in schema.sensitive if c in attrs or c == schema.class_column]
    sens += [c for c in roles.sensitive if c not in sens]
    return replace(
        schema, numeric=numeric, categorical=categorical,
        integer=[c for c in schema.integer if c in numeric], identifiers=identifiers,
        quasi_identifiers=qi, sensitive=sens, weight=weight,
        bounds={c: b for c, b in schema.bounds.items() if c in numeric},
        dates={c: f for c, f in schema.dates.items() if c in numeric},
    )


def _role_of(schema: Schema, column: str) -> str:
    try:
        return f"the {schema.role(column)} column" if schema.role(column) in ("class", "weight") \
            else f"an {schema.role(column)}" if schema.role(column) == "identifier" else "an attribute"
    except SchemaError:
        return "no column of the table"


def check_covered(df: pd.DataFrame, schema: Schema, what: str = "the schema") -> None:
    """Refuse a table with columns the schema gives no type or role: they would pass into a
    release unchanged without anybody having decided so."""
    known = set(schema.all_columns)
    left = [str(c) for c in df.columns if c not in known]
    if left:
        raise SchemaError(
            f"{what} leaves out column(s) {', '.join(map(repr, left))} of the table; give each a type or "
            "role (numeric, categorical, identifiers, weight) or drop it from the input"
        )


def refuse_suspects(suspects: Sequence[SuspectedIdentifier]) -> None:
    """Raise for suspected identifiers, naming them and the two ways forward."""
    if not suspects:
        return
    listed = ", ".join(f"{s.column!r} ({s.reason})" for s in suspects)
    names = ",".join(s.column for s in suspects)
    raise SchemaError(
        f"column(s) {listed} look like direct identifiers; declare them identifiers, removed from the "
        f"release, with identifiers=[...] (CLI: --id {names}), or ordinary attributes with other=[...] "
        f"(CLI: --other {names}) or a schema file, or drop them from the input"
    )


def resolve_schema(
    df: pd.DataFrame,
    *,
    schema: Schema | None = None,
    class_column: str | None = None,
    roles: Roles | None = None,
    detect: bool = True,
    what: str = "the schema",
) -> Schema:
    """The schema of ``df`` with the user's roles, checked for a release.

    With ``schema`` (a schema file, a shipped dataset's metadata or a :class:`Schema`)
    every column it names counts as declared; without it the types are inferred and no
    column is declared but the class and those in ``roles``. Columns the schema leaves
    out are refused (:func:`check_covered`), and with ``detect`` every undeclared
    attribute that looks like a direct identifier is refused (:func:`refuse_suspects`).
    """
    roles = roles or Roles()
    if schema is None:
        infer_skip = [*roles.identifiers, *([roles.weight] if roles.weight else [])]
        sch = Schema.infer(df, class_column, identifiers=infer_skip)
        declared = set(roles.named()) | ({class_column} if class_column else set())
    else:
        sch = schema.with_class(class_column) if class_column is not None else schema
        declared = set(sch.all_columns) | set(roles.named())
    sch = apply_roles(sch, roles, list(df.columns))
    check_covered(df, sch, what)
    if sch.weight is not None and sch.weight in df.columns:
        w = df[sch.weight]
        if not pd.api.types.is_numeric_dtype(w) or pd.api.types.is_bool_dtype(w):
            raise SchemaError(f"weight column {sch.weight!r} must hold numbers, it has dtype {w.dtype}")
    if detect:
        refuse_suspects(suspect_identifiers(df, [c for c in sch.attributes if c not in declared]))
    return sch
