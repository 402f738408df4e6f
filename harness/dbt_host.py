"""One process that runs dbt commands one after another, in one JVM.

The many-writers tests need their concurrent runs in processes of their own,
each with its own JVM; their other commands (the first build, `dbt test`
after a round, a source table's rebuild) run one at a time and only need to
see the catalog as those processes left it. A JVM costs such a test more
than the command, so those commands go to this process: the parent writes a
command's arguments as a JSON line to its stdin, it runs them with dbtRunner
and answers with a JSON line (after MARKER) holding dbt's console output
and whether the command succeeded. A JSON object `{"sql": ...}` instead runs
one statement on the Spark session dbt started (`DbtHost.sql`): what a test
reads back from the tables in the JVM that wrote them.

Its Spark session caches no table relation and no file listing
(FRESH_READS): each command reads the tables as the other processes left
them, as a new process would.
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
from pathlib import Path

MARKER = "@@dbt-host@@ "

#: Settings for the host's target: nothing read from the catalog or the files outlives a query.
FRESH_READS = {
    "spark.sql.filesourceTableRelationCacheSize": "0",
    "spark.sql.hive.filesourcePartitionFileCacheSize": "0",
}


class DbtHost:
    """The parent's side: a host process started in `cwd` with `env`."""

    def __init__(self, cwd: Path, env: dict[str, str]):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "harness.dbt_host"],
            cwd=cwd,
            env={**env, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.noise: list[str] = []

    def invoke(self, args: list[str]) -> tuple[bool, str]:
        """dbt's answer to `args`: (success, console output)."""
        return self._ask(args)

    def sql(self, statement: str) -> list[list]:
        """The rows of `statement` on the session of the dbt commands before it (dates, times and
        decimals as ISO text, binary as hex); a failed statement raises with Spark's message."""
        ok, out = self._ask({"sql": statement})
        if not ok:
            raise RuntimeError(f"{statement}\n{out}")
        return json.loads(out)

    def _ask(self, request: list[str] | dict[str, str]) -> tuple[bool, str]:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        for line in self.proc.stdout:
            if line.startswith(MARKER):
                reply = json.loads(line[len(MARKER) :])
                return reply["ok"], reply["output"]
            self.noise.append(line)  # the JVM's own lines, kept for the message below
        raise RuntimeError(f"the dbt host exited {self.proc.wait()}:\n{''.join(self.noise[-100:])}")

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def _plain(value):
    """A Spark value as JSON holds it."""
    if isinstance(value, (bytes, bytearray)):
        return value.hex()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


def _run_sql(statement: str) -> tuple[bool, str]:
    from pyspark.sql import SparkSession

    try:
        rows = SparkSession.builder.getOrCreate().sql(statement).collect()
    except Exception as e:  # noqa: BLE001 (reported to the parent)
        return False, f"{type(e).__name__}: {e}"
    return True, json.dumps([[_plain(v) for v in row] for row in rows])


def serve() -> None:
    from dbt.cli.main import dbtRunner

    answers = sys.stdout
    for line in sys.stdin:
        request = json.loads(line)
        if isinstance(request, dict):
            ok, out = _run_sql(request["sql"])
            answers.write(MARKER + json.dumps({"ok": ok, "output": out}) + "\n")
            answers.flush()
            continue
        output = io.StringIO()
        # dbt's console logger writes to the sys.stdout of the moment it is set up, at each invocation.
        with contextlib.redirect_stdout(output):
            try:
                ok = dbtRunner().invoke(request).success
            except Exception as e:  # noqa: BLE001 (reported to the parent, which fails the test)
                ok, output = False, io.StringIO(f"{output.getvalue()}\n{type(e).__name__}: {e}")
        answers.write(MARKER + json.dumps({"ok": ok, "output": output.getvalue()}) + "\n")
        answers.flush()


if __name__ == "__main__":
    serve()
