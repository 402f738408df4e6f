"""A throwaway dbt project whose every `dbt run` is a process of its own, with
Spark inside it (method: session) and its metastore and warehouse in the
project's folder: what a user's `dbt run` costs, cold JVM included. Runs of
one project follow each other (the embedded Derby metastore admits one JVM)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import yaml

from harness.dbt_host import DbtHost
from spark_bucketing.sparksession import QUIET_LOG4J

REPO_ROOT = Path(__file__).resolve().parents[1]
DBT = str(Path(sys.executable).with_name("dbt"))


class DbtProcessProject:
    def __init__(
        self,
        root: Path,
        schema: str = "bench",
        quiet_logs: bool = True,
        jvm_flags: str = "",
        thrift_port: int | None = None,
        one_process: bool = False,
        env: dict[str, str | None] | None = None,
        **spark_conf: str,
    ):
        """`quiet_logs=False` keeps Spark's own log configuration, as a user's run has it;
        `jvm_flags` go to the driver JVM (tests pass theirs, benchmarks none).
        `thrift_port`: dbt connects to a Spark Thrift Server on that loopback
        port (method: thrift; the server has its own Spark settings) instead of
        starting Spark in each dbt process.
        `one_process`: the commands run one after another in one process and
        JVM (harness/dbt_host.py) instead of one each; close() ends it.
        `env`: variables of the dbt processes' environment over this one's (None takes one out)."""
        self.root = root
        self.env = env or {}
        self.host: DbtHost | None = None
        self.one_process = one_process
        self.schema = schema
        self.output = ""
        state = root / "state"
        (root / "models").mkdir(parents=True, exist_ok=True)
        (root / "dbt_project.yml").write_text(
            yaml.safe_dump(
                {
                    "name": "bench",
                    "version": "1.0.0",
                    "config-version": 2,
                    "profile": "bench",
                    # One run at a time here: replaced folders go right after the switch, as stock's do.
                    "models": {"+replaced_folders_retention": 0},
                }
            )
        )
        (root / "packages.yml").write_text(yaml.safe_dump({"packages": [{"local": str(REPO_ROOT)}]}))
        metastore = f"jdbc:derby:;databaseName={state / 'metastore_db'};create=true"
        conf = {
            "spark.master": "local[2]",
            "spark.ui.enabled": "false",
            "spark.sql.warehouse.dir": str(state / "warehouse"),
            "spark.hadoop.javax.jdo.option.ConnectionURL": metastore,
            "spark.driver.extraJavaOptions": f"-Dderby.system.home={state}"
            + (f" -Dlog4j2.configurationFile={QUIET_LOG4J}" if quiet_logs else "")
            + (f" {jvm_flags}" if jvm_flags else ""),
            "spark.sql.autoBroadcastJoinThreshold": "-1",
            **spark_conf,
        }
        output = {
            "type": "spark",
            "method": "session",
            "host": "localhost",
            "schema": schema,
            "server_side_parameters": conf,
        }
        if thrift_port is not None:
            output = {"type": "spark", "method": "thrift", "host": "127.0.0.1", "port": thrift_port, "schema": schema}
        (root / "profiles.yml").write_text(yaml.safe_dump({"bench": {"target": "local", "outputs": {"local": output}}}))
        self.dbt("deps")

    def write_model(self, name: str, sql: str, config: dict) -> None:
        args = ", ".join(f"{k}={v!r}" for k, v in config.items())
        (self.root / "models" / f"{name}.sql").write_text("{{ config(" + args + ") }}\n" + sql.strip() + "\n")

    def dbt(self, *args: str) -> float:
        """Runs one dbt command in a new process; returns its wall time in
        seconds and keeps what it printed in `output`."""
        env = {**os.environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", **self.env}
        env = {k: v for k, v in env.items() if v is not None}
        if self.one_process:
            return self._hosted(args, env)
        start = time.perf_counter()
        proc = subprocess.run(
            [DBT, *args, "--project-dir", str(self.root), "--profiles-dir", str(self.root)],
            cwd=self.root,
            env=env,
            capture_output=True,
            text=True,
        )
        elapsed = time.perf_counter() - start
        self.output = proc.stdout + proc.stderr
        if proc.returncode != 0:
            raise SystemExit(f"dbt {' '.join(args)} failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-2000:]}")
        return elapsed

    def _hosted(self, args: tuple[str, ...], env: dict[str, str]) -> float:
        """dbt() in the project's host process: `output` holds dbt's output and the JVM's lines since the last."""
        if self.host is None:
            self.host = DbtHost(self.root, env)
        start = time.perf_counter()
        seen = len(self.host.noise)
        ok, out = self.host.invoke([*args, "--project-dir", str(self.root), "--profiles-dir", str(self.root)])
        elapsed = time.perf_counter() - start
        self.output = out + "".join(self.host.noise[seen:])
        if not ok:
            raise SystemExit(f"dbt {' '.join(args)} failed:\n{self.output[-6000:]}")
        return elapsed

    def close(self) -> None:
        if self.host is not None:
            self.host.close()


def best_of_two_alternating(run_a, run_b) -> tuple[float, float]:
    """A, B, then B, A: each side once first and once second; the best time of each."""
    a1 = run_a()
    b1 = run_b()
    b2 = run_b()
    a2 = run_a()
    return min(a1, a2), min(b1, b2)
