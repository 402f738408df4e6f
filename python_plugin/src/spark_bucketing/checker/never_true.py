"""Filters no row passes, as Spark's optimizer finds them and plans an
empty relation instead of the scan: a literal past an integral column's
range (UnwrapCastInBinaryComparison), and literal comparisons of one
column that contradict each other (ConstantPropagation)."""

from __future__ import annotations

import datetime as dt
import operator

from sqlglot import exp

from spark_bucketing.checker.column_types import integral_up_cast
from spark_bucketing.checker.keytypes import arithmetic_type, norm_type
from spark_bucketing.checker.literals import (
    INTEGRAL,
    OUT_OF_RANGE,
    is_string,
    literal_value,
    today_relative,
    typed,
)


def never_true_filter(f: exp.Expression, columns: dict[str, str | None]) -> bool:
    """`column = literal`, `column <=> literal` or `column IN (literals)`
    (the column itself or cast up to a wider integral type) with no literal in
    the range of the integral column (NULLs aside): Spark's optimizer makes
    the filter false and plans an empty relation instead of the scan and of
    every operator the emptiness reaches."""
    if not isinstance(f, exp.EQ | exp.NullSafeEQ | exp.In) or f.args.get("query"):
        return False
    col_type = _range_type(f.this, columns)
    return col_type is not None and past_range(f, col_type)


_COMPARE = {
    exp.EQ: operator.eq,
    exp.NEQ: operator.ne,
    exp.LT: operator.lt,
    exp.LTE: operator.le,
    exp.GT: operator.gt,
    exp.GTE: operator.ge,
}


def contradictory(filters: list[exp.Expression], columns: dict[str, str | None]) -> bool:
    """Whether the filters on one scan, ANDed, hold for no row: a column equal to
    a literal (`day = '2024-01-03'`) and another comparison of it with
    literals that the value fails (`day between '2024-01-01' and '2024-01-02'`).
    Spark's optimizer puts the value in the others (ConstantPropagation),
    folds them to false and plans an empty relation. Only a string column
    against strings, or an integral one against whole numbers."""
    fixed: dict[str, object] = {}
    for f in filters:
        pair = _column_literal(f, columns) if isinstance(f, exp.EQ) else None
        if pair is not None:
            name, value = pair
            if name in fixed and not _holds(operator.eq, fixed[name], value):
                return True
            fixed[name] = value
    for f in filters:
        for name, check in _checks(f, columns):
            if name in fixed and not check(fixed[name]):
                return True
    return False


def _same_kind(value, other):
    """`value` as compared with `other`: a string compared with a date is cast to one (None: it is no date)."""
    if isinstance(other, dt.date) and isinstance(value, str):
        try:
            return dt.date.fromisoformat(value)
        except ValueError:
            return None
    return value


def _holds(compare, a, b) -> bool:
    a, b = _same_kind(a, b), _same_kind(b, a)
    return True if a is None or b is None else compare(a, b)  # what cannot be compared here may hold


def _column_literal(f: exp.Expression, columns: dict[str, str | None]):
    """(column, value) of `column <op> literal` (either side), the value of the column's kind; None otherwise."""
    left, right = f.left.unnest(), f.right.unnest()
    if not isinstance(left, exp.Column):
        left, right = right, left
    if not isinstance(left, exp.Column):
        return None
    value = _comparable(right, columns.get(left.name.lower()))
    return None if value is None else (left.name.lower(), value)


def _comparable(node: exp.Expression, col_type: str | None):
    """A literal as a value compared with a column of `col_type`: a string with a string column, a whole
    number with an integral one; None for anything else (whose comparison Spark may cast otherwise)."""
    text = literal_value(node)
    if col_type is None:
        return None
    t = norm_type(col_type)
    today = today_relative(node)
    if today is not None and t in ("string", "date"):
        return today  # Spark compares the column cast to a date
    if text is None or text == "NULL":
        return None
    if t == "string":
        return text if is_string(node) else None
    if t in INTEGRAL and not is_string(node):
        try:
            number = float(text)
        except ValueError:
            return None
        return int(number) if number == int(number) else None
    return None


def _checks(f: exp.Expression, columns: dict[str, str | None]):
    """(column, test of the column's value) for each comparison of a column with literals in `f`."""
    if type(f) in _COMPARE:
        left, right = f.left.unnest(), f.right.unnest()
        compare = _COMPARE[type(f)]
        if isinstance(left, exp.Column):
            value = _comparable(right, columns.get(left.name.lower()))
            if value is not None:
                return [(left.name.lower(), lambda v, c=compare, x=value: _holds(c, v, x))]
        if isinstance(right, exp.Column):
            value = _comparable(left, columns.get(right.name.lower()))
            if value is not None:
                return [(right.name.lower(), lambda v, c=compare, x=value: _holds(c, x, v))]
        return []
    if isinstance(f, exp.Between) and isinstance(f.this, exp.Column):
        col_type = columns.get(f.this.name.lower())
        low, high = _comparable(f.args["low"], col_type), _comparable(f.args["high"], col_type)
        if low is not None and high is not None:
            return [
                (
                    f.this.name.lower(),
                    lambda v, lo=low, hi=high: _holds(operator.le, lo, v) and _holds(operator.le, v, hi),
                )
            ]
    if isinstance(f, exp.In) and isinstance(f.this, exp.Column) and not f.args.get("query"):
        col_type = columns.get(f.this.name.lower())
        values = [_comparable(v, col_type) for v in f.expressions]
        if values and None not in values:
            return [(f.this.name.lower(), lambda v, vs=tuple(values): any(_holds(operator.eq, v, x) for x in vs))]
    return []


def past_range(f: exp.Expression, col_type: str) -> bool:
    """`column = literal` (or `<=>`), or `column IN (literals)`, with no literal in the
    range of the integral `col_type` (NULLs aside)."""
    if norm_type(col_type) not in INTEGRAL or not isinstance(f, exp.EQ | exp.NullSafeEQ | exp.In):
        return False
    nodes = f.expressions if isinstance(f, exp.In) else [f.expression]
    values = [literal_value(n) for n in nodes]
    if any(v is None for v in values):
        return False
    typed_values = [typed(v, n, col_type, in_list=isinstance(f, exp.In)) for v, n in zip(values, nodes, strict=True)]
    return all(t is OUT_OF_RANGE or t is None for t in typed_values) and OUT_OF_RANGE in typed_values


def _range_type(e: exp.Expression, columns: dict[str, str | None]) -> str | None:
    """The integral type whose range decides whether `e = literal` can hold:
    a column's; through a cast up to a wider integral type, the column's
    (the optimizer unwraps the cast); `column + 1` (or -, *), its type (the
    literal's wider type casts the whole expression, unwrapped the same way).
    None for anything else."""
    if isinstance(e, exp.Column):
        return columns.get(e.name.lower())
    if isinstance(e, exp.Cast) and isinstance(e.this, exp.Column):
        inner = columns.get(e.this.name.lower())
        return inner if integral_up_cast(inner, e.to.sql("spark")) else None
    column = e.find(exp.Column)
    return arithmetic_type(e, columns.get(column.name.lower())) if column is not None else None
