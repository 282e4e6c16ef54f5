"""Logic rules ψ → c stated in the original attributes and values (paper 000 §2).

A :class:`Rule` is a conjunction of :class:`Condition` objects (its antecedent ψ)
with a consequent class value and, where known, the class counts of the records
it covers in the data it was found in. A :class:`RuleSet` is Ψx.

Text format, one rule per line, round-tripping exactly::

    age > 40.5 AND capital_gain <= 4737 AND workclass = Private -> "<=50K" [counts "<=50K": 120, ">50K": 34]

Strings that are not plain words are written in double quotes (JSON escaping);
attribute names that are not plain words in backticks; numbers as Python ``repr``
so floats come back bit for bit. A test on a date compares with a date, written in ISO
form (``birth_date <= 1958-01-01``, or ``"1958-01-01 12:30:00"`` with a time of day); it
holds on a date column and on the same column on its time axis (days since 1970-01-01,
:mod:`ppdm.data.types`), so a rule file means the same records either way. ``TRUE`` is the
empty antecedent. Lines starting with ``#`` and blank lines are ignored.

Split points learnt from data are stated in the data's own units (:func:`split_point`,
:func:`split_time`): the number with the fewest digits, or the roundest date, that leaves
every record of the data on the same side (``income <= 18404.46``, ``age <= 40``), not a
midpoint with the noise of binary arithmetic (``18404.464999999997``).
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import re
from collections.abc import Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import Any, Literal, NoReturn, overload

import numpy as np
import pandas as pd

from ppdm.data.types import DAY, EPOCH, numeric_values
from ppdm.errors import PPDMError

Op = Literal["<=", ">", "<", ">=", "=", "!=", "in", "not in"]
NUMERIC_OPS = ("<=", ">", "<", ">=")
SET_OPS = ("in", "not in")
ALL_OPS: tuple[str, ...] = ("<=", ">", "<", ">=", "=", "!=", "in", "not in")

_WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")
_KEYWORDS = {"AND", "TRUE", "in", "not", "counts", "inf", "nan", "True", "False", "None"}


def _py(v: Any) -> Any:
    """NumPy scalars to plain Python values so rules compare and print cleanly."""
    if isinstance(v, np.generic):
        return v.item()
    return v


_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?)?(Z|[+-]\d{2}:?\d{2})?$")


def as_date(v: Any) -> pd.Timestamp | None:
    """``v`` as a date when it is one: a timestamp, a ``datetime``/``date`` object, or text
    in ISO form (``1958-01-01``, ``1958-01-01 12:30:00``); otherwise ``None``."""
    if isinstance(v, pd.Timestamp):
        return v
    if isinstance(v, (_dt.datetime, _dt.date, np.datetime64)):
        return pd.Timestamp(v)
    if isinstance(v, str) and _ISO_DATE.match(v.strip()):
        try:
            return pd.Timestamp(v.strip())
        except (ValueError, OverflowError):
            return None
    return None


def days_of(ts: pd.Timestamp) -> float:
    """A date on the time axis: days since 1970-01-01 (UTC for a date with a time zone)."""
    if ts.tzinfo is not None:
        ts = ts.tz_convert("UTC").tz_localize(None)
    return float((ts - EPOCH) / DAY)


def date_of(days: float) -> pd.Timestamp:
    """The date ``days`` days after 1970-01-01, to the microsecond."""
    return EPOCH + pd.Timedelta(microseconds=round(float(days) * 86_400_000_000))


def _plain_number(v: float) -> int | float:
    """A whole number as an ``int`` (``age <= 40``, not ``40.0``) when it is exactly one."""
    if float(v).is_integer() and abs(v) < 2**53:
        return int(v)
    return float(v)


def split_point(lo: float, hi: float) -> int | float:
    """The split point between ``lo`` (the largest value on the low side) and ``hi`` (the
    smallest on the high side) with the fewest significant digits: the number t with
    ``lo <= t < hi`` nearest their midpoint among the roundest such numbers.

    ``x <= t`` then holds for exactly the values it held for with the midpoint, and t
    shows no more digits than the data themselves were written with: ``40`` between 40
    and 41, ``2430`` between 2407 and 2444, ``18404.46`` between 18404.46 and 18404.47.
    """
    lo, hi = float(lo), float(hi)
    mid = lo + (hi - lo) / 2
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        return mid
    dlo, dhi, dmid = Decimal(repr(lo)), Decimal(repr(hi)), Decimal(repr(mid))
    top = max(abs(dlo), abs(dhi)).adjusted() + 1
    bottom = min(dlo.as_tuple().exponent, dhi.as_tuple().exponent)  # lo itself qualifies there
    for e in range(top, int(bottom) - 1, -1):
        q = Decimal(1).scaleb(e)
        kmin = (dlo / q).to_integral_value(ROUND_CEILING)
        kmax = (dhi / q).to_integral_value(ROUND_CEILING) - 1
        if kmin > kmax:
            continue
        k = min(max((dmid / q).to_integral_value(ROUND_HALF_EVEN), kmin), kmax)
        t = float(k * q)
        if lo <= t < hi:
            return _plain_number(t)
    return _plain_number(lo)


#: units a split point on a date is rounded to, the coarsest first
_TIME_UNITS = ("D", "h", "min", "s", "ms", "us")


def split_time(lo: float, hi: float) -> pd.Timestamp:
    """:func:`split_point` for a date on its time axis (``lo``, ``hi`` in days since
    1970-01-01): the date t with ``lo <= t < hi`` in the coarsest unit (a day, else an
    hour, minute, second, ...), nearest the midpoint, so ``birth_date <= 1958-01-01``
    replaces ``birth_date <= -4382.5``."""
    lo, hi = float(lo), float(hi)
    mid = date_of(lo + (hi - lo) / 2)
    for unit in _TIME_UNITS:
        cands = {mid.floor(unit), mid.ceil(unit), date_of(lo).ceil(unit)}
        ok = [c for c in cands if lo <= days_of(c) < hi]
        if ok:
            return min(ok, key=lambda c: (abs(days_of(c) - days_of(mid)), c))
    return date_of(lo)


def compare_numeric(values: np.ndarray, op: str, threshold: float) -> np.ndarray:
    """``values op threshold`` for a numeric operator; NaN never satisfies a test."""
    with np.errstate(invalid="ignore"):
        if op == "<=":
            return values <= threshold
        if op == ">":
            return values > threshold
        if op == "<":
            return values < threshold
        return values >= threshold


@dataclass(frozen=True)
class Condition:
    """One test on one attribute: ``attribute op value``.

    Numeric attributes use ``<=``, ``>``, ``<``, ``>=``; categorical ones ``=``, ``!=``,
    ``in``, ``not in`` (``value`` a frozenset for the set operators).
    """

    attribute: str
    op: Op
    value: Any

    def __post_init__(self) -> None:
        if self.op not in ALL_OPS:
            raise PPDMError(f"unknown operator {self.op!r} in a condition on {self.attribute!r}")
        if self.op in SET_OPS:
            vals = self.value if isinstance(self.value, (set, frozenset, list, tuple)) else [self.value]
            object.__setattr__(self, "value", frozenset(_py(v) for v in vals))
        else:
            object.__setattr__(self, "value", _py(self.value))
        if self.op in NUMERIC_OPS and not isinstance(self.value, (int, float)):
            date = as_date(self.value)
            if date is None:
                raise PPDMError(f"condition {self.attribute} {self.op} {self.value!r} needs a number or a date")
            object.__setattr__(self, "value", date)

    @property
    def number(self) -> float:
        """The value of a comparison as a number: a date on the time axis (days since
        1970-01-01), the column's working form (:func:`ppdm.data.types.working_frame`)."""
        if isinstance(self.value, pd.Timestamp):
            return days_of(self.value)
        return float(self.value)

    def mask(self, column: pd.Series | np.ndarray) -> np.ndarray:
        """Boolean mask of the values satisfying the condition (missing values never do)."""
        s = column if isinstance(column, pd.Series) else pd.Series(column)
        if self.op in NUMERIC_OPS:
            return compare_numeric(numeric_values(s), self.op, self.number)
        if self.op == "=":
            return s.eq(self.value).to_numpy(dtype=bool, na_value=False)
        if self.op == "!=":
            return (s.ne(self.value) & s.notna()).to_numpy(dtype=bool, na_value=False)
        inside = s.isin(list(self.value)).to_numpy(dtype=bool, na_value=False)
        if self.op == "in":
            return inside
        return ~inside & s.notna().to_numpy()

    def to_text(self) -> str:
        if self.op in SET_OPS:
            vals = ", ".join(_fmt_value(v) for v in sorted(self.value, key=_sort_key))
            return f"{_fmt_name(self.attribute)} {self.op} {{{vals}}}"
        return f"{_fmt_name(self.attribute)} {self.op} {_fmt_value(self.value)}"

    def __str__(self) -> str:
        return self.to_text()


