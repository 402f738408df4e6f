"""How many buckets a scan's filters select (bucket pruning), as Spark
and the session extension select them, and why every bucket where they do
not: a scan's lookup finding."""

from __future__ import annotations

import struct

from sqlglot import exp

from spark_bucketing import hashing
from spark_bucketing.checker import engines as E
from spark_bucketing.checker.engines import EngineSettings
from spark_bucketing.checker.extension_lookups import EVERY_COLUMN, FLOAT_KEY, extension_selected
from spark_bucketing.checker.lines import source_line
from spark_bucketing.checker.literals import (
    CASTS_COLUMN,
    LITERAL_TYPE,
    NOT_PRUNABLE,
    OR_OTHER,
    OUT_OF_RANGE,
    literal_value,
    on_column,
    typed,
)
from spark_bucketing.checker.model import Finding, Side
from spark_bucketing.checker.relations import RelationInfo

ONE_COLUMN = "PRUNING_NEEDS_ONE_BUCKET_COLUMN"
LITERAL_FIRST = "LITERAL_BEFORE_COLUMN"
ALL = None  # every bucket


def judge_lookup(info: RelationInfo, filters: list[exp.Expression], settings: EngineSettings, node) -> Finding | None:
    spec = info.bucket or (info.latest if info.evolving else None)
    if spec is None or spec.buckets <= 1:
        return None
    columns = [c.lower() for c in spec.clustered_by]
    touching = [f for f in filters if any(c.name.lower() in columns for c in f.find_all(exp.Column))]
    if not touching:
        return None
    key_types = [info.columns.get(c) for c in columns]
    usable, reasons = E.usable_spec(info.bucket, key_types, settings, info.built_by_package)
    read: int | None = spec.buckets
    if info.evolving:
        reasons = [E.EVOLVING_TABLE]
    elif usable:
        selected, reasons = _spark_selected(touching, columns, key_types, spec.buckets)
        if settings.extension and (info.built_by_package or (settings.foreign_tables and spec.hash == "hive")):
            # Read by the extension, which prunes every family; on Spark's hash Spark's own choice stands too.
            by_extension, why = extension_selected(touching, spec, key_types)
            selected = _and(by_extension, selected if spec.hash == "spark" else ALL)
            reasons = why if selected is ALL else []
        read = len(selected) if isinstance(selected, set) else (spec.buckets if selected is ALL else None)
    side = Side(
        relation=info.name,
        keys=columns,
        bucketed=usable and not info.evolving,
        shuffle=False,
        reasons=reasons,
        local_keys=columns,
    )
    finding = Finding("lookup", source_line(touching[0], node), [side], buckets=spec.buckets, buckets_read=read)
    finding.suggestions = _suggestions(info, columns, key_types[0], reasons)
    return finding


def _spark_selected(filters, columns: list[str], key_types: list[str | None], buckets: int):
    """Spark's own pruning, of a table bucketed by one column: (bucket ids, reasons)."""
    if len(columns) > 1:
        return ALL, [ONE_COLUMN]
    return _selected(filters, columns[0], key_types[0], buckets)


def _selected(filters, column: str, col_type: str | None, buckets: int):
    """(bucket ids, reasons); ALL for every bucket, "unknown" when a value cannot be hashed here."""
    reasons: list[str] = []
    result = ALL
    for f in filters:
        part = _bucket_set(f, column, col_type, buckets, reasons)
        result = _and(result, part)
    return result, list(dict.fromkeys(reasons)) if result is ALL else []


def _and(a, b):
    if a == "unknown" or b == "unknown":
        return "unknown"
    if a is ALL:
        return b
    return a if b is ALL else a & b


def _or(a, b):
    if a == "unknown" or b == "unknown":
        return "unknown"
    return ALL if a is ALL or b is ALL else a | b


