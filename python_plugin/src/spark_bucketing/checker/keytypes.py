"""How Spark coerces the two keys of a join pair to one type: which side
keeps its type (and so its bucketed partitioning)."""

from __future__ import annotations

from spark_bucketing.contracts import normalize_type as norm_type

NUMERIC_ORDER = ["tinyint", "smallint", "int", "bigint", "float", "double"]


def wider(left: str, right: str, ansi: bool = False) -> str | None:
    """Which side Spark keeps uncast when comparing two key types (None: both are cast)."""
    a, b = norm_type(left), norm_type(right)
    if a in NUMERIC_ORDER and b in NUMERIC_ORDER:
        return "left" if NUMERIC_ORDER.index(a) > NUMERIC_ORDER.index(b) else "right"
    if "string" in (a, b) and a != b:
        other, side = (b, "right") if a == "string" else (a, "left")
        if not ansi:
            return side  # the string is cast to the other side's type
        # ANSI: a string against an integral type compares as bigint, against a fractional one as double.
        if other in NUMERIC_ORDER:
            common = "bigint" if NUMERIC_ORDER.index(other) <= NUMERIC_ORDER.index("bigint") else "double"
            return side if other == common else None
        return side
    return None


def union_types(branches: list[dict[str, str | None]]) -> dict[str, str | None]:
    """A set operation's column types, by the first branch's names: per
    position, the branches' common type (Spark widens numbers to the widest;
    a string with anything else is a string); None where one is not known."""
    if not branches:
        return {}
    out: dict[str, str | None] = {}
    columns = [list(b.values()) for b in branches]
    for i, name in enumerate(branches[0]):
        types = [c[i] if i < len(c) else None for c in columns]
        norms = [norm_type(t) if t else None for t in types]
        if None in norms:
            out[name] = None
        elif len(set(norms)) == 1:
            out[name] = types[0]
        elif all(n in NUMERIC_ORDER for n in norms):
            out[name] = max(norms, key=NUMERIC_ORDER.index)
        else:
            out[name] = "string" if "string" in norms else None
    return out


def arithmetic_type(e, column_type: str | None) -> str | None:
    """The type of `column + 1` (or -, *) with an integral column of
    `column_type`: the column's, at least int (the literal's), as Spark's
    analyzer widens it. None for anything else."""
    from sqlglot import exp

    if not isinstance(e, exp.Add | exp.Sub | exp.Mul):
        return None
    column, literal = (e.left, e.right) if isinstance(e.left, exp.Column) else (e.right, e.left)
    if not isinstance(column, exp.Column) or not (isinstance(literal, exp.Literal) and literal.is_int):
        return None
    t = norm_type(column_type or "")
    if t not in ("tinyint", "smallint", "int", "bigint") or not -(2**31) <= int(literal.this) < 2**31:
        return None
    return "bigint" if t == "bigint" else "int"
