"""One Trino node (harness/engines.py installs it) on a Hive metastore
service, reading and writing the warehouse folders Spark writes (`file:`
locations) through Trino's local file system, with `hive.validate-bucketing`
on: every bucketed read checks rows against their file's bucket.

`query()` speaks Trino's HTTP protocol itself (POST /v1/statement, then
follow `nextUri`): no client library to install."""

from __future__ import annotations

import json
import re
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from harness.engines import TRINO_VERSION, trino_home, trino_java
from harness.metastore_service import MetastoreService
from harness.ports import free_port, stop_group, wait_for_port

CATALOG = "hive"

# Trino's own recommended flags for its JVM, with a small heap: the tests' tables are small.
JVM_FLAGS = (
    "-Xmx2G -XX:+UseG1GC -XX:+ExplicitGCInvokesConcurrent -XX:-OmitStackTraceInFastThrow"
    " -XX:ReservedCodeCacheSize=256M -Djdk.attach.allowAttachSelf=true -XX:+EnableDynamicAgentLoading"
    " --enable-native-access=ALL-UNNAMED -Xshare:auto -XX:TieredStopAtLevel=1"
)


def remote_exchanges(plan: str) -> list[str]:
    """An EXPLAIN's remote exchanges that move rows between tasks: each RemoteSource reading a fragment whose
    output is repartitioned (by a hash or the bucket function) or broadcast. A fragment gathered to the single
    output task (`Output partitioning: SINGLE`, a plain scan's or a union's) moves no row between tasks."""
    single, fragment = set(), None
    for line in plan.splitlines():
        if m := re.match(r"Fragment (\d+) \[", line):
            fragment = m.group(1)
        elif line.strip().startswith("Output partitioning: SINGLE"):
            single.add(fragment)
    out = []
    for line in plan.splitlines():
        if m := re.search(r"RemoteSource\[sourceFragmentIds = \[([\d, ]+)\]", line):
            if any(f.strip() not in single for f in m.group(1).split(",")):
                out.append(line.strip())
    return out


class TrinoError(RuntimeError):
    """A query Trino failed: its error name and message."""

    def __init__(self, name: str, message: str, sql: str):
        super().__init__(f"{name}: {message}\nquery: {sql}")
        self.name = name
        self.message = message


class TrinoServer:
    def __init__(self, base: Path, metastore: MetastoreService, catalog_properties: dict[str, str] | None = None):
        self.base = base
        self.metastore = metastore
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = base / "trino.log"
        self.catalog_properties = {
            "connector.name": "hive",
            "hive.metastore.uri": metastore.uris,
            "fs.hadoop.enabled": "true",  # harness/engines.py says why not the native local file system
            "hive.validate-bucketing": "true",
            **(catalog_properties or {}),
        }
        self.process: subprocess.Popen | None = None
        self.start_seconds = 0.0

    def _write_config(self) -> Path:
        etc = self.base / "etc"
        (etc / "catalog").mkdir(parents=True, exist_ok=True)
        (etc / "config.properties").write_text(
            "coordinator=true\n"
            "node-scheduler.include-coordinator=true\n"
            f"http-server.http.port={self.port}\n"
            f"discovery.uri={self.url}\n"
            "query.max-memory=1GB\n"
            "query.max-memory-per-node=1GB\n"
        )
        (etc / "log.properties").write_text("io.trino=WARN\n")
        (etc / "catalog" / f"{CATALOG}.properties").write_text(
            "".join(f"{k}={v}\n" for k, v in self.catalog_properties.items())
        )
        return etc

    def start(self, timeout: float = 180) -> None:
        java = trino_java()  # before anything starts: no JDK for Trino fails here, saying which it needs
        home = trino_home() / "server"
        etc = self._write_config()
        cmd = [
            str(java),
            *JVM_FLAGS.split(),
            f"-Dconfig={etc / 'config.properties'}",
            f"-Dlog.levels-file={etc / 'log.properties'}",
            f"-Dcatalog.config-dir={etc / 'catalog'}",
            f"-Dplugin.dir={home / 'plugin'}",
            "-Dnode.environment=test",
            "-Dnode.id=spark-bucketing-tests",
            f"-Dnode.data-dir={self.base / 'data'}",
            "-cp",
            f"{home / 'lib'}/*",
            "io.trino.server.TrinoServer",
        ]
        started = time.perf_counter()
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                cmd, stdout=log, stderr=subprocess.STDOUT, cwd=self.base, start_new_session=True
            )
        try:
            wait_for_port(self.port, self.process, self.log, timeout, f"Trino {TRINO_VERSION}")
            self._wait_started(started + timeout)
        except RuntimeError:
            self.stop()
            raise
        self.start_seconds = time.perf_counter() - started

    def _wait_started(self, deadline: float) -> None:
        """The port opens before the catalogs load: /v1/info says `starting` until they have."""
        while time.perf_counter() < deadline:
            assert self.process
            if self.process.poll() is not None:
                raise RuntimeError(f"Trino exited early:\n{self.log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/v1/info", timeout=5) as r:
                    if not json.load(r).get("starting", True):
                        return
            except (OSError, ValueError):
                pass
            time.sleep(0.3)
        raise RuntimeError(f"Trino did not finish starting:\n{self.log.read_text()[-3000:]}")

    def _request(self, url: str, sql: bytes | None, session: dict[str, str]) -> dict[str, Any]:
        headers = {"X-Trino-User": "tests", "X-Trino-Catalog": CATALOG}
        if session:
            headers["X-Trino-Session"] = ",".join(f"{k}={v}" for k, v in session.items())
        request = urllib.request.Request(url, data=sql, headers=headers, method="POST" if sql is not None else "GET")
        for attempt in range(50):
            try:
                with urllib.request.urlopen(request, timeout=120) as r:
                    return json.load(r)
            except urllib.error.HTTPError as e:
                if e.code != 503 or attempt == 49:  # 503: the protocol's "ask again"
                    raise
                time.sleep(0.05)
        raise AssertionError("unreachable")

    def query_info(self, sql: str, session: dict[str, str] | None = None) -> tuple[list[str], list[list[Any]], str]:
        """(column names, rows, query id); a failed query raises TrinoError."""
        session = session or {}
        reply = self._request(f"{self.url}/v1/statement", sql.encode(), session)
        columns: list[str] = []
        rows: list[list[Any]] = []
        while True:
            if "error" in reply:
                err = reply["error"]
                raise TrinoError(err.get("errorName", "?"), err.get("message", ""), sql)
            columns = columns or [c["name"] for c in reply.get("columns") or []]
            rows.extend(reply.get("data") or [])
            if "nextUri" not in reply:
                return columns, rows, reply["id"]
            reply = self._request(reply["nextUri"], None, session)

    def query(self, sql: str, session: dict[str, str] | None = None) -> list[list[Any]]:
        return self.query_info(sql, session)[1]

    def query_stats(self, query_id: str) -> dict[str, Any]:
        """A finished query's statistics (`rawInputPositions`: the rows it read from tables)."""
        request = urllib.request.Request(f"{self.url}/v1/query/{query_id}", headers={"X-Trino-User": "tests"})
        with urllib.request.urlopen(request, timeout=60) as r:
            return json.load(r)["queryStats"]

    def explain(self, sql: str, session: dict[str, str] | None = None) -> str:
        return "\n".join(row[0] for row in self.query(f"EXPLAIN {sql}", session))

    def stop(self) -> None:
        stop_group(self.process)