def _bucket_set(e: exp.Expression, column: str, col_type: str | None, n: int, reasons: list[str]):
    e = e.unnest() if isinstance(e, exp.Paren) else e
    touches = any(c.name.lower() == column for c in e.find_all(exp.Column))
    if isinstance(e, exp.And):
        return _and(
            _bucket_set(e.left, column, col_type, n, reasons), _bucket_set(e.right, column, col_type, n, reasons)
        )
    if isinstance(e, exp.Or):
        left, right = (_bucket_set(x, column, col_type, n, reasons) for x in (e.left, e.right))
        if (left is ALL) != (right is ALL) and touches:
            reasons.append(OR_OTHER)
        return _or(left, right)
    if not touches:
        return ALL
    if isinstance(e, exp.Is) and isinstance(e.expression, exp.Null):
        ok = on_column(e.this, column, None, reasons, col_type)
        return _ids([None], col_type, n) if ok else ALL
    if isinstance(e, exp.EQ | exp.NullSafeEQ):
        col, value = e.left, e.right
        literal = literal_value(value)
        if literal is None:
            # Spark matches `column = literal` only in that order, and the optimizer does not swap them.
            reasons.append(LITERAL_FIRST if literal_value(e.left) is not None else NOT_PRUNABLE)
            return ALL
        if literal == "NULL":
            # `= NULL` is never true; `<=> NULL` is IS NULL.
            null_safe = isinstance(e, exp.NullSafeEQ) and on_column(col, column, value, reasons, col_type)
            return _ids([None], col_type, n) if null_safe else ALL
        if not on_column(col, column, value, reasons, col_type):
            return ALL
        value_typed = typed(literal, value, col_type, in_list=False)
        if value_typed is CASTS_COLUMN:
            reasons.append(LITERAL_TYPE)
            return ALL
        return _ids([value_typed], col_type, n)
    if isinstance(e, exp.In) and not e.args.get("query"):
        literals = [literal_value(v) for v in e.expressions]
        if any(v is None for v in literals):
            reasons.append(NOT_PRUNABLE)
            return ALL
        first = next((x for x, v in zip(e.expressions, literals, strict=True) if v != "NULL"), e.expressions[0])
        if not on_column(e.this, column, first, reasons, col_type):
            return ALL
        values = [typed(v, node, col_type, in_list=True) for v, node in zip(literals, e.expressions, strict=True)]
        if any(t is CASTS_COLUMN for t in values):
            reasons.append(LITERAL_TYPE)
            return ALL
        # Spark's pruning reads NULL's bucket for a NULL in the list; the optimizer drops the literals past an
        # integral column's range (UnwrapCastInBinaryComparison), which no row can equal.
        return _ids([t for t in values if t is not OUT_OF_RANGE], col_type, n)
    reasons.append(NOT_PRUNABLE)
    return ALL


def _ids(values: list, col_type: str | None, n: int):
    try:
        return {hashing.bucket_id([v], [col_type or "string"], n, "spark") for v in values}
    except (hashing.UnsupportedTypeError, ValueError, TypeError, OverflowError, struct.error):
        return "unknown"


def _suggestions(info: RelationInfo, columns: list[str], col_type: str | None, reasons: list[str]) -> list[str]:
    rel, col = info.name, columns[0]
    texts = {
        ONE_COLUMN: f"Spark prunes buckets only on a table bucketed by one column; {rel} is bucketed by "
        f"({', '.join(columns)}), so every bucket is read",
        NOT_PRUNABLE: f"only =, <=>, IN (literals) and IS NULL on {col} (and AND/OR of them) select buckets; "
        "a range, a negation or a comparison with another column reads every bucket",
        OR_OTHER: f"an OR with a condition on another column reads every bucket of {rel}",
        LITERAL_TYPE: f"compare {col} with literals of its own type ({col_type}): here Spark casts the column, "
        "which reads every bucket",
        LITERAL_FIRST: f"write the column first ({col} = value): Spark selects buckets only for that order",
        E.KEY_CAST: f"filter on {col} itself, not a cast of it",
        E.KEY_EXPRESSION: f"filter on {col} itself, not an expression of it",
        E.HIVE_HASH: f"{rel} uses Hive's hash, which Spark does not read as bucketed, so it cannot prune buckets",
        EVERY_COLUMN: f"the extension prunes {rel} by the combinations of all its bucket columns "
        f"({', '.join(columns)}): give each of them (=, IN, IS NULL)",
        FLOAT_KEY: f"{col} is a floating-point column, which the extension does not prune by (= takes -0.0 and "
        "0.0 as one value where a hash may not)",
        E.BUCKETING_DISABLED: "spark.sql.sources.bucketing.enabled is false",
        E.FOREIGN_TABLE: f"{rel} was not built by this package: SET spark_bucketing.extension.foreignTables=true "
        "to read it bucketed, pruned by Hive's hash",
        E.HIVE_V2_FLOAT_KEY: f"{rel} is bucketed by Hive's v2 hash on a floating-point column, which the extension "
        "reads unbucketed",
        E.HIVE_KEY_TYPE: f"{rel} is bucketed by Hive's hash on a column type the extension does not hash as Hive "
        "does, so it reads the table unbucketed",
        E.EVOLVING_TABLE: f"{rel} is declared unbucketed while its partitions' specs differ: backfill to converge",
    }
    return [texts[r] for r in reasons if r in texts]
