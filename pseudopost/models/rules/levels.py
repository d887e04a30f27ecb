"""The levels that declared rules and structural zeros name: public facts of the file."""

from __future__ import annotations

from pseudopost.models.rules.nodes import MISSING, And, Compare, Literal, Member, Not, Or
from pseudopost.models.rules.rule import Rule
from pseudopost.models.rules.zeros import StructuralZero

__all__ = ["named_levels"]


def named_levels(rules=(), structural_zeros=()) -> dict[str, set]:
    """Column -> the literal values that declared rules and structural zeros name for it (in
    comparisons and memberships, and a rule's fixed value): public levels, since the
    declarations are public. Rules and zeros may be given as texts, tables or parsed objects."""
    out: dict[str, set] = {}

    def walk(node) -> None:
        if isinstance(node, Compare) and isinstance(node.other, Literal):
            out.setdefault(node.column, set()).add(node.other.value)
        elif isinstance(node, Member):
            out.setdefault(node.column, set()).update(node.values)
        elif isinstance(node, Not):
            walk(node.operand)
        elif isinstance(node, (And, Or)):
            for o in node.operands:
                walk(o)

    for r in rules or ():
        rule = Rule.from_spec(r)
        walk(rule.condition)
        if rule.value is not MISSING:
            out.setdefault(rule.column, set()).add(rule.value)
    for z in structural_zeros or ():
        walk(StructuralZero.parse(z).condition)
    return out