@dataclass(frozen=True)
class Rule:
    """A logic rule ψ → c.

    Attributes
    ----------
    conditions:
        The antecedent ψ: all must hold for a record to be covered (σψ(x)).
    prediction:
        The consequent c, the class value the rule predicts.
    class_counts:
        Class value → number (or weight) of covered records in the data the rule was
        found in; ``None`` when the rule was written by hand.
    """

    conditions: tuple[Condition, ...]
    prediction: Hashable
    class_counts: dict[Hashable, float] | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "conditions", tuple(self.conditions))
        object.__setattr__(self, "prediction", _py(self.prediction))
        if self.class_counts is not None:
            object.__setattr__(self, "class_counts", {_py(k): _py(v) for k, v in self.class_counts.items()})

    @property
    def support(self) -> float | None:
        """|σψ(x)| in the data the rule was found in, if known."""
        return None if self.class_counts is None else float(sum(self.class_counts.values()))

    @property
    def attributes(self) -> list[str]:
        return list(dict.fromkeys(c.attribute for c in self.conditions))

    def mask(self, df: pd.DataFrame) -> np.ndarray:
        """Records of ``df`` covered by the antecedent."""
        m = np.ones(len(df), dtype=bool)
        for c in self.conditions:
            if c.attribute not in df.columns:
                raise PPDMError(f"rule tests attribute {c.attribute!r}, which the table does not have")
            m &= c.mask(df[c.attribute])
        return m

    def to_text(self, *, counts: bool = True) -> str:
        ante = " AND ".join(c.to_text() for c in self.conditions) or "TRUE"
        line = f"{ante} -> {_fmt_value(self.prediction)}"
        if counts and self.class_counts is not None:
            items = ", ".join(f"{_fmt_value(k)}: {_fmt_value(v)}" for k, v in self.class_counts.items())
            line += f" [counts {items}]"
        return line

    def __str__(self) -> str:
        return self.to_text()


