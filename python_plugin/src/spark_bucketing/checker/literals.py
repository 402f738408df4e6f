"""What a filter compares a bucket column with, as the bucket pruning of
Spark and of the session extension sees it: the column itself (or a cast
the optimizer unwraps), and literals read as values of the column's type."""

from __future__ import annotations

import datetime as dt

from sqlglot import exp

from spark_bucketing.checker import engines as E
from spark_bucketing.checker.keytypes import NUMERIC_ORDER, norm_type

INTEGRAL = ("tinyint", "smallint", "int", "bigint")
INTEGRAL_RANGES = {
    t: (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) for t, bits in zip(INTEGRAL, (8, 16, 32, 64), strict=True)
}


class _OutOfRange:
    """A literal past its integral column's range: it stands for no value of the column. Spark's optimizer
    (UnwrapCastInBinaryComparison) drops it from an IN list and makes a filter with no other value never true
    (never_true.py: never_true_filter); no bucket is named for it."""

    def __repr__(self) -> str:
        return "OUT_OF_RANGE"


OUT_OF_RANGE = _OutOfRange()
# Why a filter selects every bucket, under Spark's pruning and the extension's alike.
NOT_PRUNABLE = "PREDICATE_NOT_PRUNABLE"
OR_OTHER = "OR_WITH_OTHER_COLUMNS"
LITERAL_TYPE = "LITERAL_TYPE_CASTS_COLUMN"
# A literal Spark compares by casting the column instead (a number against a string column).
CASTS_COLUMN = object()


def on_column(e: exp.Expression, column: str, literal_node, reasons: list[str], col_type: str | None = None) -> bool:
    """The filter compares the bucket column itself. A cast of an integral
    column to a wider number compared with a whole number is unwrapped by the
    optimizer; any other cast (one to a narrower type among them: `col_type`,
    the column's, where known) or function hides the column."""
    if isinstance(e, exp.Column) and e.name.lower() == column:
        return True
    if (
        isinstance(e, exp.Cast)
        and isinstance(e.this, exp.Column)
        and e.this.name.lower() == column
        and norm_type(e.to.sql("spark")) in (*INTEGRAL, "double", "float")
        and isinstance(literal_node, exp.Literal | exp.Neg)
        and not is_string(literal_node)
        and _widens(col_type, e.to.sql("spark"))
    ):
        return True
    reasons.append(E.KEY_CAST if isinstance(e, exp.Cast) else E.KEY_EXPRESSION)
    return False


def _widens(col_type: str | None, to: str) -> bool:
    """Whether a cast of a `col_type` column to `to` is one Spark unwraps (an up-cast; unknown: assumed)."""
    if col_type is None or norm_type(col_type) not in NUMERIC_ORDER:
        return True
    return NUMERIC_ORDER.index(norm_type(col_type)) <= NUMERIC_ORDER.index(norm_type(to))


def is_string(node) -> bool:
    return isinstance(node, exp.Literal) and node.is_string


def typed(value: str, node, col_type: str | None, in_list: bool):
    """The literal as a value of the column's type, or CASTS_COLUMN when
    Spark casts the column instead (a number against a string column; in an
    IN list, a string against any other type, the list's common type being
    string), or OUT_OF_RANGE."""
    if value == "NULL":
        return None
    t = norm_type(col_type or "string")
    if t == "string":
        return value if is_string(node) else CASTS_COLUMN
    if is_string(node) and in_list:
        return CASTS_COLUMN
    try:
        if t in INTEGRAL:
            number = float(value)
            if number != int(number):
                return CASTS_COLUMN
            low, high = INTEGRAL_RANGES[t]
            return int(number) if low <= int(number) <= high else OUT_OF_RANGE
        if t in NUMERIC_ORDER:
            return float(value)
        if t == "date":
            return dt.date.fromisoformat(value)
        if t == "boolean":
            return value.lower() == "true"
    except ValueError:
        return CASTS_COLUMN
    return value


def literal_value(e) -> str | None:
    """A literal's text ("NULL" for NULL), or None for anything else."""
    if isinstance(e, exp.Paren):
        return literal_value(e.this)
    if isinstance(e, exp.Null):
        return "NULL"
    if isinstance(e, exp.Boolean):
        return "true" if e.this else "false"
    if isinstance(e, exp.Literal):
        return e.this
    if isinstance(e, exp.Neg) and isinstance(e.this, exp.Literal) and not e.this.is_string:
        return "-" + e.this.this
    if isinstance(e, exp.Cast) and isinstance(e.this, exp.Literal):
        return e.this.this
    return None


def today_relative(e) -> dt.date | None:
    """`current_date()`, or a whole number of days added to or taken from it
    (`date_sub(current_date(), 3)`, `date_add(current_date(), 1)`), as the
    date it is today: Spark's optimizer folds it to a literal
    (ComputeCurrentTime) before it prunes partitions or propagates constants."""
    e = e.unnest() if isinstance(e, exp.Paren) else e
    if isinstance(e, exp.CurrentDate) and not e.args.get("this"):
        return dt.date.today()
    unit = e.args.get("unit")
    if isinstance(e, exp.TsOrDsAdd | exp.DateAdd | exp.DateSub) and (unit is None or unit.name.upper() == "DAY"):
        base = today_relative(e.this)
        days = _whole_number(e.expression)
        if base is None or days is None:
            return None
        return base - dt.timedelta(days=days) if isinstance(e, exp.DateSub) else base + dt.timedelta(days=days)
    return None


def _whole_number(e) -> int | None:
    e = e.unnest() if isinstance(e, exp.Paren) else e
    if isinstance(e, exp.Literal) and not e.is_string and e.this.lstrip("-").isdigit():
        return int(e.this)
    if isinstance(e, exp.Neg):
        inner = _whole_number(e.this)
        return None if inner is None else -inner
    if isinstance(e, exp.Mul):
        a, b = _whole_number(e.this), _whole_number(e.expression)
        return None if a is None or b is None else a * b
    return None
