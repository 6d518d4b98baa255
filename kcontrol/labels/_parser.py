"""The label selector string syntax, parsed as apimachinery's ``labels.Parse`` does.

Grammar::

    <selector>     ::= "" | <requirement> | <requirement> "," <selector>
    <requirement>  ::= ["!"] KEY [ <set-based> | <exact-match> ]
    <set-based>    ::= ("in" | "notin") "(" <values> ")"
    <values>       ::= VALUE | VALUE "," <values>
    <exact-match>  ::= ("=" | "==" | "!=" | ">" | "<") VALUE

A bare ``KEY`` means *exists*, ``!KEY`` *does not exist*. Whitespace (space, tab, CR, LF)
separates tokens and is otherwise ignored. The empty string is a valid VALUE: ``a=``,
``a in ()``, ``a in (x,,y)``. ``in`` and ``notin`` are keywords only where an operator is
expected, so ``in in (in)`` is a valid selector.
"""

from __future__ import annotations

import enum
import functools

from kcontrol.labels._selector import Operator, Requirement, Selector, SelectorError, everything

__all__ = ["parse"]


class _Token(enum.Enum):
    END = "end of string"
    IDENTIFIER = "identifier"
    OPEN_PAREN = "("
    CLOSE_PAREN = ")"
    COMMA = ","
    NOT = "!"
    EQUALS = "="
    DOUBLE_EQUALS = "=="
    NOT_EQUALS = "!="
    GREATER_THAN = ">"
    LESS_THAN = "<"
    IN = "in"
    NOT_IN = "notin"


_SYMBOLS = {
    t.value: t
    for t in (
        _Token.OPEN_PAREN,
        _Token.CLOSE_PAREN,
        _Token.COMMA,
        _Token.NOT,
        _Token.EQUALS,
        _Token.DOUBLE_EQUALS,
        _Token.NOT_EQUALS,
        _Token.GREATER_THAN,
        _Token.LESS_THAN,
    )
}
_KEYWORDS = {"in": _Token.IN, "notin": _Token.NOT_IN}
_SPECIAL = frozenset("=!(),><")
_WHITESPACE = frozenset(" \t\r\n")

_BINARY = {
    _Token.IN: Operator.IN,
    _Token.NOT_IN: Operator.NOT_IN,
    _Token.EQUALS: Operator.EQUALS,
    _Token.DOUBLE_EQUALS: Operator.DOUBLE_EQUALS,
    _Token.NOT_EQUALS: Operator.NOT_EQUALS,
    _Token.GREATER_THAN: Operator.GREATER_THAN,
    _Token.LESS_THAN: Operator.LESS_THAN,
}
_BINARY_NAMES = "in, notin, =, ==, !=, gt, lt"

_Item = tuple[_Token, str]


def _lex(text: str) -> list[_Item]:
    """Split ``text`` into tokens, ending with ``END``. Symbols are matched greedily
    (``!=`` before ``!``); anything else up to whitespace or a symbol is a word."""
    items: list[_Item] = []
    pos, size = 0, len(text)
    while True:
        while pos < size and text[pos] in _WHITESPACE:
            pos += 1
        if pos == size:
            items.append((_Token.END, ""))
            return items
        if text[pos] in _SPECIAL:
            two = text[pos : pos + 2]
            literal = two if two in _SYMBOLS else text[pos]
            items.append((_SYMBOLS[literal], literal))
            pos += len(literal)
            continue
        start = pos
        while pos < size and text[pos] not in _SPECIAL and text[pos] not in _WHITESPACE:
            pos += 1
        word = text[start:pos]
        items.append((_KEYWORDS.get(word, _Token.IDENTIFIER), word))


