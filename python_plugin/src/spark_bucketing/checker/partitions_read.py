"""Which recorded partitions of an evolving table a query block reads, from
its predicates on partition columns, and the spec they share."""

from __future__ import annotations

import datetime as dt

from sqlglot import exp

from spark_bucketing.checker.literals import today_relative
from spark_bucketing.checker.relations import RelationInfo
from spark_bucketing.metadata import BucketSpec, PartitionRecord


def _literal(e: exp.Expression):
    today = today_relative(e)
    if today is not None:
        return today.isoformat()
    if isinstance(e, exp.Literal):
        return e.this
    if isinstance(e, exp.Cast) and isinstance(e.this, exp.Literal):
        return e.this.this
    if isinstance(e, exp.Anonymous | exp.Func) and e.args.get("this") is not None and isinstance(e.this, exp.Literal):
        return e.this.this
    if isinstance(e, exp.TsOrDsToDate | exp.StrToDate) and isinstance(e.this, exp.Literal):
        return e.this.this
    return None


def _coerce(value: str, sample: str):
    for parse in (int, float, dt.date.fromisoformat):
        try:
            return parse(value), parse(sample)
        except (TypeError, ValueError):
            continue
    return value, sample


def partitions_read(info: RelationInfo, alias: str, conds: list[exp.Expression]) -> tuple[list[PartitionRecord], bool]:
    """The recorded partitions a scan reads, from the conjuncts that reach it
    on partition columns (=, IN, <, <=, >, >=, BETWEEN with literals); and
    whether that is exact: False where a conjunct on a partition column
    compares it with something else (`day > (select max(day) ...)`,
    `current_date()`), which Spark prunes by and this model does not."""
    parts = list(info.partitions)
    exact = True
    if not info.partition_by:
        return parts, exact
    for cond in conds:
        col = cond.this if hasattr(cond, "this") else None
        if not (isinstance(col, exp.Column) and col.name.lower() in info.partition_by and col.table in ("", alias)):
            exact = exact and (_null_test(cond) or not _names_partition(cond, info, alias))
            continue
        name = col.name.lower()
        if not _literal_condition(cond):
            exact = False
            continue

        def keep(p: PartitionRecord, test, name: str = name) -> bool:
            value = next((v for k, v in p.values.items() if k.lower() == name), None)
            return value is None or test(value)

        if isinstance(cond, exp.In):
            values = [_literal(v) for v in cond.expressions]
            parts = [
                p for p in parts if keep(p, lambda v, vs=values: any(a == b for a, b in (_coerce(x, v) for x in vs)))
            ]
        elif isinstance(cond, exp.Between):
            lo, hi = _literal(cond.args["low"]), _literal(cond.args["high"])
            parts = [
                p
                for p in parts
                if keep(p, lambda v, lo=lo, hi=hi: _coerce(lo, v)[0] <= _coerce(lo, v)[1] <= _coerce(hi, v)[0])
            ]
        elif isinstance(cond, exp.EQ | exp.GT | exp.GTE | exp.LT | exp.LTE):
            lit = _literal(cond.expression)
            ops = {
                exp.EQ: lambda a, b: b == a,
                exp.GT: lambda a, b: b > a,
                exp.GTE: lambda a, b: b >= a,
                exp.LT: lambda a, b: b < a,
                exp.LTE: lambda a, b: b <= a,
            }
            op = ops[type(cond)]
            parts = [p for p in parts if keep(p, lambda v, lit=lit, op=op: op(*_coerce(lit, v)))]
    # What the literals leave no partition of is read by no other condition either.
    return parts, exact or not parts


def _literal_condition(cond: exp.Expression) -> bool:
    """A condition this model evaluated: every value it compares with a literal."""
    if isinstance(cond, exp.In):
        return not cond.args.get("query") and all(_literal(v) is not None for v in cond.expressions)
    if isinstance(cond, exp.Between):
        return _literal(cond.args["low"]) is not None and _literal(cond.args["high"]) is not None
    if isinstance(cond, exp.EQ | exp.GT | exp.GTE | exp.LT | exp.LTE):
        return _literal(cond.expression) is not None
    return False


def _null_test(cond: exp.Expression) -> bool:
    """`x IS [NOT] NULL`: it keeps every partition of a value (Spark infers `isnotnull` for join keys)."""
    inner = cond.this if isinstance(cond, exp.Not) else cond
    return isinstance(inner, exp.Is) and isinstance(inner.expression, exp.Null)


def _names_partition(cond: exp.Expression, info: RelationInfo, alias: str) -> bool:
    """Whether a condition names a partition column of the scan (`x.day` in a comparison, a function)."""
    return any(c.name.lower() in info.partition_by and c.table in ("", alias) for c in cond.find_all(exp.Column))


def shared_spec(read: list[PartitionRecord]) -> BucketSpec | None:
    """The spec every partition read that holds files was written with: the
    spec the session extension reads an evolving table by; None when they
    disagree or none holds a file (as PartitionRecords.scala decides)."""
    specs = {p.spec.key(): p.spec for p in read if p.files}
    return next(iter(specs.values())) if len(specs) == 1 else None
