"""Names and formats this package shares with the dbt macros and the Spark
extension: the one Python place for each. tests/test_contracts.py ties them
to their SQL twins (macros/) and their Scala twins (scala/Contracts.scala)."""

from __future__ import annotations

import re

#: Table properties that hold the partition-level metadata (format version 1,
#: docs/metadata.md). Written by macros/catalog/metadata.sql.
METADATA_PREFIX = "spark_bucketing."
FORMAT_VERSION_KEY = METADATA_PREFIX + "format_version"
SPEC_KEY = METADATA_PREFIX + "spec"
TABLE_KEY = METADATA_PREFIX + "table"
PARTITION_KEY_PREFIX = METADATA_PREFIX + "partition."
#: Format version 2: a partition's record in its own partition parameters
#: (written by the extension's switch, read by its records function).
PARTITION_RECORD_KEY = METADATA_PREFIX + "record"
#: Format version 2: the table property that sums up the partitions' specs.
SUMMARY_KEY = METADATA_PREFIX + "partitions"

#: The bucket id in a data file's name: the last `_<digits>` before the
#: extensions, as Spark reads it (BucketingUtils). It also reads Hive-style
#: names written by Spark (`00003_0_part-..._00003.c000.snappy.parquet`).
BUCKET_IN_NAME = re.compile(r".*_(\d+)(?:\..*)?$")
#: The bucket id in a Hive-hash table's file name as Hive, Trino and the
#: session extension's foreign tables read it: the leading number of
#: `000003_0`, `000003_0_copy_1`, Trino's `000003_0_<query>_<uuid>`, and the
#: Hive-style names Spark writes (`00003_0_part-..._00003.c000.snappy.parquet`).
HIVE_BUCKET_IN_NAME = re.compile(r"^(0\d+)_\d+.*")

#: The only name Spark's bucketed writer gives a file (both table kinds); the
#: extension reads a scan bucketed only when every file carries it.
SPARK_BUCKET_FILE_NAME = re.compile(r"^(?:(\d+)_0_)?part-.*_(\d+)\.c\d+(?:\..*)?$")

#: The extension's class and its per-plan switch (false: plan as stock Spark).
EXTENSION_CLASS = "sparkbucketing.BucketingExtensions"
EXTENSION_SWITCH = "spark_bucketing.extension.enabled"
#: False: joins of the package's tables on more than their bucket columns shuffle, as in stock Spark.
SUPERSET_KEYS_SWITCH = "spark_bucketing.extension.supersetJoinKeys"
#: The largest ratio of two bucket counts the extension joins at the larger count (the smaller side read once per
#: bucket of the larger); 1 turns it off.
CLONE_RATIO_SETTING = "spark_bucketing.extension.maxCloneRatio"
CLONE_RATIO_DEFAULT = "16"
#: On: declared-bucketed Hive tables this package did not write (Hive, Trino, stock Spark) are read bucketed ...
FOREIGN_TABLES_SWITCH = "spark_bucketing.extension.foreignTables"
#: ... each row checked against its file's bucket as it is read, unless this is false.
FOREIGN_TABLES_VERIFY = "spark_bucketing.extension.foreignTables.verify"
#: The statement the extension adds: many partitions to new folders in one metastore call.
SWITCH_STATEMENT = "spark_bucketing switch partitions"
#: The extension's statement that ends a commit: dead runs' folders under a table's `_bucketing/`, the run's own
#: unused folders, then the release of its commit lock (CleanRunFolders).
CLEAN_STATEMENT = "spark_bucketing clean folders"
#: ... marks a run choosing in a table's commit lock, then lists the lock's entries and reads the table's properties.
MARK_LOCK_STATEMENT = "spark_bucketing mark lock"
#: The request, in a comment after `DESCRIBE TABLE EXTENDED <table>`, that the extension answers with DESCRIBE's
#: rows, then the table's properties as rows of PROPERTY_ROW, the extension's switch as a row of SETTING_ROW and,
#: with `query as <query>`, the query's columns as rows of QUERY_COLUMN_ROW (stock Spark: DESCRIBE's rows alone).
DESCRIBE_REQUEST = "spark_bucketing describe"
PROPERTY_ROW = "# spark_bucketing property"
SETTING_ROW = "# spark_bucketing setting"
QUERY_COLUMN_ROW = "# spark_bucketing query column"
#: ... writes a query's rows into a bucketed folder with no catalog entry, as an INSERT into a bucketed table would.
WRITE_FOLDER_STATEMENT = "spark_bucketing write folder"
#: The table functions the extension adds: a bucketed folder's files and the rows their footers state ...
TABLE_FILES_FUNCTION = "spark_bucketing_files"
#: ... and a folder's rows, read as a table of its description reads them.
FOLDER_READ_FUNCTION = "spark_bucketing_folder"
#: ... and every partition's record of a table in metadata format 2.
PARTITION_RECORDS_FUNCTION = "spark_bucketing_records"

#: The most files of one bucket the extension merges in `sorted_by` order in place of a Sort (SortedBuckets); 1: off.
MERGED_FILES_SETTING = "spark_bucketing.extension.maxMergedFiles"
MERGED_FILES_DEFAULT = "1"  # off: the Sort measured faster (docs/benchmarks.md)

#: The SQL function the extension adds: Hive's bucketing v2 hash of its arguments (HiveHashV2).
HIVE_HASH_V2_FUNCTION = "spark_bucketing_hive_hash_v2"
#: ... Hive's own hash (GenericUDFHash), also the temporary function the macros create without the extension.
HIVE_HASH_FUNCTION = "spark_bucketing_hive_hash"
#: ... and Spark's own Hive v1 hash, the one its writer places a Hive table's rows by (HiveWriterHash).
HIVE_WRITER_HASH_FUNCTION = "spark_bucketing_hive_writer_hash"

#: Spark's setting that makes a bucketed scan report its sort order.
SORT_ORDERING_SETTING = "spark.sql.legacy.bucketedTableScan.outputOrdering"

#: Spark's other names for the types the hash families and the checker know.
TYPE_ALIASES = {
    "integer": "int",
    "long": "bigint",
    "short": "smallint",
    "byte": "tinyint",
    "bool": "boolean",
    "real": "float",
}

#: Column types whose Hive v1 hash Spark computes exactly as Hive does
#: (checked against Hive's ObjectInspectorUtils.getBucketNumber in
#: tests/test_hashing.py). SQL twin: spark_bucketing.hive_hash_types().
HIVE_HASH_TYPES = ("tinyint", "smallint", "int", "bigint", "string", "boolean", "date", "float", "double")

#: The bucket column types the session extension reads a Hive-hash table by, per Hive bucketing version: those it
#: hashes as Hive does (scala/HiveHashKeys.scala, checked against Hive's classes by tests/test_foreign_key_types.py);
#: a table bucketed on another type it reads unbucketed. A decimal of any precision and scale.
HIVE_READ_TYPES = {
    1: ("tinyint", "smallint", "int", "bigint", "boolean", "date", "float", "double", "string", "decimal", "timestamp"),
    2: ("tinyint", "smallint", "int", "bigint", "boolean", "date", "string"),
}


def normalize_type(type_name: str) -> str:
    t = type_name.strip().lower()
    return TYPE_ALIASES.get(t, t)
