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
