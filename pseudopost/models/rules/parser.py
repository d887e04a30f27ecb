"""The tokenizer and recursive-descent parser: rule and condition text to the AST, never
through ``eval``; anything outside the grammar is a :class:`RuleSyntaxError`."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from pseudopost.models.rules.nodes import (
    _BOOLS,
    _IDENT,
    _KEYWORDS,
    _OPS,
    MISSING,
    And,
    Column,
    Compare,
    Expr,
    IsMissing,
    Literal,
    Member,
    Not,
    Or,
    _literal_text,
    _name_text,
)

_NUMBER = re.compile(r"-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_FLIP = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_MAX_DEPTH = 100  # nested 'not' and '(' levels; keeps recursion far from Python's limit


class RuleSyntaxError(ValueError):
    """A rule or condition that is not in the grammar; names the text and the position."""

    def __init__(self, text: str, pos: int, message: str):
        self.text, self.pos = text, pos
        caret = " " * pos + "^"
        super().__init__(
            f"Cannot parse rule {text!r}: {message} at position {pos}.\n    {text}\n    {caret}"
        )


@dataclass(frozen=True)
class _Token:
    kind: str  # NAME, KEYWORD, STRING, NUMBER, BOOL, OP, PUNCT, END
    value: object
    pos: int


def _tokenize(text: str) -> list[_Token]:
    """The tokens of ``text``; a lexical error becomes a final ERROR token, raised by the
    parser only when it gets there, so the leftmost offending token is the one reported."""
    if not isinstance(text, str):
        raise TypeError(f"A rule or condition must be a string. Got {type(text).__name__}.")
    tokens: list[_Token] = []
    try:
        _lex(text, tokens)
    except RuleSyntaxError as err:
        tokens.append(_Token("ERROR", err, err.pos))
    return tokens


def _lex(text: str, tokens: list[_Token]) -> None:
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch in "()[],":
            tokens.append(_Token("PUNCT", ch, i))
            i += 1
        elif text.startswith(_OPS[:4], i):
            tokens.append(_Token("OP", text[i : i + 2], i))
            i += 2
        elif ch in "<>":
            tokens.append(_Token("OP", ch, i))
            i += 1
        elif ch == "=":
            raise RuleSyntaxError(text, i, "'=' is not an operator (use '==' to compare)")
        elif ch in "'\"":
            i = _read_string(text, i, tokens)
        elif ch == "`":
            end = text.find("`", i + 1)
            if end < 0:
                raise RuleSyntaxError(text, i, "unterminated `quoted` column name")
            if end == i + 1:
                raise RuleSyntaxError(text, i, "empty `` column name")
            tokens.append(_Token("NAME", text[i + 1 : end], i))
            i = end + 1
        elif ch.isdigit() or (ch in "-." and i + 1 < n and (text[i + 1].isdigit())):
            m = _NUMBER.match(text, i)
            if m is None:
                raise RuleSyntaxError(text, i, f"unexpected character {ch!r}")
            end = m.end()
            if end < n and (text[end].isalnum() or text[end] in "_."):
                raise RuleSyntaxError(text, end, f"malformed number {text[i : end + 1]!r}")
            s = m.group()
            value = int(s) if re.fullmatch(r"-?\d+", s) else float(s)
            if isinstance(value, float) and not math.isfinite(value):
                raise RuleSyntaxError(text, i, f"number {s!r} is not finite")
            tokens.append(_Token("NUMBER", value, i))
            i = end
        elif (m := _IDENT.match(text, i)) is not None:
            word = m.group()
            if word in _BOOLS:
                tokens.append(_Token("BOOL", _BOOLS[word], i))
            elif word in _KEYWORDS:
                tokens.append(_Token("KEYWORD", word, i))
            else:
                tokens.append(_Token("NAME", word, i))
            i = m.end()
        else:
            what = {
                ".": "attribute access is not allowed",
                "+": "arithmetic is not allowed",
                "-": "arithmetic is not allowed",
                "*": "arithmetic is not allowed",
                "/": "arithmetic is not allowed",
                "%": "arithmetic is not allowed",
                "!": "'!' is not an operator (use 'not' or '!=')",
                "&": "use 'and'",
                "|": "use 'or'",
                "~": "use 'not'",
            }.get(ch, "not part of the rule language")
            raise RuleSyntaxError(text, i, f"unexpected character {ch!r} ({what})")
    tokens.append(_Token("END", None, n))


def _read_string(text: str, i: int, tokens: list[_Token]) -> int:
    quote, j, out = text[i], i + 1, []
    while j < len(text):
        c = text[j]
        if c == "\\" and j + 1 < len(text):
            out.append(text[j + 1])
            j += 2
        elif c == quote:
            tokens.append(_Token("STRING", "".join(out), i))
            return j + 1
        else:
            out.append(c)
            j += 1
    raise RuleSyntaxError(text, i, "unterminated string")


def _describe(tok: _Token) -> str:
    if tok.kind == "END":
        return "end of text"
    if tok.kind == "STRING":
        return f"string {_literal_text(tok.value)}"
    if tok.kind == "NAME":
        return f"column {_name_text(tok.value)}"
    return repr(tok.value) if tok.kind != "BOOL" else _literal_text(tok.value)


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.tokens = _tokenize(text)
        self.i = 0
        self.depth = 0

    @property
    def tok(self) -> _Token:
        t = self.tokens[self.i]
        if t.kind == "ERROR":
            raise t.value
        return t

    def peek(self, k: int = 1) -> _Token:
        return self.tokens[min(self.i + k, len(self.tokens) - 1)]

    def advance(self) -> _Token:
        t = self.tok
        self.i += 1
        return t

    def error(self, message: str, tok: _Token | None = None) -> RuleSyntaxError:
        tok = self.tok if tok is None else tok
        return RuleSyntaxError(self.text, tok.pos, message)

    def is_(self, kind: str, value: object = None) -> bool:
        t = self.tok
        return t.kind == kind and (value is None or t.value == value)

    def expect_keyword(self, word: str, context: str) -> None:
        if not self.is_("KEYWORD", word):
            raise self.error(f"expected '{word}' {context}, found {_describe(self.tok)}")
        self.advance()

    # rule := column ("is" "missing" | "==" literal) "when" condition
    def rule(self) -> tuple[str, object, Expr]:
        if self.tok.kind != "NAME":
            raise self.error(f"a rule starts with the column it fixes, found {_describe(self.tok)}")
        target = self.advance().value
        if self.is_("PUNCT", "("):
            raise self.error("function calls are not allowed")
        if self.is_("KEYWORD", "is"):
            self.advance()
            if self.is_("KEYWORD", "not"):
                raise self.error(
                    "a rule fixes a value ('== literal') or missingness ('is missing'); "
                    "'is not missing' fixes neither"
                )
            self.expect_keyword("missing", "after 'is'")
            fixed = MISSING
        elif self.is_("OP", "=="):
            self.advance()
            fixed = self.literal("after '=='")
        else:
            raise self.error(
                f"expected '== literal' or 'is missing' after the column {_name_text(target)}, "
                f"found {_describe(self.tok)}"
            )
        self.expect_keyword("when", "after the fixed value")
        cond = self.condition()
        self.end()
        return target, fixed, cond

    def end(self) -> None:
        if self.tok.kind == "OP":
            raise self.error(f"chained comparisons are not allowed ({self.tok.value!r})")
        if self.tok.kind == "PUNCT" and self.tok.value == ")":
            raise self.error("unbalanced parentheses: ')' without '('")
        if self.tok.kind != "END":
            raise self.error(f"unexpected {_describe(self.tok)}")

    def condition(self) -> Expr:
        parts = [self.conjunction()]
        while self.is_("KEYWORD", "or"):
            self.advance()
            parts.append(self.conjunction())
        return parts[0] if len(parts) == 1 else Or(tuple(parts))

    def conjunction(self) -> Expr:
        parts = [self.negation()]
        while self.is_("KEYWORD", "and"):
            self.advance()
            parts.append(self.negation())
        return parts[0] if len(parts) == 1 else And(tuple(parts))

    def nest(self) -> None:
        """Count one more level of 'not' or '(' (deep nesting is refused, not a crash)."""
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise self.error(f"nesting deeper than {_MAX_DEPTH} levels")

    def negation(self) -> Expr:
        if self.is_("KEYWORD", "not"):
            self.nest()
            self.advance()
            inner = Not(self.negation())
            self.depth -= 1
            return inner
        return self.atom()

    def atom(self) -> Expr:
        t = self.tok
        if t.kind == "PUNCT" and t.value == "(":
            self.nest()
            self.advance()
            inner = self.condition()
            if not self.is_("PUNCT", ")"):
                if self.tok.kind == "END":
                    raise self.error("unbalanced parentheses: '(' is never closed", t)
                if self.tok.kind == "OP":
                    raise self.error(f"chained comparisons are not allowed ({self.tok.value!r})")
                raise self.error(f"expected ')', found {_describe(self.tok)}")
            self.advance()
            self.depth -= 1
            return inner
        if t.kind == "NAME":
            return self.column_test()
        if t.kind in ("STRING", "NUMBER", "BOOL"):
            lit = self.advance().value
            if self.tok.kind != "OP":
                raise self.error(
                    f"expected a comparison after the literal {_literal_text(lit)}, found "
                    f"{_describe(self.tok)}"
                )
            op = self.advance().value
            if self.tok.kind != "NAME":
                raise self.error(
                    f"a comparison needs a column on one side, found {_describe(self.tok)}"
                )
            col = self.advance().value
            if self.is_("PUNCT", "("):
                raise self.error("function calls are not allowed")
            return Compare(col, _FLIP[op], Literal(lit))
        if t.kind == "KEYWORD" and t.value == "missing":
            raise self.error("'missing' is tested with 'column is missing'")
        if t.kind == "PUNCT" and t.value == ")":
            raise self.error("unbalanced parentheses: ')' without '('")
        raise self.error(f"expected a column, 'not' or '(', found {_describe(t)}")

    def column_test(self) -> Expr:
        name = self.advance().value
        t = self.tok
        if t.kind == "PUNCT" and t.value == "(":
            raise self.error("function calls are not allowed")
        if t.kind == "OP":
            op = self.advance().value
            nxt = self.tok
            if nxt.kind == "NAME":
                self.advance()
                if self.is_("PUNCT", "("):
                    raise self.error("function calls are not allowed")
                return Compare(name, op, Column(nxt.value))
            if nxt.kind == "KEYWORD" and nxt.value == "missing":
                raise self.error("compare with missing by 'column is missing'")
            return Compare(name, op, Literal(self.literal(f"after {op!r}")))
        if t.kind == "KEYWORD" and t.value == "in":
            self.advance()
            return Member(name, self.literal_list(), False)
        if (
            t.kind == "KEYWORD"
            and t.value == "not"
            and self.peek().kind == "KEYWORD"
            and (self.peek().value == "in")
        ):
            self.advance()
            self.advance()
            return Member(name, self.literal_list(), True)
        if t.kind == "KEYWORD" and t.value == "is":
            self.advance()
            negated = False
            if self.is_("KEYWORD", "not"):
                self.advance()
                negated = True
            self.expect_keyword("missing", "after 'is'" + (" not" if negated else ""))
            return IsMissing(name, negated)
        raise self.error(
            f"expected a comparison (== != < <= > >=), 'in', 'not in' or 'is [not] missing' "
            f"after the column {_name_text(name)}, found {_describe(t)}"
        )

    def literal(self, context: str) -> object:
        t = self.tok
        if t.kind in ("STRING", "NUMBER", "BOOL"):
            self.advance()
            return t.value
        if t.kind == "NAME" and self.peek().kind == "PUNCT" and self.peek().value == "(":
            raise self.error("function calls are not allowed")
        raise self.error(
            f"expected a literal (string, number, true/false) {context}, found {_describe(t)}"
        )

    def literal_list(self) -> tuple:
        t = self.tok
        if not (t.kind == "PUNCT" and t.value in "(["):
            raise self.error(f"expected a list '(...)' or '[...]' after 'in', found {_describe(t)}")
        close = ")" if t.value == "(" else "]"
        self.advance()
        values = []
        while True:
            if self.is_("PUNCT", close) and values:
                break
            values.append(self.literal("in the list"))
            if self.is_("PUNCT", ","):
                self.advance()
                continue
            if not self.is_("PUNCT", close):
                if self.tok.kind == "END":
                    raise self.error(f"unbalanced brackets: {t.value!r} is never closed", t)
                raise self.error(
                    f"expected ',' or {close!r} in the list, found {_describe(self.tok)}"
                )
        self.advance()
        return tuple(values)


def parse_condition(text: str) -> Expr:
    """The AST of a condition (the part of a rule after ``when``)."""
    p = _Parser(text)
    expr = p.condition()
    p.end()
    return expr
