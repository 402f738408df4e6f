"""Hive 4's own bucket numbering (harness/java/Hive4BucketOracle.java), in a
JVM of its own: Hive 4's serde classes cannot share a JVM with the Hive 2.3
classes PySpark ships. `bucket_numbers` answers many keys per call."""

from __future__ import annotations

import datetime as dt
import struct
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pyspark

from harness.engines import HIVE4_VERSION, hive4_jars

SOURCE = Path(__file__).with_name("java") / "Hive4BucketOracle.java"
# Hadoop's Writables and what Hive's classes log and lean on, from PySpark's jars (no Hive among them).
_SPARK_JARS = ("hadoop-client-api-", "hadoop-client-runtime-", "slf4j-api-", "commons-lang3-", "guava-")
_EPOCH = dt.date(1970, 1, 1)


def encode(value: Any, type_name: str) -> str:
    """A value as the oracle reads it (Hive4BucketOracle.java)."""
    if value is None:
        return "\\N"
    if type_name == "string":
        return value.encode().hex()
    if type_name == "boolean":
        return "true" if value else "false"
    if type_name == "float":
        return struct.pack(">f", value).hex()
    if type_name == "double":
        return struct.pack(">d", value).hex()
    if type_name == "date":
        return str((value - _EPOCH).days)
    return str(int(value))


def decode(text: str, type_name: str) -> Any:
    """The value `encode` gave `text` for."""
    if text == "\\N":
        return None
    if type_name == "string":
        return bytes.fromhex(text).decode()
    if type_name == "boolean":
        return text == "true"
    if type_name in ("float", "double"):
        return struct.unpack(">f" if type_name == "float" else ">d", bytes.fromhex(text))[0]
    if type_name == "date":
        return _EPOCH + dt.timedelta(days=int(text))
    return int(text)


class Hive4Oracle:
    version = HIVE4_VERSION

    def __init__(self) -> None:
        spark_jars = Path(pyspark.__file__).parent / "jars"
        classpath = [str(j) for j in hive4_jars()]
        classpath += [str(j) for j in sorted(spark_jars.glob("*.jar")) if j.name.startswith(_SPARK_JARS)]
        # Java's source launcher compiles the one file in memory: nothing to build or cache.
        self.proc = subprocess.Popen(
            ["java", "-cp", ":".join(classpath), str(SOURCE)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
        )

    def bucket_numbers(
        self, keys: Iterable[Sequence[Any]], types: Sequence[str], num_buckets: int, version: int
    ) -> list[tuple[int, int]]:
        """(Hive's bucket hash code, bucket) of each key (a tuple of column values of `types`)."""
        assert self.proc.stdin and self.proc.stdout
        head = [str(version), str(num_buckets)]
        lines = ["\t".join(head + [f"{t}:{encode(v, t)}" for v, t in zip(key, types, strict=True)]) for key in keys]
        self.proc.stdin.write("".join(line + "\n" for line in lines))
        self.proc.stdin.flush()
        answers = []
        for _ in lines:
            reply = self.proc.stdout.readline()
            if not reply:
                raise RuntimeError(f"the Hive {HIVE4_VERSION} oracle exited {self.proc.wait()}")
            hash_code, bucket = reply.split()
            answers.append((int(hash_code), int(bucket)))
        return answers

    def bucket_number(self, values: Sequence[Any], types: Sequence[str], num_buckets: int, version: int = 1) -> int:
        return self.bucket_numbers([values], types, num_buckets, version)[0][1]

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
