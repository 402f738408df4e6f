"""Engine models: when a side of a join or an aggregation needs a shuffle.

Spark 4 (facts doc, section 5) and Trino's Hive connector. The Spark model is
checked against Spark's physical plans by tests/test_checker_corpus.py."""

from __future__ import annotations

from dataclasses import dataclass, field

from spark_bucketing.extension import EXTENSION_CLASS, SWITCH
from spark_bucketing.metadata import BucketSpec

TRINO_UNBUCKETABLE_TYPES = ("timestamp", "decimal", "char", "binary", "varchar(")

# Reason codes (stable, documented in the README).
NOT_BUCKETED = "NOT_BUCKETED"
HIVE_HASH = "HIVE_HASH_NOT_USED_BY_SPARK"
HIVE_HASH_NOT_PRUNED = "HIVE_HASH_NOT_PRUNED_BY_SPARK"
SPARK_HASH_IN_TRINO = "SPARK_HASH_NOT_USED_BY_TRINO"
TRINO_KEY_TYPE = "KEY_TYPE_NOT_BUCKETABLE_IN_TRINO"
BUCKETING_DISABLED = "BUCKETING_DISABLED"
KEYS_NOT_BUCKET_COLUMNS = "KEYS_NOT_BUCKET_COLUMNS"
KEYS_SUPERSET = "KEYS_SUPERSET_OF_BUCKET_COLUMNS"
KEY_POSITIONS = "KEY_POSITIONS_DIFFER"
KEY_EXPRESSION = "KEY_EXPRESSION"
KEY_CAST = "KEY_CAST"
KEY_TYPE_MISMATCH = "KEY_TYPE_MISMATCH"
UNION = "UNION"
AGGREGATE = "AGGREGATE_ON_OTHER_COLUMNS"
WINDOW = "WINDOW_ON_OTHER_COLUMNS"
JOIN_OUTPUT = "SHUFFLED_JOIN_OUTPUT"
BUCKET_COUNT_MISMATCH = "BUCKET_COUNT_MISMATCH"
HASH_DIFFERS = "BUCKET_HASH_DIFFERS"
OTHER_SIDE_SHUFFLED = "OTHER_SIDE_DECIDES"
MIXED_PARTITION_SPECS = "MIXED_PARTITION_SPECS"
EVOLVING_TABLE = "EVOLVING_TABLE_DECLARED_UNBUCKETED"
UNKNOWN_RELATION = "UNKNOWN_RELATION"
UNKNOWN_COLUMN = "UNKNOWN_COLUMN"
UNKNOWN_BUCKETING = "UNKNOWN_BUCKETING"
PARSE_ERROR = "PARSE_ERROR"
BROADCAST_POSSIBLE = "BROADCAST_NOT_MODELLED"


@dataclass
class EngineSettings:
    engine: str = "spark"
    conf: dict[str, str] = field(default_factory=dict)

    def _get(self, key: str, default: str) -> str:
        return str(self.conf.get(key, default)).strip().lower()

    @property
    def bucketing_enabled(self) -> bool:
        return self._get("spark.sql.sources.bucketing.enabled", "true") == "true"

    @property
    def extension(self) -> bool:
        """The session extension reads the package's Hive-hash tables bucketed:
        loaded through spark.sql.extensions and not switched off, or stated
        with the switch (`--extension`)."""
        switch = self._get(SWITCH, "")
        if switch:
            return switch == "true"
        return EXTENSION_CLASS.lower() in self._get("spark.sql.extensions", "")

    @property
    def ansi(self) -> bool:
        # dbt-spark sets spark.sql.ansi.enabled=false on every connection, whatever the profile says.
        return self._get("spark.sql.ansi.enabled", "false") == "true"

    @property
    def coalesce_enabled(self) -> bool:
        return self._get("spark.sql.bucketing.coalesceBucketsInJoin.enabled", "false") == "true"

    @property
    def max_bucket_ratio(self) -> int:
        return int(self._get("spark.sql.bucketing.coalesceBucketsInJoin.maxBucketRatio", "4"))

    @property
    def require_all_cluster_keys(self) -> bool:
        return self._get("spark.sql.requireAllClusterKeysForCoPartition", "true") == "true"

    @property
    def sorted_scan_output(self) -> bool:
        return self._get("spark.sql.legacy.bucketedTableScan.outputOrdering", "false") == "true"

    @property
    def shuffle_partitions(self) -> int:
        return int(self._get("spark.sql.shuffle.partitions", "200"))


def usable_spec(
    spec: BucketSpec | None, key_types: list[str | None], settings: EngineSettings, built_by_package: bool = False
) -> tuple[bool, list[str]]:
    """Does the engine read a table with this declared spec as bucketed?
    Spark reads a Hive-hash table bucketed only through the extension, and
    only a table this package built (its files carry Spark's bucket names)."""
    if spec is None:
        return False, [NOT_BUCKETED]
    if settings.engine == "spark":
        if spec.hash != "spark" and not (settings.extension and built_by_package):
            return False, [HIVE_HASH]
        if not settings.bucketing_enabled:
            return False, [BUCKETING_DISABLED]
        return True, []
    if spec.hash != "hive":
        return False, [SPARK_HASH_IN_TRINO]
    if any(t and t.lower().startswith(TRINO_UNBUCKETABLE_TYPES) for t in key_types):
        return False, [TRINO_KEY_TYPE]
    return True, []


def power_of_two_multiple(a: int, b: int) -> bool:
    hi, lo = max(a, b), min(a, b)
    if hi % lo:
        return False
    r = hi // lo
    return r & (r - 1) == 0


def counts_compatible(a: int, b: int, both_bucketed: bool, hash_family: str, settings: EngineSettings) -> bool:
    """Can two co-partitioned sides with `a` and `b` partitions join without a shuffle?"""
    if a == b:
        return True
    if not both_bucketed or (settings.engine == "spark" and hash_family != "spark"):
        # Spark coalesces buckets of its own scans only; the extension's Hive-hash scans need equal counts.
        return False
    if settings.engine == "trino":
        return power_of_two_multiple(a, b)
    hi, lo = max(a, b), min(a, b)
    return settings.coalesce_enabled and hi % lo == 0 and hi // lo <= settings.max_bucket_ratio