class RuleSet(Sequence[Rule]):
    """Ψx: an ordered collection of rules over one table's attributes.

    ``class_column`` names the attribute the rules predict.
    """

    def __init__(self, rules: Iterable[Rule], class_column: str | None = None) -> None:
        self.rules: list[Rule] = list(rules)
        self.class_column = class_column

    def __len__(self) -> int:
        return len(self.rules)

    @overload
    def __getitem__(self, i: int) -> Rule: ...

    @overload
    def __getitem__(self, i: slice) -> RuleSet: ...

    def __getitem__(self, i: int | slice) -> Rule | RuleSet:
        if isinstance(i, slice):
            return RuleSet(self.rules[i], self.class_column)
        return self.rules[i]

    def __iter__(self) -> Iterator[Rule]:
        return iter(self.rules)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RuleSet) and self.rules == other.rules and self.class_column == other.class_column

    def __repr__(self) -> str:
        return f"RuleSet({len(self.rules)} rules, class_column={self.class_column!r})"

    def coverage(self, df: pd.DataFrame) -> np.ndarray:
        """Boolean matrix (n_rules × n_records): one coverage mask per rule (σψ of each ψ)."""
        out = np.empty((len(self.rules), len(df)), dtype=bool)
        for i, m in self.iter_masks(df):
            out[i] = m
        return out

    def iter_masks(self, df: pd.DataFrame) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(i, mask)`` for every rule in order, one boolean coverage mask at a time.

        Cheaper than :meth:`coverage` in memory (no n_rules × n matrix): each column is
        converted once (numbers to float, categorical columns factorized to integer codes),
        a condition shared by several rules is evaluated once and kept only until its last
        use, and the yielded mask is a fresh array the caller may modify.
        """
        view = _TableView(df)
        uses: dict[Condition, int] = {}
        for rule in self.rules:
            for c in dict.fromkeys(rule.conditions):
                uses[c] = uses.get(c, 0) + 1
        cache: dict[Condition, np.ndarray] = {}
        n = len(df)
        for i, rule in enumerate(self.rules):
            m: np.ndarray | None = None
            for c in dict.fromkeys(rule.conditions):
                cm = cache.get(c)
                if cm is None:
                    cm = view.mask(c, i)
                    if uses[c] > 1:
                        cache[c] = cm
                uses[c] -= 1
                if uses[c] == 0:
                    cache.pop(c, None)
                # a mask still held by the cache must not be modified in place
                shared = c in cache
                if m is None:
                    m = cm.copy() if shared else cm
                else:
                    m &= cm
            yield i, (np.ones(n, dtype=bool) if m is None else m)

    def to_text(self) -> str:
        head = f"# class: {_fmt_name(self.class_column)}\n" if self.class_column else ""
        return head + "".join(r.to_text() + "\n" for r in self.rules)

    def save(self, path: str | Path) -> None:
        from ppdm.data.io import atomic_write_text

        atomic_write_text(path, self.to_text())

    @classmethod
    def from_text(cls, text: str, class_column: str | None = None) -> RuleSet:
        rules = []
        for lineno, line in enumerate(text.split("\n"), 1):
            s = line.strip()
            if not s:
                continue
            if s.startswith("#"):
                m = re.match(r"#\s*class:\s*(.+)$", s)
                if m and class_column is None:
                    class_column = _Parser(m.group(1), lineno).name()
                continue
            rules.append(_Parser(s, lineno).rule())
        return cls(rules, class_column)

    @classmethod
    def load(cls, path: str | Path, class_column: str | None = None) -> RuleSet:
        p = Path(path)
        if not p.exists():
            raise PPDMError(f"rule file {str(p)!r} does not exist")
        return cls.from_text(p.read_text(), class_column)


class _TableView:
    """One table's columns prepared for evaluating many conditions quickly.

    Numeric tests compare a float array made once per column; other tests are
    evaluated on the column's distinct values only (``pd.factorize``) and mapped back
    through the integer codes, which gives :meth:`Condition.mask`'s answer for every
    record (missing values never satisfy a condition) at a fraction of the cost.
    """

    def __init__(self, df: pd.DataFrame) -> None:
        self.df = df
        self._num: dict[str, np.ndarray] = {}
        self._cat: dict[str, tuple[np.ndarray, pd.Series]] = {}

    def _column(self, c: Condition, rule_index: int) -> pd.Series:
        if c.attribute not in self.df.columns:
            raise PPDMError(f"rule {rule_index} tests attribute {c.attribute!r}, which the table does not have")
        return self.df[c.attribute]

    def mask(self, c: Condition, rule_index: int = 0) -> np.ndarray:
        if c.op in NUMERIC_OPS:
            a = self._num.get(c.attribute)
            if a is None:
                s = self._column(c, rule_index)
                try:
                    a = numeric_values(s)  # a date column on its time axis
                except (TypeError, ValueError):
                    raise PPDMError(
                        f"rule {rule_index} compares attribute {c.attribute!r} with a number ({c.to_text()}), "
                        "but the column is not numeric"
                    ) from None
                self._num[c.attribute] = a
            return compare_numeric(a, c.op, c.number)
        got = self._cat.get(c.attribute)
        if got is None:
            s = self._column(c, rule_index)
            codes, found = pd.factorize(s, use_na_sentinel=True)
            got = self._cat[c.attribute] = (codes, pd.Series(found))
        codes, uniques = got
        on_values = c.mask(uniques)
        hits = np.flatnonzero(on_values)
        if hits.size == 0:
            return np.zeros(len(codes), dtype=bool)
        if hits.size == 1:
            return codes == hits[0]
        # code -1 (missing) reads the appended False
        return np.append(on_values, False)[codes]


# ------------------------------------------------------------------ formatting
def _sort_key(v: Any) -> tuple[str, Any]:
    return (type(v).__name__, v)


_LINE_BREAKS = {ord(c): f"\\u{ord(c):04x}" for c in "\x85\u2028\u2029"}


def _fmt_name(name: str) -> str:
    if len(f"x{name}x".splitlines()) != 1:
        raise PPDMError(f"attribute name {name!r} contains a line break and cannot be written in a rule")
    if _NAME.match(name) and name not in _KEYWORDS:
        return name
    return "`" + name.replace("`", "``") + "`"


def _fmt_value(v: Any) -> str:
    v = _py(v)
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, pd.Timestamp):
        # a date alone is one word; a time of day holds ':' and is quoted
        if v.tzinfo is None and v == v.normalize():
            return v.strftime("%Y-%m-%d")
        text = v.isoformat(sep=" ")
        return json.dumps(text)
    if isinstance(v, str):
        if _WORD.match(v) and v not in _KEYWORDS and _number(v) is None:
            return v
        # characters Python treats as line breaks are escaped so a rule stays on one line
        return json.dumps(v, ensure_ascii=False).translate(_LINE_BREAKS)
    raise PPDMError(f"cannot write value {v!r} of type {type(v).__name__} in a rule")


def _number(tok: str) -> int | float | None:
    try:
        return int(tok)
    except ValueError:
        pass
    try:
        return float(tok)
    except ValueError:
        return None


_TOKEN = re.compile(
    r'\s*(?:(?P<str>"(?:[^"\\]|\\.)*")|(?P<name>`(?:[^`]|``)*`)|(?P<op><=|>=|!=|->|<|>|=)'
    r"|(?P<punct>[{}\[\],:])|(?P<word>[^\s{}\[\],:<>=!\"`]+))"
)


class _Parser:
    def __init__(self, text: str, lineno: int) -> None:
        self.text, self.lineno = text, lineno
        self.toks: list[tuple[str, str]] = []
        pos = 0
        while pos < len(text):
            if text[pos:].strip() == "":
                break
            m = _TOKEN.match(text, pos)
            if not m or m.end() == pos:
                self.fail(f"cannot read {text[pos:pos + 20]!r}")
            kind = m.lastgroup or ""
            self.toks.append((kind, m.group(kind)))
            pos = m.end()
        self.i = 0

    def fail(self, msg: str) -> NoReturn:
        raise PPDMError(f"rule line {self.lineno}: {msg} in {self.text!r}")

    def peek(self) -> tuple[str, str] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def peek_text(self) -> str | None:
        t = self.peek()
        return None if t is None else t[1]

    def take(self) -> tuple[str, str]:
        t = self.peek()
        if t is None:
            self.fail("unexpected end of line")
        self.i += 1
        return t

    def expect(self, val: str) -> None:
        t = self.take()
        if t[1] != val:
            self.fail(f"expected {val!r}, found {t[1]!r}")

    def name(self) -> str:
        kind, tok = self.take()
        if kind == "name":
            return tok[1:-1].replace("``", "`")
        if kind == "word":
            return tok
        self.fail(f"expected an attribute name, found {tok!r}")
        return ""

    def value(self) -> Any:
        kind, tok = self.take()
        if kind == "str":
            return json.loads(tok)
        if kind == "word":
            if tok in ("True", "False"):
                return tok == "True"
            if tok in ("nan", "inf", "-inf"):
                return float(tok)
            n = _number(tok)
            return tok if n is None else n
        self.fail(f"expected a value, found {tok!r}")
        return None

    def condition(self) -> Condition:
        attr = self.name()
        kind, tok = self.take()
        if kind == "op" and tok in ("<=", ">=", "<", ">", "=", "!="):
            return Condition(attr, tok, self.value())  # type: ignore[arg-type]  # tok is one of the Ops just tested
        if kind == "word" and tok in ("in", "not"):
            op: Op = "in"
            if tok == "not":
                self.expect("in")
                op = "not in"
            self.expect("{")
            vals = []
            while self.peek_text() not in (None, "}"):
                vals.append(self.value())
                if self.peek_text() == ",":
                    self.take()
            self.expect("}")
            return Condition(attr, op, frozenset(vals))
        self.fail(f"expected an operator after {attr!r}, found {tok!r}")
        raise AssertionError

    def rule(self) -> Rule:
        conds: list[Condition] = []
        if self.peek() == ("word", "TRUE"):
            self.take()
        else:
            conds.append(self.condition())
            while self.peek() == ("word", "AND"):
                self.take()
                conds.append(self.condition())
        self.expect("->")
        pred = self.value()
        counts = None
        if self.peek_text() == "[":
            self.take()
            self.expect("counts")
            counts = {}
            while self.peek_text() not in (None, "]"):
                k = self.value()
                self.expect(":")
                counts[k] = self.value()
                if self.peek_text() == ",":
                    self.take()
            self.expect("]")
        if self.peek() is not None:
            self.fail(f"unexpected {self.peek_text()!r} after the rule")
        return Rule(tuple(conds), pred, counts)
