"""The partitioning a query block's output keeps, carried from block to block."""

from __future__ import annotations

from dataclasses import replace

from spark_bucketing.checker.engines import EngineSettings
from spark_bucketing.checker.model import Output, Part


def unordered(part: Part | None) -> Part | None:
    """The partitioning after an operator that returns rows in no known order."""
    return None if part is None else replace(part, sorted=None)


def renamed_order(order: tuple | None, rename: dict) -> tuple | None:
    """A scan's row order through a projection: the prefix the projection keeps."""
    if order is None:
        return None
    kept = []
    for c in order:
        if c not in rename:
            break
        kept.append(rename[c])
    return tuple(kept)


def prefixed(part: Part | None, alias: str) -> Part | None:
    """A FROM item's partitioning, in the reading block's column ids."""
    if part is None:
        return None
    return replace(
        part,
        options=[tuple((alias, c) if isinstance(c, str) else c for c in opt) for opt in part.options],
        sorted=None if part.sorted is None else tuple((alias, c) if isinstance(c, str) else c for c in part.sorted),
    )


def kept_union_part(branches: list[Output], settings: EngineSettings) -> Part | None:
    """The placement a UNION ALL keeps with the session extension: every
    branch a bucketed scan of a table this package built, with one hash and
    count and the bucket columns at the same output positions (Spark 4.1+'s
    union partitioning; BucketedUnions restates a Spark-hash branch's
    placement, under adaptive execution). None otherwise: stock Spark keeps
    some Spark-hash unions too, which this model does not claim."""
    if not (branches and settings.extension and settings.union_output_partitioning):
        return None
    parts = [b.part for b in branches]
    if not all(p is not None and p.scan and p.package and p.bucketed for p in parts):
        return None
    first = parts[0]
    if not first.hash.startswith("hive") and not settings.adaptive:
        return None
    names = [list(b.types) for b in branches]
    positions = [tuple(n.index(c) for c in p.options[0]) for p, n in zip(parts, names, strict=True)]
    if len(set(positions)) > 1 or len({(p.num, p.hash) for p in parts}) > 1:
        return None
    return Part(
        options=[tuple(names[0][i] for i in positions[0])],
        num=first.num,
        bucketed=True,
        spec=first.spec,
        hash=first.hash,
    )
