"""The test Spark session and helpers to look at what it wrote."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession

from spark_bucketing.files import BUCKET_IN_NAME, data_files, files_per_bucket, local_path  # noqa: F401
from spark_bucketing.sparklogs import quiet_pyspark_logs

REPO_ROOT = Path(__file__).resolve().parents[2]
LOG4J_CONF = REPO_ROOT / "scripts" / "log4j2.properties"


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
    quiet_pyspark_logs()
    return session


def table_location(spark: SparkSession, table: str) -> Path:
    rows = spark.sql(f"describe table extended {table}").collect()
    return local_path(next(r.data_type for r in rows if r.col_name == "Location"))
