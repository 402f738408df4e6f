"""A Hive metastore service on Postgres, as production catalogs run: a
Postgres 15 cluster of its own and the standalone metastore server from the
pyspark wheel (`org.apache.hadoop.hive.metastore.HiveMetaStore`), both on
loopback ports, stopped by their pids. Spark sessions, Thrift Servers and
dbt runs share it with `spark.hadoop.hive.metastore.uris`."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pyspark

from harness.ports import free_port, wait_for_port
from harness.spark import LOG4J_CONF, TEST_JVM_FLAGS

PG_BIN = Path("/usr/lib/postgresql/15/bin")
JDBC_JAR = Path("/usr/share/java/postgresql.jar")

# DataNucleus creates the schema on first use. With foreign keys on it adds
# them from a second connection while the first holds its transaction open,
# and Postgres makes that connection wait forever. Only the three constraint
# settings together kept it from adding them (seen: any two of them still
# added 28 foreign keys and hung). Hive's async logging needs a jar the wheel
# does not ship.
HIVE_SITE = {
    "javax.jdo.option.ConnectionDriverName": "org.postgresql.Driver",
    "javax.jdo.option.ConnectionUserName": "postgres",
    "javax.jdo.option.ConnectionPassword": "",
    "datanucleus.schema.autoCreateAll": "true",
    "datanucleus.schema.autoCreateConstraints": "false",
    "datanucleus.autoCreateConstraints": "false",
    "datanucleus.rdbms.constraintCreateMode": "JDO2",
    "hive.metastore.schema.verification": "false",
    "hive.async.log.enabled": "false",
}


def _as_postgres(cmd: list[str]) -> list[str]:
    """Postgres refuses to run as root."""
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


def _run(cmd: list[str]) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return proc.stdout


class MetastoreService:
    def __init__(self, warehouse: Path, jvm_flags: str = TEST_JVM_FLAGS):
        """`jvm_flags`: the server JVM's (tests start fast with theirs; benchmarks pass none)."""
        missing = [str(p) for p in (PG_BIN / "initdb", JDBC_JAR) if not p.exists()]
        if missing:
            raise RuntimeError(f"{', '.join(missing)} missing: scripts/test installs Postgres 15 and its JDBC driver")
        self.warehouse = warehouse
        self.jvm_flags = jvm_flags
        # Not under pytest's temporary folders: the postgres user cannot enter them.
        self.base = Path(tempfile.mkdtemp(prefix="sb-metastore-"))
        self.pg_port = free_port()
        self.port = free_port()
        self.uris = f"thrift://127.0.0.1:{self.port}"
        self.log = self.base / "metastore.log"
        self.server: subprocess.Popen | None = None

    def start(self, timeout: float = 120) -> None:
        data = str(self.base / "pg")
        if os.geteuid() == 0:
            shutil.chown(self.base, "postgres")
        _run(_as_postgres([str(PG_BIN / "initdb"), "-D", data, "-A", "trust", "-U", "postgres"]))
        options = f"-p {self.pg_port} -k {self.base} -c listen_addresses=127.0.0.1 -c fsync=off"
        pg_log = str(self.base / "pg.log")
        _run(_as_postgres([str(PG_BIN / "pg_ctl"), "-D", data, "-o", options, "-l", pg_log, "-w", "start"]))
        self.query("create database metastore", database="postgres")
        conf = self.base / "conf"
        conf.mkdir()
        site = {
            **HIVE_SITE,
            "javax.jdo.option.ConnectionURL": f"jdbc:postgresql://127.0.0.1:{self.pg_port}/metastore",
            "hive.metastore.warehouse.dir": self.warehouse.as_uri(),
        }
        (conf / "hive-site.xml").write_text(
            "<configuration>\n"
            + "".join(f"  <property><name>{k}</name><value>{v}</value></property>\n" for k, v in site.items())
            + "</configuration>\n"
        )
        jars = Path(pyspark.__file__).parent / "jars"
        cmd = [
            "java",
            *self.jvm_flags.split(),
            f"-Dlog4j2.configurationFile={LOG4J_CONF}",
            "-cp",
            f"{conf}:{jars}/*:{JDBC_JAR}",
            "org.apache.hadoop.hive.metastore.HiveMetaStore",
            "-p",
            str(self.port),
        ]
        with open(self.log, "wb") as log:
            self.server = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        wait_for_port(self.port, self.server, self.log, timeout, "the metastore server")

    def spark_conf(self) -> dict[str, str]:
        """What a Spark session, a Thrift Server or a dbt profile sets to use this service."""
        return {"spark.hadoop.hive.metastore.uris": self.uris, "spark.sql.warehouse.dir": str(self.warehouse)}

    def query(self, sql: str, database: str = "metastore") -> str:
        """A statement in the metastore's own database (psql's unaligned output)."""
        cmd = ["psql", "-At", "-h", "127.0.0.1", "-p", str(self.pg_port), "-U", "postgres", database, "-c", sql]
        return _run(cmd)

    def stop(self) -> None:
        if self.server and self.server.poll() is None:
            self.server.terminate()
            try:
                self.server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.server.kill()
        pg_ctl = [str(PG_BIN / "pg_ctl"), "-D", str(self.base / "pg"), "-m", "immediate", "stop"]
        subprocess.run(_as_postgres(pg_ctl), capture_output=True)
        shutil.rmtree(self.base, ignore_errors=True)
