"""Relations Spark plans as empty. A filter no row passes (an integral
column against literals past its range) makes the optimizer replace the scan
with an empty relation (PropagateEmptyRelation), and the emptiness spreads: an
inner join, a grouping or a semi join over it is empty too, while an outer
join keeps its preserved side alone (the join is gone) and a UNION ALL its
other branches. What is gone has no operator in the plan, so no finding."""

from __future__ import annotations

from spark_bucketing.checker.blocks import Block

EMPTY, LEFT, RIGHT = "empty", "left", "right"


def join_over_empty(kind: str, left_empty: bool, right_empty: bool) -> str:
    """What a join with an empty side is planned as: EMPTY, or the LEFT or
    RIGHT side alone."""
    if kind in ("left", "anti"):
        return EMPTY if left_empty else LEFT
    if kind == "right":
        return EMPTY if right_empty else RIGHT
    if kind == "full":
        if left_empty and right_empty:
            return EMPTY
        return RIGHT if left_empty else LEFT
    return EMPTY  # inner, cross, semi


class Vanished:
    """The scans (id() of their table nodes) and findings (their id()) the plan does not have."""

    def __init__(self, spans: dict[int, tuple[int, int]], findings: list):
        self.scans: set[int] = set()
        self.finding_ids: set[int] = set()
        self._spans = spans  # per block, the range of findings it and what it reads produced
        self._findings = findings

    def sources(self, block: Block, aliases: list[str]) -> None:
        for alias in aliases:
            source = block.sources.get(alias)
            if source is not None and source.table is not None:
                self.scans.add(id(source.table))
            elif source is not None and source.block is not None:
                self.block(source.block)

    def block(self, block: Block) -> None:
        start, end = self._spans.get(id(block), (0, 0))
        self.findings(start, end)
        self.sources(block, list(block.sources))
        for other in [*block.branches, *block.subqueries.values()]:
            self.block(other)

    def findings(self, start: int, end: int) -> None:
        self.finding_ids.update(id(f) for f in self._findings[start:end])
