"""Declared edit rules: what a data owner knows no record may hold, in a small text syntax.

Statistical offices check microdata against *edit rules* ("a male has no delivery code", "a
person under 18 is not on Medicare") before release (the Fellegi–Holt tradition of data
editing: Fellegi & Holt 1976, "A systematic approach to automatic edit and imputation", JASA
71(353), §2, where an edit is a combination of values declared impossible). A schema file
lists them under ``edit_rules``; :func:`ppdm.metrics.plausibility.edit_rule_violations` counts
the records of x and of z that break them.

Syntax (docs/measures.md, "Plausibility")::

    rule        := [condition "->"] condition
    condition   := comparison ("and" comparison)*
    comparison  := column op literal | column ["not"] "in" "[" literal ("," literal)* "]"
    op          := "==" | "!=" | "<" | "<=" | ">" | ">="
    column      := a name of letters, digits, "_" and "." not starting with a digit,
                   or any name between backquotes: `marital status`
    literal     := a number (18, -2.5, 1e3) or a text in double or single quotes

A record *violates* ``A -> B`` when every comparison of A holds and some comparison of B does
not; a rule without ``->`` is violated when some comparison of its one condition does not
hold. ``<``, ``<=``, ``>``, ``>=`` compare numbers and take a number. A record with a missing
value in a column the rule names is not counted as violating it (nothing is known of it).

The text is parsed here by a tokenizer and a recursive reading of the grammar; nothing is ever
evaluated as Python (no ``eval``), so a rule cannot run code.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ppdm.errors import ParameterError
from ppdm.utils import unknown_name

#: the comparison operators of the syntax
OPERATORS = ("==", "!=", "<=", ">=", "<", ">", "in", "not in")
#: operators that order numbers (their literal must be a number)
ORDER_OPERATORS = ("<", "<=", ">", ">=")

Literal = str | float

_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<arrow>->)
  | (?P<op>==|!=|<=|>=|<|>)
  | (?P<number>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?![A-Za-z_.]))
  | (?P<text>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
  | (?P<quoted>`[^`]+`)
  | (?P<name>[A-Za-z_][A-Za-z0-9_.]*)
  | (?P<punct>[\[\],])
""", re.VERBOSE)

_KEYWORDS = {"and", "in", "not"}


@dataclass(frozen=True)
class Comparison:
    """``column op value``; ``value`` is a number, a text, or for ``in``/``not in`` a tuple of them."""

    column: str
    op: str
    value: Literal | tuple[Literal, ...]

    def __str__(self) -> str:
        def lit(v: Literal) -> str:
            return f"{v:g}" if isinstance(v, float) else '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'

        col = self.column if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", self.column) and \
            self.column not in _KEYWORDS else f"`{self.column}`"
        val = "[" + ", ".join(lit(v) for v in self.value) + "]" if isinstance(self.value, tuple) else lit(self.value)
        return f"{col} {self.op} {val}"


@dataclass(frozen=True)
class EditRule:
    """One edit rule: records for which every comparison of ``given`` holds must satisfy every
    comparison of ``then`` (``given`` empty: every record must). ``text`` is the rule as written."""

    text: str
    given: tuple[Comparison, ...]
    then: tuple[Comparison, ...]

    @property
    def columns(self) -> list[str]:
        """The columns the rule names, in order of first mention."""
        return list(dict.fromkeys(c.column for c in (*self.given, *self.then)))


