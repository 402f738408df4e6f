"""A local Spark Thrift Server started from the pyspark wheel itself, with a
metastore and warehouse of its own (Derby admits one JVM per metastore), or
a metastore service it shares (`metastore`)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pyspark

from harness.metastore_service import MetastoreService
from harness.ports import free_port, stop_group, wait_for_port
from harness.spark import LOG4J_CONF, TEST_JVM_FLAGS


class ThriftServer:
    def __init__(
        self,
        base: Path,
        master: str = "local[2]",
        conf: dict[str, str] | None = None,
        metastore: MetastoreService | None = None,
        jvm_flags: str = TEST_JVM_FLAGS,
    ):
        """`jvm_flags`: the server JVM's (tests start fast with theirs; benchmarks pass none)."""
        self.base = base
        self.jvm_flags = jvm_flags
        self.master = master
        self.conf = {**(conf or {}), **(metastore.spark_conf() if metastore else {})}
        self.port = free_port()
        self.warehouse = metastore.warehouse if metastore else base / "warehouse"
        self.log = base / "thrift-server.log"
        self.process: subprocess.Popen | None = None

    def start(self, timeout: float = 240) -> None:
        spark_home = Path(pyspark.__file__).parent
        env = {
            **os.environ,
            "SPARK_HOME": str(spark_home),
            "SPARK_LOG_DIR": str(self.base),
            "SPARK_LOCAL_IP": "127.0.0.1",
        }
        cmd = [
            str(spark_home / "bin" / "spark-submit"),
            "--class",
            "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2",
            "--master",
            self.master,
            "--conf",
            "spark.driver.host=127.0.0.1",
            "--conf",
            "spark.executor.memory=1g",
            "--conf",
            f"spark.sql.warehouse.dir={self.warehouse}",
            "--conf",
            "spark.hadoop.javax.jdo.option.ConnectionURL="
            f"jdbc:derby:;databaseName={self.base / 'metastore_db'};create=true",
            "--conf",
            f"spark.driver.extraJavaOptions=-Dderby.system.home={self.base} -Dlog4j2.configurationFile={LOG4J_CONF}"
            f" {self.jvm_flags}",
            "--conf",
            f"spark.executor.extraJavaOptions={self.jvm_flags}",
            "--conf",
            "spark.ui.enabled=false",
            "--conf",
            "spark.sql.shuffle.partitions=3",
            *[arg for key, value in self.conf.items() for arg in ("--conf", f"{key}={value}")],
            "--hiveconf",
            f"hive.server2.thrift.port={self.port}",
            "--hiveconf",
            "hive.server2.thrift.bind.host=127.0.0.1",
            "spark-internal",
        ]
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            wait_for_port(self.port, self.process, self.log, timeout, "thrift server")
        except RuntimeError:
            self.stop()
            raise

    def stop(self) -> None:
        stop_group(self.process)
