"""Declared rules between columns and structural zeros, parsed as data.

A **rule** fixes one column's value, or its missingness, on the records a condition selects::

    wages is missing when employed == 'no'
    marital == 'single' when age < 16
    hours == 0 when status in ('retired', 'student') and not (age < 18)
    income == -8 when employed == 'no'          # a declared missing code

A **structural zero** is a declared impossible combination, e.g. ``marital == 'married' and
age < 16`` or the table ``{"marital": "married", "age_group": "0-15"}``.

Rules and zeros are public (guide: *Whole files*): records a rule fixes carry no information
about that column (its likelihood term is 0 for them, exact for a deterministic rule) and the
rule is imposed when synthesizing; a structural zero gets no mass in the model and is never
generated. Both may come from someone else's spec file, so their text is parsed as data by a
small hand-written tokenizer and recursive-descent parser into a frozen AST; nothing is ever
handed to ``eval``, ``DataFrame.query`` or ``pandas.eval``. The grammar (precedence as in
Python: ``not`` binds tighter than ``and``, ``and`` than ``or``)::

    rule       := column ( "is" "missing" | "==" literal ) "when" condition
    condition  := and ( "or" and )*
    and        := not ( "and" not )*
    not        := "not" not | atom
    atom       := "(" condition ")"
                | operand op operand             (at least one a column; no chains)
                | column ["not"] "in" list
                | column "is" ["not"] "missing"
    op         := "==" | "!=" | "<" | "<=" | ">" | ">="
    list       := "(" literal ("," literal)* [","] ")" | "[" ... "]"
    literal    := 'string' | "string" | integer | float | true | false
    column     := identifier (Unicode, as Python's) | `any name in backticks`

Anything else (function calls, attributes, arithmetic, ``=``, chained comparisons, unknown
words) is a :class:`RuleSyntaxError` naming the text and the position of the offending token.

Evaluation is vectorised and two-valued: a comparison or membership test with a missing cell
(``pseudopost.models.status.is_missing``: NaN, None, ``pd.NA``, ``""``) is False,
``is missing`` is True, and ``not`` negates what its operand gave, so
``not (age < 18)`` holds for a record whose age is missing while ``age >= 18`` does not.

Modules, one idea each: ``nodes`` (the AST and :data:`MISSING`), ``parser`` (the
tokenizer and parser, :class:`RuleSyntaxError`), ``schema`` (columns, types and levels
checked against a frame or a schema), ``evaluation`` (vectorised masks), ``rule``
(:class:`Rule` and :func:`impose`) and ``zeros`` (:class:`StructuralZero` and
:func:`allowed_levels`).
"""

from pseudopost.models.rules.levels import named_levels
from pseudopost.models.rules.nodes import (
    MISSING,
    And,
    Column,
    Compare,
    IsMissing,
    Literal,
    Member,
    Not,
    Or,
)
from pseudopost.models.rules.parser import RuleSyntaxError, parse_condition
from pseudopost.models.rules.rule import Rule, impose
from pseudopost.models.rules.zeros import StructuralZero, allowed_levels

__all__ = [
    "MISSING",
    "And",
    "Column",
    "Compare",
    "IsMissing",
    "Literal",
    "Member",
    "Not",
    "Or",
    "Rule",
    "RuleSyntaxError",
    "StructuralZero",
    "allowed_levels",
    "impose",
    "named_levels",
    "parse_condition",
]