class _Parser:
    """Recursive descent over the token list. Outside operator position the keywords ``in``
    and ``notin`` read as identifiers (upstream's ``Values`` context)."""

    def __init__(self, text: str) -> None:
        self._items = _lex(text)
        self._pos = 0

    def _peek(self, *, operator: bool = False) -> _Item:
        tok, lit = self._items[self._pos]
        if not operator and tok in (_Token.IN, _Token.NOT_IN):
            tok = _Token.IDENTIFIER
        return tok, lit

    def _next(self, *, operator: bool = False) -> _Item:
        item = self._peek(operator=operator)
        self._pos += 1
        return item

    def parse(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        while True:
            tok, lit = self._peek()
            if tok is _Token.END:
                return requirements
            if tok not in (_Token.IDENTIFIER, _Token.NOT):
                raise SelectorError(f"found {lit!r}, expected: !, identifier, or end of string")
            try:
                requirements.append(self._requirement())
            except SelectorError as err:
                raise SelectorError(f"unable to parse requirement: {err}") from None
            tok, lit = self._next()
            if tok is _Token.END:
                return requirements
            if tok is not _Token.COMMA:
                raise SelectorError(f"found {lit!r}, expected: ',' or end of string")
            tok, lit = self._peek()
            if tok not in (_Token.IDENTIFIER, _Token.NOT):
                raise SelectorError(f"found {lit!r}, expected: identifier after ','")

    def _requirement(self) -> Requirement:
        negated = False
        tok, key = self._next()
        if tok is _Token.NOT:
            negated = True
            tok, key = self._next()
        if tok is not _Token.IDENTIFIER:
            raise SelectorError(f"found {key!r}, expected: identifier")
        following, _ = self._peek()
        if negated or following in (_Token.END, _Token.COMMA):
            # '!key' followed by anything but ',' or the end fails in parse(), as upstream.
            op = Operator.DOES_NOT_EXIST if negated else Operator.EXISTS
            return Requirement(key, op)
        tok, lit = self._next(operator=True)
        operator = _BINARY.get(tok)
        if operator is None:
            raise SelectorError(f"found {lit!r}, expected: {_BINARY_NAMES}")
        if operator in (Operator.IN, Operator.NOT_IN):
            values = self._value_set()
        else:
            values = {self._exact_value()}
        return Requirement(key, operator, tuple(values))

    def _exact_value(self) -> str:
        tok, _ = self._peek()
        if tok in (_Token.END, _Token.COMMA):
            return ""
        tok, lit = self._next()
        if tok is not _Token.IDENTIFIER:
            raise SelectorError(f"found {lit!r}, expected: identifier")
        return lit

    def _value_set(self) -> set[str]:
        tok, lit = self._next()
        if tok is not _Token.OPEN_PAREN:
            raise SelectorError(f"found {lit!r}, expected: '('")
        tok, lit = self._peek()
        if tok is _Token.CLOSE_PAREN:
            self._next()
            return {""}
        if tok not in (_Token.IDENTIFIER, _Token.COMMA):
            raise SelectorError(f"found {lit!r}, expected: ',', ')' or identifier")
        values = self._value_list()
        tok, lit = self._next()
        if tok is not _Token.CLOSE_PAREN:
            raise SelectorError(f"found {lit!r}, expected: ')'")
        return values

    def _value_list(self) -> set[str]:
        """Comma-separated, possibly empty values up to (not including) the ')'."""
        values: set[str] = set()
        while True:
            tok, lit = self._next()
            if tok is _Token.IDENTIFIER:
                values.add(lit)
                following, lit2 = self._peek()
                if following is _Token.CLOSE_PAREN:
                    return values
                if following is not _Token.COMMA:
                    raise SelectorError(f"found {lit2!r}, expected: ',' or ')'")
            elif tok is _Token.COMMA:
                if not values:
                    values.add("")  # "(,"
                following, _ = self._peek()
                if following is _Token.CLOSE_PAREN:
                    values.add("")  # ",)"
                    return values
                if following is _Token.COMMA:
                    self._next()
                    values.add("")  # ",,"
            else:
                raise SelectorError(f"found {lit!r}, expected: ',' or identifier")


def parse(text: str) -> Selector:
    """Parse the string form of a label selector (``labels.Parse``).

    ``""`` (or only whitespace) gives :func:`~kcontrol.labels.everything`. Raises
    :class:`~kcontrol.labels.SelectorError` (a :class:`ValueError`) for malformed input or an
    invalid key or value. Results are cached; selectors are immutable, so sharing is safe.
    """
    if not isinstance(text, str):
        raise SelectorError(f"a label selector must be a string, not {type(text).__name__}")
    return _parse_cached(text)


@functools.lru_cache(maxsize=512)
def _parse_cached(text: str) -> Selector:
    requirements = _Parser(text).parse()
    return Selector(requirements) if requirements else everything()
