"""The partitioning a query block's output keeps, carried from block to block."""

from __future__ import annotations

from dataclasses import replace

from spark_bucketing.checker.model import Part


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
