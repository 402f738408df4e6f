"""When a sort-merge join can skip its Sort: Spark returns a bucketed scan's
rows in `sorted_by` order only with
`spark.sql.legacy.bucketedTableScan.outputOrdering=true` (or, for the
package's tables, the session extension) and when every selected bucket is
one file, which the package's metadata can tell."""

from __future__ import annotations

from spark_bucketing.checker.engines import EngineSettings
from spark_bucketing.checker.model import Part
from spark_bucketing.checker.relations import RelationInfo
from spark_bucketing.contracts import SORT_ORDERING_SETTING
from spark_bucketing.metadata import BucketSpec, PartitionRecord

SETTING = SORT_ORDERING_SETTING


def scan_order(info: RelationInfo, spec: BucketSpec, read: list[PartitionRecord], alias: str) -> tuple | None:
    """The (alias, column) order a scan returns rows in, () for none, None
    when the files are not known (no partition records)."""
    if not info.partitions:
        return None
    if not spec.sorted_by:
        return ()
    # Each selected partition adds a file to every bucket: one partition at most.
    records = read if info.partition_by else info.partitions
    if len(records) != 1:
        return ()
    record = records[0]
    if record.spec.key() != spec.key() or record.files > spec.buckets:
        return ()
    return tuple((alias, c.lower()) for c in spec.sorted_by)


def required_order(part: Part, keys: list) -> tuple:
    """The order a sort-merge join asks of a side: its keys, put in the
    partitioning's column order when they are exactly those columns."""
    for opt in part.options:
        if set(opt) == set(keys) and len(opt) == len(keys):
            return tuple(opt)
    return tuple(keys)


def sort_state(part: Part | None, keys: list, shuffled: bool, settings: EngineSettings, num: int) -> str | None:
    """Whether a sort-merge join side joined in `num` partitions needs its
    Sort: "needed", "skipped", "skippable" (a setting would skip it), or None
    when the files are not known."""
    if shuffled:
        return "needed"
    if part is None or part.sorted is None:
        return None
    required = required_order(part, keys)
    if part.sorted[: len(required)] != required or part.num > num:
        # Read in fewer tasks than buckets (coalesced), a task holds several sorted buckets. Read in
        # more (the extension's cloned read), a task holds part of one bucket, in its order.
        return "needed"
    # The extension states the order of a package table's scan (SortedBuckets), under adaptive execution.
    by_extension = settings.extension and settings.adaptive and part.package
    return "skipped" if settings.sorted_scan_output or by_extension else "skippable"
