"""Which recorded partitions of an evolving table a query block reads, from
its predicates on partition columns, and the spec they share."""

from __future__ import annotations

import datetime as dt

from sqlglot import exp

from spark_bucketing.checker.relations import RelationInfo
from spark_bucketing.metadata import BucketSpec, PartitionRecord


def _literal(e: exp.Expression):
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


def partitions_read(info: RelationInfo, alias: str, select: exp.Expression) -> list[PartitionRecord]:
    """The recorded partitions a block reads, from its WHERE conjuncts on
    partition columns (=, IN, <, <=, >, >=, BETWEEN); anything else: all."""
    where = select.args.get("where") if isinstance(select, exp.Select) else None
    parts = list(info.partitions)
    if where is None or not info.partition_by:
        return parts
    conds = where.this.flatten() if isinstance(where.this, exp.And) else [where.this]
    for cond in conds:
        col = cond.this if hasattr(cond, "this") else None
        if not (isinstance(col, exp.Column) and col.name.lower() in info.partition_by and col.table in ("", alias)):
            continue
        name = col.name.lower()

        def keep(p: PartitionRecord, test, name: str = name) -> bool:
            value = next((v for k, v in p.values.items() if k.lower() == name), None)
            return value is None or test(value)

        if isinstance(cond, exp.In):
            values = [_literal(v) for v in cond.expressions]
            if None in values:
                continue
            parts = [
                p for p in parts if keep(p, lambda v, vs=values: any(a == b for a, b in (_coerce(x, v) for x in vs)))
            ]
        elif isinstance(cond, exp.Between):
            lo, hi = _literal(cond.args["low"]), _literal(cond.args["high"])
            if lo is None or hi is None:
                continue
            parts = [
                p
                for p in parts
                if keep(p, lambda v, lo=lo, hi=hi: _coerce(lo, v)[0] <= _coerce(lo, v)[1] <= _coerce(hi, v)[0])
            ]
        elif isinstance(cond, exp.EQ | exp.GT | exp.GTE | exp.LT | exp.LTE):
            lit = _literal(cond.expression)
            if lit is None:
                continue
            ops = {
                exp.EQ: lambda a, b: b == a,
                exp.GT: lambda a, b: b > a,
                exp.GTE: lambda a, b: b >= a,
                exp.LT: lambda a, b: b < a,
                exp.LTE: lambda a, b: b <= a,
            }
            op = ops[type(cond)]
            parts = [p for p in parts if keep(p, lambda v, lit=lit, op=op: op(*_coerce(lit, v)))]
    return parts


def shared_spec(read: list[PartitionRecord]) -> BucketSpec | None:
    """The spec every partition read that holds files was written with: the
    spec the session extension reads an evolving table by; None when they
    disagree or none holds a file (as PartitionRecords.scala decides)."""
    specs = {p.spec.key(): p.spec for p in read if p.files}
    return next(iter(specs.values())) if len(specs) == 1 else None
