"""The test Spark session and helpers to look at what it wrote."""

from __future__ import annotations

import logging
import re
from collections import Counter
from pathlib import Path
from urllib.parse import urlparse

from pyspark.sql import SparkSession

REPO_ROOT = Path(__file__).resolve().parents[2]
LOG4J_CONF = REPO_ROOT / "scripts" / "log4j2.properties"
BUCKET_IN_NAME = re.compile(r".*_(\d+)(?:\..*)?$")  # Spark's own pattern


def quiet_python_logs() -> None:
    # PySpark logs every failed query with its stack; expected failures are part of the tests.
    from pyspark.logger import PySparkLogger

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).disabled = True
    logging.getLogger("py4j").setLevel(logging.ERROR)


def make_session(base: Path, **conf: str) -> SparkSession:
    builder = (
        SparkSession.builder.master("local[2]")
        .appName("spark-bucketing-tests")
        .enableHiveSupport()
        .config("spark.sql.warehouse.dir", str(base / "warehouse"))
        .config(
            "spark.hadoop.javax.jdo.option.ConnectionURL",
            f"jdbc:derby:;databaseName={base / 'metastore_db'};create=true",
        )
        .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={base} -Dlog4j2.configurationFile={LOG4J_CONF}")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.autoBroadcastJoinThreshold", "-1")
        .config("spark.log.structuredLogging.enabled", "false")
    )
    for key, value in conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    quiet_python_logs()
    return session


def local_path(location: str) -> Path:
    return Path(urlparse(location).path)


def table_location(spark: SparkSession, table: str) -> Path:
    rows = spark.sql(f"describe table extended {table}").collect()
    return local_path(next(r.data_type for r in rows if r.col_name == "Location"))


def data_files(location: Path) -> list[Path]:
    return sorted(
        p
        for p in location.rglob("*")
        if p.is_file() and not any(part.startswith((".", "_")) for part in p.relative_to(location).parts)
    )


def files_per_bucket(location: Path) -> Counter:
    """(partition directory, bucket id) -> number of files; bucket None for names without one."""
    counts: Counter = Counter()
    for f in data_files(location):
        m = BUCKET_IN_NAME.match(f.name)
        counts[(str(f.parent.relative_to(location)), int(m.group(1)) if m else None)] += 1
    return counts
