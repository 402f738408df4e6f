"""What the analysis works with and reports: findings and their sides, and
the partitioning a query block's output keeps."""

from __future__ import annotations

from dataclasses import dataclass, field

from spark_bucketing.metadata import BucketSpec

ColId = tuple[str, str]  # (source alias, column) inside one query block


@dataclass
class Side:
    relation: str | None
    keys: list[str]
    bucketed: bool
    shuffle: bool
    reasons: list[str] = field(default_factory=list)
    local_keys: list[str] = field(default_factory=list)  # key names as the query block sees them
    # Sort-merge join sides: "needed", "skipped" (the scan is read in key
    # order), "skippable" (it would be, with the ordering setting on), or
    # None when the file layout is not known.
    sort: str | None = None

    def to_json(self) -> dict:
        return {
            "relation": self.relation,
            "keys": self.keys,
            "bucketed": self.bucketed,
            "shuffle": self.shuffle,
            "reasons": self.reasons,
            "sort": self.sort,
        }


@dataclass
class Finding:
    kind: str  # join | aggregate | window | distinct | lookup | query
    line: int
    sides: list[Side]
    suggestions: list[str] = field(default_factory=list)
    join_type: str | None = None
    unknown: bool = False
    # Lookups: the table's bucket count and how many of them a filter reads
    # (None: the filter's values are not known before the query runs).
    buckets: int | None = None
    buckets_read: int | None = None

    @property
    def shuffle_free(self) -> bool:
        return not self.unknown and not any(s.shuffle for s in self.sides)

    @property
    def between_bucketed(self) -> bool:
        return self.kind == "join" and len(self.sides) == 2 and all(s.bucketed for s in self.sides)

    def to_json(self) -> dict:
        out = {
            "kind": self.kind,
            "line": self.line,
            "shuffle_free": self.shuffle_free,
            "sides": [s.to_json() for s in self.sides],
            "suggestions": self.suggestions,
        }
        if self.join_type and self.join_type.startswith(("semi", "anti")):
            out["join_type"] = self.join_type
        if self.kind == "lookup":
            out["buckets"] = self.buckets
            out["buckets_read"] = self.buckets_read
        if self.unknown:
            out["unknown"] = True
        return out


@dataclass
class Part:
    """Output partitioning: `options` are equivalent key lists (a join output
    is partitioned by either side's keys); `bucketed` when it comes from a
    bucketed scan rather than a shuffle."""

    options: list[tuple]
    num: int
    bucketed: bool
    spec: BucketSpec | None = None
    # The order each bucket file of a bucketed scan holds its rows in (its
    # `sorted_by`), in the block's column ids; the scan returns them in it when
    # each selected bucket is one file. None when the files are not known.
    sorted: tuple | None = None
    # How many files each bucket of such a scan spans (one per partition it
    # selects): past one, the order holds only where the extension merges them.
    sorted_files: int = 1
    # The hash rows are placed by: a shuffle's or a Spark-hash scan's "spark";
    # "hive" (or "hive v2", BucketSpec.family) for a Hive-hash scan the
    # extension reads bucketed, and for a side shuffled to match one.
    hash: str = "spark"
    # Read straight from a bucketed scan, through filters and projections
    # only: the partitioning bucket coalescing (Spark's, the extension's) can
    # shrink. A join's, aggregate's or window's output is not.
    scan: bool = False
    # Read from a table this package built (the extension keeps such scans
    # for a join on more than their bucket columns).
    package: bool = False
    # Trino: the grouping on more keys than the bucket columns that gave this
    # placement. Trino groups in place only where a reader wants the rows placed
    # by the bucket columns (a join, window or grouping on them); else it
    # exchanges them, as the finding says until such a reader settles it.
    pending: Finding | None = None


def settle(part: Part | None) -> None:
    """A reader takes `part` as it is placed: a grouping pending on it runs in place (Part.pending)."""
    if part is not None and part.pending is not None:
        for side in part.pending.sides:
            side.shuffle, side.reasons = False, []
        part.pending.suggestions = []


@dataclass
class Output:
    """What a FROM item gives the block that reads it, by output column."""

    relation: str | None = None
    part: Part | None = None
    types: dict[str, str | None] = field(default_factory=dict)
    base: dict[str, tuple[str | None, str]] = field(default_factory=dict)  # column -> (base relation, base column)
    notes: dict[str, list[str]] = field(default_factory=dict)  # column -> why it is not a plain pass-through column
    reasons: list[str] = field(default_factory=list)  # why the item has no usable bucketed partitioning
    bucketed: bool = False
    unknown: bool = False
    # No row: a filter no row passes, which Spark's optimizer plans as an empty relation (analyze.py).
    empty: bool = False
