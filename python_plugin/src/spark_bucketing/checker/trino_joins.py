"""Joins Trino plans without their equality: every key pair of an inner join
fixed to one value by a filter, or a LEFT JOIN's right key fixed in its ON.
Trino puts the value in both sides' filters, drops the equality, and joins
as a cross join (or a join on the left side's filter alone) with the right
side copied to every task: an exchange no bucketing removes (Trino 476's
plans, tests/test_trino.py)."""

from __future__ import annotations

from sqlglot import exp

from spark_bucketing.checker.blocks import conjuncts
from spark_bucketing.checker.join_keys import key_of
from spark_bucketing.checker.literals import literal_value
from spark_bucketing.checker.model import ColId


def _literal(e: exp.Expression) -> bool:
    """A literal other than NULL (a comparison with NULL fixes nothing)."""
    return literal_value(e) not in (None, "NULL")


def fixed_columns(conditions: list[exp.Expression]) -> set[ColId]:
    """The (alias, column)s the conditions fix to one literal: `col = literal` (either way) or `col IN (one)`."""
    fixed = set()
    for c in conditions:
        if isinstance(c, exp.EQ):
            for col, value in ((c.left, c.right), (c.right, c.left)):
                if isinstance(col, exp.Column) and col.table and _literal(value):
                    fixed.add(key_of(col))
        elif isinstance(c, exp.In) and isinstance(c.this, exp.Column) and c.this.table and not c.args.get("query"):
            if len(c.expressions) == 1 and _literal(c.expressions[0]):
                fixed.add(key_of(c.this))
    return fixed


def replicated_without_keys(kind: str, pairs: list[tuple], on: exp.Expression | None, where) -> bool:
    """Whether Trino joins these `pairs` ((left key, right key)) as a replicated join without them."""
    on_conditions = conjuncts(on)
    if kind == "inner":
        fixed = fixed_columns(on_conditions + conjuncts(where.this if where is not None else None))
        return all(lk in fixed or rk in fixed for lk, rk in pairs)
    if kind == "left":
        fixed = fixed_columns(on_conditions)
        return all(rk in fixed for _, rk in pairs)
    return False
