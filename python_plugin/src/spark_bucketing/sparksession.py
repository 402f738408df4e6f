"""A local Spark session with Hive support and its metastore (Derby) and
warehouse in one folder; quiet logs."""

from __future__ import annotations

import logging
from pathlib import Path

#: Spark's JVM logging at ERROR (log4j2's file format), shipped with the package: a profile points
#: `-Dlog4j2.configurationFile` at it (`spark-bucketing log4j` prints its path; docs/cluster.md).
QUIET_LOG4J = Path(__file__).with_name("log4j2.properties")


def quiet_pyspark_logs() -> None:
    """PySpark 4 logs every failed query with its stack from Python; the callers report failures themselves."""
    logging.getLogger("py4j").setLevel(logging.ERROR)
    try:
        from pyspark.logger import PySparkLogger
    except ImportError:  # PySpark 3.5: no such logger
        return
    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).disabled = True


def local_session(state_dir: Path, log4j_conf: Path | None = None, jvm_flags: str = "", **conf: str):
    """The session for `state_dir` (or the one already running in this process)."""
    from pyspark.sql import SparkSession

    base = Path(state_dir).resolve()
    java_options = f"-Dderby.system.home={base}" + (f" -Dlog4j2.configurationFile={log4j_conf}" if log4j_conf else "")
    java_options += f" {jvm_flags}" if jvm_flags else ""
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("spark-bucketing")
        .enableHiveSupport()
        .config("spark.sql.warehouse.dir", str(base / "warehouse"))
        .config(
            "spark.hadoop.javax.jdo.option.ConnectionURL",
            f"jdbc:derby:;databaseName={base / 'metastore_db'};create=true",
        )
        .config("spark.driver.extraJavaOptions", java_options)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.log.structuredLogging.enabled", "false")
    )
    for key, value in conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    quiet_pyspark_logs()
    return session