def _tokens(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            raise ParameterError(f"edit rule {text!r}: cannot read {text[pos:pos + 12]!r} (at character {pos + 1})")
        kind = m.lastgroup or ""
        if kind != "space":
            out.append((kind, m.group()))
        pos = m.end()
    return out


def _unquote(tok: str) -> str:
    return re.sub(r"\\(.)", r"\1", tok[1:-1])


class _Reader:
    """Reads the grammar of the module docstring from a token list, left to right."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokens(text)
        self.i = 0

    def fail(self, what: str) -> ParameterError:
        got = self.toks[self.i][1] if self.i < len(self.toks) else "the end of the rule"
        return ParameterError(f"edit rule {self.text!r}: expected {what}, found {got!r}")

    def peek(self) -> tuple[str, str] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self) -> tuple[str, str]:
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def word(self, w: str) -> bool:
        t = self.peek()
        return t is not None and t[0] == "name" and t[1] == w

    def literal(self) -> Literal:
        t = self.peek()
        if t is None or t[0] not in ("number", "text"):
            raise self.fail("a number or a quoted text")
        self.take()
        return float(t[1]) if t[0] == "number" else _unquote(t[1])

    def comparison(self) -> Comparison:
        t = self.peek()
        if t is None or t[0] not in ("name", "quoted") or (t[0] == "name" and t[1] in _KEYWORDS):
            raise self.fail("a column name")
        self.take()
        column = _unquote(t[1]) if t[0] == "quoted" else t[1]
        if self.word("not") or self.word("in"):
            op = "in"
            if self.word("not"):
                self.take()
                if not self.word("in"):
                    raise self.fail("'in' after 'not'")
                op = "not in"
            self.take()
            if self.peek() != ("punct", "["):
                raise self.fail(f"'[' after {op!r}")
            self.take()
            values = [self.literal()]
            while self.peek() == ("punct", ","):
                self.take()
                values.append(self.literal())
            if self.peek() != ("punct", "]"):
                raise self.fail("',' or ']'")
            self.take()
            return Comparison(column, op, tuple(values))
        t = self.peek()
        if t is None or t[0] != "op":
            raise self.fail(f"an operator ({', '.join(OPERATORS)}) after {column!r}")
        op = self.take()[1]
        value = self.literal()
        if op in ORDER_OPERATORS and not isinstance(value, float):
            raise ParameterError(f"edit rule {self.text!r}: {column} {op} compares numbers, but {value!r} is a text")
        return Comparison(column, op, value)

    def condition(self) -> tuple[Comparison, ...]:
        out = [self.comparison()]
        while self.word("and"):
            self.take()
            out.append(self.comparison())
        return tuple(out)

    def rule(self) -> EditRule:
        if not self.toks:
            raise ParameterError("an edit rule is empty")
        first = self.condition()
        if self.peek() is not None and self.peek()[0] == "arrow":  # type: ignore[index]
            self.take()
            then = self.condition()
            given = first
        else:
            given, then = (), first
        if self.peek() is not None:
            raise self.fail("'and', '->' or the end of the rule" if not given else "'and' or the end of the rule")
        return EditRule(self.text, given, then)


def parse_edit_rule(text: str | EditRule) -> EditRule:
    """An :class:`EditRule` from its text (an :class:`EditRule` is returned as it is).

    A malformed rule raises :class:`~ppdm.errors.ParameterError` naming the rule and what was
    expected where."""
    if isinstance(text, EditRule):
        return text
    if not isinstance(text, str):
        raise ParameterError(f"an edit rule must be a text such as 'sex == \"M\" -> pregnant == \"no\"', got {text!r}")
    return _Reader(text.strip()).rule()


def parse_edit_rules(texts: object, columns: list[str] | None = None) -> list[EditRule]:
    """Every rule of ``texts`` (a list of rule texts), parsed; with ``columns``, a rule naming
    any other column is refused (:class:`~ppdm.errors.ParameterError` naming rule and column)."""
    if isinstance(texts, (str, EditRule)):
        texts = [texts]
    if not isinstance(texts, (list, tuple)):
        raise ParameterError(f"edit_rules must be a list of rule texts, got {type(texts).__name__}")
    rules = [parse_edit_rule(t) for t in texts]
    if columns is not None:
        known = set(columns)
        for r in rules:
            for c in r.columns:
                if c not in known:
                    raise ParameterError(f"edit rule {r.text!r}: " + unknown_name("column", c, sorted(known)))
    return rules


__all__ = ["OPERATORS", "ORDER_OPERATORS", "Comparison", "EditRule", "parse_edit_rule", "parse_edit_rules"]
