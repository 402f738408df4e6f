"""Engine models: when a side of a join or an aggregation needs a shuffle.

Spark 4 (facts doc, section 5) and Trino's Hive connector. The Spark model is
checked against Spark's physical plans by tests/test_checker_corpus.py."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from spark_bucketing.contracts import (
    CLONE_RATIO_DEFAULT,
    CLONE_RATIO_SETTING,
    FOREIGN_TABLES_SWITCH,
    HIVE_READ_TYPES,
    MERGED_FILES_DEFAULT,
    MERGED_FILES_SETTING,
    SORT_ORDERING_SETTING,
    SUPERSET_KEYS_SWITCH,
    normalize_type,
)
from spark_bucketing.extension import EXTENSION_CLASS, SWITCH
from spark_bucketing.metadata import BucketSpec

TRINO_UNBUCKETABLE_TYPES = ("timestamp", "decimal", "char", "binary", "varchar(")

# Reason codes: stable, each documented in docs/checker.md (tests/test_docs.py).
NOT_BUCKETED = "NOT_BUCKETED"
HIVE_HASH = "HIVE_HASH_NOT_USED_BY_SPARK"
FOREIGN_TABLE = "FOREIGN_TABLE_NOT_READ_BUCKETED"
HIVE_V2_FLOAT_KEY = "HIVE_V2_FLOATING_POINT_KEY"
HIVE_KEY_TYPE = "HIVE_KEY_TYPE_READ_UNBUCKETED"
SPARK_HASH_IN_TRINO = "SPARK_HASH_NOT_USED_BY_TRINO"
TRINO_KEY_TYPE = "KEY_TYPE_NOT_BUCKETABLE_IN_TRINO"
BUCKETING_DISABLED = "BUCKETING_DISABLED"
KEYS_NOT_BUCKET_COLUMNS = "KEYS_NOT_BUCKET_COLUMNS"
KEYS_SUPERSET = "KEYS_SUPERSET_OF_BUCKET_COLUMNS"
KEY_POSITIONS = "KEY_POSITIONS_DIFFER"
KEYS_FIXED_BY_LITERAL = "KEYS_FIXED_BY_LITERAL"
NULL_AWARE_ANTI_JOIN = "NULL_AWARE_ANTI_JOIN"
KEY_EXPRESSION = "KEY_EXPRESSION"
KEY_CAST = "KEY_CAST"
KEY_TYPE_MISMATCH = "KEY_TYPE_MISMATCH"
UNION = "UNION"
AGGREGATE = "AGGREGATE_ON_OTHER_COLUMNS"
DISTINCT_EXPAND = "DISTINCT_AGGREGATES_EXPAND"
EMPTY_SUBQUERY = "SUBQUERY_HAS_NO_ROWS"
JOIN_OUTPUT = "SHUFFLED_JOIN_OUTPUT"
BUCKET_COUNT_MISMATCH = "BUCKET_COUNT_MISMATCH"
HASH_DIFFERS = "BUCKET_HASH_DIFFERS"
MIXED_PARTITION_SPECS = "MIXED_PARTITION_SPECS"
EVOLVING_TABLE = "EVOLVING_TABLE_DECLARED_UNBUCKETED"
UNKNOWN_RELATION = "UNKNOWN_RELATION"
UNKNOWN_COLUMN = "UNKNOWN_COLUMN"
UNKNOWN_BUCKETING = "UNKNOWN_BUCKETING"


# The Spark version the models run on: a live session's (`select version()`, not a setting) or
# `--spark-version`; unstated, the newest supported. Where planners differ by version, the model follows.
SPARK_VERSION = "spark.version"
NEWEST_SPARK = (4, 3)
OLDEST_SPARK = (3, 5)


def spark_version(text: str, strict: bool = True) -> tuple[int, int]:
    """`major.minor` of a version string ("4.0.5", "4.1", "3.5.9 <commit>"); ValueError where it names
    none, or (`strict`, a stated version) a Spark outside the modelled range. Not strict (a live
    session's), a newer Spark is modelled as the newest, an older one as the oldest."""
    m = re.match(r"\s*(\d+)\.(\d+)", text)
    if not m:
        raise ValueError(f"a Spark version is major.minor[.patch], like 4.0 or 3.5.9; got {text!r}")
    version = (int(m[1]), int(m[2]))
    if strict and not OLDEST_SPARK <= version <= NEWEST_SPARK:
        raise ValueError(
            f"Spark {text.strip()} is outside the versions the checker models (3.5 to 4.3): "
            "give --spark-version within them"
        )
    return min(max(version, OLDEST_SPARK), NEWEST_SPARK)


# The settings the Spark model reads that a session can tell (`SET key`),
# read through the connection dbt's models run on (connection.py).
# spark.sql.ansi.enabled among them: dbt-spark asks for false on each of its
# connections, which a session (method session) takes and a Spark Thrift
# Server ignores, its sessions keeping the server's (Spark 4: true).
# Whether the session loads the extension: all that Trino's model reads of the sessions that write the tables.
EXTENSION_KEYS = ("spark.sql.extensions", SWITCH)
SESSION_KEYS = (
    "spark.sql.ansi.enabled",
    *EXTENSION_KEYS,
    FOREIGN_TABLES_SWITCH,
    SUPERSET_KEYS_SWITCH,
    CLONE_RATIO_SETTING,
    MERGED_FILES_SETTING,
    "spark.sql.sources.bucketing.enabled",
    "spark.sql.adaptive.enabled",
    "spark.sql.bucketing.coalesceBucketsInJoin.enabled",
    "spark.sql.bucketing.coalesceBucketsInJoin.maxBucketRatio",
    "spark.sql.requireAllClusterKeysForCoPartition",
    "spark.sql.unionOutputPartitioning",
    SORT_ORDERING_SETTING,
    "spark.sql.shuffle.partitions",
    SPARK_VERSION,
)


@dataclass
class EngineSettings:
    engine: str = "spark"
    conf: dict[str, str] = field(default_factory=dict)

    def under(self, session: dict[str, str]) -> EngineSettings:
        """These settings over a session's: what is stated wins."""
        return EngineSettings(self.engine, {**session, **self.conf})

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
    def foreign_tables(self) -> bool:
        """The extension reads declared-bucketed Hive tables this package did not write bucketed."""
        return self.extension and self._get(FOREIGN_TABLES_SWITCH, "false") == "true"

    @property
    def ansi(self) -> bool:
        # Unstated and unread (no live session): dbt-spark's own ask, false.
        return self._get("spark.sql.ansi.enabled", "false") == "true"

    @property
    def adaptive(self) -> bool:
        return self._get("spark.sql.adaptive.enabled", "true") == "true"

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
    def spark_version(self) -> tuple[int, int]:
        stated = self._get(SPARK_VERSION, "")
        return spark_version(stated, strict=False) if stated else NEWEST_SPARK

    @property
    def union_output_partitioning(self) -> bool:
        """A UNION ALL keeps its children's placement where they share one: Spark 4.1's
        spark.sql.unionOutputPartitioning (on by default); before 4.1 a union's placement is unknown."""
        return self.spark_version >= (4, 1) and self._get("spark.sql.unionOutputPartitioning", "true") == "true"

    @property
    def superset_join_keys(self) -> bool:
        """The extension joins two package tables on more than their bucket
        columns bucket by bucket (SupersetKeyJoins), under adaptive execution."""
        return self.extension and self.adaptive and self._get(SUPERSET_KEYS_SWITCH, "true") == "true"

    @property
    def max_clone_ratio(self) -> int:
        """The largest ratio of two counts the extension joins at the larger (CloneBucketsInJoins)."""
        return int(self._get(CLONE_RATIO_SETTING, CLONE_RATIO_DEFAULT))

    @property
    def max_merged_files(self) -> int:
        """The most files of a bucket the extension merges in place of a Sort (SortedBuckets)."""
        return int(self._get(MERGED_FILES_SETTING, MERGED_FILES_DEFAULT))

    def without_merged_files(self) -> EngineSettings:
        """These settings with merging off, as the extension plans a query that
        asks which file a row came from (input_file_name())."""
        return EngineSettings(self.engine, {**self.conf, MERGED_FILES_SETTING: "1"})

    @property
    def sorted_scan_output(self) -> bool:
        return self._get(SORT_ORDERING_SETTING, "false") == "true"

    @property
    def shuffle_partitions(self) -> int:
        return int(self._get("spark.sql.shuffle.partitions", "200"))


def usable_spec(
    spec: BucketSpec | None, key_types: list[str | None], settings: EngineSettings, built_by_package: bool = False
) -> tuple[bool, list[str]]:
    """Does the engine read a table with this declared spec as bucketed?
    Spark reads a Hive-hash table bucketed only through the extension: a
    table this package built (its files carry Spark's bucket names), or with
    foreign tables on, any other (taken to carry names Hive and Trino read);
    a Hive v2 one not on a float or double column (v2 hashes -0.0 and 0.0
    apart, which Spark's joins take as one key), and a Hive-hash one only on
    the types the extension hashes as Hive does (HIVE_READ_TYPES)."""
    if spec is None:
        return False, [NOT_BUCKETED]
    if settings.engine == "spark":
        if not reads_hash(spec, settings):
            return False, [HIVE_HASH]
        if spec.hash != "spark" and not (built_by_package or settings.foreign_tables):
            return False, [FOREIGN_TABLE]
        if spec.family == "hive v2" and any(t and t.lower() in ("float", "real", "double") for t in key_types):
            return False, [HIVE_V2_FLOAT_KEY]
        if spec.hash == "hive" and any(t and not hive_readable_type(t, spec.version) for t in key_types):
            return False, [HIVE_KEY_TYPE]
        if not settings.bucketing_enabled:
            return False, [BUCKETING_DISABLED]
        return True, []
    if not reads_hash(spec, settings):
        return False, [SPARK_HASH_IN_TRINO]
    if any(t and t.lower().startswith(TRINO_UNBUCKETABLE_TYPES) for t in key_types):
        return False, [TRINO_KEY_TYPE]
    return True, []


def reads_hash(spec: BucketSpec, settings: EngineSettings) -> bool:
    """Whether the engine reads a table of this spec's hash family as bucketed, nothing else considered: Spark
    its own hash, and Hive's through the session extension; Trino Hive's. usable_spec's first rule, and the
    gate's (gate.py)."""
    if settings.engine == "spark":
        return spec.hash == "spark" or settings.extension
    return spec.hash == "hive"


def hive_readable_type(type_name: str, version: int) -> bool:
    """Whether the extension reads a Hive-hash table bucketed on this type (HIVE_READ_TYPES: it hashes it as Hive
    does); a char or varchar is not a string there."""
    t = normalize_type(type_name)
    return (t.split("(")[0] if t.startswith("decimal") else t) in HIVE_READ_TYPES[2 if version == 2 else 1]


def power_of_two_multiple(a: int, b: int) -> bool:
    hi, lo = max(a, b), min(a, b)
    if hi % lo:
        return False
    r = hi // lo
    return r & (r - 1) == 0


def joined_count(a: int, b: int, both_scans: bool, hash_family: str, settings: EngineSettings) -> int | None:
    """The partition count in which two co-partitioned sides with `a` and `b`
    partitions join without a shuffle, or None when one side is shuffled.
    Counts differ without a shuffle only between two bucketed scans."""
    if a == b:
        return a
    if not both_scans:
        return None
    if settings.engine == "trino":
        return min(a, b) if power_of_two_multiple(a, b) else None
    ratio = settings.max_bucket_ratio
    hi, lo = max(a, b), min(a, b)
    if settings.extension and settings.adaptive:
        # The extension reads both scans in gcd(a, b) tasks, either hash family (CoalesceBucketsInJoins) ...
        g = math.gcd(a, b)
        if g > 1 and a // g <= ratio and b // g <= ratio:
            return g
        # ... or, past that ratio, the smaller once per bucket of the larger (CloneBucketsInJoins).
        return hi if hi % lo == 0 and hi // lo <= settings.max_clone_ratio else None
    # Spark's CoalesceBucketsInJoin: its own scans only, one count a multiple of the other.
    ok = hash_family == "spark" and settings.coalesce_enabled and hi % lo == 0 and hi // lo <= ratio
    return lo if ok else None
