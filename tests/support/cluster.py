"""A standalone Spark cluster from the pyspark wheel: one Master and worker
processes on the loopback interface, each worker running its executors in
JVMs of their own."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pyspark

from harness.ports import free_port
from harness.spark import TEST_JVM_FLAGS


class StandaloneCluster:
    def __init__(self, base: Path, workers: int = 2):
        self.base = base
        self.workers = workers
        self.port = free_port()
        self.ui_port = free_port()
        self.work_dir = base / "work"
        self.processes: list[subprocess.Popen] = []

    @property
    def url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def _spawn(self, name: str, *args: str) -> None:
        spark_home = Path(pyspark.__file__).parent
        env = {
            **os.environ,
            "SPARK_HOME": str(spark_home),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_DAEMON_JAVA_OPTS": TEST_JVM_FLAGS,
        }
        with open(self.base / f"{name}.log", "wb") as log:
            self.processes.append(
                subprocess.Popen(
                    [str(spark_home / "bin" / "spark-class"), *args],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                    start_new_session=True,
                )
            )

    def start(self, timeout: float = 120) -> None:
        self._spawn(
            "master",
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--webui-port",
            str(self.ui_port),
        )
        deadline = time.monotonic() + timeout
        started_workers = False
        while time.monotonic() < deadline:
            if any(p.poll() is not None for p in self.processes):
                self.stop()
                raise RuntimeError(f"a cluster process exited early; logs in {self.base}")
            state = self.state()
            if state is not None and not started_workers:
                for i in range(self.workers):
                    self._spawn(
                        f"worker-{i}",
                        "org.apache.spark.deploy.worker.Worker",
                        "--host",
                        "127.0.0.1",
                        "--cores",
                        "1",
                        "--memory",
                        "1g",
                        "--webui-port",
                        str(free_port()),
                        "--work-dir",
                        str(self.work_dir),
                        self.url,
                    )
                started_workers = True
            if state is not None and state.get("aliveworkers", 0) >= self.workers:
                return
            time.sleep(1)
        self.stop()
        raise RuntimeError(f"the cluster did not come up in {timeout}s; logs in {self.base}")

    def state(self) -> dict | None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=2) as r:
                return json.loads(r.read())
        except OSError:
            return None

    def executor_dirs(self) -> list[Path]:
        """One folder per executor a worker launched (work/<app>/<executor id>)."""
        return sorted(p for p in self.work_dir.glob("app-*/*") if p.is_dir())

    def stop(self) -> None:
        for p in reversed(self.processes):
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGTERM)
        for p in self.processes:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
