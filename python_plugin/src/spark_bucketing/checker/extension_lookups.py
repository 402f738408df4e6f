"""Bucket pruning as the session extension does it on the tables this
package built (BucketPruning.scala), every hash family: `=` and `<=>` with
a literal on either side, `IN` of literals, `IS NULL` on the bucket
columns (a boolean column as the condition itself), AND and OR of them; a
table bucketed by several columns by the combinations of their values, at
most MAX_COMBINATIONS; no floating-point bucket column."""

from __future__ import annotations

import itertools
import math
import struct

from sqlglot import exp

from spark_bucketing import hashing
from spark_bucketing.checker.keytypes import norm_type
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
from spark_bucketing.metadata import BucketSpec

MAX_COMBINATIONS = 1000  # BucketPruning.MaxCombinations
EVERY_COLUMN = "PRUNING_NEEDS_EVERY_BUCKET_COLUMN"
FLOAT_KEY = "FLOATING_POINT_KEY_NOT_PRUNED"

Box = dict[int, frozenset]  # allowed values per bucket column position; absent: any value
ANYTHING: list[Box] = [{}]


def extension_selected(filters: list[exp.Expression], spec: BucketSpec, key_types: list[str | None]):
    """(bucket ids, reasons): a set, None for every bucket, "unknown" when a value cannot be hashed here."""
    types = [norm_type(t or "string") for t in key_types]
    if any(t in ("float", "double") for t in types):
        return None, [FLOAT_KEY]
    columns = [c.lower() for c in spec.clustered_by]
    reasons: list[str] = []
    boxes = ANYTHING
    for f in filters:
        boxes = _and(boxes, _boxes(f, columns, types, reasons))
    selected: set[int] = set()
    for box in boxes:
        if len(box) < len(columns):
            return None, list(dict.fromkeys(reasons)) or [EVERY_COLUMN if len(columns) > 1 else NOT_PRUNABLE]
        sets = [box[i] for i in range(len(columns))]
        if math.prod(len(s) for s in sets) > MAX_COMBINATIONS:
            return None, [NOT_PRUNABLE]
        try:
            selected |= {
                hashing.bucket_id(list(values), types, spec.buckets, spec.hash, spec.version)
                for values in itertools.product(*sets)
            }
        except (hashing.UnsupportedTypeError, ValueError, TypeError, OverflowError, struct.error):
            return "unknown", []
    return selected, []


def _and(a: list[Box], b: list[Box]) -> list[Box]:
    if len(a) * len(b) > MAX_COMBINATIONS:
        return ANYTHING
    return [{k: x.get(k, y.get(k)) & y.get(k, x.get(k)) for k in x.keys() | y.keys()} for x in a for y in b]


def _boxes(e: exp.Expression, columns: list[str], types: list[str], reasons: list[str]) -> list[Box]:
    e = e.unnest() if isinstance(e, exp.Paren) else e
    if isinstance(e, exp.And):
        return _and(_boxes(e.left, columns, types, reasons), _boxes(e.right, columns, types, reasons))
    if isinstance(e, exp.Or):
        left, right = (_boxes(x, columns, types, reasons) for x in (e.left, e.right))
        boxes = left + right
        if len(boxes) > MAX_COMBINATIONS or {} in boxes:
            if _touches(e, columns) and ({} in left) != ({} in right):
                reasons.append(OR_OTHER)
            return ANYTHING
        return boxes
    if not _touches(e, columns):
        return ANYTHING
    position = _position(e, columns)
    if position is not None and types[position] == "boolean":  # `where flag`
        return [{position: frozenset([True])}]
    negated = _position(e.this.unnest(), columns) if isinstance(e, exp.Not) else None
    if negated is not None and types[negated] == "boolean":  # `where not flag`
        return [{negated: frozenset([False])}]
    if isinstance(e, exp.Is) and isinstance(e.expression, exp.Null):
        i = _compared(e.this, columns, None, reasons)
        return ANYTHING if i is None else [{i: frozenset([None])}]
    if isinstance(e, exp.EQ | exp.NullSafeEQ):
        column, node = (e.right, e.left) if literal_value(e.left) is not None else (e.left, e.right)
        value = literal_value(node)
        if value is None:
            reasons.append(NOT_PRUNABLE)
            return ANYTHING
        i = _compared(column, columns, node, reasons)
        if i is None:
            return ANYTHING
        if value == "NULL":  # `= NULL` holds for no row; `<=> NULL` is IS NULL
            return [{i: frozenset([None] if isinstance(e, exp.NullSafeEQ) else [])}]
        return _values(i, [(value, node)], types[i], reasons, in_list=False)
    if isinstance(e, exp.In) and not e.args.get("query"):
        values = [literal_value(v) for v in e.expressions]
        i = _compared(e.this, columns, e.expressions[0], reasons) if None not in values else None
        if None in values:
            reasons.append(NOT_PRUNABLE)
        if i is None:
            return ANYTHING
        pairs = [(v, n) for v, n in zip(values, e.expressions, strict=True) if v != "NULL"]
        return _values(i, pairs, types[i], reasons, in_list=True)
    reasons.append(NOT_PRUNABLE)
    return ANYTHING


def _touches(e: exp.Expression, columns: list[str]) -> bool:
    return any(c.name.lower() in columns for c in e.find_all(exp.Column))


def _position(e: exp.Expression, columns: list[str]) -> int | None:
    return columns.index(e.name.lower()) if isinstance(e, exp.Column) and e.name.lower() in columns else None


def _compared(e: exp.Expression, columns: list[str], literal_node, reasons: list[str]) -> int | None:
    """The position of the bucket column a condition compares (itself or through a cast the optimizer unwraps)."""
    target = e.this if isinstance(e, exp.Cast) else e
    i = _position(target, columns)
    return i if i is not None and on_column(e, columns[i], literal_node, reasons) else None


def _values(i: int, pairs: list[tuple[str, exp.Expression]], col_type: str, reasons: list[str], in_list: bool):
    values = [typed(v, node, col_type, in_list=in_list) for v, node in pairs]
    if any(v is CASTS_COLUMN for v in values):
        reasons.append(LITERAL_TYPE)
        return ANYTHING
    # A literal past the column's range stands for no value: the optimizer drops it (literals.OUT_OF_RANGE).
    return [{i: frozenset(v for v in values if v is not OUT_OF_RANGE)}]
