"""The test Spark session and helpers to look at what it wrote."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

from pyspark.sql import SparkSession

from harness import class_archive
from spark_bucketing import extension
from spark_bucketing.files import BUCKET_IN_NAME, data_files, local_path  # noqa: F401 (re-exported for tests)
from spark_bucketing.sparksession import QUIET_LOG4J, local_session

REPO_ROOT = Path(__file__).resolve().parents[1]
LOG4J_CONF = QUIET_LOG4J
# The test JVMs compile with C1 only and collect with one thread: the suite
# runs four workers' JVMs on two cores over small data, where C2's compile
# threads and parallel GC cost more CPU than they save (test_merge.py alone:
# 434 CPU-seconds without, 339 with). C1 alone reserves a 48 MB code cache,
# which Spark's generated classes fill: the JVM then spends its time flushing
# and recompiling (test_merge.py's JVM: 143 CPU-seconds with 48 MB, 94 with
# 256 MB). They start from the class archive where scripts/test made it
# (harness/class_archive.py). The benchmarks' dbt processes keep the JVM's defaults.
# SB_TEST_JVM_FLAGS overrides (empty: the defaults).
TEST_JVM_FLAGS = os.environ.get("SB_TEST_JVM_FLAGS", class_archive.BASE_JVM_FLAGS + class_archive.jvm_flags())


# The embedded Hive metastore keeps a store (a HiveConf copy that parses Hadoop's default XML files,
# and a DataNucleus persistence manager) per thread. Spark runs each query's result stage and each
# shuffle's submission in pools whose core size is these thresholds (1,024 by default), so every query
# started a new thread and the insert commands that ran in it a new store: 15% of a worker JVM's CPU
# over a loop of incremental runs (Java Flight Recorder). With 16 the pools' threads are reused; a
# metastore service (the warehouses the package runs on) keeps its stores server-side.
THREAD_REUSE = {
    "spark.sql.resultQueryStage.maxThreadThreshold": "16",
    "spark.sql.shuffleExchange.maxThreadThreshold": "16",
}


def make_session(base: Path, jvm_flags: str = TEST_JVM_FLAGS, **conf: str) -> SparkSession:
    """The test session: small shuffles, no broadcast joins (tests probe join
    plans), threads reused (THREAD_REUSE). The session extension is loaded but switched off: the tests that
    want it (test_extension.py) switch it on (extension_on)."""
    settings = {
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.autoBroadcastJoinThreshold": "-1",
        **THREAD_REUSE,
        **extension.spark_settings(extension.build_jar()),
        extension.SWITCH: "false",
        **conf,
    }
    return local_session(base, LOG4J_CONF, jvm_flags, **settings)


@contextmanager
def extension_on(spark: SparkSession, on: bool = True):
    """The session extension switched on (or off) for the block."""
    before = spark.conf.get(extension.SWITCH)
    spark.conf.set(extension.SWITCH, str(on).lower())
    try:
        yield
    finally:
        spark.conf.set(extension.SWITCH, before)


@contextmanager
def session_settings(spark: SparkSession, conf: dict[str, str]):
    """Session settings for the block, each put back as it was after."""
    before = {key: spark.conf.get(key, None) for key in conf}
    for key, value in conf.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def table_location(spark: SparkSession, table: str) -> Path:
    rows = spark.sql(f"describe table extended {table}").collect()
    return local_path(next(r.data_type for r in rows if r.col_name == "Location"))


def describe(spark: SparkSession, table: str) -> dict[str, str]:
    """DESCRIBE TABLE EXTENDED as {row name: value}."""
    return {r.col_name: r.data_type for r in spark.sql(f"describe table extended {table}").collect()}


def sql_string(text: str) -> str:
    """`text` as a single-quoted string literal, backslashes and quotes
    escaped: read the same by Spark SQL and by Jinja."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
