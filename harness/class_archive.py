"""A class-data-sharing archive for the test JVMs (`python -m harness.class_archive`, run by scripts/test).

A Spark JVM loads and verifies thousands of classes from PySpark's jars before its first query; the suite
starts about 40 of them (its workers, and the `dbt run` processes, Thrift Server and cluster of the tests
that need processes). A JVM started with the archive maps those classes from one file instead: measured
here, a session's start and first queries took 7-8 CPU-seconds instead of 12-14, and 4-4.5 s instead of
7-9. Making it takes about 30 s, once per virtualenv.
The archive holds the classes a JVM of this virtualenv's PySpark and the extension's jar loads; a JVM of
another class path (the clean-install test's own PySpark) ignores it, quietly. The flags are added only
where the archive exists, so a run without it is as before, only slower."""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import tempfile
from pathlib import Path

from spark_bucketing import extension

# The flags every test JVM starts with (harness/spark.py says why); the archive is made with them.
BASE_JVM_FLAGS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:ReservedCodeCacheSize=256m"
# In the virtualenv: its PySpark's jars are the class path the archive is for, and it goes with them.
FOLDER = Path(sys.prefix)

# The SQL shapes the tests' JVMs start with (the extension loaded, as in every test session): Hive DDL,
# partitioned and bucketed writes in Parquet and ORC, reads, a join, an aggregation, a window, listings.
WORKLOAD = [
    "create database if not exists warm",
    "create table warm.t (k int, v string) using parquet",
    "insert into warm.t select cast(id as int), cast(id as string) from range(100)",
    "create table warm.b (k int, v string, p int) using parquet partitioned by (p) clustered by (k) into 4 buckets",
    "insert into warm.b select cast(id as int), cast(id as string), cast(id % 2 as int) from range(100)",
    "create table warm.o (k int, v string) stored as orc",
    "insert into warm.o select cast(id as int), cast(id as string) from range(100)",
    "select b.p, count(*), max(o.v) from warm.b b join warm.t t on b.k = t.k join warm.o o on o.k = t.k group by b.p",
    "select k, row_number() over (partition by p order by v) from warm.b",
    "show partitions warm.b",
    "describe table extended warm.b",
    "show table extended in warm like '*'",
]


def _java() -> str:
    """The JVM that runs the tests, as its binary's real path and time of change: an upgrade in place
    makes a new archive (a JVM refuses another build's archive anyway, quietly). Read without starting
    a JVM: every process that imports harness/spark.py asks."""
    found = shutil.which("java")
    if found is None:  # no JVM yet (scripts/setup.sh installs it): no archive either
        return ""
    java = Path(found).resolve()
    return f"{java}\0{java.stat().st_mtime_ns}"


def archive_path() -> Path:
    """The archive for this virtualenv, the extension's jar and the JVM and its flags."""
    key = f"{extension.default_jar()}\0{_java()}\0{BASE_JVM_FLAGS}"
    return FOLDER / f"test-jvm-{hashlib.sha256(key.encode()).hexdigest()[:16]}.jsa"


def jvm_flags() -> str:
    """The flags that start a JVM from the archive, where it exists (the cds logging off: a JVM of another
    class path ignores the archive without a word)."""
    path = archive_path()
    return f" -XX:SharedArchiveFile={path} -Xlog:cds=off -Xlog:cds+dynamic=off" if path.exists() else ""


def build() -> Path:
    """Writes the archive unless it exists: a session runs the workload and dumps its classes at exit."""
    from harness.spark import make_session

    path = archive_path()
    if path.exists():
        return path
    part = path.with_suffix(f".{os.getpid()}.part")
    state = Path(tempfile.mkdtemp(prefix="sb-class-archive-"))
    spark = make_session(state, jvm_flags=f"{BASE_JVM_FLAGS} -XX:ArchiveClassesAtExit={part} -Xlog:cds=off")
    for statement in WORKLOAD:
        spark.sql(statement).collect()
    proc = spark.sparkContext._gateway.proc
    spark.stop()
    try:
        spark._jvm.java.lang.System.exit(0)  # the archive is written as the JVM exits
    except Exception:  # noqa: BLE001 (the connection closes under the call)
        pass
    proc.wait()
    shutil.rmtree(state, ignore_errors=True)
    if part.exists() and part.stat().st_size > 0:
        for stale in FOLDER.glob("test-jvm-*.jsa"):  # an earlier extension build's (200 MB each)
            stale.unlink()
        part.replace(path)
    part.unlink(missing_ok=True)
    return path


if __name__ == "__main__":
    print(build())
